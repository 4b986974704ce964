#include "client/tunectl/suggest.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet::tunectl {
namespace {

const std::vector<std::string> kVerbs = {"submit", "watch", "status", "cancel", "jobs",
                                         "trials", "best",  "export", "import"};

TEST(SuggestTest, UnknownVerbSkipsOptionsAndTheirValues) {
  const std::set<std::string> values = {"--server", "-o"};
  EXPECT_EQ(UnknownVerb({"--server", "h:1", "-o", "json", "stauts", "j-1"}, kVerbs, values),
            "stauts");
  EXPECT_EQ(UnknownVerb({"--server", "h:1", "status", "j-1"}, kVerbs, values), std::nullopt);
  EXPECT_EQ(UnknownVerb({"--insecure"}, kVerbs, values), std::nullopt);
  EXPECT_EQ(UnknownVerbMessage("stauts", kVerbs),
            "unknown command 'stauts'; did you mean 'status'?\n"
            "Run 'tunectl --help' for the commands.");
}

// A mistyped global option whose value would read as the verb is what is
// named; known options, their values and `--name=value` are skipped.
TEST(SuggestTest, UnknownOptionIsTheMistypedFlagBeforeTheVerb) {
  const std::set<std::string> flags = {"--server", "-o", "--output", "--insecure"};
  const std::set<std::string> values = {"--server", "-o", "--output"};
  EXPECT_EQ(UnknownOption({"--sever", "h:1", "jobs"}, flags, values), "--sever");
  EXPECT_EQ(UnknownOption({"--server", "h:1", "--ouptut=json", "jobs"}, flags, values),
            "--ouptut");
  EXPECT_EQ(UnknownOption({"--server", "h:1", "-o", "json", "--insecure", "jobs", "--x"}, flags,
                          values),
            std::nullopt);  // a verb's own options are its parser's
  EXPECT_EQ(UnknownOption({"--server=h:1", "stauts"}, flags, values), std::nullopt);
  EXPECT_EQ(UnknownOption({"-ojson", "stauts"}, flags, values), std::nullopt);  // -o json
  EXPECT_EQ(UnknownOption({"-xjson", "jobs"}, flags, values), "-x");
  EXPECT_EQ(UnknownOptionMessage("--sever", flags),
            "unknown option '--sever'; did you mean '--server'?\n"
            "Run 'tunectl --help' for the global options.");
}

}  // namespace
}  // namespace tunefleet::tunectl

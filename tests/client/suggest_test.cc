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

}  // namespace
}  // namespace tunefleet::tunectl

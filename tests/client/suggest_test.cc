#include "client/tunectl/suggest.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet::tunectl {
namespace {

const std::vector<std::string> kVerbs = {"submit", "watch", "status", "cancel", "jobs",
                                         "trials", "best",  "export", "import"};

TEST(SuggestTest, EditDistanceCountsATranspositionAsOneEdit) {
  EXPECT_EQ(EditDistance("stauts", "status"), 1);
  EXPECT_EQ(EditDistance("status", "status"), 0);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(SuggestTest, NearestNameNeedsToBeNear) {
  EXPECT_EQ(NearestName("stauts", kVerbs), "status");
  EXPECT_EQ(NearestName("trails", kVerbs), "trials");
  EXPECT_EQ(NearestName("exprot", kVerbs), "export");
  EXPECT_EQ(NearestName("frobnicate", kVerbs), std::nullopt);
  EXPECT_EQ(NearestName("x", kVerbs), std::nullopt);
}

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

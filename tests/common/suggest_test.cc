#include "common/suggest.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet {
namespace {

using ::testing::ElementsAre;

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

TEST(SuggestTest, AShortListIsListedWholeSortedAndOnce) {
  EXPECT_THAT(NamesToList("gem", {"softmax", "matmul", "gemm_f16", "matmul"}),
              ElementsAre("gemm_f16", "matmul", "softmax"));
  EXPECT_THAT(NamesToList("anything", {}), ElementsAre());
}

TEST(SuggestTest, ALongListIsCutToItsNearestNames) {
  EXPECT_THAT(NamesToList("stauts", kVerbs, /*max_listed=*/3),
              ElementsAre("status", "best", "jobs"));
  // A name that contains the word comes first, however long.
  EXPECT_THAT(NamesToList("H100", {"A100", "B200", "NVIDIA H100 sm_90", "H200", "L4"}, 3),
              ElementsAre("NVIDIA H100 sm_90", "A100", "H200"));
}

}  // namespace
}  // namespace tunefleet

#include "server/stop_rules.h"

#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

TEST(PlateauRuleTest, AnImprovementMustBeatTheBestByMoreThanTheStatedFraction) {
  EXPECT_TRUE(PlateauRule::Improves(5.0, std::nullopt));  // the first result
  EXPECT_TRUE(PlateauRule::Improves(0.98, 1.0));
  EXPECT_FALSE(PlateauRule::Improves(0.995, 1.0));  // within noise
  EXPECT_FALSE(PlateauRule::Improves(1.0 * (1 - kMinImprovement), 1.0));
  EXPECT_FALSE(PlateauRule::Improves(1.5, 1.0));
}

TEST(PlateauRuleTest, CountsClosedBatchesWithoutImprovementAndResetsOnOne) {
  PlateauRule rule(/*plateau_batches=*/2);
  rule.Proposed({1, 2});
  rule.Recorded(1, 1.0, std::nullopt);  // improves: nothing known yet
  rule.Recorded(2, 2.0, 1.0);
  EXPECT_EQ(rule.batches_without_improvement(), 0);
  rule.Proposed({3, 4});
  rule.Recorded(3, 0.999, 1.0);  // within 1 %: no improvement
  EXPECT_EQ(rule.batches_without_improvement(), 0);  // the batch is still open
  rule.Recorded(4, std::nullopt, 1.0);               // a failure
  EXPECT_EQ(rule.batches_without_improvement(), 1);
  EXPECT_FALSE(rule.reached());
  rule.Proposed({5});
  rule.Recorded(5, 0.5, 1.0);
  EXPECT_EQ(rule.batches_without_improvement(), 0);
  rule.Proposed({6});
  rule.Proposed({7});
  rule.Recorded(7, 0.6, 0.5);
  rule.Recorded(6, 0.7, 0.5);
  EXPECT_TRUE(rule.reached());
}

TEST(PlateauRuleTest, RestoredResultsBelongToNoBatchAndZeroTurnsTheRuleOff) {
  PlateauRule rule(/*plateau_batches=*/0);
  rule.Recorded(9, 1.0, std::nullopt);  // restored: no batch
  EXPECT_EQ(rule.batches_without_improvement(), 0);
  for (uint64_t i = 0; i < 5; ++i) {
    rule.Proposed({i});
    rule.Recorded(i, 2.0, 1.0);
  }
  EXPECT_EQ(rule.batches_without_improvement(), 5);
  EXPECT_FALSE(rule.reached());
}

}  // namespace
}  // namespace tunefleet::server

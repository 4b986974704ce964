#include "server/target_trials.h"

#include <set>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::SourceDir;

// Six valid configs of matmul, measured with the finalists round on.
class TargetTrialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    auto space = *ConfigSpace::Create(
        bundle->spec, *NormalizeShape(bundle->spec, *ParseShape("M=512,N=512,K=512")),
        PlaceholderLimits(v1::BACKEND_CPU));
    StrategyOptions options;
    options.name = "random";
    options.budget = 6;
    options.seed = 3;
    auto strategy = MakeStrategy(space.get(), options);
    ASSERT_OK(strategy);
    trials_ = std::make_unique<TargetTrials>(std::move(space), *std::move(strategy),
                                             /*max_attempts=*/2, std::nullopt,
                                             /*finalists=*/2);
  }

  static v1::TrialResult Ok(double seconds) {
    v1::TrialResult result;
    result.set_status(v1::TRIAL_STATUS_OK);
    result.mutable_measurement()->set_median_seconds(seconds);
    return result;
  }

  std::unique_ptr<TargetTrials> trials_;
};

TEST_F(TargetTrialsTest, OrphanedConfigsGoBackToTheQueueWithoutCountingAsLost) {
  bool finalists = false;
  std::vector<uint64_t> held = trials_->Take(3, "gone", 1, &finalists);
  std::vector<uint64_t> kept = trials_->Take(3, "alive", 2, &finalists);
  ASSERT_EQ(held.size(), 3u);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_FALSE(trials_->HasWork());
  EXPECT_EQ(trials_->ReclaimOrphans([](const std::string& id) { return id == "alive"; }), 3);
  EXPECT_TRUE(trials_->HasWork());
  EXPECT_FALSE(trials_->Complete(held[0], "gone", 1, Ok(1)));  // no longer held
  std::vector<uint64_t> again = trials_->Take(10, "new", 3, &finalists);
  EXPECT_EQ(std::set<uint64_t>(again.begin(), again.end()),
            std::set<uint64_t>(held.begin(), held.end()));
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_TRUE(trials_->Complete(again[i], "new", 3, Ok(1e-3 * (i + 1))));
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_TRUE(trials_->Complete(kept[i], "alive", 2, Ok(1e-2 * (i + 1))));
  }
  // The finalists lease, orphaned too, is offered again.
  std::vector<uint64_t> finals = trials_->Take(1, "finals", 4, &finalists);
  ASSERT_TRUE(finalists);
  EXPECT_EQ(finals.size(), 2u);
  EXPECT_EQ(trials_->ReclaimOrphans([](const std::string&) { return false; }), 2);
  EXPECT_TRUE(trials_->HasWork());
  EXPECT_EQ(trials_->Take(1, "finals-2", 5, &finalists), finals);
  EXPECT_TRUE(finalists);
  for (uint64_t ordinal : finals) trials_->Complete(ordinal, "finals-2", 5, Ok(1e-3));
  EXPECT_TRUE(trials_->Finished());
  EXPECT_EQ(trials_->done(), 6);
}

TEST_F(TargetTrialsTest, TheBestIgnoresCutTrialsWhichAreNeverFinalists) {
  bool finalists = false;
  EXPECT_FALSE(trials_->best_seconds().has_value());
  std::vector<uint64_t> taken = trials_->Take(6, "l", 1, &finalists);
  ASSERT_EQ(taken.size(), 6u);
  ASSERT_TRUE(trials_->Complete(taken[0], "l", 1, Ok(4e-3)));
  EXPECT_EQ(trials_->best_seconds(), 4e-3);
  // Cut trials: one with a partial median that reads fastest of all.
  for (size_t i = 1; i < 4; ++i) {
    v1::TrialResult cut = Ok(i == 1 ? 1e-3 : 9e-3);
    cut.set_cut_early(true);
    ASSERT_TRUE(trials_->Complete(taken[i], "l", 1, cut));
  }
  EXPECT_EQ(trials_->best_seconds(), 4e-3);
  ASSERT_TRUE(trials_->Complete(taken[4], "l", 1, Ok(3e-3)));
  ASSERT_TRUE(trials_->Complete(taken[5], "l", 1, Ok(5e-3)));
  EXPECT_EQ(trials_->best_seconds(), 3e-3);
  // The finalists are the two fastest uncut configs.
  std::vector<uint64_t> finals = trials_->Take(1, "finals", 2, &finalists);
  ASSERT_TRUE(finalists);
  EXPECT_EQ(finals, (std::vector<uint64_t>{taken[4], taken[0]}));
  EXPECT_EQ(trials_->outcome_counts().at(v1::TRIAL_STATUS_OK), 6);
}

}  // namespace
}  // namespace tunefleet::server

// The early-cut rule in the trial executor, with the real compiler and a real
// benchmark child: configs far slower than the best stop sampling after the
// minimum samples and come back flagged; the fastest is never cut.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/worker/worker_test_util.h"
#include "worker/cpu/cpu_device.h"
#include "worker/trial_executor.h"

namespace tunefleet::worker {
namespace {

using ::tunefleet::worker::testing::CpuChild;
using ::tunefleet::worker::testing::CpuCompileStack;
using ::tunefleet::worker::testing::FastOptions;
using ::tunefleet::worker::testing::LoadJob;
using ::tunefleet::worker::testing::MakeCpuCompileStack;
using ::tunefleet::worker::testing::MakeTrial;

constexpr char kRepeat[] = "tests/worker/repeat_cpu";
constexpr char kShape[] = "N=65536";

class EarlyCutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    compile_ = MakeCpuCompileStack(cache_.path());
    ASSERT_NE(compile_.pool, nullptr);
  }

  void MakeExecutor(double cut_factor) {
    ExecutorOptions options = FastOptions();
    options.measure.set_cut_factor(cut_factor);
    options.measure.set_budget_seconds(0.05);  // room for many more samples than the minimum
    options.measure.set_precision(-1);  // sample the budget: only the cut stops a run early
    options_ = options;
    executor_ = std::make_unique<TrialExecutor>(compile_.pool.get(), DiscoverCpuDevice(),
                                                CpuChild(cache_.path()), std::move(options));
  }

  std::map<int64_t, v1::TrialResult> Run(const std::vector<std::string>& configs,
                                         TrialExecutor::BestSeconds best = nullptr) {
    JobContext job = LoadJob(kRepeat, kShape);
    std::vector<v1::Trial> trials;
    for (size_t i = 0; i < configs.size(); ++i) {
      trials.push_back(MakeTrial(static_cast<int64_t>(i), configs[i]));
    }
    std::map<int64_t, v1::TrialResult> results;
    EXPECT_OK(executor_->Run(
        job, trials, [&](int64_t index, const v1::TrialResult& r) { results[index] = r; },
        /*should_stop=*/nullptr, best));
    return results;
  }

  ::tunefleet::testing::TempDir cache_;
  CpuCompileStack compile_;
  ExecutorOptions options_;
  std::unique_ptr<TrialExecutor> executor_;
};

TEST_F(EarlyCutTest, CutsConfigsFarSlowerThanTheBestMeasuredBeforeThem) {
  MakeExecutor(/*cut_factor=*/0);  // the default, 1.5
  const std::vector<std::string> configs = {"REPEAT=1,VARIANT=0", "REPEAT=32,VARIANT=0",
                                            "REPEAT=16,VARIANT=1"};
  // A config runs as soon as it is compiled, so a slow config that compiles
  // first would run first. Compiled beforehand, all are ready at once and
  // run in lease order: the fast one first.
  Run(configs);
  auto results = Run(configs);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& [index, result] : results) {
    ASSERT_EQ(result.status(), v1::TRIAL_STATUS_OK) << index << ": " << result.error();
  }
  EXPECT_FALSE(results[0].cut_early());  // nothing to compare the first with
  for (int64_t slow : {1, 2}) {
    const v1::TrialResult& result = results[slow];
    EXPECT_TRUE(result.cut_early()) << slow;
    // The partial measurement is kept: the minimum samples and their summary.
    EXPECT_EQ(result.measurement().samples(), options_.measure.min_samples()) << slow;
    EXPECT_GT(result.measurement().p20_seconds(),
              1.5 * results[0].measurement().median_seconds());
  }
}

TEST_F(EarlyCutTest, UsesTheCoordinatorsBestFromTheFirstTrial) {
  MakeExecutor(/*cut_factor=*/0);
  // Measure the fast config alone first, then hand its median over as the
  // coordinator would: the slow config is cut though it runs first.
  auto fast = Run({"REPEAT=1,VARIANT=1"});
  ASSERT_EQ(fast[0].status(), v1::TRIAL_STATUS_OK) << fast[0].error();
  const double best = fast[0].measurement().median_seconds();
  int asked = 0;
  auto results = Run({"REPEAT=32,VARIANT=1"}, [&] {
    ++asked;
    return best;
  });
  EXPECT_EQ(asked, 1);
  ASSERT_EQ(results[0].status(), v1::TRIAL_STATUS_OK) << results[0].error();
  EXPECT_TRUE(results[0].cut_early());
  EXPECT_EQ(results[0].measurement().samples(), options_.measure.min_samples());
}

TEST_F(EarlyCutTest, ANegativeCutFactorMeasuresEveryConfigInFull) {
  MakeExecutor(/*cut_factor=*/-1);
  auto results = Run({"REPEAT=1,VARIANT=0", "REPEAT=32,VARIANT=0"}, [] { return 1e-9; });
  ASSERT_EQ(results.size(), 2u);
  for (const auto& [index, result] : results) {
    EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << result.error();
    EXPECT_FALSE(result.cut_early()) << index;
  }
  EXPECT_GT(results[1].measurement().samples(), options_.measure.min_samples());
}

TEST_F(EarlyCutTest, TheFinalistsRoundIsNeverCut) {
  MakeExecutor(/*cut_factor=*/0);
  std::vector<v1::TrialResult> results;
  JobContext job = LoadJob(kRepeat, kShape);
  ASSERT_OK(executor_->RunFinalists(
      job, {MakeTrial(0, "REPEAT=1,VARIANT=0"), MakeTrial(1, "REPEAT=32,VARIANT=0")},
      [&](int64_t, const v1::TrialResult& r) { results.push_back(r); },
      /*should_stop=*/nullptr));
  ASSERT_EQ(results.size(), 2u);
  for (const v1::TrialResult& result : results) {
    EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << result.error();
    EXPECT_FALSE(result.cut_early());
  }
}

}  // namespace
}  // namespace tunefleet::worker

// The finalists round (TrialExecutor::RunFinalists) with the real compiler
// and real benchmark children: interleaved rounds on one child, combined
// measurements, and a finalist that crashes in a later round.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "common/calibration.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/worker/worker_test_util.h"
#include "worker/cpu/cpu_compiler.h"
#include "worker/cpu/cpu_device.h"
#include "worker/measurement.h"
#include "worker/trial_executor.h"

namespace tunefleet::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::tunefleet::worker::testing::CpuChild;
using ::tunefleet::worker::testing::CpuCompileStack;
using ::tunefleet::worker::testing::MakeCpuCompileStack;
using ::tunefleet::worker::testing::FastOptions;
using ::tunefleet::worker::testing::LoadJob;
using ::tunefleet::worker::testing::MakeTrial;

constexpr char kFlaky[] = "tests/worker/flaky_cpu";

class FinalistsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    compile_ = MakeCpuCompileStack(cache_.path());
    ASSERT_NE(compile_.pool, nullptr);
    marker_ = cache_.path() + "/crash-now";
  }

  // An executor whose finalist steps are recorded in `steps_`; `after_step`
  // runs after each one is recorded.
  // Only the first finalist_rounds rounds run unless `max_rounds` allows
  // more (the separation rounds).
  void MakeExecutor(std::function<void(int round, int64_t index)> after_step = nullptr,
                    int max_rounds = 0, int rounds = 3) {
    ExecutorOptions options = FastOptions();
    options.finalist_rounds = rounds;
    options.finalist_max_rounds = max_rounds;
    options.on_finalist_step = [this, after_step](int round, int64_t index,
                                                  const v1::TrialResult& result) {
      steps_.push_back({round, index});
      step_results_[index].push_back(result);
      if (after_step) after_step(round, index);
    };
    ChildOptions child = CpuChild(cache_.path());
    child.policy.read_only.push_back(cache_.path());  // the crash marker
    child.env.emplace_back("TUNEFLEET_TEST_CRASH_MARKER", marker_);
    executor_ = std::make_unique<TrialExecutor>(compile_.pool.get(), DiscoverCpuDevice(),
                                                std::move(child), std::move(options));
  }

  static std::vector<v1::Trial> Trials(const std::vector<std::string>& configs) {
    std::vector<v1::Trial> trials;
    for (size_t i = 0; i < configs.size(); ++i) {
      trials.push_back(MakeTrial(static_cast<int64_t>(i), configs[i]));
    }
    return trials;
  }

  // The reported results, in report order.
  std::vector<std::pair<int64_t, v1::TrialResult>> RunFinalists(
      const JobContext& job, const std::vector<std::string>& configs) {
    std::vector<std::pair<int64_t, v1::TrialResult>> results;
    EXPECT_OK(executor_->RunFinalists(
        job, Trials(configs),
        [&](int64_t index, const v1::TrialResult& r) {
          // Nothing is reported before the last round is over.
          EXPECT_EQ(steps_.size(), expected_steps_) << "reported mid-round";
          results.emplace_back(index, r);
        },
        /*should_stop=*/nullptr));
    return results;
  }

  // `result` is the CombineRounds of the OK steps recorded for `index`.
  void ExpectCombined(int64_t index, const v1::TrialResult& result) {
    ASSERT_EQ(result.status(), v1::TRIAL_STATUS_OK) << result.error();
    std::vector<v1::Measurement> rounds;
    int64_t samples = 0;
    for (const v1::TrialResult& step : step_results_[index]) {
      ASSERT_EQ(step.status(), v1::TRIAL_STATUS_OK) << step.error();
      EXPECT_GE(step.measurement().samples(), 3);  // min_samples in every round
      samples += step.measurement().samples();
      rounds.push_back(step.measurement());
    }
    EXPECT_EQ(static_cast<size_t>(result.measurement().rounds()), rounds.size());
    if (!separation_rounds_) {
      EXPECT_EQ(rounds.size(), 3u);
    }
    EXPECT_EQ(result.measurement().samples(), samples);  // the sum over the rounds
    std::vector<double> medians;
    for (const v1::Measurement& m : rounds) medians.push_back(CalibratedTime(m));
    // The rounds' repeatability is that of their calibrated times.
    EXPECT_DOUBLE_EQ(result.measurement().rounds_cv(), CoefficientOfVariation(medians));
    const v1::Measurement combined = CombineRounds(rounds);
    EXPECT_GT(combined.calibration_seconds(), 0);  // every round was calibrated
    EXPECT_DOUBLE_EQ(result.measurement().calibration_seconds(), combined.calibration_seconds());
    EXPECT_DOUBLE_EQ(result.measurement().median_seconds(), combined.median_seconds());
    EXPECT_DOUBLE_EQ(result.measurement().p20_seconds(), combined.p20_seconds());
    EXPECT_DOUBLE_EQ(result.measurement().p80_seconds(), combined.p80_seconds());
    EXPECT_GT(result.measurement().median_seconds(), 0);
    EXPECT_EQ(result.device_id(), "cpu0");
  }

  ::tunefleet::testing::TempDir cache_;
  std::string marker_;
  CpuCompileStack compile_;
  std::unique_ptr<TrialExecutor> executor_;
  std::vector<std::pair<int, int64_t>> steps_;  // (round, index) in run order
  std::map<int64_t, std::vector<v1::TrialResult>> step_results_;
  size_t expected_steps_ = 0;
  bool separation_rounds_ = false;
};

TEST_F(FinalistsTest, MeasuresMatmulFinalistsInInterleavedRounds) {
  EXPECT_EQ(ExecutorOptions().finalist_rounds, 3);  // the documented default
  MakeExecutor();
  JobContext job = LoadJob("kernels/cpu/matmul", "M=64,N=64,K=64");
  const std::vector<std::string> configs = {
      "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=1",
      "BLOCK_M=32,BLOCK_N=64,BLOCK_K=32,UNROLL=4,LOOP_ORDER=0",
      "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,UNROLL=4,LOOP_ORDER=0"};
  // The search measured them once already: the finalists hit the artifact cache.
  int searched = 0;
  ASSERT_OK(executor_->Run(
      job, Trials(configs), [&](int64_t, const v1::TrialResult&) { ++searched; }, nullptr));
  ASSERT_EQ(searched, 3);
  const int starts = executor_->child_starts();

  expected_steps_ = 9;
  auto results = RunFinalists(job, configs);
  // Round-robin: every finalist once per round, in lease order.
  EXPECT_THAT(steps_, ElementsAre(Pair(0, 0), Pair(0, 1), Pair(0, 2),  //
                                  Pair(1, 0), Pair(1, 1), Pair(1, 2),  //
                                  Pair(2, 0), Pair(2, 1), Pair(2, 2)));
  ASSERT_EQ(results.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(results[i].first, i);
    ExpectCombined(i, results[i].second);
    EXPECT_EQ(ConfigToString(results[i].second.config()), configs[i]);
    EXPECT_EQ(results[i].second.compile_seconds(), 0);  // artifact cache hit
  }
  // One child throughout: prepared again for the per-round budget, never
  // restarted between rounds.
  EXPECT_EQ(executor_->child_starts(), starts);
}

TEST_F(FinalistsTest, AFinalistThatCrashesIsReportedAndTheOthersAreStillMeasured) {
  // Before round 1 (the second) the marker appears: CRASH=2 passes round 0
  // and crashes in round 1, the way a config can fail the second time.
  MakeExecutor([this](int round, int64_t index) {
    if (round == 0 && index == 3) std::ofstream(marker_) << "crash";
  });
  JobContext job = LoadJob(kFlaky, "N=1024");
  expected_steps_ = 9;
  auto results = RunFinalists(job, {"CRASH=0,UNROLL=1",    // 0 good
                                    "CRASH=1,UNROLL=1",    // 1 crashes in round 0
                                    "CRASH=2,UNROLL=4",    // 2 crashes in round 1
                                    "CRASH=0,UNROLL=4"});  // 3 good
  // A crashed finalist leaves the rounds; the others go on, interleaved.
  EXPECT_THAT(steps_, ElementsAre(Pair(0, 0), Pair(0, 1), Pair(0, 2), Pair(0, 3),  //
                                  Pair(1, 0), Pair(1, 2), Pair(1, 3),              //
                                  Pair(2, 0), Pair(2, 3)));
  ASSERT_EQ(results.size(), 4u);
  ExpectCombined(0, results[0].second);
  EXPECT_EQ(results[1].second.status(), v1::TRIAL_STATUS_CRASHED);
  EXPECT_THAT(results[1].second.error(), HasSubstr("SIGSEGV"));
  EXPECT_EQ(results[2].second.status(), v1::TRIAL_STATUS_CRASHED);
  EXPECT_THAT(results[2].second.error(), HasSubstr("SIGSEGV"));
  EXPECT_EQ(step_results_[2][0].status(), v1::TRIAL_STATUS_OK);  // fine in round 0
  EXPECT_FALSE(results[2].second.has_measurement());
  ExpectCombined(3, results[3].second);
  // The first child, then one after each crash (re-prepared, same budget).
  EXPECT_EQ(executor_->child_starts(), 3);
}

// Separation rounds. After a single first round no finalist is separated
// from the winner (one round measures no noise), so the second round must
// run every finalist again; later rounds run the winner and those still not
// separated (two finalists of one config, so usually both of them), up to
// the limit, in lease order.
TEST_F(FinalistsTest, UnseparatedFinalistsAreMeasuredAgainUpToTheLimit) {
  EXPECT_EQ(ExecutorOptions().finalist_max_rounds, 9);  // the documented default
  MakeExecutor(nullptr, /*max_rounds=*/4, /*rounds=*/1);
  separation_rounds_ = true;
  JobContext job = LoadJob(kFlaky, "N=1024");
  const std::vector<std::string> configs = {"CRASH=0,UNROLL=4", "CRASH=0,UNROLL=4",
                                            "CRASH=0,UNROLL=1"};
  std::vector<std::pair<int64_t, v1::TrialResult>> results;
  ASSERT_OK(executor_->RunFinalists(
      job, Trials(configs),
      [&](int64_t index, const v1::TrialResult& r) { results.emplace_back(index, r); },
      /*should_stop=*/nullptr));
  ASSERT_EQ(results.size(), 3u);
  int last_round = 0;
  std::map<int, std::vector<int64_t>> by_round;
  for (const auto& [round, index] : steps_) {
    EXPECT_GE(round, last_round);
    last_round = round;
    by_round[round].push_back(index);
  }
  ASSERT_GE(by_round.size(), 2u);
  EXPECT_LE(by_round.size(), 4u);
  EXPECT_THAT(by_round[0], ElementsAre(0, 1, 2));
  EXPECT_THAT(by_round[1], ElementsAre(0, 1, 2));  // nobody separated after one round
  for (const auto& [round, indices] : by_round) {
    EXPECT_GE(indices.size(), 2u) << "round " << round;
    EXPECT_TRUE(std::is_sorted(indices.begin(), indices.end())) << "round " << round;
  }
  for (const auto& [index, result] : results) {
    ExpectCombined(index, result);
    EXPECT_GE(result.measurement().rounds(), 2) << index;
  }
}

TEST_F(FinalistsTest, AnInterruptedRoundReportsNothing) {
  MakeExecutor();
  JobContext job = LoadJob(kFlaky, "N=1024");
  int reported = 0;
  ASSERT_OK(executor_->RunFinalists(
      job, Trials({"CRASH=0,UNROLL=1", "CRASH=0,UNROLL=4"}),
      [&](int64_t, const v1::TrialResult&) { ++reported; },
      [&] { return steps_.size() >= 3; }));  // stop in round 1
  EXPECT_EQ(steps_.size(), 3u);
  EXPECT_EQ(reported, 0);
}

}  // namespace
}  // namespace tunefleet::worker

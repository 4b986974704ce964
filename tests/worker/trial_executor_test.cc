// The trial executor with the real compiler and real benchmark children, over
// the faulty CPU space and a few configs of the shipped kernels.
#include "worker/trial_executor.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/worker/worker_test_util.h"
#include "worker/cpu/cpu_compiler.h"
#include "worker/cpu/cpu_device.h"

namespace tunefleet::worker {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::worker::testing::CpuChild;
using ::tunefleet::worker::testing::CpuCompileStack;
using ::tunefleet::worker::testing::MakeCpuCompileStack;
using ::tunefleet::worker::testing::FastOptions;
using ::tunefleet::worker::testing::LoadJob;
using ::tunefleet::worker::testing::MakeTrial;

constexpr char kFaulty[] = "tests/worker/faulty_cpu";

class TrialExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override { Rebuild(); }

  // A fresh compiler, pool and executor over the same cache directory.
  void Rebuild() {
    executor_.reset();
    compile_.pool.reset();  // before the compiler it uses
    compile_ = MakeCpuCompileStack(cache_.path());
    ASSERT_NE(compile_.pool, nullptr);
    executor_ = std::make_unique<TrialExecutor>(compile_.pool.get(), DiscoverCpuDevice(), CpuChild(cache_.path()),
                                                FastOptions());
  }

  // Runs `configs` as trials 0..n-1; results by index.
  std::map<int64_t, v1::TrialResult> RunTrials(const JobContext& job,
                                               const std::vector<std::string>& configs,
                                               int64_t first_index = 0) {
    std::vector<v1::Trial> trials;
    for (size_t i = 0; i < configs.size(); ++i) {
      trials.push_back(MakeTrial(first_index + static_cast<int64_t>(i), configs[i]));
    }
    std::map<int64_t, v1::TrialResult> results;
    EXPECT_OK(executor_->Run(
        job, trials, [&](int64_t index, const v1::TrialResult& r) { results[index] = r; },
        /*should_stop=*/nullptr));
    return results;
  }

  static void ExpectMeasured(const v1::TrialResult& result) {
    EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << result.error();
    EXPECT_GT(result.measurement().median_seconds(), 0);
    // The CPU backend times its calibration kernel beside every run.
    EXPECT_GT(result.measurement().calibration_seconds(), 0);
    EXPECT_GE(result.measurement().samples(), 3);
    EXPECT_LE(result.measurement().p20_seconds(), result.measurement().median_seconds());
    EXPECT_GE(result.measurement().p80_seconds(), result.measurement().median_seconds());
    EXPECT_EQ(result.device_id(), "cpu0");
  }

  ::tunefleet::testing::TempDir cache_;
  CpuCompileStack compile_;
  std::unique_ptr<TrialExecutor> executor_;
};

TEST_F(TrialExecutorTest, ClassifiesEveryFaultAndKeepsMeasuringGoodConfigs) {
  JobContext job = LoadJob(kFaulty, "N=4096");
  auto results = RunTrials(job, {
      "FAULT=0,UNROLL=1",  // 0 good
      "FAULT=1,UNROLL=1",  // 1 segfault
      "FAULT=0,UNROLL=4",  // 2 good, right after a crash
      "FAULT=2,UNROLL=1",  // 3 infinite loop
      "FAULT=3,UNROLL=1",  // 4 wrong result
      "FAULT=4,UNROLL=1",  // 5 compile error
      "FAULT=5,UNROLL=1",  // 6 abort
      "FAULT=9,UNROLL=1",  // 7 not a listed value
      "UNROLL=1,FAULT=0",  // 8 good again, params out of order
  });
  ASSERT_EQ(results.size(), 9u);
  ExpectMeasured(results[0]);
  EXPECT_EQ(results[1].status(), v1::TRIAL_STATUS_CRASHED);
  EXPECT_THAT(results[1].error(), HasSubstr("SIGSEGV"));
  ExpectMeasured(results[2]);
  EXPECT_EQ(results[3].status(), v1::TRIAL_STATUS_TIMEOUT);
  EXPECT_EQ(results[4].status(), v1::TRIAL_STATUS_WRONG_RESULT);
  EXPECT_THAT(results[4].error(), HasSubstr("y: 4096 of 4096 elements differ"));
  EXPECT_EQ(results[5].status(), v1::TRIAL_STATUS_COMPILE_ERROR);
  EXPECT_THAT(results[5].error(), HasSubstr("FAULT=4: this config does not compile"));
  EXPECT_EQ(results[6].status(), v1::TRIAL_STATUS_CRASHED);
  EXPECT_THAT(results[6].error(), HasSubstr("SIGABRT"));
  EXPECT_EQ(results[7].status(), v1::TRIAL_STATUS_INVALID_CONFIG);
  ExpectMeasured(results[8]);
  EXPECT_EQ(ConfigToString(results[8].config()), "FAULT=0,UNROLL=1");  // normalized
  EXPECT_GT(results[0].compile_seconds(), 0);
  // The first child, then one after each of the segfault, the hang, the abort.
  EXPECT_EQ(executor_->child_starts(), 4);
}

TEST_F(TrialExecutorTest, QuarantinesAConfigThatKillsTheChildTwice) {
  JobContext job = LoadJob(kFaulty, "N=1024");
  auto first = RunTrials(job, {"FAULT=1,UNROLL=1", "FAULT=0,UNROLL=1", "FAULT=1,UNROLL=1"});
  EXPECT_EQ(first[0].status(), v1::TRIAL_STATUS_CRASHED);
  ExpectMeasured(first[1]);
  EXPECT_EQ(first[2].status(), v1::TRIAL_STATUS_QUARANTINED);
  EXPECT_THAT(first[2].error(), HasSubstr("SIGSEGV"));
  const int starts = executor_->child_starts();
  // No third try: the config is not run again, so no child starts for it.
  auto second = RunTrials(job, {"FAULT=1,UNROLL=1"}, /*first_index=*/3);
  EXPECT_EQ(second[3].status(), v1::TRIAL_STATUS_QUARANTINED);
  EXPECT_THAT(second[3].error(), HasSubstr("killed the benchmark child 2 times"));
  EXPECT_EQ(executor_->child_starts(), starts);
  ExpectMeasured(RunTrials(job, {"FAULT=0,UNROLL=4"}, /*first_index=*/4)[4]);
}

// The child starts when a lease of its job begins to run, not after the
// first compile: here the only config fails to compile, and a child was
// started all the same (its start-up overlapped with the compile). A later
// lease of the same job keeps that child.
TEST_F(TrialExecutorTest, TheChildStartsBeforeTheFirstCompileIsDone) {
  JobContext job = LoadJob(kFaulty, "N=1024");
  auto first = RunTrials(job, {"FAULT=4,UNROLL=1"});
  EXPECT_EQ(first[0].status(), v1::TRIAL_STATUS_COMPILE_ERROR);
  EXPECT_EQ(executor_->child_starts(), 1);
  ExpectMeasured(RunTrials(job, {"FAULT=0,UNROLL=1"}, /*first_index=*/1)[1]);
  EXPECT_EQ(executor_->child_starts(), 1);
}

// A spare child, started before any lease, serves the first job without a
// second start; another job of the same kernel code (another shape of a
// sweep) keeps it and is prepared again; other code gets a process of its
// own.
TEST_F(TrialExecutorTest, AChildServesOneKernelsCodeAcrossItsJobs) {
  executor_->StartSpareChild();
  EXPECT_EQ(executor_->child_starts(), 1);
  executor_->StartSpareChild();  // one runs already
  EXPECT_EQ(executor_->child_starts(), 1);
  JobContext job = LoadJob(kFaulty, "N=1024");
  ExpectMeasured(RunTrials(job, {"FAULT=0,UNROLL=1"})[0]);
  EXPECT_EQ(executor_->child_starts(), 1);
  executor_->StartSpareChild();  // it served a job: no longer a spare
  EXPECT_EQ(executor_->child_starts(), 1);
  JobContext shape = LoadJob(kFaulty, "N=2048");
  shape.job_id = "another-shape";
  ExpectMeasured(RunTrials(shape, {"FAULT=0,UNROLL=1"})[0]);
  EXPECT_EQ(executor_->child_starts(), 1);
  // Other code: the same kernel with one more compile option.
  JobContext other = LoadJob(kFaulty, "N=1024");
  other.job_id = "other-code";
  other.spec.add_compile_options("-DOTHER_CODE=1");
  ExpectMeasured(RunTrials(other, {"FAULT=0,UNROLL=1"})[0]);
  EXPECT_EQ(executor_->child_starts(), 2);
}

TEST_F(TrialExecutorTest, ReusesCachedArtifactsOnRerun) {
  JobContext job = LoadJob(kFaulty, "N=1024");
  auto first = RunTrials(job, {"FAULT=0,UNROLL=4"});
  ExpectMeasured(first[0]);
  EXPECT_GT(first[0].compile_seconds(), 0);
  Rebuild();  // a restarted worker: new compiler, pool, child
  auto again = RunTrials(job, {"FAULT=0,UNROLL=4"});
  ExpectMeasured(again[0]);
  EXPECT_EQ(again[0].compile_seconds(), 0);  // served from the artifact cache
  int artifacts = 0;
  const std::string artifact_cache = cache_.path() + "/artifacts";  // not the child's inbox
  for (const auto& entry : std::filesystem::recursive_directory_iterator(artifact_cache)) {
    if (entry.path().extension() == ".so") ++artifacts;
  }
  EXPECT_EQ(artifacts, 2);  // the config and the reference, once each
}

TEST_F(TrialExecutorTest, StopsBetweenTrialsWhenAsked) {
  JobContext job = LoadJob(kFaulty, "N=1024");
  std::vector<v1::Trial> trials = {MakeTrial(0, "FAULT=0,UNROLL=1"),
                                   MakeTrial(1, "FAULT=0,UNROLL=4"),
                                   MakeTrial(2, "FAULT=3,UNROLL=4")};
  int reported = 0;
  ASSERT_OK(executor_->Run(
      job, trials, [&](int64_t, const v1::TrialResult&) { ++reported; },
      [&] { return reported >= 1; }));
  EXPECT_EQ(reported, 1);
}

TEST_F(TrialExecutorTest, FailsEveryTrialWhenTheShapeIsBad) {
  JobContext job = LoadJob(kFaulty, "N=0");
  auto results = RunTrials(job, {"FAULT=0,UNROLL=1", "FAULT=0,UNROLL=4"});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status(), v1::TRIAL_STATUS_INVALID_CONFIG);
  EXPECT_EQ(results[1].status(), v1::TRIAL_STATUS_INVALID_CONFIG);
}

TEST_F(TrialExecutorTest, UnknownDtypeFailsThePrepareInsteadOfSpinning) {
  JobContext job = LoadJob(kFaulty, "N=1024");
  job.spec.mutable_args(0)->mutable_tensor()->set_dtype(static_cast<v1::DType>(8));
  for (int64_t first : {0, 2}) {  // two leases of the same job
    auto results = RunTrials(job, {"FAULT=0,UNROLL=1", "FAULT=0,UNROLL=4"}, first);
    ASSERT_EQ(results.size(), 2u);
    for (const auto& [index, result] : results) {
      EXPECT_EQ(result.status(), v1::TRIAL_STATUS_LAUNCH_ERROR) << index;
      EXPECT_THAT(result.error(), HasSubstr("dtype 8"));
    }
  }
}

TEST_F(TrialExecutorTest, APrepareThatTimedOutIsNeverRunAgainByExecutorsSharingFailures) {
  JobContext job = LoadJob(kFaulty, "N=1024");
  ::tunefleet::testing::TempDir log_dir;  // the one place the sandboxed child may write
  const std::string log = log_dir.path() + "/prepares.log";
  for (v1::SourceFile& file : job.sources) {
    if (file.path() != "reference.cc") continue;
    file.set_content(absl::StrCat(
        "#include <cstdio>\nextern \"C\" void faulty_reference(void**) {\n"
        "  std::FILE* log = std::fopen(\"", log, "\", \"a\");\n"
        "  std::fputs(\"prepare\\n\", log);\n  std::fclose(log);\n"
        "  for (volatile unsigned long i = 0;; ++i) {}\n}\n"));
    file.set_digest(Sha256Hex(file.content()));
  }
  ExecutorOptions options = FastOptions();
  options.prepare_deadline = absl::Seconds(1);
  options.failed_prepares = std::make_shared<FailedPrepares>();
  ChildOptions child = CpuChild(cache_.path());
  child.policy.writable.push_back(log_dir.path());
  TrialExecutor first(compile_.pool.get(), DiscoverCpuDevice(), child, options);
  TrialExecutor second(compile_.pool.get(), DiscoverCpuDevice(), child, options);
  int64_t index = 0;
  for (TrialExecutor* executor : {&first, &first, &second}) {  // three leases
    std::vector<v1::TrialResult> results;
    ASSERT_OK(executor->Run(
        job, {MakeTrial(index++, "FAULT=0,UNROLL=1"), MakeTrial(index++, "FAULT=0,UNROLL=4")},
        [&](int64_t, const v1::TrialResult& r) { results.push_back(r); },
        /*should_stop=*/nullptr));
    ASSERT_EQ(results.size(), 2u);
    for (const v1::TrialResult& result : results) {
      EXPECT_EQ(result.status(), v1::TRIAL_STATUS_TIMEOUT) << result.error();
    }
  }
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "prepare\n") << "the job was prepared more than once";
  EXPECT_EQ(second.child_starts(), 0);
}

TEST_F(TrialExecutorTest, InterruptedExecutorRunsNothingAndReportsNothing) {
  JobContext job = LoadJob(kFaulty, "N=1024");
  executor_->Interrupt();
  int reported = 0;
  absl::Status status = executor_->Run(
      job, {MakeTrial(0, "FAULT=0,UNROLL=1")},
      [&](int64_t, const v1::TrialResult&) { ++reported; }, /*should_stop=*/nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_EQ(reported, 0);
  EXPECT_EQ(executor_->child_starts(), 0);
}

TEST_F(TrialExecutorTest, MeasuresMatmulConfigs) {
  JobContext job = LoadJob("kernels/cpu/matmul", "M=64,N=64,K=64");
  auto results = RunTrials(job, {"BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=1",
                                 "BLOCK_M=32,BLOCK_N=64,BLOCK_K=32,UNROLL=4,LOOP_ORDER=0",
                                 "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,UNROLL=4,LOOP_ORDER=0"});
  ASSERT_EQ(results.size(), 3u);
  for (const auto& [index, result] : results) ExpectMeasured(result);
}

// Each run in the child says where its time went, and the daemon waited
// at least that long; a config that kills the child says nothing.
TEST_F(TrialExecutorTest, TheChildSaysWhereEachTrialsTimeWent) {
  struct Measured {
    v1::TrialStatus status;
    absl::Duration elapsed;
    v1::TrialPhases phases;
  };
  std::vector<Measured> measured;
  ExecutorOptions options = FastOptions();
  options.on_measured = [&](const v1::TrialResult& result, absl::Duration elapsed,
                            const v1::TrialPhases& phases) {
    measured.push_back({result.status(), elapsed, phases});
  };
  executor_ = std::make_unique<TrialExecutor>(compile_.pool.get(), DiscoverCpuDevice(),
                                              CpuChild(cache_.path()), options);
  auto results = RunTrials(LoadJob(kFaulty, "N=4096"), {"FAULT=0,UNROLL=1", "FAULT=1,UNROLL=1",
                                                        "FAULT=0,UNROLL=4"});
  ASSERT_EQ(results.size(), 3u);
  ASSERT_EQ(measured.size(), 3u);
  for (const Measured& m : measured) {
    if (m.status == v1::TRIAL_STATUS_CRASHED) {
      EXPECT_EQ(m.phases.ByteSizeLong(), 0u);
      continue;
    }
    ASSERT_EQ(m.status, v1::TRIAL_STATUS_OK);
    const v1::TrialPhases& p = m.phases;
    EXPECT_GT(p.load_seconds(), 0);
    EXPECT_GT(p.check_seconds(), 0);
    EXPECT_GT(p.warmup_seconds(), 0);
    EXPECT_GT(p.sampling_seconds(), 0);
    // The child's steady clock against the daemon's: a millisecond apart at most.
    EXPECT_LE(p.load_seconds() + p.check_seconds() + p.warmup_seconds() + p.sampling_seconds(),
              absl::ToDoubleSeconds(m.elapsed) + 1e-3);
  }
}

TEST_F(TrialExecutorTest, MeasuresTransposeConfigs) {
  // Odd sizes: full tiles take the micro-block path, edges the plain loop.
  JobContext job = LoadJob("kernels/cpu/transpose", "M=100,N=72");
  auto results = RunTrials(job, {"TILE_R=8,TILE_C=8,MICRO=1,ORDER=0",
                                 "TILE_R=32,TILE_C=32,MICRO=8,ORDER=0",
                                 "TILE_R=16,TILE_C=64,MICRO=4,ORDER=1"});
  ASSERT_EQ(results.size(), 3u);
  for (const auto& [index, result] : results) ExpectMeasured(result);
}

}  // namespace
}  // namespace tunefleet::worker

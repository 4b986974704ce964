// The NcuProfiler's plumbing with real CPU benchmark children (sandboxed, as
// the worker runs them) started by a stand-in for ncu: a shell script that
// takes ncu's flags, runs the child command after them, and once the child
// exits writes the raw CSV page (or an ncu error) to --log-file. What the
// real ncu reads is tests/gpu/profile_gpu_test.cc's part.
#include "worker/ncu_profiler.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/worker/worker_test_util.h"
#include "worker/cpu/cpu_device.h"

namespace tunefleet::worker {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::tunefleet::worker::testing::CpuChild;
using ::tunefleet::worker::testing::CpuCompileStack;
using ::tunefleet::worker::testing::FastOptions;
using ::tunefleet::worker::testing::LoadJob;
using ::tunefleet::worker::testing::MakeCpuCompileStack;
using ::tunefleet::worker::testing::MakeTrial;

constexpr char kFaulty[] = "tests/worker/faulty_cpu";

constexpr char kPage[] =
    "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"launch__registers_per_thread\","
    "\"sm__warps_active.avg.pct_of_peak_sustained_active\"\n"
    "\"\",\"\",\"usecond\",\"register/thread\",\"%\"\n"
    "\"0\",\"kernel\",\"12.5\",\"32\",\"61.5\"\n";

class NcuProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    compile_ = MakeCpuCompileStack(dir_.path() + "/cache");
    ASSERT_NE(compile_.pool, nullptr);
    std::filesystem::create_directories(dir_.path() + "/ncu/bin");
    std::filesystem::create_directories(dir_.path() + "/scratch");
  }

  // A stand-in ncu that writes `report` to its log file after the child.
  std::string FakeNcu(const std::string& report) {
    const std::string path = dir_.path() + "/ncu/bin/ncu";
    std::ofstream(dir_.path() + "/ncu/report.txt") << report;
    std::ofstream script(path);
    script << "#!/bin/sh\n"
              "log=''\n"
              "while [ $# -gt 0 ]; do\n"
              "  if [ \"$1\" = --log-file ]; then log=\"$2\"; shift 2; break; fi\n"
              "  echo \"$1\" >> '" << dir_.path() << "/scratch/args'\n"
              "  shift\n"
              "done\n"
              "\"$@\"\n"
              "code=$?\n"
              "cat '" << dir_.path() << "/ncu/report.txt' > \"$log\"\n"
              "exit $code\n";
    script.close();
    chmod(path.c_str(), 0755);
    return path;
  }

  std::unique_ptr<NcuProfiler> Profiler(const std::string& ncu,
                                        std::vector<v1::Backend> backends = {v1::BACKEND_CPU}) {
    NcuProfilerOptions options;
    options.ncu = ncu;
    options.ncu_version = "2025.3.1.0 (stand-in)";
    options.scratch_dir = dir_.path() + "/scratch";
    options.backends = std::move(backends);
    options.executor = FastOptions();
    options.executor.trial_deadline = absl::Seconds(20);
    return std::make_unique<NcuProfiler>(compile_.pool.get(), DiscoverCpuDevice(),
                                         CpuChild(dir_.path() + "/cache"), options);
  }

  ::tunefleet::testing::TempDir dir_;
  CpuCompileStack compile_;
};

TEST_F(NcuProfilerTest, RunsTheConfigInAChildStartedByNcuAndReadsItsReport) {
  std::unique_ptr<NcuProfiler> profiler = Profiler(FakeNcu(kPage));
  JobContext job = LoadJob(kFaulty, "N=1024");
  v1::KernelProfile profile = profiler->Profile(job, MakeTrial(0, "FAULT=0,UNROLL=1"), nullptr);
  EXPECT_EQ(profile.unavailable(), "");
  EXPECT_THAT(profile.duration_seconds(), DoubleNear(12.5e-6, 1e-12));
  EXPECT_EQ(profile.registers_per_thread(), 32);
  EXPECT_EQ(profile.achieved_occupancy_pct(), 61.5);
  EXPECT_EQ(profile.device_id(), "cpu0");
  EXPECT_EQ(profile.ncu_version(), "2025.3.1.0 (stand-in)");

  absl::StatusOr<std::string> args = ReadFile(dir_.path() + "/scratch/args");
  ASSERT_OK(args);
  EXPECT_THAT(*args, HasSubstr("--clock-control\nnone\n"));
  EXPECT_THAT(*args, HasSubstr("--kernel-name\nregex:^" + job.spec.entry() + "$\n"));
  std::filesystem::remove(dir_.path() + "/scratch/args");
  // Only the arguments file was ever there: the log was removed once read.
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path() + "/scratch"));
}

TEST_F(NcuProfilerTest, NcuWithoutAccessToTheCountersIsTheReason) {
  std::unique_ptr<NcuProfiler> profiler = Profiler(FakeNcu(
      "==PROF== Connected to process 1\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0.\n"));
  v1::KernelProfile profile =
      profiler->Profile(LoadJob(kFaulty, "N=1024"), MakeTrial(0, "FAULT=0,UNROLL=1"), nullptr);
  EXPECT_THAT(profile.unavailable(), HasSubstr("cannot read the GPU's performance counters"));
  EXPECT_THAT(profile.unavailable(), HasSubstr("ERR_NVGPUCTRPERM"));
}

TEST_F(NcuProfilerTest, AConfigThatCrashesUnderNcuSaysSo) {
  std::unique_ptr<NcuProfiler> profiler = Profiler(FakeNcu(kPage));
  v1::KernelProfile profile =
      profiler->Profile(LoadJob(kFaulty, "N=1024"), MakeTrial(0, "FAULT=1,UNROLL=1"), nullptr);
  EXPECT_THAT(profile.unavailable(), HasSubstr("the config failed under ncu: TRIAL_STATUS_CRASHED"));
}

TEST_F(NcuProfilerTest, WithoutNcuOrForAnotherBackendNothingRuns) {
  v1::KernelProfile no_ncu = Profiler("")->Profile(LoadJob(kFaulty, "N=1024"),
                                                   MakeTrial(0, "FAULT=0,UNROLL=1"), nullptr);
  EXPECT_EQ(no_ncu.unavailable(), "ncu not found on this host");
  v1::KernelProfile cpu = Profiler(FakeNcu(kPage), {v1::BACKEND_CUDA})
                              ->Profile(LoadJob(kFaulty, "N=1024"),
                                        MakeTrial(0, "FAULT=0,UNROLL=1"), nullptr);
  EXPECT_EQ(cpu.unavailable(), "profiling is not supported for the cpu backend");
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/scratch/args"));
}

}  // namespace
}  // namespace tunefleet::worker

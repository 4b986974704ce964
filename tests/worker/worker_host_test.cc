// The worker's composition root built from WorkerHostOptions, with no
// command line: the preflight steps with the real sandbox, CPU device and
// compiler, the pool-size rule, and the policy the classes that own it
// state (the trial deadline, the benchmark child's command).
#include "worker/worker_host.h"

#include <sstream>
#include <string>

#include "common/usable_cpus.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "worker/bench_child.h"
#include "worker/trial_executor.h"

namespace tunefleet::worker {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

WorkerHostOptions CpuOptions(const ::tunefleet::testing::TempDir& dir) {
  WorkerHostOptions options;
  options.backend = v1::BACKEND_CPU;
  options.cache_dir = dir.path();
  options.sandbox = "none";
  return options;
}

TEST(WorkerHostTest, PreflightOfTheCpuBackendPassesEveryStep) {
  ::tunefleet::testing::TempDir dir;
  std::ostringstream out;
  EXPECT_EQ(RunPreflight(CpuOptions(dir), out), 0) << out.str();
  EXPECT_THAT(out.str(), StartsWith("backend: cpu\nsandbox: ok (none)\n"));
  EXPECT_THAT(out.str(), HasSubstr("\ndevices: ok ("));
  EXPECT_THAT(out.str(), HasSubstr("\ncompiler: ok ("));
}

TEST(WorkerHostTest, PreflightNamesTheStepThatFails) {
  ::tunefleet::testing::TempDir dir;
  WorkerHostOptions options = CpuOptions(dir);
  options.sandbox = "chroot";
  std::ostringstream out;
  EXPECT_EQ(RunPreflight(options, out), 1);
  EXPECT_THAT(out.str(), HasSubstr("sandbox: FAILED: --sandbox=chroot: expected bwrap or none"));

  options = CpuOptions(dir);
  options.compile_only = true;
  out.str("");
  EXPECT_EQ(RunPreflight(options, out), 0) << out.str();
  EXPECT_THAT(out.str(), HasSubstr("devices: skipped (--compile-only"));
}

TEST(WorkerHostTest, PreflightOfThePythonBackendReportsAMissingInterpreter) {
  ::tunefleet::testing::TempDir dir;
  WorkerHostOptions options = CpuOptions(dir);
  options.backend = v1::BACKEND_PYTHON;
  options.python = dir.path() + "/no-such-python3";
  std::ostringstream out;
  EXPECT_EQ(RunPreflight(options, out), 1);
  EXPECT_THAT(out.str(), HasSubstr("\npython: FAILED: "));
  EXPECT_THAT(out.str(), HasSubstr("no-such-python3"));
}

TEST(WorkerHostTest, CompileThreadsFollowTheOptionThenTheDeviceThenTheUsableCpus) {
  ::tunefleet::testing::TempDir dir;
  WorkerHostOptions options = CpuOptions(dir);
  EXPECT_EQ(CompileThreads(options, nullptr), UsableCpus());
  v1::Device device;
  v1::DeviceLimit* cores = device.add_limits();
  cores->set_name("cores");
  cores->set_value(5);
  EXPECT_EQ(CompileThreads(options, &device), 5);
  options.compile_threads = 3;
  EXPECT_EQ(CompileThreads(options, &device), 3);
}

TEST(WorkerHostTest, PolicyLivesWithItsOwners) {
  EXPECT_EQ(MinTrialDeadline(v1::BACKEND_CPU), absl::Seconds(10));
  EXPECT_EQ(MinTrialDeadline(v1::BACKEND_CUDA), absl::Seconds(30));
  EXPECT_EQ(MinTrialDeadline(v1::BACKEND_PYTHON), absl::Seconds(30));
  EXPECT_THAT(BenchChildCommand("/opt/tf/bin/tunefleet-worker", v1::BACKEND_PYTHON, "json"),
              ::testing::ElementsAre("/opt/tf/bin/tunefleet-worker", "--child", "--backend",
                                     "python", "--log-format", "json"));
}

}  // namespace
}  // namespace tunefleet::worker

// A manual measurement, not part of the suite (DISABLED_): runs every valid
// config of a CPU kernel through the real executor and prints the fastest and
// slowest, with the daemon's default deadline. Run with
//   worker_integration_test --gtest_also_run_disabled_tests
//       --gtest_filter='*SpreadOfValidConfigs*'
// Environment: SPREAD_KERNEL (default kernels/cpu/matmul), SPREAD_SHAPE
// (default M=512,N=512,K=512), SPREAD_BUDGET seconds (default 0.1).
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/config_space.h"
#include "gtest/gtest.h"
#include "tests/worker/worker_test_util.h"
#include "worker/cpu/cpu_compiler.h"
#include "worker/cpu/cpu_device.h"

namespace tunefleet::worker {
namespace {

std::string Env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

TEST(KernelSpreadTest, DISABLED_SpreadOfValidConfigs) {
  ::tunefleet::testing::TempDir cache;
  CompilerOptions compiler_options;
  compiler_options.cache_dir = cache.path();
  auto compiler = CpuCompiler::Create(compiler_options);
  ASSERT_OK(compiler);
  CompilePool pool(compiler->get(), /*threads=*/1);
  const v1::Device device = DiscoverCpuDevice();
  ExecutorOptions options;
  options.measure.set_budget_seconds(std::stod(Env("SPREAD_BUDGET", "0.1")));
  options.measure.set_min_samples(3);
  TrialExecutor executor(&pool, device, testing::CpuChild(cache.path()), options);

  JobContext job = testing::LoadJob(Env("SPREAD_KERNEL", "kernels/cpu/matmul"),
                                    Env("SPREAD_SHAPE", "M=512,N=512,K=512"));
  auto shape = NormalizeShape(job.spec, job.shape);
  ASSERT_OK(shape);
  auto space = ConfigSpace::Create(job.spec, *shape, LimitsFromDevice(device));
  ASSERT_OK(space);
  std::vector<v1::Trial> trials;
  ConfigEnumerator configs(space->get());
  for (uint64_t ordinal; configs.Next(&ordinal);) {
    v1::Trial& trial = trials.emplace_back();
    trial.set_index(static_cast<int64_t>(ordinal));
    *trial.mutable_config() = (*space)->ConfigAt(ordinal);
  }
  std::vector<std::pair<double, std::string>> timings;
  ASSERT_OK(executor.Run(job, trials, [&](int64_t, const v1::TrialResult& r) {
    ASSERT_EQ(r.status(), v1::TRIAL_STATUS_OK) << ConfigToString(r.config()) << ": " << r.error();
    timings.emplace_back(r.measurement().median_seconds(), ConfigToString(r.config()));
  }, nullptr));
  std::sort(timings.begin(), timings.end());
  std::printf("%s %s on %s: %zu valid configs\n", job.spec.name().c_str(),
              ShapeToString(*shape).c_str(), device.model().c_str(), timings.size());
  const size_t n = timings.size();
  for (size_t i = 0; i < n; ++i) {
    if (i < 5 || i + 5 >= n) {
      std::printf("%4zu  %10.3f ms  %s\n", i + 1, timings[i].first * 1e3, timings[i].second.c_str());
    }
  }
  std::printf("worst / best = %.1fx\n", timings.back().first / timings.front().first);
}

}  // namespace
}  // namespace tunefleet::worker

// Helpers shared by the worker's integration tests: the worker binary, jobs
// loaded from kernel dirs, fast measurement settings.
#ifndef TUNEFLEET_TESTS_WORKER_WORKER_TEST_UTIL_H_
#define TUNEFLEET_TESTS_WORKER_WORKER_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "worker/backends.h"
#include "worker/child_process.h"
#include "worker/compile_pool.h"
#include "worker/cpu/cpu_compiler.h"
#include "worker/sandbox.h"
#include "worker/trial_executor.h"

namespace tunefleet::worker::testing {

inline std::string WorkerBinary() {
  return ::tunefleet::testing::BuildDir() + "/bin/tunefleet-worker";
}

// The worker's default sandbox (bubblewrap): the tests run job code in it.
inline Sandbox TestSandbox() {
  SandboxOptions options;
  options.mode = SandboxMode::kBwrap;
  absl::StatusOr<Sandbox> sandbox = Sandbox::Create(options);
  EXPECT_TRUE(sandbox.ok()) << sandbox.status();
  return sandbox.ok() ? *sandbox : Sandbox();
}

// A sandboxed CPU benchmark child with its artifact inbox under `cache_dir`.
inline ChildOptions CpuChild(const std::string& cache_dir) {
  ChildOptions child;
  child.argv = {WorkerBinary(), "--child", "--backend", "cpu"};
  child.sandbox = TestSandbox();
  child.inbox = cache_dir + "/child-inbox";
  child.policy = ChildSandboxPolicy(v1::BACKEND_CPU, WorkerBinary(), child.inbox);
  return child;
}

// `dir` relative to the repository root.
inline JobContext LoadJob(const std::string& dir, const std::string& shape,
                          uint64_t seed = 1) {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(::tunefleet::testing::SourceDir() + "/" + dir);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  JobContext job;
  job.job_id = "job-" + dir;
  job.spec = bundle->spec;
  job.sources = bundle->sources;
  job.shape = *ParseShape(shape);
  job.seed = seed;
  return job;
}

inline v1::Trial MakeTrial(int64_t index, const std::string& config) {
  v1::Trial trial;
  trial.set_index(index);
  *trial.mutable_config() = *ParseConfig(config);
  return trial;
}

// The real CPU compiler, sandboxed, caching under a test's directory, and a pool of two
// threads over it. The pool is declared last so that it goes first.
struct CpuCompileStack {
  std::unique_ptr<CpuCompiler> compiler;
  std::unique_ptr<CompilePool> pool;
};

inline CpuCompileStack MakeCpuCompileStack(const std::string& cache_dir) {
  CompilerOptions options;
  options.cache_dir = cache_dir;
  options.sandbox = TestSandbox();
  absl::StatusOr<std::unique_ptr<CpuCompiler>> compiler = CpuCompiler::Create(options);
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  CpuCompileStack stack;
  if (!compiler.ok()) return stack;
  stack.compiler = *std::move(compiler);
  stack.pool = std::make_unique<CompilePool>(stack.compiler.get(), /*threads=*/2);
  return stack;
}

// Short budgets: the whole worker test set runs in seconds.
inline ExecutorOptions FastOptions() {
  ExecutorOptions options;
  options.measure.set_warmup_seconds(0.002);
  options.measure.set_budget_seconds(0.01);
  options.measure.set_min_samples(3);
  options.measure.set_max_samples(200);
  options.trial_deadline = absl::Milliseconds(1500);
  options.prepare_deadline = absl::Seconds(20);
  return options;
}

}  // namespace tunefleet::worker::testing

#endif  // TUNEFLEET_TESTS_WORKER_WORKER_TEST_UTIL_H_

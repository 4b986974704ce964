// The CPU backend's KernelRunner: inside a benchmark child, loads compiled
// configs with dlopen, checks each against the reference's output and times
// it with std::chrono::steady_clock.
//
// A CPU kernel is `extern "C" void ENTRY(void** args)` where args[i] points
// to the i-th argument's value, as cuLaunchKernel's kernelParams: for a
// tensor, to a variable holding the data pointer; for a scalar, to an
// int64_t / int32_t / double / float of the scalar's dtype.
//
// Protocol per Run: inputs restored from pristine copies (a kernel that
// scribbles on its inputs cannot poison the next config), outputs poisoned
// with all-ones bytes (NaN for float dtypes), one checked run, warm-up by
// time (shorter on a core that timed a kernel moments ago: WarmupSeconds),
// then samples until the budget (fewer for a kernel too slow for the
// daemon's deadline: FitToDeadline). Kernels under ~20 us are timed in
// batches of calls (not when an argument is INOUT, which must be restored
// before every call). Caches are not flushed: CPU kernels are timed warm.
// Each Measurement carries the time of the backend's fixed calibration
// kernel on this core within the calibration interval (docs/measurement.md).
#ifndef TUNEFLEET_WORKER_CPU_CPU_RUNNER_H_
#define TUNEFLEET_WORKER_CPU_CPU_RUNNER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/config_space.h"
#include "worker/backend.h"
#include "worker/measurement.h"

namespace tunefleet::worker {

// Thread-safety: not thread-safe (one per benchmark child).
class CpuKernelRunner : public KernelRunner {
 public:
  CpuKernelRunner();
  ~CpuKernelRunner() override;

  absl::Status Prepare(const v1::PrepareRequest& request) override;
  bool Remeasure(const v1::MeasureOptions& measure) override;
  v1::TrialResult Run(const v1::RunRequest& request) override;
  const v1::TrialPhases& last_phases() const override { return phases_; }

 private:
  struct Buffer;
  struct Arg;
  using KernelFn = void (*)(void**);

  // Allocates and fills every argument of the prepared spec.
  absl::Status AllocateArgs();
  // Binds `config`'s scalar values into the argument slots.
  absl::Status BindScalars(const v1::Config& config);
  // Copies pristine inputs back and poisons outputs.
  void ResetArgs();
  void RestoreInouts();
  // OK, or FailedPrecondition naming the first argument that differs.
  absl::Status CheckOutputs();
  // Times `fn` whose checked run took `call_seconds` under `options`; stops
  // early, setting `*cut_early`, when the early-cut rule says so against
  // `best_seconds`. `*warmup_seconds` (when not null): how long its warm-up took.
  v1::Measurement Time(KernelFn fn, const v1::MeasureOptions& options, double call_seconds,
                       double best_seconds, bool* cut_early, double* warmup_seconds = nullptr);
  // Times the backend's calibration kernel when the calibration is due.
  void Calibrate();

  v1::KernelSpec spec_;
  v1::MeasureOptions measure_;
  uint64_t seed_ = 0;
  std::unique_ptr<ConfigSpace> space_;
  std::vector<Arg> args_;
  std::vector<void*> arg_ptrs_;  // args_[i]'s value slot, what kernels receive
  bool has_inout_ = false;
  bool prepared_ = false;
  Calibration calibration_;
  v1::TrialPhases phases_;  // the last Run's
  // When Time last ended (none yet: the core counts as idle), for the warm-up.
  std::optional<std::chrono::steady_clock::time_point> last_timed_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_CPU_CPU_RUNNER_H_

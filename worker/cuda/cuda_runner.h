// The CUDA KernelRunner: lives in a benchmark child pinned to one GPU, holds
// that GPU's primary context for the child's lifetime, and checks and times
// cubins built by the NvrtcCompiler.
//
// Prepare (once per kernel + shape): allocates every tensor argument, fills
// IN/INOUT tensors on the host with FillTensor (seeded per argument, so the
// same bytes on every machine) and copies them over, then computes the
// expected outputs once, kept on the device: with cuBLAS when reference.library is
// "cublas_gemm" (see cublas_gemm.h for the layout rules), else with the
// reference kernel in request.reference_artifact (entry reference.entry,
// launched with the spec's launch geometry under the default config). A spec
// without a reference is timed but never checked.
//
// Run (once per config), in order; the first failure decides the status:
//   bind the config                      -> INVALID_CONFIG
//   load the cubin, find `entry`          -> LAUNCH_ERROR
//   cuFuncGetAttribute checks: threads vs MAX_THREADS_PER_BLOCK, registers
//   x threads vs regs_per_block, static + dynamic shared memory vs the
//   opt-in limit, grid/block dims         -> INVALID_CONFIG (nothing launched)
//   restore INOUT tensors, poison OUT tensors with 0xFF bytes (NaN)
//   launch; a non-sticky launch error (out of resources, invalid value)
//                                         -> LAUNCH_ERROR, the child lives on
//   wait up to launch_timeout_seconds     -> TIMEOUT, fatal
//   a sticky error (700, 710, 715, 716, 719, 999, ...)
//                                         -> CRASHED with the error's name, fatal
//   compare with the expected outputs on the device (device_compare.h:
//   the host's rule, only a summary crosses) -> WRONG_RESULT
//   measure (gpu_timer.h)                 -> OK with the Measurement,
//                                            calibrated by the SM clock
// "Fatal" means the context is unusable: poisoned() turns true, every later
// call fails fast, and the owner must write the result and then _exit the
// process (the daemon respawns the child). ChildResponse.exiting carries it.
//
// Thread-safety: not thread-safe; one runner per process and GPU.
#ifndef TUNEFLEET_WORKER_CUDA_CUDA_RUNNER_H_
#define TUNEFLEET_WORKER_CUDA_CUDA_RUNNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config_space.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "tunefleet/v1/types.pb.h"
#include "worker/backend.h"
#include "worker/cuda/cuda_driver.h"
#include "worker/cuda/device_compare.h"
#include "worker/cuda/gpu_timer.h"

namespace tunefleet::worker::cuda {

struct CudaRunnerOptions {
  // The GPU's UUID ("GPU-..."); empty takes ordinal 0 (the one GPU a child
  // pinned with CUDA_VISIBLE_DEVICES sees).
  std::string device_id;
  // A launch not finished by then is a TIMEOUT (and fatal).
  double launch_timeout_seconds = 10;
  // The same for the reference computation in Prepare.
  double reference_timeout_seconds = 120;
  // Tests turn this off to see the driver's own launch-time errors.
  bool check_resources = true;
};

class CudaRunner : public KernelRunner {
 public:
  // Unavailable without a driver or device; NotFound for an unknown
  // device_id; Internal when the context cannot be set up.
  static absl::StatusOr<std::unique_ptr<CudaRunner>> Create(CudaRunnerOptions options);
  ~CudaRunner() override;
  CudaRunner(const CudaRunner&) = delete;
  CudaRunner& operator=(const CudaRunner&) = delete;

  absl::Status Prepare(const v1::PrepareRequest& request) override;
  bool Remeasure(const v1::MeasureOptions& measure) override;
  v1::TrialResult Run(const v1::RunRequest& request) override;
  const v1::TrialPhases& last_phases() const override { return phases_; }

  // True once a trial left the context unusable (see the file comment).
  bool poisoned() const override { return poisoned_; }
  const v1::Device& device() const { return device_; }

  // Times the prepared job's reference (cuBLAS or the reference kernel) with
  // the same protocol, for comparisons. FailedPrecondition without one.
  absl::StatusOr<v1::Measurement> MeasureReference();

 private:
  struct Tensor;
  struct Job;
  struct Kernel;
  struct Verdict;

  CudaRunner(const CudaDriver* driver, CudaRunnerOptions options);
  absl::Status Init();
  void ReleaseJob();

  // Prepare's steps.
  absl::Status AllocateTensors(uint64_t seed);
  absl::Status ComputeExpected(const std::string& reference_artifact);
  absl::Status RunReferenceKernel(const std::string& artifact);
  absl::Status KeepExpected();
  LaunchFn ReferenceLaunch();

  // Run's steps.
  Verdict LoadKernel(const std::string& artifact, const std::string& entry, Kernel* kernel);
  // Whether PrepareLaunch applies the spec's constraints. They describe the
  // kernel under test; the reference runs with the default config's launch
  // (grid, block, shared memory, scalars) even at a shape where that config
  // breaks a constraint of the kernel (a softmax row narrower than the
  // default's threads), and only the device's resource checks apply to it.
  enum class Constraints { kApply, kIgnore };
  Verdict PrepareLaunch(const v1::Config& config, Kernel* kernel,
                        Constraints constraints = Constraints::kApply);
  // Encodes tensor map argument `arg` at the bound config into `*map` (left
  // zero where its `when` is); InvalidArgument naming the argument.
  absl::Status EncodeMap(int arg, CUtensorMap* map);
  Verdict CheckResources(Kernel* kernel);
  Verdict ResetOutputs();
  Verdict LaunchAndWait(const LaunchFn& launch, double timeout_seconds);
  Verdict CompareOutputs();
  // Times `launch`; `best_seconds` and `cut_early` as in GpuTimer::Measure.
  Verdict Measure(const LaunchFn& launch, v1::Measurement* measurement,
                  double best_seconds = 0, bool* cut_early = nullptr);
  Verdict FromGpu(const GpuResult& result, const std::string& what);
  LaunchFn KernelLaunch(Kernel* kernel);

  const CudaDriver* driver_;
  const CudaRunnerOptions options_;
  v1::Device device_;
  CUdevice cu_device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::unique_ptr<GpuTimer> timer_;
  std::unique_ptr<DeviceComparator> comparator_;  // made by the first checked job
  std::unique_ptr<Job> job_;
  bool poisoned_ = false;
  v1::TrialPhases phases_;  // the last Run's
};

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_CUDA_RUNNER_H_

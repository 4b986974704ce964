// The CUDA Compiler: NVRTC turns one config of a kernel spec into a cubin for
// the exact architecture of the target device, cached on disk.
//
// What one compilation gets:
//   --gpu-architecture=sm_<cc_major><cc_minor> from the device's limits
//     (sm_<..>a on cc 9.0 and later when the spec's compile_options contain
//     "--tunefleet-arch-specific", which is not passed on to NVRTC);
//   -std=c++17, -I<CUDA include dir>, -I<the spec's source dir>;
//   -D<PARAM>=<value> for every param of the config;
//   --ptxas-options=-v (registers, shared memory and spills in the log);
//   the spec's compile_options, last (they may override the above).
// Kernels must be `extern "C" __global__` so that `entry` is their symbol.
//
// Time limit: with a helper executable (tunefleet-nvrtc, built beside this
// library) each compile runs in its own process, SIGKILLed at the deadline,
// so a pathological compile is abandoned (outcome.timed_out). Without one,
// NVRTC runs in-process and the limit is not enforced.
//
// Cache: <cache_dir>/<key>.cubin (+ .log), key = SHA-256 of the NVRTC
// version, the arch, every option (defines included), the entry, and the
// path and digest of every source file. Entries are written to a temporary
// name and renamed, so concurrent compiles of one key are safe.
//
// Thread-safety: Compile may be called from many threads at once.
#ifndef TUNEFLEET_WORKER_CUDA_NVRTC_COMPILER_H_
#define TUNEFLEET_WORKER_CUDA_NVRTC_COMPILER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/backend.h"
#include "worker/cuda/cuda_driver.h"
#include "worker/cuda/nvrtc_program.h"

namespace tunefleet::worker::cuda {

// The spec compile option that selects the arch-specific target (sm_90a).
inline constexpr char kArchSpecificOption[] = "--tunefleet-arch-specific";

struct NvrtcCompilerOptions {
  std::string cache_dir;  // required; created when missing
  // The tunefleet-nvrtc executable; empty compiles in-process, unbounded.
  std::string helper_path;
  double timeout_seconds = 120;
};

class NvrtcCompiler : public Compiler {
 public:
  // Unavailable when NVRTC cannot be loaded; InvalidArgument for bad options;
  // Internal when the cache directory cannot be created.
  static absl::StatusOr<std::unique_ptr<NvrtcCompiler>> Create(
      NvrtcCompilerOptions options);

  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) override;
  // "nvrtc 13.0"
  std::string toolkit() const override;

 private:
  NvrtcCompiler(const Nvrtc* nvrtc, NvrtcCompilerOptions options)
      : nvrtc_(nvrtc), options_(std::move(options)) {}

  const Nvrtc* nvrtc_;
  const NvrtcCompilerOptions options_;
};

// "<directory of this executable>/tunefleet-nvrtc" when that file exists,
// else empty.
std::string DefaultNvrtcHelperPath();

// The whole option list NVRTC gets for `job` (see the file comment).
absl::StatusOr<std::vector<std::string>> NvrtcOptionsFor(
    const CompileJob& job, const std::string& source_dir);

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_NVRTC_COMPILER_H_

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
// Files: NVRTC opens whatever a source `#include`s, absolute paths included
// ("/etc/passwd", the worker's keys). So with a sandbox the helper is
// required and runs in it: it sees the system read-only, the CUDA headers,
// and only this compile's directory (the job's sources, its output);
// Create refuses a sandbox without a helper. Scanning sources for
// `#include` instead was rejected: macros, line splices and __has_include
// make such a scan unsound. In-process NVRTC remains for --sandbox=none.
// compile_options must pass CheckCompileOptions (-I only relative, no
// --include-path or --pre-include), else a failed compile naming the
// option. The log keeps only diagnostics about the job's files
// (JobCompilerLog).
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
  // Where each compile's own directory is made; empty = cache_dir.
  std::string scratch_dir;
  // Where the helper runs; default unsandboxed. REQUIRES: helper_path set
  // when enabled.
  Sandbox sandbox;
};

class NvrtcCompiler : public Compiler {
 public:
  // Unavailable when NVRTC cannot be loaded; InvalidArgument for bad options;
  // Internal when the cache directory cannot be created.
  // FailedPrecondition for a sandbox without a helper.
  static absl::StatusOr<std::unique_ptr<NvrtcCompiler>> Create(
      NvrtcCompilerOptions options);

  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) override;
  // A cubin is for the arch in its key and runs on any device of that arch
  // with a driver that loads it: shared.
  std::optional<ArtifactLocation> Locate(const CompileJob& job) const override;
  // "nvrtc 13.0"
  std::string toolkit() const override;

 private:
  NvrtcCompiler(const Nvrtc* nvrtc, NvrtcCompilerOptions options)
      : nvrtc_(nvrtc), options_(std::move(options)) {}
  // <cache_dir>/<key>.cubin and .log.
  absl::StatusOr<ArtifactLocation> LocationOf(const CompileJob& job) const;
  // Runs the helper on the job's main source in `work_dir` (in the sandbox
  // when set); sets `*timed_out` when it was abandoned at the deadline.
  absl::Status RunHelper(const CompileJob& job, const std::string& work_dir,
                         const std::vector<std::string>& options, NvrtcOutput* output,
                         bool* timed_out) const;

  const Nvrtc* nvrtc_;
  const NvrtcCompilerOptions options_;
};

// The helper program that runs one NVRTC compilation per process.
inline constexpr char kNvrtcHelperName[] = "tunefleet-nvrtc";

// Where the helper is: beside this executable (a build tree), else in the
// installed libexec directory (FindHelperProgram); empty when in neither.
std::string DefaultNvrtcHelperPath();

// The whole option list NVRTC gets for `job` (see the file comment).
absl::StatusOr<std::vector<std::string>> NvrtcOptionsFor(
    const CompileJob& job, const std::string& source_dir);

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_NVRTC_COMPILER_H_

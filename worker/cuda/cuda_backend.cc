#include "worker/cuda/cuda_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "worker/cuda/cuda_devices.h"
#include "worker/cuda/cuda_runner.h"
#include "worker/cuda/nvrtc_compiler.h"

namespace tunefleet::worker::cuda {

absl::StatusOr<std::vector<v1::Device>> DiscoverCudaDevices() {
  absl::StatusOr<std::vector<v1::Device>> devices = ListCudaDevices();
  if (absl::IsUnavailable(devices.status())) {
    return absl::NotFoundError(absl::StrCat("no CUDA driver: ", devices.status().message()));
  }
  if (devices.ok() && devices->empty()) return absl::NotFoundError("no CUDA device");
  return devices;
}

absl::StatusOr<std::unique_ptr<Compiler>> CreateCudaCompiler(const CompilerOptions& options) {
  if (options.cache_dir.empty()) return absl::InvalidArgumentError("cache_dir is empty");
  NvrtcCompilerOptions nvrtc;
  nvrtc.cache_dir = absl::StrCat(options.cache_dir, "/nvrtc");
  nvrtc.helper_path = options.program.empty() ? DefaultNvrtcHelperPath() : options.program;
  nvrtc.timeout_seconds = absl::ToDoubleSeconds(options.timeout);
  nvrtc.scratch_dir = absl::StrCat(options.cache_dir, "/scratch");
  nvrtc.sandbox = options.sandbox;
  ASSIGN_OR_RETURN(std::unique_ptr<NvrtcCompiler> compiler,
                   NvrtcCompiler::Create(std::move(nvrtc)));
  return std::unique_ptr<Compiler>(std::move(compiler));
}

absl::StatusOr<std::unique_ptr<KernelRunner>> CreateCudaKernelRunner() {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaRunner> runner, CudaRunner::Create(CudaRunnerOptions()));
  return std::unique_ptr<KernelRunner>(std::move(runner));
}

}  // namespace tunefleet::worker::cuda

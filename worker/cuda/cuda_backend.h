// The CUDA backend's entry points, the three functions worker/backends.cc
// calls when the worker is built with CUDA (TUNEFLEET_WITH_CUDA_BACKEND).
//
// Thread-safety: all three are thread-safe.
#ifndef TUNEFLEET_WORKER_CUDA_CUDA_BACKEND_H_
#define TUNEFLEET_WORKER_CUDA_CUDA_BACKEND_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tunefleet/v1/types.pb.h"
#include "worker/backend.h"

namespace tunefleet::worker::cuda {

// The visible GPUs (see cuda_devices.h for what each Device holds). NotFound
// when the host has none: no driver, or a driver that sees no GPU.
absl::StatusOr<std::vector<v1::Device>> DiscoverCudaDevices();

// An NvrtcCompiler caching under <options.cache_dir>/nvrtc and killing
// compiles that outlast options.timeout. options.program names the
// tunefleet-nvrtc helper; empty takes the one beside the running executable,
// and where there is none, compiles run in-process without a time limit.
// Unavailable when NVRTC cannot be loaded.
absl::StatusOr<std::unique_ptr<Compiler>> CreateCudaCompiler(
    const CompilerOptions& options);

// A CudaRunner on the first visible GPU (a benchmark child is pinned with
// CUDA_VISIBLE_DEVICES). Its result statuses CRASHED and TIMEOUT leave the
// process poisoned: the child must answer and exit.
absl::StatusOr<std::unique_ptr<KernelRunner>> CreateCudaKernelRunner();

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_CUDA_BACKEND_H_

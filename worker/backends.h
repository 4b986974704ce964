// The backend registry: the one place that maps a v1::Backend to its device
// discovery, Compiler (daemon side) and KernelRunner (benchmark child side).
// The daemon and the child never name a concrete backend class.
//
// CPU and python (worker/python/, its work done by Python processes) are
// always built in. CUDA plugs in from worker/cuda/ (see the marked
// spot in backends.cc): that directory's CMake defines the static library
// target `worker_cuda`, whose header worker/cuda/cuda_backend.h provides
//   absl::StatusOr<std::vector<v1::Device>> cuda::DiscoverCudaDevices();
//   absl::StatusOr<std::unique_ptr<Compiler>> cuda::CreateCudaCompiler(
//       const CompilerOptions&);
//   absl::StatusOr<std::unique_ptr<KernelRunner>> cuda::CreateCudaKernelRunner();
// worker/CMakeLists.txt links it and defines TUNEFLEET_WITH_CUDA_BACKEND.
#ifndef TUNEFLEET_WORKER_BACKENDS_H_
#define TUNEFLEET_WORKER_BACKENDS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/backend.h"

namespace tunefleet::worker {

// "cpu" / "cuda" / "python", as the --backend flag spells them.
std::string BackendName(v1::Backend backend);
// InvalidArgument for an unknown name.
absl::StatusOr<v1::Backend> ParseBackendName(const std::string& name);

// The devices of `backend` on this host. Unimplemented for a backend not
// built in; NotFound when the host has none (no GPU, no driver).
absl::StatusOr<std::vector<v1::Device>> DiscoverDevices(v1::Backend backend);

absl::StatusOr<std::unique_ptr<Compiler>> CreateCompiler(
    v1::Backend backend, const CompilerOptions& options);

// Called in a benchmark child; the device is implied by the child's
// environment (ChildEnvironment).
absl::StatusOr<std::unique_ptr<KernelRunner>> CreateKernelRunner(v1::Backend backend);

// Environment additions that pin a benchmark child to `device`: for CUDA and
// python, CUDA_VISIBLE_DEVICES=<device.id()> (the GPU UUID); none for CPU.
// (A python child's interpreter environment comes with its policy,
// ChildSandboxPolicy, which Sandbox::Apply adds with or without bwrap.)
std::vector<std::pair<std::string, std::string>> ChildEnvironment(
    const v1::Device& device);

// What a sandboxed benchmark child of `backend` sees beyond the system:
// `worker_binary` and its artifact `inbox` (ChildOptions::inbox) read-only,
// and for CUDA the host's /dev/nvidia* nodes, /proc/driver/nvidia and /sys
// (read-only); for python also python::ProcessSandboxPolicy (the
// interpreter, the package, the Triton cache).
SandboxPolicy ChildSandboxPolicy(v1::Backend backend, const std::string& worker_binary,
                                 const std::string& inbox);

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_BACKENDS_H_

#include "worker/backends.h"

#include "absl/strings/str_cat.h"
#include "worker/cpu/cpu_compiler.h"
#include "worker/cpu/cpu_device.h"
#include "worker/cpu/cpu_runner.h"
#include "worker/python/python_backend.h"

// ---- CUDA plugs in here (worker/cuda/, built when the toolkit is found). ----
#ifdef TUNEFLEET_WITH_CUDA_BACKEND
#include "worker/cuda/cuda_backend.h"
#endif

namespace tunefleet::worker {
namespace {

absl::Status NotBuiltIn(v1::Backend backend) {
  return absl::UnimplementedError(absl::StrCat(
      "backend ", BackendName(backend), " is not built into this worker"));
}

}  // namespace

std::string BackendName(v1::Backend backend) {
  switch (backend) {
    case v1::BACKEND_CPU: return "cpu";
    case v1::BACKEND_CUDA: return "cuda";
    case v1::BACKEND_PYTHON: return "python";
    default: return absl::StrCat("backend#", static_cast<int>(backend));
  }
}

absl::StatusOr<v1::Backend> ParseBackendName(const std::string& name) {
  if (name == "cpu") return v1::BACKEND_CPU;
  if (name == "cuda") return v1::BACKEND_CUDA;
  if (name == "python") return v1::BACKEND_PYTHON;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend \"", name, "\" (cpu, cuda or python)"));
}

absl::StatusOr<std::vector<v1::Device>> DiscoverDevices(v1::Backend backend) {
  switch (backend) {
    case v1::BACKEND_CPU:
      return std::vector<v1::Device>{DiscoverCpuDevice()};
#ifdef TUNEFLEET_WITH_CUDA_BACKEND
    case v1::BACKEND_CUDA:
      return cuda::DiscoverCudaDevices();
#endif
    case v1::BACKEND_PYTHON:
      return python::Devices();
    default:
      return NotBuiltIn(backend);
  }
}

absl::StatusOr<std::unique_ptr<Compiler>> CreateCompiler(
    v1::Backend backend, const CompilerOptions& options) {
  switch (backend) {
    case v1::BACKEND_CPU: {
      absl::StatusOr<std::unique_ptr<CpuCompiler>> compiler = CpuCompiler::Create(options);
      if (!compiler.ok()) return compiler.status();
      return std::unique_ptr<Compiler>(std::move(*compiler));
    }
#ifdef TUNEFLEET_WITH_CUDA_BACKEND
    case v1::BACKEND_CUDA:
      return cuda::CreateCudaCompiler(options);
#endif
    case v1::BACKEND_PYTHON:
      return python::CreatePythonCompiler(options);
    default:
      return NotBuiltIn(backend);
  }
}

absl::StatusOr<std::unique_ptr<KernelRunner>> CreateKernelRunner(v1::Backend backend) {
  switch (backend) {
    case v1::BACKEND_CPU:
      return std::unique_ptr<KernelRunner>(new CpuKernelRunner());
#ifdef TUNEFLEET_WITH_CUDA_BACKEND
    case v1::BACKEND_CUDA:
      return cuda::CreateCudaKernelRunner();
#endif
    default:
      return NotBuiltIn(backend);
  }
}

std::vector<std::pair<std::string, std::string>> ChildEnvironment(
    const v1::Device& device) {
  if (device.backend() == v1::BACKEND_CUDA || device.backend() == v1::BACKEND_PYTHON) {
    return {{"CUDA_VISIBLE_DEVICES", device.id()}};
  }
  return {};
}

SandboxPolicy ChildSandboxPolicy(v1::Backend backend, const std::string& worker_binary,
                                 const std::string& inbox) {
  SandboxPolicy policy;
  policy.read_only = {worker_binary, inbox};
  if (backend == v1::BACKEND_CUDA) {
    AddCudaDevices(HostNvidiaDeviceNodes(), &policy);
    policy.read_only.push_back("/sys");  // the driver reads PCI and NUMA topology there
  }
  if (const python::PythonInfo* info = python::Configured();
      backend == v1::BACKEND_PYTHON && info != nullptr) {
    MergePolicy(python::ProcessSandboxPolicy(*info), &policy);
  }
  return policy;
}

}  // namespace tunefleet::worker

#include "worker/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tunefleet::worker::cuda {
namespace {

#define TF_STRINGIFY_INNER(x) #x
// Expands the header's mapping first: cuMemAlloc -> "cuMemAlloc_v2".
#define TF_SYMBOL_NAME(x) TF_STRINGIFY_INNER(x)

// Opens the first library of `names` that dlopen accepts (RTLD_LOCAL; never
// closed). Sets `opened` to the name that worked.
absl::StatusOr<void*> OpenFirst(const std::vector<std::string>& names,
                                std::string* opened) {
  std::vector<std::string> errors;
  for (const std::string& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      *opened = name;
      return handle;
    }
    const char* error = dlerror();
    errors.push_back(error != nullptr ? error : name);
  }
  return absl::UnavailableError(
      absl::StrCat("cannot load any of ", absl::StrJoin(names, ", "), ": ",
                   absl::StrJoin(errors, "; ")));
}

// Candidate paths of a toolkit library: the override, the sonames, then the
// toolkit's lib64 directories.
std::vector<std::string> ToolkitCandidates(const char* env_override,
                                           const std::vector<std::string>& sonames) {
  std::vector<std::string> names;
  if (const char* path = std::getenv(env_override); path != nullptr && *path) {
    names.push_back(path);
  }
  for (const std::string& soname : sonames) names.push_back(soname);
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home) {
    dirs.push_back(absl::StrCat(home, "/lib64"));
  }
  dirs.push_back("/usr/local/cuda/lib64");
  for (const std::string& dir : dirs) {
    for (const std::string& soname : sonames) {
      names.push_back(absl::StrCat(dir, "/", soname));
    }
  }
  return names;
}

template <typename Fn>
absl::Status Resolve(void* handle, const char* symbol, Fn* out) {
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("symbol ", symbol, " missing from the CUDA library"));
  }
  *out = reinterpret_cast<Fn>(address);
  return absl::OkStatus();
}

absl::StatusOr<CudaDriver*> LoadDriverOnce() {
  std::string opened;
  absl::StatusOr<void*> handle = OpenFirst({"libcuda.so.1"}, &opened);
  if (!handle.ok()) return handle.status();
  auto* driver = new CudaDriver();  // lives until exit
  absl::Status status;
#define TF_RESOLVE(member, function)                                     \
  if (status.ok()) {                                                     \
    status = Resolve(*handle, TF_SYMBOL_NAME(function), &driver->member); \
  }
  TF_CUDA_DRIVER_FUNCTIONS(TF_RESOLVE)
#undef TF_RESOLVE
  if (!status.ok()) {
    delete driver;
    return status;
  }
  CUresult init = driver->Init(0);
  if (init != CUDA_SUCCESS && init != CUDA_ERROR_NO_DEVICE) {
    absl::Status error = absl::FailedPreconditionError(
        absl::StrCat("cuInit: ", driver->Describe(init)));
    delete driver;
    return error;
  }
  return driver;
}

absl::StatusOr<Nvrtc*> LoadNvrtcOnce() {
  std::string opened;
  absl::StatusOr<void*> handle = OpenFirst(
      ToolkitCandidates("TUNEFLEET_NVRTC_LIBRARY",
                        {"libnvrtc.so.13", "libnvrtc.so"}),
      &opened);
  if (!handle.ok()) return handle.status();
  auto* nvrtc = new Nvrtc();
  absl::Status status;
#define TF_RESOLVE(member, function)                                    \
  if (status.ok()) {                                                    \
    status = Resolve(*handle, TF_SYMBOL_NAME(function), &nvrtc->member); \
  }
  TF_NVRTC_FUNCTIONS(TF_RESOLVE)
#undef TF_RESOLVE
  if (status.ok() && nvrtc->Version(&nvrtc->major, &nvrtc->minor) != NVRTC_SUCCESS) {
    status = absl::UnavailableError("nvrtcVersion failed");
  }
  if (!status.ok()) {
    delete nvrtc;
    return status;
  }
  nvrtc->library_path = opened;
  return nvrtc;
}

absl::StatusOr<Cublas*> LoadCublasOnce() {
  std::string opened;
  absl::StatusOr<void*> handle = OpenFirst(
      ToolkitCandidates("TUNEFLEET_CUBLAS_LIBRARY",
                        {"libcublas.so.13", "libcublas.so"}),
      &opened);
  if (!handle.ok()) return handle.status();
  auto* cublas = new Cublas();
  absl::Status status = Resolve(*handle, TF_SYMBOL_NAME(cublasCreate), &cublas->Create);
  if (status.ok()) status = Resolve(*handle, TF_SYMBOL_NAME(cublasDestroy), &cublas->Destroy);
  if (status.ok()) status = Resolve(*handle, TF_SYMBOL_NAME(cublasSetStream), &cublas->SetStream);
  if (status.ok()) status = Resolve(*handle, "cublasSetMathMode", &cublas->SetMathMode);
  if (status.ok()) status = Resolve(*handle, TF_SYMBOL_NAME(cublasGetVersion), &cublas->GetVersion);
  if (status.ok()) status = Resolve(*handle, "cublasGemmEx", &cublas->GemmEx);
  if (!status.ok()) {
    delete cublas;
    return status;
  }
  return cublas;
}

}  // namespace

std::string CudaDriver::ErrorName(CUresult result) const {
  const char* name = nullptr;
  if (GetErrorName != nullptr && GetErrorName(result, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  return absl::StrCat("CUresult ", static_cast<int>(result));
}

std::string CudaDriver::Describe(CUresult result) const {
  const char* text = nullptr;
  std::string out = absl::StrCat(ErrorName(result), " (", static_cast<int>(result), ")");
  if (GetErrorString != nullptr && GetErrorString(result, &text) == CUDA_SUCCESS &&
      text != nullptr) {
    absl::StrAppend(&out, ": ", text);
  }
  return out;
}

absl::Status CudaDriver::Check(CUresult result, absl::string_view what) const {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", Describe(result)));
}

absl::StatusOr<const CudaDriver*> LoadCudaDriver() {
  static const absl::StatusOr<CudaDriver*> loaded = LoadDriverOnce();
  if (!loaded.ok()) return loaded.status();
  return *loaded;
}

absl::StatusOr<const Nvrtc*> LoadNvrtc() {
  static const absl::StatusOr<Nvrtc*> loaded = LoadNvrtcOnce();
  if (!loaded.ok()) return loaded.status();
  return *loaded;
}

absl::StatusOr<const Cublas*> LoadCublas() {
  static const absl::StatusOr<Cublas*> loaded = LoadCublasOnce();
  if (!loaded.ok()) return loaded.status();
  return *loaded;
}

bool IsStickyError(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

std::string CudaIncludeDir() {
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home) {
    dirs.push_back(absl::StrCat(home, "/include"));
  }
  dirs.push_back("/usr/local/cuda/include");
  for (const std::string& dir : dirs) {
    struct stat info;
    if (stat(absl::StrCat(dir, "/cuda_fp16.h").c_str(), &info) == 0) return dir;
  }
  return "";
}

}  // namespace tunefleet::worker::cuda

// The CUDA libraries the worker uses, loaded at run time with dlopen so that
// no tunefleet binary links a CUDA library: the driver API (libcuda.so.1),
// NVRTC (libnvrtc.so.13) and cuBLAS (libcublas.so.13). The same binary runs on
// a host without a GPU or toolkit; the loaders then return Unavailable.
//
// The CUDA headers are used for types only. Every function pointer has the
// exact type of the header's declaration, and is resolved by the symbol name
// the header maps it to (cuMemAlloc -> cuMemAlloc_v2), so the ABI matches the
// headers this was built with (CUDA 13.0).
//
// Thread-safety: each Load* function is thread-safe and loads its library at
// most once per process; the returned tables are immutable and live until
// exit. Calling through the tables is as thread-safe as CUDA itself.
#ifndef TUNEFLEET_WORKER_CUDA_CUDA_DRIVER_H_
#define TUNEFLEET_WORKER_CUDA_CUDA_DRIVER_H_

#include <cuda.h>
#include <cublas_v2.h>
#include <nvrtc.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tunefleet::worker::cuda {

// X(member, function): the driver API functions the worker calls.
#define TF_CUDA_DRIVER_FUNCTIONS(X)                      \
  X(Init, cuInit)                                        \
  X(DriverGetVersion, cuDriverGetVersion)                \
  X(GetErrorName, cuGetErrorName)                        \
  X(GetErrorString, cuGetErrorString)                    \
  X(DeviceGetCount, cuDeviceGetCount)                    \
  X(DeviceGet, cuDeviceGet)                              \
  X(DeviceGetName, cuDeviceGetName)                      \
  X(DeviceGetUuid, cuDeviceGetUuid)                      \
  X(DeviceTotalMem, cuDeviceTotalMem)                    \
  X(DeviceGetAttribute, cuDeviceGetAttribute)            \
  X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)    \
  X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease)  \
  X(CtxSetCurrent, cuCtxSetCurrent)                      \
  X(CtxSynchronize, cuCtxSynchronize)                    \
  X(MemAlloc, cuMemAlloc)                                \
  X(MemFree, cuMemFree)                                  \
  X(MemcpyHtoD, cuMemcpyHtoD)                            \
  X(MemcpyDtoH, cuMemcpyDtoH)                            \
  X(MemcpyDtoDAsync, cuMemcpyDtoDAsync)                  \
  X(MemsetD8Async, cuMemsetD8Async)                      \
  X(MemsetD32Async, cuMemsetD32Async)                    \
  X(ModuleLoadData, cuModuleLoadData)                    \
  X(ModuleUnload, cuModuleUnload)                        \
  X(ModuleGetFunction, cuModuleGetFunction)              \
  X(FuncGetAttribute, cuFuncGetAttribute)                \
  X(FuncSetAttribute, cuFuncSetAttribute)                \
  X(LaunchKernel, cuLaunchKernel)                        \
  X(StreamCreate, cuStreamCreate)                        \
  X(StreamDestroy, cuStreamDestroy)                      \
  X(StreamSynchronize, cuStreamSynchronize)              \
  X(EventCreate, cuEventCreate)                          \
  X(EventDestroy, cuEventDestroy)                        \
  X(EventRecord, cuEventRecord)                          \
  X(EventQuery, cuEventQuery)                            \
  X(EventElapsedTime, cuEventElapsedTime)                \
  X(TensorMapEncodeTiled, cuTensorMapEncodeTiled)

#define TF_NVRTC_FUNCTIONS(X)                            \
  X(Version, nvrtcVersion)                               \
  X(GetErrorString, nvrtcGetErrorString)                 \
  X(CreateProgram, nvrtcCreateProgram)                   \
  X(DestroyProgram, nvrtcDestroyProgram)                 \
  X(CompileProgram, nvrtcCompileProgram)                 \
  X(GetProgramLogSize, nvrtcGetProgramLogSize)           \
  X(GetProgramLog, nvrtcGetProgramLog)                   \
  X(GetCUBINSize, nvrtcGetCUBINSize)                     \
  X(GetCUBIN, nvrtcGetCUBIN)                             \
  X(GetPTXSize, nvrtcGetPTXSize)                         \
  X(GetPTX, nvrtcGetPTX)

#define TF_CUDA_DECLARE_MEMBER(member, function) \
  decltype(&::function) member = nullptr;

struct CudaDriver {
  TF_CUDA_DRIVER_FUNCTIONS(TF_CUDA_DECLARE_MEMBER)

  // "CUDA_ERROR_ILLEGAL_ADDRESS", or "CUresult <n>" for an unknown code.
  std::string ErrorName(CUresult result) const;
  // "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was ..."
  std::string Describe(CUresult result) const;
  // OK for CUDA_SUCCESS, else Internal "<what>: <Describe(result)>".
  absl::Status Check(CUresult result, absl::string_view what) const;
};

struct Nvrtc {
  TF_NVRTC_FUNCTIONS(TF_CUDA_DECLARE_MEMBER)
  int major = 0;
  int minor = 0;
  std::string library_path;  // the path or soname dlopen accepted
};

struct Cublas {
  // Spelled out: cublas_api.h also declares C++ overloads of cublasGemmEx.
  cublasStatus_t (*Create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*Destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*SetStream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*SetMathMode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*GetVersion)(cublasHandle_t, int*) = nullptr;
  cublasStatus_t (*GemmEx)(cublasHandle_t, cublasOperation_t,
                           cublasOperation_t, int, int, int, const void*,
                           const void*, cudaDataType, int, const void*,
                           cudaDataType, int, const void*, void*, cudaDataType,
                           int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

#undef TF_CUDA_DECLARE_MEMBER

// Loads libcuda.so.1 and calls cuInit(0). Unavailable when the library is
// missing (a host without the NVIDIA driver); FailedPrecondition when cuInit
// fails for another reason than "no device" (CUDA_ERROR_NO_DEVICE still gives
// the table: such a host simply has zero devices).
absl::StatusOr<const CudaDriver*> LoadCudaDriver();

// Loads NVRTC: $TUNEFLEET_NVRTC_LIBRARY when set, else libnvrtc.so.13,
// libnvrtc.so, then the same names under $CUDA_HOME/lib64 and
// /usr/local/cuda/lib64. Unavailable when none loads.
absl::StatusOr<const Nvrtc*> LoadNvrtc();

// Loads cuBLAS the same way (libcublas.so.13, libcublas.so). Unavailable when
// none loads.
absl::StatusOr<const Cublas*> LoadCublas();

// True for the errors after which the CUDA context is unusable (illegal
// address, assert, trap, misaligned address, illegal instruction, launch
// failure, unknown, ...): the process must exit rather than continue.
bool IsStickyError(CUresult result);

// The CUDA toolkit's include directory to hand NVRTC: $CUDA_HOME/include,
// else /usr/local/cuda/include, when it holds cuda_fp16.h; else empty.
std::string CudaIncludeDir();

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_CUDA_DRIVER_H_

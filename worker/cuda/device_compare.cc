#include "worker/cuda/device_compare.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "worker/cuda/nvrtc_program.h"
#include "worker/host_tensors.h"

namespace tunefleet::worker::cuda {
namespace {

// Per thread: a grid-stride loop; per warp: shuffles; per warp leader: one
// atomic of each kind. `worst_bits` holds the bits of a non-negative double,
// which order as the doubles do.
constexpr char kSource[] = R"CUDA(
struct Summary {
  unsigned long long mismatches;
  unsigned long long first;        // ~0 while none
  unsigned long long worst_bits;   // largest finite |error| among mismatches
  unsigned long long worst_index;  // ~0 until find_worst_* ran
};

__device__ __forceinline__ double load_f16(const unsigned short* p, long long i) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i]));
  return f;
}
__device__ __forceinline__ double load_bf16(const unsigned short* p, long long i) {
  return __int_as_float(static_cast<int>(static_cast<unsigned>(p[i]) << 16));
}
template <typename T>
__device__ __forceinline__ double load_plain(const T* p, long long i) {
  return static_cast<double>(p[i]);
}

__device__ __forceinline__ bool mismatch(double x, double y, double atol, double rtol,
                                         double* error) {
  *error = fabs(x - y);
  return !(*error <= atol + rtol * fabs(y));  // NaN never matches
}

#define TF_COMPARE(NAME, T, LOAD)                                                       \
  extern "C" __global__ void compare_##NAME(const T* a, const T* e, long long n,         \
                                            double atol, double rtol, Summary* s) {      \
    unsigned long long count = 0, first = ~0ull, worst = 0;                             \
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;            \
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;   \
         i < n; i += stride) {                                                          \
      double error;                                                                     \
      if (mismatch(LOAD(a, i), LOAD(e, i), atol, rtol, &error)) {                       \
        ++count;                                                                        \
        if (static_cast<unsigned long long>(i) < first) first = i;                      \
        if (error <= 1.7976931348623157e308) {                                          \
          const unsigned long long bits = __double_as_longlong(error);                  \
          if (bits > worst) worst = bits;                                               \
        }                                                                               \
      }                                                                                 \
    }                                                                                   \
    for (int offset = 16; offset > 0; offset /= 2) {                                    \
      count += __shfl_down_sync(0xffffffffu, count, offset);                            \
      first = min(first, __shfl_down_sync(0xffffffffu, first, offset));                 \
      worst = max(worst, __shfl_down_sync(0xffffffffu, worst, offset));                 \
    }                                                                                   \
    if ((threadIdx.x & 31) == 0 && count != 0) {                                        \
      atomicAdd(&s->mismatches, count);                                                 \
      atomicMin(&s->first, first);                                                      \
      atomicMax(&s->worst_bits, worst);                                                 \
    }                                                                                   \
  }                                                                                     \
  extern "C" __global__ void find_worst_##NAME(const T* a, const T* e, long long n,      \
                                               double atol, double rtol, Summary* s) {   \
    const unsigned long long target = s->worst_bits;                                    \
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;            \
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;   \
         i < n; i += stride) {                                                          \
      double error;                                                                     \
      if (mismatch(LOAD(a, i), LOAD(e, i), atol, rtol, &error) &&                       \
          static_cast<unsigned long long>(__double_as_longlong(error)) == target) {      \
        atomicMin(&s->worst_index, static_cast<unsigned long long>(i));                 \
      }                                                                                 \
    }                                                                                   \
  }

TF_COMPARE(f16, unsigned short, load_f16)
TF_COMPARE(bf16, unsigned short, load_bf16)
TF_COMPARE(f32, float, load_plain)
TF_COMPARE(f64, double, load_plain)
TF_COMPARE(i32, int, load_plain)
TF_COMPARE(i64, long long, load_plain)
)CUDA";

struct Summary {
  uint64_t mismatches;
  uint64_t first;
  uint64_t worst_bits;
  uint64_t worst_index;
};
constexpr uint64_t kNone = ~uint64_t{0};
constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

const char* Suffix(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_F16: return "f16";
    case v1::DTYPE_BF16: return "bf16";
    case v1::DTYPE_F32: return "f32";
    case v1::DTYPE_F64: return "f64";
    case v1::DTYPE_I32: return "i32";
    case v1::DTYPE_I64: return "i64";
    default: return nullptr;
  }
}

}  // namespace

const char* ComparisonKernelSource() { return kSource; }

struct DeviceComparator::Kernels {
  // Indexed by DType.
  CUfunction compare[v1::DType_ARRAYSIZE] = {};
  CUfunction find_worst[v1::DType_ARRAYSIZE] = {};
};

std::string DeviceComparison::Describe() const {
  std::string text = absl::StrFormat(
      "%d of %d elements differ (allowed %d); first at [%d]: got %.9g, expected %.9g",
      mismatches, count, allowed, first, first_actual, first_expected);
  if (worst >= 0) absl::StrAppendFormat(&text, "; worst |error| %.3g at [%d]", worst_error, worst);
  return text;
}

DeviceComparator::DeviceComparator(const CudaDriver* driver, CUstream stream)
    : driver_(driver), stream_(stream), kernels_(std::make_unique<Kernels>()) {}

DeviceComparator::~DeviceComparator() {
  if (summary_ != 0) driver_->MemFree(summary_);
  if (module_ != nullptr) driver_->ModuleUnload(module_);
}

absl::StatusOr<std::unique_ptr<DeviceComparator>> DeviceComparator::Create(
    const CudaDriver* driver, CUdevice device, CUstream stream) {
  int major = 0, minor = 0, sms = 0;
  RETURN_IF_ERROR(driver->Check(
      driver->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
      "cuDeviceGetAttribute"));
  RETURN_IF_ERROR(driver->Check(
      driver->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
      "cuDeviceGetAttribute"));
  RETURN_IF_ERROR(driver->Check(
      driver->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
      "cuDeviceGetAttribute"));
  ASSIGN_OR_RETURN(const Nvrtc* nvrtc, LoadNvrtc());
  ASSIGN_OR_RETURN(NvrtcOutput output,
                   RunNvrtc(*nvrtc, ComparisonKernelSource(), "tunefleet_compare.cu",
                            {absl::StrCat("--gpu-architecture=sm_", major, minor)}));
  if (!output.ok) {
    return absl::InternalError(absl::StrCat("the comparison kernels do not compile: ", output.log));
  }
  std::unique_ptr<DeviceComparator> comparator(new DeviceComparator(driver, stream));
  comparator->grid_ = std::max(1, sms) * kBlocksPerSm;
  RETURN_IF_ERROR(driver->Check(driver->ModuleLoadData(&comparator->module_, output.cubin.data()),
                                "cuModuleLoadData(comparison kernels)"));
  for (int d = 0; d < v1::DType_ARRAYSIZE; ++d) {
    const char* suffix = Suffix(static_cast<v1::DType>(d));
    if (suffix == nullptr) continue;
    for (auto [prefix, table] : {std::pair{"compare_", comparator->kernels_->compare},
                                 std::pair{"find_worst_", comparator->kernels_->find_worst}}) {
      const std::string name = absl::StrCat(prefix, suffix);
      RETURN_IF_ERROR(driver->Check(
          driver->ModuleGetFunction(&table[d], comparator->module_, name.c_str()),
          absl::StrCat("cuModuleGetFunction(", name, ")")));
    }
  }
  RETURN_IF_ERROR(driver->Check(driver->MemAlloc(&comparator->summary_, sizeof(Summary)),
                                "cuMemAlloc(comparison summary)"));
  return comparator;
}

CUresult DeviceComparator::ReadElement(v1::DType dtype, CUdeviceptr base, int64_t index,
                                       double* value) {
  uint8_t element[8] = {};
  const size_t size = DTypeSize(dtype);
  CUresult result = driver_->MemcpyDtoH(element, base + static_cast<uint64_t>(index) * size, size);
  *value = LoadAsDouble(dtype, element, 0);
  return result;
}

absl::StatusOr<DeviceComparison> DeviceComparator::Compare(v1::DType dtype, CUdeviceptr actual,
                                                           CUdeviceptr expected, int64_t count,
                                                           const v1::Tolerance& tolerance,
                                                           CUresult* error) {
  *error = CUDA_SUCCESS;
  if (Suffix(dtype) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("no comparison for ", v1::DType_Name(dtype)));
  }
  auto fail = [&](CUresult result, const char* what) {
    *error = result;
    return driver_->Check(result, what);
  };
  DeviceComparison comparison;
  comparison.count = count;
  comparison.allowed =
      static_cast<int64_t>(tolerance.max_mismatch_ratio() * static_cast<double>(count));
  if (count == 0) return comparison;

  // mismatches and worst_bits 0, first and worst_index "none".
  CUresult result = driver_->MemsetD8Async(summary_, 0, sizeof(Summary), stream_);
  if (result == CUDA_SUCCESS) {
    result = driver_->MemsetD8Async(summary_ + offsetof(Summary, first), 0xFF, 8, stream_);
  }
  if (result == CUDA_SUCCESS) {
    result = driver_->MemsetD8Async(summary_ + offsetof(Summary, worst_index), 0xFF, 8, stream_);
  }
  if (result != CUDA_SUCCESS) return fail(result, "cuMemsetD8Async(comparison summary)");

  long long n = count;
  double atol = tolerance.atol();
  double rtol = tolerance.rtol();
  void* params[] = {&actual, &expected, &n, &atol, &rtol, &summary_};
  auto launch = [&](CUfunction function) {
    const int64_t needed = (count + kThreads - 1) / kThreads;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(grid_, needed));
    return driver_->LaunchKernel(function, blocks, 1, 1, kThreads, 1, 1, 0, stream_, params,
                                 nullptr);
  };
  Summary summary;
  result = launch(kernels_->compare[dtype]);
  if (result == CUDA_SUCCESS) result = driver_->StreamSynchronize(stream_);
  if (result == CUDA_SUCCESS) result = driver_->MemcpyDtoH(&summary, summary_, sizeof(summary));
  if (result != CUDA_SUCCESS) return fail(result, "comparing on the device");
  comparison.mismatches = static_cast<int64_t>(summary.mismatches);
  if (comparison.ok()) return comparison;

  comparison.first = static_cast<int64_t>(summary.first);
  if (summary.worst_bits != 0) {
    result = launch(kernels_->find_worst[dtype]);
    if (result == CUDA_SUCCESS) result = driver_->StreamSynchronize(stream_);
    if (result == CUDA_SUCCESS) result = driver_->MemcpyDtoH(&summary, summary_, sizeof(summary));
    if (result != CUDA_SUCCESS) return fail(result, "locating the worst error on the device");
    if (summary.worst_index != kNone) {
      comparison.worst = static_cast<int64_t>(summary.worst_index);
      std::memcpy(&comparison.worst_error, &summary.worst_bits, sizeof(double));
    }
  }
  result = ReadElement(dtype, actual, comparison.first, &comparison.first_actual);
  if (result == CUDA_SUCCESS) {
    result = ReadElement(dtype, expected, comparison.first, &comparison.first_expected);
  }
  if (result != CUDA_SUCCESS) return fail(result, "reading the first mismatch");
  return comparison;
}

}  // namespace tunefleet::worker::cuda

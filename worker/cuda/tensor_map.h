// Tensor map arguments (kernel_spec.proto, TensorMapArg): the 128-byte
// CUtensorMap a kernel's bulk tensor copies (TMA) read, encoded for each
// config over one of the job's tensors.
//
// PlanTensorMap checks a map against the rules of cuTensorMapEncodeTiled
// and lays it out as the driver takes it (innermost dim first), without a
// GPU; EncodeTensorMap asks the driver. The runner gives a map the dims its
// tensor was allocated with, so a copy through it reads nothing outside that
// tensor.
//
// Thread-safety: the functions are thread-safe.
#ifndef TUNEFLEET_WORKER_CUDA_TENSOR_MAP_H_
#define TUNEFLEET_WORKER_CUDA_TENSOR_MAP_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tunefleet/v1/kernel_spec.pb.h"
#include "worker/cuda/cuda_driver.h"

namespace tunefleet::worker::cuda {

// cuTensorMapEncodeTiled's arguments, innermost dim first.
struct TensorMapLayout {
  CUtensorMapDataType dtype = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  cuuint32_t rank = 0;
  std::array<cuuint64_t, 5> dims{};
  std::array<cuuint64_t, 4> strides{};  // bytes, of dims 1 .. rank - 1
  std::array<cuuint32_t, 5> box{};
  std::array<cuuint32_t, 5> element_strides{};
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
};

// The layout of a map over a row-major tensor of `dtype` with `dims`, in
// boxes of `box` (both outermost first), swizzled in spans of
// `swizzle_bytes` (0, 32, 64 or 128). InvalidArgument naming the rule
// broken: 1 to 5 dims, each at most 2^32 elements; a box of 1 to 256
// elements per dim whose innermost row is a multiple of 16 bytes and, when
// swizzled, at most the span; row strides multiples of 16 bytes under 2^40.
absl::StatusOr<TensorMapLayout> PlanTensorMap(v1::DType dtype, const std::vector<int64_t>& dims,
                                              const std::vector<int64_t>& box,
                                              int64_t swizzle_bytes);

// Encodes `layout` over the tensor at `address` (16-byte aligned) into
// `*map`; out-of-bounds elements of a box read as zeros. InvalidArgument
// with the driver's error where it refuses.
absl::Status EncodeTensorMap(const CudaDriver& driver, const TensorMapLayout& layout,
                             CUdeviceptr address, CUtensorMap* map);

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_TENSOR_MAP_H_

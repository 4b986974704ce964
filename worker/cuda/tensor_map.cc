#include "worker/cuda/tensor_map.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "worker/host_tensors.h"

namespace tunefleet::worker::cuda {
namespace {

constexpr int kMaxRank = 5;
constexpr int64_t kMaxBox = 256;
constexpr int64_t kMaxDim = int64_t{1} << 32;
constexpr int64_t kMaxStride = int64_t{1} << 40;

std::optional<CUtensorMapDataType> MapDataType(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_F16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case v1::DTYPE_BF16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case v1::DTYPE_F32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case v1::DTYPE_F64:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case v1::DTYPE_I32:
      return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case v1::DTYPE_I64:
      return CU_TENSOR_MAP_DATA_TYPE_INT64;
    default:
      return std::nullopt;
  }
}

std::optional<CUtensorMapSwizzle> MapSwizzle(int64_t bytes) {
  switch (bytes) {
    case 0:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
    case 32:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
      return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
      return std::nullopt;
  }
}

}  // namespace

absl::StatusOr<TensorMapLayout> PlanTensorMap(v1::DType dtype, const std::vector<int64_t>& dims,
                                              const std::vector<int64_t>& box,
                                              int64_t swizzle_bytes) {
  auto bad = [](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("tensor map: ", parts...));
  };
  TensorMapLayout layout;
  std::optional<CUtensorMapDataType> type = MapDataType(dtype);
  if (!type.has_value()) return bad("no tensor map element type for ", v1::DType_Name(dtype));
  layout.dtype = *type;
  std::optional<CUtensorMapSwizzle> swizzle = MapSwizzle(swizzle_bytes);
  if (!swizzle.has_value()) {
    return bad("swizzle_bytes ", swizzle_bytes, " is none of 0, 32, 64 and 128");
  }
  layout.swizzle = *swizzle;
  const int rank = static_cast<int>(dims.size());
  if (rank < 1 || rank > kMaxRank) return bad(rank, " dims; a map has 1 to ", kMaxRank);
  if (box.size() != dims.size()) {
    return bad(box.size(), " box dims for a tensor of ", rank);
  }
  layout.rank = static_cast<cuuint32_t>(rank);
  const int64_t element_bytes = static_cast<int64_t>(DTypeSize(dtype));
  int64_t stride = element_bytes;
  for (int i = 0; i < rank; ++i) {  // i counts from the innermost dim
    const int64_t dim = dims[rank - 1 - i];
    const int64_t edge = box[rank - 1 - i];
    if (dim < 1 || dim > kMaxDim) return bad("dim ", dim, " is not in [1, 2^32]");
    if (edge < 1 || edge > kMaxBox) return bad("box dim ", edge, " is not in [1, ", kMaxBox, "]");
    if (i > 0) {
      if (stride % 16 != 0 || stride >= kMaxStride) {
        return bad("a row stride of ", stride,
                   " bytes is not a multiple of 16 under 2^40 (the innermost dim times the "
                   "element size must be a multiple of 16 bytes)");
      }
      layout.strides[i - 1] = static_cast<cuuint64_t>(stride);
    }
    if (dim > kMaxStride / stride) return bad("the tensor is over 2^40 bytes");
    stride *= dim;
    layout.dims[i] = static_cast<cuuint64_t>(dim);
    layout.box[i] = static_cast<cuuint32_t>(edge);
    layout.element_strides[i] = 1;
  }
  const int64_t row_bytes = box.back() * element_bytes;
  if (row_bytes % 16 != 0) {
    return bad("the box's innermost row is ", row_bytes, " bytes, not a multiple of 16");
  }
  if (swizzle_bytes > 0 && row_bytes > swizzle_bytes) {
    return bad("the box's innermost row is ", row_bytes, " bytes, over the ", swizzle_bytes,
               "-byte swizzle span");
  }
  return layout;
}

absl::Status EncodeTensorMap(const CudaDriver& driver, const TensorMapLayout& layout,
                             CUdeviceptr address, CUtensorMap* map) {
  if (address % 16 != 0) {
    return absl::InvalidArgumentError("tensor map: the tensor is not 16-byte aligned");
  }
  const CUresult result = driver.TensorMapEncodeTiled(
      map, layout.dtype, layout.rank, reinterpret_cast<void*>(address), layout.dims.data(),
      layout.strides.data(), layout.box.data(), layout.element_strides.data(),
      CU_TENSOR_MAP_INTERLEAVE_NONE, layout.swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuTensorMapEncodeTiled: ", driver.Describe(result)));
  }
  return absl::OkStatus();
}

}  // namespace tunefleet::worker::cuda

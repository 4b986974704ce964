#include "worker/cuda/cublas_gemm.h"

#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_text.h"
#include "common/status_macros.h"

namespace tunefleet::worker::cuda {
namespace {

std::string Squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != ' ' && c != '\t') out += c;
  }
  return out;
}

// The argument named `name`, else the `nth` tensor with `role`.
int FindTensor(const v1::KernelSpec& spec, const std::string& name, v1::Role role,
               int nth) {
  for (int i = 0; i < spec.args_size(); ++i) {
    if (spec.args(i).name() == name && spec.args(i).has_tensor()) return i;
  }
  int seen = 0;
  for (int i = 0; i < spec.args_size(); ++i) {
    if (spec.args(i).has_tensor() && spec.args(i).tensor().role() == role &&
        seen++ == nth) {
      return i;
    }
  }
  return -1;
}

// Whether the tensor's shape is [first, second] (false) or [second, first]
// (true); InvalidArgument for anything else.
absl::StatusOr<bool> Transposed(const v1::Argument& arg, const std::string& first,
                                const std::string& second) {
  const auto& shape = arg.tensor().shape();
  if (shape.size() == 2 && Squeeze(shape[0]) == first && Squeeze(shape[1]) == second) {
    return false;
  }
  if (shape.size() == 2 && Squeeze(shape[0]) == second && Squeeze(shape[1]) == first) {
    return true;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "cublas_gemm: tensor ", arg.name(), " must have shape [", first, ", ", second,
      "] or [", second, ", ", first, "], not [", absl::StrJoin(shape, ", "), "]"));
}

absl::StatusOr<cudaDataType> CudaType(const v1::Argument& arg) {
  switch (arg.tensor().dtype()) {
    case v1::DTYPE_F16: return CUDA_R_16F;
    case v1::DTYPE_BF16: return CUDA_R_16BF;
    case v1::DTYPE_F32: return CUDA_R_32F;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cublas_gemm: tensor ", arg.name(), " must be F16, BF16 or F32"));
  }
}

}  // namespace

absl::StatusOr<GemmPlan> PlanCublasGemm(const v1::KernelSpec& spec,
                                        const v1::Shape& shape) {
  GemmPlan plan;
  plan.a_arg = FindTensor(spec, "A", v1::ROLE_IN, 0);
  plan.b_arg = FindTensor(spec, "B", v1::ROLE_IN, 1);
  plan.c_arg = FindTensor(spec, "C", v1::ROLE_OUT, 0);
  if (plan.a_arg < 0 || plan.b_arg < 0 || plan.c_arg < 0) {
    return absl::InvalidArgumentError("cublas_gemm: needs tensors A, B and C");
  }
  const v1::Argument& a = spec.args(plan.a_arg);
  const v1::Argument& b = spec.args(plan.b_arg);
  const v1::Argument& c = spec.args(plan.c_arg);
  ASSIGN_OR_RETURN(plan.a_transposed, Transposed(a, "M", "K"));
  ASSIGN_OR_RETURN(plan.b_transposed, Transposed(b, "K", "N"));
  ASSIGN_OR_RETURN(bool c_transposed, Transposed(c, "M", "N"));
  if (c_transposed) {
    return absl::InvalidArgumentError("cublas_gemm: C must be [M, N]");
  }
  ASSIGN_OR_RETURN(plan.a_type, CudaType(a));
  ASSIGN_OR_RETURN(plan.b_type, CudaType(b));
  ASSIGN_OR_RETURN(plan.c_type, CudaType(c));
  std::optional<int64_t> m = FindDim(shape, "M");
  std::optional<int64_t> n = FindDim(shape, "N");
  std::optional<int64_t> k = FindDim(shape, "K");
  if (!m || !n || !k) return absl::InvalidArgumentError("cublas_gemm: needs dims M, N, K");
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (*m > kMax || *n > kMax || *k > kMax) {
    return absl::InvalidArgumentError("cublas_gemm: a dim exceeds INT_MAX");
  }
  plan.m = *m;
  plan.n = *n;
  plan.k = *k;
  return plan;
}

absl::StatusOr<std::unique_ptr<CublasGemm>> CublasGemm::Create(CUstream stream) {
  ASSIGN_OR_RETURN(const Cublas* cublas, LoadCublas());
  cublasHandle_t handle = nullptr;
  cublasStatus_t status = cublas->Create(&handle);
  if (status != CUBLAS_STATUS_SUCCESS) {
    return absl::InternalError(absl::StrCat("cublasCreate: status ", static_cast<int>(status)));
  }
  status = cublas->SetStream(handle, reinterpret_cast<cudaStream_t>(stream));
  if (status != CUBLAS_STATUS_SUCCESS) {
    cublas->Destroy(handle);
    return absl::InternalError(absl::StrCat("cublasSetStream: status ", static_cast<int>(status)));
  }
  return std::unique_ptr<CublasGemm>(new CublasGemm(cublas, handle));
}

CublasGemm::~CublasGemm() {
  if (!abandoned_) cublas_->Destroy(handle_);
}

// Row-major C (M x N) = A B is column-major C' (N x M) = B' A', where X' is
// the column-major view of row-major X. B stored K x N views as B^T (N x K,
// ld N): no transpose; B stored N x K views as B (K x N, ld K): transpose.
// Likewise A stored M x K views as A^T (K x M, ld K), A stored K x M as A.
cublasStatus_t CublasGemm::Run(const GemmPlan& plan, CUdeviceptr a, CUdeviceptr b,
                               CUdeviceptr c) const {
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const int m = static_cast<int>(plan.m);
  const int n = static_cast<int>(plan.n);
  const int k = static_cast<int>(plan.k);
  return cublas_->GemmEx(
      handle_, plan.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
      plan.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
      reinterpret_cast<const void*>(b), plan.b_type, plan.b_transposed ? k : n,
      reinterpret_cast<const void*>(a), plan.a_type, plan.a_transposed ? m : k, &beta,
      reinterpret_cast<void*>(c), plan.c_type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

}  // namespace tunefleet::worker::cuda

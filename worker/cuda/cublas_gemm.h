// The "cublas_gemm" reference: C = A * B through cublasGemmEx (fp32 compute,
// default algorithm, tensor cores allowed), all matrices row-major.
//
// The operands are found in the spec's arguments: tensors named "A" and "B"
// (else the first two ROLE_IN tensors) and "C" (else the first ROLE_OUT one).
// Their shape expressions give the layout, over the problem dims M, N, K:
//   A: ["M", "K"] or ["K", "M"] (stored transposed)
//   B: ["K", "N"] or ["N", "K"] (stored transposed, the "weight" layout)
//   C: ["M", "N"]
// dtypes: F16, BF16 or F32 for each (cuBLAS decides which mixes it accepts).
//
// Thread-safety: a CublasGemm belongs to one thread.
#ifndef TUNEFLEET_WORKER_CUDA_CUBLAS_GEMM_H_
#define TUNEFLEET_WORKER_CUDA_CUBLAS_GEMM_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "tunefleet/v1/kernel_spec.pb.h"
#include "tunefleet/v1/types.pb.h"
#include "worker/cuda/cuda_driver.h"

namespace tunefleet::worker::cuda {

inline constexpr char kCublasGemmLibrary[] = "cublas_gemm";

struct GemmPlan {
  int a_arg = -1;  // argument indices
  int b_arg = -1;
  int c_arg = -1;
  bool a_transposed = false;  // A stored K x M
  bool b_transposed = false;  // B stored N x K
  int64_t m = 0, n = 0, k = 0;
  cudaDataType a_type = CUDA_R_16F, b_type = CUDA_R_16F, c_type = CUDA_R_16F;
};

// InvalidArgument naming what does not fit the rules above.
absl::StatusOr<GemmPlan> PlanCublasGemm(const v1::KernelSpec& spec,
                                        const v1::Shape& shape);

class CublasGemm {
 public:
  // Loads cuBLAS and creates a handle bound to `stream` (in the current
  // context). Unavailable when cuBLAS cannot be loaded.
  static absl::StatusOr<std::unique_ptr<CublasGemm>> Create(CUstream stream);
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  // Enqueues C = A * B on the stream.
  cublasStatus_t Run(const GemmPlan& plan, CUdeviceptr a, CUdeviceptr b,
                     CUdeviceptr c) const;
  // Call when the context is poisoned: the destructor then frees nothing.
  void Abandon() { abandoned_ = true; }

 private:
  CublasGemm(const Cublas* cublas, cublasHandle_t handle)
      : cublas_(cublas), handle_(handle) {}
  const Cublas* cublas_;
  cublasHandle_t handle_;
  bool abandoned_ = false;
};

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_CUBLAS_GEMM_H_

// Plain triple loop in double precision: the reference for matmul.
#include <cstdint>

extern "C" void matmul_reference(void** args) {
  const float* A = *static_cast<const float**>(args[0]);
  const float* B = *static_cast<const float**>(args[1]);
  float* C = *static_cast<float**>(args[2]);
  const int64_t M = *static_cast<const int64_t*>(args[3]);
  const int64_t N = *static_cast<const int64_t*>(args[4]);
  const int64_t K = *static_cast<const int64_t*>(args[5]);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        sum += static_cast<double>(A[i * K + k]) * B[k * N + j];
      }
      C[i * N + j] = static_cast<float>(sum);
    }
  }
}

// fp32 C = A * B, cache-blocked. Tunables arrive as -D macros:
// BLOCK_M, BLOCK_N, BLOCK_K (block sizes), UNROLL (rows of A per micro-step),
// LOOP_ORDER (0: i-k-j, 1: i-j-k). Arguments follow the cuLaunchKernel
// convention: args[i] points to the i-th argument's value.
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

inline int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }

// C[i0:i1, j0:j1] += A[i0:i1, k0:k1] * B[k0:k1, j0:j1], rows of B streamed.
void BlockIkj(const float* __restrict A, const float* __restrict B,
              float* __restrict C, int64_t N, int64_t K, int64_t i0,
              int64_t i1, int64_t j0, int64_t j1, int64_t k0, int64_t k1) {
  int64_t i = i0;
  for (; i + UNROLL <= i1; i += UNROLL) {
    for (int64_t k = k0; k < k1; ++k) {
      const float* b = B + k * N;
#pragma GCC unroll 4
      for (int u = 0; u < UNROLL; ++u) {
        const float a = A[(i + u) * K + k];
        float* c = C + (i + u) * N;
#pragma GCC ivdep
        for (int64_t j = j0; j < j1; ++j) c[j] += a * b[j];
      }
    }
  }
  for (; i < i1; ++i) {
    for (int64_t k = k0; k < k1; ++k) {
      const float a = A[i * K + k];
      for (int64_t j = j0; j < j1; ++j) C[i * N + j] += a * B[k * N + j];
    }
  }
}

// The same block as dot products down columns of B (strided loads).
void BlockIjk(const float* __restrict A, const float* __restrict B,
              float* __restrict C, int64_t N, int64_t K, int64_t i0,
              int64_t i1, int64_t j0, int64_t j1, int64_t k0, int64_t k1) {
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) {
      float sum = 0;
      for (int64_t k = k0; k < k1; ++k) sum += A[i * K + k] * B[k * N + j];
      C[i * N + j] += sum;
    }
  }
}

}  // namespace

extern "C" void matmul(void** args) {
  const float* A = *static_cast<const float**>(args[0]);
  const float* B = *static_cast<const float**>(args[1]);
  float* C = *static_cast<float**>(args[2]);
  const int64_t M = *static_cast<const int64_t*>(args[3]);
  const int64_t N = *static_cast<const int64_t*>(args[4]);
  const int64_t K = *static_cast<const int64_t*>(args[5]);
  std::memset(C, 0, sizeof(float) * M * N);
  for (int64_t i0 = 0; i0 < M; i0 += BLOCK_M) {
    for (int64_t k0 = 0; k0 < K; k0 += BLOCK_K) {
      for (int64_t j0 = 0; j0 < N; j0 += BLOCK_N) {
        const int64_t i1 = Min(i0 + BLOCK_M, M), j1 = Min(j0 + BLOCK_N, N);
        const int64_t k1 = Min(k0 + BLOCK_K, K);
        if (LOOP_ORDER == 0) {
          BlockIkj(A, B, C, N, K, i0, i1, j0, j1, k0, k1);
        } else {
          BlockIjk(A, B, C, N, K, i0, i1, j0, j1, k0, k1);
        }
      }
    }
  }
}

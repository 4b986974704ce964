// fp32 B = A^T, out of place. Tunables arrive as -D macros: TILE_R, TILE_C
// (tile of A), MICRO (register block side; 1 = plain loop), ORDER (0: tiles
// along rows of A, 1: along columns). Arguments follow the cuLaunchKernel
// convention: args[i] points to the i-th argument's value.
#include <cstdint>

namespace {

inline int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }

// Transposes one MICRO x MICRO block through registers: row loads of A,
// column stores into B.
inline void MicroBlock(const float* __restrict a, int64_t lda, float* __restrict b,
                       int64_t ldb) {
  float r[MICRO][MICRO];
#pragma GCC unroll 8
  for (int u = 0; u < MICRO; ++u) {
#pragma GCC unroll 8
    for (int v = 0; v < MICRO; ++v) r[u][v] = a[u * lda + v];
  }
#pragma GCC unroll 8
  for (int v = 0; v < MICRO; ++v) {
#pragma GCC unroll 8
    for (int u = 0; u < MICRO; ++u) b[v * ldb + u] = r[u][v];
  }
}

void Tile(const float* __restrict A, float* __restrict B, int64_t M, int64_t N,
          int64_t i0, int64_t j0) {
  const int64_t i1 = Min(i0 + TILE_R, M), j1 = Min(j0 + TILE_C, N);
  if (MICRO > 1 && i1 - i0 == TILE_R && j1 - j0 == TILE_C) {
    for (int64_t i = i0; i < i1; i += MICRO) {
      for (int64_t j = j0; j < j1; j += MICRO) {
        MicroBlock(A + i * N + j, N, B + j * M + i, M);
      }
    }
    return;
  }
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) B[j * M + i] = A[i * N + j];
  }
}

}  // namespace

extern "C" void transpose(void** args) {
  const float* A = *static_cast<const float**>(args[0]);
  float* B = *static_cast<float**>(args[1]);
  const int64_t M = *static_cast<const int64_t*>(args[2]);
  const int64_t N = *static_cast<const int64_t*>(args[3]);
  if (ORDER == 0) {
    for (int64_t i0 = 0; i0 < M; i0 += TILE_R) {
      for (int64_t j0 = 0; j0 < N; j0 += TILE_C) Tile(A, B, M, N, i0, j0);
    }
  } else {
    for (int64_t j0 = 0; j0 < N; j0 += TILE_C) {
      for (int64_t i0 = 0; i0 < M; i0 += TILE_R) Tile(A, B, M, N, i0, j0);
    }
  }
}

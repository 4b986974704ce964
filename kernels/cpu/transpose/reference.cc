// Element by element: the reference for transpose.
#include <cstdint>

extern "C" void transpose_reference(void** args) {
  const float* A = *static_cast<const float**>(args[0]);
  float* B = *static_cast<float**>(args[1]);
  const int64_t M = *static_cast<const int64_t*>(args[2]);
  const int64_t N = *static_cast<const int64_t*>(args[3]);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) B[j * M + i] = A[i * N + j];
  }
}

// Failure injection for the CUDA backend: Y = 2 * X, except where the FAULT
// param plants one of the failures the worker must classify (see
// kernel.textproto for the expected outcome of each).
#include <cuda_fp16.h>

#ifndef FAULT
#error "compile with -DFAULT=..."
#endif

extern "C" __device__ void __assertfail(const char* message, const char* file,
                                        unsigned int line, const char* function,
                                        unsigned long char_size);

extern "C" __global__ void faulty(const float* X, float* Y, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
#if FAULT == 7
  // Static shared memory over the 48 KiB limit: ptxas refuses it.
  __shared__ float big[20000];
  big[threadIdx.x] = X[0];
  __syncthreads();
  if (i < N) Y[i] = big[(threadIdx.x + 1) % blockDim.x];
  return;
#endif
  if (i >= N) return;
  float v = 2.0f * X[i];
#if FAULT == 1
  // Out-of-bounds write, far past any allocation: CUDA_ERROR_ILLEGAL_ADDRESS.
  if (i == 0) Y[static_cast<unsigned long long>(1) << 40] = v;
#elif FAULT == 2
  if (i == 0) __trap();  // CUDA_ERROR_LAUNCH_FAILED
#elif FAULT == 3
  if (i == 0) __assertfail("false", __FILE__, __LINE__, "faulty", 1);  // CUDA_ERROR_ASSERT
#elif FAULT == 4
  // A 4-byte load from a 2-byte aligned address: CUDA_ERROR_MISALIGNED_ADDRESS.
  if (i == 0) v = *reinterpret_cast<const float*>(reinterpret_cast<const char*>(X) + 2);
#elif FAULT == 5
  // Never ends: X[0] is in [-1, 1).
  while (*reinterpret_cast<const volatile float*>(X) < 1e30f) {
  }
#elif FAULT == 9
  if (i == N - 1) v += 1.0f;  // off by one at the last element: wrong result
#elif FAULT == 10
  this does not compile;
#elif FAULT == 11
  // Many live registers and no __launch_bounds__: 1024 threads do not fit.
  float r[96];
#pragma unroll
  for (int k = 0; k < 96; ++k) r[k] = X[(i + k * 37) % N];
#pragma unroll
  for (int it = 0; it < 8; ++it) {
#pragma unroll
    for (int k = 0; k < 96; ++k) r[k] = r[k] * r[(k + 1) % 96] + 0.5f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < 96; ++k) sum += r[k];
  v += sum * 0.0f;
#elif FAULT == 12
  // A pathological compile: 2^17 dependent statements, straight-line (tens of
  // seconds in NVRTC; the compile time limit abandons it).
#define TF_R0(x) x = x * x + 0.5f;
#define TF_R1(x) TF_R0(x) TF_R0(x)
#define TF_R2(x) TF_R1(x) TF_R1(x)
#define TF_R3(x) TF_R2(x) TF_R2(x)
#define TF_R4(x) TF_R3(x) TF_R3(x)
#define TF_R5(x) TF_R4(x) TF_R4(x)
#define TF_R6(x) TF_R5(x) TF_R5(x)
#define TF_R7(x) TF_R6(x) TF_R6(x)
#define TF_R8(x) TF_R7(x) TF_R7(x)
#define TF_R9(x) TF_R8(x) TF_R8(x)
#define TF_R10(x) TF_R9(x) TF_R9(x)
#define TF_R11(x) TF_R10(x) TF_R10(x)
#define TF_R12(x) TF_R11(x) TF_R11(x)
#define TF_R13(x) TF_R12(x) TF_R12(x)
#define TF_R14(x) TF_R13(x) TF_R13(x)
#define TF_R15(x) TF_R14(x) TF_R14(x)
#define TF_R16(x) TF_R15(x) TF_R15(x)
#define TF_R17(x) TF_R16(x) TF_R16(x)
  float acc = v;
  TF_R17(acc)
  v += acc * 0.0f;
#endif
  Y[i] = v;
}

// Reference row-wise softmax: one warp per row, grid-stride over rows, fp32
// accumulation with accurate expf, three passes over the row. Works for any
// launch whose block size is a multiple of 32.
#include <cuda_fp16.h>

__device__ __forceinline__ float kNegInf() { return __int_as_float(0xff800000); }

extern "C" __global__ void softmax_reference(const half* X, half* Y, int ROWS, int COLS) {
  const int lane = threadIdx.x % 32;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int warps = gridDim.x * blockDim.x / 32;
  for (int row = warp; row < ROWS; row += warps) {
    const half* x = X + static_cast<size_t>(row) * COLS;
    half* y = Y + static_cast<size_t>(row) * COLS;
    float max = kNegInf();
    for (int c = lane; c < COLS; c += 32) max = fmaxf(max, __half2float(x[c]));
    for (int o = 16; o > 0; o >>= 1) max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, o));
    float sum = 0.0f;
    for (int c = lane; c < COLS; c += 32) sum += expf(__half2float(x[c]) - max);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    for (int c = lane; c < COLS; c += 32) {
      y[c] = __float2half_rn(expf(__half2float(x[c]) - max) / sum);
    }
  }
}

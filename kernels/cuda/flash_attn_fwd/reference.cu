// Reference attention forward: one warp per query row, grid-stride over all
// BATCH * HEADS * SEQ rows, fp32 everything (accurate expf), two passes over
// the keys (online max/sum, then the weighted sum of V). Each lane owns 4 of
// the 128 head dims. Any launch whose block size is a multiple of 32 works.
#include <cuda_fp16.h>

extern "C" __global__ void flash_attn_reference(const half* Q, const half* K, const half* V,
                                                half* O, int BATCH, int HEADS, int SEQ,
                                                float scale) {
  const int lane = threadIdx.x % 32;
  const long long warps =
      static_cast<long long>(gridDim.x) * gridDim.y * gridDim.z * blockDim.x / 32;
  const long long block = blockIdx.x + static_cast<long long>(gridDim.x) *
                                           (blockIdx.y + static_cast<long long>(gridDim.y) * blockIdx.z);
  const long long rows = static_cast<long long>(BATCH) * HEADS * SEQ;
  for (long long row = block * (blockDim.x / 32) + threadIdx.x / 32; row < rows; row += warps) {
    const long long head = row / SEQ;
    const half* q = Q + row * 128 + lane * 4;
    const half* k = K + head * SEQ * 128 + lane * 4;
    const half* v = V + head * SEQ * 128 + lane * 4;
    float qd[4];
    for (int d = 0; d < 4; ++d) qd[d] = __half2float(q[d]);
    auto score = [&](int j) {
      float dot = 0.0f;
      for (int d = 0; d < 4; ++d) dot += qd[d] * __half2float(k[static_cast<long long>(j) * 128 + d]);
      for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      return dot * scale;
    };
    float max = __int_as_float(0xff800000);
    float sum = 0.0f;
    for (int j = 0; j < SEQ; ++j) {
      const float s = score(j);
      const float new_max = fmaxf(max, s);
      sum = sum * expf(max - new_max) + expf(s - new_max);
      max = new_max;
    }
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int j = 0; j < SEQ; ++j) {
      const float p = expf(score(j) - max) / sum;
      for (int d = 0; d < 4; ++d) acc[d] += p * __half2float(v[static_cast<long long>(j) * 128 + d]);
    }
    half* out = O + row * 128 + lane * 4;
    for (int d = 0; d < 4; ++d) out[d] = __float2half_rn(acc[d]);
  }
}

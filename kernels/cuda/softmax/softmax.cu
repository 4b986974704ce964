// Row-wise softmax of an fp16 ROWS x COLS matrix (fp32 math), memory-bound.
// Y[r, :] = exp(X[r, :] - max(X[r, :])) / sum(exp(X[r, :] - max)).
//
// Params (from -D): ROWS_PER_BLOCK rows per thread block, THREADS threads per
// block (THREADS / ROWS_PER_BLOCK threads share a row, a multiple of 32),
// VEC fp16 elements per load/store (1, 2, 4, 8 = 2..16 bytes).
// A row that fits in registers (COLS <= threads per row * VEC * kMaxChunks)
// is read once; a longer one is read twice (online max/sum, then the
// output), the second time mostly from L2.
// Requires COLS % VEC == 0 (a constraint of the spec).
#include <cuda_fp16.h>

__device__ __forceinline__ float kNegInf() { return __int_as_float(0xff800000); }

#ifndef THREADS
#error "compile with -DTHREADS=... -DROWS_PER_BLOCK=... -DVEC=..."
#endif

namespace {

constexpr int kRowThreads = THREADS / ROWS_PER_BLOCK;
constexpr int kRowWarps = kRowThreads / 32;
constexpr int kMaxChunks = 8;  // register-resident VEC-chunks per thread
static_assert(kRowThreads % 32 == 0, "threads per row must be whole warps");
static_assert(VEC == 1 || VEC == 2 || VEC == 4 || VEC == 8, "VEC is 1, 2, 4 or 8");

template <int N> struct Bits;
template <> struct Bits<1> { using Type = unsigned short; };
template <> struct Bits<2> { using Type = unsigned int; };
template <> struct Bits<4> { using Type = uint2; };
template <> struct Bits<8> { using Type = uint4; };
using Chunk = typename Bits<VEC>::Type;  // VEC halves as one load

__device__ __forceinline__ Chunk LoadRaw(const half* src) {
  return *reinterpret_cast<const Chunk*>(src);
}

__device__ __forceinline__ void Unpack(Chunk bits, float (&out)[VEC]) {
  union { Chunk bits; half h[VEC]; } u;
  u.bits = bits;
#pragma unroll
  for (int i = 0; i < VEC; ++i) out[i] = __half2float(u.h[i]);
}

__device__ __forceinline__ void Load(const half* src, float (&out)[VEC]) {
  Unpack(LoadRaw(src), out);
}

__device__ __forceinline__ void Store(half* dst, const float (&in)[VEC]) {
  union { Chunk bits; half h[VEC]; } u;
#pragma unroll
  for (int i = 0; i < VEC; ++i) u.h[i] = __float2half_rn(in[i]);
  *reinterpret_cast<Chunk*>(dst) = u.bits;
}

// Online (max, sum of exp(x - max)) pairs, merged.
struct MaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ MaxSum Merge(MaxSum a, MaxSum b) {
  const float max = fmaxf(a.max, b.max);
  if (max == kNegInf()) return {max, 0.0f};
  return {max, a.sum * __expf(a.max - max) + b.sum * __expf(b.max - max)};
}

// Reduces over the kRowThreads threads of one row (shared scratch per row).
__device__ __forceinline__ MaxSum RowReduce(MaxSum v, MaxSum* scratch, int row_lane) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    MaxSum other{__shfl_xor_sync(0xffffffffu, v.max, offset),
                 __shfl_xor_sync(0xffffffffu, v.sum, offset)};
    v = Merge(v, other);
  }
  if (kRowWarps == 1) return v;
  if ((row_lane & 31) == 0) scratch[row_lane / 32] = v;
  __syncthreads();
  MaxSum total = scratch[0];
#pragma unroll
  for (int w = 1; w < kRowWarps; ++w) total = Merge(total, scratch[w]);
  return total;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
    softmax(const half* __restrict__ X, half* __restrict__ Y, int ROWS, int COLS) {
  __shared__ MaxSum scratch[ROWS_PER_BLOCK][kRowWarps];
  const int row_in_block = threadIdx.x / kRowThreads;
  const int row_lane = threadIdx.x % kRowThreads;
  const int row = blockIdx.x * ROWS_PER_BLOCK + row_in_block;
  // Rows past the end still take part in the barriers of RowReduce.
  const bool active = row < ROWS;
  const half* x = X + static_cast<size_t>(active ? row : 0) * COLS;
  half* y = Y + static_cast<size_t>(row) * COLS;
  constexpr int kStride = kRowThreads * VEC;

  if (COLS <= kStride * kMaxChunks) {
    // The row stays in registers (as fp16): one read, one write.
    Chunk raw[kMaxChunks];
    MaxSum local{kNegInf(), 0.0f};
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) {
      const int col = c * kStride + row_lane * VEC;
      if (active && col < COLS) {
        raw[c] = LoadRaw(x + col);
        float v[VEC];
        Unpack(raw[c], v);
#pragma unroll
        for (int i = 0; i < VEC; ++i) local.max = fmaxf(local.max, v[i]);
      }
    }
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) {
      const int col = c * kStride + row_lane * VEC;
      if (active && col < COLS) {
        float v[VEC];
        Unpack(raw[c], v);
#pragma unroll
        for (int i = 0; i < VEC; ++i) local.sum += __expf(v[i] - local.max);
      }
    }
    const MaxSum total = RowReduce(local, scratch[row_in_block], row_lane);
    const float inv = 1.0f / total.sum;
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) {
      const int col = c * kStride + row_lane * VEC;
      if (active && col < COLS) {
        float v[VEC];
        Unpack(raw[c], v);
#pragma unroll
        for (int i = 0; i < VEC; ++i) v[i] = __expf(v[i] - total.max) * inv;
        Store(y + col, v);
      }
    }
    return;
  }

  // Long rows: online max/sum in one pass, then the outputs in a second.
  MaxSum local{kNegInf(), 0.0f};
  for (int col = row_lane * VEC; active && col < COLS; col += kStride) {
    float v[VEC];
    Load(x + col, v);
    float chunk_max = v[0];
#pragma unroll
    for (int i = 1; i < VEC; ++i) chunk_max = fmaxf(chunk_max, v[i]);
    MaxSum chunk{chunk_max, 0.0f};
#pragma unroll
    for (int i = 0; i < VEC; ++i) chunk.sum += __expf(v[i] - chunk_max);
    local = Merge(local, chunk);
  }
  const MaxSum total = RowReduce(local, scratch[row_in_block], row_lane);
  const float inv = 1.0f / total.sum;
  for (int col = row_lane * VEC; active && col < COLS; col += kStride) {
    float v[VEC];
    Load(x + col, v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] = __expf(v[i] - total.max) * inv;
    Store(y + col, v);
  }
}

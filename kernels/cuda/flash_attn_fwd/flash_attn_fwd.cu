// Attention forward pass, head dim 128, fp16 in/out, fp32 softmax
// statistics and accumulation, non-causal.
//   Q, K, V, O: [BATCH, HEADS, SEQ, 128] row-major; O = softmax(Q K^T * scale) V.
// One thread block per B_R query rows of one (batch, head); the K/V sequence
// is walked in tiles of B_C rows with an online softmax. Two paths, chosen
// by MMA:
//   MMA=0: FlashAttention-2 style on mma.sync m16n8k16 (sm_80+): N_WARPS
//          warps split the rows (16 or 32 each) and load their fragments
//          with ldmatrix from tiles cp.async filled;
//   MMA=1: Hopper (sm_90a), warp-specialised: a producer warpgroup's one
//          thread copies each query tile's Q, and its K/V tiles into a
//          STAGES-deep ring, by TMA (Q_map, K_map, V_map: boxes of 64
//          columns in the 128-byte swizzle; rows past SEQ arrive as zeros),
//          completing each stage's mbarrier by its bytes; B_R / 64 consumer
//          warpgroups (N_WARPS = B_R / 16 warps) each compute S = Q K^T for
//          their 64 rows with wgmma from shared memory, and O += P V with P
//          from registers (the accumulator layout of S is wgmma's A fragment
//          layout) and V read MN-major (transposed by the descriptor),
//          releasing the stage on its "empty" mbarrier once P V is done.
//
// Knobs (from -D), after the flash-attention autotuning seed (MMA=0):
//   B_R, B_C, N_WARPS       tile shape and warps
//   ASYNC_COPY              K/V/Q tiles via cp.async (else 16-byte loads
//                           through registers)
//   EAGER_LOAD              prefetch the next K/V tile into a second buffer
//                           while this one is used (needs ASYNC_COPY)
//   SWIZZLE                 XOR-swizzled shared rows (else rows padded by 16 B)
//   Q_TILES, K_TILES        k16 steps of Q / K fragments loaded per batch
//                           (0: all 8; Q_TILES 0 keeps Q in registers for
//                           the whole loop)
//   V_TILES                 k16 steps of V fragments per batch (0: all)
//   MMA_DB                  double-buffered fragment loads: the next batch
//                           is loaded before the current batch's mma
//   OPT_SOFTMAX             exp2 with the scale folded into one FMA (else
//                           scale pass + expf)
// and of the Hopper path (MMA=1; B_C 64 or 128, B_R 64 or 128):
//   STAGES                  K/V tiles in the TMA ring
//   OVERLAP                 the next tile's S is issued before this tile's
//                           P V, and its softmax runs while P V does
//   PINGPONG                the two consumer warpgroups (B_R=128) take turns
//                           issuing their wgmmas, so that one's softmax runs
//                           while the other's wgmmas have the tensor cores
//   PERSISTENT              a grid of one wave whose blocks walk the query
//                           tiles: the producer loads the next tile's Q (once
//                           every consumer's last S of this one is done) and
//                           K/V while the consumers finish P V and store O
#include <cuda_fp16.h>

#ifndef B_R
#error "compile with -DB_R=... and the other params"
#endif
#ifndef MMA
#define MMA 0
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef OVERLAP
#define OVERLAP 0
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif

// A CUtensorMap (cuda.h is not at hand under NVRTC): 128 opaque bytes,
// passed by value as a __grid_constant__ parameter, whose generic address
// the bulk tensor copies take.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// Every path takes the tensor maps (zeros unless MMA=1).
#define FLASH_PARAMS                                                                       \
  const half *__restrict__ Q, const half *__restrict__ K, const half *__restrict__ V,      \
      half *__restrict__ O, int BATCH, int HEADS, int SEQ, float scale,                    \
      const __grid_constant__ TensorMap Q_map, const __grid_constant__ TensorMap K_map,    \
      const __grid_constant__ TensorMap V_map

namespace {

using u32 = unsigned int;

constexpr int D = 128;

__device__ __forceinline__ u32 SharedAddress(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ u32 PackHalf2(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<u32*>(&h);
}

__device__ __forceinline__ float Exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float NegInf() { return __int_as_float(0xff800000); }

}  // namespace

#if MMA == 0

namespace {

constexpr int kThreads = N_WARPS * 32;
constexpr int kRowsPerWarp = B_R / N_WARPS;
constexpr int kMT = kRowsPerWarp / 16;  // m16 tiles per warp
constexpr int kNT = B_C / 8;            // n8 tiles of S per m16 tile
constexpr int kDT = D / 8;              // n8 tiles of O per m16 tile
constexpr int kKSteps = D / 16;         // k16 steps of Q K^T
constexpr int kPSteps = B_C / 16;       // k16 steps of P V
constexpr int kKSlice = K_TILES == 0 ? kKSteps : K_TILES;
constexpr int kKSlices = kKSteps / kKSlice;
constexpr int kQSlice = Q_TILES == 0 ? 1 : Q_TILES;  // per-batch Q steps when reloaded
constexpr int kVSlice = V_TILES == 0 ? kPSteps : (V_TILES < kPSteps ? V_TILES : kPSteps);
constexpr int kVSlices = kPSteps / kVSlice;
constexpr int kBufs = MMA_DB ? 2 : 1;
constexpr int kPitch = SWIZZLE ? D : D + 8;  // halves per shared row
constexpr int kKVBuffers = EAGER_LOAD ? 2 : 1;

static_assert(kRowsPerWarp == 16 || kRowsPerWarp == 32, "16 or 32 query rows per warp");
static_assert(B_C == 32 || B_C == 64, "B_C is 32 or 64");
static_assert(Q_TILES == 0 || Q_TILES == K_TILES, "Q and K load tiles match unless Q is 0");
static_assert(!EAGER_LOAD || ASYNC_COPY, "eager loads need async copies");
static_assert((B_C * 16) % kThreads == 0 && (B_R * 16) % kThreads == 0, "tile chunks per thread");

__device__ __forceinline__ int Offset(int row, int chunk) {
  return SWIZZLE ? row * D + (chunk ^ (row & 7)) * 8 : row * kPitch + chunk * 8;
}

__device__ __forceinline__ void LdMatrixX4(u32 (&r)[4], u32 address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void LdMatrixX4Trans(u32 (&r)[4], u32 address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void Mma(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Copies ROWS x 128 halves from `src` (row stride 128) into shared `dst`;
// rows >= rows_left are zero-filled.
template <int ROWS>
__device__ __forceinline__ void LoadTile(half* dst, const half* src, int rows_left, int tid) {
  constexpr int kPerThread = ROWS * 16 / kThreads;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int id = tid + i * kThreads;
    const int row = id / 16;
    const int chunk = id % 16;
    const bool valid = row < rows_left;
    const half* from = src + (valid ? row * D + chunk * 8 : 0);
    half* to = dst + Offset(row, chunk);
    if (ASYNC_COPY) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SharedAddress(to)),
                   "l"(from), "r"(valid ? 16 : 0));
    } else {
      uint4 v = valid ? *reinterpret_cast<const uint4*>(from) : make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(to) = v;
    }
  }
}

__device__ __forceinline__ void Commit() {
  if (ASYNC_COPY) asm volatile("cp.async.commit_group;\n" ::);
}
__device__ __forceinline__ void WaitAll() {
  if (ASYNC_COPY) asm volatile("cp.async.wait_group 0;\n" ::);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads) flash_attn_fwd(FLASH_PARAMS) {
  extern __shared__ __align__(128) unsigned char smem[];
  half* const q_tile = reinterpret_cast<half*>(smem);
  half* const k_tiles = q_tile + B_R * kPitch;
  half* const v_tiles = k_tiles + kKVBuffers * B_C * kPitch;

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int q0 = blockIdx.x * B_R;
  const size_t head = (static_cast<size_t>(blockIdx.z) * HEADS + blockIdx.y) * SEQ * D;
  const half* q_src = Q + head + static_cast<size_t>(q0) * D;
  const half* k_src = K + head;
  const half* v_src = V + head;
  const int kv_tiles = (SEQ + B_C - 1) / B_C;

  auto load_kv = [&](int tile, int buffer) {
    const int kv0 = tile * B_C;
    LoadTile<B_C>(k_tiles + buffer * B_C * kPitch, k_src + static_cast<size_t>(kv0) * D,
                  SEQ - kv0, tid);
    LoadTile<B_C>(v_tiles + buffer * B_C * kPitch, v_src + static_cast<size_t>(kv0) * D,
                  SEQ - kv0, tid);
  };

  LoadTile<B_R>(q_tile, q_src, SEQ - q0, tid);
  if (EAGER_LOAD) load_kv(0, 0);
  Commit();
  WaitAll();
  __syncthreads();

  // ldmatrix lane roles (see the m16n8k16 fragment layouts).
  const int a_row = warp * kRowsPerWarp + (lane & 15);  // + 16 * mt
  const int a_chunk = lane >> 4;                         // + 2 * step
  const int b_row = ((lane >> 4) << 3) + (lane & 7);     // + 16 * pair
  const int b_chunk = (lane >> 3) & 1;                   // + 2 * step
  const int v_row = (lane & 7) + ((lane >> 3) & 1) * 8;  // + 16 * step
  const int v_chunk = lane >> 4;                         // + 2 * pair

  // Q fragments kept in registers for the whole loop (Q_TILES == 0).
  u32 q_keep[Q_TILES == 0 ? kMT : 1][Q_TILES == 0 ? kKSteps : 1][4];
  if (Q_TILES == 0) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks)
        LdMatrixX4(q_keep[Q_TILES == 0 ? mt : 0][Q_TILES == 0 ? ks : 0],
                   SharedAddress(q_tile + Offset(a_row + 16 * mt, 2 * ks + a_chunk)));
  }

  const float log2e = 1.4426950408889634f;
  float o[kMT][kDT][4];
  float row_max[kMT][2];
  float row_sum[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
      for (int r = 0; r < 4; ++r) o[mt][dt][r] = 0.0f;
    row_max[mt][0] = row_max[mt][1] = NegInf();
    row_sum[mt][0] = row_sum[mt][1] = 0.0f;
  }

  for (int tile = 0; tile < kv_tiles; ++tile) {
    const int buffer = EAGER_LOAD ? (tile & 1) : 0;
    if (EAGER_LOAD) {
      if (tile > 0) {
        WaitAll();
        __syncthreads();  // tile's K/V landed; everyone is done with tile - 1
      }
      if (tile + 1 < kv_tiles) load_kv(tile + 1, buffer ^ 1);
      Commit();
    } else {
      if (tile > 0) __syncthreads();  // everyone is done with the previous tile
      load_kv(tile, 0);
      Commit();
      WaitAll();
      __syncthreads();
    }
    const half* k_tile = k_tiles + buffer * B_C * kPitch;
    const half* v_tile = v_tiles + buffer * B_C * kPitch;

    // ---- S = Q K^T, K fragments (and Q when reloaded) in slices of kKSlice steps.
    float s[kMT][kNT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r) s[mt][nt][r] = 0.0f;

    u32 kf[kBufs][kKSlice][kNT][2];
    u32 qf[kBufs][kMT][Q_TILES == 0 ? 1 : kQSlice][4];
    auto load_k_slice = [&](int buf, int slice) {
#pragma unroll
      for (int i = 0; i < kKSlice; ++i) {
        const int ks = slice * kKSlice + i;
#pragma unroll
        for (int pair = 0; pair < kNT / 2; ++pair) {
          u32 r[4];
          LdMatrixX4(r, SharedAddress(k_tile + Offset(b_row + 16 * pair, 2 * ks + b_chunk)));
          kf[buf][i][2 * pair][0] = r[0];
          kf[buf][i][2 * pair][1] = r[1];
          kf[buf][i][2 * pair + 1][0] = r[2];
          kf[buf][i][2 * pair + 1][1] = r[3];
        }
        if (Q_TILES != 0) {
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt)
            LdMatrixX4(qf[buf][mt][Q_TILES == 0 ? 0 : i],
                       SharedAddress(q_tile + Offset(a_row + 16 * mt, 2 * ks + a_chunk)));
        }
      }
    };
    load_k_slice(0, 0);
#pragma unroll
    for (int slice = 0; slice < kKSlices; ++slice) {
      const int cur = MMA_DB ? (slice & 1) : 0;
      if (MMA_DB && slice + 1 < kKSlices) load_k_slice(cur ^ 1, slice + 1);
#pragma unroll
      for (int i = 0; i < kKSlice; ++i)
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt)
            Mma(s[mt][nt],
                Q_TILES == 0 ? q_keep[Q_TILES == 0 ? mt : 0][Q_TILES == 0 ? slice * kKSlice + i : 0]
                             : qf[cur][mt][Q_TILES == 0 ? 0 : i],
                kf[cur][i][nt][0], kf[cur][i][nt][1]);
      if (!MMA_DB && slice + 1 < kKSlices) load_k_slice(0, slice + 1);
    }

    // ---- online softmax; mask key columns past SEQ in the last tile.
    const int kv0 = tile * B_C;
    u32 p[kMT][kPSteps][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int half_row = 0; half_row < 2; ++half_row) {
        float tile_max = NegInf();
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            float& x = s[mt][nt][2 * half_row + c];
            if (!OPT_SOFTMAX) x *= scale;
            if (kv0 + nt * 8 + 2 * (lane & 3) + c >= SEQ) x = NegInf();
            tile_max = fmaxf(tile_max, x);
          }
        }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
        const float old_max = row_max[mt][half_row];
        float new_max;
        float alpha;
        if (OPT_SOFTMAX) {
          // Statistics in log2 units of the scaled scores.
          new_max = fmaxf(old_max, tile_max * scale * log2e);
          alpha = Exp2(old_max - new_max);
        } else {
          new_max = fmaxf(old_max, tile_max);
          alpha = __expf(old_max - new_max);
        }
        row_max[mt][half_row] = new_max;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            float& x = s[mt][nt][2 * half_row + c];
            x = OPT_SOFTMAX ? Exp2(fmaf(x, scale * log2e, -new_max)) : __expf(x - new_max);
            sum += x;
          }
        }
        row_sum[mt][half_row] = row_sum[mt][half_row] * alpha + sum;
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt) {
          o[mt][dt][2 * half_row] *= alpha;
          o[mt][dt][2 * half_row + 1] *= alpha;
        }
      }
      // S accumulators (m16n8 C layout) become P's m16n8k16 A fragments.
#pragma unroll
      for (int kk = 0; kk < kPSteps; ++kk) {
        p[mt][kk][0] = PackHalf2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        p[mt][kk][1] = PackHalf2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        p[mt][kk][2] = PackHalf2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        p[mt][kk][3] = PackHalf2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
    }

    // ---- O += P V, V fragments (ldmatrix.trans) in slices of kVSlice steps.
    u32 vf[kBufs][kVSlice][kDT][2];
    auto load_v_slice = [&](int buf, int slice) {
#pragma unroll
      for (int i = 0; i < kVSlice; ++i) {
        const int kk = slice * kVSlice + i;
#pragma unroll
        for (int pair = 0; pair < kDT / 2; ++pair) {
          u32 r[4];
          LdMatrixX4Trans(r, SharedAddress(v_tile + Offset(16 * kk + v_row, 2 * pair + v_chunk)));
          vf[buf][i][2 * pair][0] = r[0];
          vf[buf][i][2 * pair][1] = r[1];
          vf[buf][i][2 * pair + 1][0] = r[2];
          vf[buf][i][2 * pair + 1][1] = r[3];
        }
      }
    };
    load_v_slice(0, 0);
#pragma unroll
    for (int slice = 0; slice < kVSlices; ++slice) {
      const int cur = MMA_DB ? (slice & 1) : 0;
      if (MMA_DB && slice + 1 < kVSlices) load_v_slice(cur ^ 1, slice + 1);
#pragma unroll
      for (int i = 0; i < kVSlice; ++i)
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int dt = 0; dt < kDT; ++dt)
            Mma(o[mt][dt], p[mt][slice * kVSlice + i], vf[cur][i][dt][0], vf[cur][i][dt][1]);
      if (!MMA_DB && slice + 1 < kVSlices) load_v_slice(0, slice + 1);
    }
  }

  // ---- O /= row sum, stored as fp16.
  const int g = lane >> 2;
  const int t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row) {
      float sum = row_sum[mt][half_row];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = 1.0f / sum;
      const int q = q0 + warp * kRowsPerWarp + mt * 16 + g + 8 * half_row;
      if (q >= SEQ) continue;
      half* out = O + head + static_cast<size_t>(q) * D;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        *reinterpret_cast<__half2*>(out + dt * 8 + 2 * t) =
            __floats2half2_rn(o[mt][dt][2 * half_row] * inv, o[mt][dt][2 * half_row + 1] * inv);
      }
    }
  }
}

#else  // MMA == 1: Hopper, TMA and wgmma

#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "MMA=1 (wgmma) needs the arch-specific sm_90a target"
#endif

namespace {

constexpr int kConsumers = B_R / 64;  // warpgroups of 64 query rows each
constexpr int kThreads = 128 * (kConsumers + 1);
constexpr int kSAcc = B_C / 2;       // fp32 scores per thread (m64nB_C)
constexpr int kOAcc = D / 2;         // fp32 outputs per thread (m64n128)
constexpr int kPSteps = B_C / 16;    // k16 steps of P V
constexpr int kBox = 64;             // halves per box row: 128 bytes, the swizzle span
// Shared memory, in 128-byte-swizzled boxes of 64 columns (1 KiB-aligned):
// Q's two boxes of B_R rows, then STAGES stages of K's two boxes and V's
// two boxes of B_C rows, then the mbarriers (Q's full and empty, each
// stage's full and empty).
constexpr int kQBoxBytes = B_R * 128;
constexpr int kKVBoxBytes = B_C * 128;
constexpr int kStageBytes = 4 * kKVBoxBytes;
// Registers per thread with two consumer warpgroups (setmaxnreg): the
// producer gives up what the consumers take, out of what the block was
// launched with (kThreads x the per-thread count __launch_bounds__ allows,
// 168 at 384 threads): asking for more than the block holds waits for good.
// With one consumer warpgroup (256 threads) there is no need: each thread
// may have 255 from the start.
constexpr int kProducerRegs = 24;
constexpr int kConsumerRegs = 240;
constexpr int kBlockRegs = kThreads * (65536 / kThreads / 8 * 8);

static_assert(B_R == 64 || B_R == 128, "one or two consumer warpgroups");
static_assert(B_C == 64 || B_C == 128, "wgmma's N for S is 64 or 128");
static_assert(STAGES >= 2, "a K/V ring of two stages or more");
static_assert(!PINGPONG || kConsumers == 2, "two consumer warpgroups take turns");
static_assert(kConsumers == 1 || kConsumers * 128 * kConsumerRegs + 128 * kProducerRegs <=
                                     kBlockRegs,
              "setmaxnreg moves registers within the block's allocation");
static_assert(8 * (2 + 2 * STAGES) <= 128, "the mbarriers fit in the spec's 128 bytes");

#if B_C == 128
// S (+)= Q K^T for one k16 step: both operands K-major in shared memory.
__device__ __forceinline__ void WgmmaSS64x128(float (&d)[64], unsigned long long desc_a,
                                             unsigned long long desc_b, int accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#else
// S (+)= Q K^T for one k16 step: both operands K-major in shared memory.
__device__ __forceinline__ void WgmmaSS64x64(float (&d)[32], unsigned long long desc_a,
                                             unsigned long long desc_b, int accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#endif

// O += P V for one k16 step: P (fp16) from registers in the A fragment
// layout, V in shared memory MN-major (transposed: imm-trans-b).
__device__ __forceinline__ void WgmmaRS64x128(float (&d)[64], const u32 (&a)[4],
                                              unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
      "}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

// mbarrier operations on a shared-memory address.
__device__ __forceinline__ void BarrierInit(u32 bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void BarrierArrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Arrives on `bar` and expects `bytes` more from bulk copies this phase.
__device__ __forceinline__ void BarrierArriveExpect(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
               "r"(bytes)
               : "memory");
}

// Returns once the phase of parity `parity` has completed.
__device__ __forceinline__ void BarrierWait(u32 bar, u32 parity) {
  u32 done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// Copies the box of `map` whose first element is (column c0, sequence row
// c1, head c2, batch c3) to `dst`; rows past SEQ arrive as zeros. Its bytes
// count against `bar`'s expected ones as they land.
__device__ __forceinline__ void TmaLoad(u32 dst, const TensorMap& map, int c0, int c1, int c2,
                                        int c3, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(bar)
      : "memory");
}

// A shared-memory matrix descriptor in the 128-byte swizzle (mode 1) the
// tensor maps write: 8-row groups of 128-byte rows, 1 KiB apart (the stride
// byte offset). `leading` is the leading byte offset: unused by K-major
// operands (Q, K: 16 by convention), the distance between the two 64-column
// boxes for V, which is MN-major (its rows run along wgmma's K).
__device__ __forceinline__ unsigned long long Descriptor(u32 address, u32 leading) {
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(leading >> 4) << 16) | ((1024ull >> 4) << 32) |
         (1ull << 62);
}

__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Issues S = Q K^T for one warpgroup: eight k16 steps over the two 64-column
// boxes of Q (its 64 rows at `q`) and of K (the stage's B_C rows at `k`).
__device__ __forceinline__ void IssueScores(float (&s)[kSAcc], u32 q, u32 k) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const u32 column = (kk % 4) * 32;  // bytes into a box's 128-byte row
    const unsigned long long a = Descriptor(q + (kk / 4) * kQBoxBytes + column, 16);
    const unsigned long long b = Descriptor(k + (kk / 4) * kKVBoxBytes + column, 16);
#if B_C == 128
    WgmmaSS64x128(s, a, b, kk > 0);
#else
    WgmmaSS64x64(s, a, b, kk > 0);
#endif
  }
}

// Issues O += P V for one warpgroup: B_C / 16 k16 steps of 16 V rows each,
// the 128 columns spanning V's two boxes (the leading byte offset).
__device__ __forceinline__ void IssueValues(float (&o)[kOAcc], const u32 (&p)[kPSteps][4],
                                            u32 v) {
#pragma unroll
  for (int kk = 0; kk < kPSteps; ++kk) {
    WgmmaRS64x128(o, p[kk], Descriptor(v + kk * 16 * 128, kKVBoxBytes));
  }
}

// The online softmax of one tile of scores, in place: masks columns at or
// past `valid` (the keys left in the sequence), takes each row's new maximum
// m (in log2 units of the scaled scores; a row's values are spread over the
// four threads of a quad), turns S into exp2(S * scale * log2(e) - m),
// rescales this thread's part of the row's running sum (the quad's parts
// are added at the store) and returns the factor `alpha` the row's outputs
// are rescaled by.
__device__ __forceinline__ void Softmax(float (&s)[kSAcc], int valid, int lane,
                                        float scale_log2, float (&row_max)[2],
                                        float (&row_sum)[2], float (&alpha)[2]) {
  const int t = lane & 3;
  if (valid < B_C) {
#pragma unroll
    for (int j = 0; j < B_C / 8; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        if (j * 8 + 2 * t + (r & 1) >= valid) s[4 * j + r] = NegInf();
  }
#pragma unroll
  for (int half_row = 0; half_row < 2; ++half_row) {
    float tile_max = NegInf();
#pragma unroll
    for (int j = 0; j < B_C / 8; ++j) {
      tile_max = fmaxf(tile_max, fmaxf(s[4 * j + 2 * half_row], s[4 * j + 2 * half_row + 1]));
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float new_max = fmaxf(row_max[half_row], tile_max * scale_log2);
    alpha[half_row] = Exp2(row_max[half_row] - new_max);
    row_max[half_row] = new_max;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < B_C / 8; ++j) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        float& x = s[4 * j + 2 * half_row + c];
        x = Exp2(fmaf(x, scale_log2, -new_max));
        sum += x;
      }
    }
    row_sum[half_row] = row_sum[half_row] * alpha[half_row] + sum;
  }
}

// P as fp16 in wgmma's A fragments: the accumulator layout of S is P's.
// Written only while no wgmma reads `p`.
__device__ __forceinline__ void PackP(const float (&s)[kSAcc], u32 (&p)[kPSteps][4]) {
#pragma unroll
  for (int kk = 0; kk < kPSteps; ++kk) {
    p[kk][0] = PackHalf2(s[8 * kk + 0], s[8 * kk + 1]);
    p[kk][1] = PackHalf2(s[8 * kk + 2], s[8 * kk + 3]);
    p[kk][2] = PackHalf2(s[8 * kk + 4], s[8 * kk + 5]);
    p[kk][3] = PackHalf2(s[8 * kk + 6], s[8 * kk + 7]);
  }
}

__device__ __forceinline__ void Rescale(float (&o)[kOAcc], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    o[4 * j] *= alpha[0];
    o[4 * j + 1] *= alpha[0];
    o[4 * j + 2] *= alpha[1];
    o[4 * j + 3] *= alpha[1];
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, 1) flash_attn_fwd(FLASH_PARAMS) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const u32 raw = SharedAddress(smem_raw);
  const u32 q_tile = (raw + 1023) & ~1023u;  // Q's two boxes
  const u32 ring = q_tile + 2 * kQBoxBytes;  // STAGES x (K's two boxes, V's two boxes)
  const u32 q_full = ring + STAGES * kStageBytes;  // Q holds this tile's rows
  const u32 q_empty = q_full + 8;  // every consumer's last S of Q is done
  const u32 full = q_empty + 8;  // full[s]: stage s holds its K and V tiles
  const u32 empty = full + 8 * STAGES;  // empty[s]: every consumer is done with stage s

  // The block's query tiles: its own, or with PERSISTENT every gridDim.x-th
  // (the grid is one wave), query blocks of one head next to one another;
  // the ring's stages and phases run on from tile to tile.
  const int tid = threadIdx.x;
  const int q_blocks = (SEQ + B_R - 1) / B_R;
  const int tiles = q_blocks * HEADS * BATCH;
  const int first =
      PERSISTENT ? blockIdx.x : (blockIdx.z * HEADS + blockIdx.y) * q_blocks + blockIdx.x;
  const int step = PERSISTENT ? gridDim.x : tiles;
  const int kv_tiles = (SEQ + B_C - 1) / B_C;
  if (tid == 0) {
    BarrierInit(q_full, 1);
    BarrierInit(q_empty, 128 * kConsumers);
    for (int s = 0; s < STAGES; ++s) {
      BarrierInit(full + 8 * s, 1);
      BarrierInit(empty + 8 * s, 128 * kConsumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (tid >= 128 * kConsumers) {  // the producer warpgroup: one thread's bulk copies
    if (kConsumers > 1) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    if (tid == 128 * kConsumers) {
      int it = 0;  // stage uses so far, over every tile
      int n = 0;   // tiles so far
      for (int tile = first; tile < tiles; tile += step, ++n) {
        const int q0 = (tile % q_blocks) * B_R;
        const int head = tile / q_blocks % HEADS;
        const int batch = tile / q_blocks / HEADS;
        if (n > 0) BarrierWait(q_empty, (n - 1) & 1);
        BarrierArriveExpect(q_full, 2 * kQBoxBytes);
        TmaLoad(q_tile, Q_map, 0, q0, head, batch, q_full);
        TmaLoad(q_tile + kQBoxBytes, Q_map, kBox, q0, head, batch, q_full);
        for (int j = 0; j < kv_tiles; ++j, ++it) {
          const int stage = it % STAGES;
          const int use = it / STAGES;
          if (use > 0) BarrierWait(empty + 8 * stage, (use - 1) & 1);
          const u32 bar = full + 8 * stage;
          const u32 k = ring + stage * kStageBytes;
          const u32 v = k + 2 * kKVBoxBytes;
          BarrierArriveExpect(bar, kStageBytes);
          TmaLoad(k, K_map, 0, j * B_C, head, batch, bar);
          TmaLoad(k + kKVBoxBytes, K_map, kBox, j * B_C, head, batch, bar);
          TmaLoad(v, V_map, 0, j * B_C, head, batch, bar);
          TmaLoad(v + kKVBoxBytes, V_map, kBox, j * B_C, head, batch, bar);
        }
      }
    }
    return;
  }
  if (kConsumers > 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));

  // A consumer warpgroup: 64 query rows of each tile, O (64 x 128) in
  // registers.
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int group = warp / 4;
  const u32 q = q_tile + group * 64 * 128;
  const float scale_log2 = scale * 1.4426950408889634f;
  float o[kOAcc];
  float row_max[2];
  float row_sum[2];
  float alpha[2];
  float s[kSAcc];
  u32 p[kPSteps][4];

  // A turn issues one tile's wgmmas: the first tile's scores, then each
  // tile's P V with the next tile's scores. With PINGPONG the two consumer
  // warpgroups take turns (named barrier 2 is group 0's turn, 3 group 1's;
  // 256 threads: one group waits, the other arrives), so that one's softmax
  // runs while the other's wgmmas have the tensor cores. Group 1 lets group 0
  // go first by arriving on barrier 2 once before its first turn, so its
  // last pass arrives there once more than group 0 takes turns: group 0's
  // bar.sync 2 after the last tile takes that arrival. With OVERLAP the next
  // tile's scores are issued first and their softmax runs while the tensor
  // cores multiply P V; the outputs are rescaled, and P packed, once P V is
  // done (a register a wgmma in flight reads is written by nothing else, or
  // ptxas serializes them).
  auto turn_wait = [&]() {
    if (!PINGPONG) return;
    if (group == 0) {
      asm volatile("bar.sync 2, 256;\n" ::: "memory");
    } else {
      asm volatile("bar.sync 3, 256;\n" ::: "memory");
    }
  };
  auto turn_pass = [&]() {
    if (!PINGPONG) return;
    if (group == 0) {
      asm volatile("bar.arrive 3, 256;\n" ::: "memory");
    } else {
      asm volatile("bar.arrive 2, 256;\n" ::: "memory");
    }
  };
  if (PINGPONG && group == 1) asm volatile("bar.arrive 2, 256;\n" ::: "memory");
  int it = 0;  // stage uses so far, over every tile
  int n = 0;   // tiles so far
  for (int tile = first; tile < tiles; tile += step, ++n, it += kv_tiles) {
    const int q0 = (tile % q_blocks) * B_R;
    const int head = tile / q_blocks % HEADS;
    const int batch = tile / q_blocks / HEADS;
#pragma unroll
    for (int i = 0; i < kOAcc; ++i) o[i] = 0.0f;
    row_max[0] = row_max[1] = NegInf();
    row_sum[0] = row_sum[1] = 0.0f;
    BarrierWait(q_full, n & 1);
    BarrierWait(full + 8 * (it % STAGES), (it / STAGES) & 1);
    turn_wait();
    WgmmaFence();
    IssueScores(s, q, ring + (it % STAGES) * kStageBytes);
    WgmmaCommit();
    turn_pass();
    WgmmaWait<0>();
    // Q's last S is done: the producer may load the next tile's Q (and below,
    // where the tile's last S is issued in the loop).
    if (kv_tiles == 1) BarrierArrive(q_empty);
    Softmax(s, SEQ, lane, scale_log2, row_max, row_sum, alpha);
    PackP(s, p);
    for (int j = 1; j <= kv_tiles; ++j) {
      const int last = (it + j - 1) % STAGES;  // the stage whose P is packed
      const u32 last_v = ring + last * kStageBytes + 2 * kKVBoxBytes;
      const bool next = j < kv_tiles;
      const int use = it + j;  // the next tile's stage use
      const u32 k = ring + (use % STAGES) * kStageBytes;
      const u32 k_full = full + 8 * (use % STAGES);
      if (OVERLAP && next) BarrierWait(k_full, (use / STAGES) & 1);
      turn_wait();
      WgmmaFence();
      if (OVERLAP && next) {
        IssueScores(s, q, k);
        WgmmaCommit();
        IssueValues(o, p, last_v);
        WgmmaCommit();
        turn_pass();
        WgmmaWait<1>();  // the scores are done
        if (j == kv_tiles - 1) BarrierArrive(q_empty);
        Softmax(s, SEQ - j * B_C, lane, scale_log2, row_max, row_sum, alpha);
        WgmmaWait<0>();  // P V of the last tile is done: its stage is free
        BarrierArrive(empty + 8 * last);
      } else {
        IssueValues(o, p, last_v);
        WgmmaCommit();
        if (next) {  // P V runs while the next tile lands
          BarrierWait(k_full, (use / STAGES) & 1);
          IssueScores(s, q, k);
          WgmmaCommit();
        }
        turn_pass();
        if (next) {
          WgmmaWait<1>();  // P V is done: its stage is free to load again
          BarrierArrive(empty + 8 * last);
          WgmmaWait<0>();
          if (j == kv_tiles - 1) BarrierArrive(q_empty);
          Softmax(s, SEQ - j * B_C, lane, scale_log2, row_max, row_sum, alpha);
        } else {
          WgmmaWait<0>();
          BarrierArrive(empty + 8 * last);
        }
      }
      if (next) {
        Rescale(o, alpha);
        PackP(s, p);
      }
    }

    // O /= the row sums, stored as fp16 (rows past SEQ are not), while the
    // producer loads the next tile.
    const int g = lane >> 2;
    const int t = lane & 3;
    half* const out = O + (static_cast<size_t>(batch) * HEADS + head) * SEQ * D;
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row) {
      float sum = row_sum[half_row];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = 1.0f / sum;
      const int row = q0 + group * 64 + (warp % 4) * 16 + g + 8 * half_row;
      if (row >= SEQ) continue;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        *reinterpret_cast<__half2*>(out + static_cast<size_t>(row) * D + 8 * j + 2 * t) =
            __floats2half2_rn(o[4 * j + 2 * half_row] * inv, o[4 * j + 2 * half_row + 1] * inv);
      }
    }
  }
  if (PINGPONG && group == 0) asm volatile("bar.sync 2, 256;\n" ::: "memory");
}

#endif  // MMA

// fp16 GEMM, C = A * B with fp32 accumulation, for sm_80+ (tuned on sm_90).
//   A: M x K row-major; B: N x K row-major (the "weight" layout, K contiguous
//   in both operands); C: M x N row-major, fp16.
// Global -> shared with cp.async in a STAGES-deep pipeline into XOR-swizzled
// tiles; any M, N, K (edges predicated: zero-filled loads, masked stores; a K
// that is not a multiple of 8 takes a slower load path). Two tensor-core
// paths, chosen by MMA:
//   MMA=0: mma.sync.aligned.m16n8k16 fed by ldmatrix (sm_80 and later), a
//          WARPS_M x WARPS_N grid of warp tiles;
//   MMA=1: Hopper wgmma.mma_async m64nBLOCK_Nk16 reading both operands from
//          shared memory through swizzled descriptors (sm_90a; 128-byte
//          swizzle for BLOCK_K 64, 64-byte for BLOCK_K 32), one warpgroup
//          (4 warps) per 64 rows: WARPS_M = BLOCK_M / 16, WARPS_N = 1; one
//          wgmma batch stays in flight while the next tiles load (prefetch
//          distance STAGES - 2);
//   MMA=2: the same, but each batch completes before the next barrier
//          (prefetch distance STAGES - 1);
//   MMA=3: warp-specialised: one more warpgroup, the producer, fills the
//          STAGES-deep ring with cp.async and signals each stage's "full"
//          mbarrier as its copies land (cp.async.mbarrier.arrive.noinc);
//          the BLOCK_M / 64 consumer warpgroups wait on it, issue the
//          stage's wgmma batch, and release the stage before (its batch
//          done: one batch stays in flight) on its "empty" mbarrier, which
//          the producer waits on before refilling it. No block-wide barrier
//          in the main loop: loads run STAGES tiles ahead of the tensor
//          cores, whatever either side stalls on.
//   MMA=4: MMA=3 with the operands swapped, for decode shapes: each
//          consumer warpgroup multiplies 64 rows of the weights (B) on
//          wgmma's M side by the tile's BLOCK_M (16, 32 or 64) rows of
//          activations on its N side, so a 16-row tile wastes nothing of a
//          64-row wgmma; its accumulators hold C transposed.
//
// Params (from -D): MMA, BLOCK_M, BLOCK_N, BLOCK_K (32 or 64), WARPS_M,
// WARPS_N, STAGES (>= 2; >= 3 for MMA=1), GROUP_M (block rasterization:
// GROUP_M row-blocks of C are walked column by column so that they share B
// tiles in L2), SPLIT_K (MMA=3, 4: the K range of a C tile is split among a
// cluster of SPLIT_K blocks, whose partial tiles the first block sums from
// its peers' shared memory; for short-M shapes whose tiles alone leave SMs
// idle), EPILOGUE (wgmma paths: 0 stores the accumulators straight from
// registers, 1 stages them through shared memory; MMA=3: 2 stages them in
// swizzled boxes that one thread stores by TMA through C_map, N a multiple
// of 8), PERSISTENT (MMA=3: a grid of one wave whose blocks walk the C
// tiles, the producer loading the next tile's stages while the consumers
// store the last one; with EPILOGUE 1 or 2 the staging tile has shared
// memory of its own, after the ring, and EPILOGUE=2's store drains during
// the next tile), LOAD (MMA=3, 4:
// how the producer fills the ring: 0 cp.async from its 128 threads, 1 TMA:
// one thread issues a bulk tensor copy per operand and stage through the
// tensor maps A_map and B_map, which land in the same swizzle the
// descriptors read and complete the stage's "full" mbarrier by their bytes;
// K a multiple of 8).
// Launch: grid.x = cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) * SPLIT_K (PERSISTENT:
// at most one wave), block.x = 32 * WARPS_M * WARPS_N (+ 128, the producer,
// with MMA=3 and 4), dynamic shared memory STAGES * (BLOCK_M + BLOCK_N) *
// BLOCK_K * 2 bytes (+ 1 KiB with wgmma, to align the tiles to 1 KiB; + 256
// bytes of mbarriers with MMA=3 and 4; + the
// staging tile's BLOCK_M * (BLOCK_N + 8) * 2 with PERSISTENT and EPILOGUE 1
// or 2, whose boxes start 1 KiB past the tiles with EPILOGUE=2).
#include <cuda_fp16.h>

#ifndef BLOCK_M
#error "compile with -DBLOCK_M=... (and the other params)"
#endif

// A CUtensorMap (cuda.h is not at hand under NVRTC): 128 opaque bytes,
// passed by value as a __grid_constant__ parameter, whose generic address
// the bulk tensor copies take.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// Every path takes the tensor maps (zeros unless LOAD=1, EPILOGUE=2).
#define GEMM_PARAMS                                                                       \
  const half *__restrict__ A, const half *__restrict__ B, half *__restrict__ C, int M,    \
      int N, int K, const __grid_constant__ TensorMap A_map,                              \
      const __grid_constant__ TensorMap B_map, const __grid_constant__ TensorMap C_map

namespace {

using u32 = unsigned int;

#ifndef MMA
#define MMA 0
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef EPILOGUE
#define EPILOGUE 0
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif
#ifndef LOAD
#define LOAD 0
#endif
static_assert(LOAD == 0 || MMA >= 3, "LOAD=1 (TMA) is the warp-specialised producer's");

constexpr int kMathThreads = WARPS_M * WARPS_N * 32;
// MMA=3 and 4 add a producer warpgroup, which alone loads the tiles.
constexpr int kThreads = kMathThreads + (MMA >= 3 ? 128 : 0);
constexpr int kLoaders = MMA >= 3 ? 128 : kThreads;
constexpr int kWarpM = BLOCK_M / WARPS_M;  // rows of C per warp
constexpr int kWarpN = BLOCK_N / WARPS_N;  // columns of C per warp
constexpr int kMmaM = kWarpM / 16;         // m16 tiles per warp
constexpr int kMmaN = kWarpN / 8;          // n8 tiles per warp
constexpr int kChunksK = BLOCK_K / 8;      // 16-byte chunks per tile row
constexpr int kTileA = BLOCK_M * BLOCK_K;  // halves per stage
constexpr int kTileB = BLOCK_N * BLOCK_K;

static_assert(BLOCK_K == 32 || BLOCK_K == 64, "BLOCK_K must be 32 or 64");
static_assert(MMA != 0 || (kWarpM % 16 == 0 && kWarpN % 16 == 0),
              "warp tile must be a multiple of 16");
static_assert((BLOCK_M * kChunksK) % kLoaders == 0, "A tile chunks must divide among loaders");
static_assert((BLOCK_N * kChunksK) % kLoaders == 0, "B tile chunks must divide among loaders");
static_assert(STAGES >= 2, "STAGES >= 2");

// Physical 16-byte chunk of logical chunk `chunk` in tile row `row`: rows of
// 128 bytes (BLOCK_K 64) XOR with row % 8; rows of 64 bytes (two per 128-byte
// line) with (row / 2) % 4. Eight consecutive rows at one logical chunk then
// hit eight different bank groups (conflict-free ldmatrix and cp.async).
__device__ __forceinline__ int Swizzle(int row, int chunk) {
  if (BLOCK_K == 64) return chunk ^ (row & 7);
  return chunk ^ ((row >> 1) & 3);
}

__device__ __forceinline__ int TileOffset(int row, int chunk) {
  return row * BLOCK_K + Swizzle(row, chunk) * 8;
}

__device__ __forceinline__ u32 SharedAddress(const void* pointer) {
  return static_cast<u32>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void CpAsync16(u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}

__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

__device__ __forceinline__ void LdMatrixX4(u32 (&r)[4], u32 address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void Mma16816(float (&d)[4], const u32 (&a)[4],
                                         const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Starts copying a ROWS x BLOCK_K tile whose first element is `src`
// (row stride `ld`) into `dst`; rows >= rows_left and columns >= k_left are
// zero-filled. Vector path: K % 8 == 0, so every chunk is all in or all out.
// `tid` counts the kLoaders threads that load.
template <int ROWS>
__device__ __forceinline__ void LoadTileAsync(half* dst, const half* src, int ld,
                                              int rows_left, int k_left, int tid) {
  constexpr int kPerThread = ROWS * kChunksK / kLoaders;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int chunk_id = tid + i * kLoaders;
    const int row = chunk_id / kChunksK;
    const int chunk = chunk_id % kChunksK;
    const bool valid = row < rows_left && chunk * 8 < k_left;
    const half* from = valid ? src + static_cast<size_t>(row) * ld + chunk * 8 : src;
    CpAsync16(SharedAddress(dst + TileOffset(row, chunk)), from, valid ? 16 : 0);
  }
}

// The same with element loads, for a K that is not a multiple of 8 (rows
// not 16-byte aligned). Synchronous; visible after the next barrier.
template <int ROWS>
__device__ __forceinline__ void LoadTileScalar(half* dst, const half* src, int ld,
                                               int rows_left, int k_left, int tid) {
  constexpr int kPerThread = ROWS * kChunksK / kLoaders;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int chunk_id = tid + i * kLoaders;
    const int row = chunk_id / kChunksK;
    const int chunk = chunk_id % kChunksK;
    __align__(16) half values[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int k = chunk * 8 + e;
      values[e] = (row < rows_left && k < k_left) ? src[static_cast<size_t>(row) * ld + k]
                                                  : __float2half(0.0f);
    }
    *reinterpret_cast<uint4*>(dst + TileOffset(row, chunk)) =
        *reinterpret_cast<const uint4*>(values);
  }
}


// Where C tile `tile` starts: GROUP_M block-rows at a time, walked
// column-major.
__device__ __forceinline__ void TileOrigin(int M, int N, int tile, int* m0, int* n0) {
  const int blocks_m = (M + BLOCK_M - 1) / BLOCK_M;
  const int blocks_n = (N + BLOCK_N - 1) / BLOCK_N;
  const int group_blocks = GROUP_M * blocks_n;
  const int group = tile / group_blocks;
  const int first_m = group * GROUP_M;
  const int group_m = min(blocks_m - first_m, GROUP_M);
  const int in_group = tile % group_blocks;
  *m0 = (first_m + in_group % group_m) * BLOCK_M;
  *n0 = (in_group / group_m) * BLOCK_N;
}

// The C tile of this block (the SPLIT_K blocks of a tile are consecutive).
__device__ __forceinline__ void BlockTile(int M, int N, int* m0, int* n0) {
  TileOrigin(M, N, blockIdx.x / SPLIT_K, m0, n0);
}

// Starts loading k-tile `k_tile` of A and B into pipeline stage `stage`.
__device__ __forceinline__ void LoadStage(half* tiles_a, half* tiles_b, const half* a_block,
                                          const half* b_block, int rows_a, int rows_b, int K,
                                          int stage, int k_tile, int tid) {
  const int k0 = k_tile * BLOCK_K;
  if ((K & 7) == 0) {
    LoadTileAsync<BLOCK_M>(tiles_a + stage * kTileA, a_block + k0, K, rows_a, K - k0, tid);
    LoadTileAsync<BLOCK_N>(tiles_b + stage * kTileB, b_block + k0, K, rows_b, K - k0, tid);
  } else {
    LoadTileScalar<BLOCK_M>(tiles_a + stage * kTileA, a_block + k0, K, rows_a, K - k0, tid);
    LoadTileScalar<BLOCK_N>(tiles_b + stage * kTileB, b_block + k0, K, rows_b, K - k0, tid);
  }
}

// Stores one m16n8-layout fragment pair (rows g and g + 8 of a 16-row slab,
// columns col and col + 1) with bounds checks.
__device__ __forceinline__ void StorePair(half* C, int M, int N, int row, int col, float v0,
                                          float v1) {
  if (row >= M) return;
  half* out = C + static_cast<size_t>(row) * N + col;
  if ((N & 1) == 0 && col + 1 < N) {
    *reinterpret_cast<half2*>(out) = __floats2half2_rn(v0, v1);
  } else {
    if (col < N) out[0] = __float2half_rn(v0);
    if (col + 1 < N) out[1] = __float2half_rn(v1);
  }
}

}  // namespace

#if MMA == 0
extern "C" __global__ void __launch_bounds__(kThreads, 1)
    gemm_f16(GEMM_PARAMS) {
  extern __shared__ __align__(128) unsigned char smem[];
  half* const tiles_a = reinterpret_cast<half*>(smem);
  half* const tiles_b = tiles_a + STAGES * kTileA;

  int m0 = 0, n0 = 0;
  BlockTile(M, N, &m0, &n0);

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int warp_m = warp / WARPS_N;
  const int warp_n = warp % WARPS_N;

  const half* a_block = A + static_cast<size_t>(m0) * K;
  const half* b_block = B + static_cast<size_t>(n0) * K;
  const int rows_a = M - m0;
  const int rows_b = N - n0;
  const int k_tiles = (K + BLOCK_K - 1) / BLOCK_K;
  auto load_stage = [&](int stage, int k_tile) {
    LoadStage(tiles_a, tiles_b, a_block, b_block, rows_a, rows_b, K, stage, k_tile, tid);
  };

  float acc[kMmaM][kMmaN][4];
#pragma unroll
  for (int i = 0; i < kMmaM; ++i)
#pragma unroll
    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    CpAsyncCommit();
  }

  // ldmatrix row/chunk of this lane (see the fragment layouts of m16n8k16).
  const int a_row = warp_m * kWarpM + (lane & 15);
  const int a_chunk = lane >> 4;
  const int b_row = warp_n * kWarpN + ((lane >> 4) << 3) + (lane & 7);
  const int b_chunk = (lane >> 3) & 1;

  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    CpAsyncWait<STAGES - 2>();
    __syncthreads();
    const int next = k_tile + STAGES - 1;
    if (next < k_tiles) load_stage(next % STAGES, next);
    CpAsyncCommit();

    const half* tile_a = tiles_a + (k_tile % STAGES) * kTileA;
    const half* tile_b = tiles_b + (k_tile % STAGES) * kTileB;
#pragma unroll
    for (int kk = 0; kk < BLOCK_K / 16; ++kk) {
      u32 a_frag[kMmaM][4];
      u32 b_frag[kMmaN][2];
#pragma unroll
      for (int i = 0; i < kMmaM; ++i) {
        LdMatrixX4(a_frag[i],
                   SharedAddress(tile_a + TileOffset(a_row + i * 16, kk * 2 + a_chunk)));
      }
#pragma unroll
      for (int j = 0; j < kMmaN; j += 2) {
        u32 r[4];
        LdMatrixX4(r, SharedAddress(tile_b + TileOffset(b_row + j * 8, kk * 2 + b_chunk)));
        b_frag[j][0] = r[0];
        b_frag[j][1] = r[1];
        b_frag[j + 1][0] = r[2];
        b_frag[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j) Mma16816(acc[i][j], a_frag[i], b_frag[j]);
    }
  }
  CpAsyncWait<0>();

  // Epilogue: each lane holds rows g and g + 8, columns 2t and 2t + 1 of
  // every m16n8 tile.
  const int g = lane >> 2;
  const int t = lane & 3;
#pragma unroll
  for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
    for (int j = 0; j < kMmaN; ++j) {
      const int row = m0 + warp_m * kWarpM + i * 16 + g;
      const int col = n0 + warp_n * kWarpN + j * 8 + 2 * t;
      StorePair(C, M, N, row, col, acc[i][j][0], acc[i][j][1]);
      StorePair(C, M, N, row + 8, col, acc[i][j][2], acc[i][j][3]);
    }
  }
}

#else  // MMA 1 to 4: Hopper wgmma

#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "MMA=1 to 4 (wgmma) needs the arch-specific sm_90a target"
#endif

namespace {

// MMA=4 swaps the operands: the weights (B) are wgmma's A side, 64 of
// their rows per warpgroup, and the few rows of activations (A) its N side.
// GEMM_MMA_COLS is wgmma's N, for the preprocessor (Wgmma below) too.
#if MMA == 4
#define GEMM_MMA_COLS BLOCK_M
#else
#define GEMM_MMA_COLS BLOCK_N
#endif
constexpr bool kSwapped = MMA == 4;
constexpr int kMmaRows = kSwapped ? BLOCK_N : BLOCK_M;  // wgmma's M side of the tile
constexpr int kMmaCols = GEMM_MMA_COLS;
constexpr int kWarpGroups = WARPS_M / 4;  // one (consumer) warpgroup per 64 rows
constexpr int kAcc = kMmaCols / 2;        // fp32 accumulators per thread
static_assert(WARPS_N == 1 && kMmaRows == 64 * kWarpGroups && WARPS_M % 4 == 0,
              "wgmma: WARPS_N = 1, WARPS_M = 16 per 64 rows of wgmma's M side (BLOCK_M; "
              "BLOCK_N with MMA=4)");
// wgmma batches left in flight across the next barrier (MMA=1, 3: one).
constexpr int kInFlight = MMA == 2 ? 0 : 1;
constexpr int kPrefetch = STAGES - 1 - kInFlight;  // tiles loading ahead (MMA=1, 2)
static_assert(kPrefetch >= 1, "MMA=1, 3: STAGES >= 3; MMA=2: STAGES >= 2");
static_assert(kMmaCols == 16 || kMmaCols == 32 || kMmaCols == 64 || kMmaCols == 128 ||
                  kMmaCols == 192 || kMmaCols == 256,
              "wgmma: N of 16/32/64/128/192/256");

__device__ __forceinline__ void Wgmma64x16(float (&d)[8], unsigned long long desc_a,
                                          unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, "
      "%8, %9, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

__device__ __forceinline__ void Wgmma64x32(float (&d)[16], unsigned long long desc_a,
                                          unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "%16, %17, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

__device__ __forceinline__ void Wgmma64x64(float (&d)[32], unsigned long long desc_a,
                                           unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

__device__ __forceinline__ void Wgmma64x128(float (&d)[64], unsigned long long desc_a,
                                           unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

__device__ __forceinline__ void Wgmma64x192(float (&d)[96], unsigned long long desc_a,
                                           unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, "
      "%96, %97, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

__device__ __forceinline__ void Wgmma64x256(float (&d)[128], unsigned long long desc_a,
                                           unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

// A shared-memory matrix descriptor for K-major rows of BLOCK_K halves, in
// the swizzle Swizzle() writes: BLOCK_K 64 is the 128-byte mode (16-byte
// chunk ^= row % 8; 8-row atoms of 1 KiB), BLOCK_K 32 the 64-byte mode
// (chunk ^= (row / 2) % 4; 8-row atoms of 512 B). The stride between 8-row
// groups is one atom; the leading offset is unused by swizzled K-major
// layouts (1 by convention).
__device__ __forceinline__ unsigned long long Descriptor(u32 address) {
  constexpr unsigned long long kAtomBytes = 8 * BLOCK_K * 2;
  constexpr unsigned long long kMode = BLOCK_K == 64 ? 1 : 2;
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) | (1ull << 16) |
         ((kAtomBytes >> 4) << 32) | (kMode << 62);
}

__device__ __forceinline__ void Wgmma(float (&d)[kAcc], u32 a, u32 b) {
#if GEMM_MMA_COLS == 256
  Wgmma64x256(d, Descriptor(a), Descriptor(b));
#elif GEMM_MMA_COLS == 192
  Wgmma64x192(d, Descriptor(a), Descriptor(b));
#elif GEMM_MMA_COLS == 128
  Wgmma64x128(d, Descriptor(a), Descriptor(b));
#elif GEMM_MMA_COLS == 64
  Wgmma64x64(d, Descriptor(a), Descriptor(b));
#elif GEMM_MMA_COLS == 32
  Wgmma64x32(d, Descriptor(a), Descriptor(b));
#else
  Wgmma64x16(d, Descriptor(a), Descriptor(b));
#endif
}

// The 1 KiB-aligned tiles of A, then of B, in dynamic shared memory (the
// launch adds 1 KiB of slack); what follows them is free.
__device__ __forceinline__ half* AlignedTiles(unsigned char* smem_raw) {
  const u32 raw = SharedAddress(smem_raw);
  return reinterpret_cast<half*>(smem_raw + (((raw + 1023) & ~1023u) - raw));
}

// Issues one k step's wgmma batch on stage tiles `a` (this warpgroup's 64
// rows) and `b`, commits it, and waits until at most kInFlight are pending.
__device__ __forceinline__ void MmaStage(float (&acc)[kAcc], u32 a, u32 b) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int kk = 0; kk < BLOCK_K / 16; ++kk) Wgmma(acc, a + kk * 32, b + kk * 32);
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kInFlight) : "memory");
}

// The math threads' barrier (MMA=3: the consumer warpgroups alone, on named
// barrier 1; else the block's).
__device__ __forceinline__ void MathBarrier() {
  if (MMA >= 3) {
    asm volatile("bar.sync 1, %0;\n" ::"n"(kMathThreads) : "memory");
  } else {
    __syncthreads();
  }
}

// The epilogue's staging tile (EPILOGUE=1): BLOCK_M rows of BLOCK_N halves,
// padded by 8 so that the fragments' rows fall in different banks, in the
// pipeline's shared memory (PERSISTENT: after it, since the ring is loading
// the next tile meanwhile).
constexpr int kStagedPitch = BLOCK_N + 8;
constexpr bool kStagedEpilogue = EPILOGUE == 1;
static_assert(!kStagedEpilogue || PERSISTENT ||
                  BLOCK_M * kStagedPitch <= STAGES * (kTileA + kTileB),
              "EPILOGUE=1: the staging tile fits in the pipeline's shared memory");

// Epilogue: per n8 block j, registers 4j..4j+3 hold rows g and g + 8 of
// this warp's 16-row slab, columns 8j + 2t and 8j + 2t + 1. `warp` counts
// the warps of the consumer warpgroups, `tid` their threads. EPILOGUE=0
// stores each pair directly; EPILOGUE=1 stages the fragments as fp16 in
// `smem` (the pipeline's memory, no longer read), which leave in 16-byte row
// chunks, a warp's stores covering whole 128-byte lines (faster at short K,
// slower with 256-row tiles: docs/benchmarks.md).
// REQUIRES: every math thread calls it, its wgmma batches done.
__device__ __forceinline__ void StoreAccumulators(half* C, int M, int N, int m0, int n0,
                                                  int warp, int lane, int tid, half* smem,
                                                  const float (&acc)[kAcc]) {
  const int g = lane >> 2;
  const int t = lane & 3;
  const int slab_row = (warp / 4) * 64 + (warp % 4) * 16 + g;
  if (!kStagedEpilogue) {
#pragma unroll
    for (int j = 0; j < BLOCK_N / 8; ++j) {
      const int col = n0 + j * 8 + 2 * t;
      StorePair(C, M, N, m0 + slab_row, col, acc[4 * j], acc[4 * j + 1]);
      StorePair(C, M, N, m0 + slab_row + 8, col, acc[4 * j + 2], acc[4 * j + 3]);
    }
    return;
  }
  MathBarrier();  // every warpgroup's wgmma reads of the pipeline are done
#pragma unroll
  for (int j = 0; j < BLOCK_N / 8; ++j) {
    const int col = j * 8 + 2 * t;
    *reinterpret_cast<half2*>(smem + slab_row * kStagedPitch + col) =
        __floats2half2_rn(acc[4 * j], acc[4 * j + 1]);
    *reinterpret_cast<half2*>(smem + (slab_row + 8) * kStagedPitch + col) =
        __floats2half2_rn(acc[4 * j + 2], acc[4 * j + 3]);
  }
  MathBarrier();
  constexpr int kRowChunks = BLOCK_N / 8;
  const bool vector = (N & 7) == 0;
#pragma unroll 4
  for (int c = tid; c < BLOCK_M * kRowChunks; c += kMathThreads) {
    const int r = c / kRowChunks;
    const int col = n0 + (c % kRowChunks) * 8;
    if (m0 + r >= M || col >= N) continue;
    const uint4 chunk = *reinterpret_cast<const uint4*>(smem + r * kStagedPitch + (c % kRowChunks) * 8);
    half* out = C + static_cast<size_t>(m0 + r) * N + col;
    if (vector && col + 8 <= N) {
      *reinterpret_cast<uint4*>(out) = chunk;
    } else {
      const half* values = reinterpret_cast<const half*>(&chunk);
      for (int e = 0; e < 8 && col + e < N; ++e) out[e] = values[e];
    }
  }
}

}  // namespace

#if MMA >= 3

namespace {

// mbarrier operations on a shared-memory address.
__device__ __forceinline__ void BarrierInit(u32 bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void BarrierArrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Arrives once every cp.async this thread issued before it has landed.
__device__ __forceinline__ void BarrierArriveOnCopies(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
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

// Arrives on `bar` and expects `bytes` more from bulk copies this phase.
__device__ __forceinline__ void BarrierArriveExpect(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
               "r"(bytes)
               : "memory");
}

// Copies the box of `map` at (column c0, row c1) to `dst`; the copy's bytes
// count against `bar`'s expected ones as they land.
__device__ __forceinline__ void TmaLoad(u32 dst, const TensorMap& map, int c0, int c1, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// Stores the box of `map` at (column c0, row c1) from `src` (bulk group).
__device__ __forceinline__ void TmaStore(const TensorMap& map, int c0, int c1, u32 src) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
          reinterpret_cast<unsigned long long>(&map)),
      "r"(c0), "r"(c1), "r"(src)
      : "memory");
}

// EPILOGUE=2: the fragments as fp16 into `staging`, BLOCK_N / 64 boxes of
// BLOCK_M rows of 128 bytes in the 128-byte swizzle (16-byte chunk ^= row %
// 8: a warp's half2 stores hit 32 banks) that C_map reads; then one thread
// stores the boxes by TMA, which clips them to C. The store drains while the
// consumers go on to the next tile; the staging is written again only after
// that thread saw the last store read it, behind the math barrier.
// REQUIRES: every math thread calls it, its wgmma batches done.
__device__ __forceinline__ void StoreAccumulatorsTma(const TensorMap& c_map, int m0, int n0,
                                                     int warp, int lane, int tid, half* staging,
                                                     const float (&acc)[kAcc]) {
  const int g = lane >> 2;
  const int t = lane & 3;
  const int slab_row = (warp / 4) * 64 + (warp % 4) * 16 + g;  // row % 8 == g
  if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  MathBarrier();
#pragma unroll
  for (int j = 0; j < BLOCK_N / 8; ++j) {
    half* const box = staging + (j / 8) * BLOCK_M * 64;
    const int chunk = ((j % 8) ^ g) * 8 + 2 * t;
    *reinterpret_cast<half2*>(box + slab_row * 64 + chunk) =
        __floats2half2_rn(acc[4 * j], acc[4 * j + 1]);
    *reinterpret_cast<half2*>(box + (slab_row + 8) * 64 + chunk) =
        __floats2half2_rn(acc[4 * j + 2], acc[4 * j + 3]);
  }
  // Written through the generic proxy, read by the bulk copy (async proxy).
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  MathBarrier();
  if (tid == 0) {
#pragma unroll
    for (int b = 0; b < BLOCK_N / 64; ++b) {
      TmaStore(c_map, n0 + b * 64, m0, SharedAddress(staging + b * BLOCK_M * 64));
    }
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  }
}

// MMA=4: the accumulators hold C transposed (wgmma's rows are C's columns,
// its columns C's rows): register 4j + r of lane (g, t) in warp w is
// C[m0 + 8j + 2t + r % 2][n0 + 64 * (w / 4) + 16 * (w % 4) + g + 8 * (r / 2)].
// A warp's store of one register writes eight consecutive halves of four
// rows; C is a few rows here.
__device__ __forceinline__ void StoreSwapped(half* C, int M, int N, int m0, int n0, int warp,
                                             int lane, const float (&acc)[kAcc]) {
  const int g = lane >> 2;
  const int t = lane & 3;
  const int n = n0 + (warp / 4) * 64 + (warp % 4) * 16 + g;
#pragma unroll
  for (int j = 0; j < kMmaCols / 8; ++j) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int m = m0 + 8 * j + 2 * t + (r & 1);
      const int col = n + 8 * (r >> 1);
      if (m < M && col < N) C[static_cast<size_t>(m) * N + col] = __float2half_rn(acc[4 * j + r]);
    }
  }
}

// The blocks of one C tile's K splits, a cluster: arrive and wait for all
// of them (release, acquire).
__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// The shared-memory address `address` of this block as block `rank` of the
// cluster has it, and a float read there.
__device__ __forceinline__ u32 PeerAddress(u32 address, int rank) {
  u32 peer = 0;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(peer) : "r"(address), "r"(rank));
  return peer;
}

__device__ __forceinline__ float PeerLoad(u32 address) {
  float value = 0;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(value) : "r"(address) : "memory");
  return value;
}

}  // namespace

#if SPLIT_K > 1
#define GEMM_CLUSTER __cluster_dims__(SPLIT_K, 1, 1)
#else
#define GEMM_CLUSTER
#endif

extern "C" __global__ void __launch_bounds__(kThreads, 1) GEMM_CLUSTER
    gemm_f16(GEMM_PARAMS) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  half* const tiles_a = AlignedTiles(smem_raw);
  half* const tiles_b = tiles_a + STAGES * kTileA;
  // full[s]: stage s holds its tiles (the producer's 128 threads arrive as
  // their copies land); empty[s]: every consumer thread is done reading it.
  const u32 full = SharedAddress(tiles_b + STAGES * kTileB);
  const u32 empty = full + 8 * STAGES;

  const int tid = threadIdx.x;
  // The C tiles of this block: its own, or with PERSISTENT every
  // gridDim.x-th from blockIdx.x (the grid is one wave), the ring's stages
  // and phases running on from tile to tile.
  const int tiles = ((M + BLOCK_M - 1) / BLOCK_M) * ((N + BLOCK_N - 1) / BLOCK_N);
  const int first_tile = PERSISTENT ? blockIdx.x : blockIdx.x / SPLIT_K;
  const int tile_step = PERSISTENT ? gridDim.x : tiles;
  static_assert(!PERSISTENT || SPLIT_K == 1, "PERSISTENT: one block per tile's K");
  // PERSISTENT, EPILOGUE 1 or 2: the staging tile, after the mbarriers (at
  // the next 1 KiB for the swizzled boxes of EPILOGUE=2).
  half* const staging =
      PERSISTENT ? tiles_b + STAGES * kTileB + (EPILOGUE == 2 ? 512 : 128) : tiles_a;
  // This block's K tiles: split `split` of SPLIT_K (the rank in its cluster).
  const int split = blockIdx.x % SPLIT_K;
  const int k_total = (K + BLOCK_K - 1) / BLOCK_K;
  const int k_per_split = (k_total + SPLIT_K - 1) / SPLIT_K;
  const int k_first = min(k_total, split * k_per_split);
  const int k_tiles = min(k_total, k_first + k_per_split) - k_first;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      BarrierInit(full + 8 * s, LOAD == 1 ? 1 : kLoaders);
      BarrierInit(empty + 8 * s, kMathThreads);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (tid >= kMathThreads && LOAD == 1) {  // the producer: one thread's bulk copies
    if (tid == kMathThreads) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(&A_map))
                   : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(&B_map))
                   : "memory");
      constexpr u32 kStageBytes = (kTileA + kTileB) * 2;
      int it = 0;  // stage uses so far, over every tile
      for (int tile = first_tile; tile < tiles; tile += tile_step) {
        int m0 = 0, n0 = 0;
        TileOrigin(M, N, tile, &m0, &n0);
        for (int i = 0; i < k_tiles; ++i, ++it) {
          const int stage = it % STAGES;
          const int use = it / STAGES;
          if (use > 0) BarrierWait(empty + 8 * stage, (use - 1) & 1);
          const u32 bar = full + 8 * stage;
          const int k0 = (k_first + i) * BLOCK_K;
          BarrierArriveExpect(bar, kStageBytes);
          TmaLoad(SharedAddress(tiles_a + stage * kTileA), A_map, k0, m0, bar);
          TmaLoad(SharedAddress(tiles_b + stage * kTileB), B_map, k0, n0, bar);
        }
      }
    }
    if (SPLIT_K > 1) {  // the cluster's two barriers of the reduction below
      ClusterSync();
      ClusterSync();
    }
    return;
  }
  if (tid >= kMathThreads) {  // the producer warpgroup
    const int loader = tid - kMathThreads;
    const bool vector = (K & 7) == 0;
    int it = 0;  // stage uses so far, over every tile
    for (int tile = first_tile; tile < tiles; tile += tile_step) {
      int m0 = 0, n0 = 0;
      TileOrigin(M, N, tile, &m0, &n0);
      const half* a_block = A + static_cast<size_t>(m0) * K;
      const half* b_block = B + static_cast<size_t>(n0) * K;
      for (int i = 0; i < k_tiles; ++i, ++it) {
        const int stage = it % STAGES;
        const int use = it / STAGES;
        // The stage's previous use (phase use - 1 of empty) must be released.
        if (use > 0) BarrierWait(empty + 8 * stage, (use - 1) & 1);
        LoadStage(tiles_a, tiles_b, a_block, b_block, M - m0, N - n0, K, stage, k_first + i,
                  loader);
        if (vector) {
          BarrierArriveOnCopies(full + 8 * stage);
        } else {
          BarrierArrive(full + 8 * stage);  // plain stores: released by the arrive
        }
      }
    }
    CpAsyncWait<0>();
    if (SPLIT_K > 1) {  // the cluster's two barriers of the reduction below
      ClusterSync();
      ClusterSync();
    }
    return;
  }

  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int group = warp / 4;
  int it = 0;  // stage uses so far, over every tile
  for (int tile = first_tile; tile < tiles; tile += tile_step) {
    int m0 = 0, n0 = 0;
    TileOrigin(M, N, tile, &m0, &n0);
    float acc[kAcc];
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
    for (int i = 0; i < k_tiles; ++i, ++it) {
      const int stage = it % STAGES;
      BarrierWait(full + 8 * stage, (it / STAGES) & 1);
      // cp.async wrote the tiles through the generic proxy; wgmma reads them
      // through the async one (as the bulk copies of LOAD=1 wrote them).
      if (LOAD == 0) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      if (kSwapped) {  // this warpgroup's 64 rows of weights, all the activations
        MmaStage(acc, SharedAddress(tiles_b + stage * kTileB + group * 64 * BLOCK_K),
                 SharedAddress(tiles_a + stage * kTileA));
      } else {
        MmaStage(acc, SharedAddress(tiles_a + stage * kTileA + group * 64 * BLOCK_K),
                 SharedAddress(tiles_b + stage * kTileB));
      }
      // The batch before this one is done (kInFlight = 1): its stage is free.
      if (i > 0) BarrierArrive(empty + 8 * ((it - 1) % STAGES));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    // The tile's last stage is free too (the producer may be waiting on it
    // for the next tile).
    if (k_tiles > 0) BarrierArrive(empty + 8 * ((it - 1) % STAGES));
    if (SPLIT_K > 1) {
      // Every load of this block was consumed and every wgmma is done: the
      // pipeline's memory holds this split's partial tile, which the first
      // block of the cluster adds to its own (thread t's i-th accumulator at
      // float i * kMathThreads + t, so that a warp's reads are contiguous).
      static_assert(SPLIT_K == 1 || 4 * BLOCK_M * BLOCK_N <= STAGES * (kTileA + kTileB) * 2,
                    "the partial tile fits in the pipeline's shared memory");
      float* const partial = reinterpret_cast<float*>(tiles_a);
      // Every warpgroup's wgmma reads of the pipeline are done before any
      // thread writes over it (each waited for its own batches only).
      MathBarrier();
      if (split != 0) {
#pragma unroll
        for (int i = 0; i < kAcc; ++i) partial[i * kMathThreads + tid] = acc[i];
      }
      ClusterSync();
      if (split == 0) {
        for (int rank = 1; rank < SPLIT_K; ++rank) {
          const u32 peer = PeerAddress(SharedAddress(partial), rank);
#pragma unroll
          for (int i = 0; i < kAcc; ++i) acc[i] += PeerLoad(peer + 4 * (i * kMathThreads + tid));
        }
      }
      ClusterSync();  // the peers' memory stays theirs until it was read
      if (split != 0) return;
    }
    if (kSwapped) {
      StoreSwapped(C, M, N, m0, n0, warp, lane, acc);
    } else if (EPILOGUE == 2) {
      StoreAccumulatorsTma(C_map, m0, n0, warp, lane, tid, staging, acc);
    } else {
      StoreAccumulators(C, M, N, m0, n0, warp, lane, tid, staging, acc);
    }
  }
  // The last tile's store is done before the block's memory goes.
  if (EPILOGUE == 2 && tid == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

#else  // MMA 1 or 2
static_assert(!kSwapped, "MMA=4 is warp-specialised");

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    gemm_f16(GEMM_PARAMS) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  half* const tiles_a = AlignedTiles(smem_raw);
  half* const tiles_b = tiles_a + STAGES * kTileA;

  int m0 = 0, n0 = 0;
  BlockTile(M, N, &m0, &n0);
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int group = warp / 4;

  const half* a_block = A + static_cast<size_t>(m0) * K;
  const half* b_block = B + static_cast<size_t>(n0) * K;
  const int rows_a = M - m0;
  const int rows_b = N - n0;
  const int k_tiles = (K + BLOCK_K - 1) / BLOCK_K;

  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;

  // Prefetch distance kPrefetch: the stage refilled in iteration k_tile was
  // last read by the wgmma batch of k_tile - 1 - kInFlight, which every
  // warpgroup has waited for before the barrier of this iteration.
#pragma unroll
  for (int s = 0; s < kPrefetch; ++s) {
    if (s < k_tiles) LoadStage(tiles_a, tiles_b, a_block, b_block, rows_a, rows_b, K, s, s, tid);
    CpAsyncCommit();
  }
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    CpAsyncWait<kPrefetch - 1>();
    // cp.async wrote through the generic proxy; wgmma reads through the async one.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int next = k_tile + kPrefetch;
    if (next < k_tiles) {
      LoadStage(tiles_a, tiles_b, a_block, b_block, rows_a, rows_b, K, next % STAGES, next, tid);
    }
    CpAsyncCommit();
    MmaStage(acc, SharedAddress(tiles_a + (k_tile % STAGES) * kTileA + group * 64 * BLOCK_K),
             SharedAddress(tiles_b + (k_tile % STAGES) * kTileB));
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  CpAsyncWait<0>();
  StoreAccumulators(C, M, N, m0, n0, warp, lane, tid, tiles_a, acc);
}

#endif  // MMA 3 or 4
#endif  // MMA

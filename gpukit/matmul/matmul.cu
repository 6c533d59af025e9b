// gpukit/kernels/matmul.cu: single-precision matrix multiplication, C = A @ B, in CUDA
// C.
//
// Loaded at run time by CuPy's RawModule (see gpukit/kernels/gemm.py); every kernel
// here is `extern "C"` so it can be fetched by its plain name.
//
// Conventions shared by every kernel:
//   * A is M x K, B is K x N, C is M x N, all row-major and densely packed
//     (the leading dimension of A is K, of B is N, of C is N);
//   * any M, N, K >= 1 works: loads outside the matrices read zeros into shared memory,
//     stores outside C are skipped;
//   * the `vec` argument (kernels 07 onwards) says that 16-byte (float4) loads and stores
//     are legal: K and N are multiples of 4 and the three pointers are 16-byte aligned.
//     With vec == 0 the same kernel falls back to one scalar load per element, so
//     correctness never depends on the shapes; only the speed does.
//
// The file needs no header: NVRTC (CuPy) compiles it as is. Kernels are numbered in the
// order the chapter docs/matmul.md introduces them.

// ----------------------------------------------------------------------------- helpers

// Element (row, col) of a row-major matrix with `rows` x `cols` elements and leading
// dimension `ld`, or 0 outside it. Zero padding makes partial tiles harmless: a zero in
// A or B adds nothing to any dot product.
__device__ __forceinline__ float load_or_zero(const float* __restrict__ p, int row, int col,
                                              int rows, int cols, int ld)
{
    return (row < rows && col < cols) ? p[(size_t)row * ld + col] : 0.0f;
}

// --8<-- [start:load4]
// Four consecutive elements (row, col..col+3), zeros outside the matrix. With `vec`
// set, cols is a multiple of 4 and col is too, so a group is either wholly inside or
// wholly outside and one 16-byte load fetches it; otherwise the fallback loads element
// by element.
__device__ __forceinline__ float4 load4(const float* __restrict__ p, int row, int col,
                                        int rows, int cols, int ld, int vec)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row >= rows) return v;
    const float* r = p + (size_t)row * ld;
    if (vec) {
        if (col < cols) v = *reinterpret_cast<const float4*>(r + col);
    } else {
        if (col + 0 < cols) v.x = r[col + 0];
        if (col + 1 < cols) v.y = r[col + 1];
        if (col + 2 < cols) v.z = r[col + 2];
        if (col + 3 < cols) v.w = r[col + 3];
    }
    return v;
}
// --8<-- [end:load4]

// Store four consecutive results, skipping those outside C.
__device__ __forceinline__ void store4(float* __restrict__ p, int row, int col, int rows,
                                      int cols, int ld, int vec, float4 v)
{
    if (row >= rows) return;
    float* r = p + (size_t)row * ld;
    if (vec) {
        if (col < cols) *reinterpret_cast<float4*>(r + col) = v;
    } else {
        if (col + 0 < cols) r[col + 0] = v.x;
        if (col + 1 < cols) r[col + 1] = v.y;
        if (col + 2 < cols) r[col + 2] = v.z;
        if (col + 3 < cols) r[col + 3] = v.w;
    }
}

// ----------------------------------------------------- 04: shared-memory tiling (CUDA C)

// --8<-- [start:smem]
// One output per thread, as in the naive kernel, but the block first copies a 32 x 32
// tile of A and of B into shared memory and every thread then reads its 32 operands
// from there. Each element loaded from global memory is used 32 times instead of once.
#define S04 32

extern "C" __global__ void __launch_bounds__(S04 * S04)
mm04_smem(const float* __restrict__ A, const float* __restrict__ B,
          float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[S04][S04];
    __shared__ float Bs[S04][S04];
    // tx is the column inside the tile: consecutive threads read consecutive addresses
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * S04 + ty;
    const int col = blockIdx.x * S04 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += S04) {
        As[ty][tx] = load_or_zero(A, row, k0 + tx, M, K, K);
        Bs[ty][tx] = load_or_zero(B, k0 + ty, col, K, N, N);
        // the tile is complete before anyone reads it
        __syncthreads();
#pragma unroll
        for (int k = 0; k < S04; ++k)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        // nobody overwrites it while others still read
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
// --8<-- [end:smem]

// ------------------------------------------------------------- 05: 1D register blocking

// --8<-- [start:blocktile1d]
// A 64 x 64 block tile, 512 threads, each computing a column of TM = 8 outputs. The
// value of B a thread reads from shared memory is reused for 8 multiply-adds held in
// registers, so shared-memory traffic per FMA drops about 8-fold compared with kernel
// 04.
#define BM05 64
#define BN05 64
#define BK05 8
#define TM05 8

extern "C" __global__ void __launch_bounds__((BM05 / TM05) * BN05)
mm05_blocktile1d(const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[BM05 * BK05];
    __shared__ float Bs[BK05 * BN05];
    const int tid = threadIdx.x;
    const int rowBase = blockIdx.y * BM05, colBase = blockIdx.x * BN05;
    // this thread's output column in the tile, and its group of TM rows
    const int tCol = tid % BN05;
    const int tRow = tid / BN05;
    // which element of the A tile and of the B tile this thread loads
    const int aRow = tid / BK05, aCol = tid % BK05;
    const int bRow = tid / BN05, bCol = tid % BN05;

    float acc[TM05] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK05) {
        As[aRow * BK05 + aCol] = load_or_zero(A, rowBase + aRow, k0 + aCol, M, K, K);
        Bs[bRow * BN05 + bCol] = load_or_zero(B, k0 + bRow, colBase + bCol, K, N, N);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK05; ++k) {
            const float b = Bs[k * BN05 + tCol];        // one shared load ...
#pragma unroll
            for (int i = 0; i < TM05; ++i)              // ... feeds TM multiply-adds
                acc[i] = fmaf(As[(tRow * TM05 + i) * BK05 + k], b, acc[i]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM05; ++i) {
        const int row = rowBase + tRow * TM05 + i, col = colBase + tCol;
        if (row < M && col < N) C[(size_t)row * N + col] = acc[i];
    }
}
// --8<-- [end:blocktile1d]

// ------------------------------------------------------------- 06: 2D register blocking

// --8<-- [start:blocktile2d]
// A 128 x 128 block tile, 256 threads, each computing an 8 x 8 square of outputs. Per
// step along k a thread loads 8 values of A and 8 of B into registers and does 64
// multiply-adds with them (an outer product): 16 shared loads for 64 FMAs instead of 8
// for 8.
#define BM06 128
#define BN06 128
#define BK06 8
#define TM06 8
#define TN06 8
#define NT06 ((BM06 / TM06) * (BN06 / TN06))

extern "C" __global__ void __launch_bounds__(NT06)
mm06_blocktile2d(const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[BM06 * BK06];
    __shared__ float Bs[BK06 * BN06];
    const int tid = threadIdx.x;
    const int rowBase = blockIdx.y * BM06, colBase = blockIdx.x * BN06;
    const int tRow = tid / (BN06 / TN06), tCol = tid % (BN06 / TN06);

    float acc[TM06 * TN06] = {0.0f};
    float regM[TM06], regN[TN06];
    for (int k0 = 0; k0 < K; k0 += BK06) {
        // 256 threads fill a 128 x 8 tile of A and an 8 x 128 tile of B, 4 each.
#pragma unroll
        for (int e = tid; e < BM06 * BK06; e += NT06)
            As[e] = load_or_zero(A, rowBase + e / BK06, k0 + e % BK06, M, K, K);
#pragma unroll
        for (int e = tid; e < BK06 * BN06; e += NT06)
            Bs[e] = load_or_zero(B, k0 + e / BN06, colBase + e % BN06, K, N, N);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK06; ++k) {
#pragma unroll
            for (int i = 0; i < TM06; ++i) regM[i] = As[(tRow * TM06 + i) * BK06 + k];
#pragma unroll
            for (int j = 0; j < TN06; ++j) regN[j] = Bs[k * BN06 + tCol * TN06 + j];
#pragma unroll
            for (int i = 0; i < TM06; ++i)
#pragma unroll
                for (int j = 0; j < TN06; ++j)
                    acc[i * TN06 + j] = fmaf(regM[i], regN[j], acc[i * TN06 + j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM06; ++i)
#pragma unroll
        for (int j = 0; j < TN06; ++j) {
            const int row = rowBase + tRow * TM06 + i, col = colBase + tCol * TN06 + j;
            if (row < M && col < N) C[(size_t)row * N + col] = acc[i * TN06 + j];
        }
}
// --8<-- [end:blocktile2d]

// ------------------------------------------------- 07: 16-byte loads, A transposed in smem

// --8<-- [start:vectorised]
// Kernel 06 with wider memory operations. Global loads and stores move 16 bytes
// (float4) per instruction, a quarter of the instructions. A is stored transposed in
// shared memory (As[k][m]), so the 8 values of A a thread needs at step k are
// contiguous and come in two 16-byte shared loads, like those of B.
#define BM07 128
#define BN07 128
#define BK07 8
#define TM07 8
#define TN07 8
#define NT07 ((BM07 / TM07) * (BN07 / TN07))

extern "C" __global__ void __launch_bounds__(NT07)
mm07_vectorised(const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C, int M, int N, int K, int vec)
{
    __shared__ __align__(16) float As[BK07 * BM07];     // transposed: As[k * BM + m]
    __shared__ __align__(16) float Bs[BK07 * BN07];
    const int tid = threadIdx.x;
    const int rowBase = blockIdx.y * BM07, colBase = blockIdx.x * BN07;
    const int tRow = tid / (BN07 / TN07), tCol = tid % (BN07 / TN07);
    // one float4 of A (row aRow, columns aCol..aCol+3) and one of B per thread and tile
    const int aRow = tid / (BK07 / 4), aCol = (tid % (BK07 / 4)) * 4;
    const int bRow = tid / (BN07 / 4), bCol = (tid % (BN07 / 4)) * 4;

    float acc[TM07 * TN07] = {0.0f};
    __align__(16) float regM[TM07];          // aligned: read and written as float4
    __align__(16) float regN[TN07];
    for (int k0 = 0; k0 < K; k0 += BK07) {
        const float4 a = load4(A, rowBase + aRow, k0 + aCol, M, K, K, vec);
        As[(aCol + 0) * BM07 + aRow] = a.x;             // transpose on the way in
        As[(aCol + 1) * BM07 + aRow] = a.y;
        As[(aCol + 2) * BM07 + aRow] = a.z;
        As[(aCol + 3) * BM07 + aRow] = a.w;
        *reinterpret_cast<float4*>(&Bs[bRow * BN07 + bCol]) =
            load4(B, k0 + bRow, colBase + bCol, K, N, N, vec);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK07; ++k) {
#pragma unroll
            for (int i = 0; i < TM07; i += 4)
                *reinterpret_cast<float4*>(&regM[i]) =
                    *reinterpret_cast<const float4*>(&As[k * BM07 + tRow * TM07 + i]);
#pragma unroll
            for (int j = 0; j < TN07; j += 4)
                *reinterpret_cast<float4*>(&regN[j]) =
                    *reinterpret_cast<const float4*>(&Bs[k * BN07 + tCol * TN07 + j]);
#pragma unroll
            for (int i = 0; i < TM07; ++i)
#pragma unroll
                for (int j = 0; j < TN07; ++j)
                    acc[i * TN07 + j] = fmaf(regM[i], regN[j], acc[i * TN07 + j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM07; ++i)
#pragma unroll
        for (int j = 0; j < TN07; j += 4)
            store4(C, rowBase + tRow * TM07 + i, colBase + tCol * TN07 + j, M, N, N, vec,
                   make_float4(acc[i * TN07 + j], acc[i * TN07 + j + 1],
                               acc[i * TN07 + j + 2], acc[i * TN07 + j + 3]));
}
// --8<-- [end:vectorised]

// ------------------------------------------------ 08/09: warp tiling and double buffering

// --8<-- [start:warptile]
// The block tile (BM x BN) is split among warps (WM x WN each), and each warp's tile
// into WMITER x WNITER sub-tiles of which every thread owns a TM x TN piece. Two things
// pay:
//  * the 32 threads of a warp read As/Bs at neighbouring addresses (16-byte loads, no
//    bank conflicts) and each value they load into registers feeds TN (or TM) FMAs per
//    sub-tile;
//  * double buffering: while the block computes on one shared-memory buffer, each
//    thread already holds the next tile's global loads in registers, so the wait for
//    DRAM overlaps the arithmetic, and one __syncthreads per tile suffices.
template <int BM, int BN, int BK, int WM, int WN, int WMITER, int WNITER,
          int TM, int TN, int vec>
__device__ __forceinline__ void warptile_body(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    int M, int N, int K)
{
    constexpr int NT = (BM / WM) * (BN / WN) * 32;      // threads per block
    constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;   // one warp sub-tile
    static_assert((WSUBM / TM) * (WSUBN / TN) == 32,
                  "a warp sub-tile needs 32 threads");
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "16-byte register loads");
    constexpr int LA = BM * BK / 4 / NT;                // float4 loads of A per thread
    constexpr int LB = BK * BN / 4 / NT;                // float4 loads of B per thread
    static_assert(LA * NT * 4 == BM * BK && LB * NT * 4 == BK * BN, "even load split");

    __shared__ __align__(16) float As[2][BK * BM];      // two buffers, A transposed
    __shared__ __align__(16) float Bs[2][BK * BN];

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int warpRow = warp / (BN / WN), warpCol = warp % (BN / WN);
    const int tRow = lane / (WSUBN / TN), tCol = lane % (WSUBN / TN);
    const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;

    float acc[WMITER * TM * WNITER * TN] = {0.0f};
    __align__(16) float regM[WMITER * TM];   // aligned: read and written as float4
    __align__(16) float regN[WNITER * TN];
    float4 stageA[LA], stageB[LB];                      // the next tile, in flight

    // Global -> registers for the tile starting at k0 (coalesced 16-byte loads) ...
    auto fetch = [&](int k0) {
#pragma unroll
        for (int l = 0; l < LA; ++l) {
            const int e = tid + l * NT;                 // which float4 of the A tile
            stageA[l] = load4(A, rowBase + e / (BK / 4), k0 + (e % (BK / 4)) * 4,
                              M, K, K, vec);
        }
#pragma unroll
        for (int l = 0; l < LB; ++l) {
            const int e = tid + l * NT;
            stageB[l] = load4(B, k0 + e / (BN / 4), colBase + (e % (BN / 4)) * 4,
                              K, N, N, vec);
        }
    };
    // ... and registers -> shared buffer `buf` (A transposed on the way).
    auto stash = [&](int buf) {
#pragma unroll
        for (int l = 0; l < LA; ++l) {
            const int e = tid + l * NT;
            const int m = e / (BK / 4), k = (e % (BK / 4)) * 4;
            As[buf][(k + 0) * BM + m] = stageA[l].x;
            As[buf][(k + 1) * BM + m] = stageA[l].y;
            As[buf][(k + 2) * BM + m] = stageA[l].z;
            As[buf][(k + 3) * BM + m] = stageA[l].w;
        }
#pragma unroll
        for (int l = 0; l < LB; ++l) {
            const int e = tid + l * NT;
            const int at = (e / (BN / 4)) * BN + (e % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[buf][at]) = stageB[l];
        }
    };

    const int tiles = (K + BK - 1) / BK;
    if (tiles > 0) {
        fetch(0);
        stash(0);
    }
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        if (t + 1 < tiles) fetch((t + 1) * BK);         // issue the next loads first
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; i += 4)
                    *reinterpret_cast<float4*>(&regM[wm * TM + i]) =
                        *reinterpret_cast<const float4*>(&As[cur][
                            k * BM + warpRow * WM + wm * WSUBM + tRow * TM + i]);
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    *reinterpret_cast<float4*>(&regN[wn * TN + j]) =
                        *reinterpret_cast<const float4*>(&Bs[cur][
                            k * BN + warpCol * WN + wn * WSUBN + tCol * TN + j]);
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j)
                    acc[i * WNITER * TN + j] =
                        fmaf(regM[i], regN[j], acc[i * WNITER * TN + j]);
        }
        // The other buffer was last read in iteration t - 1, before the barrier that
        // ended it, so it can be overwritten now without a second barrier.
        if (t + 1 < tiles) stash(cur ^ 1);
        __syncthreads();
    }

#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float* r = &acc[(wm * TM + i) * WNITER * TN + wn * TN + j];
                    store4(C, rowBase + warpRow * WM + wm * WSUBM + tRow * TM + i,
                           colBase + warpCol * WN + wn * WSUBN + tCol * TN + j,
                           M, N, N, vec, make_float4(r[0], r[1], r[2], r[3]));
                }
}

// 128 x 128 block, BK = 16, 8 warps of 64 x 32, 8 x 8 outputs per thread (2 x 2 pieces
// of 4 x 4). At most 128 registers per thread so that two blocks (16 warps) fit on an
// SM. `vec` is a template argument here, not a run-time flag: each kernel comes in a
// 16-byte version and a scalar one, and neither carries the other's code (and
// registers).
#define WARPTILE_KERNEL(name, nthreads, minblocks, vec, ...)                   \
    extern "C" __global__ void __launch_bounds__(nthreads, minblocks)          \
    name(const float* __restrict__ A, const float* __restrict__ B,             \
         float* __restrict__ C, int M, int N, int K)                           \
    {                                                                          \
        warptile_body<__VA_ARGS__, vec>(A, B, C, M, N, K);                     \
    }

WARPTILE_KERNEL(mm08_warptile, 256, 2, 1, 128, 128, 16, 64, 32, 2, 2, 4, 4)
WARPTILE_KERNEL(mm08_warptile_scalar, 256, 2, 0, 128, 128, 16, 64, 32, 2, 2, 4, 4)
// --8<-- [end:warptile]

// A smaller block (128 x 64, 4 warps, BK = 8): twice the blocks in the grid, so the
// last wave of blocks leaves fewer SMs idle, and more blocks per SM to hide latency.
WARPTILE_KERNEL(mm09_warptile_128x64, 128, 4, 1, 128, 64, 8, 64, 32, 2, 2, 4, 4)
WARPTILE_KERNEL(mm09_warptile_128x64_scalar, 128, 4, 0, 128, 64, 8, 64, 32, 2, 2, 4, 4)

// The same code with a 128 x 256 block tile and 16 x 8 outputs per thread: 128
// multiply-adds for every 6 shared-memory loads, at the price of one block (8 warps)
// per SM.
WARPTILE_KERNEL(mm10_warptile_128x256, 256, 1, 1, 128, 256, 8, 64, 64, 2, 2, 8, 4)
WARPTILE_KERNEL(mm10_warptile_128x256_scalar, 256, 1, 0, 128, 256, 8, 64, 64, 2, 2, 8, 4)

// Kernel 08 with BK = 8: half the registers for staging, twice the barriers per k.
WARPTILE_KERNEL(mm11_warptile_bk8, 256, 2, 1, 128, 128, 8, 64, 32, 2, 2, 4, 4)
WARPTILE_KERNEL(mm11_warptile_bk8_scalar, 256, 2, 0, 128, 128, 8, 64, 32, 2, 2, 4, 4)

// ------------------------------------------- 12: asynchronous copies, several stages

// --8<-- [start:pipelined]
// cp.async (compute capability 8.0 on) copies global memory straight into shared
// memory without passing through registers: the thread issues the copy and goes on.
// Kernel 12 keeps STAGES tiles in flight: while the block computes on one, the copies
// of the next STAGES - 1 are under way, and no register holds them on the way. A copy
// whose source lies outside the matrix writes zeros (a source size of 0 bytes).
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void copy_async4(float* dst, const float* src, bool inside)
{
    const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(at), "l"(src), "r"(inside ? 4 : 0));
}
__device__ __forceinline__ void copy_async16(float* dst, const float* src, bool inside)
{
    const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(at), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void copy_commit()
{
    asm volatile("cp.async.commit_group;\n");
}
template <int N> __device__ __forceinline__ void copy_wait()
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N));
}
#else   // the CPU emulator of the tests: plain copies, finished at once
__device__ __forceinline__ void copy_async4(float* dst, const float* src, bool inside)
{
    *dst = inside ? *src : 0.0f;
}
__device__ __forceinline__ void copy_async16(float* dst, const float* src, bool inside)
{
    for (int i = 0; i < 4; ++i) dst[i] = inside ? src[i] : 0.0f;
}
__device__ __forceinline__ void copy_commit() {}
template <int N> __device__ __forceinline__ void copy_wait() {}
#endif

// One block's work. EDGE: the block touches an edge of C or K is not a multiple of BK,
// so every copy checks its bounds; blocks inside skip the checks.
template <int BM, int BN, int BK, int WM, int WN, int WMITER, int WNITER, int TM,
          int TN, int STAGES, int VEC, bool EDGE>
__device__ __forceinline__ void pipelined_body(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    int M, int N, int K, float* As, float* Bs)
{
    constexpr int NT = (BM / WM) * (BN / WN) * 32;
    constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    constexpr int PA = BM + 4;          // row of the transposed A tile, padded
    constexpr int SA = BK * PA, SB = BK * BN;           // floats per stage
    static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "32 threads a warp sub-tile");
    static_assert(BM * BK % NT == 0 && BK * BN % (4 * NT) == 0, "even copy split");

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int warpRow = warp / (BN / WN), warpCol = warp % (BN / WN);
    const int tRow = lane / (WSUBN / TN), tCol = lane % (WSUBN / TN);
    const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;

    // Inside the matrices the copies need no checks, and each thread copies the same
    // rows and columns of every tile: column ka of A at rows ma + l * RA, and row
    // kb + l * RB of B at columns nb..nb+3. Their addresses are computed once; each
    // tile only moves them along k.
    constexpr int RA = NT / BK, RB = NT / (BN / 4);
    const int ka = tid % BK, ma = tid / BK;
    const int kb = tid / (BN / 4), nb = (tid % (BN / 4)) * 4;
    const float* pa = A + (size_t)(rowBase + ma) * K + ka;
    const float* pb = B + (size_t)kb * N + colBase + nb;
    const size_t stepA = (size_t)RA * K, stepB = (size_t)RB * N;

    // Issue the copies of the tile starting at k0 into stage `s`. A goes in element by
    // element, transposed (As[k][m]); B in 16-byte pieces when VEC allows.
    auto issue = [&](int k0, int s) {
        float* as = As + s * SA;
        float* bs = Bs + s * SB;
        if constexpr (!EDGE && VEC) {
            const float* p = pa + k0;
#pragma unroll
            for (int l = 0; l < BM * BK / NT; ++l, p += stepA)
                copy_async4(&as[ka * PA + ma + l * RA], p, true);
            p = pb + (size_t)k0 * N;
#pragma unroll
            for (int l = 0; l < BK * BN / 4 / NT; ++l, p += stepB)
                copy_async16(&bs[(kb + l * RB) * BN + nb], p, true);
        } else {
#pragma unroll
            for (int l = 0; l < BM * BK / NT; ++l) {
                const int e = tid + l * NT;
                const int m = e / BK, k = e % BK;
                const bool in = !EDGE || (rowBase + m < M && k0 + k < K);
                const float* src = &A[(size_t)(rowBase + m) * K + k0 + k];
                copy_async4(&as[k * PA + m], in ? src : A, in);
            }
#pragma unroll
            for (int l = 0; l < BK * BN / 4 / NT; ++l) {
                const int e = tid + l * NT;
                const int k = e / (BN / 4), n = (e % (BN / 4)) * 4;
                const int row = k0 + k, col = colBase + n;
                const float* src = &B[(size_t)row * N + col];
                if (VEC) {
                    const bool in = !EDGE || (row < K && col < N);
                    copy_async16(&bs[k * BN + n], in ? src : B, in);
                } else {
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const bool in = !EDGE || (row < K && col + i < N);
                        copy_async4(&bs[k * BN + n + i], in ? src + i : B, in);
                    }
                }
            }
        }
    };

    float acc[WMITER * TM * WNITER * TN] = {0.0f};
    __align__(16) float regM[WMITER * TM];
    __align__(16) float regN[WNITER * TN];

    const int tiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) issue(s * BK, s);
        copy_commit();                  // an empty group keeps the count in step
    }
    int cur = 0, next = STAGES - 1;     // stage computed on, stage copied into
    for (int t = 0; t < tiles; ++t) {
        copy_wait<STAGES - 2>();        // this thread's copies of tile t are in ...
        __syncthreads();                // ... and everybody's; stage `next` is free
        if (t + STAGES - 1 < tiles) issue((t + STAGES - 1) * BK, next);
        copy_commit();
        const float* as = As + cur * SA;
        const float* bs = Bs + cur * SB;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; i += 4)
                    *reinterpret_cast<float4*>(&regM[wm * TM + i]) =
                        *reinterpret_cast<const float4*>(
                            &as[k * PA + warpRow * WM + wm * WSUBM + tRow * TM + i]);
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    *reinterpret_cast<float4*>(&regN[wn * TN + j]) =
                        *reinterpret_cast<const float4*>(
                            &bs[k * BN + warpCol * WN + wn * WSUBN + tCol * TN + j]);
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j)
                    acc[i * WNITER * TN + j] =
                        fmaf(regM[i], regN[j], acc[i * WNITER * TN + j]);
        }
        cur = cur + 1 == STAGES ? 0 : cur + 1;
        next = next + 1 == STAGES ? 0 : next + 1;
    }
    copy_wait<0>();

#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float* r = &acc[(wm * TM + i) * WNITER * TN + wn * TN + j];
                    store4(C, rowBase + warpRow * WM + wm * WSUBM + tRow * TM + i,
                           colBase + warpCol * WN + wn * WSUBN + tCol * TN + j,
                           M, N, N, VEC, make_float4(r[0], r[1], r[2], r[3]));
                }
}

// The kernel: shared memory for all stages, then the checked or the unchecked body.
template <int BM, int BN, int BK, int WM, int WN, int WMITER, int WNITER, int TM,
          int TN, int STAGES, int VEC>
__device__ __forceinline__ void pipelined(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    int M, int N, int K)
{
    // The stages outgrow the 48 KiB a block may declare statically: they live in
    // dynamic shared memory, whose size the launch gives (pipelined_shared_bytes).
#if defined(__CUDA_ARCH__)
    extern __shared__ __align__(16) float smem[];
#else   // the CPU emulator
    static __align__(16) float smem[STAGES * BK * (BM + 4 + BN)];
#endif
    float* As = smem;
    float* Bs = smem + STAGES * BK * (BM + 4);
    const bool inside = (blockIdx.y + 1) * BM <= M && (blockIdx.x + 1) * BN <= N &&
                        K % BK == 0;
    if (inside)
        pipelined_body<BM, BN, BK, WM, WN, WMITER, WNITER, TM, TN, STAGES, VEC, false>(
            A, B, C, M, N, K, As, Bs);
    else
        pipelined_body<BM, BN, BK, WM, WN, WMITER, WNITER, TM, TN, STAGES, VEC, true>(
            A, B, C, M, N, K, As, Bs);
}

#define PIPELINED_KERNEL(name, nthreads, minblocks, vec, ...)                  \
    extern "C" __global__ void __launch_bounds__(nthreads, minblocks)          \
    name(const float* __restrict__ A, const float* __restrict__ B,             \
         float* __restrict__ C, int M, int N, int K)                           \
    {                                                                          \
        pipelined<__VA_ARGS__, vec>(A, B, C, M, N, K);                         \
    }

// 128 x 256 block tile, 8 warps of 64 x 64, 16 x 8 outputs per thread, BK = 16, three
// stages (74,496 bytes of shared memory).
PIPELINED_KERNEL(mm12_pipelined, 256, 1, 1, 128, 256, 16, 64, 64, 2, 2, 8, 4, 3)
PIPELINED_KERNEL(mm12_pipelined_scalar, 256, 1, 0, 128, 256, 16, 64, 64, 2, 2, 8, 4, 3)
// --8<-- [end:pipelined]

// Other shapes of kernel 12, timed side by side to choose its sizes; compiled only on
// request (-DMATMUL_TUNING), so that the ladder's module stays quick to build.
#if defined(MATMUL_TUNING)
#define PIPELINED_128x256(name, vec, bk, stages)                               \
    PIPELINED_KERNEL(name, 256, 1, vec, 128, 256, bk, 64, 64, 2, 2, 8, 4, stages)
PIPELINED_128x256(mm12b_pipelined_2stage, 1, 16, 2)
PIPELINED_128x256(mm12b_pipelined_2stage_scalar, 0, 16, 2)
PIPELINED_128x256(mm12c_pipelined_bk8, 1, 8, 3)
PIPELINED_128x256(mm12c_pipelined_bk8_scalar, 0, 8, 3)
PIPELINED_128x256(mm12d_pipelined_bk32, 1, 32, 2)
PIPELINED_128x256(mm12d_pipelined_bk32_scalar, 0, 32, 2)
PIPELINED_KERNEL(mm12e_pipelined_256x128, 256, 1, 1, 256, 128, 16, 64, 64, 2, 2, 8, 4, 2)
PIPELINED_KERNEL(mm12e_pipelined_256x128_scalar, 256, 1, 0,
                 256, 128, 16, 64, 64, 2, 2, 8, 4, 2)
#endif

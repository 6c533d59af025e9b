// Tensor-core matrix products for the chapter "Tensor cores": C = A @ W^T.
//
// A is M x K and W is N x K, both row-major (K contiguous, the layout of a linear
// layer's weights); C is M x N row-major. Inputs are bf16 (or fp8 e4m3 for the last
// kernel), every product is accumulated in fp32 and C is written as bf16.
//
//   tc_wmma      nvcuda::wmma 16x16x16 fragments, shared-memory tiles, any shape
//   tc_mma       mma.sync m16n8k16 fed by ldmatrix from swizzled shared memory,
//                filled by a cp.async pipeline of STAGES tiles (K % 8 == 0)
//   tc_wgmma     wgmma m64n256k16 fed by TMA, mbarriers, one producer warpgroup and
//                two consumer warpgroups, persistent over output tiles (sm_90a)
//   tc_wgmma_fp8 the same design on fp8 e4m3 inputs (m64n256k32), scaled in the
//                epilogue by the product of the two per-tensor scales
//
// The WMMA kernel needs the toolkit's <mma.h> and is compiled alone (with TC_WMMA
// defined); the others need no header at all: bf16 values are 16-bit integers to them,
// converted from fp32 by PTX's cvt.rn.

#ifdef TC_WMMA
#include <mma.h>
typedef __nv_bfloat16 bf16;

// --8<-- [start:wmma]
// A block of 256 threads (8 warps, 2 x 4) computes a 128 x 128 tile of C; each warp
// owns 64 x 32 of it: 4 x 2 accumulator fragments of 16 x 16 fp32 values.
#define WM_BM 128
#define WM_BN 128
#define WM_BK 32
#define WM_LD (WM_BK + 8)      // padded rows: 80 bytes, a multiple of 16 as wmma needs

extern "C" __global__ void __launch_bounds__(256)
tc_wmma(const bf16* __restrict__ A, const bf16* __restrict__ W, bf16* __restrict__ C,
        int M, int N, int K) {
    using namespace nvcuda;
    __shared__ __align__(32) bf16 sa[WM_BM * WM_LD];
    __shared__ __align__(32) bf16 sw[WM_BN * WM_LD];
    __shared__ __align__(32) float stage[8][16 * 16];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int wm = warp / 4, wn = warp % 4;
    int row0 = blockIdx.y * WM_BM, col0 = blockIdx.x * WM_BN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    bool vec = (K % 8 == 0);
    bf16 zero = __float2bfloat16(0.f);
    for (int k0 = 0; k0 < K; k0 += WM_BK) {
        // 128 rows x 32 columns = 512 chunks of 8 values per tile; 2 per thread.
        for (int c = threadIdx.x; c < 512; c += 256) {
            int r = c / 4, kk = (c % 4) * 8;
            const bf16* srcs[2] = {A, W};
            bf16* dsts[2] = {sa, sw};
            int lims[2] = {M - row0, N - col0};
            for (int t = 0; t < 2; t++) {
                bf16* d = dsts[t] + r * WM_LD + kk;
                const bf16* s = srcs[t] + (size_t)((t ? col0 : row0) + r) * K + k0 + kk;
                if (vec && r < lims[t] && k0 + kk + 8 <= K) {
                    *(uint4*)d = *(const uint4*)s;
                } else {
                    for (int e = 0; e < 8; e++)
                        d[e] = (r < lims[t] && k0 + kk + e < K) ? s[e] : zero;
                }
            }
        }
        __syncthreads();
        for (int kk = 0; kk < WM_BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb[2];
            for (int i = 0; i < 4; i++)
                wmma::load_matrix_sync(fa[i], sa + (wm * 64 + i * 16) * WM_LD + kk,
                                       WM_LD);
            for (int j = 0; j < 2; j++)     // W's rows are B's columns: col_major B
                wmma::load_matrix_sync(fb[j], sw + (wn * 32 + j * 16) * WM_LD + kk,
                                       WM_LD);
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 2; j++)
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
    }
    // Each fragment goes through this warp's 16 x 16 staging tile, then to C as bf16.
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++) {
            wmma::store_matrix_sync(stage[warp], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                int r = row0 + wm * 64 + i * 16 + e / 16;
                int c = col0 + wn * 32 + j * 16 + e % 16;
                if (r < M && c < N)
                    C[(size_t)r * N + c] = __float2bfloat16(stage[warp][e]);
            }
            __syncwarp();
        }
}
// --8<-- [end:wmma]

#else

typedef unsigned long long uint64_t;
typedef unsigned int uint32_t;
typedef unsigned short bf16;                 // the bits of a bfloat16

__device__ __forceinline__ bf16 to_bf16(float x) {          // round to nearest even
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    uint32_t r;                                  // lo in the low half: the lower address
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// --8<-- [start:mma]
// 128 x 256 tile of C per block of 8 warps (2 x 4, 64 x 64 each), BK = 32, STAGES deep.
// A shared-memory row holds 32 bf16 = 64 bytes = four 16-byte chunks. Chunk c of row r
// is stored at chunk c ^ ((r >> 1) & 3): the eight rows one ldmatrix reads then fall in
// eight different 16-byte slots of the 32 banks, so it runs without bank conflicts.
#define MM_BM 128
#define MM_BN 256
#define MM_BK 32
#define MM_STAGES 4
#define MM_TILE_A (MM_BM * MM_BK)
#define MM_TILE_W (MM_BN * MM_BK)

__device__ __forceinline__ int swz(int row, int chunk) {   // element offset of a chunk
    return row * MM_BK + ((chunk ^ ((row >> 1) & 3)) * 8);
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
    // 16 bytes from global to shared memory without passing through registers; with
    // valid == false nothing is read and the 16 bytes are filled with zeros
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4],
                                          uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_load_tile(bf16* sa, bf16* sw, const bf16* A,
                                              const bf16* W, int M, int N, int K,
                                              int row0, int col0, int k0) {
    for (int c = threadIdx.x; c < MM_BM * 4; c += 256) {       // 2 chunks of A each
        int r = c / 4, ch = c % 4, k = k0 + ch * 8;
        bool ok = row0 + r < M && k < K;
        cp_async16(sa + swz(r, ch), ok ? A + (size_t)(row0 + r) * K + k : A, ok);
    }
    for (int c = threadIdx.x; c < MM_BN * 4; c += 256) {       // 4 chunks of W each
        int r = c / 4, ch = c % 4, k = k0 + ch * 8;
        bool ok = col0 + r < N && k < K;
        cp_async16(sw + swz(r, ch), ok ? W + (size_t)(col0 + r) * K + k : W, ok);
    }
}

extern "C" __global__ void __launch_bounds__(256, 1)
tc_mma(const bf16* __restrict__ A, const bf16* __restrict__ W, bf16* __restrict__ C,
       int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    bf16* sa = (bf16*)smem;                                 // STAGES tiles of A
    bf16* sw = sa + MM_STAGES * MM_TILE_A;                  // STAGES tiles of W
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int wm = warp / 4, wn = warp % 4;
    int row0 = blockIdx.y * MM_BM, col0 = blockIdx.x * MM_BN;
    float acc[4][8][4] = {};                 // 4 m16 tiles x 8 n8 tiles x 4 values
    int nk = (K + MM_BK - 1) / MM_BK;
    #pragma unroll
    for (int s = 0; s < MM_STAGES - 1; s++) {               // fill the pipeline
        if (s < nk)
            mma_load_tile(sa + s * MM_TILE_A, sw + s * MM_TILE_W, A, W, M, N, K,
                          row0, col0, s * MM_BK);
        asm volatile("cp.async.commit_group;\n");
    }
    for (int kt = 0; kt < nk; kt++) {
        asm volatile("cp.async.wait_group %0;\n" :: "n"(MM_STAGES - 2));
        __syncthreads();      // tile kt has landed; everyone is done with tile kt - 1
        int next = kt + MM_STAGES - 1;
        if (next < nk) {
            int s = next % MM_STAGES;
            mma_load_tile(sa + s * MM_TILE_A, sw + s * MM_TILE_W, A, W, M, N, K,
                          row0, col0, next * MM_BK);
        }
        asm volatile("cp.async.commit_group;\n");
        const bf16* ta = sa + (kt % MM_STAGES) * MM_TILE_A;
        const bf16* tw = sw + (kt % MM_STAGES) * MM_TILE_W;
        #pragma unroll
        for (int ks = 0; ks < 2; ks++) {                    // two k16 steps per tile
            uint32_t af[4][4], bfr[4][4];
            #pragma unroll
            for (int i = 0; i < 4; i++) {
                int r = wm * 64 + i * 16 + lane % 16;
                ldmatrix_x4(af[i], ta + swz(r, ks * 2 + lane / 16));
            }
            #pragma unroll
            for (int j = 0; j < 4; j++) {   // each x4 load: two n8 tiles, both k halves
                int r = wn * 64 + j * 16 + lane % 8 + (lane / 16) * 8;
                ldmatrix_x4(bfr[j], tw + swz(r, ks * 2 + (lane / 8) % 2));
            }
            #pragma unroll
            for (int i = 0; i < 4; i++)
                #pragma unroll
                for (int j = 0; j < 8; j++)
                    mma_16816(acc[i][j], af[i], bfr[j / 2][(j % 2) * 2],
                              bfr[j / 2][(j % 2) * 2 + 1]);
        }
    }
    asm volatile("cp.async.wait_group 0;\n");
    // acc[i][j]: rows g and g + 8 of its m16 tile, columns 2t and 2t + 1 of its n8 tile
    int g = lane / 4, t = lane % 4;
    #pragma unroll
    for (int i = 0; i < 4; i++)
        #pragma unroll
        for (int j = 0; j < 8; j++)
            #pragma unroll
            for (int h = 0; h < 2; h++) {
                int r = row0 + wm * 64 + i * 16 + g + h * 8;
                int c = col0 + wn * 64 + j * 8 + t * 2;
                if (r >= M) continue;
                bf16* out = C + (size_t)r * N + c;
                if (c + 1 < N && N % 2 == 0) {
                    *(uint32_t*)out = pack_bf16x2(acc[i][j][h * 2],
                                                  acc[i][j][h * 2 + 1]);
                } else {
                    if (c < N) out[0] = to_bf16(acc[i][j][h * 2]);
                    if (c + 1 < N) out[1] = to_bf16(acc[i][j][h * 2 + 1]);
                }
            }
}
// --8<-- [end:mma]

// --8<-- [start:wgmma]
// Hopper: one producer warpgroup issues TMA copies of 128 x BK tiles of A and 256 x BK
// tiles of W into STAGES shared-memory slots; two consumer warpgroups each multiply
// 64 rows of the A tile by the W tile with wgmma (m64n256, 128 fp32 accumulators a
// thread). Two mbarriers per slot say "full" (the copy engine counts the bytes in)
// and "empty" (both consumers are done with it). Blocks stay resident and walk over
// output tiles (persistent), in groups of WG_GROUP tile-rows so that neighbouring
// blocks share tiles of W in L2.
#define WG_BM 128
#define WG_BN 256
#define WG_STAGES 4
#define WG_GROUP 16

struct __align__(64) TensorMap { uint64_t words[16]; };    // a CUtensorMap, opaque

__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n"
                 :: "r"(smem_addr(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(smem_addr(bar)), "r"(bytes));
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(smem_addr(bar)));
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, int parity) {
    asm volatile(
        "{\n.reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n}\n"
        :: "r"(smem_addr(bar)), "r"(parity));
}

__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* map,
                                            uint64_t* bar, int inner, int outer) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile"
        ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
        :: "r"(smem_addr(dst)), "l"((uint64_t)map), "r"(inner), "r"(outer),
           "r"(smem_addr(bar)) : "memory");
}

// A wgmma shared-memory descriptor for a K-major tile whose rows are 128 bytes, stored
// with the 128-byte swizzle TMA applies: start address, stride of 8 rows (1024 bytes),
// swizzle mode 1 (128 B) in bits 62-63. All fields count 16-byte units.
__device__ __forceinline__ uint64_t smem_desc(const void* p) {
    uint64_t addr = smem_addr(p);
    return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32)
           | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {      // until at most PENDING groups run
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(PENDING) : "memory");
}

__device__ __forceinline__ void wgmma_bf16(float (&d)[128], uint64_t desc_a,
                                          uint64_t desc_b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11,"
        "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23,"
        "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35,"
        "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59,"
        "%60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71,"
        "%72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83,"
        "%84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107,"
        "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119,"
        "%120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
          "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),
          "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
          "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
          "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]),
          "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
          "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
          "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),
          "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
          "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]),
          "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),
          "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]),
          "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]),
          "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]),
          "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),
          "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
          "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]),
          "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),
          "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_e4m3(float (&d)[128], uint64_t desc_a,
                                          uint64_t desc_b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11,"
        "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23,"
        "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35,"
        "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59,"
        "%60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71,"
        "%72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83,"
        "%84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107,"
        "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119,"
        "%120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
          "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),
          "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
          "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
          "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]),
          "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
          "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
          "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),
          "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
          "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]),
          "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),
          "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]),
          "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]),
          "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]),
          "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),
          "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
          "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]),
          "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),
          "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n,
                                            int& tm, int& tn) {
    int per_group = WG_GROUP * tiles_n;
    int first = (tile / per_group) * WG_GROUP;
    int rows = min(tiles_m - first, WG_GROUP);
    tm = first + (tile % per_group) % rows;
    tn = (tile % per_group) / rows;
}

// ELEM is 2 (bf16, BK = 64) or 1 (fp8 e4m3, BK = 128): either way a row is 128 bytes
// and one wgmma step covers 32 bytes of it.
template <int ELEM>
__device__ __forceinline__ void wgmma_gemm(const TensorMap* map_a,
                                           const TensorMap* map_w,
                                           bf16* __restrict__ C, int M, int N, int K,
                                           float scale) {
    constexpr int BK = 128 / ELEM;
    constexpr int TILE_A = WG_BM * 128, TILE_W = WG_BN * 128;     // bytes
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    // TMA's 128-byte swizzle needs 1024-byte aligned slots
    unsigned char* smem = (unsigned char*)(((size_t)smem_raw + 1023) & ~(size_t)1023);
    unsigned char* sa = smem;
    unsigned char* sw = smem + WG_STAGES * TILE_A;
    uint64_t* full = (uint64_t*)(sw + WG_STAGES * TILE_W);
    uint64_t* empty = full + WG_STAGES;
    int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < WG_STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 2 * 128);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    int tiles_m = (M + WG_BM - 1) / WG_BM, tiles_n = (N + WG_BN - 1) / WG_BN;
    int tiles = tiles_m * tiles_n, nk = (K + BK - 1) / BK;
    if (wg == 0) {
        // producer: one thread issues every copy
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            int s = 0, phase = 0;
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int tm, tn;
                tile_coords(tile, tiles_m, tiles_n, tm, tn);
                for (int kt = 0; kt < nk; kt++) {
                    mbar_wait(&empty[s], phase ^ 1);
                    mbar_expect_tx(&full[s], TILE_A + TILE_W);
                    tma_load_2d(sa + s * TILE_A, map_a, &full[s], kt * BK, tm * WG_BM);
                    tma_load_2d(sw + s * TILE_W, map_w, &full[s], kt * BK, tn * WG_BN);
                    if (++s == WG_STAGES) { s = 0; phase ^= 1; }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        int half = wg - 1;                       // which 64 rows of the tile
        int warp = tid / 32, lane = tid % 32;
        int s = 0, phase = 0;
        float d[128];
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, tm, tn);
            for (int kt = 0; kt < nk; kt++) {
                mbar_wait(&full[s], phase);
                wgmma_fence();
                unsigned char* ta = sa + s * TILE_A + half * 64 * 128;
                unsigned char* tw = sw + s * TILE_W;
                #pragma unroll
                for (int ks = 0; ks < 4; ks++) {
                    if (ELEM == 2)
                        wgmma_bf16(d, smem_desc(ta + ks * 32), smem_desc(tw + ks * 32),
                                   kt > 0 || ks > 0);
                    else
                        wgmma_e4m3(d, smem_desc(ta + ks * 32), smem_desc(tw + ks * 32),
                                   kt > 0 || ks > 0);
                }
                wgmma_commit();
                // keep this step's MMAs running; the previous step's are done, so
                // its slot goes back to the producer
                wgmma_wait<1>();
                if (kt > 0) mbar_arrive(&empty[(s + WG_STAGES - 1) % WG_STAGES]);
                if (++s == WG_STAGES) { s = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            mbar_arrive(&empty[(s + WG_STAGES - 1) % WG_STAGES]);
            // d[j]: n8 block j / 4; rows warp*16 + lane/4 (+8 for j % 4 >= 2);
            // columns 2 (lane % 4) and + 1
            int rbase = tm * WG_BM + half * 64 + warp * 16 + lane / 4;
            #pragma unroll
            for (int j = 0; j < 128; j += 4) {
                int c = tn * WG_BN + (j / 4) * 8 + (lane % 4) * 2;
                #pragma unroll
                for (int h = 0; h < 2; h++) {
                    int r = rbase + h * 8;
                    if (r >= M) continue;
                    float v0 = d[j + 2 * h] * scale, v1 = d[j + 2 * h + 1] * scale;
                    bf16* out = C + (size_t)r * N + c;
                    if (c + 1 < N && N % 2 == 0) {
                        *(uint32_t*)out = pack_bf16x2(v0, v1);
                    } else {
                        if (c < N) out[0] = to_bf16(v0);
                        if (c + 1 < N) out[1] = to_bf16(v1);
                    }
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(384, 1)
tc_wgmma(const __grid_constant__ TensorMap map_a,
         const __grid_constant__ TensorMap map_w,
         bf16* __restrict__ C, int M, int N, int K) {
    wgmma_gemm<2>(&map_a, &map_w, C, M, N, K, 1.0f);
}

extern "C" __global__ void __launch_bounds__(384, 1)
tc_wgmma_fp8(const __grid_constant__ TensorMap map_a,
             const __grid_constant__ TensorMap map_w, bf16* __restrict__ C,
             int M, int N, int K, const float* __restrict__ scales) {
    wgmma_gemm<1>(&map_a, &map_w, C, M, N, K, scales[0] * scales[1]);
}
// --8<-- [end:wgmma]

#endif

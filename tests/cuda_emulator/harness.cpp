// Runs the CUDA C kernels of gpukit/matmul/matmul.cu on the CPU, for tests without a GPU.
//
// Every CUDA thread of a block is a std::thread; __syncthreads() is a std::barrier;
// __shared__ arrays become function-local statics, which is right because blocks run one
// after another: the threads of one block are made once and run every block in turn, all
// of them waiting at a second barrier between two blocks (making the threads anew for each
// block cost more than the kernels, most of it in the system under AddressSanitizer). Built with -fsanitize=address, any read or write outside A, B, C or a
// shared array aborts the run: a CPU stand-in for compute-sanitizer's memcheck. It checks
// the index arithmetic and the bounds logic, not speed, and not the memory model.
//
// usage: harness KERNEL M N K VEC GX GY BX BY A.bin B.bin C.bin
//   A.bin, B.bin: float32 inputs; C.bin is written (NaN where a kernel wrote nothing).
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(16) float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
std::barrier<>* g_barrier = nullptr;

#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __syncthreads() g_barrier->arrive_and_wait()

#define MATMUL_TUNING    // the other shapes of kernel 12 too
#include "../../gpukit/matmul/matmul.cu"

using Kernel = std::function<void(const float*, const float*, float*, int, int, int, int)>;

static std::map<std::string, Kernel> kernels() {
    std::map<std::string, Kernel> k;
    k["mm04_smem"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm04_smem(a, b, c, m, n, kk); };
    k["mm05_blocktile1d"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm05_blocktile1d(a, b, c, m, n, kk); };
    k["mm06_blocktile2d"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm06_blocktile2d(a, b, c, m, n, kk); };
    k["mm07_vectorised"] = [](auto a, auto b, auto c, int m, int n, int kk, int v) { mm07_vectorised(a, b, c, m, n, kk, v); };
    k["mm08_warptile"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm08_warptile(a, b, c, m, n, kk); };
    k["mm08_warptile_scalar"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm08_warptile_scalar(a, b, c, m, n, kk); };
    k["mm09_warptile_128x64"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm09_warptile_128x64(a, b, c, m, n, kk); };
    k["mm09_warptile_128x64_scalar"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm09_warptile_128x64_scalar(a, b, c, m, n, kk); };
    k["mm10_warptile_128x256"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm10_warptile_128x256(a, b, c, m, n, kk); };
    k["mm10_warptile_128x256_scalar"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm10_warptile_128x256_scalar(a, b, c, m, n, kk); };
    k["mm11_warptile_bk8"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm11_warptile_bk8(a, b, c, m, n, kk); };
    k["mm11_warptile_bk8_scalar"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm11_warptile_bk8_scalar(a, b, c, m, n, kk); };
    k["mm12_pipelined"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12_pipelined(a, b, c, m, n, kk); };
    k["mm12_pipelined_scalar"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12_pipelined_scalar(a, b, c, m, n, kk); };
    k["mm12b_pipelined_2stage"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12b_pipelined_2stage(a, b, c, m, n, kk); };
    k["mm12b_pipelined_2stage_scalar"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12b_pipelined_2stage_scalar(a, b, c, m, n, kk); };
    k["mm12c_pipelined_bk8"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12c_pipelined_bk8(a, b, c, m, n, kk); };
    k["mm12c_pipelined_bk8_scalar"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12c_pipelined_bk8_scalar(a, b, c, m, n, kk); };
    k["mm12d_pipelined_bk32"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12d_pipelined_bk32(a, b, c, m, n, kk); };
    k["mm12d_pipelined_bk32_scalar"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12d_pipelined_bk32_scalar(a, b, c, m, n, kk); };
    k["mm12e_pipelined_256x128"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12e_pipelined_256x128(a, b, c, m, n, kk); };
    k["mm12e_pipelined_256x128_scalar"] = [](auto a, auto b, auto c, int m, int n, int kk, int) { mm12e_pipelined_256x128_scalar(a, b, c, m, n, kk); };
    return k;
}

static std::vector<float> read(const char* path, size_t n) {
    std::vector<float> v(n);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(v.data(), sizeof(float), n, f) != n) { std::fprintf(stderr, "cannot read %s\n", path); std::exit(2); }
    std::fclose(f);
    return v;
}

int main(int argc, char** argv) {
    if (argc != 13) { std::fprintf(stderr, "usage: harness KERNEL M N K VEC GX GY BX BY A B C\n"); return 2; }
    auto table = kernels();
    auto it = table.find(argv[1]);
    if (it == table.end()) { std::fprintf(stderr, "unknown kernel %s\n", argv[1]); return 2; }
    const int M = std::atoi(argv[2]), N = std::atoi(argv[3]), K = std::atoi(argv[4]), vec = std::atoi(argv[5]);
    gridDim.x = std::atoi(argv[6]); gridDim.y = std::atoi(argv[7]);
    blockDim.x = std::atoi(argv[8]); blockDim.y = std::atoi(argv[9]);
    // exact-size heap buffers: AddressSanitizer flags any access past their ends
    float* A = new float[(size_t)M * K];
    float* B = new float[(size_t)K * N];
    float* C = new float[(size_t)M * N];
    auto a = read(argv[10], (size_t)M * K), b = read(argv[11], (size_t)K * N);
    std::memcpy(A, a.data(), a.size() * sizeof(float));
    std::memcpy(B, b.data(), b.size() * sizeof(float));
    for (size_t i = 0; i < (size_t)M * N; ++i) C[i] = NAN;  // poison
    const unsigned nthreads = blockDim.x * blockDim.y;
    std::barrier<> bar(nthreads), between_blocks(nthreads);
    g_barrier = &bar;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < nthreads; ++t)
        threads.emplace_back([&, t] {
            threadIdx.x = t % blockDim.x; threadIdx.y = t / blockDim.x;
            for (unsigned by = 0; by < gridDim.y; ++by)
                for (unsigned bx = 0; bx < gridDim.x; ++bx) {
                    blockIdx.x = bx; blockIdx.y = by;
                    it->second(A, B, C, M, N, K, vec);
                    between_blocks.arrive_and_wait();   // the next block reuses the shared arrays
                }
        });
    for (auto& th : threads) th.join();
    FILE* f = std::fopen(argv[12], "wb");
    std::fwrite(C, sizeof(float), (size_t)M * N, f);
    std::fclose(f);
    delete[] A; delete[] B; delete[] C;
    return 0;
}

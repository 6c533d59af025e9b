// gpukit/ladder/ladder.cu: y = softmax(scale * x + bias) over each row, in CUDA C.
//
// x and y are R x C row-major float32 matrices, bias has C elements, scale is a scalar.
// Loaded at run time by CuPy's RawModule (gpukit/ladder/levels.py), which picks one
// template instance per row length with `name_expressions`. The file needs no header.
//
// Two kernels, one block of BLOCK threads per row (BLOCK a multiple of 32):
//   softmax_rows_regs  reads the row once into registers (float4 loads), reduces the max
//                      and the sum with warp shuffles, writes the row once. Needs C % 4 == 0,
//                      16-byte aligned x, y, bias, and C <= 4 * VEC * BLOCK.
//   softmax_rows_loop  any C: one pass keeps a running max and sum per thread (the
//                      "online" softmax), a second pass reads x again and writes y.

#define NEG_INF __int_as_float(0xff800000)

// ------------------------------------------------------------------ block reductions
// --8<-- [start:reduce]
__device__ __forceinline__ float warp_max(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Every thread of the block gets the max (or sum) over the block: each warp
// reduces with shuffles, warp results meet in shared memory, and warp 0 reduces
// those.
template <int BLOCK, bool MAX>
__device__ __forceinline__ float block_reduce(float v, float* shared)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / 32 ? shared[lane] : (MAX ? NEG_INF : 0.0f);
        v = MAX ? warp_max(v) : warp_sum(v);
        if (lane == 0) shared[32] = v;
    }
    __syncthreads();
    const float result = shared[32];
    __syncthreads();  // shared[] may be reused by the next reduction
    return result;
}
// --8<-- [end:reduce]

// ------------------------------------------------------------------ row kept in registers
// --8<-- [start:regs]
template <int BLOCK, int VEC>
__global__ void __launch_bounds__(BLOCK)
softmax_rows_regs(const float* __restrict__ x, const float* __restrict__ bias,
                  float scale, float* __restrict__ y, int C)
{
    __shared__ float shared[33];
    const int C4 = C / 4;  // float4 groups in a row
    const float4* xr = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * C);
    const float4* b4 = reinterpret_cast<const float4*>(bias);
    float4* yr = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * C);

    float4 z[VEC];  // this thread's share of the row, read from memory exactly once
    float m = NEG_INF;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
        const int k = threadIdx.x + i * BLOCK;
        if (k < C4) {
            const float4 v = xr[k], b = b4[k];
            z[i] = make_float4(scale * v.x + b.x, scale * v.y + b.y,
                               scale * v.z + b.z, scale * v.w + b.w);
            m = fmaxf(m, fmaxf(fmaxf(z[i].x, z[i].y), fmaxf(z[i].z, z[i].w)));
        }
    }
    m = block_reduce<BLOCK, true>(m, shared);

    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
        if (threadIdx.x + i * BLOCK < C4) {
            z[i].x = expf(z[i].x - m);
            z[i].y = expf(z[i].y - m);
            z[i].z = expf(z[i].z - m);
            z[i].w = expf(z[i].w - m);
            s += (z[i].x + z[i].y) + (z[i].z + z[i].w);
        }
    }
    const float inv = 1.0f / block_reduce<BLOCK, false>(s, shared);

#pragma unroll
    for (int i = 0; i < VEC; ++i) {
        const int k = threadIdx.x + i * BLOCK;
        if (k < C4)
            yr[k] = make_float4(z[i].x * inv, z[i].y * inv, z[i].z * inv, z[i].w * inv);
    }
}
// --8<-- [end:regs]

// ------------------------------------------------------------------ any row length
// --8<-- [start:loop]
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
softmax_rows_loop(const float* __restrict__ x, const float* __restrict__ bias, float scale,
                  float* __restrict__ y, int C)
{
    __shared__ float shared[33];
    const float* xr = x + (size_t)blockIdx.x * C;
    float* yr = y + (size_t)blockIdx.x * C;

    float m = NEG_INF, s = 0.0f;
    for (int j = threadIdx.x; j < C; j += BLOCK) {
        const float z = scale * xr[j] + bias[j];
        if (z > m) { s = s * expf(m - z) + 1.0f; m = z; }  // a new max: rescale the sum
        else       { s += expf(z - m); }
    }
    // The block's max first; every thread rescales its running sum to it before the sum.
    const float row_max = block_reduce<BLOCK, true>(m, shared);
    s = (m == NEG_INF) ? 0.0f : s * expf(m - row_max);
    const float inv = 1.0f / block_reduce<BLOCK, false>(s, shared);

    for (int j = threadIdx.x; j < C; j += BLOCK)
        yr[j] = expf(scale * xr[j] + bias[j] - row_max) * inv;
}
// --8<-- [end:loop]

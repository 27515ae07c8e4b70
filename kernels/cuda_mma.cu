/* The batch-invariant product of F16/BF16 weights with n fp32 token vectors, on the tensor
 * cores (mma.sync m16n8k16, fp32 accumulation): out[t][j] (+)= W[j] · x[t] for every t < n.
 *
 * Why a kernel of our own: greedy speculative decoding must write AR's text, so a token's
 * logits must not depend on how many tokens share its forward (a decode step has one, a
 * verification 2..k+1, a first round the whole prompt). cuBLAS picks a different algorithm
 * (tiling, split-K) per n, and the warp-per-row GEMV of a decode step sums in yet another
 * order, so a near-tie could flip between AR and SD (it did on an H100: TLI's text left AR's).
 * Here the arithmetic of one (row, token) pair is fixed by the row count and the width alone:
 *
 *   - a block owns 16·MT rows and 8·NTILE tokens; its MMA_WARPS warps split the columns into
 *     32-column chunks, warp w taking chunks w·U .. w·U+U-1, then w·U + MMA_WARPS·U, ... in
 *     increasing order, each chunk as two mma steps into the warp's fp32 accumulators;
 *   - the warps' partial sums are added in warp order (0 + p0 + p1 + ... + p7) in shared memory;
 *   - a token's column of an mma does not depend on the other seven columns, nor on the other
 *     token tile, so padding (tokens >= n are zeros) and the tile count change nothing; more than
 *     8·NTILE tokens go to further blocks along y, with the same arithmetic.
 * A decode step (n = 1) is the same kernel with seven zero columns: the weights are read once
 * either way, and a memory-bound product has the tensor-core work to spare.
 *
 * Activations are narrowed to the weights' type in registers (round to nearest even), as the
 * CPU's BF16 kernel does and as cuBLAS needed them, so no narrowing launch or scratch is used.
 *
 * The mma's k order inside one instruction is free, so a thread's 16-byte load of 8 adjacent
 * weights feeds it directly: in the chunk at column C, thread (g = lane/4, q = lane%4) loads
 * columns C+8q .. C+8q+7 of rows g and g+8 (and of token g's x), and the two mma steps take
 * columns C+8q+{0,1,2,3} and C+8q+{4,5,6,7} as their k slots {2q, 2q+1, 2q+8, 2q+9}. A and B
 * use the same slot map, so each step is a dot product over 16 real columns, and the four
 * threads of a row together cover the chunk's 32 columns once.
 *
 * Launched as a programmatic dependent of the kernel before it (sm_90+, hsd_cuda_use_pdl): the
 * weights do not depend on that kernel, so a block loads its first chunks into registers and
 * asks L2 for the rest of its share before it waits for its input (griddepcontrol.wait); the
 * decode step's many small products then overlap the tails of the kernels between them. */
#include "kernels/cuda_internal.cuh"

/* A block shape: WARPS warps split the columns, each loading U 32-column chunks before it
 * multiplies. */

template <bool BF16>
__device__ __forceinline__ unsigned mma_pack(float lo, float hi) {
    if (BF16) {
        __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); /* .x (low half) = lo */
        return *(const unsigned *)&v;
    }
    __half2 v = __floats2half2_rn(lo, hi);
    return *(const unsigned *)&v;
}

/* c += A·B for one m16n8k16 tile (A row-major 16×16, B column-major 16×8, fp32 c). */
template <bool BF16>
__device__ __forceinline__ void mma_16816(float c[4], unsigned a0, unsigned a1, unsigned a2,
                                          unsigned a3, unsigned b0, unsigned b1) {
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <bool BF16, int MT, int NTILE, int WARPS, int U>
__device__ __forceinline__ void mma_load_w(uint4 (&wv)[U][MT][2], const uint4 *const (&wrow)[MT][2],
                                           int32_t c0, int32_t n_chunks, int32_t cols, int q) {
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int32_t seg = (c0 + u) * 4 + q; /* 8-column segment: columns 8·seg .. +7 */
        const bool on = (c0 + u) < n_chunks && seg * 8 < cols;
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                wv[u][m][h] = on ? __ldg(wrow[m][h] + seg) : make_uint4(0, 0, 0, 0);
    }
}

template <bool BF16, int MT, int NTILE, int WARPS, int U>
__global__ static void __launch_bounds__(WARPS * 32)
    mma_gemm_kernel(float *out, int32_t ld_out, const unsigned short *W, int32_t rows,
                    int32_t cols, const float *x, int32_t n, bool accumulate) {
    __shared__ float part[WARPS][MT * NTILE * 4][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, q = lane & 3;
    const int32_t row0 = blockIdx.x * (16 * MT), tok0 = blockIdx.y * (8 * NTILE);
    const int32_t n_chunks = (cols + 31) / 32, stride = WARPS * U;
    /* this thread's rows (g and g+8 of each m-tile) and tokens (g of each n-tile); rows past
     * the end read row 0 and are never stored, tokens past n are zeros */
    const uint4 *wrow[MT][2];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int32_t r = row0 + m * 16 + g + 8 * h;
            wrow[m][h] = (const uint4 *)(W + (size_t)(r < rows ? r : 0) * cols);
        }
    /* before the wait: the first chunks into registers, the rest of this warp's share of the
     * rows into L2 (one request per 128-byte line: lane q = 0, every fourth segment) */
    uint4 wv[U][MT][2];
    mma_load_w<BF16, MT, NTILE, WARPS, U>(wv, wrow, warp * U, n_chunks, cols, q);
    if (q == 0)
        for (int32_t c0 = warp * U + stride; c0 < n_chunks; c0 += stride)
#pragma unroll
            for (int u = 0; u < U; u += 2)
                if (c0 + u < n_chunks)
#pragma unroll
                    for (int m = 0; m < MT; m++)
#pragma unroll
                        for (int h = 0; h < 2; h++)
                            asm volatile("prefetch.global.L2 [%0];" ::"l"(wrow[m][h] + (c0 + u) * 4));
    hsd_pdl_wait();
    const float4 *xrow[NTILE];
    bool xon[NTILE];
#pragma unroll
    for (int t = 0; t < NTILE; t++) {
        int32_t tok = tok0 + t * 8 + g;
        xon[t] = tok < n;
        xrow[t] = (const float4 *)(x + (size_t)(xon[t] ? tok : 0) * cols);
    }
    float acc[MT][NTILE][4];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int t = 0; t < NTILE; t++)
#pragma unroll
            for (int i = 0; i < 4; i++) acc[m][t][i] = 0.0f;

    for (int32_t c0 = warp * U; c0 < n_chunks; c0 += stride) {
        if (c0 != warp * U) mma_load_w<BF16, MT, NTILE, WARPS, U>(wv, wrow, c0, n_chunks, cols, q);
        float4 xv[U][NTILE][2];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int32_t seg = (c0 + u) * 4 + q;
            const bool on = (c0 + u) < n_chunks && seg * 8 < cols;
#pragma unroll
            for (int t = 0; t < NTILE; t++) {
                const bool xo = on && xon[t];
                xv[u][t][0] = xo ? __ldg(xrow[t] + 2 * seg) : make_float4(0, 0, 0, 0);
                xv[u][t][1] = xo ? __ldg(xrow[t] + 2 * seg + 1) : make_float4(0, 0, 0, 0);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int t = 0; t < NTILE; t++) {
                /* step A: columns +0..3 of the segment, step B: +4..7 */
                const unsigned bA0 = mma_pack<BF16>(xv[u][t][0].x, xv[u][t][0].y),
                               bA1 = mma_pack<BF16>(xv[u][t][0].z, xv[u][t][0].w),
                               bB0 = mma_pack<BF16>(xv[u][t][1].x, xv[u][t][1].y),
                               bB1 = mma_pack<BF16>(xv[u][t][1].z, xv[u][t][1].w);
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    const uint4 lo = wv[u][m][0], hi = wv[u][m][1];
                    mma_16816<BF16>(acc[m][t], lo.x, hi.x, lo.y, hi.y, bA0, bA1);
                    mma_16816<BF16>(acc[m][t], lo.z, hi.z, lo.w, hi.w, bB0, bB1);
                }
            }
        }
    }
    /* the warps' partial sums, added in warp order */
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int t = 0; t < NTILE; t++)
#pragma unroll
            for (int i = 0; i < 4; i++) part[warp][(m * NTILE + t) * 4 + i][lane] = acc[m][t][i];
    __syncthreads();
    for (int e = threadIdx.x; e < MT * NTILE * 4 * 32; e += blockDim.x) {
        const int el = e >> 5, l = e & 31;
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) s += part[w][el][l];
        const int m = el / (NTILE * 4), t = (el >> 2) % NTILE, i = el & 3;
        /* the accumulator layout of m16n8: c0,c1 row g, c2,c3 row g+8; columns 2q, 2q+1 */
        const int32_t row = row0 + m * 16 + (l >> 2) + (i >= 2 ? 8 : 0);
        const int32_t tok = tok0 + t * 8 + (l & 3) * 2 + (i & 1);
        if (row < rows && tok < n) {
            float *d = out + (size_t)tok * ld_out + row;
            *d = accumulate ? *d + s : s;
        }
    }
}

/* One launch, as a programmatic dependent when the device allows it. */
template <bool BF16, int MT, int NTILE, int WARPS, int U>
static cudaError_t mma_launch(hsd_cuda *cu, dim3 grid, float *out, int32_t ld_out,
                              const hsd_mat *w, const float *x, int32_t n, bool accumulate) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(WARPS * 32);
    cfg.stream = cu->stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = cu->pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, mma_gemm_kernel<BF16, MT, NTILE, WARPS, U>, out, ld_out,
                              (const unsigned short *)w->data, w->rows, w->cols, x, n, accumulate);
}

template <bool BF16, int WARPS, int U>
static cudaError_t mma_dispatch(hsd_cuda *cu, float *out, int32_t ld_out, const hsd_mat *w,
                                const float *x, int32_t n, bool accumulate, bool mt2) {
    /* one token tile of 8 while n <= 8, else tiles of 16 along y */
    const bool nt2 = n > 8;
    const int32_t rows_per = mt2 ? 32 : 16, toks_per = nt2 ? 16 : 8;
    dim3 grid((unsigned)((w->rows + rows_per - 1) / rows_per),
              (unsigned)((n + toks_per - 1) / toks_per));
    if (mt2)
        return nt2 ? mma_launch<BF16, 2, 2, WARPS, U>(cu, grid, out, ld_out, w, x, n, accumulate)
                   : mma_launch<BF16, 2, 1, WARPS, U>(cu, grid, out, ld_out, w, x, n, accumulate);
    return nt2 ? mma_launch<BF16, 1, 2, WARPS, U>(cu, grid, out, ld_out, w, x, n, accumulate)
               : mma_launch<BF16, 1, 1, WARPS, U>(cu, grid, out, ld_out, w, x, n, accumulate);
}

bool hsd_cuda_mma_fits(const hsd_mat *w) {
    return (w->type == HSD_DT_BF16 || w->type == HSD_DT_F16) && w->cols % 8 == 0;
}

hsd_status hsd_cuda_mma_gemm(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x,
                             int32_t n, const hsd_mat *w, bool accumulate) {
    if (!hsd_cuda_mma_fits(w))
        return hsd_error(HSD_ERR_INTERNAL, "cuda mma_gemm: weight type %d with %d columns",
                         (int)w->type, w->cols);
    /* two m-tiles per block where that still gives every multiprocessor two blocks (x is then
     * read half as often); every choice here depends on the matrix alone, never on n */
    const int sms = cu->sms > 0 ? cu->sms : 1;
    const bool mt2 = w->rows >= 2 * 32 * sms;
    const bool bf = w->type == HSD_DT_BF16;
    /* F16 always, and BF16 by default: 16 warps x 2 chunks, the fastest decode step of the
     * four shapes on an H100; benchmarks may fix another BF16 shape (HSD_CUDA_MMA) */
#define HSD_MMA_SHAPE(WARPS, U)                                                                    \
    (bf ? mma_dispatch<true, WARPS, U>(cu, d_out, ld_out, w, d_x, n, accumulate, mt2)              \
        : mma_dispatch<false, 16, 2>(cu, d_out, ld_out, w, d_x, n, accumulate, mt2))
    cudaError_t e = cu->mma_variant == 1   ? HSD_MMA_SHAPE(8, 4)
                    : cu->mma_variant == 2 ? HSD_MMA_SHAPE(4, 4)
                    : cu->mma_variant == 4 ? HSD_MMA_SHAPE(8, 2)
                                           : HSD_MMA_SHAPE(16, 2);
#undef HSD_MMA_SHAPE
    HSD_CU(e);
    HSD_CU_LAUNCHED("mma_gemm");
    return HSD_OK;
}

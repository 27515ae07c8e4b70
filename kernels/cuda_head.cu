/* LM-head kernels: the fused indexed head of speculative vocabularies (SpecVocab), and the
 * sampling steps that keep logits on the device (argmax, softmax, inverse-CDF sampling, the
 * speculative rejection step). References: plain loops in bench/gpu_bench.c. */
#include <float.h>

#include "kernels/cuda_internal.cuh"

#define HEAD_WARPS 8

/* Dot of one row (cols elements) with h in shared memory, by one warp: lane l reads 16-byte
 * chunks l, l+32, ... so the warp's loads of a row are contiguous (coalesced), and several
 * chunks are in flight per lane (unrolled). h is read as float4 pairs, which costs a 2-way
 * shared-memory bank conflict instead of the 8-way one of scalar loads. */
__device__ __forceinline__ float row_dot_bf16(const unsigned short *row, const float *h,
                                              int32_t cols, int lane, bool vec) {
    float s = 0.0f;
    if (vec) { /* cols % 8 == 0: uint4 = 8 bf16 */
        const uint4 *r4 = (const uint4 *)row;
        const float4 *h4 = (const float4 *)h;
#pragma unroll 4
        for (int32_t c = lane; c < cols / 8; c += 32) {
            uint4 u = __ldg(r4 + c);
            float4 a = h4[2 * c], b = h4[2 * c + 1];
            s += __uint_as_float(u.x << 16) * a.x + __uint_as_float(u.x & 0xffff0000u) * a.y;
            s += __uint_as_float(u.y << 16) * a.z + __uint_as_float(u.y & 0xffff0000u) * a.w;
            s += __uint_as_float(u.z << 16) * b.x + __uint_as_float(u.z & 0xffff0000u) * b.y;
            s += __uint_as_float(u.w << 16) * b.z + __uint_as_float(u.w & 0xffff0000u) * b.w;
        }
        return s;
    }
    for (int32_t c = lane; c < cols; c += 32) s += __uint_as_float((unsigned)row[c] << 16) * h[c];
    return s;
}

__device__ __forceinline__ float row_dot_f16(const unsigned short *row, const float *h,
                                             int32_t cols, int lane, bool vec) {
    float s = 0.0f;
    if (vec) {
        const uint4 *r4 = (const uint4 *)row;
        const float4 *h4 = (const float4 *)h;
#pragma unroll 4
        for (int32_t c = lane; c < cols / 8; c += 32) {
            uint4 u = __ldg(r4 + c);
            float4 a = h4[2 * c], b = h4[2 * c + 1];
            float2 f0 = __half22float2(*(const __half2 *)&u.x),
                   f1 = __half22float2(*(const __half2 *)&u.y);
            float2 f2 = __half22float2(*(const __half2 *)&u.z),
                   f3 = __half22float2(*(const __half2 *)&u.w);
            s += f0.x * a.x + f0.y * a.y + f1.x * a.z + f1.y * a.w;
            s += f2.x * b.x + f2.y * b.y + f3.x * b.z + f3.y * b.w;
        }
        return s;
    }
    for (int32_t c = lane; c < cols; c += 32) s += __half2float(__ushort_as_half(row[c])) * h[c];
    return s;
}

__device__ __forceinline__ float row_dot_f32(const float *row, const float *h, int32_t cols,
                                             int lane, bool vec) {
    float s = 0.0f;
    if (vec) { /* cols % 4 == 0: float4 */
        const float4 *r4 = (const float4 *)row, *h4 = (const float4 *)h;
#pragma unroll 4
        for (int32_t c = lane; c < cols / 4; c += 32) {
            float4 u = __ldg(r4 + c), a = h4[c];
            s += u.x * a.x + u.y * a.y + u.z * a.z + u.w * a.w;
        }
        return s;
    }
    for (int32_t c = lane; c < cols; c += 32) s += row[c] * h[c];
    return s;
}

/* Each block stages h in shared memory once, then its warps take selected rows in turn
 * (grid-stride), so every selected row of U is read exactly once from memory. Blocks along y
 * do the same for further vectors (h + y·cols into out + y·ld_out): the F32 product of several
 * tokens, each summed exactly as a lone token is (batch invariance). */
__global__ static void indexed_head_kernel(float *out, hsd_dtype t, const char *U, int32_t cols,
                                           const float *h, const int32_t *idx, int32_t k, bool vec,
                                           bool accumulate, int32_t ld_out) {
    extern __shared__ __align__(16) float hs[];
    h += (size_t)blockIdx.y * cols;
    out += (size_t)blockIdx.y * ld_out;
    for (int32_t c = threadIdx.x; c < cols; c += blockDim.x) hs[c] = h[c];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int32_t warp = blockIdx.x * HEAD_WARPS + (threadIdx.x >> 5);
    const int32_t stride = gridDim.x * HEAD_WARPS;
    const size_t row_bytes = (size_t)cols * (t == HSD_DT_F32 ? 4 : 2);
    for (int32_t j = warp; j < k; j += stride) {
        const char *row = U + (size_t)(idx ? idx[j] : j) * row_bytes;
        float s;
        if (t == HSD_DT_BF16)
            s = row_dot_bf16((const unsigned short *)row, hs, cols, lane, vec);
        else if (t == HSD_DT_F16)
            s = row_dot_f16((const unsigned short *)row, hs, cols, lane, vec);
        else
            s = row_dot_f32((const float *)row, hs, cols, lane, vec);
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) out[j] = accumulate ? out[j] + s : s;
    }
}

cudaError_t hsd_cuda_head_prepare(int bytes) {
    return cudaFuncSetAttribute(indexed_head_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                bytes);
}

/* Also the GEMV of hsd_cuda_matmul (idx NULL) for n tokens (grid y; n = 1 for the head),
 * which may add into out. */
hsd_status hsd_cuda_head_launch_n(hsd_cuda *cu, float *d_out, int32_t ld_out, const hsd_mat *U,
                                  const float *d_h, int32_t n, const int32_t *d_idx, int32_t k,
                                  bool accumulate) {
    hsd_status s = hsd_cuda_check_indexed_head(U, d_out, d_h, k, d_idx != NULL);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "indexed_head");
    size_t smem = (size_t)U->cols * sizeof(float);
    if (smem > (size_t)cu->max_smem)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "cuda indexed_head: d = %d needs %zu bytes of shared memory, the device "
                         "has %d per block",
                         U->cols, smem, cu->max_smem);
    /* 16-byte loads need 16-byte aligned rows: row bytes a multiple of 16 */
    bool vec = U->type == HSD_DT_F32 ? U->cols % 4 == 0 : U->cols % 8 == 0;
    int sms = cu->sms > 0 ? cu->sms : 1;
    /* enough blocks to fill the device several times over; each reuses its copy of h */
    int32_t blocks = (k + HEAD_WARPS - 1) / HEAD_WARPS;
    if (blocks > 8 * sms) blocks = 8 * sms;
    dim3 grid((unsigned)blocks, (unsigned)n);
    indexed_head_kernel<<<grid, HEAD_WARPS * 32, smem, cu->stream>>>(
        d_out, U->type, (const char *)U->data, U->cols, d_h, d_idx, k, vec, accumulate, ld_out);
    HSD_CU_LAUNCHED("indexed_head");
    return HSD_OK;
}

hsd_status hsd_cuda_head_launch(hsd_cuda *cu, float *d_out, const hsd_mat *U, const float *d_h,
                                const int32_t *d_idx, int32_t k, bool accumulate) {
    return hsd_cuda_head_launch_n(cu, d_out, k, U, d_h, 1, d_idx, k, accumulate);
}

extern "C" hsd_status hsd_cuda_indexed_head(hsd_cuda *cu, float *d_out, const hsd_mat *U,
                                            const float *d_h, const int32_t *d_idx, int32_t k) {
    return hsd_cuda_head_launch(cu, d_out, U, d_h, d_idx, k, false);
}

/* ---- several tokens: rows read once for all of them ----------------------------------- */

/* out[t][j] (+)= W[j]·x[t] for t < NT (<= 8): as the indexed head, a warp per row with
 * 16-byte loads, but every loaded chunk of the row is multiplied with all NT token vectors
 * (staged in shared memory), so the weights are read once per forward of NT tokens and x
 * stays fp32 (cuBLAS needs x narrowed to the weights' type). */
template <int NT>
__global__ static void rows_gemm_kernel(float *out, int32_t ld_out, hsd_dtype t, const char *W,
                                        int32_t rows, int32_t cols, const float *x, bool vec,
                                        bool accumulate) {
    extern __shared__ __align__(16) float xs[]; /* NT rows of cols floats */
    for (int32_t i = threadIdx.x; i < NT * cols; i += blockDim.x) xs[i] = x[i];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int32_t warp = blockIdx.x * HEAD_WARPS + (threadIdx.x >> 5);
    const int32_t stride = gridDim.x * HEAD_WARPS;
    const size_t row_bytes = (size_t)cols * (t == HSD_DT_F32 ? 4 : 2);
    for (int32_t j = warp; j < rows; j += stride) {
        const char *row = W + (size_t)j * row_bytes;
        float s[NT];
#pragma unroll
        for (int k = 0; k < NT; k++) s[k] = 0.0f;
        if (vec && t != HSD_DT_F32) { /* 8 halves per 16-byte chunk */
            const uint4 *r4 = (const uint4 *)row;
            for (int32_t c = lane; c < cols / 8; c += 32) {
                uint4 u = __ldg(r4 + c);
                const unsigned wu[4] = {u.x, u.y, u.z, u.w};
                float w[8];
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    if (t == HSD_DT_BF16) {
                        w[2 * k] = __uint_as_float(wu[k] << 16);
                        w[2 * k + 1] = __uint_as_float(wu[k] & 0xffff0000u);
                    } else {
                        w[2 * k] =
                            __half2float(__ushort_as_half((unsigned short)(wu[k] & 0xffffu)));
                        w[2 * k + 1] =
                            __half2float(__ushort_as_half((unsigned short)(wu[k] >> 16)));
                    }
                }
#pragma unroll
                for (int k = 0; k < NT; k++) {
                    const float4 *x4 = (const float4 *)(xs + (size_t)k * cols);
                    float4 a = x4[2 * c], b = x4[2 * c + 1];
                    s[k] += w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w + w[4] * b.x +
                            w[5] * b.y + w[6] * b.z + w[7] * b.w;
                }
            }
        } else if (vec) { /* F32, 4 per chunk */
            const float4 *r4 = (const float4 *)row;
            for (int32_t c = lane; c < cols / 4; c += 32) {
                float4 w = __ldg(r4 + c);
#pragma unroll
                for (int k = 0; k < NT; k++) {
                    float4 a = ((const float4 *)(xs + (size_t)k * cols))[c];
                    s[k] += w.x * a.x + w.y * a.y + w.z * a.z + w.w * a.w;
                }
            }
        } else {
            for (int32_t c = lane; c < cols; c += 32) {
                float w = hsd_dev_elem(t, row, c);
#pragma unroll
                for (int k = 0; k < NT; k++) s[k] += w * xs[(size_t)k * cols + c];
            }
        }
#pragma unroll
        for (int k = 0; k < NT; k++) {
            float v = s[k];
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            if (lane == 0) {
                float *dst = out + (size_t)k * ld_out + j;
                *dst = accumulate ? *dst + v : v;
            }
        }
    }
}

cudaError_t hsd_cuda_gemm_prepare(int bytes) {
    cudaError_t e = cudaSuccess;
#define HSD_GEMM_ATTR(NT)                                                                          \
    if (e == cudaSuccess)                                                                          \
        e = cudaFuncSetAttribute(rows_gemm_kernel<NT>,                                             \
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    HSD_GEMM_ATTR(2)
    HSD_GEMM_ATTR(3) HSD_GEMM_ATTR(4) HSD_GEMM_ATTR(5) HSD_GEMM_ATTR(6) HSD_GEMM_ATTR(7)
        HSD_GEMM_ATTR(8)
#undef HSD_GEMM_ATTR
            return e;
}

bool hsd_cuda_rows_gemm_fits(const hsd_cuda *cu, int32_t n, int32_t cols) {
    return n >= 2 && n <= 8 && (size_t)n * cols * sizeof(float) <= (size_t)cu->max_smem;
}

hsd_status hsd_cuda_rows_gemm(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x,
                              int32_t n, const hsd_mat *w, bool accumulate) {
    bool vec = w->type == HSD_DT_F32 ? w->cols % 4 == 0 : w->cols % 8 == 0;
    size_t smem = (size_t)n * w->cols * sizeof(float);
    int sms = cu->sms > 0 ? cu->sms : 1;
    int32_t blocks = (w->rows + HEAD_WARPS - 1) / HEAD_WARPS;
    if (blocks > 8 * sms) blocks = 8 * sms;
    const char *W = (const char *)w->data;
#define HSD_GEMM_CASE(NT)                                                                          \
    case NT:                                                                                       \
        rows_gemm_kernel<NT><<<blocks, HEAD_WARPS * 32, smem, cu->stream>>>(                       \
            d_out, ld_out, w->type, W, w->rows, w->cols, d_x, vec, accumulate);                    \
        break;
    switch (n) {
        HSD_GEMM_CASE(2)
        HSD_GEMM_CASE(3) HSD_GEMM_CASE(4) HSD_GEMM_CASE(5) HSD_GEMM_CASE(6) HSD_GEMM_CASE(7)
            HSD_GEMM_CASE(8) default
            : return hsd_error(HSD_ERR_INTERNAL, "cuda rows_gemm: %d tokens (2..8)", n);
    }
#undef HSD_GEMM_CASE
    HSD_CU_LAUNCHED("rows_gemm");
    return HSD_OK;
}

/* ---- top-k (router selection) ------------------------------------------------------ */

/* Order-preserving map of a float to an unsigned key (larger float, larger key). */
__device__ __forceinline__ unsigned order_key(float f) {
    unsigned u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__global__ static void topk_kernel(int32_t *idx, const float *x, int32_t V, int32_t k) {
    __shared__ unsigned hist[256];
    __shared__ unsigned prefix, mask;
    __shared__ int32_t remaining, n_out, n_tie;
    if (threadIdx.x == 0) prefix = 0, mask = 0, remaining = k, n_out = 0, n_tie = 0;
    /* radix select, 8 bits at a time from the top: keep the bin where the k-th largest is */
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
        __syncthreads();
        for (int32_t i = threadIdx.x; i < V; i += blockDim.x) {
            unsigned key = order_key(x[i]);
            if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int32_t rem = remaining;
            for (int b = 255; b >= 0; b--) {
                if ((int32_t)hist[b] >= rem) {
                    prefix |= (unsigned)b << shift;
                    mask |= 255u << shift;
                    remaining = rem; /* how many of this bin still to take */
                    break;
                }
                rem -= (int32_t)hist[b];
            }
        }
        __syncthreads();
    }
    /* prefix is now the k-th largest key: take everything above it and `remaining` equal */
    for (int32_t i = threadIdx.x; i < V; i += blockDim.x) {
        unsigned key = order_key(x[i]);
        if (key > prefix) {
            idx[atomicAdd(&n_out, 1)] = i;
        } else if (key == prefix && atomicAdd(&n_tie, 1) < remaining) {
            idx[atomicAdd(&n_out, 1)] = i;
        }
    }
}

extern "C" hsd_status hsd_cuda_topk(hsd_cuda *cu, int32_t *d_idx, const float *d_x, int32_t V,
                                    int32_t k) {
    hsd_status s = hsd_cuda_check_topk(d_idx, d_x, V, k);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "topk");
    topk_kernel<<<1, 1024, 0, cu->stream>>>(d_idx, d_x, V, k);
    HSD_CU_LAUNCHED("topk");
    return HSD_OK;
}

/* ---- sampling ---------------------------------------------------------------------- */

#define SAMPLE_THREADS 1024

/* argmax: one block per row; ties go to the lowest index as in a forward CPU scan. */
__global__ static void argmax_kernel(int32_t *out, const float *x, int32_t V) {
    __shared__ float bv[32];
    __shared__ int32_t bi[32];
    const float *row = x + (size_t)blockIdx.x * V;
    float best = -FLT_MAX;
    int32_t bidx = INT32_MAX;
    for (int32_t i = threadIdx.x; i < V; i += blockDim.x)
        if (row[i] > best) best = row[i], bidx = i; /* increasing i: first max kept */
    for (int o = 16; o > 0; o >>= 1) {
        float v2 = __shfl_xor_sync(0xffffffffu, best, o);
        int32_t i2 = __shfl_xor_sync(0xffffffffu, bidx, o);
        if (v2 > best || (v2 == best && i2 < bidx)) best = v2, bidx = i2;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) bv[warp] = best, bi[warp] = bidx;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++)
            if (bv[w] > best || (bv[w] == best && bi[w] < bidx)) best = bv[w], bidx = bi[w];
        out[blockIdx.x] = bidx == INT32_MAX ? 0 : bidx;
    }
}

extern "C" hsd_status hsd_cuda_argmax(hsd_cuda *cu, int32_t *d_out, const float *d_logits,
                                      int32_t n_rows, int32_t V) {
    hsd_status s = hsd_cuda_check_rows("argmax", d_logits, n_rows, V);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "argmax");
    if (!d_out) return hsd_error(HSD_ERR_INVALID_ARG, "cuda argmax: NULL out");
    argmax_kernel<<<n_rows, SAMPLE_THREADS, 0, cu->stream>>>(d_out, d_logits, V);
    HSD_CU_LAUNCHED("argmax");
    return HSD_OK;
}

__device__ static float block_reduce(float v, float *red, bool is_max) {
    for (int o = 16; o > 0; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < nw; w++) v = is_max ? fmaxf(v, red[w]) : v + red[w];
    return v;
}

/* hsd_softmax of x / temp, one block per row */
__global__ static void softmax_kernel(float *x, int32_t V, float inv_temp) {
    __shared__ float red[32];
    float *row = x + (size_t)blockIdx.x * V;
    float m = -FLT_MAX;
    for (int32_t i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, row[i] * inv_temp);
    m = block_reduce(m, red, true);
    float sum = 0.0f;
    for (int32_t i = threadIdx.x; i < V; i += blockDim.x) {
        float e = expf(row[i] * inv_temp - m);
        row[i] = e;
        sum += e;
    }
    sum = block_reduce(sum, red, false);
    float inv = 1.0f / sum;
    for (int32_t i = threadIdx.x; i < V; i += blockDim.x) row[i] *= inv;
}

extern "C" hsd_status hsd_cuda_softmax(hsd_cuda *cu, float *d_x, int32_t n_rows, int32_t V,
                                       float temp) {
    hsd_status s = hsd_cuda_check_rows("softmax", d_x, n_rows, V);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "softmax");
    if (!(temp > 0.0f))
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda softmax: temperature %g (must be > 0)",
                         (double)temp);
    softmax_kernel<<<n_rows, SAMPLE_THREADS, 0, cu->stream>>>(d_x, V, 1.0f / temp);
    HSD_CU_LAUNCHED("softmax");
    return HSD_OK;
}

/* Weight of token i: p[i], or the rejection residual max(0, p[i] - q[i]). */
__device__ __forceinline__ float weight_of(const float *p, const float *q, int32_t i) {
    return q ? fmaxf(p[i] - q[i], 0.0f) : p[i];
}

/* Inverse CDF in one block: thread j owns the contiguous chunk j of the vocabulary; chunk
 * sums are scanned in order, and the thread whose chunk holds the target walks it. Returns
 * the token in *out (last token with positive weight if rounding leaves the target beyond
 * the total). */
__device__ static void sample_block(int32_t *out, const float *p, const float *q, int32_t V,
                                    float u) {
    __shared__ float chunk[SAMPLE_THREADS];
    __shared__ float target;
    __shared__ int32_t found;
    const int32_t per = (V + blockDim.x - 1) / blockDim.x;
    const int32_t lo = threadIdx.x * per, hi = min(lo + per, V);
    float s = 0.0f;
    for (int32_t i = lo; i < hi; i++) s += weight_of(p, q, i);
    chunk[threadIdx.x] = s;
    if (threadIdx.x == 0) found = -1;
    __syncthreads();
    if (threadIdx.x == 0) { /* exclusive scan of the chunk sums */
        float acc = 0.0f;
        for (int j = 0; j < (int)blockDim.x; j++) {
            float c = chunk[j];
            chunk[j] = acc;
            acc += c;
        }
        target = u * acc;
    }
    __syncthreads();
    float start = chunk[threadIdx.x];
    if (lo < hi && start <= target && start + s > target) {
        float acc = start;
        int32_t pick = hi - 1;
        for (int32_t i = lo; i < hi; i++) {
            acc += weight_of(p, q, i);
            if (acc > target) {
                pick = i;
                break;
            }
        }
        atomicMax(&found, pick); /* only one chunk matches except at exact float edges */
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t r = found;
        if (r < 0) /* target at or past the total: the last token with weight */
            for (r = V - 1; r > 0 && !(weight_of(p, q, r) > 0.0f); r--) {
            }
        *out = r;
    }
}

__global__ static void sample_kernel(int32_t *out, const float *p, int32_t V, float u) {
    sample_block(out, p, NULL, V, u);
}

extern "C" hsd_status hsd_cuda_sample(hsd_cuda *cu, int32_t *d_out, const float *d_p, int32_t V,
                                      float u) {
    hsd_status s = hsd_cuda_check_rows("sample", d_p, 1, V);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "sample");
    if (!d_out || !(u >= 0.0f && u < 1.0f))
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda sample: NULL out or u = %g outside [0, 1)",
                         (double)u);
    sample_kernel<<<1, SAMPLE_THREADS, 0, cu->stream>>>(d_out, d_p, V, u);
    HSD_CU_LAUNCHED("sample");
    return HSD_OK;
}

__global__ static void reject_kernel(int32_t *out, const float *p, const float *q, int32_t V,
                                     int32_t x, float u_accept, float u_resample) {
    bool accept = u_accept * q[x] < p[x];
    if (accept) {
        if (threadIdx.x == 0) out[0] = 1, out[1] = x;
        return; /* uniform across the block: every thread returns */
    }
    sample_block(out + 1, p, q, V, u_resample);
    if (threadIdx.x == 0) out[0] = 0;
}

extern "C" hsd_status hsd_cuda_reject(hsd_cuda *cu, int32_t *d_out, const float *d_p,
                                      const float *d_q, int32_t V, int32_t x, float u_accept,
                                      float u_resample) {
    hsd_status s = hsd_cuda_check_rows("reject", d_p, 1, V);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "reject");
    if (!d_out || !d_q || x < 0 || x >= V)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "cuda reject: NULL out/q or draft token %d outside 0..%d", x, V - 1);
    reject_kernel<<<1, SAMPLE_THREADS, 0, cu->stream>>>(d_out, d_p, d_q, V, x, u_accept,
                                                        u_resample);
    HSD_CU_LAUNCHED("reject");
    return HSD_OK;
}

/* Multi-token and tree-masked attention over the device KV cache, split over positions
 * (flash decoding; the reference is attn_task in models/layer.c, and kernels/cuda_ops.h has
 * the contract). One kernel, in two steps:
 *   chunk:   one block per (KV head, token, chunk of hsd_cuda_attn_chunk(n_ctx) visible
 *            slots). The query heads that share the KV head go together, so each key and
 *            value is read once for all of them (GQA). Scores: a thread per slot, reading the
 *            key row in 16-byte pieces converted to fp32; softmax within the chunk: a warp per
 *            query head; values: groups of threads each sum a strided share of the slots over
 *            the whole head, then the groups' sums are added in order. Out go the chunk's max,
 *            sum of exponentials and unnormalised output, per query head.
 *   combine: the last of a token's chunk blocks to finish (a counter per token and KV head,
 *            which it resets) weighs the chunks by exp(max_s - max) in chunk order and divides
 *            by the weighed sum, for the query heads of its KV head, so there is no second
 *            launch; a token with one chunk has its block write the output directly, the same
 *            arithmetic with weight 1. (A separate combine kernel measured the same on an
 *            H200: bench/notes/gpu_h200_session21.md.)
 * Decode at depth (one token, few heads) thus spreads over the multiprocessors, where one
 * block per head left most of them idle, and no buffer grows with the context except the
 * cache itself. Every step's order is fixed by the slot indices and n_ctx, never by the
 * other tokens of the call. */
#include <float.h>

#include "kernels/cuda_internal.cuh"

#define ATTN_THREADS 128
#define ATTN_HB 4 /* query heads per pass over a chunk's rows (accumulators in registers) */

/* Visible slot i of token t: the cache (i < L), then the new tokens it may see, which start
 * at cache row L. */
__device__ __forceinline__ int32_t visible_slot(int32_t i, int32_t L, int32_t t, bool chain,
                                                const int32_t *anc, const int32_t *anc_off) {
    if (i < L) return i;
    return L + (chain ? i - L : anc[anc_off[t] + i - L]);
}

/* The visible slots of token t: [lo, nv) (a sliding window drops those before lo). */
__device__ __forceinline__ void visible_range(int32_t t, int32_t L, const int32_t *anc_off,
                                              int32_t window, int32_t *lo, int32_t *nv) {
    *nv = L + (anc_off == NULL ? t + 1 : anc_off[t + 1] - anc_off[t]);
    *lo = window > 0 && *nv > window ? *nv - window : 0;
}

/* E elements of a cache row from d on, as fp32: 16-byte loads where E = 8 */
template <typename T, int E>
__device__ __forceinline__ void kv_load(const T *row, int32_t d, float *o) {
    if (E == 8) {
        hsd_kv_get8(row + d, o);
    } else {
#pragma unroll
        for (int e = 0; e < E; e++) o[e] = hsd_kv_get(row + d + e);
    }
}

/* Shared memory of a chunk block: the group's queries, the chunk's scores (then weights) per
 * query head, the value groups' partial sums and each head's max and sum. */
static size_t chunk_smem_floats(int32_t kv_mul, int32_t hd, int32_t C, int E) {
    const int32_t groups = ATTN_THREADS / (hd / E);
    return (size_t)kv_mul * hd + (size_t)kv_mul * C + (size_t)groups * ATTN_HB * hd + 2 * (size_t)kv_mul;
}

/* out = sum_s exp(m_s - M) o_s / sum_s exp(m_s - M) l_s over chunks s0..s1 of token tt's
 * partials, for the kv_mul query heads from h0, the block's threads over (head, dimension);
 * read from L2 (__ldcg): other blocks wrote most of them */
__device__ static void attn_combine(float *out, const float *work, int32_t n_heads, int32_t hd,
                                    int32_t h0, int32_t kv_mul, int32_t tt, int32_t t, int32_t s0,
                                    int32_t s1, int32_t S) {
    const size_t wstride = (size_t)hd + 2;
    for (int32_t idx = threadIdx.x; idx < kv_mul * hd; idx += blockDim.x) {
        const int32_t h = h0 + idx / hd, d = idx % hd;
        const float *w = work + ((size_t)tt * n_heads + h) * S * wstride;
        float M = -FLT_MAX, sum = 0.0f, acc = 0.0f;
        for (int32_t s = s0; s <= s1; s++) M = fmaxf(M, __ldcg(w + s * wstride));
        for (int32_t s = s0; s <= s1; s++) {
            const float e = expf(__ldcg(w + s * wstride) - M);
            sum += e * __ldcg(w + s * wstride + 1);
            acc += e * __ldcg(w + s * wstride + 2 + d);
        }
        out[(size_t)t * n_heads * hd + (size_t)h * hd + d] = acc * (1.0f / sum);
    }
}

template <typename T, int E>
__global__ static void attn_chunk_kernel(float *out, float *work, int32_t *counters, const float *q,
                                         const T *kc, const T *vc,
                                         int32_t n_heads, int32_t kv_mul, int32_t hd, float scale,
                                         const int32_t *meta, const int32_t *anc,
                                         const int32_t *anc_off, int32_t window, int32_t C,
                                         int32_t S, int32_t t0) {
    extern __shared__ __align__(16) float sh[];
    __shared__ int is_last;
    hsd_pdl_trigger(); /* the o projection follows */
    const int32_t kvh = blockIdx.x, tt = blockIdx.y, t = t0 + tt, s = blockIdx.z, L = meta[0];
    const bool chain = anc_off == NULL;
    int32_t lo, nv;
    visible_range(t, L, anc_off, window, &lo, &nv);
    const int32_t a = s * C > lo ? s * C : lo, b = s * C + C < nv ? s * C + C : nv;
    if (a >= b) return; /* a chunk the token does not see: the combine skips it */
    const int32_t cnt = b - a, q_dim = n_heads * hd, kv_dim = (n_heads / kv_mul) * hd;
    /* the token's chunks; with one, this block writes the output itself */
    const int32_t s0 = lo / C, s1 = (nv - 1) / C;
    const bool one = s0 == s1;
    const int32_t per_row = hd / E, G = ATTN_THREADS / per_row;
    float *qs = sh, *ps = qs + (size_t)kv_mul * hd, *red = ps + (size_t)kv_mul * C;
    float *ml = red + (size_t)G * ATTN_HB * hd;
    const float *qh = q + (size_t)t * q_dim + (size_t)kvh * kv_mul * hd;
    for (int32_t i = threadIdx.x; i < kv_mul * hd; i += blockDim.x) qs[i] = qh[i];
    __syncthreads();
    const size_t koff = (size_t)kvh * hd;

    /* scores: a thread per slot, one FMA chain over the head dimension per query head, all
     * lanes reading the same query element (a shared-memory broadcast) */
    for (int32_t i = threadIdx.x; i < cnt; i += blockDim.x) {
        const T *kr = kc + (size_t)visible_slot(a + i, L, t, chain, anc, anc_off) * kv_dim + koff;
        for (int32_t h0 = 0; h0 < kv_mul; h0 += ATTN_HB) {
            float acc[ATTN_HB];
#pragma unroll
            for (int hh = 0; hh < ATTN_HB; hh++) acc[hh] = 0.0f;
#pragma unroll 4
            for (int32_t d = 0; d < hd; d += E) {
                float k[E];
                kv_load<T, E>(kr, d, k);
#pragma unroll
                for (int hh = 0; hh < ATTN_HB; hh++) {
                    if (h0 + hh >= kv_mul) break;
                    const float *qv = qs + (size_t)(h0 + hh) * hd + d;
#pragma unroll
                    for (int e = 0; e < E; e++) acc[hh] = fmaf(qv[e], k[e], acc[hh]);
                }
            }
#pragma unroll
            for (int hh = 0; hh < ATTN_HB; hh++)
                if (h0 + hh < kv_mul) ps[(size_t)(h0 + hh) * C + i] = acc[hh] * scale;
        }
    }
    __syncthreads();

    /* softmax within the chunk: a warp per query head (lane sums in slot order, then a
     * butterfly: a fixed order) */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int32_t h = warp; h < kv_mul; h += nw) {
        float *p = ps + (size_t)h * C, m = -FLT_MAX, sum = 0.0f;
        for (int32_t i = lane; i < cnt; i += 32) m = fmaxf(m, p[i]);
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        for (int32_t i = lane; i < cnt; i += 32) {
            const float e = expf(p[i] - m);
            p[i] = e;
            sum += e;
        }
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (lane == 0) ml[2 * h] = m, ml[2 * h + 1] = sum;
    }
    __syncthreads();

    /* values: group g takes slots g, g + G, ...; its thread d4 E dims of the head */
    const int32_t g = threadIdx.x / per_row, d0 = (threadIdx.x % per_row) * E;
    const size_t wstride = (size_t)hd + 2;
    for (int32_t h0 = 0; h0 < kv_mul; h0 += ATTN_HB) {
        const int32_t nh = kv_mul - h0 < ATTN_HB ? kv_mul - h0 : ATTN_HB;
        if (g < G) {
            float acc[ATTN_HB][E];
#pragma unroll
            for (int hh = 0; hh < ATTN_HB; hh++)
#pragma unroll
                for (int e = 0; e < E; e++) acc[hh][e] = 0.0f;
            /* four rows' loads in flight at a time (a row's latency, not its bytes, is
             * what a short chunk waits on); the terms are added in slot order either way */
            int32_t i = g;
            for (; i + 3 * G < cnt; i += 4 * G) {
                float v[4][E];
#pragma unroll
                for (int u = 0; u < 4; u++)
                    kv_load<T, E>(vc + (size_t)visible_slot(a + i + u * G, L, t, chain, anc, anc_off) * kv_dim + koff, d0, v[u]);
#pragma unroll
                for (int u = 0; u < 4; u++)
#pragma unroll
                    for (int hh = 0; hh < ATTN_HB; hh++) {
                        if (hh >= nh) break;
                        const float w = ps[(size_t)(h0 + hh) * C + i + u * G];
#pragma unroll
                        for (int e = 0; e < E; e++) acc[hh][e] = fmaf(w, v[u][e], acc[hh][e]);
                    }
            }
            for (; i < cnt; i += G) {
                const T *vr = vc + (size_t)visible_slot(a + i, L, t, chain, anc, anc_off) * kv_dim + koff;
                float v[E];
                kv_load<T, E>(vr, d0, v);
#pragma unroll
                for (int hh = 0; hh < ATTN_HB; hh++) {
                    if (hh >= nh) break;
                    const float w = ps[(size_t)(h0 + hh) * C + i];
#pragma unroll
                    for (int e = 0; e < E; e++) acc[hh][e] = fmaf(w, v[e], acc[hh][e]);
                }
            }
#pragma unroll
            for (int hh = 0; hh < ATTN_HB; hh++)
#pragma unroll
                for (int e = 0; e < E; e++) red[((size_t)g * ATTN_HB + hh) * hd + d0 + e] = acc[hh][e];
        }
        __syncthreads();
        for (int32_t idx = threadIdx.x; idx < nh * hd; idx += blockDim.x) {
            const int32_t hh = idx / hd, d = idx % hd, h = kvh * kv_mul + h0 + hh;
            float o = 0.0f;
            for (int32_t k = 0; k < G; k++) o += red[((size_t)k * ATTN_HB + hh) * hd + d];
            if (one) { /* the combine of one chunk: weight expf(0) = 1, so o * (1 / l) exactly */
                out[(size_t)t * q_dim + (size_t)h * hd + d] = o * (1.0f / ml[2 * (h0 + hh) + 1]);
                continue;
            }
            float *w = work + ((size_t)tt * n_heads + h) * S * wstride + (size_t)s * wstride;
            w[2 + d] = o;
            if (d == 0) w[0] = ml[2 * (h0 + hh)], w[1] = ml[2 * (h0 + hh) + 1];
        }
        __syncthreads();
    }
    if (one) return;

    /* the token's last chunk block to finish combines them: each thread's partials made
     * visible device-wide, then one arrival per block */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t *c = counters + (size_t)tt * (n_heads / kv_mul) + kvh;
        is_last = atomicAdd(c, 1) == s1 - s0;
        if (is_last) *c = 0; /* every other block of this call has arrived: ready for the next */
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    attn_combine(out, work, n_heads, hd, kvh * kv_mul, kv_mul, tt, t, s0, s1, S);
}

template <typename T, int E>
static cudaError_t chunk_prepare(int bytes) {
    return cudaFuncSetAttribute(attn_chunk_kernel<T, E>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

cudaError_t hsd_cuda_attn_prepare(int bytes) {
    cudaError_t e = chunk_prepare<float, 8>(bytes);
    if (e == cudaSuccess) e = chunk_prepare<float, 2>(bytes);
    if (e == cudaSuccess) e = chunk_prepare<__half, 8>(bytes);
    if (e == cudaSuccess) e = chunk_prepare<__half, 2>(bytes);
    if (e == cudaSuccess) e = chunk_prepare<__nv_bfloat16, 8>(bytes);
    if (e == cudaSuccess) e = chunk_prepare<__nv_bfloat16, 2>(bytes);
    return e;
}

template <typename T, int E>
static void launch_chunks(hsd_cuda *cu, dim3 grid, size_t smem, float *out, float *work,
                          int32_t *counters, const float *q,
                          const void *kc, const void *vc, int32_t n_heads, int32_t kv_mul,
                          int32_t hd, float scale, const int32_t *meta, const int32_t *anc,
                          const int32_t *anc_off, int32_t window, int32_t C, int32_t S,
                          int32_t t0) {
    attn_chunk_kernel<T, E><<<grid, ATTN_THREADS, smem, cu->stream>>>(
        out, work, counters, q, (const T *)kc, (const T *)vc, n_heads, kv_mul, hd, scale, meta, anc, anc_off,
        window, C, S, t0);
}

extern "C" hsd_status hsd_cuda_attn_work_init(hsd_cuda *cu, void *d_work, size_t work_bytes) {
    HSD_CU_NEED(cu, "attn_work_init");
    if (!d_work) return hsd_error(HSD_ERR_INVALID_ARG, "cuda attn_work_init: NULL buffer");
    HSD_CU(cudaMemsetAsync(d_work, 0, work_bytes, cu->stream));
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_attention(hsd_cuda *cu, float *d_out, const float *d_q,
                                         const void *d_kcache, const void *d_vcache,
                                         const hsd_cuda_attn_shape *shape, int32_t n,
                                         const int32_t *d_meta, const int32_t *d_anc,
                                         const int32_t *d_anc_off, void *d_work,
                                         size_t work_bytes) {
    hsd_status s = hsd_cuda_check_attention(shape, n, d_out, d_q, d_kcache, d_vcache, d_meta,
                                            d_anc_off == NULL, d_anc);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "attention");
    if ((s = hsd_cuda_check_attn_work(shape, d_work, work_bytes)) != HSD_OK) return s;
    const int32_t hd = shape->head_dim, kv_mul = shape->n_heads / shape->n_kv_heads;
    const int E = hd % 8 == 0 ? 8 : 2;
    if (hd / E > ATTN_THREADS)
        return hsd_error(HSD_ERR_UNSUPPORTED, "cuda attention: head_dim %d is too large", hd);
    const int32_t C = hsd_cuda_attn_chunk(shape->n_ctx), S = (shape->n_ctx + C - 1) / C;
    const size_t smem = chunk_smem_floats(kv_mul, hd, C, E) * sizeof(float);
    if (smem > (size_t)cu->max_smem)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "cuda attention: chunks of %d positions for %d query heads per KV head "
                         "need %zu bytes of shared memory, the device has %d per block (context %d)",
                         C, kv_mul, smem, cu->max_smem, shape->n_ctx);
    const float scale = 1.0f / sqrtf((float)hd);
    /* the tokens a group may hold: the counters for that many first, then their partials */
    const int32_t cap = hsd_cuda_attn_work_tokens(shape, work_bytes), TB = cap < n ? cap : n;
    int32_t *counters = (int32_t *)d_work;
    float *partials = (float *)((uint8_t *)d_work + hsd_cuda_attn_counter_bytes(shape, cap));
    for (int32_t t0 = 0; t0 < n; t0 += TB) {
        const int32_t nt = n - t0 < TB ? n - t0 : TB;
        const dim3 grid(shape->n_kv_heads, nt, S);
#define HSD_ATTN_LAUNCH(T)                                                                         \
    (E == 8 ? launch_chunks<T, 8> : launch_chunks<T, 2>)(cu, grid, smem, d_out, partials, counters, d_q, \
                                                         d_kcache, d_vcache, shape->n_heads,       \
                                                         kv_mul, hd, scale, d_meta, d_anc,         \
                                                         d_anc_off, shape->window, C, S, t0)
        if (shape->kv_type == HSD_DT_F16)
            HSD_ATTN_LAUNCH(__half);
        else if (shape->kv_type == HSD_DT_BF16)
            HSD_ATTN_LAUNCH(__nv_bfloat16);
        else
            HSD_ATTN_LAUNCH(float);
#undef HSD_ATTN_LAUNCH
        HSD_CU_LAUNCHED("attention");
    }
    return HSD_OK;
}

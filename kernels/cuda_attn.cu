/* Multi-token and tree-masked attention over the device KV cache (reference: attn_task in
 * models/layer.c with hsd_attn_scores, hsd_softmax and hsd_attn_accum). One block per
 * (new token, head). Decoding is latency-bound here (few blocks, rows scattered over the
 * cache), so the block keeps many independent loads in flight:
 *   scores: one thread per visible cache row, reading the row with VW-wide loads;
 *   softmax: block reductions over the scores kept in shared memory;
 *   values: threads split into groups, each group sums a strided share of the rows over the
 *           whole head (VW dims per thread), and the groups' partial sums are added at the end. */
#include <float.h>

#include "kernels/cuda_internal.cuh"

#define ATTN_THREADS 256

/* Visible slot i of token t: the cache (i < L), then the new tokens it may see, which start
 * at cache row L. */
__device__ __forceinline__ int32_t visible_slot(int32_t i, int32_t L, int32_t t, bool chain,
                                                const int32_t *anc, const int32_t *anc_off) {
    if (i < L) return i;
    return L + (chain ? i - L : anc[anc_off[t] + i - L]);
}

/* Block-wide max or sum, every thread gets the result. */
__device__ static float attn_reduce(float v, float *red, bool is_max) {
    for (int o = 16; o > 0; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads(); /* red may still be read from the previous reduction */
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < nw; w++) v = is_max ? fmaxf(v, red[w]) : v + red[w];
    return v;
}

/* VW = 4: float4 loads (head_dim % 4 == 0, rows 16-byte aligned); VW = 1 otherwise. */
template <int VW>
__global__ static void attention_kernel(float *out, const float *q, const float *kc,
                                        const float *vc, int32_t n_heads, int32_t kv_mul,
                                        int32_t hd, float scale, const int32_t *meta,
                                        const int32_t *anc, const int32_t *anc_off,
                                        int32_t window) {
    extern __shared__ __align__(16) float sh[];            /* q (hd floats), then the scores */
    __shared__ __align__(16) float part[ATTN_THREADS * 4]; /* value partial sums */
    __shared__ float red[32];
    hsd_pdl_trigger(); /* the o projection follows */
    const int32_t h = blockIdx.x, t = blockIdx.y, L = meta[0];
    const bool chain = anc_off == NULL;
    const int32_t q_dim = n_heads * hd, kv_dim = (n_heads / kv_mul) * hd;
    const int32_t nv = L + (chain ? t + 1 : anc_off[t + 1] - anc_off[t]);
    /* visible slot i holds position i (the cache, then the ancestors by depth): a sliding
     * window drops the slots before lo */
    const int32_t lo = window > 0 && nv > window ? nv - window : 0;
    float *qs = sh, *att = sh + hd;
    const float *qh = q + (size_t)t * q_dim + (size_t)h * hd;
    const size_t koff = (size_t)(h / kv_mul) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) qs[d] = qh[d];
    __syncthreads();

    /* scores: thread per row; all lanes read the same q element (a shared-memory broadcast) */
    float m = -FLT_MAX;
    for (int32_t i = lo + threadIdx.x; i < nv; i += blockDim.x) {
        const float *kr = kc + (size_t)visible_slot(i, L, t, chain, anc, anc_off) * kv_dim + koff;
        float s = 0.0f;
        if (VW == 4) {
            const float4 *k4 = (const float4 *)kr, *q4 = (const float4 *)qs;
#pragma unroll 8
            for (int d = 0; d < hd / 4; d++) {
                float4 a = __ldg(k4 + d), b = q4[d];
                s += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
            }
        } else {
            for (int d = 0; d < hd; d++) s += __ldg(kr + d) * qs[d];
        }
        att[i] = s * scale;
        m = fmaxf(m, s * scale);
    }
    m = attn_reduce(m, red, true);
    float sum = 0.0f;
    for (int32_t i = lo + threadIdx.x; i < nv; i += blockDim.x) {
        float e = expf(att[i] - m);
        att[i] = e;
        sum += e;
    }
    sum = attn_reduce(sum, red, false); /* its barriers also publish att[] */
    const float inv = 1.0f / sum;

    /* values: group g takes rows g, g + G, ...; thread d4 of the group VW dims of the head */
    const int per_row = hd / VW, G = blockDim.x / per_row;
    const int g = threadIdx.x / per_row, d4 = threadIdx.x % per_row;
    float acc[VW];
#pragma unroll
    for (int j = 0; j < VW; j++) acc[j] = 0.0f;
    if (g < G) {
#pragma unroll 4
        for (int32_t i = lo + g; i < nv; i += G) {
            const float *vr =
                vc + (size_t)visible_slot(i, L, t, chain, anc, anc_off) * kv_dim + koff;
            float a = att[i];
            if (VW == 4) {
                float4 v = __ldg((const float4 *)vr + d4);
                acc[0] += a * v.x;
                acc[1] += a * v.y;
                acc[2] += a * v.z;
                acc[3] += a * v.w;
            } else {
                acc[0] += a * __ldg(vr + d4);
            }
        }
#pragma unroll
        for (int j = 0; j < VW; j++) part[g * hd + d4 * VW + j] = acc[j];
    }
    __syncthreads();
    float *oh = out + (size_t)t * q_dim + (size_t)h * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float o = 0.0f;
        for (int k = 0; k < G; k++) o += part[k * hd + d];
        oh[d] = o * inv;
    }
}

cudaError_t hsd_cuda_attn_prepare(int bytes) {
    cudaError_t e = cudaFuncSetAttribute(attention_kernel<4>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(attention_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 bytes);
    return e;
}

extern "C" hsd_status hsd_cuda_attention(hsd_cuda *cu, float *d_out, const float *d_q,
                                         const float *d_kcache, const float *d_vcache,
                                         const hsd_cuda_attn_shape *shape, int32_t n,
                                         const int32_t *d_meta, const int32_t *d_anc,
                                         const int32_t *d_anc_off) {
    hsd_status s = hsd_cuda_check_attention(shape, n, d_out, d_q, d_kcache, d_vcache, d_meta,
                                            d_anc_off == NULL, d_anc);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "attention");
    const int32_t hd = shape->head_dim;
    const bool vec = hd % 4 == 0;
    /* a group of threads must cover one row of the head */
    if ((vec && hd / 4 > ATTN_THREADS) || (!vec && hd > ATTN_THREADS))
        return hsd_error(HSD_ERR_UNSUPPORTED, "cuda attention: head_dim %d is too large", hd);
    /* scores for every cache row plus the new ones: sized for the full context so a captured
     * graph does not depend on kv_len */
    size_t smem = (size_t)(hd + shape->n_ctx + n) * sizeof(float);
    if (smem > (size_t)cu->max_smem)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "cuda attention: a context of %d tokens needs %zu bytes of shared "
                         "memory, the device has %d per block",
                         shape->n_ctx, smem, cu->max_smem);
    dim3 grid(shape->n_heads, n);
    float scale = 1.0f / sqrtf((float)hd);
    int kv_mul = shape->n_heads / shape->n_kv_heads;
    if (vec)
        attention_kernel<4><<<grid, ATTN_THREADS, smem, cu->stream>>>(
            d_out, d_q, d_kcache, d_vcache, shape->n_heads, kv_mul, hd, scale, d_meta, d_anc,
            d_anc_off, shape->window);
    else
        attention_kernel<1><<<grid, ATTN_THREADS, smem, cu->stream>>>(
            d_out, d_q, d_kcache, d_vcache, shape->n_heads, kv_mul, hd, scale, d_meta, d_anc,
            d_anc_off, shape->window);
    HSD_CU_LAUNCHED("attention");
    return HSD_OK;
}

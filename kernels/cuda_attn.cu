/* Multi-token and tree-masked attention over the device KV cache (reference: attn_task in
 * models/transformer.c with hsd_attn_scores, hsd_softmax and hsd_attn_accum). One block per
 * (new token, head): its warps score the visible cache rows, the block takes the softmax in
 * shared memory, then each thread accumulates some of the head's dimensions. */
#include <float.h>

#include "kernels/cuda_internal.cuh"

#define ATTN_THREADS 128

/* Visible slot i of token t: the cache (i < L), then the new tokens it may see, which start
 * at cache row L. */
__device__ __forceinline__ int32_t visible_slot(int32_t i, int32_t L, int32_t t, bool chain,
                                                const int32_t *anc, const int32_t *anc_off) {
    if (i < L) return i;
    return L + (chain ? i - L : anc[anc_off[t] + i - L]);
}

__global__ static void attention_kernel(float *out, const float *q, const float *kc,
                                        const float *vc, int32_t n_heads, int32_t kv_mul,
                                        int32_t hd, float scale, const int32_t *meta,
                                        const int32_t *anc, const int32_t *anc_off) {
    extern __shared__ float sh[]; /* q (hd floats), then the scores */
    __shared__ float red[32];
    const int32_t h = blockIdx.x, t = blockIdx.y, L = meta[0];
    const bool chain = anc_off == NULL;
    const int32_t q_dim = n_heads * hd, kv_dim = (n_heads / kv_mul) * hd;
    const int32_t nv = L + (chain ? t + 1 : anc_off[t + 1] - anc_off[t]);
    float *qs = sh, *att = sh + hd;
    const float *qh = q + (size_t)t * q_dim + (size_t)h * hd;
    const size_t koff = (size_t)(h / kv_mul) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) qs[d] = qh[d];
    __syncthreads();

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int32_t i = warp; i < nv; i += nw) {
        const float *kr = kc + (size_t)visible_slot(i, L, t, chain, anc, anc_off) * kv_dim + koff;
        float s = 0.0f;
        for (int d = lane; d < hd; d += 32) s += qs[d] * kr[d];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) att[i] = s * scale;
    }
    __syncthreads();

    /* softmax: max, then exp and sum */
    float m = -FLT_MAX;
    for (int32_t i = threadIdx.x; i < nv; i += blockDim.x) m = fmaxf(m, att[i]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) red[warp] = m;
    __syncthreads();
    m = red[0];
    for (int w = 1; w < nw; w++) m = fmaxf(m, red[w]);
    __syncthreads();
    float sum = 0.0f;
    for (int32_t i = threadIdx.x; i < nv; i += blockDim.x) {
        float e = expf(att[i] - m);
        att[i] = e;
        sum += e;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) red[warp] = sum;
    __syncthreads();
    sum = 0.0f;
    for (int w = 0; w < nw; w++) sum += red[w];
    const float inv = 1.0f / sum;

    float *oh = out + (size_t)t * q_dim + (size_t)h * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float acc = 0.0f;
        for (int32_t i = 0; i < nv; i++)
            acc +=
                att[i] * vc[(size_t)visible_slot(i, L, t, chain, anc, anc_off) * kv_dim + koff + d];
        oh[d] = acc * inv;
    }
}

cudaError_t hsd_cuda_attn_prepare(int bytes) {
    return cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                bytes);
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
    /* scores for every cache row plus the new ones: sized for the full context so a captured
     * graph does not depend on kv_len */
    size_t smem = (size_t)(shape->head_dim + shape->n_ctx + n) * sizeof(float);
    if (smem > (size_t)cu->max_smem)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "cuda attention: a context of %d tokens needs %zu bytes of shared "
                         "memory, the device has %d per block",
                         shape->n_ctx, smem, cu->max_smem);
    dim3 grid(shape->n_heads, n);
    float scale = 1.0f / sqrtf((float)shape->head_dim);
    attention_kernel<<<grid, ATTN_THREADS, smem, cu->stream>>>(
        d_out, d_q, d_kcache, d_vcache, shape->n_heads, shape->n_heads / shape->n_kv_heads,
        shape->head_dim, scale, d_meta, d_anc, d_anc_off);
    HSD_CU_LAUNCHED("attention");
    return HSD_OK;
}

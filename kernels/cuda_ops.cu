/* Elementwise and GEMM kernels of the CUDA transformer: each mirrors the CPU function named
 * in its comment (kernels/cpu_ops.c), which is its reference in bench/gpu_bench.c. */
#include "kernels/cuda_internal.cuh"

/* Block-wide sum over blockDim.x threads (a multiple of 32, at most 1024). */
__device__ static float block_sum(float v, float *shared32) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); /* shared32 may still be read from a previous call */
    if (lane == 0) shared32[warp] = v;
    __syncthreads();
    int nw = blockDim.x >> 5;
    v = lane < nw ? shared32[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* hsd_rmsnorm: one block per row. */
__global__ static void rmsnorm_kernel(float *o, const float *x, const float *w, const int32_t *rows,
                                      int32_t dim, float eps) {
    __shared__ float red[32];
    hsd_pdl_trigger(); /* a product follows: let it fetch its weights meanwhile */
    int r = blockIdx.x;
    const float *xr = x + (size_t)(rows ? rows[r] : r) * dim;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
    ss = block_sum(ss, red);
    float scale = rsqrtf(ss / (float)dim + eps);
    float *orow = o + (size_t)r * dim;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) orow[i] = w[i] * (scale * xr[i]);
}

extern "C" hsd_status hsd_cuda_rmsnorm(hsd_cuda *cu, float *d_o, const float *d_x, const float *d_w,
                                       const int32_t *d_rows, int32_t n_rows, int32_t dim,
                                       float eps) {
    hsd_status s = hsd_cuda_check_rows("rmsnorm", d_x, n_rows, dim);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "rmsnorm");
    if (!d_o || !d_w) return hsd_error(HSD_ERR_INVALID_ARG, "cuda rmsnorm: NULL out or weight");
    rmsnorm_kernel<<<n_rows, 256, 0, cu->stream>>>(d_o, d_x, d_w, d_rows, dim, eps);
    HSD_CU_LAUNCHED("rmsnorm");
    return HSD_OK;
}

/* hsd_rope: one thread per (token, head, pair). */
__global__ static void rope_kernel(float *x, int32_t n_tok, int32_t stride, int32_t n_heads,
                                   int32_t head_dim, const int32_t *pos, const float *cos_t,
                                   const float *sin_t, bool interleaved) {
    int32_t half = head_dim / 2;
    int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n_tok * n_heads * half) return;
    int32_t i = (int32_t)(id % half), h = (int32_t)(id / half % n_heads);
    int32_t t = (int32_t)(id / ((int64_t)half * n_heads));
    float *v = x + (size_t)t * stride + (size_t)h * head_dim;
    float *a = interleaved ? &v[2 * i] : &v[i];
    float *b = interleaved ? &v[2 * i + 1] : &v[i + half];
    float c = cos_t[(size_t)pos[t] * half + i], s = sin_t[(size_t)pos[t] * half + i];
    float v0 = *a, v1 = *b;
    *a = v0 * c - v1 * s;
    *b = v0 * s + v1 * c;
}

extern "C" hsd_status hsd_cuda_rope(hsd_cuda *cu, float *d_x, int32_t n_tok, int32_t stride,
                                    int32_t n_heads, int32_t head_dim, const int32_t *d_pos,
                                    const float *d_cos, const float *d_sin, bool interleaved) {
    hsd_status s = hsd_cuda_check_rows("rope", d_x, n_tok, (int64_t)n_heads * head_dim);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "rope");
    if (head_dim % 2 || stride < n_heads * head_dim || !d_pos || !d_cos || !d_sin)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "cuda rope: head_dim %d (must be even), stride %d for %d heads, or NULL "
                         "positions/tables",
                         head_dim, stride, n_heads);
    int64_t total = (int64_t)n_tok * n_heads * (head_dim / 2);
    rope_kernel<<<hsd_blocks(total, 256), 256, 0, cu->stream>>>(
        d_x, n_tok, stride, n_heads, head_dim, d_pos, d_cos, d_sin, interleaved);
    HSD_CU_LAUNCHED("rope");
    return HSD_OK;
}

/* hsd_silu_mul */
__global__ static void silu_mul_kernel(float *gate, const float *up, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float g = gate[i];
        gate[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

extern "C" hsd_status hsd_cuda_silu_mul(hsd_cuda *cu, float *d_gate, const float *d_up, int64_t n) {
    hsd_status s = hsd_cuda_check_rows("silu_mul", d_gate, 1, n);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "silu_mul");
    if (!d_up) return hsd_error(HSD_ERR_INVALID_ARG, "cuda silu_mul: NULL up");
    silu_mul_kernel<<<hsd_blocks(n, 256), 256, 0, cu->stream>>>(d_gate, d_up, n);
    HSD_CU_LAUNCHED("silu_mul");
    return HSD_OK;
}

/* hsd_add, and the per-row bias of Qwen2's q/k/v projections */
__global__ static void add_kernel(float *x, const float *y, int64_t n, int32_t cols, int32_t ld) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (cols > 0)
        x[(i / cols) * ld + i % cols] += y[i % cols];
    else
        x[i] += y[i];
}

extern "C" hsd_status hsd_cuda_add(hsd_cuda *cu, float *d_x, const float *d_y, int64_t n) {
    hsd_status s = hsd_cuda_check_rows("add", d_x, 1, n);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "add");
    if (!d_y) return hsd_error(HSD_ERR_INVALID_ARG, "cuda add: NULL y");
    add_kernel<<<hsd_blocks(n, 256), 256, 0, cu->stream>>>(d_x, d_y, n, 0, 0);
    HSD_CU_LAUNCHED("add");
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_add_bias(hsd_cuda *cu, float *d_x, const float *d_b, int32_t n_rows,
                                        int32_t cols, int32_t ld) {
    hsd_status s = hsd_cuda_check_rows("add_bias", d_x, n_rows, cols);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "add_bias");
    if (!d_b || ld < cols)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda add_bias: NULL bias or stride %d < %d", ld,
                         cols);
    int64_t n = (int64_t)n_rows * cols;
    add_kernel<<<hsd_blocks(n, 256), 256, 0, cu->stream>>>(d_x, d_b, n, cols, ld);
    HSD_CU_LAUNCHED("add_bias");
    return HSD_OK;
}

/* hsd_mat_rows_f32 of the embedding rows of the new tokens */
__global__ static void embed_kernel(float *out, hsd_dtype t, const char *emb, size_t row_bytes,
                                    const int32_t *tokens, int32_t cols) {
    int32_t r = blockIdx.x;
    const char *row = emb + (size_t)tokens[r] * row_bytes;
    for (int i = threadIdx.x; i < cols; i += blockDim.x)
        out[(size_t)r * cols + i] = hsd_dev_elem(t, row, i);
}

extern "C" hsd_status hsd_cuda_embed(hsd_cuda *cu, float *d_out, const hsd_mat *emb,
                                     const int32_t *d_tokens, int32_t n) {
    hsd_status s = hsd_cuda_check_mat("embed", emb);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "embed");
    if (!d_out || !d_tokens || n <= 0)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda embed: NULL out/tokens or n = %d", n);
    embed_kernel<<<n, 256, 0, cu->stream>>>(d_out, emb->type, (const char *)emb->data,
                                            hsd_dtype_row_bytes(emb->type, emb->cols), d_tokens,
                                            emb->cols);
    HSD_CU_LAUNCHED("embed");
    return HSD_OK;
}

/* fp32 activations narrowed to the weights' half type, since cublasGemmEx multiplies two
 * matrices of one type (accumulating in fp32). */
__global__ static void narrow_kernel(unsigned short *out, const float *x, int64_t n, bool bf16) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x[i]))
                  : __half_as_ushort(__float2half_rn(x[i]));
}

/* hsd_matmul_rows over all rows: W is row-major [rows][cols], which cuBLAS (column-major)
 * sees as W^T with leading dimension cols; out^T (rows × n, ld_out) = op_T(W^T) · x^T.
 * accumulate: out += W·x (cuBLAS beta = 1), which saves the residual add of the forward. */
static hsd_status matmul(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x, int32_t n,
                         const hsd_mat *w, void *d_xh, bool accumulate) {
    hsd_status s = hsd_cuda_check_matmul(w, d_out, ld_out, d_x, n, d_xh);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "matmul");
    /* By default every product is batch-invariant: a token's result does not depend on n, so
     * a verification forward gives each row the logits a decode step would (greedy SD = AR).
     * F16/BF16: the tensor-core kernel for every n; F32 (tiny models): the warp-per-row GEMV
     * once per token. cuBLAS (per-n algorithms) and the fp32 warp GEMM on request. */
    if (!cu->cublas_gemv) {
        if (cu->warp_gemm && n >= 2 && hsd_cuda_rows_gemm_fits(cu, n, w->cols))
            return hsd_cuda_rows_gemm(cu, d_out, ld_out, d_x, n, w, accumulate);
        if (hsd_cuda_mma_fits(w)) return hsd_cuda_mma_gemm(cu, d_out, ld_out, d_x, n, w, accumulate);
        if ((size_t)w->cols * sizeof(float) <= (size_t)cu->max_smem)
            return hsd_cuda_head_launch_n(cu, d_out, ld_out, w, d_x, n, NULL, w->rows, accumulate);
    }
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    if (w->type == HSD_DT_F32) {
        HSD_BLAS(cu->api.sgemm(cu->blas, CUBLAS_OP_T, CUBLAS_OP_N, w->rows, n, w->cols, &one,
                               (const float *)w->data, w->cols, d_x, w->cols, &beta, d_out,
                               ld_out));
        return HSD_OK;
    }
    bool bf16 = w->type == HSD_DT_BF16;
    int64_t nx = (int64_t)n * w->cols;
    narrow_kernel<<<hsd_blocks(nx, 256), 256, 0, cu->stream>>>((unsigned short *)d_xh, d_x, nx,
                                                               bf16);
    HSD_CU_LAUNCHED("narrow");
    cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    HSD_BLAS(cu->api.gemm_ex(cu->blas, CUBLAS_OP_T, CUBLAS_OP_N, w->rows, n, w->cols, &one, w->data,
                             t, w->cols, d_xh, t, w->cols, &beta, d_out, CUDA_R_32F, ld_out,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_matmul(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x,
                                      int32_t n, const hsd_mat *w, void *d_xh) {
    return matmul(cu, d_out, ld_out, d_x, n, w, d_xh, false);
}

extern "C" hsd_status hsd_cuda_matmul_add(hsd_cuda *cu, float *d_out, int32_t ld_out,
                                          const float *d_x, int32_t n, const hsd_mat *w,
                                          void *d_xh) {
    return matmul(cu, d_out, ld_out, d_x, n, w, d_xh, true);
}

/* hsd_rmsnorm of each q and k head: one warp per (token, head), the head's sum of squares by a
 * warp reduction. */
__global__ static void head_norm_kernel(float *qkv, int32_t n, int32_t n_heads, int32_t n_kv,
                                        int32_t hd, const float *qn, const float *kn, float eps) {
    const int32_t heads = n_heads + n_kv, width = (n_heads + 2 * n_kv) * hd;
    const int32_t wid = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (wid >= n * heads) return;
    const int32_t t = wid / heads, h = wid % heads;
    float *x = qkv + (size_t)t * width + (size_t)h * hd; /* k heads follow the q heads */
    const float *w = h < n_heads ? qn : kn;
    float ss = 0.0f;
    for (int32_t i = lane; i < hd; i += 32) ss += x[i] * x[i];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float scale = rsqrtf(ss / (float)hd + eps);
    for (int32_t i = lane; i < hd; i += 32) x[i] = w[i] * (scale * x[i]);
}

extern "C" hsd_status hsd_cuda_head_norm(hsd_cuda *cu, float *d_qkv, int32_t n,
                                         const hsd_cuda_attn_shape *shape, const float *d_qnorm,
                                         const float *d_knorm, float eps) {
    HSD_CU_NEED(cu, "head_norm");
    if (!shape || !d_qkv || !d_qnorm || !d_knorm || n <= 0 || shape->head_dim <= 0 ||
        shape->n_heads <= 0 || shape->n_kv_heads <= 0)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda head_norm: NULL argument or bad shape");
    int32_t warps = n * (shape->n_heads + shape->n_kv_heads);
    head_norm_kernel<<<hsd_blocks(warps, 8), 256, 0, cu->stream>>>(
        d_qkv, n, shape->n_heads, shape->n_kv_heads, shape->head_dim, d_qnorm, d_knorm, eps);
    HSD_CU_LAUNCHED("head_norm");
    return HSD_OK;
}

/* After the fused q/k/v projection (rows [q | k | v] of width q_dim + 2 kv_dim): bias, rope of
 * q and k at each token's position, rotated q out, k and v into the cache (elements of T,
 * rounded to nearest even) at kv_len + t. One thread per q pair, k pair or v element: the
 * work of add_bias, rope and kv_store in one launch. */
template <typename T>
__global__ static void qkv_post_kernel(const float *qkv, int32_t n_heads, int32_t n_kv, int32_t hd,
                                       const float *bias, const int32_t *pos, const float *cos_t,
                                       const float *sin_t, bool interleaved, float *q_out,
                                       T *kc, T *vc, const int32_t *meta) {
    const int32_t half = hd / 2, q_dim = n_heads * hd, kv_dim = n_kv * hd;
    const int32_t width = q_dim + 2 * kv_dim;
    const int32_t per_tok = n_heads * half + n_kv * half + kv_dim;
    const int32_t t = blockIdx.y, u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= per_tok) return;
    const float *row = qkv + (size_t)t * width;
    const size_t cache_row = ((size_t)meta[0] + t) * kv_dim;
    if (u >= n_heads * half + n_kv * half) { /* v: copied (with bias) */
        int32_t j = u - n_heads * half - n_kv * half, c = q_dim + kv_dim + j;
        hsd_kv_put(vc + cache_row + j, row[c] + (bias ? bias[c] : 0.0f));
        return;
    }
    const bool is_q = u < n_heads * half;
    const int32_t pu = is_q ? u : u - n_heads * half, h = pu / half, i = pu % half;
    const int32_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
    const int32_t base = (is_q ? 0 : q_dim) + h * hd;
    float v0 = row[base + a], v1 = row[base + b];
    if (bias) v0 += bias[base + a], v1 += bias[base + b];
    const float c = cos_t[(size_t)pos[t] * half + i], sn = sin_t[(size_t)pos[t] * half + i];
    float r0 = v0 * c - v1 * sn, r1 = v0 * sn + v1 * c;
    if (is_q) {
        float *dst = q_out + (size_t)t * q_dim + h * hd;
        dst[a] = r0;
        dst[b] = r1;
    } else {
        T *dst = kc + cache_row + h * hd;
        hsd_kv_put(dst + a, r0);
        hsd_kv_put(dst + b, r1);
    }
}

extern "C" hsd_status hsd_cuda_qkv_post(hsd_cuda *cu, const float *d_qkv, int32_t n,
                                        const hsd_cuda_attn_shape *shape, const float *d_bias,
                                        const int32_t *d_pos, const float *d_cos,
                                        const float *d_sin, bool interleaved, float *d_q,
                                        void *d_kcache, void *d_vcache, const int32_t *d_meta) {
    hsd_status s =
        hsd_cuda_check_attention(shape, n, d_q, d_qkv, d_kcache, d_vcache, d_meta, true, NULL);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "qkv_post");
    if (!d_pos || !d_cos || !d_sin || shape->head_dim % 2)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "cuda qkv_post: NULL positions/tables or odd head_dim %d",
                         shape->head_dim);
    int32_t half = shape->head_dim / 2;
    int32_t per_tok =
        (shape->n_heads + shape->n_kv_heads) * half + shape->n_kv_heads * shape->head_dim;
    dim3 grid(hsd_blocks(per_tok, 256), n);
#define HSD_QKV_POST(T)                                                                                qkv_post_kernel<T><<<grid, 256, 0, cu->stream>>>(d_qkv, shape->n_heads, shape->n_kv_heads,                                                          shape->head_dim, d_bias, d_pos, d_cos, d_sin,                                                      interleaved, d_q, (T *)d_kcache,                                                                   (T *)d_vcache, d_meta)
    if (shape->kv_type == HSD_DT_F16)
        HSD_QKV_POST(__half);
    else if (shape->kv_type == HSD_DT_BF16)
        HSD_QKV_POST(__nv_bfloat16);
    else
        HSD_QKV_POST(float);
#undef HSD_QKV_POST
    HSD_CU_LAUNCHED("qkv_post");
    return HSD_OK;
}

/* SwiGLU over the fused gate/up projection (rows [gate | up], 2*hidden wide):
 * out[t][i] = silu(gate[t][i]) * up[t][i]. */
__global__ static void silu_mul_split_kernel(float *out, const float *gu, int32_t n,
                                             int32_t hidden) {
    hsd_pdl_trigger(); /* the down projection follows */
    int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n * hidden) return;
    int64_t t = id / hidden, i = id % hidden;
    float g = gu[t * 2 * hidden + i], u = gu[t * 2 * hidden + hidden + i];
    out[id] = g / (1.0f + expf(-g)) * u;
}

extern "C" hsd_status hsd_cuda_silu_mul_split(hsd_cuda *cu, float *d_out, const float *d_gu,
                                              int32_t n, int32_t hidden) {
    hsd_status s = hsd_cuda_check_rows("silu_mul_split", d_gu, n, hidden);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "silu_mul_split");
    if (!d_out) return hsd_error(HSD_ERR_INVALID_ARG, "cuda silu_mul_split: NULL out");
    int64_t total = (int64_t)n * hidden;
    silu_mul_split_kernel<<<hsd_blocks(total, 256), 256, 0, cu->stream>>>(d_out, d_gu, n, hidden);
    HSD_CU_LAUNCHED("silu_mul_split");
    return HSD_OK;
}

/* New k/v rows go to the cache at kv_len = meta[0], read on the device so the same captured
 * graph serves every decode step. */
template <typename T>
__global__ static void kv_store_kernel(T *cache, const float *rows, int32_t kv_dim,
                                       const int32_t *meta) {
    int32_t t = blockIdx.x;
    T *dst = cache + ((size_t)meta[0] + t) * kv_dim;
    for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) hsd_kv_put(dst + i, rows[(size_t)t * kv_dim + i]);
}

extern "C" hsd_status hsd_cuda_kv_store(hsd_cuda *cu, void *d_cache, hsd_dtype kv_type,
                                        const float *d_rows, int32_t n, int32_t kv_dim,
                                        const int32_t *d_meta) {
    hsd_status s = hsd_cuda_check_rows("kv_store", d_rows, n, kv_dim);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "kv_store");
    if (!d_cache || !d_meta)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda kv_store: NULL cache or meta");
    if (!hsd_cuda_kv_elem_bytes(kv_type))
        return hsd_error(HSD_ERR_UNSUPPORTED, "cuda kv_store: a %s cache is not supported on the device",
                         hsd_dtype_name(kv_type));
    if (kv_type == HSD_DT_F16)
        kv_store_kernel<<<n, 256, 0, cu->stream>>>((__half *)d_cache, d_rows, kv_dim, d_meta);
    else if (kv_type == HSD_DT_BF16)
        kv_store_kernel<<<n, 256, 0, cu->stream>>>((__nv_bfloat16 *)d_cache, d_rows, kv_dim, d_meta);
    else
        kv_store_kernel<<<n, 256, 0, cu->stream>>>((float *)d_cache, d_rows, kv_dim, d_meta);
    HSD_CU_LAUNCHED("kv_store");
    return HSD_OK;
}

/* hsd_tf_kv_keep: one block per layer walks the kept rows in order, since a row's source can
 * be another kept row's destination (keep = {1, 2}: row 1 is read, then overwritten). Rows
 * are copied as 32-bit words (a row of an even kv_dim of 2-byte elements is a whole number of
 * them) or bytes. */
template <typename W>
__global__ static void kv_keep_kernel(W *cache, int32_t n_ctx, size_t row_words, int32_t base,
                                      const int32_t *keep, int32_t n_keep) {
    W *layer = cache + (size_t)blockIdx.x * n_ctx * row_words;
    for (int32_t j = 0; j < n_keep; j++) {
        if (keep[j] != j) {
            const W *src = layer + (size_t)(base + keep[j]) * row_words;
            W *dst = layer + (size_t)(base + j) * row_words;
            for (size_t i = threadIdx.x; i < row_words; i += blockDim.x) dst[i] = src[i];
        }
        __syncthreads();
    }
}

extern "C" hsd_status hsd_cuda_kv_keep(hsd_cuda *cu, void *d_cache, int32_t n_layers,
                                       int32_t n_ctx, size_t row_bytes, int32_t base,
                                       const int32_t *d_keep, int32_t n_keep) {
    hsd_status s = hsd_cuda_check_rows("kv_keep", d_cache, n_layers, (int64_t)row_bytes);
    if (s != HSD_OK) return s;
    HSD_CU_NEED(cu, "kv_keep");
    if (n_keep <= 0) return HSD_OK;
    if (!d_keep) return hsd_error(HSD_ERR_INVALID_ARG, "cuda kv_keep: NULL keep list");
    if (row_bytes % 4 == 0)
        kv_keep_kernel<<<n_layers, 256, 0, cu->stream>>>((uint32_t *)d_cache, n_ctx, row_bytes / 4,
                                                         base, d_keep, n_keep);
    else
        kv_keep_kernel<<<n_layers, 256, 0, cu->stream>>>((uint8_t *)d_cache, n_ctx, row_bytes, base,
                                                         d_keep, n_keep);
    HSD_CU_LAUNCHED("kv_keep");
    return HSD_OK;
}

/* Host-side argument checks of the CUDA kernels. They are plain C, compiled in every build,
 * so that a bad shape is reported the same way with or without a device (and is testable
 * on a machine without one). */
#include "kernels/cuda_ops.h"

#include <stdint.h>

#include "lib/base/error.h"

hsd_status hsd_cuda_check_mat(const char *what, const hsd_mat *w) {
    if (!w || !w->data) return hsd_error(HSD_ERR_INVALID_ARG, "cuda %s: NULL matrix", what);
    if (w->rows <= 0 || w->cols <= 0)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda %s: matrix shape [%d, %d] is empty", what,
                         w->rows, w->cols);
    if (w->type != HSD_DT_F32 && w->type != HSD_DT_F16 && w->type != HSD_DT_BF16)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "cuda %s: %s weights are not supported on the device (F32, F16, BF16; "
                         "Q8_0 is widened to BF16 when the model is uploaded)",
                         what, hsd_dtype_name(w->type));
    return HSD_OK;
}

hsd_status hsd_cuda_check_indexed_head(const hsd_mat *U, const void *d_out, const void *d_h,
                                       int32_t k, bool have_idx) {
    hsd_status s = hsd_cuda_check_mat("indexed_head", U);
    if (s != HSD_OK) return s;
    if (!d_out || !d_h) return hsd_error(HSD_ERR_INVALID_ARG, "cuda indexed_head: NULL out or h");
    if (k <= 0) return hsd_error(HSD_ERR_INVALID_ARG, "cuda indexed_head: k = %d (must be > 0)", k);
    if (!have_idx && k > U->rows)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "cuda indexed_head: k = %d rows without an index list but U has %d rows",
                         k, U->rows);
    return HSD_OK;
}

hsd_status hsd_cuda_check_matmul(const hsd_mat *w, const void *d_out, int32_t ld_out,
                                 const void *d_x, int32_t n, const void *d_xh) {
    hsd_status s = hsd_cuda_check_mat("matmul", w);
    if (s != HSD_OK) return s;
    if (!d_out || !d_x) return hsd_error(HSD_ERR_INVALID_ARG, "cuda matmul: NULL out or x");
    if (n <= 0) return hsd_error(HSD_ERR_INVALID_ARG, "cuda matmul: n = %d (must be > 0)", n);
    if (ld_out < w->rows)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "cuda matmul: output row stride %d is smaller than the %d output rows",
                         ld_out, w->rows);
    if (w->type != HSD_DT_F32 && !d_xh)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "cuda matmul: %s weights need a half-precision scratch for x",
                         hsd_dtype_name(w->type));
    return HSD_OK;
}

size_t hsd_cuda_kv_elem_bytes(hsd_dtype kv_type) {
    return kv_type == HSD_DT_F32 ? 4 : kv_type == HSD_DT_F16 || kv_type == HSD_DT_BF16 ? 2 : 0;
}

/* At least 128 slots a chunk (a block's threads take one each), and at most 64 chunks a
 * token: enough blocks to fill a device at depth 2,048 (16 chunks x 8 KV heads), few empty
 * ones when the context is long. A function of n_ctx alone, so a row's chunks are the same
 * whatever it is batched with. */
#define HSD_CUDA_ATTN_MIN_CHUNK 128
#define HSD_CUDA_ATTN_MAX_CHUNKS 64
int32_t hsd_cuda_attn_chunk(int32_t n_ctx) {
    int64_t c = ((int64_t)n_ctx + HSD_CUDA_ATTN_MAX_CHUNKS - 1) / HSD_CUDA_ATTN_MAX_CHUNKS;
    c = (c + HSD_CUDA_ATTN_MIN_CHUNK - 1) / HSD_CUDA_ATTN_MIN_CHUNK * HSD_CUDA_ATTN_MIN_CHUNK;
    return (int32_t)(c > HSD_CUDA_ATTN_MIN_CHUNK ? c : HSD_CUDA_ATTN_MIN_CHUNK);
}

/* per token: a counter per KV head (the region rounded up to 256 bytes), then per query head
 * and chunk the running max, the sum and head_dim output floats */
size_t hsd_cuda_attn_counter_bytes(const hsd_cuda_attn_shape *s, int32_t n) {
    if (!s || n <= 0 || s->n_kv_heads <= 0) return 0;
    return ((size_t)n * s->n_kv_heads * sizeof(int32_t) + 255) / 256 * 256;
}
size_t hsd_cuda_attn_work_bytes(const hsd_cuda_attn_shape *s, int32_t n) {
    if (!s || n <= 0 || s->n_ctx <= 0 || s->n_heads <= 0 || s->n_kv_heads <= 0 || s->head_dim <= 0) return 0;
    const int32_t C = hsd_cuda_attn_chunk(s->n_ctx), S = (s->n_ctx + C - 1) / C;
    return hsd_cuda_attn_counter_bytes(s, n) + (size_t)n * s->n_heads * S * (s->head_dim + 2) * sizeof(float);
}
int32_t hsd_cuda_attn_work_tokens(const hsd_cuda_attn_shape *s, size_t work_bytes) {
    const size_t one = hsd_cuda_attn_work_bytes(s, 1);
    if (!one || work_bytes < one) return 0;
    int64_t t = (int64_t)(work_bytes / (one - hsd_cuda_attn_counter_bytes(s, 1) + s->n_kv_heads * sizeof(int32_t)));
    if (t > INT32_MAX) t = INT32_MAX;
    while (t > 1 && hsd_cuda_attn_work_bytes(s, (int32_t)t) > work_bytes) t--;
    return t < 1 ? 1 : (int32_t)t;
}

hsd_status hsd_cuda_check_attention(const hsd_cuda_attn_shape *s, int32_t n, const void *d_out,
                                    const void *d_q, const void *d_k, const void *d_v,
                                    const void *d_meta, bool chain, const void *d_anc) {
    if (!s || !d_out || !d_q || !d_k || !d_v || !d_meta)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda attention: NULL argument");
    if (!hsd_cuda_kv_elem_bytes(s->kv_type))
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "cuda attention: a %s KV cache is not supported on the device (F32, F16, BF16)",
                         hsd_dtype_name(s->kv_type));
    if (s->n_heads <= 0 || s->n_kv_heads <= 0 || s->n_heads % s->n_kv_heads || s->head_dim <= 0 ||
        s->n_ctx <= 0)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "cuda attention: %d heads, %d kv heads, head_dim %d, n_ctx %d", s->n_heads,
                         s->n_kv_heads, s->head_dim, s->n_ctx);
    if (n <= 0 || n > s->n_ctx)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda attention: %d new tokens for a context of %d",
                         n, s->n_ctx);
    if (!chain && !d_anc)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda attention: a tree needs its ancestor lists");
    return HSD_OK;
}

hsd_status hsd_cuda_check_attn_work(const hsd_cuda_attn_shape *s, const void *d_work, size_t work_bytes) {
    const size_t one = hsd_cuda_attn_work_bytes(s, 1);
    if (!d_work || work_bytes < one)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "cuda attention: a work buffer of %zu bytes (at least %zu: one token's "
                         "chunks, hsd_cuda_attn_work_bytes)",
                         d_work ? work_bytes : 0, one);
    return HSD_OK;
}

hsd_status hsd_cuda_check_rows(const char *what, const void *d_ptr, int64_t n_rows, int64_t cols) {
    if (!d_ptr) return hsd_error(HSD_ERR_INVALID_ARG, "cuda %s: NULL pointer", what);
    if (n_rows <= 0 || cols <= 0)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda %s: %lld rows of %lld (must be > 0)", what,
                         (long long)n_rows, (long long)cols);
    return HSD_OK;
}

hsd_status hsd_cuda_check_topk(const void *d_idx, const void *d_x, int32_t V, int32_t k) {
    if (!d_idx || !d_x) return hsd_error(HSD_ERR_INVALID_ARG, "cuda topk: NULL idx or x");
    if (V <= 0 || k <= 0 || k > V)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda topk: k = %d of V = %d (need 0 < k <= V)", k,
                         V);
    return HSD_OK;
}

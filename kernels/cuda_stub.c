/* The CUDA interface in a build without CUDA (HSD_CUDA=OFF or no nvcc): no devices, and every
 * call that would need one says so. The argument checks in cuda_check.c still run first, so
 * a bad call is reported the same way in both builds. */
#include "kernels/cuda_ops.h"

#ifndef HSD_HAVE_CUDA

#include "lib/base/error.h"

#define NO_CUDA(what) hsd_error(HSD_ERR_UNSUPPORTED, "cuda %s: hsd was built without CUDA", what)

bool hsd_cuda_compiled(void) {
    return false;
}
int hsd_cuda_device_count(void) {
    return 0;
}

hsd_status hsd_cuda_open(int device, hsd_cuda **out) {
    (void)device;
    if (out) *out = NULL;
    return NO_CUDA("open");
}
void hsd_cuda_close(hsd_cuda *cu) {
    (void)cu;
}
void hsd_cuda_use_cublas_gemv(hsd_cuda *cu, bool on) {
    (void)cu, (void)on;
}
void hsd_cuda_use_warp_gemm(hsd_cuda *cu, bool on) {
    (void)cu, (void)on;
}
void hsd_cuda_use_pdl(hsd_cuda *cu, bool on) {
    (void)cu, (void)on;
}
void hsd_cuda_set_mma_variant(hsd_cuda *cu, int variant) {
    (void)cu, (void)variant;
}
const char *hsd_cuda_device_desc(const hsd_cuda *cu) {
    (void)cu;
    return "no CUDA device";
}
hsd_status hsd_cuda_sync(hsd_cuda *cu) {
    (void)cu;
    return NO_CUDA("sync");
}
hsd_status hsd_cuda_alloc(hsd_cuda *cu, size_t bytes, void **d_out) {
    (void)cu, (void)bytes;
    if (d_out) *d_out = NULL;
    return NO_CUDA("alloc");
}
void hsd_cuda_free(hsd_cuda *cu, void *d_ptr) {
    (void)cu, (void)d_ptr;
}
hsd_status hsd_cuda_host_alloc(hsd_cuda *cu, size_t bytes, void **out) {
    (void)cu, (void)bytes;
    if (out) *out = NULL;
    return NO_CUDA("host_alloc");
}
void hsd_cuda_host_free(hsd_cuda *cu, void *p) {
    (void)cu, (void)p;
}
hsd_status hsd_cuda_upload(hsd_cuda *cu, void *d_dst, const void *src, size_t bytes) {
    (void)cu, (void)d_dst, (void)src, (void)bytes;
    return NO_CUDA("upload");
}
hsd_status hsd_cuda_download(hsd_cuda *cu, void *dst, const void *d_src, size_t bytes) {
    (void)cu, (void)dst, (void)d_src, (void)bytes;
    return NO_CUDA("download");
}
hsd_status hsd_cuda_copy(hsd_cuda *cu, void *d_dst, const void *d_src, size_t bytes) {
    (void)cu, (void)d_dst, (void)d_src, (void)bytes;
    return NO_CUDA("copy");
}
hsd_status hsd_cuda_timer_start(hsd_cuda *cu) {
    (void)cu;
    return NO_CUDA("timer_start");
}
hsd_status hsd_cuda_timer_stop(hsd_cuda *cu, float *ms) {
    (void)cu;
    if (ms) *ms = 0.0f;
    return NO_CUDA("timer_stop");
}
hsd_status hsd_cuda_graph_begin(hsd_cuda *cu) {
    (void)cu;
    return NO_CUDA("graph_begin");
}
hsd_status hsd_cuda_graph_end(hsd_cuda *cu, hsd_cuda_graph **out) {
    (void)cu;
    if (out) *out = NULL;
    return NO_CUDA("graph_end");
}
hsd_status hsd_cuda_graph_launch(hsd_cuda *cu, hsd_cuda_graph *g) {
    (void)cu, (void)g;
    return NO_CUDA("graph_launch");
}
void hsd_cuda_graph_free(hsd_cuda_graph *g) {
    (void)g;
}

hsd_status hsd_cuda_rmsnorm(hsd_cuda *cu, float *d_o, const float *d_x, const float *d_w,
                            const int32_t *d_rows, int32_t n_rows, int32_t dim, float eps) {
    (void)cu, (void)d_w, (void)d_rows, (void)eps, (void)d_o;
    hsd_status s = hsd_cuda_check_rows("rmsnorm", d_x, n_rows, dim);
    return s != HSD_OK ? s : NO_CUDA("rmsnorm");
}
hsd_status hsd_cuda_rope(hsd_cuda *cu, float *d_x, int32_t n_tok, int32_t stride, int32_t n_heads,
                         int32_t head_dim, const int32_t *d_pos, const float *d_cos,
                         const float *d_sin, bool interleaved) {
    (void)cu, (void)stride, (void)d_pos, (void)d_cos, (void)d_sin, (void)interleaved;
    hsd_status s = hsd_cuda_check_rows("rope", d_x, n_tok, (int64_t)n_heads * head_dim);
    return s != HSD_OK ? s : NO_CUDA("rope");
}
hsd_status hsd_cuda_silu_mul(hsd_cuda *cu, float *d_gate, const float *d_up, int64_t n) {
    (void)cu, (void)d_up;
    hsd_status s = hsd_cuda_check_rows("silu_mul", d_gate, 1, n);
    return s != HSD_OK ? s : NO_CUDA("silu_mul");
}
hsd_status hsd_cuda_add(hsd_cuda *cu, float *d_x, const float *d_y, int64_t n) {
    (void)cu, (void)d_y;
    hsd_status s = hsd_cuda_check_rows("add", d_x, 1, n);
    return s != HSD_OK ? s : NO_CUDA("add");
}
hsd_status hsd_cuda_add_bias(hsd_cuda *cu, float *d_x, const float *d_b, int32_t n_rows,
                             int32_t cols, int32_t ld) {
    (void)cu, (void)d_b, (void)ld;
    hsd_status s = hsd_cuda_check_rows("add_bias", d_x, n_rows, cols);
    return s != HSD_OK ? s : NO_CUDA("add_bias");
}
hsd_status hsd_cuda_embed(hsd_cuda *cu, float *d_out, const hsd_mat *emb, const int32_t *d_tokens,
                          int32_t n) {
    (void)cu, (void)d_out, (void)d_tokens, (void)n;
    hsd_status s = hsd_cuda_check_mat("embed", emb);
    return s != HSD_OK ? s : NO_CUDA("embed");
}
hsd_status hsd_cuda_matmul(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x, int32_t n,
                           const hsd_mat *w, void *d_xh) {
    (void)cu;
    hsd_status s = hsd_cuda_check_matmul(w, d_out, ld_out, d_x, n, d_xh);
    return s != HSD_OK ? s : NO_CUDA("matmul");
}
hsd_status hsd_cuda_matmul_add(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x,
                               int32_t n, const hsd_mat *w, void *d_xh) {
    (void)cu;
    hsd_status s = hsd_cuda_check_matmul(w, d_out, ld_out, d_x, n, d_xh);
    return s != HSD_OK ? s : NO_CUDA("matmul_add");
}
hsd_status hsd_cuda_silu_mul_split(hsd_cuda *cu, float *d_out, const float *d_gu, int32_t n,
                                   int32_t hidden) {
    (void)cu, (void)d_out;
    hsd_status s = hsd_cuda_check_rows("silu_mul_split", d_gu, n, hidden);
    return s != HSD_OK ? s : NO_CUDA("silu_mul_split");
}
hsd_status hsd_cuda_qkv_post(hsd_cuda *cu, const float *d_qkv, int32_t n,
                             const hsd_cuda_attn_shape *shape, const float *d_bias,
                             const int32_t *d_pos, const float *d_cos, const float *d_sin,
                             bool interleaved, float *d_q, void *d_kcache, void *d_vcache,
                             const int32_t *d_meta) {
    (void)cu, (void)d_bias, (void)d_pos, (void)d_cos, (void)d_sin, (void)interleaved;
    hsd_status s =
        hsd_cuda_check_attention(shape, n, d_q, d_qkv, d_kcache, d_vcache, d_meta, true, NULL);
    return s != HSD_OK ? s : NO_CUDA("qkv_post");
}
hsd_status hsd_cuda_kv_store(hsd_cuda *cu, void *d_cache, hsd_dtype kv_type, const float *d_rows,
                             int32_t n, int32_t kv_dim, const int32_t *d_meta) {
    (void)cu, (void)d_cache, (void)kv_type, (void)d_meta;
    hsd_status s = hsd_cuda_check_rows("kv_store", d_rows, n, kv_dim);
    return s != HSD_OK ? s : NO_CUDA("kv_store");
}
hsd_status hsd_cuda_attention(hsd_cuda *cu, float *d_out, const float *d_q, const void *d_kcache,
                              const void *d_vcache, const hsd_cuda_attn_shape *shape, int32_t n,
                              const int32_t *d_meta, const int32_t *d_anc,
                              const int32_t *d_anc_off, void *d_work, size_t work_bytes) {
    (void)cu, (void)d_work, (void)work_bytes;
    hsd_status s = hsd_cuda_check_attention(shape, n, d_out, d_q, d_kcache, d_vcache, d_meta,
                                            d_anc_off == NULL, d_anc);
    return s != HSD_OK ? s : NO_CUDA("attention");
}
hsd_status hsd_cuda_attn_work_init(hsd_cuda *cu, void *d_work, size_t work_bytes) {
    (void)work_bytes;
    if (!cu || !d_work)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda attn_work_init: NULL %s", cu ? "buffer" : "device handle");
    return NO_CUDA("attn_work_init");
}
hsd_status hsd_cuda_kv_keep(hsd_cuda *cu, void *d_cache, int32_t n_layers, int32_t n_ctx,
                            size_t row_bytes, int32_t base, const int32_t *d_keep, int32_t n_keep) {
    (void)cu, (void)n_ctx, (void)base, (void)d_keep, (void)n_keep;
    hsd_status s = hsd_cuda_check_rows("kv_keep", d_cache, n_layers, (int64_t)row_bytes);
    return s != HSD_OK ? s : NO_CUDA("kv_keep");
}
hsd_status hsd_cuda_indexed_head(hsd_cuda *cu, float *d_out, const hsd_mat *U, const float *d_h,
                                 const int32_t *d_idx, int32_t k) {
    (void)cu;
    hsd_status s = hsd_cuda_check_indexed_head(U, d_out, d_h, k, d_idx != NULL);
    return s != HSD_OK ? s : NO_CUDA("indexed_head");
}
hsd_status hsd_cuda_topk(hsd_cuda *cu, int32_t *d_idx, const float *d_x, int32_t V, int32_t k) {
    (void)cu, (void)d_idx;
    hsd_status s = hsd_cuda_check_topk(d_idx, d_x, V, k);
    return s != HSD_OK ? s : NO_CUDA("topk");
}
hsd_status hsd_cuda_argmax(hsd_cuda *cu, int32_t *d_out, const float *d_logits, int32_t n_rows,
                           int32_t V) {
    (void)cu, (void)d_out;
    hsd_status s = hsd_cuda_check_rows("argmax", d_logits, n_rows, V);
    return s != HSD_OK ? s : NO_CUDA("argmax");
}
hsd_status hsd_cuda_softmax(hsd_cuda *cu, float *d_x, int32_t n_rows, int32_t V, float temp) {
    (void)cu, (void)temp;
    hsd_status s = hsd_cuda_check_rows("softmax", d_x, n_rows, V);
    return s != HSD_OK ? s : NO_CUDA("softmax");
}
hsd_status hsd_cuda_sample(hsd_cuda *cu, int32_t *d_out, const float *d_p, int32_t V, float u) {
    (void)cu, (void)d_out, (void)u;
    hsd_status s = hsd_cuda_check_rows("sample", d_p, 1, V);
    return s != HSD_OK ? s : NO_CUDA("sample");
}
hsd_status hsd_cuda_reject(hsd_cuda *cu, int32_t *d_out, const float *d_p, const float *d_q,
                           int32_t V, int32_t x, float u_accept, float u_resample) {
    (void)cu, (void)d_out, (void)d_q, (void)x, (void)u_accept, (void)u_resample;
    hsd_status s = hsd_cuda_check_rows("reject", d_p, 1, V);
    return s != HSD_OK ? s : NO_CUDA("reject");
}

hsd_status hsd_cuda_head_norm(hsd_cuda *cu, float *d_qkv, int32_t n,
                              const hsd_cuda_attn_shape *shape, const float *d_qnorm,
                              const float *d_knorm, float eps) {
    (void)cu, (void)d_qkv, (void)n, (void)shape, (void)d_qnorm, (void)d_knorm, (void)eps;
    return NO_CUDA("head_norm");
}

#else
/* The CUDA build defines these in kernels/cuda_*.cu. */
typedef int hsd_cuda_stub_unused;

#endif

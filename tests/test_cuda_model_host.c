/* The CUDA model's orchestration (models/cuda_model.c) without a GPU: this test defines the
 * whole kernel interface of kernels/cuda_ops.h itself, as plain host code written from the
 * header's contracts, so the linker takes these definitions instead of the library's (the
 * .cu files or the no-CUDA stub). The "device" is host memory. Then the CUDA model must give
 * the CPU transformer's logits through prefill, token trees, kv_keep, decode steps, truncation
 * and row subsets, for Llama and Qwen2 shapes; it must say so when graph capture is refused
 * and fall back to eager steps; and hsd_model_load with backend CUDA must put a real model on
 * this "device" and reproduce its reference greedy ids. What it does not test is the CUDA
 * kernels themselves: bench/gpu.sh checks those on a GPU. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "kernels/cpu_ops.h"
#include "kernels/cuda_ops.h"
#include "lib/error.h"
#include "models/cuda_model.h"
#include "models/synth.h"
#include "models/transformer.h"
#include "tests/testutil.h"

/* ---- the host "device" ------------------------------------------------------------- */

struct hsd_cuda {
    bool cublas_gemv;
};
static int g_live_allocs; /* device allocations not yet freed */

#define UNEMULATED(what) hsd_error(HSD_ERR_UNSUPPORTED, "host device: %s not emulated", what)

bool hsd_cuda_compiled(void) {
    return true;
}
int hsd_cuda_device_count(void) {
    return 1;
}
hsd_status hsd_cuda_open(int device, hsd_cuda **out) {
    if (device != 0) return hsd_error(HSD_ERR_INVALID_ARG, "host device: no device %d", device);
    *out = calloc(1, sizeof **out);
    return *out ? HSD_OK : hsd_error(HSD_ERR_NOMEM, "host device: out of memory");
}
void hsd_cuda_close(hsd_cuda *cu) {
    free(cu);
}
void hsd_cuda_use_cublas_gemv(hsd_cuda *cu, bool on) {
    cu->cublas_gemv = on;
}
const char *hsd_cuda_device_desc(const hsd_cuda *cu) {
    (void)cu;
    return "host emulation";
}
hsd_status hsd_cuda_sync(hsd_cuda *cu) {
    (void)cu;
    return HSD_OK;
}
hsd_status hsd_cuda_alloc(hsd_cuda *cu, size_t bytes, void **d_out) {
    (void)cu;
    /* poisoned, so reading memory nobody wrote shows up as wrong logits */
    *d_out = malloc(bytes ? bytes : 1);
    if (!*d_out) return hsd_error(HSD_ERR_NOMEM, "host device: out of memory");
    memset(*d_out, 0x7f, bytes);
    g_live_allocs++;
    return HSD_OK;
}
void hsd_cuda_free(hsd_cuda *cu, void *d_ptr) {
    (void)cu;
    if (d_ptr) g_live_allocs--;
    free(d_ptr);
}
hsd_status hsd_cuda_host_alloc(hsd_cuda *cu, size_t bytes, void **out) {
    (void)cu;
    *out = malloc(bytes ? bytes : 1);
    return *out ? HSD_OK : hsd_error(HSD_ERR_NOMEM, "host device: out of memory");
}
void hsd_cuda_host_free(hsd_cuda *cu, void *p) {
    (void)cu;
    free(p);
}
hsd_status hsd_cuda_upload(hsd_cuda *cu, void *d_dst, const void *src, size_t bytes) {
    (void)cu;
    if (bytes) memcpy(d_dst, src, bytes);
    return HSD_OK;
}
hsd_status hsd_cuda_download(hsd_cuda *cu, void *dst, const void *d_src, size_t bytes) {
    return hsd_cuda_upload(cu, dst, d_src, bytes);
}
hsd_status hsd_cuda_copy(hsd_cuda *cu, void *d_dst, const void *d_src, size_t bytes) {
    return hsd_cuda_upload(cu, d_dst, d_src, bytes);
}
hsd_status hsd_cuda_timer_start(hsd_cuda *cu) {
    (void)cu;
    return UNEMULATED("timer");
}
hsd_status hsd_cuda_timer_stop(hsd_cuda *cu, float *ms) {
    (void)cu, (void)ms;
    return UNEMULATED("timer");
}
/* Capture cannot be emulated (kernels here run at once): refusing it exercises the model's
 * fallback to eager decode steps. */
hsd_status hsd_cuda_graph_begin(hsd_cuda *cu) {
    (void)cu;
    return UNEMULATED("graph capture");
}
hsd_status hsd_cuda_graph_end(hsd_cuda *cu, hsd_cuda_graph **out) {
    (void)cu;
    *out = NULL;
    return UNEMULATED("graph capture");
}
hsd_status hsd_cuda_graph_launch(hsd_cuda *cu, hsd_cuda_graph *g) {
    (void)cu, (void)g;
    return UNEMULATED("graph launch");
}
void hsd_cuda_graph_free(hsd_cuda_graph *g) {
    (void)g;
}

hsd_status hsd_cuda_rmsnorm(hsd_cuda *cu, float *d_o, const float *d_x, const float *d_w,
                            const int32_t *d_rows, int32_t n_rows, int32_t dim, float eps) {
    (void)cu;
    hsd_status s = hsd_cuda_check_rows("rmsnorm", d_x, n_rows, dim);
    if (s != HSD_OK) return s;
    for (int32_t r = 0; r < n_rows; r++)
        hsd_rmsnorm(d_o + (size_t)r * dim, d_x + (size_t)(d_rows ? d_rows[r] : r) * dim, d_w, dim,
                    eps);
    return HSD_OK;
}
hsd_status hsd_cuda_rope(hsd_cuda *cu, float *d_x, int32_t n_tok, int32_t stride, int32_t n_heads,
                         int32_t head_dim, const int32_t *d_pos, const float *d_cos,
                         const float *d_sin, bool interleaved) {
    (void)cu;
    int32_t half = head_dim / 2;
    for (int32_t t = 0; t < n_tok; t++)
        hsd_rope(d_x + (size_t)t * stride, n_heads, head_dim, d_cos + (size_t)d_pos[t] * half,
                 d_sin + (size_t)d_pos[t] * half, interleaved);
    return HSD_OK;
}
hsd_status hsd_cuda_silu_mul(hsd_cuda *cu, float *d_gate, const float *d_up, int64_t n) {
    (void)cu;
    hsd_silu_mul(d_gate, d_up, (int32_t)n);
    return HSD_OK;
}
hsd_status hsd_cuda_add(hsd_cuda *cu, float *d_x, const float *d_y, int64_t n) {
    (void)cu;
    hsd_add(d_x, d_y, (int32_t)n);
    return HSD_OK;
}
hsd_status hsd_cuda_add_bias(hsd_cuda *cu, float *d_x, const float *d_b, int32_t n_rows,
                             int32_t cols, int32_t ld) {
    (void)cu;
    for (int32_t t = 0; t < n_rows; t++) hsd_add(d_x + (size_t)t * ld, d_b, cols);
    return HSD_OK;
}
hsd_status hsd_cuda_embed(hsd_cuda *cu, float *d_out, const hsd_mat *emb, const int32_t *d_tokens,
                          int32_t n) {
    (void)cu;
    hsd_status s = hsd_cuda_check_mat("embed", emb);
    if (s != HSD_OK) return s;
    for (int32_t t = 0; t < n; t++)
        hsd_mat_rows_f32(emb, d_tokens[t], 1, d_out + (size_t)t * emb->cols);
    return HSD_OK;
}
static hsd_status host_matmul(float *out, int32_t ld_out, const float *x, int32_t n,
                              const hsd_mat *w, void *xh, bool accumulate) {
    hsd_status s = hsd_cuda_check_matmul(w, out, ld_out, x, n, xh);
    if (s != HSD_OK) return s;
    float *tmp = malloc(sizeof(float) * n * w->rows),
          *scratch = malloc(sizeof(float) * 4 * w->cols);
    hsd_matmul_rows(tmp, w->rows, x, n, w, 0, w->rows, scratch);
    for (int32_t t = 0; t < n; t++)
        for (int32_t r = 0; r < w->rows; r++)
            out[(size_t)t * ld_out + r] =
                (accumulate ? out[(size_t)t * ld_out + r] : 0.0f) + tmp[(size_t)t * w->rows + r];
    free(tmp);
    free(scratch);
    return HSD_OK;
}
hsd_status hsd_cuda_matmul(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x, int32_t n,
                           const hsd_mat *w, void *d_xh) {
    (void)cu;
    return host_matmul(d_out, ld_out, d_x, n, w, d_xh, false);
}
hsd_status hsd_cuda_matmul_add(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x,
                               int32_t n, const hsd_mat *w, void *d_xh) {
    (void)cu;
    return host_matmul(d_out, ld_out, d_x, n, w, d_xh, true);
}
hsd_status hsd_cuda_silu_mul_split(hsd_cuda *cu, float *d_out, const float *d_gu, int32_t n,
                                   int32_t hidden) {
    (void)cu;
    for (int32_t t = 0; t < n; t++) {
        memcpy(d_out + (size_t)t * hidden, d_gu + (size_t)t * 2 * hidden, sizeof(float) * hidden);
        hsd_silu_mul(d_out + (size_t)t * hidden, d_gu + (size_t)t * 2 * hidden + hidden, hidden);
    }
    return HSD_OK;
}
hsd_status hsd_cuda_qkv_post(hsd_cuda *cu, const float *d_qkv, int32_t n,
                             const hsd_cuda_attn_shape *shape, const float *d_bias,
                             const int32_t *d_pos, const float *d_cos, const float *d_sin,
                             bool interleaved, float *d_q, float *d_kcache, float *d_vcache,
                             const int32_t *d_meta) {
    (void)cu;
    const int32_t hd = shape->head_dim, half = hd / 2, q_dim = shape->n_heads * hd;
    const int32_t kv_dim = shape->n_kv_heads * hd, W = q_dim + 2 * kv_dim;
    float *row = malloc(sizeof(float) * W);
    for (int32_t t = 0; t < n; t++) {
        memcpy(row, d_qkv + (size_t)t * W, sizeof(float) * W);
        if (d_bias) hsd_add(row, d_bias, W);
        const float *c = d_cos + (size_t)d_pos[t] * half, *s = d_sin + (size_t)d_pos[t] * half;
        hsd_rope(row, shape->n_heads, hd, c, s, interleaved);
        hsd_rope(row + q_dim, shape->n_kv_heads, hd, c, s, interleaved);
        size_t at = ((size_t)d_meta[0] + t) * kv_dim;
        memcpy(d_q + (size_t)t * q_dim, row, sizeof(float) * q_dim);
        memcpy(d_kcache + at, row + q_dim, sizeof(float) * kv_dim);
        memcpy(d_vcache + at, row + q_dim + kv_dim, sizeof(float) * kv_dim);
    }
    free(row);
    return HSD_OK;
}
hsd_status hsd_cuda_kv_store(hsd_cuda *cu, float *d_cache, const float *d_rows, int32_t n,
                             int32_t kv_dim, const int32_t *d_meta) {
    (void)cu;
    memcpy(d_cache + (size_t)d_meta[0] * kv_dim, d_rows, sizeof(float) * n * kv_dim);
    return HSD_OK;
}
hsd_status hsd_cuda_attention(hsd_cuda *cu, float *d_out, const float *d_q, const float *d_kcache,
                              const float *d_vcache, const hsd_cuda_attn_shape *shape, int32_t n,
                              const int32_t *d_meta, const int32_t *d_anc,
                              const int32_t *d_anc_off) {
    (void)cu;
    hsd_status st = hsd_cuda_check_attention(shape, n, d_out, d_q, d_kcache, d_vcache, d_meta,
                                             d_anc_off == NULL, d_anc);
    if (st != HSD_OK) return st;
    const int32_t hd = shape->head_dim, L = d_meta[0], kv_mul = shape->n_heads / shape->n_kv_heads;
    const int32_t q_dim = shape->n_heads * hd, kv_dim = shape->n_kv_heads * hd;
    float *att = malloc(sizeof(float) * (L + n));
    for (int32_t t = 0; t < n; t++)
        for (int32_t h = 0; h < shape->n_heads; h++) {
            int32_t n_new = d_anc_off ? d_anc_off[t + 1] - d_anc_off[t] : t + 1, nv = L + n_new;
            const float *q = d_q + (size_t)t * q_dim + (size_t)h * hd;
            size_t koff = (size_t)(h / kv_mul) * hd;
            for (int32_t i = 0; i < nv; i++) {
                int32_t slot = i < L ? i : L + (d_anc_off ? d_anc[d_anc_off[t] + i - L] : i - L);
                att[i] =
                    hsd_dot_f32(q, d_kcache + (size_t)slot * kv_dim + koff, hd) / sqrtf((float)hd);
            }
            hsd_softmax(att, nv);
            float *o = d_out + (size_t)t * q_dim + (size_t)h * hd;
            memset(o, 0, sizeof(float) * hd);
            for (int32_t i = 0; i < nv; i++) {
                int32_t slot = i < L ? i : L + (d_anc_off ? d_anc[d_anc_off[t] + i - L] : i - L);
                for (int32_t d = 0; d < hd; d++)
                    o[d] += att[i] * d_vcache[(size_t)slot * kv_dim + koff + d];
            }
        }
    free(att);
    return HSD_OK;
}
hsd_status hsd_cuda_kv_keep(hsd_cuda *cu, float *d_cache, int32_t n_layers, int32_t n_ctx,
                            int32_t kv_dim, int32_t base, const int32_t *d_keep, int32_t n_keep) {
    (void)cu;
    for (int32_t l = 0; l < n_layers; l++)
        for (int32_t j = 0; j < n_keep; j++)
            memmove(d_cache + ((size_t)l * n_ctx + base + j) * kv_dim,
                    d_cache + ((size_t)l * n_ctx + base + d_keep[j]) * kv_dim,
                    sizeof(float) * kv_dim);
    return HSD_OK;
}
hsd_status hsd_cuda_indexed_head(hsd_cuda *cu, float *d_out, const hsd_mat *U, const float *d_h,
                                 const int32_t *d_idx, int32_t k) {
    (void)cu, (void)d_out, (void)U, (void)d_h, (void)d_idx, (void)k;
    return UNEMULATED("indexed_head");
}
hsd_status hsd_cuda_topk(hsd_cuda *cu, int32_t *d_idx, const float *d_x, int32_t V, int32_t k) {
    (void)cu, (void)d_idx, (void)d_x, (void)V, (void)k;
    return UNEMULATED("topk");
}
hsd_status hsd_cuda_argmax(hsd_cuda *cu, int32_t *d_out, const float *d_logits, int32_t n_rows,
                           int32_t V) {
    (void)cu, (void)d_out, (void)d_logits, (void)n_rows, (void)V;
    return UNEMULATED("argmax");
}
hsd_status hsd_cuda_softmax(hsd_cuda *cu, float *d_x, int32_t n_rows, int32_t V, float temp) {
    (void)cu, (void)d_x, (void)n_rows, (void)V, (void)temp;
    return UNEMULATED("softmax");
}
hsd_status hsd_cuda_sample(hsd_cuda *cu, int32_t *d_out, const float *d_p, int32_t V, float u) {
    (void)cu, (void)d_out, (void)d_p, (void)V, (void)u;
    return UNEMULATED("sample");
}
hsd_status hsd_cuda_reject(hsd_cuda *cu, int32_t *d_out, const float *d_p, const float *d_q,
                           int32_t V, int32_t x, float u_accept, float u_resample) {
    (void)cu, (void)d_out, (void)d_p, (void)d_q, (void)V, (void)x, (void)u_accept, (void)u_resample;
    return UNEMULATED("reject");
}

/* ---- tests ------------------------------------------------------------------------- */

typedef struct log_capture {
    int n_graph_warn, n_notice;
} log_capture;

static void on_log(hsd_log_level level, const char *msg, void *user) {
    log_capture *c = user;
    if (level == HSD_LOG_WARN && strstr(msg, "graph capture failed")) c->n_graph_warn++;
    if (!strcmp(msg, "no CUDA device, using CPU")) c->n_notice++;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) return INFINITY;
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return m > 0 ? d / m : INFINITY;
}

/* The CPU transformer and the CUDA model over the same synth weights, step by step. */
static void compare_shape(const char *shape, hsd_dtype dt, hsd_weight_type dev_w, double tol) {
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create(shape, dt, 11, &sm), HSD_OK);
    hsd_model_params p = hsd_model_default_params();
    p.n_ctx = 40;
    p.device_weights = dev_w;
    hsd_transformer *tf;
    assert_int_equal(hsd_synth_to_transformer(sm, &p, &tf), HSD_OK);
    hsd_model_iface c, g;
    hsd_tf_iface(tf, &c);
    char desc[512];
    int live_before = g_live_allocs;
    assert_int_equal(hsd_cuda_model_create(tf, &p, &g, desc, sizeof desc), HSD_OK);
    assert_non_null(strstr(desc, "cuda: host emulation"));
    assert_int_equal(g.vocab_size(g.ctx), c.vocab_size(c.ctx));
    assert_int_equal(g.n_ctx(g.ctx), 40);
    int32_t V = c.vocab_size(c.ctx), toks[16];
    for (int i = 0; i < 16; i++) toks[i] = (i * 37 + 5) % V;
    float *lc = malloc(sizeof(float) * 16 * V), *lg = malloc(sizeof(float) * 16 * V);
    log_capture cap = {0};
    hsd_log_set(on_log, &cap);

    /* prefill, all rows */
    assert_int_equal(c.forward(c.ctx, toks, 9, NULL, NULL, 9, lc), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks, 9, NULL, NULL, 9, lg), HSD_OK);
    assert_true(max_rel(lg, lc, (size_t)9 * V) < tol);
    /* a token tree with two roots, then keep one path of it */
    int32_t parents[6] = {-1, 0, 0, 1, 2, -1}, keep[3] = {0, 2, 4};
    assert_int_equal(c.forward(c.ctx, toks + 9, 6, parents, NULL, 6, lc), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks + 9, 6, parents, NULL, 6, lg), HSD_OK);
    assert_true(max_rel(lg, lc, (size_t)6 * V) < tol);
    assert_int_equal(c.kv_keep(c.ctx, 9, keep, 3), HSD_OK);
    assert_int_equal(g.kv_keep(g.ctx, 9, keep, 3), HSD_OK);
    assert_int_equal(g.kv_len(g.ctx), 12);
    /* decode steps: the graph path, refused here, so eager after one warning */
    for (int s = 0; s < 4; s++) {
        assert_int_equal(c.forward(c.ctx, toks + s, 1, NULL, NULL, 1, lc), HSD_OK);
        assert_int_equal(g.forward(g.ctx, toks + s, 1, NULL, NULL, 1, lg), HSD_OK);
        assert_true(max_rel(lg, lc, V) < tol);
    }
    assert_int_equal(cap.n_graph_warn, 1);
    /* truncate, then a chain with a subset of rows in a new order, and one without logits */
    assert_int_equal(c.kv_truncate(c.ctx, 5), HSD_OK);
    assert_int_equal(g.kv_truncate(g.ctx, 5), HSD_OK);
    int32_t rows[3] = {3, 0, 3};
    assert_int_equal(c.forward(c.ctx, toks + 4, 4, NULL, rows, 3, lc), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks + 4, 4, NULL, rows, 3, lg), HSD_OK);
    assert_true(max_rel(lg, lc, (size_t)3 * V) < tol);
    assert_int_equal(c.forward(c.ctx, toks, 2, NULL, NULL, 0, NULL), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks, 2, NULL, NULL, 0, NULL), HSD_OK);
    assert_int_equal(c.forward(c.ctx, toks + 1, 1, NULL, NULL, 1, lc), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks + 1, 1, NULL, NULL, 1, lg), HSD_OK);
    assert_true(max_rel(lg, lc, V) < tol);
    /* the same argument errors as the CPU path */
    int32_t bad = V;
    assert_int_equal(g.forward(g.ctx, &bad, 1, NULL, NULL, 1, lg), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "outside the vocabulary"));
    int32_t bad_parents[2] = {-1, 1};
    assert_int_equal(g.forward(g.ctx, toks, 2, bad_parents, NULL, 2, lg), HSD_ERR_INVALID_ARG);
    assert_int_equal(g.kv_truncate(g.ctx, 99), HSD_ERR_OUT_OF_RANGE);
    int32_t bad_keep[2] = {1, 1};
    assert_int_equal(g.kv_keep(g.ctx, 0, bad_keep, 2), HSD_ERR_OUT_OF_RANGE);
    int32_t many[40] = {0};
    assert_int_equal(g.forward(g.ctx, many, 40, NULL, NULL, 0, NULL), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "exceed the context of 40"));
    hsd_log_set(NULL, NULL);

    g.free(g.ctx);
    assert_int_equal(g_live_allocs, live_before); /* every device buffer freed */
    free(lc), free(lg);
    hsd_tf_free(tf);
    hsd_synth_free(sm);
}

static void test_llama_f32(void **state) {
    (void)state;
    compare_shape("tiny", HSD_DT_F32, HSD_WEIGHTS_AUTO, 1e-4);
}
static void test_qwen2_f32_bias_tied(void **state) {
    (void)state;
    compare_shape("tiny-qwen2", HSD_DT_F32, HSD_WEIGHTS_AUTO, 1e-4);
}
/* BF16 file, BF16 on the device: the same stored values on both sides. */
static void test_llama_bf16(void **state) {
    (void)state;
    compare_shape("small", HSD_DT_BF16, HSD_WEIGHTS_AUTO, 1e-4);
}
/* Q8_0 widened to BF16 on upload: now the device's weights differ by BF16 rounding. */
static void test_q8_0_to_bf16(void **state) {
    (void)state;
    compare_shape("tiny", HSD_DT_Q8_0, HSD_WEIGHTS_AUTO, 3e-2);
}

/* hsd_model_load with backend CUDA puts a real checkpoint on the "device": no fallback
 * notice, the description says cuda, and greedy decoding gives the reference ids. */
static void test_model_load_on_device(void **state) {
    (void)state;
    const char *path = hsd_test_path("models/stories260K/stories260K.bin");
    HSD_REQUIRE_FILE(path);
    HSD_REQUIRE_FILE(hsd_test_path("models/reference_outputs.json"));
    json_error_t err;
    json_t *root = json_load_file(hsd_test_path("models/reference_outputs.json"), 0, &err);
    assert_non_null(root);
    json_t *arr = json_object_get(json_object_get(root, "stories260K"), "greedy_ids");
    size_t n_ref = json_array_size(arr);
    assert_true(n_ref >= 100);
    log_capture cap = {0};
    hsd_log_set(on_log, &cap);
    hsd_model_params p = hsd_model_default_params();
    p.backend = HSD_BACKEND_CUDA;
    hsd_model *m;
    assert_int_equal(hsd_model_load(path, &p, &m), HSD_OK);
    assert_int_equal(hsd_model_backend(m), HSD_BACKEND_CUDA);
    assert_non_null(strstr(hsd_model_desc(m), "[cuda: host emulation, F32 weights on device]"));
    assert_int_equal(cap.n_notice, 0);
    float logits[512];
    int32_t tok = 1;
    for (size_t i = 0; i < n_ref; i++) {
        assert_int_equal(hsd_model_forward(m, &tok, 1, NULL, NULL, 1, logits), HSD_OK);
        int32_t best = 0;
        for (int32_t j = 1; j < 512; j++)
            if (logits[j] > logits[best]) best = j;
        assert_int_equal(best, (int32_t)json_integer_value(json_array_get(arr, i)));
        tok = best;
    }
    hsd_log_set(NULL, NULL);
    hsd_model_free(m);
    json_decref(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_f32),
        cmocka_unit_test(test_qwen2_f32_bias_tied),
        cmocka_unit_test(test_llama_bf16),
        cmocka_unit_test(test_q8_0_to_bf16),
        cmocka_unit_test(test_model_load_on_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* A host emulation of the CUDA kernel interface (kernels/cuda_ops.h), written from the
 * header's contracts: "device" memory is host memory and every kernel is a plain loop over
 * it (mostly kernels/cpu_ops.c). Linked into a program, its definitions take the place of
 * the library's (the .cu files or the no-CUDA stub), so code above the interface (the CUDA
 * model, bench/gpu_bench.c's harness) can be tested on a machine without a GPU. Graph
 * capture is refused (kernels here run at once). */
#include "tests/cuda_emu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu_ops.h"
#include "kernels/cuda_ops.h"
#include "lib/base/error.h"
#include "lib/base/timer.h"

struct hsd_cuda {
    bool cublas_gemv;
    double t0;
};
int hsd_emu_live_allocs;

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
    hsd_emu_live_allocs++;
    return HSD_OK;
}
void hsd_cuda_free(hsd_cuda *cu, void *d_ptr) {
    (void)cu;
    if (d_ptr) hsd_emu_live_allocs--;
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
    cu->t0 = hsd_timer_ms();
    return HSD_OK;
}
hsd_status hsd_cuda_timer_stop(hsd_cuda *cu, float *ms) {
    *ms = (float)(hsd_timer_ms() - cu->t0);
    return HSD_OK;
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
hsd_status hsd_cuda_head_norm(hsd_cuda *cu, float *d_qkv, int32_t n,
                              const hsd_cuda_attn_shape *shape, const float *d_qnorm,
                              const float *d_knorm, float eps) {
    (void)cu;
    const int32_t hd = shape->head_dim, heads = shape->n_heads + shape->n_kv_heads;
    const int32_t W = (shape->n_heads + 2 * shape->n_kv_heads) * hd;
    for (int32_t t = 0; t < n; t++)
        for (int32_t h = 0; h < heads; h++) {
            float *x = d_qkv + (size_t)t * W + (size_t)h * hd;
            hsd_rmsnorm(x, x, h < shape->n_heads ? d_qnorm : d_knorm, hd, eps);
        }
    return HSD_OK;
}
/* a cache element of the shape's type at element index i, as fp32; and stored rounded as
 * the device does (to nearest even) */
static float emu_kv_get(const void *c, hsd_dtype t, size_t i) {
    if (t == HSD_DT_F16) return hsd_fp16_to_fp32(((const uint16_t *)c)[i]);
    if (t == HSD_DT_BF16) return hsd_bf16_to_fp32(((const uint16_t *)c)[i]);
    return ((const float *)c)[i];
}
static void emu_kv_put(void *c, hsd_dtype t, size_t i, float x) {
    if (t == HSD_DT_F16) ((uint16_t *)c)[i] = hsd_fp32_to_fp16(x);
    else if (t == HSD_DT_BF16) ((uint16_t *)c)[i] = hsd_fp32_to_bf16(x);
    else ((float *)c)[i] = x;
}
hsd_status hsd_cuda_qkv_post(hsd_cuda *cu, const float *d_qkv, int32_t n,
                             const hsd_cuda_attn_shape *shape, const float *d_bias,
                             const int32_t *d_pos, const float *d_cos, const float *d_sin,
                             bool interleaved, float *d_q, void *d_kcache, void *d_vcache,
                             const int32_t *d_meta) {
    (void)cu;
    hsd_status st = hsd_cuda_check_attention(shape, n, d_q, d_qkv, d_kcache, d_vcache, d_meta, true, NULL);
    if (st != HSD_OK) return st;
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
        for (int32_t j = 0; j < kv_dim; j++) {
            emu_kv_put(d_kcache, shape->kv_type, at + j, row[q_dim + j]);
            emu_kv_put(d_vcache, shape->kv_type, at + j, row[q_dim + kv_dim + j]);
        }
    }
    free(row);
    return HSD_OK;
}
hsd_status hsd_cuda_kv_store(hsd_cuda *cu, void *d_cache, hsd_dtype kv_type, const float *d_rows,
                             int32_t n, int32_t kv_dim, const int32_t *d_meta) {
    (void)cu;
    if (!hsd_cuda_kv_elem_bytes(kv_type)) return UNEMULATED("this cache type");
    for (size_t i = 0; i < (size_t)n * kv_dim; i++)
        emu_kv_put(d_cache, kv_type, (size_t)d_meta[0] * kv_dim + i, d_rows[i]);
    return HSD_OK;
}
/* The contract's arithmetic in its simplest form (scores, softmax and values over the
 * visible slots at once); the chunked order of the device differs only in rounding. The
 * work buffer is checked as the device checks it, and otherwise unused. */
hsd_status hsd_cuda_attention(hsd_cuda *cu, float *d_out, const float *d_q, const void *d_kcache,
                              const void *d_vcache, const hsd_cuda_attn_shape *shape, int32_t n,
                              const int32_t *d_meta, const int32_t *d_anc,
                              const int32_t *d_anc_off, void *d_work, size_t work_bytes) {
    (void)cu;
    hsd_status st = hsd_cuda_check_attention(shape, n, d_out, d_q, d_kcache, d_vcache, d_meta,
                                             d_anc_off == NULL, d_anc);
    if (st != HSD_OK) return st;
    if ((st = hsd_cuda_check_attn_work(shape, d_work, work_bytes)) != HSD_OK) return st;
    const int32_t hd = shape->head_dim, L = d_meta[0], kv_mul = shape->n_heads / shape->n_kv_heads;
    const int32_t q_dim = shape->n_heads * hd, kv_dim = shape->n_kv_heads * hd;
    const hsd_dtype kt = shape->kv_type;
    float *att = malloc(sizeof(float) * (L + n)), *kr = malloc(sizeof(float) * hd);
    for (int32_t t = 0; t < n; t++)
        for (int32_t h = 0; h < shape->n_heads; h++) {
            int32_t n_new = d_anc_off ? d_anc_off[t + 1] - d_anc_off[t] : t + 1, nv = L + n_new;
            /* the window's first visible slot (slot i holds position i) */
            int32_t lo = shape->window > 0 && nv > shape->window ? nv - shape->window : 0;
            const float *q = d_q + (size_t)t * q_dim + (size_t)h * hd;
            size_t koff = (size_t)(h / kv_mul) * hd;
            for (int32_t i = lo; i < nv; i++) {
                int32_t slot = i < L ? i : L + (d_anc_off ? d_anc[d_anc_off[t] + i - L] : i - L);
                for (int32_t d = 0; d < hd; d++) kr[d] = emu_kv_get(d_kcache, kt, (size_t)slot * kv_dim + koff + d);
                att[i - lo] = hsd_dot_f32(q, kr, hd) / sqrtf((float)hd);
            }
            hsd_softmax(att, nv - lo);
            float *o = d_out + (size_t)t * q_dim + (size_t)h * hd;
            memset(o, 0, sizeof(float) * hd);
            for (int32_t i = lo; i < nv; i++) {
                int32_t slot = i < L ? i : L + (d_anc_off ? d_anc[d_anc_off[t] + i - L] : i - L);
                for (int32_t d = 0; d < hd; d++)
                    o[d] += att[i - lo] * emu_kv_get(d_vcache, kt, (size_t)slot * kv_dim + koff + d);
            }
        }
    free(att), free(kr);
    return HSD_OK;
}
hsd_status hsd_cuda_attn_work_init(hsd_cuda *cu, void *d_work, size_t work_bytes) {
    (void)cu;
    memset(d_work, 0, work_bytes);
    return HSD_OK;
}
hsd_status hsd_cuda_kv_keep(hsd_cuda *cu, void *d_cache, int32_t n_layers, int32_t n_ctx,
                            size_t row_bytes, int32_t base, const int32_t *d_keep, int32_t n_keep) {
    (void)cu;
    uint8_t *c = d_cache;
    for (int32_t l = 0; l < n_layers; l++)
        for (int32_t j = 0; j < n_keep; j++)
            memmove(c + ((size_t)l * n_ctx + base + j) * row_bytes,
                    c + ((size_t)l * n_ctx + base + d_keep[j]) * row_bytes, row_bytes);
    return HSD_OK;
}
hsd_status hsd_cuda_indexed_head(hsd_cuda *cu, float *d_out, const hsd_mat *U, const float *d_h,
                                 const int32_t *d_idx, int32_t k) {
    (void)cu;
    hsd_status s = hsd_cuda_check_indexed_head(U, d_out, d_h, k, d_idx != NULL);
    if (s != HSD_OK) return s;
    float *row = malloc(sizeof(float) * U->cols);
    for (int32_t j = 0; j < k; j++) {
        hsd_mat_rows_f32(U, d_idx ? d_idx[j] : j, 1, row);
        d_out[j] = hsd_dot_f32(row, d_h, U->cols);
    }
    free(row);
    return HSD_OK;
}
/* k largest by a selection sort over a copy: slow, plain, and enough for tests */
hsd_status hsd_cuda_topk(hsd_cuda *cu, int32_t *d_idx, const float *d_x, int32_t V, int32_t k) {
    (void)cu;
    hsd_status s = hsd_cuda_check_topk(d_idx, d_x, V, k);
    if (s != HSD_OK) return s;
    char *taken = calloc((size_t)V, 1);
    for (int32_t j = 0; j < k; j++) {
        int32_t best = -1;
        for (int32_t i = 0; i < V; i++)
            if (!taken[i] && (best < 0 || d_x[i] > d_x[best])) best = i;
        taken[best] = 1;
        d_idx[j] = best;
    }
    free(taken);
    return HSD_OK;
}
hsd_status hsd_cuda_argmax(hsd_cuda *cu, int32_t *d_out, const float *d_logits, int32_t n_rows,
                           int32_t V) {
    (void)cu;
    for (int32_t r = 0; r < n_rows; r++) {
        const float *x = d_logits + (size_t)r * V;
        int32_t b = 0;
        for (int32_t i = 1; i < V; i++)
            if (x[i] > x[b]) b = i;
        d_out[r] = b;
    }
    return HSD_OK;
}
hsd_status hsd_cuda_softmax(hsd_cuda *cu, float *d_x, int32_t n_rows, int32_t V, float temp) {
    (void)cu;
    for (int32_t r = 0; r < n_rows; r++) {
        float *x = d_x + (size_t)r * V;
        for (int32_t i = 0; i < V; i++) x[i] /= temp;
        hsd_softmax(x, V);
    }
    return HSD_OK;
}
static double residual(const float *p, const float *q, int32_t i) {
    return q ? fmax((double)p[i] - q[i], 0.0) : p[i];
}
static int32_t inverse_cdf(const float *p, const float *q, int32_t V, float u) {
    double total = 0; /* double: a float running sum over 150k tiny terms drifts */
    for (int32_t i = 0; i < V; i++) total += residual(p, q, i);
    double target = u * total, acc = 0;
    for (int32_t i = 0; i < V; i++) {
        acc += residual(p, q, i);
        if (acc > target) return i;
    }
    return V - 1;
}
hsd_status hsd_cuda_sample(hsd_cuda *cu, int32_t *d_out, const float *d_p, int32_t V, float u) {
    (void)cu;
    d_out[0] = inverse_cdf(d_p, NULL, V, u);
    return HSD_OK;
}
hsd_status hsd_cuda_reject(hsd_cuda *cu, int32_t *d_out, const float *d_p, const float *d_q,
                           int32_t V, int32_t x, float u_accept, float u_resample) {
    (void)cu;
    bool accept = u_accept * d_q[x] < d_p[x];
    d_out[0] = accept;
    d_out[1] = accept ? x : inverse_cdf(d_p, d_q, V, u_resample);
    return HSD_OK;
}

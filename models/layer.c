/* One decoder layer, the math of the forward (after llama2.c's run.c). The N new token rows
 * of a forward are stacked, so every weight row is read once for all of them; attention runs
 * per KV head against each token's own sequence slot's cache (kv_cache.c keeps those caches)
 * through the streaming kernel (kernels/attention.h), all query heads of a KV head and up to
 * HSD_ATTN_TILE tokens of a chain sharing one pass over its keys and values.
 *
 *   h = norm(x)                                     attention norm
 *   q, k, v = Wq h (+ bq), Wk h (+ bk), Wv h (+ bv)  projections (Qwen2: biases)
 *   q, k = norm_head(q), norm_head(k)               Qwen3, Gemma 3
 *   q, k = rope(q, pos), rope(k, pos)
 *   a = softmax(scale q·K / softcap) V              causal, sliding window on some layers
 *   x = x + post_norm(Wo a)                         Gemma 3: post-attention norm
 *   h = norm(x)                                     FFN norm
 *   x = x + post_norm(W_down (act(W_gate h) * W_up h))   SwiGLU, or GeGLU for Gemma */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/row_ops.h"
#include "models/tf_internal.h"

#ifdef HSD_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* Below this many multiply-adds a job runs on one thread: waking the second costs more. */
#define HSD_PAR_MIN_WORK (1 << 17)

/* ---- matrix products on the thread pool ---------------------------------------------- */

void hsd_tf_matmul(hsd_transformer *tf, float *out, int32_t ld, const float *x, int32_t n,
                   const hsd_mat *w) {
#ifdef HSD_HAVE_OPENBLAS
    /* sgemm's blocking beats the row kernel for f32 weights only from a few dozen tokens on
     * (prefill): measured on synth qwen2.5-0.5b f32, sgemm is 1.9x slower at n = 8, equal at
     * n = 16 and 1.9x faster at n = 64 (bench/RESULTS.md). hsd_model_params.no_blas turns
     * it off; so does the scalar CPU level (kernels/cpu_features.h: one dispatch). */
    if (!tf->no_blas && hsd_cpu_level_active() > HSD_CPU_SCALAR && w->type == HSD_DT_F32 && n >= 32 && (int64_t)w->rows * w->cols >= (1 << 16)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, w->rows, w->cols, 1.0f, x, w->cols,
                    (const float *)w->data, w->cols, 0.0f, out, ld);
        return;
    }
#endif
    /* the one threaded product (kernels/matmul.h); cannot fail: ensure_scratch reserved the
     * workspace for n tokens of max_cols */
    (void)hsd_mm_run(&tf->mm, tf->pool, tf->n_threads, out, ld, x, n, w, NULL, 0);
}

/* Products of the same activations (q, k, v; gate, up) as one job on the pool: one hand-off
 * and one activation preparation for all. Where they cannot share a job (different storage
 * types, as in some quantised files, or sgemm's range) they run one after the other. */
static void tf_matmul_fused(hsd_transformer *tf, const float *x, int32_t n, const hsd_mm_prod *p,
                            int32_t np) {
    int same = 1;
    for (int32_t i = 1; i < np; i++)
        same &= p[i].w->type == p[0].w->type && p[i].w->cols == p[0].w->cols;
#ifdef HSD_HAVE_OPENBLAS
    same &= !(!tf->no_blas && p[0].w->type == HSD_DT_F32 && n >= 32); /* sgemm's range */
#endif
    if (same && hsd_mm_run_fused(&tf->mm, tf->pool, tf->n_threads, x, n, p, np) == HSD_OK) return;
    for (int32_t i = 0; i < np; i++) hsd_tf_matmul(tf, p[i].out, p[i].ld, x, n, p[i].w);
}

/* ---- small row operations --------------------------------------------------------------- */

static void rmsnorm_rows(float *out, const float *x, const float *w, int32_t N, int32_t dim,
                         float eps) {
    for (int32_t t = 0; t < N; t++)
        hsd_rmsnorm(out + (size_t)t * dim, x + (size_t)t * dim, w, dim, eps);
}

static void add_rows(float *x, const float *y, int32_t N, int32_t dim) {
    for (int32_t t = 0; t < N; t++) hsd_add(x + (size_t)t * dim, y + (size_t)t * dim, dim);
}

/* gate[i] = gelu_tanh(gate[i]) * up[i], GELU's tanh approximation as Gemma (and ggml_gelu) use */
static void gelu_tanh_mul(float *gate, const float *up, size_t n) {
    const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (size_t i = 0; i < n; i++) {
        float x = gate[i];
        gate[i] = 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x))) * up[i];
    }
}

void hsd_tf_softcap(const hsd_tf_config *c, float *x, size_t n) {
    if (c->final_softcap <= 0) return;
    /* vectorised (262k logits a row for Gemma 3); -inf stays -inf: a trimmed draft head
     * masks tokens that way */
    hsd_row_softcap(x, n, c->final_softcap);
}

/* ---- attention ------------------------------------------------------------------------ */

typedef struct attn_job {
    hsd_transformer *tf;
    int32_t layer;
} attn_job;

/* The rows of one unit of attention work: KV head h of segment sg, for chain tokens
 * t0..t0+nt (a tile) or one tree token t0 (nt = 1, its ancestor list as the position map).
 * Every query head of the KV head comes along (GQA: the block is read once for all). A
 * row's visible positions: first..pos, first = pos - swa_window + 1 on sliding layers. */
static void attn_unit(hsd_transformer *tf, int32_t layer, const fw_seg *sg, int32_t h,
                      int32_t t0, int32_t nt, float *scratch, hsd_attn_row *rows) {
    const hsd_tf_config *c = &tf->cfg;
    const int32_t hd = c->head_dim, kv_mul = c->n_heads / c->n_kv_heads;
    const float scale = c->attn_scale > 0 ? c->attn_scale : 1.0f / sqrtf((float)hd);
    hsd_attn_kv kv = {tf->kv_type, NULL, NULL, hd, sg->L, NULL, tf->kv_tiled};
    hsd_tf_kv_head(tf, sg->seq, layer, h, &kv.k, &kv.v);
    if (!sg->chain) kv.map = tf->anc + tf->anc_off[t0];
    int32_t nr = 0;
    for (int32_t t = t0; t < t0 + nt; t++) {
        const int32_t pos = tf->pos[t];
        int32_t first = 0;
        if (tf->layers[layer].slides && pos - c->swa_window + 1 > 0) first = pos - c->swa_window + 1;
        for (int32_t g = 0; g < kv_mul; g++) {
            size_t off = (size_t)t * tf->q_dim + (size_t)(h * kv_mul + g) * hd;
            rows[nr++] = (hsd_attn_row){tf->q + off, tf->xb + off, first, pos};
        }
    }
    hsd_attn_rows(&kv, rows, nr, scale, c->attn_softcap, scratch);
}

/* Units (segment x KV head x tile or tree token) dealt round-robin to the threads; which
 * thread computes a row does not change its bits. */
static void attn_task(void *arg, int32_t tid, int32_t nth) {
    attn_job *j = arg;
    hsd_transformer *tf = j->tf;
    const int32_t nkv = tf->cfg.n_kv_heads;
    float *scratch = tf->att + (size_t)tid * tf->att_floats;
    hsd_attn_row *rows = tf->att_rows + (size_t)tid * HSD_ATTN_TILE * (tf->cfg.n_heads / nkv);
    int64_t w = 0;
    for (int32_t i = 0; i < tf->n_segs; i++) {
        const fw_seg *sg = &tf->segs[i];
        const int32_t step = sg->chain ? HSD_ATTN_TILE : 1;
        for (int32_t t = 0; t < sg->n; t += step)
            for (int32_t h = 0; h < nkv; h++, w++) {
                if (w % nth != tid) continue;
                int32_t nt = sg->n - t < step ? sg->n - t : step;
                attn_unit(tf, j->layer, sg, h, sg->t0 + t, nt, scratch, rows);
            }
    }
}

/* ---- the layer ------------------------------------------------------------------------- */

void hsd_tf_layer_forward(hsd_transformer *tf, int32_t l, int32_t N) {
    const hsd_tf_config *c = &tf->cfg;
    const hsd_tf_layer *Ly = &tf->layers[l];
    const int32_t dim = c->dim, hd = c->head_dim, half = hd / 2, H = c->hidden_dim;
    float *k = tf->kbuf, *v = tf->vbuf; /* this layer's new keys and values, fp32 */

    /* 1. attention norm, then the q, k, v projections */
    rmsnorm_rows(tf->xb, tf->x, Ly->attn_norm, N, dim, c->norm_eps);
    const hsd_mm_prod qkv[3] = {{tf->q, tf->q_dim, &Ly->wq, NULL, 0},
                                {k, tf->kv_dim, &Ly->wk, NULL, 0},
                                {v, tf->kv_dim, &Ly->wv, NULL, 0}};
    tf_matmul_fused(tf, tf->xb, N, qkv, 3);
    const float *cos_t = Ly->slides && tf->rope_cos_swa ? tf->rope_cos_swa : tf->rope_cos;
    const float *sin_t = Ly->slides && tf->rope_sin_swa ? tf->rope_sin_swa : tf->rope_sin;
    for (int32_t t = 0; t < N; t++) {
        float *qt = tf->q + (size_t)t * tf->q_dim, *kt = k + (size_t)t * tf->kv_dim;
        if (Ly->bq) { /* Qwen2 */
            hsd_add(qt, Ly->bq, tf->q_dim);
            hsd_add(kt, Ly->bk, tf->kv_dim);
            hsd_add(v + (size_t)t * tf->kv_dim, Ly->bv, tf->kv_dim);
        }
        /* 2. per-head RMSNorm of q and k (Qwen3, Gemma 3) */
        if (c->qk_norm) {
            for (int32_t h = 0; h < c->n_heads; h++)
                hsd_rmsnorm(qt + h * hd, qt + h * hd, Ly->q_norm, hd, c->norm_eps);
            for (int32_t h = 0; h < c->n_kv_heads; h++)
                hsd_rmsnorm(kt + h * hd, kt + h * hd, Ly->k_norm, hd, c->norm_eps);
        }
        /* 3. rope at the token's position */
        const float *cs = cos_t + (size_t)tf->pos[t] * half,
                    *sn = sin_t + (size_t)tf->pos[t] * half;
        hsd_rope(qt, c->n_heads, hd, cs, sn, c->rope_interleaved);
        hsd_rope(kt, c->n_kv_heads, hd, cs, sn, c->rope_interleaved);
    }
    if (tf->kv_rot_k) { /* a quantised cache's rotations (tf_internal.h) */
        hsd_hadamard(tf->q, (int64_t)N * tf->q_dim, tf->kv_rot_k);
        hsd_hadamard(k, (int64_t)N * tf->kv_dim, tf->kv_rot_k);
        hsd_hadamard(v, (int64_t)N * tf->kv_dim, tf->kv_rot_v);
    }
    hsd_tf_kv_commit(tf, l, k, v); /* the new keys and values join their slots' caches */

    /* 4. attention of every token and head, into xb (q_dim wide) */
    attn_job aj = {tf, l};
    hsd_pool_run(tf->pool, attn_task, &aj, tf->attn_work >= HSD_PAR_MIN_WORK ? tf->n_threads : 1);

    if (tf->kv_rot_v) hsd_hadamard(tf->xb, (int64_t)N * tf->q_dim, tf->kv_rot_v); /* rotated back */

    /* 5. output projection (hb as the temporary), Gemma's post-attention norm, residual */
    hsd_tf_matmul(tf, tf->hb, dim, tf->xb, N, &Ly->wo);
    if (Ly->attn_post_norm) rmsnorm_rows(tf->hb, tf->hb, Ly->attn_post_norm, N, dim, c->norm_eps);
    add_rows(tf->x, tf->hb, N, dim);

    /* 6. FFN norm, gate and up projections, SwiGLU or GeGLU, down projection */
    rmsnorm_rows(tf->xb, tf->x, Ly->ffn_norm, N, dim, c->norm_eps);
    const hsd_mm_prod gate_up[2] = {{tf->hb, H, &Ly->w_gate, NULL, 0},
                                    {tf->hb2, H, &Ly->w_up, NULL, 0}};
    tf_matmul_fused(tf, tf->xb, N, gate_up, 2);
    if (c->act == HSD_ACT_GELU_TANH) gelu_tanh_mul(tf->hb, tf->hb2, (size_t)N * H);
    else /* row by row: over all N rows at once, where the vector body (exp8) ends and the
          * scalar tail (expf) begins would depend on N (batch invariance) */
        for (int32_t t = 0; t < N; t++)
            hsd_silu_mul(tf->hb + (size_t)t * H, tf->hb2 + (size_t)t * H, H);
    hsd_tf_matmul(tf, tf->xb, dim, tf->hb, N, &Ly->w_down);

    /* 7. Gemma's post-FFN norm, residual */
    if (Ly->ffn_post_norm) rmsnorm_rows(tf->xb, tf->xb, Ly->ffn_post_norm, N, dim, c->norm_eps);
    add_rows(tf->x, tf->xb, N, dim);
}

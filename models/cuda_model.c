/* A transformer on a CUDA device behind hsd_model_iface. The forward is the CPU path's
 * (models/forward.c, models/layer.c) step by step: embedding, then per layer rmsnorm, the q/k/v
 * projection, bias + rope + k/v into the device cache, attention (chain or tree), output
 * projection added into the residual, rmsnorm, SwiGLU FFN added into the residual; then the
 * final norm and classifier for the rows asked for. To cut launches (each costs microseconds
 * and a decode step would otherwise be ~20 per layer), q/k/v and gate/up are each one matrix
 * on the device, and the residual adds happen inside the projections (9 launches per layer).
 * Per-step inputs (kv_len, tokens, positions, rows, tree ancestors) go up in one copy, and a
 * single-token decode step is replayed from a captured CUDA graph, since the kernels read
 * kv_len on the device.
 *
 * Sequence slots (hsd_model_params.n_seq): each slot has its own KV cache; a batched forward
 * runs the new tokens of several slots as one set of products (the weights are read once for
 * all of them) and only q/k/v post-processing and attention per slot. The products are
 * batch-invariant (kernels/cuda_mma.cu), so every slot's logits are those of its own forward
 * alone. A single forward is a batch of one entry on the selected slot. */
#include "models/cuda_model.h"
#include "models/arch.h"
#include "models/forward_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_ops.h"
#include "lib/base/error.h"
#include "lib/base/log.h"

typedef struct cm_layer {
    hsd_mat wqkv; /* rows: q (q_dim), k (kv_dim), v (kv_dim) */
    hsd_mat wo;
    hsd_mat w_gu; /* rows: gate (hidden), up (hidden) */
    hsd_mat w_down;
    float *attn_norm, *ffn_norm, *bqkv; /* bqkv: Qwen2's biases in the wqkv layout, or NULL */
    float *q_norm, *k_norm;             /* Qwen3's per-head norms, or NULL */
} cm_layer;

/* Forwards of up to CM_GRAPH_MAX_N tokens are replayed from graphs (their inputs then sit at
 * fixed offsets of the per-step buffer, and every kernel reads its counts from it). */
#define CM_GRAPH_MAX_N 16
/* tokens whose attention partials the work buffer holds at once (a longer forward's tokens
 * go through in groups of this many) */
#define CM_ATTN_TOKENS 64
#define CM_GRAPHS 8
typedef struct cm_graph {
    hsd_cuda_graph *g;
    int32_t n, rows;
    bool chain;
    uint32_t used; /* the model's tick at the last replay */
} cm_graph;

typedef struct cuda_model {
    hsd_cuda *cu;
    hsd_tf_config cfg;
    int32_t n_ctx, q_dim, kv_dim, max_cols;
    int32_t n_seq, cur; /* sequence slots, the selected one */
    int32_t *kv_lens;   /* per slot */
    hsd_mat tok_emb, cls;
    bool tied;
    float *out_norm;
    cm_layer *layers;
    /* [slot][layer][n_ctx][kv_dim] elements of kv_type (F16 by default, as on the CPU; BF16
     * or F32 as asked; the CPU's quantised caches are F16 here) */
    uint8_t *kc, *vc;
    hsd_dtype kv_type;
    size_t kv_row_bytes;
    /* the attention's per-chunk partial results (hsd_cuda_attention), for CM_ATTN_TOKENS
     * tokens at a time: allocated once, so that captured graphs keep its address */
    void *attn_work;
    size_t attn_work_bytes;
    float *rope_cos, *rope_sin; /* [n_ctx][head_dim/2] */

    /* scratch, grown to the largest n (tokens) and n_rows seen */
    int32_t cap_n, cap_rows;
    float *x, *xb, *qkv, *q, *ao, *gu, *hb, *logits;
    void *xh;
    /* per-step inputs: tokens, positions, rows, then per entry [kv_len, tree offsets, ancestors] */
    int32_t *d_meta, *h_meta;
    size_t meta_cap;
    int32_t *tree_depth; /* host, cap_n */

    /* captured forwards of one entry, per slot: CM_GRAPHS of them, keyed by (n, rows, chain)
     * and replaced least recently used. A shape is captured the second time it is seen (a
     * decode step, and the few verification and draft-tree sizes that recur), since a capture
     * costs about as much as the launches it saves once. */
    cm_graph *graphs; /* [n_seq][CM_GRAPHS] */
    uint32_t seen[CM_GRAPH_MAX_N + 1][CM_GRAPH_MAX_N + 1][2], tick;
    bool graphs_on;
} cuda_model;

/* The captured decode steps hold buffer addresses: dropped when a buffer moves. */
static void cm_drop_graphs(cuda_model *m) {
    for (int32_t i = 0; m->graphs && i < m->n_seq * CM_GRAPHS; i++) {
        hsd_cuda_graph_free(m->graphs[i].g);
        m->graphs[i] = (cm_graph){0};
    }
}

static void cm_free_scratch(cuda_model *m) {
    float **bufs[] = {&m->x, &m->xb, &m->qkv, &m->q, &m->ao, &m->gu, &m->hb, &m->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        hsd_cuda_free(m->cu, *bufs[i]);
        *bufs[i] = NULL;
    }
    hsd_cuda_free(m->cu, m->xh);
    m->xh = NULL;
    m->cap_n = m->cap_rows = 0;
}

static void cm_free(void *ctx) {
    cuda_model *m = ctx;
    if (!m) return;
    cm_drop_graphs(m);
    free(m->graphs);
    free(m->kv_lens);
    cm_free_scratch(m);
    if (m->layers)
        for (int32_t l = 0; l < m->cfg.n_layers; l++) {
            cm_layer *L = &m->layers[l];
            void *p[] = {(void *)L->wqkv.data,
                         (void *)L->wo.data,
                         (void *)L->w_gu.data,
                         (void *)L->w_down.data,
                         L->attn_norm,
                         L->ffn_norm,
                         L->bqkv,
                         L->q_norm,
                         L->k_norm};
            for (size_t i = 0; i < sizeof p / sizeof *p; i++) hsd_cuda_free(m->cu, p[i]);
        }
    free(m->layers);
    if (!m->tied) hsd_cuda_free(m->cu, (void *)m->cls.data);
    hsd_cuda_free(m->cu, (void *)m->tok_emb.data);
    hsd_cuda_free(m->cu, m->out_norm);
    hsd_cuda_free(m->cu, m->kc);
    hsd_cuda_free(m->cu, m->vc);
    hsd_cuda_free(m->cu, m->attn_work);
    hsd_cuda_free(m->cu, m->rope_cos);
    hsd_cuda_free(m->cu, m->rope_sin);
    hsd_cuda_free(m->cu, m->d_meta);
    hsd_cuda_host_free(m->cu, m->h_meta);
    free(m->tree_depth);
    hsd_cuda_close(m->cu);
    free(m);
}

hsd_dtype hsd_cuda_model_weight_type(hsd_ftype choice, hsd_dtype stored, int32_t dim) {
    switch (choice) {
    case HSD_FTYPE_F32:
        return HSD_DT_F32;
    case HSD_FTYPE_F16:
        return HSD_DT_F16;
    case HSD_FTYPE_BF16:
        return HSD_DT_BF16;
    case HSD_FTYPE_AUTO:
    case HSD_FTYPE_Q8_0: /* refused by hsd_model_load (device weights are F32/F16/BF16) */
    case HSD_FTYPE_Q4_K_M:
        break;
    }
    if (stored == HSD_DT_F16 || stored == HSD_DT_BF16) return stored;
    if (stored == HSD_DT_F32 && dim < 1024) return HSD_DT_F32;
    return HSD_DT_BF16;
}

/* ---- upload ------------------------------------------------------------------------ */

static hsd_status upload_f32(cuda_model *m, const float *src, size_t n, float **out) {
    *out = NULL;
    if (!src) return HSD_OK;
    hsd_status s = hsd_cuda_alloc(m->cu, n * sizeof(float), (void **)out);
    if (s == HSD_OK) s = hsd_cuda_upload(m->cu, *out, src, n * sizeof(float));
    return s;
}

/* Rows of a weight matrix to device memory d as type `to`: bytes as they are when the types
 * agree, otherwise widened to fp32 and narrowed again in chunks of rows. */
static hsd_status upload_rows(cuda_model *m, const hsd_mat *src, hsd_dtype to, void *d) {
    size_t rb = hsd_dtype_row_bytes(to, src->cols);
    if (src->type == to) return hsd_cuda_upload(m->cu, d, src->data, rb * (size_t)src->rows);
    int32_t chunk = (int32_t)((8u << 20) / ((size_t)src->cols * 4));
    if (chunk < 1) chunk = 1;
    float *f = malloc((size_t)chunk * src->cols * sizeof *f);
    void *narrow = malloc((size_t)chunk * rb);
    hsd_status s = HSD_OK;
    if (!f || !narrow) {
        free(f);
        free(narrow);
        return hsd_error(HSD_ERR_NOMEM, "cuda model: out of host memory converting weights");
    }
    for (int32_t r = 0; r < src->rows && s == HSD_OK; r += chunk) {
        int32_t c = src->rows - r < chunk ? src->rows - r : chunk;
        size_t count = (size_t)c * src->cols;
        hsd_mat_rows_f32(src, r, c, f);
        if (to == HSD_DT_F32) {
            memcpy(narrow, f, count * sizeof(float));
        } else {
            uint16_t *h = narrow;
            for (size_t i = 0; i < count; i++)
                h[i] = to == HSD_DT_BF16 ? hsd_fp32_to_bf16(f[i]) : hsd_fp32_to_fp16(f[i]);
        }
        s = hsd_cuda_upload(m->cu, (char *)d + (size_t)r * rb, narrow, (size_t)c * rb);
        if (s == HSD_OK) s = hsd_cuda_sync(m->cu); /* narrow is reused for the next chunk */
    }
    free(f);
    free(narrow);
    return s;
}

/* Matrices with the same number of columns stacked row-wise into one device matrix of type
 * `to` (q/k/v, gate/up), so one product computes them all. */
static hsd_status upload_stacked(cuda_model *m, const hsd_mat *const *src, int n_src, hsd_dtype to,
                                 hsd_mat *out) {
    memset(out, 0, sizeof *out);
    int32_t rows = 0;
    for (int i = 0; i < n_src; i++) rows += src[i]->rows;
    size_t rb = hsd_dtype_row_bytes(to, src[0]->cols);
    void *d = NULL;
    hsd_status s = hsd_cuda_alloc(m->cu, rb * (size_t)rows, &d);
    if (s != HSD_OK) return s;
    *out = (hsd_mat){to, rows, src[0]->cols, d, NULL};
    size_t off = 0;
    for (int i = 0; i < n_src && s == HSD_OK; i++) {
        s = upload_rows(m, src[i], to, (char *)d + off);
        off += rb * (size_t)src[i]->rows;
    }
    return s;
}

static hsd_status upload_mat(cuda_model *m, const hsd_mat *src, hsd_dtype to, hsd_mat *out) {
    return upload_stacked(m, &src, 1, to, out);
}

static hsd_status cm_ensure_scratch(cuda_model *m, int32_t n, int32_t n_rows, size_t meta_ints) {
    hsd_status s = HSD_OK;
    if (n > m->cap_n || n_rows > m->cap_rows) {
        int32_t N = n > m->cap_n ? n : m->cap_n, R = n_rows > m->cap_rows ? n_rows : m->cap_rows;
        int32_t NR = N > R ? N : R;
        cm_drop_graphs(m); /* they hold the old buffers' addresses */
        cm_free_scratch(m);
        const hsd_tf_config *c = &m->cfg;
        struct {
            float **p;
            size_t n;
        } bufs[] = {{&m->x, (size_t)N * c->dim},
                    {&m->xb, (size_t)NR * c->dim},
                    {&m->qkv, (size_t)N * (m->q_dim + 2 * m->kv_dim)},
                    {&m->q, (size_t)N * m->q_dim},
                    {&m->gu, (size_t)N * 2 * c->hidden_dim},
                    {&m->ao, (size_t)N * m->q_dim},
                    {&m->hb, (size_t)N * c->hidden_dim},
                    {&m->logits, (size_t)R * c->vocab_size}};
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs && s == HSD_OK; i++)
            s = hsd_cuda_alloc(m->cu, bufs[i].n * sizeof(float), (void **)bufs[i].p);
        if (s == HSD_OK) s = hsd_cuda_alloc(m->cu, (size_t)NR * m->max_cols * 2, &m->xh);
        int32_t *depth = realloc(m->tree_depth, (size_t)N * sizeof *depth);
        if (depth) m->tree_depth = depth;
        if (s == HSD_OK && !depth) s = hsd_error(HSD_ERR_NOMEM, "cuda forward: out of memory");
        if (s != HSD_OK) {
            cm_free_scratch(m);
            return s;
        }
        m->cap_n = N;
        m->cap_rows = R;
    }
    if (meta_ints > m->meta_cap) {
        cm_drop_graphs(m);
        hsd_cuda_free(m->cu, m->d_meta);
        hsd_cuda_host_free(m->cu, m->h_meta);
        m->d_meta = m->h_meta = NULL;
        m->meta_cap = 0;
        size_t cap = meta_ints < 4096 ? 4096 : meta_ints * 2;
        s = hsd_cuda_alloc(m->cu, cap * sizeof(int32_t), (void **)&m->d_meta);
        if (s == HSD_OK) s = hsd_cuda_host_alloc(m->cu, cap * sizeof(int32_t), (void **)&m->h_meta);
        if (s != HSD_OK) return s;
        m->meta_cap = cap;
    }
    return HSD_OK;
}

/* ---- forward ----------------------------------------------------------------------- */

#define TRY(x)                                                                                     \
    do {                                                                                           \
        hsd_status s_ = (x);                                                                       \
        if (s_ != HSD_OK) return s_;                                                               \
    } while (0)

/* One entry of a forward: a slot's new tokens, [start, start + n) of the batch; its block
 * in the per-step inputs (at int offset `meta`) is [kv_len, tree offsets, ancestors]. */
typedef struct cm_seg {
    int32_t slot, start, n, meta;
    bool chain;
} cm_seg;

/* The slot's cache of layer l. */
static uint8_t *cm_cache(const cuda_model *m, uint8_t *base, int32_t slot, int32_t l) {
    return base + ((size_t)slot * m->cfg.n_layers + (size_t)l) * m->n_ctx * m->kv_row_bytes;
}

/* Enqueues the whole forward (the part a graph can capture): reads only device memory. The
 * products, norms and activations run once over all n tokens of all entries; q/k/v post-
 * processing and attention once per entry, over its slot's cache. */
static hsd_status cm_enqueue(cuda_model *m, const cm_seg *segs, int32_t n_segs, int32_t n,
                             int32_t n_rows) {
    const hsd_tf_config *c = &m->cfg;
    hsd_cuda *cu = m->cu;
    const int32_t dim = c->dim, hid = c->hidden_dim, qkv_w = m->q_dim + 2 * m->kv_dim;
    const int32_t *tok = m->d_meta, *pos = tok + n, *rows = pos + n;
    hsd_cuda_attn_shape shape = {c->n_heads, c->n_kv_heads, c->head_dim, m->n_ctx, 0, m->kv_type};

    TRY(hsd_cuda_embed(cu, m->x, &m->tok_emb, tok, n));
    for (int32_t l = 0; l < c->n_layers; l++) {
        const cm_layer *L = &m->layers[l];
        shape.window = hsd_arch_layer_slides(c, l) ? c->swa_window : 0; /* Phi-3, Mistral */
        TRY(hsd_cuda_rmsnorm(cu, m->xb, m->x, L->attn_norm, NULL, n, dim, c->norm_eps));
        TRY(hsd_cuda_matmul(cu, m->qkv, qkv_w, m->xb, n, &L->wqkv, m->xh));
        if (L->q_norm) /* Qwen3: each q and k head normalized before rope */
            TRY(hsd_cuda_head_norm(cu, m->qkv, n, &shape, L->q_norm, L->k_norm, c->norm_eps));
        for (int32_t i = 0; i < n_segs; i++) {
            const cm_seg *g = &segs[i];
            const int32_t *meta = m->d_meta + g->meta;
            const int32_t *anc_off = g->chain ? NULL : meta + 1,
                          *anc = g->chain ? NULL : meta + 1 + g->n + 1;
            uint8_t *kc = cm_cache(m, m->kc, g->slot, l), *vc = cm_cache(m, m->vc, g->slot, l);
            float *q = m->q + (size_t)g->start * m->q_dim;
            TRY(hsd_cuda_qkv_post(cu, m->qkv + (size_t)g->start * qkv_w, g->n, &shape, L->bqkv,
                                  pos + g->start, m->rope_cos, m->rope_sin, c->rope_interleaved, q,
                                  kc, vc, meta));
            TRY(hsd_cuda_attention(cu, m->ao + (size_t)g->start * m->q_dim, q, kc, vc, &shape,
                                   g->n, meta, anc, anc_off, m->attn_work, m->attn_work_bytes));
        }
        TRY(hsd_cuda_matmul_add(cu, m->x, dim, m->ao, n, &L->wo, m->xh));
        TRY(hsd_cuda_rmsnorm(cu, m->xb, m->x, L->ffn_norm, NULL, n, dim, c->norm_eps));
        TRY(hsd_cuda_matmul(cu, m->gu, 2 * hid, m->xb, n, &L->w_gu, m->xh));
        TRY(hsd_cuda_silu_mul_split(cu, m->hb, m->gu, n, hid));
        TRY(hsd_cuda_matmul_add(cu, m->x, dim, m->hb, n, &L->w_down, m->xh));
    }
    if (n_rows > 0) {
        TRY(hsd_cuda_rmsnorm(cu, m->xb, m->x, m->out_norm, rows, n_rows, dim, c->norm_eps));
        TRY(hsd_cuda_matmul(cu, m->logits, c->vocab_size, m->xb, n_rows, &m->cls, m->xh));
    }
    return HSD_OK;
}

/* A forward of one entry from its slot's graph of that shape, captured on the shape's second
 * use (the inputs sit at fixed offsets for a given n and rows: tokens, positions, rows, then
 * [kv_len, tree offsets, ancestors], and the kernels read them on the device). A capture that
 * fails (an old driver, a kernel that cannot be captured) turns graphs off for this model
 * with a notice; the step then runs eagerly, with the same result. */
static hsd_status cm_graph_run(cuda_model *m, const cm_seg *seg, int32_t n_rows) {
    cm_graph *set = &m->graphs[(size_t)seg->slot * CM_GRAPHS], *hit = NULL, *lru = &set[0];
    m->tick++;
    for (int i = 0; i < CM_GRAPHS; i++) {
        if (set[i].g && set[i].n == seg->n && set[i].rows == n_rows && set[i].chain == seg->chain)
            hit = &set[i];
        if (!set[i].g || (lru->g && set[i].used < lru->used)) lru = &set[i];
    }
    uint32_t *seen = &m->seen[seg->n][n_rows][seg->chain];
    if (!hit && ++*seen < 2) return cm_enqueue(m, seg, 1, seg->n, n_rows);
    if (!hit) {
        hsd_status s = hsd_cuda_graph_begin(m->cu), e = HSD_OK;
        hsd_cuda_graph *g = NULL;
        if (s == HSD_OK) {
            s = cm_enqueue(m, seg, 1, seg->n, n_rows);
            e = hsd_cuda_graph_end(m->cu, &g);
        }
        if (s != HSD_OK || e != HSD_OK) {
            hsd_cuda_graph_free(g);
            hsd_log(HSD_LOG_WARN, "cuda: forward graph capture failed (%s), running eagerly",
                    hsd_last_error());
            m->graphs_on = false;
            return cm_enqueue(m, seg, 1, seg->n, n_rows);
        }
        hsd_cuda_graph_free(lru->g);
        *lru = (cm_graph){g, seg->n, n_rows, seg->chain, 0};
        hit = lru;
    }
    hit->used = m->tick;
    return hsd_cuda_graph_launch(m->cu, hit->g);
}

/* A forward of n_e entries (already checked by the caller: slots distinct, inputs in range):
 * the inputs up in one copy, the step (from its graph for a lone decode step), the logits
 * rows of entry 0, then entry 1, ... down. */
static hsd_status cm_run(cuda_model *m, const hsd_model_batch_seq *e, int32_t n_e, float *logits) {
    const hsd_tf_config *c = &m->cfg;
    int32_t n = 0, R = 0;
    int64_t n_anc = 0;
    for (int32_t i = 0; i < n_e; i++) n += e[i].n, R += e[i].n_rows > 0 ? e[i].n_rows : 0;
    TRY(cm_ensure_scratch(m, n, R, 0));
    for (int32_t i = 0, at = 0; i < n_e; at += e[i].n, i++) {
        if (!e[i].parents) continue;
        int32_t *depth = m->tree_depth + at;
        for (int32_t k = 0; k < e[i].n; k++) {
            depth[k] = e[i].parents[k] < 0 ? 0 : depth[e[i].parents[k]] + 1;
            n_anc += depth[k] + 1;
        }
    }
    size_t meta_ints = 2 * (size_t)n + (size_t)R + (size_t)n_e + (size_t)n_anc;
    for (int32_t i = 0; i < n_e; i++) meta_ints += e[i].parents ? (size_t)e[i].n + 1 : 0;
    TRY(cm_ensure_scratch(m, n, R, meta_ints));
    cm_seg segs_small[8], *segs = n_e <= 8 ? segs_small : malloc((size_t)n_e * sizeof *segs);
    if (!segs) return hsd_error(HSD_ERR_NOMEM, "cuda forward: out of memory");

    int32_t *h = m->h_meta, *tok = h, *pos = tok + n, *rw = pos + n;
    int32_t blk = 2 * n + R, r_at = 0;
    for (int32_t i = 0, at = 0; i < n_e; at += e[i].n, i++) {
        const hsd_model_batch_seq *x = &e[i];
        const int32_t L = m->kv_lens[x->seq];
        segs[i] = (cm_seg){x->seq, at, x->n, blk, x->parents == NULL};
        memcpy(tok + at, x->tokens, (size_t)x->n * sizeof *tok);
        for (int32_t r = 0; r < (x->n_rows > 0 ? x->n_rows : 0); r++)
            rw[r_at++] = at + (x->rows ? x->rows[r] : r);
        h[blk] = L;
        if (x->parents) {
            /* ancestors of each token, itself included, in increasing order (build_tree's
             * lists), as indices among the entry's own new tokens */
            const int32_t *depth = m->tree_depth + at;
            int32_t *off = h + blk + 1, *anc = off + x->n + 1, o = 0;
            for (int32_t k = 0; k < x->n; k++) {
                pos[at + k] = L + depth[k];
                off[k] = o;
                int32_t d = depth[k];
                for (int32_t j = k; j >= 0; j = x->parents[j]) anc[o + d--] = j;
                o += depth[k] + 1;
            }
            off[x->n] = o;
            blk += 1 + x->n + 1 + o;
        } else {
            for (int32_t k = 0; k < x->n; k++) pos[at + k] = L + k;
            blk += 1;
        }
    }
    hsd_status s = hsd_cuda_upload(m->cu, m->d_meta, h, (size_t)blk * sizeof(int32_t));
    if (s == HSD_OK) {
        if (m->graphs_on && n_e == 1 && n <= CM_GRAPH_MAX_N && R <= CM_GRAPH_MAX_N)
            s = cm_graph_run(m, &segs[0], R);
        else
            s = cm_enqueue(m, segs, n_e, n, R);
    }
    /* waits for the step (also when no logits are asked for: h_meta is reused next time) */
    if (s == HSD_OK)
        s = hsd_cuda_download(m->cu, logits, m->logits, (size_t)R * c->vocab_size * sizeof(float));
    if (s == HSD_OK)
        for (int32_t i = 0; i < n_e; i++) m->kv_lens[e[i].seq] += e[i].n;
    if (segs != segs_small) free(segs);
    return s;
}

static hsd_status cm_forward(void *ctx, const int32_t *tokens, int32_t n, const int32_t *parents,
                             const int32_t *rows, int32_t n_rows, float *logits) {
    cuda_model *m = ctx;
    TRY(hsd_forward_check("forward", tokens, n, parents, rows, n_rows, logits != NULL,
                          m->cfg.vocab_size, m->kv_lens[m->cur], m->n_ctx));
    hsd_model_batch_seq one = {sizeof one, m->cur, tokens, n, parents, rows, n_rows};
    return cm_run(m, &one, 1, logits);
}

/* The wrapper (models/model.c) has checked every entry against its slot and that no slot is
 * listed twice. */
static hsd_status cm_forward_batch(void *ctx, const hsd_model_batch_seq *seqs, int32_t n_seqs,
                                   float *logits) {
    return cm_run(ctx, seqs, n_seqs, logits);
}

/* ---- cache ------------------------------------------------------------------------- */

static hsd_status cm_truncate(void *ctx, int32_t len) {
    cuda_model *m = ctx;
    int32_t *kv = &m->kv_lens[m->cur];
    if (len < 0 || len > *kv)
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "kv_truncate: length %d outside 0..%d", len, *kv);
    *kv = len; /* rows past kv_len are overwritten by the next forward */
    return HSD_OK;
}

static hsd_status cm_keep(void *ctx, int32_t base, const int32_t *keep, int32_t n_keep) {
    cuda_model *m = ctx;
    const int32_t kv = m->kv_lens[m->cur];
    if (base < 0 || base > kv || n_keep < 0 || (n_keep > 0 && !keep))
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "kv_keep: base %d, %d entries, kv_len %d", base,
                         n_keep, kv);
    for (int32_t j = 0; j < n_keep; j++)
        if (keep[j] < 0 || base + keep[j] >= kv || (j > 0 && keep[j] <= keep[j - 1]))
            return hsd_error(HSD_ERR_OUT_OF_RANGE,
                             "kv_keep: keep[%d] = %d (must increase and stay below %d)", j, keep[j],
                             kv - base);
    if (n_keep > 0) {
        TRY(cm_ensure_scratch(m, 1, 1, (size_t)n_keep));
        memcpy(m->h_meta, keep, (size_t)n_keep * sizeof *keep);
        TRY(hsd_cuda_upload(m->cu, m->d_meta, m->h_meta, (size_t)n_keep * sizeof *keep));
        TRY(hsd_cuda_kv_keep(m->cu, cm_cache(m, m->kc, m->cur, 0), m->cfg.n_layers, m->n_ctx,
                             m->kv_row_bytes, base, m->d_meta, n_keep));
        TRY(hsd_cuda_kv_keep(m->cu, cm_cache(m, m->vc, m->cur, 0), m->cfg.n_layers, m->n_ctx,
                             m->kv_row_bytes, base, m->d_meta, n_keep));
        TRY(hsd_cuda_sync(m->cu)); /* h_meta is reused by the next call */
    }
    m->kv_lens[m->cur] = base + n_keep;
    return HSD_OK;
}

static int32_t cm_n_seq(void *ctx) {
    return ((cuda_model *)ctx)->n_seq;
}
static hsd_status cm_seq_select(void *ctx, int32_t seq) {
    cuda_model *m = ctx;
    if (seq < 0 || seq >= m->n_seq)
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "seq_select: sequence %d outside 0..%d", seq,
                         m->n_seq - 1);
    m->cur = seq;
    return HSD_OK;
}

static int32_t cm_vocab(void *ctx) {
    return ((cuda_model *)ctx)->cfg.vocab_size;
}
static int32_t cm_n_ctx(void *ctx) {
    return ((cuda_model *)ctx)->n_ctx;
}
static int32_t cm_kv_len(void *ctx) {
    cuda_model *m = ctx;
    return m->kv_lens[m->cur];
}

/* ---- creation ---------------------------------------------------------------------- */

static hsd_status cm_upload_all(cuda_model *m, const hsd_transformer *tf,
                                const hsd_model_params *p) {
    const hsd_tf_config *c = &m->cfg;
    const hsd_mat *emb = hsd_tf_matrix(tf, HSD_T_TOK_EMB, -1),
                  *cls = hsd_tf_matrix(tf, HSD_T_CLS, -1);
    hsd_ftype choice = p ? p->device_weights : HSD_FTYPE_AUTO;
#define WT(mat) hsd_cuda_model_weight_type(choice, (mat)->type, c->dim)
    TRY(upload_mat(m, emb, WT(emb), &m->tok_emb));
    m->tied = cls->data == emb->data;
    if (m->tied)
        m->cls = m->tok_emb;
    else
        TRY(upload_mat(m, cls, WT(cls), &m->cls));
    TRY(upload_f32(m, hsd_tf_vector(tf, HSD_T_OUT_NORM, -1), (size_t)c->dim, &m->out_norm));
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->layers) return hsd_error(HSD_ERR_NOMEM, "cuda model: out of memory");
    for (int32_t l = 0; l < c->n_layers; l++) {
        cm_layer *L = &m->layers[l];
        const hsd_mat *qkv[3] = {hsd_tf_matrix(tf, HSD_T_WQ, l), hsd_tf_matrix(tf, HSD_T_WK, l),
                                 hsd_tf_matrix(tf, HSD_T_WV, l)};
        const hsd_mat *gu[2] = {hsd_tf_matrix(tf, HSD_T_W_GATE, l),
                                hsd_tf_matrix(tf, HSD_T_W_UP, l)};
        const hsd_mat *wo = hsd_tf_matrix(tf, HSD_T_WO, l),
                      *down = hsd_tf_matrix(tf, HSD_T_W_DOWN, l);
        /* a stacked matrix has one type: the first part's choice */
        TRY(upload_stacked(m, qkv, 3, WT(qkv[0]), &L->wqkv));
        TRY(upload_mat(m, wo, WT(wo), &L->wo));
        TRY(upload_stacked(m, gu, 2, WT(gu[0]), &L->w_gu));
        TRY(upload_mat(m, down, WT(down), &L->w_down));
        TRY(upload_f32(m, hsd_tf_vector(tf, HSD_T_ATTN_NORM, l), (size_t)c->dim, &L->attn_norm));
        TRY(upload_f32(m, hsd_tf_vector(tf, HSD_T_FFN_NORM, l), (size_t)c->dim, &L->ffn_norm));
        if (c->qk_norm) {
            TRY(upload_f32(m, hsd_tf_vector(tf, HSD_T_Q_NORM, l), (size_t)c->head_dim, &L->q_norm));
            TRY(upload_f32(m, hsd_tf_vector(tf, HSD_T_K_NORM, l), (size_t)c->head_dim, &L->k_norm));
            if (!L->q_norm || !L->k_norm)
                return hsd_error(HSD_ERR_INTERNAL, "cuda model: layer %d has no q/k norm", l);
        }
        const float *bq = hsd_tf_vector(tf, HSD_T_BQ, l), *bk = hsd_tf_vector(tf, HSD_T_BK, l),
                    *bv = hsd_tf_vector(tf, HSD_T_BV, l);
        if (bq && bk && bv) {
            size_t w = (size_t)m->q_dim + 2 * (size_t)m->kv_dim;
            TRY(hsd_cuda_alloc(m->cu, w * sizeof(float), (void **)&L->bqkv));
            TRY(hsd_cuda_upload(m->cu, L->bqkv, bq, (size_t)m->q_dim * sizeof(float)));
            TRY(hsd_cuda_upload(m->cu, L->bqkv + m->q_dim, bk, (size_t)m->kv_dim * sizeof(float)));
            TRY(hsd_cuda_upload(m->cu, L->bqkv + m->q_dim + m->kv_dim, bv,
                                (size_t)m->kv_dim * sizeof(float)));
        }
    }
#undef WT
    const float *cs, *sn;
    TRY(hsd_tf_rope_tables(tf, &cs, &sn));
    size_t rope = (size_t)m->n_ctx * (c->head_dim / 2);
    TRY(upload_f32(m, cs, rope, &m->rope_cos));
    TRY(upload_f32(m, sn, rope, &m->rope_sin));
    size_t kv = (size_t)m->n_seq * c->n_layers * m->n_ctx * m->kv_row_bytes;
    TRY(hsd_cuda_alloc(m->cu, kv, (void **)&m->kc));
    TRY(hsd_cuda_alloc(m->cu, kv, (void **)&m->vc));
    const hsd_cuda_attn_shape shape = {c->n_heads, c->n_kv_heads, c->head_dim, m->n_ctx, 0, m->kv_type};
    m->attn_work_bytes = hsd_cuda_attn_work_bytes(&shape, m->n_ctx < CM_ATTN_TOKENS ? m->n_ctx : CM_ATTN_TOKENS);
    TRY(hsd_cuda_alloc(m->cu, m->attn_work_bytes, &m->attn_work));
    TRY(hsd_cuda_attn_work_init(m->cu, m->attn_work, m->attn_work_bytes));
    return hsd_cuda_sync(m->cu);
}

hsd_status hsd_cuda_model_create(const hsd_transformer *tf, const hsd_model_params *params,
                                 hsd_model_iface *iface, char *desc, size_t desc_cap) {
    if (!tf || !iface) return hsd_error(HSD_ERR_INVALID_ARG, "cuda model: NULL argument");
    /* the device layer is Llama's, with Qwen2's biases or Qwen3's per-head q/k norms: the
     * other architectures stay on the CPU, and the notice names them */
    const hsd_tf_config *tc = hsd_tf_get_config(tf);
    if ((tc->qk_norm && hsd_tf_vector(tf, HSD_T_BQ, 0)) || tc->post_norms || tc->act != HSD_ACT_SILU || tc->emb_scale > 0 || tc->attn_scale > 0 ||
        tc->attn_softcap > 0 || tc->final_softcap > 0 || tc->rope_theta_swa > 0 || tc->rope_linear > 0)
        return hsd_error(HSD_ERR_UNSUPPORTED, "cuda model: architecture %s is not implemented on the device",
                         tc->arch);
    hsd_cuda *cu = NULL;
    hsd_status s = hsd_cuda_open(0, &cu);
    if (s != HSD_OK) return s;
    cuda_model *m = calloc(1, sizeof *m);
    if (!m) {
        hsd_cuda_close(cu);
        return hsd_error(HSD_ERR_NOMEM, "cuda model: out of memory");
    }
    m->cu = cu;
    m->cfg = *hsd_tf_get_config(tf);
    m->n_seq = params && params->n_seq > 1 ? params->n_seq : 1;
    m->kv_lens = calloc((size_t)m->n_seq, sizeof *m->kv_lens);
    m->graphs = calloc((size_t)m->n_seq * CM_GRAPHS, sizeof *m->graphs);
    if (!m->kv_lens || !m->graphs) {
        cm_free(m);
        return hsd_error(HSD_ERR_NOMEM, "cuda model: out of memory");
    }
    const hsd_tf_config *c = &m->cfg;
    m->n_ctx = hsd_tf_n_ctx(tf);
    m->q_dim = c->n_heads * c->head_dim;
    m->kv_dim = c->n_kv_heads * c->head_dim;
    m->max_cols = c->dim > c->hidden_dim ? c->dim : c->hidden_dim;
    if (m->q_dim > m->max_cols) m->max_cols = m->q_dim;
    /* the cache type asked for; the quantised ones have no device kernels: F16 there */
    const hsd_kv_type kvt = params ? params->kv_type : HSD_KV_F16;
    m->kv_type = kvt == HSD_KV_F32 ? HSD_DT_F32 : kvt == HSD_KV_BF16 ? HSD_DT_BF16 : HSD_DT_F16;
    if (kvt == HSD_KV_Q8_0 || kvt == HSD_KV_Q4_0)
        hsd_log(HSD_LOG_INFO, "cuda: a %s KV cache runs on the CPU only; the device keeps an F16 cache",
                kvt == HSD_KV_Q8_0 ? "q8_0" : "q4_0");
    m->kv_row_bytes = (size_t)m->kv_dim * hsd_cuda_kv_elem_bytes(m->kv_type);
    /* the switches are params (the CLI maps HSD_CUDA_*): library code reads no environment */
    const hsd_cuda_options co = params ? params->cuda : (hsd_cuda_options){0};
    m->graphs_on = !co.no_graphs;
    hsd_cuda_use_cublas_gemv(cu, co.cublas_gemv);
    hsd_cuda_use_warp_gemm(cu, co.warp_gemm);
    if (co.no_pdl) hsd_cuda_use_pdl(cu, false);
    if (co.mma_variant) hsd_cuda_set_mma_variant(cu, co.mma_variant);
    s = cm_upload_all(m, tf, params);
    if (s != HSD_OK) {
        hsd_error_prefix(s, "cuda model: ");
        cm_free(m);
        return s;
    }
    if (desc)
        snprintf(desc, desc_cap, "%s [cuda: %s, %s weights and %s KV on device]", hsd_tf_desc(tf),
                 hsd_cuda_device_desc(cu), hsd_dtype_name(m->layers[0].wqkv.type),
                 hsd_dtype_name(m->kv_type));
    memset(iface, 0, sizeof *iface);
    iface->ctx = m;
    iface->vocab_size = cm_vocab;
    iface->n_ctx = cm_n_ctx;
    iface->forward = cm_forward;
    iface->kv_len = cm_kv_len;
    iface->kv_truncate = cm_truncate;
    iface->kv_keep = cm_keep;
    iface->free = cm_free;
    iface->n_seq = cm_n_seq;
    iface->seq_select = cm_seq_select;
    iface->forward_batch = cm_forward_batch;
    return HSD_OK;
}

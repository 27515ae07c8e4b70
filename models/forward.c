/* The forward over n new tokens (a chain or a token tree) of one or several sequence slots
 * stacked as rows: every matrix product runs once over all rows, attention per slot
 * (models/layer.c, the math, runs once per layer), then the classifier on the rows asked
 * for. Also the hsd_model_iface adapter that makes a transformer a model. */
#include "models/transformer.h"

#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/quant.h"
#include "kernels/matmul_pack.h"
#include "lib/base/error.h"
#include "lib/base/file_map.h"
#include "lib/base/log.h"
#include "lib/base/timer.h"
#include "models/arch.h"
#include "models/forward_check.h"
#include "models/tf_internal.h"

static hsd_status ensure_scratch(hsd_transformer *tf, int32_t n) {
    if (n <= tf->cap_n) return HSD_OK;
    const hsd_tf_config *c = &tf->cfg;
    size_t N = (size_t)n;
    float *x = realloc(tf->x, N * c->dim * sizeof(float));
    if (x) tf->x = x;
    float *xb = realloc(tf->xb, N * tf->max_cols * sizeof(float));
    if (xb) tf->xb = xb;
    float *q = realloc(tf->q, N * tf->q_dim * sizeof(float));
    if (q) tf->q = q;
    /* hb is also the temporary of the attention output projection (dim wide): size it for
     * the widest use, hidden_dim can be smaller than dim (found by fuzz_model_llama2c) */
    float *hb = realloc(tf->hb, N * tf->max_cols * sizeof(float));
    if (hb) tf->hb = hb;
    float *hb2 = realloc(tf->hb2, N * c->hidden_dim * sizeof(float));
    if (hb2) tf->hb2 = hb2;
    int32_t *pos = realloc(tf->pos, N * sizeof(int32_t));
    if (pos) tf->pos = pos;
    int32_t *off = realloc(tf->anc_off, (N + 1) * sizeof(int32_t));
    if (off) tf->anc_off = off;
    float *kb = realloc(tf->kbuf, N * tf->kv_dim * sizeof(float));
    if (kb) tf->kbuf = kb;
    float *vb = realloc(tf->vbuf, N * tf->kv_dim * sizeof(float));
    if (vb) tf->vbuf = vb;
    int32_t *spar = realloc(tf->spar, N * sizeof(int32_t));
    if (spar) tf->spar = spar;
    if (!x || !xb || !q || !hb || !hb2 || !pos || !off || !kb || !vb || !spar ||
        hsd_mm_ws_reserve(&tf->mm, tf->n_threads, n, tf->max_cols) != HSD_OK)
        return hsd_error(HSD_ERR_NOMEM, "forward: out of memory for %d tokens", n);
    tf->cap_n = n;
    return HSD_OK;
}

/* ---- forward ----------------------------------------------------------------------- */

/* For the tree segments: depth of each new token and the list of its ancestors (itself
 * included, indices within its segment) in increasing index order. anc_off[t] is set for
 * every row (empty lists for chain rows). */
static hsd_status build_trees(hsd_transformer *tf, int32_t N) {
    int32_t total = 0;
    for (int32_t s = 0; s < tf->n_segs; s++) {
        const int32_t *parents = tf->segs[s].par, t0 = tf->segs[s].t0;
        for (int32_t i = 0; parents && i < tf->segs[s].n; i++) {
            int32_t p = parents[i]; /* checked by hsd_forward_check */
            tf->pos[t0 + i] = p < 0 ? 0 : tf->pos[t0 + p] + 1; /* depth for now */
            total += tf->pos[t0 + i] + 1;
        }
    }
    int32_t *anc = realloc(tf->anc, (size_t)(total > 0 ? total : 1) * sizeof(int32_t));
    if (!anc) return hsd_error(HSD_ERR_NOMEM, "forward: out of memory for the token tree");
    tf->anc = anc;
    int32_t off = 0;
    for (int32_t s = 0; s < tf->n_segs; s++) {
        const int32_t *parents = tf->segs[s].par, t0 = tf->segs[s].t0;
        for (int32_t i = 0; i < tf->segs[s].n; i++) {
            tf->anc_off[t0 + i] = off;
            if (!parents) continue;
            int32_t d = tf->pos[t0 + i];
            for (int32_t k = i; k >= 0; k = parents[k]) anc[off + d--] = k;
            off += tf->pos[t0 + i] + 1;
        }
    }
    tf->anc_off[N] = off;
    return HSD_OK;
}

/* How many leading tokens of a tree entry are a plain chain that the rest hangs below: each
 * of the first c tokens is the previous one's child, and every later token descends from
 * token c - 1. Those run as a chain segment (tiled causal attention, as a prefill), the rest
 * as a tree segment whose cache starts c rows later: the same keys at the same positions, so
 * the same results. A verification that carries a prompt's pending ids (lib/engine/prefill.c)
 * puts them through the causal path this way. */
static int32_t chain_prefix(const int32_t *parents, int32_t n) {
    int32_t c = 0;
    while (c < n && parents[c] == c - 1) c++;
    for (bool again = true; again && c > 0;) {
        again = false;
        for (int32_t k = c; k < n; k++)
            if (parents[k] < c - 1) { /* hangs from inside the chain: shorten it */
                c = parents[k] + 1;
                again = true;
            }
    }
    return c;
}

/* Checks one entry before anything is computed (a failed forward changes no cache). */
static hsd_status check_entry(const hsd_transformer *tf, const hsd_model_batch_seq *e, bool batch) {
    char who[64];
    if (batch) snprintf(who, sizeof who, "forward_batch: sequence %d", e->seq);
    else snprintf(who, sizeof who, "forward");
    return hsd_forward_check(who, e->tokens, e->n, e->parents, e->rows, e->n_rows, true,
                             tf->cfg.vocab_size, tf->kv_lens[e->seq], tf->n_ctx);
}

/* The forward over nb slots' new tokens, stacked as rows 0..N: every matrix product runs
 * once over all N rows; attention runs per slot against that slot's cache. */
static hsd_status forward_segs(hsd_transformer *tf, const hsd_model_batch_seq *b, int32_t nb,
                               float *logits, bool batch) {
    const hsd_tf_config *c = &tf->cfg;
    const int32_t dim = c->dim, hd = c->head_dim;
    if (nb < 1 || !b)
        return hsd_error(HSD_ERR_INVALID_ARG, "forward_batch: no sequences (n_seqs = %d)", nb);
    int32_t N = 0, R = 0;
    for (int32_t i = 0; i < nb; i++) {
        if (b[i].seq < 0 || b[i].seq >= tf->n_seq)
            return hsd_error(HSD_ERR_OUT_OF_RANGE,
                             "forward_batch: entry %d: sequence %d outside 0..%d", i, b[i].seq,
                             tf->n_seq - 1);
        for (int32_t k = 0; k < i; k++)
            if (b[k].seq == b[i].seq)
                return hsd_error(HSD_ERR_INVALID_ARG,
                                 "forward_batch: sequence %d listed twice (entries %d and %d)",
                                 b[i].seq, k, i);
        hsd_status s = check_entry(tf, &b[i], batch);
        if (s != HSD_OK) return s;
        N += b[i].n;
        R += b[i].n_rows;
    }
    if (R > 0 && !logits)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: %d logits rows requested into NULL",
                         batch ? "forward_batch" : "forward", R);
    double t_start = hsd_timer_ms();
    hsd_tf_pack(tf); /* once: the first forward packs (tf_load.c) */
    hsd_status s = ensure_scratch(tf, N);
    if (s != HSD_OK) return s;
    bool any_tree = false;
    int32_t ns = 0;
    for (int32_t i = 0, t0 = 0; i < nb; t0 += b[i].n, i++) {
        const int32_t L = tf->kv_lens[b[i].seq];
        const int32_t c = b[i].parents ? chain_prefix(b[i].parents, b[i].n) : b[i].n;
        if (c > 0) tf->segs[ns++] = (fw_seg){b[i].seq, t0, c, L, true, NULL};
        if (c < b[i].n) { /* the tree, its parents re-based below the chain's last token */
            int32_t *par = tf->spar + t0 + c;
            for (int32_t k = c; k < b[i].n; k++) par[k - c] = b[i].parents[k] - c;
            tf->segs[ns++] = (fw_seg){b[i].seq, t0 + c, b[i].n - c, L + c, false, par};
            any_tree = true;
        }
    }
    tf->n_segs = ns;
    if (any_tree && (s = build_trees(tf, N)) != HSD_OK) return s;
    for (int32_t i = 0; i < nb; i++) /* room for the new positions (contents kept) */
        if ((s = hsd_tf_kv_reserve(tf, b[i].seq, tf->kv_lens[b[i].seq] + b[i].n)) != HSD_OK ||
            (s = hsd_tf_rope_reserve(tf, tf->kv_lens[b[i].seq] + b[i].n)) != HSD_OK)
            return s;
    for (int32_t i = 0; i < ns; i++) {
        const fw_seg *sg = &tf->segs[i];
        for (int32_t k = 0; k < sg->n; k++)
            tf->pos[sg->t0 + k] = sg->L + (sg->chain ? k : tf->pos[sg->t0 + k]);
    }
    for (int32_t i = 0, t0 = 0; i < nb; t0 += b[i].n, i++)
        for (int32_t k = 0; k < b[i].n; k++)
            hsd_mat_rows_f32(&tf->tok_emb, b[i].tokens[k], 1, tf->x + (size_t)(t0 + k) * dim);

    if (c->emb_scale > 0) /* Gemma */
        for (size_t i = 0; i < (size_t)N * dim; i++) tf->x[i] *= c->emb_scale;
    tf->attn_work = 0;
    for (int32_t i = 0; i < nb; i++)
        tf->attn_work += (int64_t)b[i].n * c->n_heads * (tf->kv_lens[b[i].seq] + b[i].n) * hd;

    for (int32_t l = 0; l < c->n_layers; l++) hsd_tf_layer_forward(tf, l, N);

    for (int32_t i = 0; i < nb; i++) tf->kv_lens[b[i].seq] += b[i].n;

    /* final norm and classifier only for the rows asked for, entry after entry */
    for (int32_t i = 0, r0 = 0, t0 = 0; i < nb; r0 += b[i].n_rows, t0 += b[i].n, i++)
        for (int32_t r = 0; r < b[i].n_rows; r++) {
            int32_t t = t0 + (b[i].rows ? b[i].rows[r] : r);
            hsd_rmsnorm(tf->xb + (size_t)(r0 + r) * dim, tf->x + (size_t)t * dim, tf->out_norm, dim,
                        c->norm_eps);
        }
    double t_head = hsd_timer_ms();
    if (R > 0 && tf->head)
        s = hsd_head_forward(tf->head, tf->pool, tf->n_threads, tf->xb, R, logits);
    else if (R > 0)
        hsd_tf_matmul(tf, logits, c->vocab_size, tf->xb, R, &tf->cls);
    if (R > 0 && s == HSD_OK) hsd_tf_softcap(c, logits, (size_t)R * c->vocab_size);
    double t_end = hsd_timer_ms();
    tf->timing.head_ms += t_end - t_head;
    tf->timing.backbone_ms += t_head - t_start;
    tf->timing.n_forward++;
    tf->timing.n_head_rows += R;
    return s;
}

hsd_status hsd_tf_forward(hsd_transformer *tf, const int32_t *tokens, int32_t n,
                          const int32_t *parents, const int32_t *rows, int32_t n_rows,
                          float *logits) {
    hsd_model_batch_seq one = {sizeof one, tf->cur, tokens, n, parents, rows, n_rows};
    return forward_segs(tf, &one, 1, logits, false);
}

hsd_status hsd_tf_forward_batch(hsd_transformer *tf, const hsd_model_batch_seq *seqs,
                                int32_t n_seqs, float *logits) {
    return forward_segs(tf, seqs, n_seqs, logits, true);
}

void hsd_tf_timing(const hsd_transformer *tf, hsd_model_timing *out) {
    *out = tf->timing;
}
void hsd_tf_reset_timing(hsd_transformer *tf) {
    memset(&tf->timing, 0, sizeof tf->timing);
}

/* ---- hsd_model_iface adapter ------------------------------------------------------- */

static int32_t if_vocab(void *c) { return ((hsd_transformer *)c)->cfg.vocab_size; }
static int32_t if_n_ctx(void *c) { return ((hsd_transformer *)c)->n_ctx; }
static hsd_status if_forward(void *c, const int32_t *tokens, int32_t n, const int32_t *parents,
                             const int32_t *rows, int32_t n_rows, float *logits) {
    return hsd_tf_forward(c, tokens, n, parents, rows, n_rows, logits);
}
static int32_t if_kv_len(void *c) {
    return hsd_tf_kv_len(c);
}
static hsd_status if_truncate(void *c, int32_t len) { return hsd_tf_kv_truncate(c, len); }
static hsd_status if_keep(void *c, int32_t base, const int32_t *keep, int32_t n) {
    return hsd_tf_kv_keep(c, base, keep, n);
}
static void if_free(void *c) { hsd_tf_free(c); }
static int32_t if_n_seq(void *c) {
    return hsd_tf_n_seq(c);
}
static hsd_status if_seq_select(void *c, int32_t seq) {
    return hsd_tf_seq_select(c, seq);
}
static hsd_status if_forward_batch(void *c, const hsd_model_batch_seq *seqs, int32_t n_seqs,
                                   float *logits) {
    return hsd_tf_forward_batch(c, seqs, n_seqs, logits);
}

void hsd_tf_iface(hsd_transformer *tf, hsd_model_iface *iface) {
    iface->ctx = tf;
    iface->vocab_size = if_vocab;
    iface->n_ctx = if_n_ctx;
    iface->forward = if_forward;
    iface->kv_len = if_kv_len;
    iface->kv_truncate = if_truncate;
    iface->kv_keep = if_keep;
    iface->free = if_free;
    iface->n_seq = if_n_seq;
    iface->seq_select = if_seq_select;
    iface->forward_batch = if_forward_batch;
}

/* The SLRS round (Alg 3 with the multi-token extension), one of the driver's rounds
 * (lib/engine/engine.h): steps 1-3 are its draft phase, run for one sequence at a time (each
 * sequence's tree forwards go to its own drafter slot); the target forward over the sampled
 * leaf's candidates is the driver's, shared with the other sequences of a batch; step 4 is
 * its finish.
 *
 * One round:
 *   1. the drafter's pending ids are fed; its distribution at the root, cut to the sparse
 *      proposal q~ (top-k, top-p, renormalised), gives the root's children;
 *   2. the tree grows one level per drafter forward: every frontier node and its ancestors
 *      go into one tree-masked batch (parents = tree edges) and only the frontier rows come
 *      back; the cache is cut back to the root afterwards. Branches stop by the lookahead
 *      rule (lib/engine/slrs_tree.h), so depth and the node budget bound the work. With
 *      slrs_single_forward the nodes to score are chosen from the vocabularies instead
 *      (lib/engine/slrs_shape.h) and all of them go into one forward;
 *   3. a leaf is sampled from q~ with the draft stream; its target candidates c_1..c_m are
 *      scored by one target forward (as SLEM's candidates are);
 *   4. position j accepts c_j with min(1, p_j/psi_j) where psi_j = law of c_j given the
 *      accepted c_<j under q~; the first rejection resamples from norm(max(0, p_j - psi_j)),
 *      and after m accepted the position m+1 is verified against the "no candidate" outcome
 *      the same way. Every position is exact, so the output law is the target's. */
#include <stdlib.h>
#include <string.h>

#include "lib/engine/engine.h"
#include "lib/base/timer.h"
#include "lib/base/error.h"
#include "lib/engine/first_token.h"
#include "lib/base/map.h"
#include "lib/engine/slrs_shape.h"
#include "lib/engine/slrs_tree.h"
#include "verify/slrs.h"
#include "verify/verify.h"

struct hsd_eng_slrs {
    hsd_slrs_tree tree;
    int32_t *sp_tok; /* sparse proposal of one node */
    float *sp_w, *psi, *rowlog;
    size_t rowlog_cap;
    int32_t *feed, *parents, *rows, *pos; /* one tree forward; pos: node -> feed index */
    int32_t feed_cap;
    int32_t chain[64], n_chain; /* tree nodes cached after the root between levels */
    /* the sampled leaf's candidates, between drafting and verification */
    int32_t c[HSD_ENG_MAX_CAND], m;
    bool capped;
    double t_psi, nodes, forwards, exp_slrs, exp_em;
    int32_t n_exp;
    /* single-forward mode: vocabulary tries and the chosen shape */
    hsd_slrs_shape shape;
    bool shape_ready;
    int32_t *sh_tnode, *sh_depth, *ch_tok, *ch_tnode;
    hsd_ids row_of;  /* tree node -> row of the single forward, or -1 */
    hsd_buf sh_text; /* shape node texts */
    uint32_t *sh_off, *sh_len;
};

static hsd_status oom(void) {
    return hsd_error(HSD_ERR_NOMEM, "out of memory");
}

static void slrs_seq_free(hsd_eng_seq *g) {
    struct hsd_eng_slrs *st = g->slrs;
    if (!st) return;
    hsd_slrs_tree_free(&st->tree);
    free(st->sp_tok);
    free(st->sp_w);
    free(st->psi);
    free(st->rowlog);
    free(st->feed);
    free(st->parents);
    free(st->rows);
    free(st->pos);
    hsd_slrs_shape_free(&st->shape);
    free(st->sh_tnode);
    free(st->sh_depth);
    free(st->ch_tok);
    free(st->ch_tnode);
    free(st->sh_off);
    free(st->sh_len);
    hsd_ids_free(&st->row_of);
    hsd_buf_free(&st->sh_text);
    free(st);
    g->slrs = NULL;
}

void hsd_eng_slrs_release(hsd_engine *e) {
    if (!e->slrs_ft) return;
    hsd_first_token_free(e->slrs_ft);
    free(e->slrs_ft);
    e->slrs_ft = NULL;
}

static void slrs_stats(const hsd_eng_seq *g, hsd_gen_result *res) {
    const struct hsd_eng_slrs *st = g->slrs;
    hsd_slrs_stats *o = res->slrs; /* allocated by hsd_eng_fill_result for SLRS */
    if (!st || !g->rounds || !o) return;
    o->psi_ms = st->t_psi / g->rounds;
    o->tree_nodes = st->nodes / g->rounds;
    o->tree_forwards = st->forwards / g->rounds;
    o->expected_accept = st->n_exp ? st->exp_slrs / st->n_exp : 0;
    o->expected_accept_em = st->n_exp ? st->exp_em / st->n_exp : 0;
}

static hsd_status setup(hsd_eng_seq *g) {
    hsd_engine *e = g->e;
    if (!e->slrs_ft) {
        e->slrs_ft = calloc(1, sizeof *e->slrs_ft);
        if (!e->slrs_ft) return oom();
        hsd_status s = hsd_first_token_init(e->slrs_ft, e->tt);
        if (s) {
            free(e->slrs_ft);
            e->slrs_ft = NULL;
            return s;
        }
    }
    if (g->slrs) return HSD_OK;
    struct hsd_eng_slrs *st = calloc(1, sizeof *st);
    if (!st) return oom();
    g->slrs = st;
    st->sp_tok = malloc((size_t)e->vd * sizeof *st->sp_tok);
    st->sp_w = malloc((size_t)e->vd * sizeof *st->sp_w);
    st->psi = malloc((size_t)e->vt * sizeof *st->psi);
    if (!st->sp_tok || !st->sp_w || !st->psi) return oom();
    return HSD_OK;
}

/* Children of `node` from the drafter's logits there: q~ = sparse(sampling distribution). */
static hsd_status expand(hsd_eng_seq *g, int32_t node, const float *logits) {
    struct hsd_eng_slrs *st = g->slrs;
    if (g->greedy) { /* q is one-hot at the argmax: q~ is that one child (no row written) */
        st->sp_tok[0] = hsd_sample_greedy(logits, g->e->vd);
        st->sp_w[0] = 1.0f;
        return hsd_slrs_tree_expand(&st->tree, node, st->sp_tok, st->sp_w, 1);
    }
    hsd_sampler_ws *w = &g->dw;
    hsd_status s = hsd_sampler_ws_reserve(w, g->e->vd);
    if (!s) s = hsd_sample_probs_ws(w, logits, g->e->vd, &g->sp, g->scratch);
    if (s) return s;
    /* a greedy or top-k / top-p row: its support alone (sample.h) */
    int32_t n = hsd_slrs_sparsify_ids(g->scratch, g->e->vd, w->support, w->n_support,
                                      g->prm->slrs_top_k, g->prm->slrs_top_p, st->sp_tok, st->sp_w);
    return hsd_slrs_tree_expand(&st->tree, node, st->sp_tok, st->sp_w, n);
}

static hsd_status grow(struct hsd_eng_slrs *st, int32_t need, size_t rowlog) {
    if (need > st->feed_cap) {
        int32_t c = need * 2;
        int32_t *a = realloc(st->feed, (size_t)c * sizeof *a);
        if (a) st->feed = a;
        int32_t *b = realloc(st->parents, (size_t)c * sizeof *b);
        if (b) st->parents = b;
        int32_t *r = realloc(st->rows, (size_t)c * sizeof *r);
        if (r) st->rows = r;
        if (!a || !b || !r) return oom();
        st->feed_cap = c;
    }
    if (rowlog > st->rowlog_cap) {
        float *p = realloc(st->rowlog, rowlog * sizeof *p);
        if (!p) return oom();
        st->rowlog = p;
        st->rowlog_cap = rowlog;
    }
    return HSD_OK;
}

/* Tree nodes from just below the root down to `node` (inclusive); returns the count. */
static int32_t path_to(const hsd_slrs_tree *tr, int32_t node, int32_t *path) {
    int32_t n = 0;
    for (int32_t a = node; a > 0; a = tr->nodes[a].parent) path[n++] = a;
    for (int32_t i = 0; i < n / 2; i++) {
        int32_t t = path[i];
        path[i] = path[n - 1 - i];
        path[n - 1 - i] = t;
    }
    return n;
}

/* One tree level: a single tree-masked drafter forward over the frontier and its ancestors.
 * The ancestors that every frontier node shares stay in the cache as a chain between levels
 * (st->chain, kept with kv_keep), so a narrow tree — greedy decoding's is one chain — feeds
 * each node once instead of once per level. */
static hsd_status level(hsd_eng_seq *g, int32_t root_kv, double *t_fwd) {
    struct hsd_eng_slrs *st = g->slrs;
    hsd_slrs_tree *tr = &st->tree;
    int32_t nn = tr->n_nodes, nf = 0, nr = 0;
    int32_t *pos = realloc(st->pos, (size_t)nn * sizeof *pos);
    if (!pos) return oom();
    st->pos = pos;
    /* mark: frontier nodes and every ancestor below the root that is not cached already
     * (-3: in the cached chain; parents precede children) */
    for (int32_t i = 0; i < nn; i++) pos[i] = -1;
    for (int32_t c = 0; c < st->n_chain; c++) pos[st->chain[c]] = -3;
    for (int32_t i = 0; i < nn; i++)
        if (tr->nodes[i].state == HSD_SLRS_FRONTIER)
            for (int32_t a = i; a > 0 && pos[a] == -1; a = tr->nodes[a].parent) pos[a] = -2;
    for (int32_t i = 1; i < nn; i++)
        if (pos[i] == -2) nf++;
    if (!nf) return HSD_OK;
    hsd_status s = grow(st, nf, 0);
    if (s) return s;
    nf = 0;
    for (int32_t i = 1; i < nn; i++) {
        if (pos[i] != -2) continue;
        int32_t par = tr->nodes[i].parent;
        st->feed[nf] = tr->nodes[i].tok;
        /* a parent in the cached chain (or the root) is the cache itself */
        st->parents[nf] = par > 0 && pos[par] >= 0 ? pos[par] : -1;
        if (tr->nodes[i].state == HSD_SLRS_FRONTIER) st->rows[nr++] = nf;
        pos[i] = nf++;
    }
    int32_t vd = g->e->vd;
    if ((s = grow(st, nf, (size_t)nr * (size_t)vd))) return s;
    double t0 = hsd_timer_ms();
    s = hsd_model_forward(g->e->dm, st->feed, nf, st->parents, st->rows, nr, st->rowlog);
    *t_fwd += hsd_timer_ms() - t0;
    st->forwards++;
    if (s) return s;
    /* expand in node order (deterministic: budget goes to earlier nodes first) */
    for (int32_t i = 1, r = 0; i < nn && r < nr; i++) {
        if (pos[i] < 0 || tr->nodes[i].state != HSD_SLRS_FRONTIER) continue;
        if ((s = expand(g, i, st->rowlog + (size_t)r * (size_t)vd))) return s;
        r++;
    }
    /* the next chain: the ancestors all new frontier nodes share */
    int32_t common = -1, path[64], other[64];
    for (int32_t i = nn; i < tr->n_nodes; i++) {
        if (tr->nodes[i].state != HSD_SLRS_FRONTIER) continue;
        int32_t parent = tr->nodes[i].parent;
        if (common < 0) {
            common = parent > 0 ? path_to(tr, parent, path) : 0;
            continue;
        }
        int32_t n = parent > 0 ? path_to(tr, parent, other) : 0, c = 0;
        while (c < common && c < n && path[c] == other[c]) c++;
        common = c;
    }
    t0 = hsd_timer_ms();
    int32_t keep[64], n_keep = 0;
    for (int32_t c = st->n_chain; c < common; c++) keep[n_keep++] = pos[path[c]];
    if (common > st->n_chain && !hsd_model_kv_keep(g->e->dm, root_kv + st->n_chain, keep, n_keep)) {
        for (int32_t c = st->n_chain; c < common; c++) st->chain[c] = path[c];
        st->n_chain = common;
    } else if (common >= 0 && common == st->n_chain) {
        s = hsd_model_kv_truncate(g->e->dm, root_kv + st->n_chain);
    } else { /* no frontier left, or no kv_keep: back to the root */
        st->n_chain = 0;
        s = hsd_model_kv_truncate(g->e->dm, root_kv);
    }
    *t_fwd += hsd_timer_ms() - t0;
    return s;
}

/* Single-forward mode: the level-1 frontier plus the vocabulary-chosen nodes below it (at most
 * `budget`, breadth first) are scored by one tree-masked forward; then the tree grows from
 * those logits alone and any frontier node left without logits becomes a leaf. */
static hsd_status single_forward(hsd_eng_seq *g, int32_t root_kv, int32_t budget, double *t_fwd) {
    struct hsd_eng_slrs *st = g->slrs;
    hsd_slrs_tree *tr = &st->tree;
    int32_t vd = g->e->vd;
    hsd_status s;
    if (!st->shape_ready) {
        if ((s = hsd_slrs_shape_init(&st->shape, g->e->tt, g->e->dt))) return s;
        st->ch_tok = malloc((size_t)vd * sizeof *st->ch_tok);
        st->ch_tnode = malloc((size_t)vd * sizeof *st->ch_tnode);
        if (!st->ch_tok || !st->ch_tnode) return oom();
        st->shape_ready = true;
    }
    if (budget < 1) return HSD_OK;
    if ((s = grow(st, budget, 0))) return s;
    int32_t *a = realloc(st->sh_tnode, (size_t)budget * sizeof *a);
    if (a) st->sh_tnode = a;
    int32_t *b = realloc(st->sh_depth, (size_t)budget * sizeof *b);
    if (b) st->sh_depth = b;
    uint32_t *o = realloc(st->sh_off, (size_t)budget * sizeof *o);
    if (o) st->sh_off = o;
    uint32_t *l = realloc(st->sh_len, (size_t)budget * sizeof *l);
    if (l) st->sh_len = l;
    if (!a || !b || !o || !l) return oom();
    /* the shape, breadth first: feed[] = tokens, parents[] = shape rows (-1: the root) */
    int32_t n = 0;
    st->sh_text.n = 0;
    st->row_of.n = 0;
    for (int32_t i = 0; i < tr->n_nodes; i++) {
        int32_t r = -1;
        if (i > 0 && tr->nodes[i].state == HSD_SLRS_FRONTIER && n < budget) {
            size_t len;
            const char *x = hsd_slrs_node_text(tr, i, &len);
            st->feed[n] = tr->nodes[i].tok;
            st->parents[n] = -1;
            st->sh_tnode[n] = hsd_slrs_shape_walk(&st->shape, 0, x, len);
            st->sh_depth[n] = tr->nodes[i].depth;
            st->sh_off[n] = (uint32_t)st->sh_text.n;
            st->sh_len[n] = (uint32_t)len;
            if (hsd_buf_append(&st->sh_text, x, len)) return oom();
            r = n++;
        }
        if (hsd_ids_push(&st->row_of, r)) return oom();
    }
    for (int32_t j = 0; j < n && n < budget; j++) {
        if (st->sh_tnode[j] < 0 || st->sh_depth[j] + 1 >= tr->max_depth) continue;
        int32_t nc =
            hsd_slrs_shape_children(&st->shape, st->sh_tnode[j], st->ch_tok, st->ch_tnode, vd);
        for (int32_t c = 0; c < nc && c < vd && n < budget; c++) {
            size_t blen;
            const uint8_t *bytes = hsd_tokenizer_token_bytes(g->e->dt, st->ch_tok[c], &blen);
            size_t base = st->sh_text.n, plen = st->sh_len[j];
            if (!bytes) blen = 0;
            /* the parent's text lives in the same buffer: reserve before copying from it */
            if (hsd_buf_reserve(&st->sh_text, plen + blen)) return oom();
            memcpy(st->sh_text.p + base, st->sh_text.p + st->sh_off[j], plen);
            if (blen) memcpy(st->sh_text.p + base + plen, bytes, blen);
            st->sh_text.n = base + plen + blen;
            /* a child the rule stops at is a leaf: it needs no logits */
            if (hsd_slrs_tree_stops_at(tr, st->sh_depth[j] + 1, st->ch_tok[c], st->sh_text.p + base,
                                       st->sh_text.n - base)) {
                st->sh_text.n = base;
                continue;
            }
            st->feed[n] = st->ch_tok[c];
            st->parents[n] = j;
            st->sh_tnode[n] = st->ch_tnode[c];
            st->sh_depth[n] = st->sh_depth[j] + 1;
            st->sh_off[n] = (uint32_t)base;
            st->sh_len[n] = (uint32_t)(st->sh_text.n - base);
            n++;
        }
    }
    if (!n) return HSD_OK;
    hsd_u64map child; /* (parent row + 1, token) -> row */
    if (hsd_u64map_init(&child, (size_t)n)) return oom();
    for (int32_t j = 0; j < n; j++) {
        st->rows[j] = j;
        if (st->parents[j] >= 0 &&
            hsd_u64map_put(&child, (uint64_t)(st->parents[j] + 1) << 32 | (uint32_t)st->feed[j],
                           (uint64_t)j)) {
            hsd_u64map_free(&child);
            return oom();
        }
    }
    if ((s = grow(st, n, (size_t)n * (size_t)vd))) {
        hsd_u64map_free(&child);
        return s;
    }
    double t0 = hsd_timer_ms();
    s = hsd_model_forward(g->e->dm, st->feed, n, st->parents, st->rows, n, st->rowlog);
    hsd_status s2 = hsd_model_kv_truncate(g->e->dm, root_kv);
    *t_fwd += hsd_timer_ms() - t0;
    st->forwards++;
    if (!s) s = s2;
    /* grow the tree from the scored rows; children found in the shape inherit their row */
    for (int32_t i = 1; !s && i < tr->n_nodes; i++) {
        int32_t r = i < (int32_t)st->row_of.n ? st->row_of.p[i] : -1;
        if (r < 0 || tr->nodes[i].state != HSD_SLRS_FRONTIER) continue;
        if ((s = expand(g, i, st->rowlog + (size_t)r * (size_t)vd))) break;
        const hsd_slrs_node *nd = &tr->nodes[i];
        while (!s && (int32_t)st->row_of.n < tr->n_nodes)
            if (hsd_ids_push(&st->row_of, -1)) s = oom();
        for (int32_t c = 0; !s && nd->state == HSD_SLRS_INTERNAL && c < nd->n_child; c++) {
            int32_t ci = nd->child0 + c;
            uint64_t row;
            if (tr->nodes[ci].state == HSD_SLRS_FRONTIER &&
                hsd_u64map_get(&child, (uint64_t)(r + 1) << 32 | (uint32_t)tr->nodes[ci].tok, &row))
                st->row_of.p[ci] = (int32_t)row;
        }
    }
    hsd_u64map_free(&child);
    return s;
}

/* Steps 1-3: the tree, a sampled leaf and its target candidates (st->c[0..m)). */
static hsd_status slrs_draft(hsd_eng_seq *g) {
    hsd_engine *e = g->e;
    int32_t k = g->kk;
    hsd_status s = setup(g);
    if (s) return s;
    struct hsd_eng_slrs *st = g->slrs;
    hsd_slrs_tree *tr = &st->tree;
    double t0 = hsd_timer_ms(), t_fwd = 0;
    /* 1. root */
    if ((s = hsd_eng_feed_drafter(g, g->dlog))) return s;
    t_fwd += hsd_timer_ms() - t0;
    st->forwards++;
    int32_t root_kv = g->d_kv;
    int32_t room = g->d_limit - root_kv - 1;
    int32_t budget = g->prm->slrs_max_nodes < room ? g->prm->slrs_max_nodes : room;
    bool single = g->prm->slrs_single_forward;
    /* in single-forward mode the shape holds the budget; the tree may open any node */
    if ((s = hsd_slrs_tree_reset(tr, e->dt, e->slrs_ft, (hsd_slrs_rule)g->prm->slrs_lookahead, k,
                                 single ? INT32_MAX / 2 : budget)) ||
        (s = expand(g, 0, g->dlog)))
        return s;
    /* 2. one drafter forward per level until every branch has stopped, or one in all */
    if (single)
        s = single_forward(g, root_kv, budget, &t_fwd);
    else {
        st->n_chain = 0;
        for (int32_t d = 1; d <= k && !s; d++) s = level(g, root_kv, &t_fwd);
        if (!s) s = hsd_model_kv_truncate(e->dm, root_kv);
    }
    if (!s) s = hsd_slrs_tree_close(tr);
    if (s) return s;
    st->nodes += tr->n_nodes;
    /* 3. the draft: a leaf sampled from q~, its target candidates (scored by the driver's
     * target forward) */
    int32_t leaf = hsd_slrs_tree_sample(tr, &g->rng_draft);
    const hsd_slrs_node *lf = &tr->nodes[leaf];
    int32_t troom = g->t_limit - (int32_t)g->T.ids.n - 1;
    int32_t cap = troom < HSD_ENG_MAX_CAND ? (troom > 0 ? troom : 0) : HSD_ENG_MAX_CAND;
    int32_t m = 0;
    /* candidates stop at one the target model cannot emit (psi counts it as "none") */
    while (m < lf->n_cand && m < cap && tr->cands.p[lf->cand_off + m] >= 0 &&
           tr->cands.p[lf->cand_off + m] < e->vt) {
        st->c[m] = tr->cands.p[lf->cand_off + m];
        m++;
    }
    st->m = m;
    /* the position after the last candidate: cut by the cap (then nothing is proposed there
     * for any leaf with this prefix, psi = 0) or the leaf's own end (psi from the tree) */
    st->capped = m == cap && lf->n_cand > cap;
    double t1 = hsd_timer_ms();
    st->t_psi += (t1 - t0) - t_fwd;
    g->t_draft += t_fwd;
    return HSD_OK;
}

static hsd_status slrs_candidates(hsd_eng_seq *g, const int32_t **cand, int32_t *m,
                                  int32_t *width) {
    *cand = g->slrs->c;
    *m = g->slrs->m;
    *width = g->e->vt;
    g->rd.t2 = hsd_timer_ms();
    return HSD_OK;
}

/* Step 4: position j accepts c_j with min(1, p_j / psi_j). */
static hsd_status slrs_finish(hsd_eng_seq *g) {
    struct hsd_eng_slrs *st = g->slrs;
    hsd_slrs_tree *tr = &st->tree;
    int32_t m = st->m, acc = 0, r = 0, vt = g->e->vt, out[HSD_ENG_MAX_CAND + 1];
    const int32_t *c = st->c;
    double t_psi = 0;
    hsd_status s;
    for (int32_t j = 0; j <= m; j++) {
        const float *pj = g->p + (size_t)j * vt;
        bool ok = false;
        if (j == m && st->capped) {
            out[r++] = g->greedy ? g->p_arg[j]
                                 : hsd_verify_draw(pj, vt, hsd_rng_uniform_f64(&g->rng_verify));
            break;
        }
        double tp = hsd_timer_ms();
        if (g->greedy) {
            /* p is one-hot at its argmax a (not written: g->p_arg), so the rule is "accept iff
             * c_j = a" (verify/slrs.h) and the expected acceptances sum(min(p, psi)) and
             * sum(p psi) are both psi(a): psi at one id, O(tree) instead of O(vocabulary) */
            const int32_t a = g->p_arg[j];
            if (j == 0) {
                float pa;
                if ((s = hsd_slrs_tree_psi_at(tr, c, j, a, vt, &pa))) return s;
                st->exp_slrs += pa < 1.0f ? pa : 1.0f; /* sum(min(p, psi)) */
                st->exp_em += pa;
                st->n_exp++;
            }
            t_psi += hsd_timer_ms() - tp;
            ok = j < m && c[j] == a;
            out[r++] = a;
            if (j < m && j == 0) g->first_tried++, g->first_acc += ok;
            if (!ok || j == m) break;
            acc++;
            continue;
        }
        if ((s = hsd_slrs_tree_psi(tr, c, j, st->psi, vt, NULL))) return s;
        if (j == 0) {
            double em, a = hsd_verify_slrs_expected(pj, st->psi, vt, &em);
            st->exp_slrs += a;
            st->exp_em += em;
            st->n_exp++;
        }
        t_psi += hsd_timer_ms() - tp;
        out[r++] = hsd_verify_slrs(pj, st->psi, vt, j < m ? c[j] : -1, g->greedy, &g->rng_verify,
                                   g->resid, &ok);
        if (j < m && j == 0) g->first_tried++, g->first_acc += ok;
        if (!ok || j == m) break;
        acc++;
    }
    st->t_psi += t_psi;
    g->t_verify += hsd_timer_ms() - g->rd.t2 - t_psi;
    g->rounds++;
    g->drafted += m;
    g->accepted += acc;
    return hsd_eng_commit(g, acc, out, r);
}

const hsd_eng_round hsd_eng_round_slrs = {
    .name = "slrs",
    .drafts = true,
    .draft = slrs_draft,
    .candidates = slrs_candidates,
    .finish = slrs_finish,
    .stats = slrs_stats,
    .seq_free = slrs_seq_free,
};

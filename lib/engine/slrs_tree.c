/* Tree of draft continuations for SLRS (see slrs_tree.h). */
#include "lib/engine/slrs_tree.h"

#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"

static hsd_status oom(void) {
    return hsd_error(HSD_ERR_NOMEM, "out of memory");
}

int32_t hsd_slrs_n_max(const hsd_first_token *ft) {
    return ft ? (int32_t)ft->max_token_len + 1 : 1;
}

static hsd_status push_node(hsd_slrs_tree *t, const hsd_slrs_node *nd) {
    if (t->n_nodes == t->cap) {
        int32_t c = t->cap ? t->cap * 2 : 64;
        hsd_slrs_node *p = realloc(t->nodes, (size_t)c * sizeof *p);
        if (!p) return oom();
        t->nodes = p;
        t->cap = c;
    }
    t->nodes[t->n_nodes++] = *nd;
    return HSD_OK;
}

hsd_status hsd_slrs_tree_reset(hsd_slrs_tree *t, const hsd_tokenizer *dtok,
                               const hsd_first_token *ft, hsd_slrs_rule rule, int32_t max_depth,
                               int32_t max_open) {
    if (!t || !dtok || !ft || max_depth < 1)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_slrs_tree_reset: bad argument");
    t->n_nodes = 0;
    t->n_open = 0;
    t->text.n = 0;
    t->cands.n = 0;
    t->dtok = dtok;
    t->ft = ft;
    t->rule = rule;
    t->max_depth = max_depth;
    t->max_open = max_open < 0 ? 0 : max_open;
    t->n_max = hsd_slrs_n_max(ft);
    t->target_eos = hsd_tokenizer_eos_id(ft->tok);
    hsd_slrs_node root = {.parent = -1, .tok = -1, .q = 1, .prob = 1, .state = HSD_SLRS_FRONTIER};
    return push_node(t, &root);
}

void hsd_slrs_tree_free(hsd_slrs_tree *t) {
    if (!t) return;
    free(t->nodes);
    hsd_buf_free(&t->text);
    hsd_ids_free(&t->cands);
    memset(t, 0, sizeof *t);
}

/* Turns a node into a leaf and records its target candidates. */
static hsd_status make_leaf(hsd_slrs_tree *t, int32_t i) {
    hsd_slrs_node *nd = &t->nodes[i];
    nd->state = HSD_SLRS_LEAF;
    nd->cand_off = (int32_t)t->cands.n;
    nd->n_cand = 0;
    size_t len;
    const char *s = hsd_slrs_node_text(t, i, &len);
    hsd_status st = HSD_OK;
    if (!len) {
        /* nothing spelled: the drafter ended the text itself (EOS) or emitted only silent
         * specials; the first maps to the target's EOS, the rest propose nothing */
        if (nd->tok >= 0 && nd->tok == hsd_tokenizer_eos_id(t->dtok) && t->target_eos >= 0) {
            if (hsd_ids_push(&t->cands, t->target_eos)) return oom();
            t->nodes[i].n_cand = 1;
        }
        return HSD_OK;
    }
    size_t before = t->cands.n;
    if ((st = hsd_first_token_stable(t->ft, s, len, &t->cands))) return st;
    if (t->cands.n == before) {
        int32_t id;
        if ((st = hsd_first_token_now(t->ft, s, len, &id))) return st;
        if (id >= 0 && hsd_ids_push(&t->cands, id)) return oom();
    }
    t->nodes[i].n_cand = (int32_t)(t->cands.n - before);
    return HSD_OK;
}

bool hsd_slrs_tree_stops_at(const hsd_slrs_tree *t, int32_t depth, int32_t tok, const char *text,
                            size_t len) {
    if (hsd_tokenizer_is_special(t->dtok, tok)) return true;
    switch (t->rule) {
    case HSD_SLRS_STOP_FIXED:
        return depth >= t->max_depth;
    case HSD_SLRS_STOP_NMAX:
        return depth >= (t->n_max < t->max_depth ? t->n_max : t->max_depth);
    case HSD_SLRS_STOP_DETERMINED:
    default:
        return depth >= t->max_depth || hsd_first_token_cut(t->ft, text, len, NULL) > 0;
    }
}

static bool stops(const hsd_slrs_tree *t, int32_t i) {
    size_t len;
    const char *s = hsd_slrs_node_text(t, i, &len);
    return hsd_slrs_tree_stops_at(t, t->nodes[i].depth, t->nodes[i].tok, s, len);
}

hsd_status hsd_slrs_tree_expand(hsd_slrs_tree *t, int32_t node, const int32_t *toks, const float *w,
                                int32_t n) {
    if (!t || node < 0 || node >= t->n_nodes || t->nodes[node].state != HSD_SLRS_FRONTIER ||
        (n && (!toks || !w)))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_slrs_tree_expand: bad node or arguments");
    double sum = 0;
    int32_t kids = 0;
    for (int32_t i = 0; i < n; i++)
        if (w[i] > 0) sum += w[i], kids++;
    if (sum <= 0) return make_leaf(t, node); /* nothing proposed: the path ends here */
    t->nodes[node].state = HSD_SLRS_INTERNAL;
    t->nodes[node].child0 = t->n_nodes;
    t->nodes[node].n_child = kids;
    for (int32_t i = 0; i < n; i++) {
        if (w[i] <= 0) continue;
        const hsd_slrs_node *par = &t->nodes[node];
        hsd_slrs_node c = {.parent = node,
                           .tok = toks[i],
                           .depth = par->depth + 1,
                           .q = w[i] / sum,
                           .state = HSD_SLRS_FRONTIER};
        c.prob = par->prob * c.q;
        size_t plen, blen = 0;
        hsd_slrs_node_text(t, node, &plen);
        uint32_t poff = par->text_off;
        const uint8_t *b = NULL;
        if (!hsd_tokenizer_is_special(t->dtok, toks[i]))
            b = hsd_tokenizer_token_bytes(t->dtok, toks[i], &blen);
        if (!b) blen = 0;
        if (t->text.n > UINT32_MAX - plen - blen)
            return hsd_error(HSD_ERR_INVALID_ARG, "hsd_slrs_tree_expand: tree text too large");
        c.text_off = (uint32_t)t->text.n;
        c.text_len = (uint32_t)(plen + blen);
        if (hsd_buf_reserve(&t->text, plen + blen)) return oom();
        if (plen) memcpy(t->text.p + t->text.n, t->text.p + poff, plen);
        if (blen) memcpy(t->text.p + t->text.n + plen, b, blen);
        t->text.n += plen + blen;
        t->text.p[t->text.n] = 0;
        hsd_status st = push_node(t, &c);
        if (st) return st;
        int32_t ci = t->n_nodes - 1;
        if (stops(t, ci) || t->n_open >= t->max_open)
            st = make_leaf(t, ci);
        else
            t->n_open++;
        if (st) return st;
    }
    return HSD_OK;
}

hsd_status hsd_slrs_tree_close(hsd_slrs_tree *t) {
    for (int32_t i = 0; i < t->n_nodes; i++)
        if (t->nodes[i].state == HSD_SLRS_FRONTIER) {
            hsd_status st = make_leaf(t, i);
            if (st) return st;
        }
    return HSD_OK;
}

/* (w, id) order: larger weight first, lower id first on ties */
static bool ranks_before(const int32_t *toks, const float *w, int32_t a, int32_t b) {
    return w[a] > w[b] || (w[a] == w[b] && toks[a] < toks[b]);
}

static void sift_down(int32_t *toks, float *w, int32_t i, int32_t n) {
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n) return;
        /* a min-heap in rank order: the root is the entry ranked last */
        if (c + 1 < n && ranks_before(toks, w, c, c + 1)) c++;
        if (!ranks_before(toks, w, i, c)) return;
        int32_t ti = toks[i];
        float wi = w[i];
        toks[i] = toks[c], w[i] = w[c];
        toks[c] = ti, w[c] = wi;
        i = c;
    }
}

int32_t hsd_slrs_sparsify(const float *q, int32_t vd, int32_t top_k, float top_p, int32_t *toks,
                          float *w) {
    return hsd_slrs_sparsify_ids(q, vd, NULL, -1, top_k, top_p, toks, w);
}

int32_t hsd_slrs_sparsify_ids(const float *q, int32_t vd, const int32_t *ids, int32_t n_ids,
                              int32_t top_k, float top_p, int32_t *toks, float *w) {
    int32_t k = top_k > 0 && top_k < vd ? top_k : vd, m = 0;
    double total = 0;
    /* over ids[] (increasing) the loops below visit the same nonzero entries in the same
     * order as over 0..vd, so the result is the same */
    const int32_t count = ids && n_ids >= 0 ? n_ids : vd;
#define SP_ID(x) (ids && n_ids >= 0 ? ids[x] : (x))
    if (k <= 32) {
        /* keep the k best in toks/w, sorted, by insertion */
        for (int32_t x = 0; x < count; x++) {
            const int32_t i = SP_ID(x);
            if (!(q[i] > 0)) continue;
            total += q[i];
            if (m == k && !(q[i] > w[m - 1])) continue;
            int32_t j = m < k ? m++ : m - 1;
            while (j > 0 && q[i] > w[j - 1]) {
                w[j] = w[j - 1];
                toks[j] = toks[j - 1];
                j--;
            }
            w[j] = q[i];
            toks[j] = i;
        }
    } else {
        /* many kept: every positive entry, heap-sorted (O(n log n), no allocation) */
        for (int32_t x = 0; x < count; x++) {
            const int32_t i = SP_ID(x);
            if (q[i] > 0) total += q[i], toks[m] = i, w[m++] = q[i];
        }
#undef SP_ID
        for (int32_t i = m / 2 - 1; i >= 0; i--) sift_down(toks, w, i, m);
        for (int32_t end = m - 1; end > 0; end--) {
            int32_t t0 = toks[0];
            float w0 = w[0];
            toks[0] = toks[end], w[0] = w[end];
            toks[end] = t0, w[end] = w0;
            sift_down(toks, w, 0, end);
        }
        if (m > k) m = k;
    }
    if (top_p < 1 && m > 0) {
        double acc = 0;
        for (int32_t j = 0; j < m; j++) {
            acc += w[j];
            if (acc >= (double)top_p * total) {
                m = j + 1;
                break;
            }
        }
    }
    return m;
}

int32_t hsd_slrs_tree_sample(const hsd_slrs_tree *t, hsd_rng *rng) {
    int32_t i = 0;
    while (t->nodes[i].state == HSD_SLRS_INTERNAL) {
        const hsd_slrs_node *nd = &t->nodes[i];
        double u = hsd_rng_uniform_f64(rng), acc = 0;
        int32_t pick = nd->child0 + nd->n_child - 1;
        for (int32_t c = 0; c < nd->n_child; c++) {
            acc += t->nodes[nd->child0 + c].q;
            if (u < acc) {
                pick = nd->child0 + c;
                break;
            }
        }
        i = pick;
    }
    return i;
}

/* Whether nd is a leaf whose candidate ids start with prefix[0..j) (at least j of them); *c
 * gets its candidates. The filter of both ψ functions, so that they sum the same leaves. */
static bool leaf_under(const hsd_slrs_tree *t, const hsd_slrs_node *nd, const int32_t *prefix,
                       int32_t j, const int32_t **c) {
    if (nd->state != HSD_SLRS_LEAF || nd->n_cand < j) return false;
    *c = t->cands.p + nd->cand_off;
    return !j || !memcmp(*c, prefix, (size_t)j * sizeof **c);
}

hsd_status hsd_slrs_tree_psi_at(const hsd_slrs_tree *t, const int32_t *prefix, int32_t j,
                                int32_t tok, int32_t n_t, float *value) {
    /* hsd_slrs_tree_psi's sums, in the same order and precision, for one entry */
    double mass = 0;
    float at = 0;
    for (int32_t i = 0; i < t->n_nodes; i++) {
        const hsd_slrs_node *nd = &t->nodes[i];
        const int32_t *c;
        if (!leaf_under(t, nd, prefix, j, &c)) continue;
        mass += nd->prob;
        if (nd->n_cand > j && c[j] >= 0 && c[j] < n_t && c[j] == tok) at += (float)nd->prob;
    }
    if (!(mass > 0))
        return hsd_error(HSD_ERR_INTERNAL, "hsd_slrs_tree_psi: no leaf has the given prefix");
    *value = (float)(at / mass);
    return HSD_OK;
}

hsd_status hsd_slrs_tree_psi(const hsd_slrs_tree *t, const int32_t *prefix, int32_t j, float *psi,
                             int32_t n_t, double *none) {
    double mass = 0, nomore = 0;
    for (int32_t i = 0; i < n_t; i++) psi[i] = 0;
    for (int32_t i = 0; i < t->n_nodes; i++) {
        const hsd_slrs_node *nd = &t->nodes[i];
        const int32_t *c;
        if (!leaf_under(t, nd, prefix, j, &c)) continue;
        mass += nd->prob;
        if (nd->n_cand > j && c[j] >= 0 && c[j] < n_t)
            psi[c[j]] += (float)nd->prob;
        else
            nomore += nd->prob; /* no j-th candidate, or one the target model cannot emit */
    }
    if (!(mass > 0))
        return hsd_error(HSD_ERR_INTERNAL, "hsd_slrs_tree_psi: no leaf has the given prefix");
    for (int32_t i = 0; i < n_t; i++) psi[i] = (float)(psi[i] / mass);
    if (none) *none = nomore / mass;
    return HSD_OK;
}

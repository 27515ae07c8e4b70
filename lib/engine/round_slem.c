/* The SLEM round (Alg 2) with token healing and a candidate tree.
 *
 * Token healing. The committed text usually ends inside a word that the drafter's last token
 * spells only in part: the target's bonus character "t" becomes the drafter token " t", after
 * which the drafter expects a new word, so its first proposal is wrong exactly where the
 * target's next character is most predictable. The round's root therefore goes back before
 * that token, and the root's children are the drafter tokens that spell the token's bytes
 * first (" t" -> " the", " that", " to", ...) with the drafter's probabilities renormalised
 * over them: the drafter's own distribution of how the text goes on from there. On the
 * inflated pair's bench prompts this raises tau from 2.6 to ~4 characters a round.
 *
 * The tree. The drafter grows a small token tree best first by path probability: k forwards
 * in lockstep with the other sequences (as a chain would), each expanding the most probable
 * node not yet expanded, whose CHILDREN most probable tokens join the frontier; the unexpanded
 * ones stay leaves at no cost. The bridge spells every drafter path as text and re-tokenizes
 * it with the target's tokenizer after the committed text; those target-id sequences merge
 * into one trie whose 2k most probable nodes (scores: drafter path probabilities, which never
 * grow along a path, so the chosen nodes include their ancestors) are verified in ONE
 * tree-masked target forward — the same number of rows as a chain of k drafter tokens spelling
 * ~2k target tokens. The target accepts the longest trie path that its own draws reproduce,
 * walking from the root and following the child that equals its draw (greedy: its argmax):
 * exactly the target's own sampling, one draw per emitted token, so the output (greedy: the
 * text; sampled: the text for a given seed) is AR's whatever the tree holds, given rows that
 * are bit-identical to a chain's (models/layer.c). The drafter's second and third choices
 * cover the places where its first one is wrong, in rows a memory-bound forward gives almost
 * for free. Everything is decided from the models' outputs and k alone (no timings), so a
 * sequence's rounds are the same alone or in a batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/engine/engine.h"
#include "lib/base/error.h"
#include "lib/base/timer.h"
#include "kernels/row_ops.h"
#include "tokenize/tokenizer.h"
#include "verify/verify.h"

enum {
    CHILDREN = 3,                          /* children taken from each expanded drafter node */
    DNODES = CHILDREN * HSD_ENG_MAX_K + 1, /* drafter tree nodes at most (k expansions) */
    DFRONT = DNODES + CHILDREN,            /* children waiting to join it */
    TNODES = 2 * HSD_ENG_MAX_CAND,         /* trie nodes at most (HSD_ENG_MAX_CAND verified) */
};

typedef struct dnode {
    int32_t tok, par, depth;
    double lp;       /* log path probability */
    size_t off, len; /* the path's text in st->text */
} dnode;

typedef struct tnode {
    int32_t tok, par, depth;
    double score;
} tnode;

typedef struct hsd_eng_slem {
    dnode d[DNODES];
    dnode front[DFRONT];
    int32_t nd, nf;
    int32_t cur;    /* the drafter node being expanded (-1: the root) */
    int32_t root_n; /* drafter ids before the tree (after healing) */
    size_t heal;    /* bytes of the healed token that the root's children spell first */
    const uint8_t *heal_bytes;
    hsd_buf text; /* the drafter paths' texts */
    tnode t[TNODES];
    int32_t nt;
    int32_t *ids; /* the drafter ids a healed root allows (vd entries of room) */
    float *row;   /* the drafter's logits with its specials at -inf (vd entries) */
    int32_t sel[HSD_ENG_MAX_CAND], cpar[HSD_ENG_MAX_CAND], cand[HSD_ENG_MAX_CAND];
} hsd_eng_slem;

static void slem_free(hsd_eng_seq *g) {
    if (!g->slem) return;
    hsd_buf_free(&g->slem->text);
    free(g->slem->ids);
    free(g->slem->row);
    free(g->slem);
    g->slem = NULL;
}

/* What the drafter's vocabulary gives SLEM, computed once per pair (not per drafted token):
 * its special ids (never children), and its other ids sorted by their bytes, so that the ids
 * spelling a given prefix first (a healed root's children) are one range found by binary
 * search instead of a pass over the vocabulary. */
struct hsd_eng_dvocab {
    int32_t *special, n_special;
    int32_t *by_bytes, n_bytes; /* non-special ids with bytes, sorted by (bytes, id) */
    const hsd_tokenizer *dt;
};

typedef struct tok_bytes {
    const uint8_t *b;
    size_t len;
    int32_t id;
} tok_bytes;

static int cmp_bytes(const void *a, const void *b) {
    const tok_bytes *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->b, y->b, n) : 0;
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

void hsd_eng_slem_release(hsd_engine *e) {
    if (!e->dvocab) return;
    free(e->dvocab->special);
    free(e->dvocab->by_bytes);
    free(e->dvocab);
    e->dvocab = NULL;
}

/* tb[0..n) in cmp_bytes order. A qsort with cmp_bytes over Gemma 3's 262k tokens took
 * ~90 ms, paid by a request's first SLEM round (its time to first token). So: an LSD radix
 * sort on the first 8 bytes, big-endian and zero-padded, then cmp_bytes within each run of
 * equal keys. Key order agrees with cmp_bytes wherever keys differ (a string that ends first
 * pads with zeros, which are never above the other string's byte there), and the runs settle
 * the rest. -1: out of memory. */
static int sort_by_bytes(tok_bytes *tb, int32_t n) {
    uint64_t *key = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof *key);
    tok_bytes *tmp = malloc((size_t)(n > 0 ? n : 1) * sizeof *tmp);
    if (!key || !tmp) {
        free(key), free(tmp);
        return -1;
    }
    uint64_t *k2 = key + n;
    for (int32_t i = 0; i < n; i++) {
        uint64_t k = 0;
        for (size_t j = 0; j < 8; j++) k = k << 8 | (j < tb[i].len ? tb[i].b[j] : 0);
        key[i] = k;
    }
    for (int shift = 0; shift < 64; shift += 8) { /* stable passes, least significant first */
        size_t cnt[257] = {0};
        for (int32_t i = 0; i < n; i++) cnt[(key[i] >> shift & 255) + 1]++;
        for (int d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
        for (int32_t i = 0; i < n; i++) {
            size_t at = cnt[key[i] >> shift & 255]++;
            k2[at] = key[i], tmp[at] = tb[i];
        }
        memcpy(key, k2, (size_t)n * sizeof *key);
        memcpy(tb, tmp, (size_t)n * sizeof *tb);
    }
    for (int32_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && key[j] == key[i];) j++;
        if (j - i > 1) qsort(tb + i, (size_t)(j - i), sizeof *tb, cmp_bytes);
    }
    free(key), free(tmp);
    return 0;
}

hsd_status hsd_eng_ids_by_bytes(const hsd_tokenizer *t, int32_t n, int32_t *ids,
                                int32_t *n_ids) {
    tok_bytes *tb = malloc((size_t)(n > 0 ? n : 1) * sizeof *tb);
    if (!tb) return hsd_eng_oom();
    int32_t nb = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *b = hsd_tokenizer_is_special(t, i) ? NULL : hsd_tokenizer_token_bytes(t, i, &len);
        if (b) tb[nb++] = (tok_bytes){b, len, i};
    }
    if (sort_by_bytes(tb, nb)) {
        free(tb);
        return hsd_eng_oom();
    }
    for (int32_t i = 0; i < nb; i++) ids[i] = tb[i].id;
    *n_ids = nb;
    free(tb);
    return HSD_OK;
}

hsd_status hsd_eng_slem_prepare(hsd_engine *e) {
    if (e->dvocab || !e->dt) return HSD_OK;
    struct hsd_eng_dvocab *v = calloc(1, sizeof *v);
    if (v) {
        v->special = malloc((size_t)e->vd * sizeof *v->special);
        v->by_bytes = malloc((size_t)e->vd * sizeof *v->by_bytes);
    }
    if (!v || !v->special || !v->by_bytes) {
        if (v) free(v->special), free(v->by_bytes);
        free(v);
        return hsd_eng_oom();
    }
    v->dt = e->dt;
    for (int32_t i = 0; i < e->vd; i++)
        if (hsd_tokenizer_is_special(e->dt, i)) v->special[v->n_special++] = i;
    hsd_status s = hsd_eng_ids_by_bytes(e->dt, e->vd, v->by_bytes, &v->n_bytes);
    if (s) {
        free(v->special), free(v->by_bytes), free(v);
        return s;
    }
    e->dvocab = v;
    return HSD_OK;
}

/* The non-special drafter ids whose bytes start with pre[0..plen), increasing, into out. */
static int32_t ids_with_prefix(const struct hsd_eng_dvocab *v, const uint8_t *pre, size_t plen,
                               int32_t *out) {
    int32_t lo = 0, hi = v->n_bytes; /* the first id whose bytes are >= pre */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(v->dt, v->by_bytes[mid], &len);
        size_t n = len < plen ? len : plen;
        int c = n ? memcmp(b, pre, n) : 0;
        if (c < 0 || (c == 0 && len < plen))
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t n = 0;
    for (int32_t i = lo; i < v->n_bytes; i++) {
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(v->dt, v->by_bytes[i], &len);
        if (len < plen || memcmp(b, pre, plen)) break;
        out[n++] = v->by_bytes[i];
    }
    for (int32_t i = 1; i < n; i++) { /* increasing ids: the ranking's tie order */
        int32_t x = out[i], j = i;
        while (j > 0 && out[j - 1] > x) out[j] = out[j - 1], j--;
        out[j] = x;
    }
    return n;
}

/* The CHILDREN most probable drafter tokens after node `par` join the frontier, with their
 * probabilities (softmax at temperature 1) renormalised over the tokens allowed there: not
 * special, and, when healing (plen > 0), spelling `pre` first. Healing: the allowed ids are a
 * range of the pair's byte-sorted ids (a handful), so the softmax runs over them alone.
 * Otherwise: the logits with the specials at -inf, then one top-k pass and one exp-sum pass
 * (kernels/row_ops.h). Ranking: larger logit first, the lower id among equal logits. */
static void push_children(const hsd_eng_seq *g, hsd_eng_slem *st, const float *logits, int32_t par,
                          const uint8_t *pre, size_t plen) {
    const hsd_engine *e = g->e;
    int32_t best[CHILDREN];
    int32_t nb = 0;
    float mx = -INFINITY;
    double sum = 0;
    if (plen > 0) {
        const int32_t count = ids_with_prefix(e->dvocab, pre, plen, st->ids);
        for (int32_t k = 0; k < count; k++) mx = fmaxf(mx, logits[st->ids[k]]);
        if (!(mx > -INFINITY)) return;
        for (int32_t k = 0; k < count; k++) {
            int32_t i = st->ids[k];
            sum += expf(logits[i] - mx);
            if (nb == CHILDREN && !(logits[i] > logits[best[nb - 1]])) continue;
            int32_t j = nb < CHILDREN ? nb++ : nb - 1; /* best[0..nb) by decreasing logit */
            while (j > 0 && logits[best[j - 1]] < logits[i]) best[j] = best[j - 1], j--;
            best[j] = i;
        }
    } else {
        float *row = st->row;
        memcpy(row, logits, (size_t)e->vd * sizeof *row);
        for (int32_t k = 0; k < e->dvocab->n_special; k++) row[e->dvocab->special[k]] = -INFINITY;
        const int32_t want = CHILDREN < e->vd ? CHILDREN : e->vd;
        hsd_row_topk(row, e->vd, want, best);
        mx = row[best[0]];
        if (!(mx > -INFINITY)) return;
        while (nb < want && row[best[nb]] > -INFINITY) nb++; /* no -inf children */
        sum = hsd_row_exp_sum(row, e->vd, mx, 1.0f, NULL);
    }
    double base = par >= 0 ? st->d[par].lp : 0;
    int32_t depth = par >= 0 ? st->d[par].depth + 1 : 1;
    for (int32_t j = 0; j < nb && st->nf < DFRONT; j++)
        st->front[st->nf++] =
            (dnode){best[j], par, depth, base + (logits[best[j]] - mx) - log(sum), 0, 0};
}

/* Moves the most probable frontier entry into the tree (its path's text appended to
 * st->text); returns its index, or -1 when the frontier is empty or the tree full. */
static int32_t adopt_best(const hsd_eng_seq *g, hsd_eng_slem *st) {
    if (st->nf == 0 || st->nd == DNODES) return -1;
    int32_t b = 0;
    for (int32_t i = 1; i < st->nf; i++)
        if (st->front[i].lp > st->front[b].lp) b = i;
    dnode x = st->front[b];
    st->front[b] = st->front[--st->nf];
    size_t plen = x.par >= 0 ? st->d[x.par].len : 0, poff = x.par >= 0 ? st->d[x.par].off : 0;
    size_t blen;
    const uint8_t *bytes = hsd_tokenizer_token_bytes(g->e->dt, x.tok, &blen);
    if (!bytes) blen = 0;
    if (x.par < 0 && blen >= st->heal) bytes += st->heal, blen -= st->heal; /* healed */
    x.off = st->text.n;
    x.len = plen + blen;
    if (hsd_buf_reserve(&st->text, x.len)) return -2;
    if (plen) memmove(st->text.p + x.off, st->text.p + poff, plen);
    if (blen) memcpy(st->text.p + x.off + plen, bytes, blen);
    st->text.n += x.len;
    st->d[st->nd] = x;
    return st->nd++;
}

/* The drafter's last id when the round heals it (a generated, non-special id: its bytes are
 * drafted again as a prefix constraint), else NULL. */
static const uint8_t *heal_bytes(const hsd_eng_seq *g, size_t *len) {
    int32_t n = (int32_t)g->D.ids.n, last = n >= 2 ? g->D.ids.p[n - 1] : -1;
    const uint8_t *b = NULL;
    *len = 0;
    if (last >= 0 && n - 1 >= g->D.seg && !hsd_tokenizer_is_special(g->e->dt, last))
        b = hsd_tokenizer_token_bytes(g->e->dt, last, len);
    return b && *len ? b : NULL;
}

bool hsd_eng_slem_heals(const hsd_eng_seq *g) {
    size_t len;
    return heal_bytes(g, &len) != NULL;
}

/* Before the lockstep drafting: the root, healed when the last drafter token may be cut short
 * (it must still be re-tokenizable: ids before D.seg are frozen). */
static hsd_status slem_begin(hsd_eng_seq *g) {
    if (!g->slem && !(g->slem = calloc(1, sizeof *g->slem))) return hsd_eng_oom();
    hsd_eng_slem *st = g->slem;
    if (!st->ids && !(st->ids = malloc((size_t)g->e->vd * sizeof *st->ids))) return hsd_eng_oom();
    if (!st->row && !(st->row = malloc((size_t)g->e->vd * sizeof *st->row))) return hsd_eng_oom();
    hsd_status s = hsd_eng_slem_prepare(g->e);
    if (s) return s;
    st->nd = st->nf = 0;
    st->cur = -1;
    st->text.n = 0;
    st->heal = 0;
    size_t len = 0;
    const uint8_t *b = heal_bytes(g, &len);
    if (b) {
        st->heal = len;
        st->heal_bytes = b;
        g->D.ids.n--; /* the bridge's resync after the round restores or replaces it */
        if (g->d_kv > (int32_t)g->D.ids.n) g->d_kv = (int32_t)g->D.ids.n;
    }
    st->root_n = (int32_t)g->D.ids.n;
    return HSD_OK;
}

/* After each lockstep forward: the expanded node's children join the frontier; the next node
 * to expand is adopted (with the leaves before it) and the drafter moves to its path. */
static hsd_status slem_take(hsd_eng_seq *g, const float *logits) {
    hsd_eng_slem *st = g->slem;
    if (st->cur < 0)
        push_children(g, st, logits, -1, st->heal_bytes, st->heal);
    else
        push_children(g, st, logits, st->cur, NULL, 0);
    g->dj++;
    if (g->dj >= g->kk) return HSD_OK; /* the rest stay leaves (slem_candidates) */
    for (;;) {
        int32_t x = adopt_best(g, st);
        if (x == -2) return hsd_eng_oom();
        if (x < 0) {
            g->dstop = true;
            return HSD_OK;
        }
        if (st->d[x].depth >= g->kk) continue; /* a leaf */
        /* the drafter's ids become root + x's path; its cache keeps the common prefix */
        int32_t path[HSD_ENG_MAX_K + 1], depth = st->d[x].depth;
        for (int32_t v = x, i = depth; v >= 0; v = st->d[v].par) path[--i] = st->d[v].tok;
        int32_t c = 0, have = (int32_t)g->D.ids.n - st->root_n;
        while (c < have && c < depth && g->D.ids.p[st->root_n + c] == path[c]) c++;
        g->D.ids.n = (size_t)(st->root_n + c);
        for (int32_t i = c; i < depth; i++)
            if (hsd_ids_push(&g->D.ids, path[i])) return hsd_eng_oom();
        if (g->d_kv > st->root_n + c) {
            g->d_kv = st->root_n + c;
            hsd_status s = hsd_eng_seq_select(g);
            if (!s) s = hsd_model_kv_truncate(g->e->dm, g->d_kv);
            if (s) return s;
        }
        st->cur = x;
        return HSD_OK;
    }
}

/* Adds a target-id sequence to the trie; every node on it scores at least `score`. */
static void trie_add(hsd_eng_slem *st, const int32_t *ids, size_t n, double score,
                     int32_t max_depth) {
    int32_t cur = -1;
    for (size_t i = 0; i < n && (int32_t)i < max_depth; i++) {
        int32_t c = -1;
        for (int32_t j = cur + 1; j < st->nt; j++) /* children come after their parent */
            if (st->t[j].par == cur && st->t[j].tok == ids[i]) {
                c = j;
                break;
            }
        if (c < 0) {
            if (st->nt == TNODES) return;
            c = st->nt++;
            st->t[c] = (tnode){ids[i], cur, (int32_t)i + 1, score};
        } else if (st->t[c].score < score) {
            st->t[c].score = score;
        }
        cur = c;
    }
}

static int by_score(const void *a, const void *b, void *ctx) {
    const tnode *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t[x].score != t[y].score) return t[x].score > t[y].score ? -1 : 1;
    if (t[x].depth != t[y].depth) return t[x].depth < t[y].depth ? -1 : 1;
    return (x > y) - (x < y);
}

/* insertion sort: at most TNODES entries, and no qsort_r in C11 */
static void sort_nodes(int32_t *idx, int32_t n, const tnode *t) {
    for (int32_t i = 1; i < n; i++) {
        int32_t v = idx[i], j = i;
        while (j > 0 && by_score(&v, &idx[j - 1], (void *)t) < 0) idx[j] = idx[j - 1], j--;
        idx[j] = v;
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Drafter paths -> target trie -> the 2k most probable trie nodes, which the target verifies. */
static hsd_status slem_candidates(hsd_eng_seq *g, const int32_t **cand, int32_t *m,
                                  int32_t *width) {
    hsd_engine *e = g->e;
    hsd_eng_round_data *rd = &g->rd;
    hsd_eng_slem *st = g->slem;
    hsd_status s = HSD_OK;
    int32_t room = g->t_limit - (int32_t)g->T.ids.n - 1;
    if (room > HSD_ENG_MAX_CAND) room = HSD_ENG_MAX_CAND;
    if (room < 0) room = 0;
    st->nt = 0;
    for (int32_t x; (x = adopt_best(g, st)) != -1;) /* the frontier's leaves */
        if (x == -2) return hsd_eng_oom();
    for (int32_t i = 0; i < st->nd && !s && room > 0; i++) {
        const dnode *x = &st->d[i];
        s = hsd_bridge_candidates(&g->T, &g->text, x->len ? st->text.p + x->off : "", x->len,
                                  &rd->cand, room);
        /* candidates must be ids the target model knows */
        size_t n = 0;
        while (!s && n < rd->cand.n && rd->cand.p[n] >= 0 && rd->cand.p[n] < e->vt) n++;
        if (!s) trie_add(st, rd->cand.p, n, exp(x->lp), room);
    }
    int32_t idx[TNODES], n_all = st->nt, n_sel = 2 * g->kk;
    for (int32_t i = 0; i < n_all; i++) idx[i] = i;
    sort_nodes(idx, n_all, st->t);
    if (n_sel > room) n_sel = room;
    if (n_sel > n_all) n_sel = n_all;
    /* the verified nodes in trie order (parents first), parents renumbered */
    memcpy(st->sel, idx, (size_t)n_sel * sizeof *idx);
    qsort(st->sel, (size_t)n_sel, sizeof *st->sel, cmp_i32);
    int32_t pos[TNODES];
    for (int32_t i = 0; i < n_all; i++) pos[i] = -1;
    rd->depth = 0;
    for (int32_t i = 0; i < n_sel; i++) {
        const tnode *t = &st->t[st->sel[i]];
        pos[st->sel[i]] = i;
        st->cand[i] = t->tok;
        st->cpar[i] = t->par >= 0 ? pos[t->par] : -1;
        if (t->depth > rd->depth) rd->depth = t->depth;
    }
    rd->m = n_sel;
    rd->cpar = st->cpar;
    rd->t2 = hsd_timer_ms();
    g->t_bridge += rd->t2 - rd->t1;
    *cand = st->cand;
    *m = rd->m;
    *width = e->vt;
    return s;
}

static hsd_status slem_finish(hsd_eng_seq *g) {
    hsd_eng_round_data *rd = &g->rd;
    const hsd_eng_slem *st = g->slem;
    const int32_t vt = g->e->vt, m = rd->m;
    /* the walk over the verified trie (verify/verify.h: the rule the chi-square test checks):
     * draw at the current node, go on to its child spelling the draw */
    int32_t out[HSD_ENG_MAX_CAND + 1], path[HSD_ENG_MAX_CAND], acc = 0;
    const int32_t r = hsd_verify_slem(g->p, vt, g->greedy ? g->p_arg : NULL, st->cand, st->cpar, m, g->greedy, &g->rng_verify,
                                      out, path, &acc);
    hsd_status s = HSD_OK;
    if (acc && path[acc - 1] != acc - 1) { /* not the leading chain: move the path forward */
        s = hsd_model_kv_keep(g->e->tm, rd->n_old, path, acc);
        if (s == HSD_ERR_UNSUPPORTED) /* refeed the accepted ids next round instead */
            s = hsd_model_kv_truncate(g->e->tm, rd->n_old);
    }
    if (s) return s;
    g->t_verify += hsd_timer_ms() - rd->t2;
    g->rounds++;
    if (m) g->first_tried++, g->first_acc += acc > 0;
    g->drafted += m;
    g->accepted += acc;
    return hsd_eng_commit(g, acc, out, r);
}

const hsd_eng_round hsd_eng_round_slem = {
    .name = "slem",
    .drafts = true,
    .draft_begin = slem_begin,
    .draft_take = slem_take,
    .candidates = slem_candidates,
    .finish = slem_finish,
    .seq_free = slem_free,
};

/* ---- for draft-only proposals (propose.c): the last candidates phase's tree ---- */

int32_t hsd_eng_slem_tree(const hsd_eng_seq *g, int32_t *ids, int32_t *parents, double *scores,
                          int32_t cap) {
    const hsd_eng_slem *st = g->slem;
    if (!st) return 0;
    int32_t m = g->rd.m < cap ? g->rd.m : cap;
    for (int32_t i = 0; i < m; i++) {
        if (ids) ids[i] = st->cand[i];
        if (parents) parents[i] = st->cpar[i];
        if (scores) scores[i] = st->t[st->sel[i]].score;
    }
    return g->rd.m;
}

/* The one chain a verifier that takes chains (vLLM) gets: the deepest path of the verified
 * trie, among equally deep paths the first in trie order (trie nodes are created in the
 * order drafter paths were adopted, best first, so that is the most probable one). The
 * best-first tree grows deepest along the drafter's most probable continuation, so this is
 * that continuation spelled in target tokens. Chosen by measurement (the real pair, greedy,
 * docs/VLLM.md): it accepted 104 tokens over 179 rounds where the first child at every node
 * accepted 53 and the path with the largest sum of node scores 74 (the last target token of
 * a short drafter path often ends mid-word and scores high, yet the target rarely emits it). */
int32_t hsd_eng_slem_chain(const hsd_eng_seq *g, int32_t vt, int32_t k_out, int32_t *out) {
    const hsd_eng_slem *st = g->slem;
    const int32_t m = g->rd.m;
    if (!st || m <= 0) return 0;
    int32_t depth[HSD_ENG_MAX_CAND], leaf = 0;
    for (int32_t j = 0; j < m; j++) { /* parents come first */
        depth[j] = st->cpar[j] >= 0 ? depth[st->cpar[j]] + 1 : 1;
        if (depth[j] > depth[leaf]) leaf = j;
    }
    int32_t path[HSD_ENG_MAX_CAND], n = 0;
    for (int32_t v = leaf; v >= 0; v = st->cpar[v]) path[n++] = v;
    int32_t len = 0;
    for (int32_t i = n - 1; i >= 0 && len < k_out; i--) {
        int32_t id = st->cand[path[i]];
        if (id < 0 || id >= vt) break; /* below vt already (slem_candidates): a guard */
        out[len++] = id;
    }
    return len;
}

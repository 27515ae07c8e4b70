/* Vocabulary trimming with the exact coverage–latency optimum (BCL, PAPERS.md §3).
 *
 * Token frequencies f come from a corpus tokenized by the target tokenizer; ids are ranked by
 * f (ties: smaller id first) and the kept set of size K is the K first. With N = sum f,
 *   C(K) = (f_1 + ... + f_K) / N                          coverage,
 *   R(K) = 1 - (F_fixed + 2 d K) / (F_fixed + 2 d V)      FLOP saving of the drafter,
 *   U(K) = alpha C(K) + (1 - alpha) R(K),
 * and K* maximises U over K = 1..V subject to C(K) >= c_min. U depends on K alone, so one
 * pass over all K finds the exact maximiser (BCL searches it with TPE); among equal U the
 * smallest K wins. */
#include "hsd.h"

#include <math.h>
#include <stdlib.h>

#include "hsd_tools.h"
#include "lib/analysis/trim.h"
#include "lib/base/error.h"
#include "lib/base/params.h"
#include "lib/base/map.h"
#include "lib/engine/vocab_map.h"

hsd_trim_params hsd_trim_default_params(void) {
    return (hsd_trim_params){.size = sizeof(hsd_trim_params), .alpha = 0.5, .min_coverage = 0.0, .dim = 0, .fixed_flops = 0.0};
}

hsd_status hsd_trim_count(const hsd_tokenizer *tok, const hsd_corpus *corpus, int64_t *counts,
                          int64_t *n_tokens) {
    if (!tok || !corpus || !counts || !n_tokens)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_trim_count: %s is NULL",
                         !tok      ? "tokenizer"
                         : !corpus ? "corpus"
                         : !counts ? "counts"
                                   : "n_tokens");
    int32_t V = hsd_tokenizer_vocab_size(tok);
    *n_tokens = 0;
    for (size_t i = 0; i < corpus->n; i++) {
        int32_t *ids = NULL;
        size_t n = 0;
        hsd_status s =
            hsd_tokenizer_encode_alloc(tok, corpus->text[i], corpus->len[i], false, &ids, &n);
        if (s) return hsd_error_prefix(s, "corpus text %zu: ", i + 1);
        for (size_t j = 0; j < n; j++)
            if (ids[j] >= 0 && ids[j] < V) counts[ids[j]]++, (*n_tokens)++;
        hsd_free(ids);
    }
    return HSD_OK;
}

typedef struct ranked_id {
    int64_t count;
    int32_t id;
} ranked_id;

static int by_count(const void *a, const void *b) {
    const ranked_id *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

hsd_status hsd_trim_rank(const int64_t *counts, int32_t V, int32_t *order) {
    if (!counts || !order || V < 0)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_trim_rank: %s",
                         V < 0     ? "negative vocabulary size"
                         : !counts ? "counts is NULL"
                                   : "order is NULL");
    /* (count, id) pairs: qsort has no context argument and hsd keeps no global state */
    ranked_id *r = malloc((size_t)(V > 0 ? V : 1) * sizeof *r);
    if (!r) return hsd_error(HSD_ERR_NOMEM, "trim: out of memory ranking %d ids", V);
    for (int32_t i = 0; i < V; i++) r[i] = (ranked_id){counts[i], i};
    qsort(r, (size_t)V, sizeof *r, by_count);
    for (int32_t i = 0; i < V; i++) order[i] = r[i].id;
    free(r);
    return HSD_OK;
}

void hsd_trim_prefix(const int64_t *counts, const int32_t *order, int32_t n, int64_t *prefix) {
    if (!counts || !order || !prefix || n < 0) return;
    prefix[0] = 0;
    for (int32_t k = 1; k <= n; k++) prefix[k] = prefix[k - 1] + counts[order[k - 1]];
}

double hsd_trim_coverage(const int64_t *prefix, int64_t total, int32_t k) {
    /* exact integer sums and one division: C is exactly 1 once every seen id is kept */
    return prefix && total > 0 && k >= 0 ? (double)prefix[k] / (double)total : 0.0;
}

double hsd_trim_saving(const hsd_trim_params *p, int32_t v_full, int32_t k) {
    if (!p) return 0.0;
    double full = p->fixed_flops + 2.0 * p->dim * (double)v_full;
    if (!(full > 0)) return 0.0;
    return 1.0 - (p->fixed_flops + 2.0 * p->dim * (double)k) / full;
}

/* The checks hsd_trim_optimum and hsd_trim_eval share; fn names the caller. */
static hsd_status trim_check(const char *fn, const int64_t *prefix, int32_t n_cand, int64_t total,
                             int32_t v_full, const hsd_trim_params *p, const void *out) {
    if (!prefix || !p || !out)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         !prefix ? "prefix"
                         : !p    ? "params"
                                 : "out");
    if (n_cand < 1 || v_full < n_cand)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "trim: bad arguments (%d candidates, head of %d rows)", n_cand, v_full);
    if (!(p->alpha >= 0 && p->alpha <= 1))
        return hsd_error(HSD_ERR_INVALID_ARG, "trim: alpha %g outside [0, 1]", p->alpha);
    if (!(p->min_coverage >= 0))
        return hsd_error(HSD_ERR_INVALID_ARG, "trim: minimum coverage %g is negative or NaN",
                         p->min_coverage);
    if (p->dim < 1 || !(p->fixed_flops >= 0) || isinf(p->fixed_flops))
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "trim: hidden dim %d and fixed FLOPs %g (need d >= 1, F >= 0)", p->dim,
                         p->fixed_flops);
    if (total <= 0)
        return hsd_error(HSD_ERR_OUT_OF_RANGE,
                         "trim: the corpus has no tokens, so coverage is undefined");
    return HSD_OK;
}

hsd_status hsd_trim_eval(const int64_t *prefix, int32_t n_cand, int64_t total, int32_t v_full,
                         const hsd_trim_params *p, int32_t k, hsd_trim_result *out) {
    /* the caller's params as the library's own before any field is read */
    hsd_trim_params own = hsd_trim_default_params();
    hsd_status st = hsd_params_read(&own, sizeof own, p, "hsd_trim_eval", "params",
                                    "hsd_trim_default_params()");
    if (!st) st = trim_check("hsd_trim_eval", prefix, n_cand, total, v_full, p ? &own : NULL, out);
    if (st) return st;
    p = &own;
    if (k < 1 || k > n_cand)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_trim_eval: k %d outside 1..%d", k, n_cand);
    out->k = k;
    out->coverage = hsd_trim_coverage(prefix, total, k);
    out->saving = hsd_trim_saving(p, v_full, k);
    out->utility = p->alpha * out->coverage + (1 - p->alpha) * out->saving;
    out->k_min_feasible = 0;
    return HSD_OK;
}

hsd_status hsd_trim_optimum(const int64_t *prefix, int32_t n_cand, int64_t total, int32_t v_full,
                            const hsd_trim_params *p, hsd_trim_result *out) {
    /* the caller's params as the library's own before any field is read */
    hsd_trim_params own = hsd_trim_default_params();
    hsd_status st = hsd_params_read(&own, sizeof own, p, "hsd_trim_optimum", "params",
                                    "hsd_trim_default_params()");
    if (!st) st = trim_check("hsd_trim_optimum", prefix, n_cand, total, v_full, p ? &own : NULL, out);
    if (st) return st;
    p = &own;
    int32_t best = 0, k_min = 0;
    double best_u = -INFINITY;
    for (int32_t k = 1; k <= n_cand; k++) {
        double c = hsd_trim_coverage(prefix, total, k);
        if (c < p->min_coverage) continue;
        if (!k_min) k_min = k;
        double u = p->alpha * c + (1 - p->alpha) * hsd_trim_saving(p, v_full, k);
        if (u > best_u) { /* strict: the smallest K among equals */
            best_u = u;
            best = k;
        }
    }
    if (!best)
        return hsd_error(HSD_ERR_OUT_OF_RANGE,
                         "trim: infeasible: no vocabulary size reaches coverage %g (the %d "
                         "candidate ids cover %g)",
                         p->min_coverage, n_cand, hsd_trim_coverage(prefix, total, n_cand));
    out->k = best;
    out->coverage = hsd_trim_coverage(prefix, total, best);
    out->saving = hsd_trim_saving(p, v_full, best);
    out->utility = best_u;
    out->k_min_feasible = k_min;
    return HSD_OK;
}

hsd_status hsd_trim_candidates(const hsd_tokenizer *target, const hsd_tokenizer *draft,
                               int32_t *order, int32_t n, int32_t *draft_ids, int32_t *n_cand) {
    if (!target || !draft || !order || !draft_ids || !n_cand)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_trim_candidates: %s is NULL",
                         !target      ? "target tokenizer"
                         : !draft     ? "draft tokenizer"
                         : !order     ? "order"
                         : !draft_ids ? "draft_ids"
                                      : "n_cand");
    *n_cand = 0;
    if (n < 0) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_trim_candidates: n = %d is negative", n);
    /* target id -> the drafter row spelling its bytes: lib/engine/vocab_map.h's t2d (special
     * tokens left out; a surface's row is its representative, not a byte-fallback twin) */
    hsd_vocab_map vm;
    hsd_status st = hsd_vocab_map_build(target, draft, false, &vm);
    if (st) return st;
    uint8_t *used = calloc((size_t)vm.n_d + 1, 1);
    if (!used) {
        hsd_vocab_map_free(&vm);
        return hsd_error(HSD_ERR_NOMEM, "hsd_trim_candidates: out of memory (%d drafter ids)",
                         (int)vm.n_d);
    }
    /* two target ids with the same bytes (a byte-fallback twin) name one drafter row: the
     * more frequent (earlier in order) keeps it */
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t d = order[i] >= 0 && order[i] < vm.n_t ? vm.t2d[order[i]] : -1;
        if (d >= 0 && !used[d]) used[d] = 1, draft_ids[k] = d, order[k++] = order[i];
    }
    free(used);
    hsd_vocab_map_free(&vm);
    if (k == 0)
        return hsd_error(HSD_ERR_OUT_OF_RANGE,
                         "no target token has a drafter token with the same bytes");
    *n_cand = k;
    return HSD_OK;
}

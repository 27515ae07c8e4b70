/* ψ statistics (lib/analysis/psi_stats.h): one prefix query of the drafter trie per byte position
 * lists the drafter surfaces starting there; then a backward pass over those matches decides
 * "can s[j..n) still be finished" and a forward pass pushes counts and part counts. A token of
 * n bytes costs O(n · longest drafter match), whatever its count. */
#include "lib/analysis/psi_stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"

/* Per byte position of the DP. */
typedef struct pos_state {
    double f;           /* decompositions of s[0..j) */
    uint64_t fu;        /* the same, saturating */
    int32_t pmax, pmin; /* most / fewest parts reaching j; -1 = unreachable */
    uint32_t match_off; /* drafter surfaces starting at j: work.match[match_off ..] */
    uint32_t n_match;
    uint8_t reach; /* s[j..n) decomposes */
} pos_state;

/* Scratch reused across tokens so a whole vocabulary costs a few allocations. */
typedef struct psi_work {
    pos_state *pos;
    size_t pos_cap;
    hsd_token_trie_match *match;
    size_t match_cap;
} psi_work;

static void work_free(psi_work *w) {
    free(w->pos);
    free(w->match);
}

/* Grows an array to at least `need` elements of `elem` bytes; the new pointer, or NULL (the
 * old array then stays valid and owned by the caller). */
static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (q) *cap = c;
    return q;
}

static uint64_t sat_mul_add(uint64_t acc, uint64_t a, uint64_t m) {
    uint64_t p, r;
    if (__builtin_mul_overflow(a, m, &p) || __builtin_add_overflow(acc, p, &r)) return UINT64_MAX;
    return r;
}

static hsd_status decompose(const hsd_token_trie *draft, const uint8_t *s, size_t n, bool distinct,
                            psi_work *w, hsd_psi_token *out) {
    if (n >= UINT32_MAX) return hsd_error(HSD_ERR_UNSUPPORTED, "psi: %zu-byte string", n);
    pos_state *np = grow(w->pos, &w->pos_cap, n + 1, sizeof *w->pos);
    if (!np) return hsd_error(HSD_ERR_NOMEM, "psi: out of memory for a %zu-byte token", n);
    w->pos = np;
    pos_state *p = w->pos;
    size_t max_len = hsd_token_trie_max_len(draft);

    /* every drafter surface s[i..e), found once per start by one prefix query */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t room = n - i < max_len ? n - i : max_len;
        if (k + room + 1 > UINT32_MAX)
            return hsd_error(HSD_ERR_UNSUPPORTED, "psi: over 2^32 drafter matches in %zu bytes", n);
        hsd_token_trie_match *nm = grow(w->match, &w->match_cap, k + room + 1, sizeof *w->match);
        if (!nm) return hsd_error(HSD_ERR_NOMEM, "psi: out of memory for a %zu-byte token", n);
        w->match = nm;
        size_t m = hsd_token_trie_prefixes(draft, s + i, n - i, w->match + k, room + 1);
        p[i] = (pos_state){0, 0, -1, -1, (uint32_t)k, (uint32_t)m, 0};
        k += m;
    }
    p[n] = (pos_state){0, 0, -1, -1, (uint32_t)k, 0, 1};

    /* backward: reach[i] = some drafter surface s[i..e) with reach[e] */
    for (size_t i = n; i-- > 0;) {
        const hsd_token_trie_match *m = w->match + p[i].match_off;
        for (uint32_t j = 0; j < p[i].n_match && !p[i].reach; j++)
            p[i].reach = p[i + m[j].len].reach;
    }

    /* forward: push each reachable position's counts along every drafter surface from it */
    p[0].f = 1.0;
    p[0].fu = 1;
    p[0].pmax = p[0].pmin = 0;
    double nodes = 0.0;
    int32_t prefix_parts = 0; /* most parts over proper prefixes s[0..j), j < n */
    for (size_t i = 0; i < n; i++) {
        if (p[i].pmax < 0) continue;
        if (p[i].reach) nodes += p[i].f;
        if (p[i].pmax > prefix_parts) prefix_parts = p[i].pmax;
        const hsd_token_trie_match *m = w->match + p[i].match_off;
        for (uint32_t j = 0; j < p[i].n_match; j++) {
            uint64_t mult = distinct ? 1 : m[j].n_ids;
            pos_state *q = &p[i + m[j].len];
            q->f += p[i].f * (double)mult;
            q->fu = sat_mul_add(q->fu, p[i].fu, mult);
            if (p[i].pmax + 1 > q->pmax) q->pmax = p[i].pmax + 1;
            if (q->pmin < 0 || p[i].pmin + 1 < q->pmin) q->pmin = p[i].pmin + 1;
        }
    }
    out->count = p[n].f;
    out->count_u64 = p[n].fu;
    out->nodes = n ? nodes : 0.0;
    out->parts_max = p[n].pmax > 0 ? p[n].pmax : 0;
    out->parts_min = p[n].pmin > 0 ? p[n].pmin : 0;
    out->n_max = n ? 1 + prefix_parts : 0;
    return HSD_OK;
}

hsd_status hsd_psi_decompose(const hsd_token_trie *draft, const uint8_t *s, size_t n,
                             const hsd_psi_params *params, hsd_psi_token *out) {
    if (!draft || !out || (!s && n)) return hsd_error(HSD_ERR_INVALID_ARG, "psi: NULL argument");
    psi_work w = {0};
    hsd_status st = decompose(draft, s, n, params && params->distinct_surfaces, &w, out);
    work_free(&w);
    return st;
}

void hsd_psi_stats_free(hsd_psi_stats *s) {
    if (!s) return;
    free(s->tok);
    free(s->len);
    memset(s, 0, sizeof *s);
}

hsd_status hsd_psi_stats_compute(const hsd_tokenizer *target, const hsd_token_trie *draft,
                                 const hsd_psi_params *params, hsd_psi_stats *out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_psi_stats_compute: out is NULL");
    memset(out, 0, sizeof *out);
    if (!target || !draft)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_psi_stats_compute: %s is NULL",
                         !target ? "target tokenizer" : "draft trie");
    int32_t n = hsd_tokenizer_vocab_size(target);
    out->n_ids = n;
    out->tok = calloc((size_t)n + 1, sizeof *out->tok);
    out->len = calloc((size_t)n + 1, sizeof *out->len);
    if (!out->tok || !out->len) {
        hsd_psi_stats_free(out);
        return hsd_error(HSD_ERR_NOMEM, "psi stats: out of memory for %d ids", n);
    }
    out->n_max_id = out->max_count_id = -1;
    const double two53 = 9007199254740992.0, two64 = 18446744073709551616.0;
    bool distinct = params && params->distinct_surfaces;
    psi_work w = {0};
    for (int32_t id = 0; id < n; id++) {
        if (!hsd_tokenizer_id_to_token(target, id) || hsd_tokenizer_is_special(target, id))
            continue;
        size_t len = 0;
        const uint8_t *b = hsd_tokenizer_token_bytes(target, id, &len);
        if (!b || !len) continue;
        if (len > UINT32_MAX) {
            work_free(&w);
            hsd_psi_stats_free(out);
            return hsd_error(HSD_ERR_UNSUPPORTED, "psi stats: target id %d: %zu-byte surface", id,
                             len);
        }
        hsd_psi_token *t = &out->tok[id];
        hsd_status st = decompose(draft, b, len, distinct, &w, t);
        if (st) {
            work_free(&w);
            hsd_psi_stats_free(out);
            return hsd_error_prefix(st, "psi stats: target id %d: ", id);
        }
        out->len[id] = (uint32_t)len;
        out->n_tokens++;
        if (t->count == 0.0) out->n_none++;
        if (t->count >= two64) out->n_saturated++;
        if (t->count > two53) out->n_inexact++;
        if (out->n_max_id < 0 || t->n_max > out->n_max) {
            out->n_max = t->n_max;
            out->n_max_id = id;
        }
        if (out->max_count_id < 0 || t->count > out->tok[out->max_count_id].count)
            out->max_count_id = id;
        if ((uint32_t)len > out->max_len) out->max_len = (uint32_t)len;
    }
    work_free(&w);
    return HSD_OK;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy's default percentile: linear interpolation at position q·(n−1). */
static double percentile(const double *v, size_t n, double q) {
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n) return v[n - 1];
    return v[lo] + (v[lo + 1] - v[lo]) * (pos - (double)lo);
}

hsd_psi_params hsd_psi_default_params(void) {
    return (hsd_psi_params){.distinct_surfaces = false};
}

void hsd_psi_summarize(double *v, size_t n, hsd_psi_summary *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!n || !v) return;
    /* callers often pass lengths already in order (hsd_psi_ids_by_length): skip the sort */
    size_t k = 1;
    while (k < n && v[k - 1] <= v[k]) k++;
    if (k < n) qsort(v, n, sizeof *v, cmp_double);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    double mean = sum / (double)n, ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
    out->n = (int64_t)n;
    out->mean = mean;
    out->sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    out->min = v[0];
    out->p25 = percentile(v, n, 0.25);
    out->median = percentile(v, n, 0.5);
    out->p75 = percentile(v, n, 0.75);
    out->max = v[n - 1];
}

hsd_status hsd_psi_ids_by_length(const hsd_psi_stats *s, int32_t **ids, size_t *n) {
    if (!s || !ids || !n)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_psi_ids_by_length: %s is NULL",
                         !s     ? "stats"
                         : !ids ? "ids"
                                : "n");
    *ids = NULL;
    *n = 0;
    /* counting sort by length keeps ids ascending within a length */
    size_t *start = calloc((size_t)s->max_len + 2, sizeof *start);
    int32_t *v = malloc(((size_t)s->n_tokens + 1) * sizeof *v);
    if (!start || !v) {
        free(start);
        free(v);
        return hsd_error(HSD_ERR_NOMEM, "psi stats: out of memory");
    }
    for (int32_t id = 0; id < s->n_ids; id++)
        if (s->len[id]) start[s->len[id] + 1]++;
    for (uint32_t l = 1; l <= s->max_len; l++) start[l + 1] += start[l];
    for (int32_t id = 0; id < s->n_ids; id++)
        if (s->len[id]) v[start[s->len[id]]++] = id;
    free(start);
    *ids = v;
    *n = (size_t)s->n_tokens;
    return HSD_OK;
}

hsd_status hsd_psi_by_length(const hsd_psi_stats *s, hsd_psi_length_row **rows, size_t *n_rows) {
    if (!s || !rows || !n_rows)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_psi_by_length: %s is NULL",
                         !s      ? "stats"
                         : !rows ? "rows"
                                 : "n_rows");
    *rows = NULL;
    *n_rows = 0;
    int32_t *ids;
    size_t n;
    hsd_status st = hsd_psi_ids_by_length(s, &ids, &n);
    if (st) return st;
    hsd_psi_length_row *r = calloc((size_t)s->max_len + 1, sizeof *r);
    double *v = malloc((n + 1) * sizeof *v);
    if (!r || !v) {
        free(ids);
        free(r);
        free(v);
        return hsd_error(HSD_ERR_NOMEM, "psi stats: out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t len = s->len[ids[i]];
        hsd_psi_length_row *row = &r[k++];
        row->len = len;
        size_t m = 0;
        double nodes = 0.0;
        for (; i < n && s->len[ids[i]] == len; i++) {
            const hsd_psi_token *t = &s->tok[ids[i]];
            v[m++] = t->count;
            nodes += t->nodes;
            if (t->count == 0.0) row->none++;
            if (t->n_max > row->n_max) row->n_max = t->n_max;
        }
        row->tokens = (int32_t)m;
        row->nodes_mean = nodes / (double)m;
        hsd_psi_summarize(v, m, &row->count);
    }
    free(ids);
    free(v);
    *rows = r;
    *n_rows = k;
    return HSD_OK;
}

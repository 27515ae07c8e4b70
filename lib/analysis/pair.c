/* Pair advisor (public API: include/hsd_tools.h): vocabulary overlap by surface bytes,
 * expressibility (T → D*, D → T*), corpus token usage, injectivity, and the Table 4
 * recommendation. How well do a target tokenizer T and a drafter tokenizer D fit together, and
 * which heterogeneous-vocabulary algorithm (paper Table 4) should drive them.
 *
 * Counting rules (docs/PAIR.md):
 *   - |T|, |D| count used ids (ids no token occupies are excluded), special tokens included,
 *     as the paper's Table 8 vocabulary sizes do;
 *   - T∩D is lib/engine/vocab_map.h's (with specials): a non-special token of T is in T∩D
 *     when some non-special token of D has the same surface bytes; a special (control) token
 *     of T only when D has a special token with the same surface bytes — control tokens never
 *     travel through text, so they cannot meet a text token. Empty surfaces never match;
 *   - T∩D and the ratios count T ids, so several ids with one surface (SentencePiece "A" and
 *     its byte-fallback "<0x41>") all count.
 * The expressibility checks T → D* and D → T* run over non-special tokens with non-empty
 * surfaces: can a token's surface bytes be cut into surfaces of the other side's tokens? */
#include "hsd.h"
#include "hsd_tools.h"

#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/analysis/injectivity.h"
#include "lib/analysis/psi_stats.h"
#include "lib/analysis/recommend.h"
#include "lib/engine/token_trie.h"
#include "lib/engine/vocab_map.h"

static bool id_used(const hsd_tokenizer *t, int32_t id) {
    return hsd_tokenizer_id_to_token(t, id) != NULL;
}

/* reach[i]: s[0..i) is a concatenation of the trie's tokens (the text tokens of one
 * tokenizer, lib/engine/token_trie.h). Classic word-break DP. */
static bool segmentable(const hsd_token_trie *tr, const uint8_t *s, size_t n, uint8_t *reach) {
    memset(reach, 0, n + 1);
    reach[0] = 1;
    for (size_t i = 0; i < n; i++) {
        if (!reach[i]) continue;
        int32_t node = HSD_TOKEN_TRIE_ROOT;
        for (size_t j = i; j < n; j++) {
            if ((node = hsd_token_trie_step(tr, node, s[j])) < 0) break;
            size_t k;
            hsd_token_trie_ids(tr, node, &k);
            if (k) reach[j + 1] = 1;
        }
        if (reach[n]) return true;
    }
    return reach[n] != 0;
}

hsd_status hsd_pair_expressible(const hsd_tokenizer *a, const hsd_tokenizer *b,
                                hsd_pair_expr *out) {
    if (!a || !b || !out)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_pair_expressible: %s is NULL",
                         !a   ? "tokenizer a"
                         : !b ? "tokenizer b"
                              : "out");
    memset(out, 0, sizeof *out);
    hsd_token_trie *tr;
    hsd_status st = hsd_token_trie_build(b, &tr);
    if (st) return st;
    uint8_t *reach = NULL;
    size_t reach_cap = 0;
    int32_t n = hsd_tokenizer_vocab_size(a);
    for (int32_t id = 0; id < n; id++) {
        if (!id_used(a, id) || hsd_tokenizer_is_special(a, id)) continue;
        size_t len;
        const uint8_t *s = hsd_tokenizer_token_bytes(a, id, &len);
        if (!s || !len) continue;
        if (len + 1 > reach_cap) {
            uint8_t *p = realloc(reach, len + 1);
            if (!p) {
                st = hsd_error(HSD_ERR_NOMEM, "pair: out of memory");
                break;
            }
            reach = p;
            reach_cap = len + 1;
        }
        out->checked++;
        if (!segmentable(tr, s, len, reach)) {
            if (out->n_examples < HSD_PAIR_MAX_EXAMPLES) out->example_ids[out->n_examples++] = id;
            out->failures++;
        }
    }
    out->holds = out->failures == 0;
    free(reach);
    hsd_token_trie_free(tr);
    return st;
}

/* Distinct ids produced when encoding every corpus sample (no special tokens). */
static hsd_status used_ids(const hsd_tokenizer *t, const hsd_corpus *c, int32_t **ids, size_t *n,
                           int64_t *roundtrips) {
    int32_t vs = hsd_tokenizer_vocab_size(t);
    uint8_t *seen = calloc((size_t)vs + 1, 1);
    if (!seen) return hsd_error(HSD_ERR_NOMEM, "pair: out of memory");
    *roundtrips = 0;
    hsd_status st = HSD_OK;
    for (size_t i = 0; i < c->n && !st; i++) {
        int32_t *e = NULL;
        size_t ne = 0;
        st = hsd_tokenizer_encode_alloc(t, c->text[i], c->len[i], false, &e, &ne);
        for (size_t k = 0; !st && k < ne; k++)
            if (e[k] >= 0 && e[k] < vs) seen[e[k]] = 1;
        hsd_free(e);
        bool same = false;
        if (!st) st = hsd_inj_roundtrip(t, c->text[i], c->len[i], NULL, NULL, &same);
        if (same) (*roundtrips)++;
    }
    size_t cnt = 0;
    for (int32_t id = 0; id < vs; id++) cnt += seen[id];
    *ids = malloc((cnt + 1) * sizeof **ids);
    if (!*ids) st = st ? st : hsd_error(HSD_ERR_NOMEM, "pair: out of memory");
    *n = 0;
    for (int32_t id = 0; !st && id < vs; id++)
        if (seen[id]) (*ids)[(*n)++] = id;
    free(seen);
    return st;
}

/* Corpus usage. A used target id meets the used drafter ids when some used drafter id spells
 * its surface: the used drafter ids mark their surface's drafter representative (t2d of
 * their target representative, lib/engine/vocab_map.h), which every id of the surface names. */
static hsd_status corpus_usage(const hsd_tokenizer *t, const hsd_tokenizer *d, const char *path,
                               const hsd_vocab_map *vm, hsd_pair_report *r) {
    hsd_corpus c;
    hsd_status st = hsd_corpus_load(path, &c);
    if (st) return st;
    int32_t *tu = NULL, *du = NULL;
    size_t ntu = 0, ndu = 0;
    uint8_t *dmark = NULL;
    st = used_ids(t, &c, &tu, &ntu, &r->t_roundtrip);
    if (!st) st = used_ids(d, &c, &du, &ndu, &r->d_roundtrip);
    if (!st && !(dmark = calloc((size_t)vm->n_d + 1, 1)))
        st = hsd_error(HSD_ERR_NOMEM, "pair: out of memory");
    if (!st) {
        for (size_t k = 0; k < ndu; k++) {
            int32_t tr = du[k] < vm->n_d ? vm->d2t[du[k]] : -1;
            if (tr >= 0 && vm->t2d[tr] >= 0) dmark[vm->t2d[tr]] = 1;
        }
        r->has_corpus = true;
        r->corpus_samples = (int64_t)c.n;
        r->t_used = (int32_t)ntu;
        r->d_used = (int32_t)ndu;
        for (size_t k = 0; k < ntu; k++) {
            int32_t dr = tu[k] < vm->n_t ? vm->t2d[tu[k]] : -1;
            if (dr >= 0) r->t_used_in_d++;
            if (dr >= 0 && dmark[dr]) r->t_used_in_dused++;
        }
        r->corpus_ratio = ntu ? (double)r->t_used_in_d / (double)ntu : 0.0;
        r->corpus_ratio_used = ntu ? (double)r->t_used_in_dused / (double)ntu : 0.0;
    }
    free(dmark);
    free(tu);
    free(du);
    hsd_corpus_free(&c);
    return st;
}

hsd_status hsd_pair_analyze(const hsd_tokenizer *t, const hsd_tokenizer *d, const char *corpus_path,
                            hsd_pair_report *r) {
    if (!t || !d || !r)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_pair_analyze: %s is NULL",
                         !t   ? "target tokenizer"
                         : !d ? "draft tokenizer"
                              : "out");
    memset(r, 0, sizeof *r);
    /* special tokens meet special tokens of the same bytes (the counting rules above) */
    hsd_vocab_map vm;
    hsd_status st = hsd_vocab_map_build(t, d, true, &vm);
    if (st) return st;
    /* the facts `--algo auto` rests on too (lib/analysis/recommend.h), ψ always: it is printed */
    if ((st = hsd_recommend_facts(t, d, &vm, true, r))) goto done;
    if ((st = hsd_pair_expressible(t, d, &r->t_in_dstar))) goto done;
    if ((st = hsd_pair_expressible(d, t, &r->d_in_tstar))) goto done;
    if (corpus_path && (st = corpus_usage(t, d, corpus_path, &vm, r))) goto done;
    hsd_pair_recommend(r);
done:
    hsd_vocab_map_free(&vm);
    return st;
}

/* The rule itself is hsd_recommend (lib/analysis/recommend.h), shared with `--algo auto`. */
/* Replaces *dst with a formatted heap string (hsd_free releases it; NULL when out of memory,
 * which the report then shows as no text). Text fields of the report never truncate. */
static void set_text(char **dst, const char *fmt, ...) HSD_PRINTF(2, 3);
static void set_text(char **dst, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *t = NULL;
    if (vasprintf(&t, fmt, ap) < 0) t = NULL;
    va_end(ap);
    free(*dst);
    *dst = t;
}

static void warn(hsd_pair_report *r, const char *fmt, long long a, long long b) {
    char *add = NULL;
    if (asprintf(&add, fmt, a, b) < 0) return;
    if (r->warnings && *r->warnings)
        set_text(&r->warnings, "%s %s", r->warnings, add);
    else
        set_text(&r->warnings, "%s", add);
    free(add);
}

/* The paper assumes T → D* and D* → T* (Sec 3) and, for SLEM/TLI's string bridge, injective
 * tokenizers (Sec 3.2); say so when this pair breaks them. */
static void pair_warnings(hsd_pair_report *r) {
    set_text(&r->warnings, "%s", "");
    if (!r->t_in_dstar.holds)
        warn(r,
             "T -> D* fails for %lld of %lld target tokens: text holding them cannot reach "
             "the drafter intact.",
             (long long)r->t_in_dstar.failures, (long long)r->t_in_dstar.checked);
    if (!r->d_in_tstar.holds)
        warn(r,
             "D -> T* fails for %lld of %lld drafter tokens: drafts holding them cannot be "
             "verified.",
             (long long)r->d_in_tstar.failures, (long long)r->d_in_tstar.checked);
    if (r->has_corpus && r->t_roundtrip < r->corpus_samples)
        warn(r,
             "target not injective on %lld of %lld corpus samples: the bridge needs the "
             "look-behind re-encoding.",
             (long long)(r->corpus_samples - r->t_roundtrip), (long long)r->corpus_samples);
    if (r->has_corpus && r->d_roundtrip < r->corpus_samples)
        warn(r, "drafter not injective on %lld of %lld corpus samples.",
             (long long)(r->corpus_samples - r->d_roundtrip), (long long)r->corpus_samples);
}

void hsd_pair_report_free(hsd_pair_report *r) {
    if (!r) return;
    hsd_free(r->reason);
    hsd_free(r->warnings);
    r->reason = r->warnings = NULL;
}

void hsd_pair_recommend(hsd_pair_report *r) {
    if (!r) return;
    pair_warnings(r);
    /* the one rule (lib/analysis/recommend.h), shared with `--algo auto`; its reason is a
     * sentence of well under 1 KB */
    char why[1024];
    r->algo = hsd_recommend(r, why, sizeof why);
    set_text(&r->reason, "%s", why);
}

hsd_status hsd_pair_psi_summary(const hsd_tokenizer *t, const hsd_tokenizer *d, hsd_pair_psi *out) {
    if (!t || !d || !out)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_pair_psi_summary: %s is NULL",
                         !t   ? "target tokenizer"
                         : !d ? "draft tokenizer"
                              : "out");
    memset(out, 0, sizeof *out);
    out->max_id = -1;
    hsd_token_trie *trie = NULL;
    hsd_psi_stats s = {0};
    double *v = NULL;
    hsd_status st = hsd_token_trie_build(d, &trie);
    if (!st) st = hsd_psi_stats_compute(t, trie, NULL, &s);
    if (!st && !(v = malloc(((size_t)s.n_tokens + 1) * sizeof *v)))
        st = hsd_error(HSD_ERR_NOMEM, "pair: psi summary: out of memory");
    if (!st) {
        size_t n = 0;
        for (int32_t id = 0; id < s.n_ids; id++)
            if (s.len[id]) v[n++] = s.tok[id].nodes;
        hsd_psi_summary sum;
        hsd_psi_summarize(v, n, &sum);
        out->nodes_mean = sum.mean;
        out->nodes_p75 = sum.p75;
        n = 0;
        for (int32_t id = 0; id < s.n_ids; id++)
            if (s.len[id]) v[n++] = s.tok[id].count;
        hsd_psi_summarize(v, n, &sum);
        out->tokens = s.n_tokens;
        out->none = s.n_none;
        out->mean = sum.mean;
        out->median = sum.median;
        out->p75 = sum.p75;
        out->max = sum.max;
        out->max_id = s.max_count_id;
        out->n_max = s.n_max;
    }
    free(v);
    hsd_psi_stats_free(&s);
    hsd_token_trie_free(trie);
    return st;
}

/* Pair advisor (public API: include/hsd_tools.h): vocabulary overlap by surface bytes,
 * expressibility (T → D*, D → T*), corpus token usage, injectivity, and the Table 4
 * recommendation. How well do a target tokenizer T and a drafter tokenizer D fit together, and
 * which heterogeneous-vocabulary algorithm (paper Table 4) should drive them.
 *
 * Counting rules (docs/PAIR.md):
 *   - |T|, |D| count used ids (ids no token occupies are excluded), special tokens included,
 *     as the paper's Table 8 vocabulary sizes do;
 *   - a non-special token of T is in T∩D when some non-special token of D has the same
 *     surface bytes (hsd_tokenizer_token_bytes); a special (control) token of T is in T∩D only
 *     when D has a special token with the same surface bytes — control tokens never travel
 *     through text, so they cannot meet a text token. Empty surfaces never match;
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
#include "lib/base/map.h"
#include "lib/analysis/psi_stats.h"
#include "lib/engine/token_trie.h"

static bool id_used(const hsd_tokenizer *t, int32_t id) {
    return hsd_tokenizer_id_to_token(t, id) != NULL;
}

/* Surface sets of one tokenizer: text tokens and special tokens kept apart (see pair.h). */
typedef struct surface_sets {
    hsd_strmap text, special;
} surface_sets;

static hsd_status sets_build(const hsd_tokenizer *t, const int32_t *only, size_t n_only,
                             surface_sets *s) {
    int32_t n = hsd_tokenizer_vocab_size(t);
    size_t count = only ? n_only : (size_t)n;
    if (hsd_strmap_init(&s->text, count) || hsd_strmap_init(&s->special, 64))
        return hsd_error(HSD_ERR_NOMEM, "pair: out of memory");
    for (size_t k = 0; k < count; k++) {
        int32_t id = only ? only[k] : (int32_t)k;
        if (!id_used(t, id)) continue;
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(t, id, &len);
        if (!b || !len) continue;
        hsd_strmap *m = hsd_tokenizer_is_special(t, id) ? &s->special : &s->text;
        if (hsd_strmap_put(m, b, len, id)) return hsd_error(HSD_ERR_NOMEM, "pair: out of memory");
    }
    return HSD_OK;
}

static void sets_free(surface_sets *s) {
    hsd_strmap_free(&s->text);
    hsd_strmap_free(&s->special);
}

/* Does T's token `id` meet a token of D (surface_sets of D)? */
static bool meets(const hsd_tokenizer *t, int32_t id, const surface_sets *d) {
    size_t len;
    const uint8_t *b = hsd_tokenizer_token_bytes(t, id, &len);
    if (!b || !len) return false;
    const hsd_strmap *m = hsd_tokenizer_is_special(t, id) ? &d->special : &d->text;
    return hsd_strmap_get(m, b, len) >= 0;
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

static bool vocab_identical(const hsd_tokenizer *t, const hsd_tokenizer *d) {
    int32_t n = hsd_tokenizer_vocab_size(t);
    if (n != hsd_tokenizer_vocab_size(d)) return false;
    for (int32_t id = 0; id < n; id++) {
        const char *a = hsd_tokenizer_id_to_token(t, id), *b = hsd_tokenizer_id_to_token(d, id);
        if (!a != !b) return false;
        if (!a) continue;
        size_t la, lb;
        const uint8_t *sa = hsd_tokenizer_token_bytes(t, id, &la);
        const uint8_t *sb = hsd_tokenizer_token_bytes(d, id, &lb);
        if (strcmp(a, b) || la != lb || (la && memcmp(sa, sb, la)) ||
            hsd_tokenizer_is_special(t, id) != hsd_tokenizer_is_special(d, id))
            return false;
    }
    return true;
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

static hsd_status corpus_usage(const hsd_tokenizer *t, const hsd_tokenizer *d, const char *path,
                               const surface_sets *dall, hsd_pair_report *r) {
    hsd_corpus c;
    hsd_status st = hsd_corpus_load(path, &c);
    if (st) return st;
    int32_t *tu = NULL, *du = NULL;
    size_t ntu = 0, ndu = 0;
    st = used_ids(t, &c, &tu, &ntu, &r->t_roundtrip);
    if (!st) st = used_ids(d, &c, &du, &ndu, &r->d_roundtrip);
    surface_sets dused = {0};
    if (!st) st = sets_build(d, du, ndu, &dused);
    if (!st) {
        r->has_corpus = true;
        r->corpus_samples = (int64_t)c.n;
        r->t_used = (int32_t)ntu;
        r->d_used = (int32_t)ndu;
        for (size_t k = 0; k < ntu; k++) {
            if (meets(t, tu[k], dall)) r->t_used_in_d++;
            if (meets(t, tu[k], &dused)) r->t_used_in_dused++;
        }
        r->corpus_ratio = ntu ? (double)r->t_used_in_d / (double)ntu : 0.0;
        r->corpus_ratio_used = ntu ? (double)r->t_used_in_dused / (double)ntu : 0.0;
    }
    sets_free(&dused);
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
    surface_sets dall = {0};
    hsd_status st = sets_build(d, NULL, 0, &dall);
    if (st) goto done;
    int32_t nt = hsd_tokenizer_vocab_size(t), nd = hsd_tokenizer_vocab_size(d);
    for (int32_t id = 0; id < nt; id++) {
        if (!id_used(t, id)) continue;
        r->t_size++;
        if (hsd_tokenizer_is_special(t, id)) r->t_special++;
        if (meets(t, id, &dall)) r->intersection++;
    }
    int64_t sum = 0, cnt = 0;
    for (int32_t id = 0; id < nd; id++) {
        if (!id_used(d, id)) continue;
        r->d_size++;
        if (hsd_tokenizer_is_special(d, id)) {
            r->d_special++;
            continue;
        }
        size_t len;
        hsd_tokenizer_token_bytes(d, id, &len);
        if (!len) continue;
        if ((int32_t)len > r->d_max_surface) r->d_max_surface = (int32_t)len;
        sum += (int64_t)len;
        cnt++;
    }
    r->d_mean_surface = cnt ? (double)sum / (double)cnt : 0.0;
    r->ratio = r->t_size ? (double)r->intersection / (double)r->t_size : 0.0;
    r->identical = vocab_identical(t, d);
    if ((st = hsd_pair_expressible(t, d, &r->t_in_dstar))) goto done;
    if ((st = hsd_pair_expressible(d, t, &r->d_in_tstar))) goto done;
    if (corpus_path && (st = corpus_usage(t, d, corpus_path, &dall, r))) goto done;
    if ((st = hsd_pair_psi_summary(t, d, &r->psi))) goto done;
    r->has_psi = true;
    hsd_pair_recommend(r);
done:
    sets_free(&dall);
    return st;
}

/* The rule, in order (docs/PAIR.md; paper Table 4):
 *   1. identical vocabularies                                   → SD (no translation needed)
 *   2. large byte overlap, |T∩D|/|T| ≥ 0.50 (Table 9), and when a corpus is given at least
 *      half of the target tokens it uses are drafter tokens too (Table 10) — TLI can only
 *      draft T∩D tokens, so overlap that the text never uses does not help → TLI
 *   3. drafter tokens short (every text token ≤ 4 bytes), so the ψ sum over draft sequences
 *      stays small (Lemma 3.1: 2^(len−1) sequences per target token of length len), and, when
 *      the ψ summary was computed, 3 of 4 target tokens need at most 64 drafter tree nodes
 *      (short tokens alone do not bound ψ: every 1..4-byte string as a token still gives
 *      thousands of sequences behind a 16-byte target token) → SLRS
 *   4. otherwise                                                → SLEM */
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
    if (r->identical) {
        r->algo = HSD_ALGO_SD;
        set_text(&r->reason,
                 "identical vocabularies: standard speculative decoding needs no translation");
        return;
    }
    if (r->ratio >= HSD_PAIR_TLI_MIN_VOCAB &&
        (!r->has_corpus || r->corpus_ratio >= HSD_PAIR_TLI_MIN_CORPUS)) {
        r->algo = HSD_ALGO_TLI;
        if (r->has_corpus)
            set_text(&r->reason,
                     "large vocabulary overlap: |T∩D|/|T| = %.3f >= %.2f and %.1f%% of the target "
                     "tokens used on the corpus are drafter tokens (>= %.0f%%)",
                     r->ratio, HSD_PAIR_TLI_MIN_VOCAB, 100.0 * r->corpus_ratio,
                     100.0 * HSD_PAIR_TLI_MIN_CORPUS);
        else
            set_text(&r->reason,
                     "large vocabulary overlap: |T∩D|/|T| = %.3f >= %.2f", r->ratio,
                     HSD_PAIR_TLI_MIN_VOCAB);
        return;
    }
    bool short_tokens = r->d_max_surface > 0 && r->d_max_surface <= HSD_PAIR_SLRS_MAX_BYTES;
    if (short_tokens && r->has_psi && r->psi.nodes_p75 > HSD_PAIR_SLRS_MAX_NODES) {
        r->algo = HSD_ALGO_SLEM;
        set_text(&r->reason,
                 "drafter tokens are short (longest %d bytes) but psi is costly: a quarter of "
                 "the target tokens need more than %.1f drafter tree nodes (> %.0f), %.3g "
                 "decompositions at most: SLEM works for any pair",
                 r->d_max_surface, r->psi.nodes_p75, HSD_PAIR_SLRS_MAX_NODES, r->psi.max);
        return;
    }
    if (short_tokens) {
        r->algo = HSD_ALGO_SLRS;
        if (r->has_psi)
            set_text(&r->reason,
                     "drafter tokens are short (longest %d bytes <= %d) and psi is cheap (3 of 4 "
                     "target tokens need at most %.1f drafter tree nodes <= %.0f; n_max %d): "
                     "SLRS accepts at least as often as SLEM",
                     r->d_max_surface, HSD_PAIR_SLRS_MAX_BYTES, r->psi.nodes_p75,
                     HSD_PAIR_SLRS_MAX_NODES, r->psi.n_max);
        else
            set_text(&r->reason,
                     "drafter tokens are short (longest %d bytes <= %d): SLRS's psi stays cheap "
                     "and accepts at least as often as SLEM",
                     r->d_max_surface, HSD_PAIR_SLRS_MAX_BYTES);
        return;
    }
    r->algo = HSD_ALGO_SLEM;
    set_text(
        &r->reason,
        "overlap too small for TLI (|T∩D|/|T| = %.3f%s) and drafter tokens too long for "
        "SLRS (longest %d bytes > %d): SLEM works for any pair",
        r->ratio,
        r->has_corpus
            ? (r->corpus_ratio < HSD_PAIR_TLI_MIN_CORPUS ? ", corpus-used ratio below 0.50" : "")
            : "",
        r->d_max_surface, HSD_PAIR_SLRS_MAX_BYTES);
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

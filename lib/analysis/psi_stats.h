/* ψ statistics: how many drafter-token sequences stand behind each target token (paper
 * Lemma 3.1, Table 5, Figure 2), and the SLRS lookahead n_max — computed offline from the two
 * vocabularies by dynamic programming over byte positions, never by enumeration.
 *
 * For a target token t with surface s = s[0..n) and the drafter's token trie:
 *   count     decompositions: draft-token sequences whose concatenation is exactly s, i.e.
 *             the paper's "combinations" (14 for 'hello' in Qwen2, t itself included when it
 *             is a drafter token). f[0] = 1, f[e] += f[i] · mult(s[i..e)) for every drafter
 *             surface s[i..e); count = f[n]. mult is the number of drafter ids with that
 *             surface (ψ sums over id sequences; SentencePiece "A" and "<0x41>" are two), or 1
 *             with hsd_psi_params.distinct_surfaces. A token with no decomposition counts 0.
 *   nodes     the non-leaf nodes of the tree of those decompositions, root included: the
 *             drafter forward passes the paper needs for ψ(t) (16 for 'hello'; Fig. 1), and the
 *             number of positions one tree-masked forward scores. nodes = Σ f[j] over j < n
 *             from which s[j..n) still decomposes.
 *   parts_max / parts_min   most / fewest draft tokens in one decomposition (0 when none).
 *   n_max     the paper's maximum lookahead (Sec. 3.3): the most draft tokens that may have
 *             to be sampled before the first target token is determined. With the paper's
 *             tokenization (longest target-token prefix), drafting must go on while the drafts'
 *             concatenation is a proper prefix of some target token, so
 *             n_max(t) = 1 + max{parts_max(s[0..j)) : j < n, s[0..j) decomposes}
 *             and the pair's n_max is the largest n_max(t). It is ≥ parts_max(t), and equal to
 *             it when the drafter has every single byte. ('hello_world' over {hello_, world,
 *             wo, rld}: 3, as in the paper.)
 * Counts are kept twice: as double (exact up to 2^53, then rounded; inf past DBL_MAX, which
 * takes a surface of about 1000 bytes or more — qwen3's largest count is 2^127) and as uint64
 * saturating at UINT64_MAX; the statistics use the double, and the report says how many
 * tokens exceeded 2^53 and 2^64. */
#ifndef HSD_LIB_PSI_STATS_H
#define HSD_LIB_PSI_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/engine/token_trie.h"

typedef struct hsd_psi_params {
    bool distinct_surfaces; /* count surface sequences, not id sequences */
} hsd_psi_params;

typedef struct hsd_psi_token {
    double count;       /* decompositions (see above) */
    uint64_t count_u64; /* the same, UINT64_MAX when it does not fit */
    double nodes;       /* tree nodes (drafter positions) ψ(t) needs */
    int32_t parts_max, parts_min;
    int32_t n_max;
} hsd_psi_token;

/* Decomposes one byte string over the drafter trie. Any length; no allocation below 1024
 * bytes. params may be NULL (defaults). */
hsd_status hsd_psi_decompose(const hsd_token_trie *draft, const uint8_t *s, size_t n,
                             const hsd_psi_params *params, hsd_psi_token *out);

/* Per target token results for a whole vocabulary. */
typedef struct hsd_psi_stats {
    int32_t n_ids;       /* target vocabulary size (ids); tok/len are indexed by id */
    hsd_psi_token *tok;  /* [n_ids] */
    uint32_t *len;       /* [n_ids] surface bytes; 0 = not counted (unused, special, empty) */
    int32_t n_tokens;    /* target tokens counted */
    int32_t n_none;      /* ... with no decomposition into drafter tokens (count 0) */
    int32_t n_saturated; /* ... whose count exceeds UINT64_MAX (count_u64 saturated) */
    int32_t n_inexact;   /* ... whose count exceeds 2^53 (the double is rounded) */
    int32_t n_max;       /* the pair's n_max (largest n_max(t)), and a token attaining it */
    int32_t n_max_id;
    int32_t max_count_id; /* a token with the most decompositions */
    uint32_t max_len;     /* longest target surface counted */
} hsd_psi_stats;

/* Target tokens: used, non-special ids with a non-empty surface (as in the token trie). */
hsd_status hsd_psi_stats_compute(const hsd_tokenizer *target, const hsd_token_trie *draft,
                                 const hsd_psi_params *params, hsd_psi_stats *out);
void hsd_psi_stats_free(hsd_psi_stats *s);

/* Describe-style summary of n values (pandas/numpy conventions: sample standard deviation,
 * percentiles by linear interpolation between order statistics). */
typedef struct hsd_psi_summary {
    int64_t n;
    double mean, sd, min, p25, median, p75, max;
} hsd_psi_summary;

/* Sorts v in place (unless it is sorted already). n = 0 gives an all-zero summary. */
void hsd_psi_summarize(double *v, size_t n, hsd_psi_summary *out);

/* Counted target ids ordered by (surface length, id): the paper's "shortest N tokens" are
 * the first N. *ids is malloc'ed (caller frees); *n gets s->n_tokens. */
hsd_status hsd_psi_ids_by_length(const hsd_psi_stats *s, int32_t **ids, size_t *n);

/* One row of the per-length table (Figure 2). */
typedef struct hsd_psi_length_row {
    uint32_t len;   /* surface bytes */
    int32_t tokens; /* target tokens of this length */
    int32_t none;   /* of which without decomposition */
    hsd_psi_summary count;
    double nodes_mean;
    int32_t n_max; /* largest n_max(t) at this length */
} hsd_psi_length_row;

/* Rows for every length that has tokens, shortest first; *rows is malloc'ed. */
hsd_status hsd_psi_by_length(const hsd_psi_stats *s, hsd_psi_length_row **rows, size_t *n_rows);

#endif

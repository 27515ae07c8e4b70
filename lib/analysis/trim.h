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
#ifndef HSD_LIB_TRIM_H
#define HSD_LIB_TRIM_H

#include <stdint.h>

#include "hsd.h"
#include "lib/analysis/corpus.h"

/* counts[id] += occurrences of id in the corpus texts encoded without special tokens.
 * counts has hsd_tokenizer_vocab_size(tok) entries (zeroed by the caller). *n_tokens gets the
 * total. */
hsd_status hsd_trim_count(const hsd_tokenizer *tok, const hsd_corpus *corpus, int64_t *counts,
                          int64_t *n_tokens);
/* order[0..V) = ids by decreasing count, ties by increasing id. */
hsd_status hsd_trim_rank(const int64_t *counts, int32_t V, int32_t *order);

typedef struct hsd_trim_params {
    double alpha;        /* weight of coverage in U, in [0, 1] */
    double min_coverage; /* c_min in [0, 1] */
    int32_t dim;         /* hidden size d of the drafter head */
    double fixed_flops;  /* F_fixed: the drafter's FLOPs that do not depend on K (>= 0) */
} hsd_trim_params;

typedef struct hsd_trim_result {
    int32_t k;              /* K* */
    double coverage;        /* C(K*) */
    double saving;          /* R(K*) */
    double utility;         /* U(K*) */
    int32_t k_min_feasible; /* smallest K with C(K) >= c_min */
} hsd_trim_result;

/* prefix[k] = sum of the counts of order[0..k) (prefix[0] = 0), n+1 entries. */
void hsd_trim_prefix(const int64_t *counts, const int32_t *order, int32_t n, int64_t *prefix);
/* C(K) = prefix[k] / total (0 when total is 0). */
double hsd_trim_coverage(const int64_t *prefix, int64_t total, int32_t k);
/* R(K) for a head of v_full rows. */
double hsd_trim_saving(const hsd_trim_params *p, int32_t v_full, int32_t k);
/* K* over K = 1..n_cand, the candidates being the ranked ids behind prefix: all V ids, or
 * only those the drafter can propose (T ∩ D), in which case coverage tops out below 1.
 * total = N (all corpus tokens), v_full = rows of the full head. Errors: bad parameters
 * (INVALID_ARG), an empty corpus or a c_min no K reaches (OUT_OF_RANGE, naming the best
 * coverage there is). */
hsd_status hsd_trim_optimum(const int64_t *prefix, int32_t n_cand, int64_t total, int32_t v_full,
                            const hsd_trim_params *p, hsd_trim_result *out);

#endif

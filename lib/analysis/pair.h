/* Pair advisor: how well do a target tokenizer T and a drafter tokenizer D fit together, and
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
#ifndef HSD_LIB_PAIR_H
#define HSD_LIB_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

typedef enum hsd_pair_algo {
    HSD_PAIR_SD = 0,   /* identical vocabularies: standard speculative decoding (Alg 5) */
    HSD_PAIR_TLI = 1,  /* token-level intersection (Alg 4) */
    HSD_PAIR_SLEM = 2, /* string-level exact match (Alg 2) */
    HSD_PAIR_SLRS = 3, /* string-level rejection sampling (Alg 3) */
} hsd_pair_algo;

/* Recommendation thresholds (docs/PAIR.md explains the choice). */
#define HSD_PAIR_TLI_MIN_VOCAB 0.50  /* |T∩D|/|T| (Table 9) */
#define HSD_PAIR_TLI_MIN_CORPUS 0.50 /* and, with a corpus, share of used target tokens in D */
#define HSD_PAIR_SLRS_MAX_BYTES 4    /* every drafter text token at most this many bytes */
#define HSD_PAIR_SLRS_MAX_NODES 64.0 /* and, with the ψ summary, 3 of 4 target tokens need at
                                      * most this many drafter tree nodes (lib/psi_stats.h) */

#define HSD_PAIR_MAX_EXAMPLES 5

/* Result of the byte-level DP "is every token of A a concatenation of tokens of B". */
typedef struct hsd_pair_expr {
    bool holds;
    int64_t checked;                           /* tokens of A examined */
    int64_t failures;                          /* how many cannot be expressed */
    int32_t example_ids[HSD_PAIR_MAX_EXAMPLES]; /* the first failing ids of A */
    int n_examples;
} hsd_pair_expr;

/* ψ cost of SLRS for the pair (lib/psi_stats.h defines each number): how many drafter-token
 * sequences stand behind each target text token (Lemma 3.1), over id sequences. */
typedef struct hsd_pair_psi {
    int32_t tokens;            /* target text tokens decomposed */
    int32_t none;              /* ... with no decomposition into drafter tokens (count 0) */
    double mean, median, p75, max; /* decompositions per target token */
    int32_t max_id;            /* a target token with the most */
    double nodes_mean, nodes_p75; /* drafter tree nodes per target token: the positions one
                                   * tree-masked forward scores for ψ(t) (paper Fig. 1). The
                                   * mean is dominated by the few longest tokens; the p75 is not */
    int32_t n_max;             /* the pair's lookahead: most drafts before T(...)_1 is fixed */
} hsd_pair_psi;

/* The facts the recommendation is based on (filled by hsd_pair_analyze, or by hand in tests). */
typedef struct hsd_pair_report {
    int32_t t_size, d_size;      /* |T|, |D|: used ids */
    int32_t t_special, d_special; /* of which special */
    int32_t intersection;        /* |T∩D| counted in T ids */
    double ratio;                /* |T∩D| / |T|  (Table 9) */
    bool identical;              /* same ids with the same strings and surfaces */

    hsd_pair_expr t_in_dstar; /* T → D* */
    hsd_pair_expr d_in_tstar; /* D → T* (implies D* → T*) */

    int32_t d_max_surface;   /* longest surface of a non-special drafter token, in bytes */
    double d_mean_surface;   /* mean surface length of non-special drafter tokens */

    /* Corpus (Table 10); has_corpus false when no corpus was given. T' / D' are the distinct
     * ids each tokenizer produced while encoding the corpus without special tokens. */
    bool has_corpus;
    int64_t corpus_samples;
    int32_t t_used, d_used;         /* |T'|, |D'| */
    int32_t t_used_in_d;            /* target tokens used whose surface exists in D */
    int32_t t_used_in_dused;        /* ... whose surface is among the drafter's used tokens */
    double corpus_ratio;            /* t_used_in_d / t_used */
    double corpus_ratio_used;       /* t_used_in_dused / t_used  (|T'∩D'|/|T'|) */
    int64_t t_roundtrip, d_roundtrip; /* corpus samples with decode(encode(s)) == s */

    bool has_psi; /* false when not computed (hand-made reports): rule 3 then uses bytes only */
    hsd_pair_psi psi;

    hsd_pair_algo algo;
    char reason[512];
    char warnings[512]; /* conditions the algorithms assume but this pair breaks; "" if none */
} hsd_pair_report;

const char *hsd_pair_algo_name(hsd_pair_algo a);

/* Computes everything above; `corpus_path` (JSONL with "text") may be NULL. */
hsd_status hsd_pair_analyze(const hsd_tokenizer *t, const hsd_tokenizer *d, const char *corpus_path,
                            hsd_pair_report *out);

/* Checks whether every non-special token of `a` is a concatenation of `b`'s surfaces. */
hsd_status hsd_pair_expressible(const hsd_tokenizer *a, const hsd_tokenizer *b, hsd_pair_expr *out);

/* Applies the Table 4 rule to the facts in r (sets r->algo and r->reason). */
void hsd_pair_recommend(hsd_pair_report *r);

/* The ψ cost summary of SLRS for this pair: decompositions of every target text token into
 * drafter tokens by dynamic programming over the drafter's token trie (lib/psi_stats). */
hsd_status hsd_pair_psi_summary(const hsd_tokenizer *t, const hsd_tokenizer *d, hsd_pair_psi *out);

#endif

/*
 * hsd tools: the analyses and model generators behind the CLI's subcommands (pair, psi-stats,
 * injectivity, trim, synth, inflate, bench bridge).
 *
 * A LESS STABLE SURFACE than include/hsd.h. The core header (tokenizer, model, engine, heads,
 * chat templates, batch/step API, proposer) follows the ABI policy of docs/API.md; the
 * functions and structs here may change between minor versions when an analysis changes
 * (they still never break silently: the SONAME and hsd_version() say so). include/hsd.h does
 * not include this header: a caller that needs the tools includes it explicitly.
 *
 * The conventions of hsd.h apply (hsd_status + hsd_last_error naming the function and the
 * argument; the library never prints; params structs start with their size). Result structs
 * (hsd_pair_report, hsd_psi_stats, hsd_inj_result, hsd_corpus) are plain data the caller
 * owns, released by their *_free function; plain arrays the library allocates are released
 * with hsd_free. All functions are thread-safe on different objects; tokenizers and tries
 * are read-only here, so they may be shared.
 */
#ifndef HSD_TOOLS_H
#define HSD_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================================
 * Corpus: JSONL texts, one {"text": "..."} object per line (other fields ignored)
 * ==================================================================================== */
typedef struct hsd_corpus {
    char **text; /* each NUL-terminated; may contain NUL bytes, so use len */
    size_t *len;
    size_t n;
} hsd_corpus;

/* Reads every line into *out (the caller releases it with hsd_corpus_free); a line that is
 * not a JSON object with a string "text" is HSD_ERR_PARSE naming the file and line; blank
 * lines are skipped. Errors: INVALID_ARG (NULL path/out), IO, PARSE, NOMEM. */
HSD_API hsd_status hsd_corpus_load(const char *path, hsd_corpus *out);
/* Releases what hsd_corpus_load allocated (the texts and lengths) and zeroes *c; NULL is a
 * no-op. (A corpus built by hand is the caller's to free.) */
HSD_API void hsd_corpus_free(hsd_corpus *c);

/* ====================================================================================
 * Token trie: a read-only byte trie over a vocabulary's text tokens (every used,
 * non-special id with a non-empty surface, hsd_tokenizer_token_bytes); the input of the ψ
 * statistics. Immutable once built: any number of threads may share it.
 * ==================================================================================== */
typedef struct hsd_token_trie hsd_token_trie;

/* Errors: INVALID_ARG (NULL tok/out), NOMEM. On failure *out is NULL. */
HSD_API hsd_status hsd_token_trie_build(const hsd_tokenizer *tok, hsd_token_trie **out);
HSD_API void hsd_token_trie_free(hsd_token_trie *t); /* NULL is a no-op */
/* Nodes (root included) and ids stored (every id of a shared surface); 0 for NULL. */
HSD_API int32_t hsd_token_trie_n_nodes(const hsd_token_trie *t);
HSD_API int32_t hsd_token_trie_n_tokens(const hsd_token_trie *t);

/* ====================================================================================
 * Pair advisor: how well a target tokenizer T and a drafter tokenizer D fit together, and
 * which heterogeneous-vocabulary algorithm (paper Table 4) should drive them. The counting
 * rules are in docs/PAIR.md: |T|, |D| count used ids (special tokens included); T∩D counts T
 * ids whose surface bytes some D token has (specials only against specials); T → D* and
 * D → T* ask whether a text token's surface can be cut into the other side's surfaces.
 * ==================================================================================== */
/* Recommendation thresholds (docs/PAIR.md explains the choice). */
#define HSD_PAIR_TLI_MIN_VOCAB 0.50  /* |T∩D|/|T| (Table 9) */
#define HSD_PAIR_TLI_MIN_CORPUS 0.50 /* and, with a corpus, share of used target tokens in D */
#define HSD_PAIR_SLRS_MAX_BYTES 4    /* every drafter text token at most this many bytes */
#define HSD_PAIR_SLRS_MAX_NODES                                                                    \
    64.0 /* and, with the ψ summary, 3 of 4 target tokens need at                                 \
          * most this many drafter tree nodes */
#define HSD_PAIR_MAX_EXAMPLES 5

/* Result of "is every text token of A a concatenation of tokens of B". */
typedef struct hsd_pair_expr {
    bool holds;
    int64_t checked;                            /* tokens of A examined */
    int64_t failures;                           /* how many cannot be expressed */
    int32_t example_ids[HSD_PAIR_MAX_EXAMPLES]; /* the first failing ids of A */
    int n_examples;
} hsd_pair_expr;

/* ψ cost of SLRS for the pair (see the ψ statistics below): how many drafter-token sequences
 * stand behind each target text token (Lemma 3.1). */
typedef struct hsd_pair_psi {
    int32_t tokens;                /* target text tokens decomposed */
    int32_t none;                  /* ... with no decomposition into drafter tokens */
    double mean, median, p75, max; /* decompositions per target token */
    int32_t max_id;                /* a target token with the most */
    double nodes_mean, nodes_p75;  /* drafter tree nodes per target token (paper Fig. 1) */
    int32_t n_max;                 /* the pair's lookahead: most drafts before T(...)_1 is fixed */
} hsd_pair_psi;

/* The facts the recommendation rests on (hsd_pair_analyze fills it; tests may by hand). */
typedef struct hsd_pair_report {
    int32_t t_size, d_size;       /* |T|, |D|: used ids */
    int32_t t_special, d_special; /* of which special */
    int32_t intersection;         /* |T∩D| counted in T ids */
    double ratio;                 /* |T∩D| / |T|  (Table 9) */
    bool identical;               /* same ids with the same strings and surfaces */
    hsd_pair_expr t_in_dstar;     /* T → D* */
    hsd_pair_expr d_in_tstar;     /* D → T* (implies D* → T*) */
    int32_t d_max_surface;        /* longest surface of a non-special drafter token, bytes */
    double d_mean_surface;        /* mean surface length of non-special drafter tokens */
    /* Corpus (Table 10); has_corpus false without one. T' / D' are the distinct ids each
     * tokenizer produced encoding the corpus without special tokens. */
    bool has_corpus;
    int64_t corpus_samples;
    int32_t t_used, d_used;           /* |T'|, |D'| */
    int32_t t_used_in_d;              /* target tokens used whose surface exists in D */
    int32_t t_used_in_dused;          /* ... whose surface is among the drafter's used tokens */
    double corpus_ratio;              /* t_used_in_d / t_used */
    double corpus_ratio_used;         /* t_used_in_dused / t_used  (|T'∩D'|/|T'|) */
    int64_t t_roundtrip, d_roundtrip; /* corpus samples with decode(encode(s)) == s */
    bool has_psi; /* false when not computed (hand-made reports): rule 3 uses bytes only */
    hsd_pair_psi psi;
    hsd_algo algo;                /* SD, TLI, SLEM or SLRS (hsd_algo_name names it) */
    char *reason;   /* why (never truncated); released by hsd_pair_report_free */
    char *warnings; /* conditions the algorithms assume but this pair breaks; "" if none;
                     * released by hsd_pair_report_free */
} hsd_pair_report;

/* Computes the whole report and the recommendation (the caller releases it with
 * hsd_pair_report_free); corpus_path (JSONL with "text") may be NULL. Errors: INVALID_ARG (NULL t/d/out), IO / PARSE (the corpus), NOMEM. */
HSD_API hsd_status hsd_pair_analyze(const hsd_tokenizer *t, const hsd_tokenizer *d,
                                    const char *corpus_path, hsd_pair_report *out);
/* Whether every non-special token of a is a concatenation of b's surfaces. Errors:
 * INVALID_ARG (NULL a/b/out), NOMEM. */
HSD_API hsd_status hsd_pair_expressible(const hsd_tokenizer *a, const hsd_tokenizer *b,
                                        hsd_pair_expr *out);
/* Releases the report's text fields (reason, warnings) and sets them NULL; NULL is a no-op,
 * and so is a second call. */
HSD_API void hsd_pair_report_free(hsd_pair_report *r);
/* Applies the Table 4 rule to the facts in r (sets r->algo, r->reason, r->warnings, replacing
 * earlier text; release them with hsd_pair_report_free). NULL is a no-op. */
HSD_API void hsd_pair_recommend(hsd_pair_report *r);
/* The ψ cost summary of SLRS for this pair. Errors: INVALID_ARG (NULL t/d/out), NOMEM. */
HSD_API hsd_status hsd_pair_psi_summary(const hsd_tokenizer *t, const hsd_tokenizer *d,
                                        hsd_pair_psi *out);

/* ====================================================================================
 * ψ statistics: how many drafter-token sequences stand behind each target token (paper
 * Lemma 3.1, Table 5, Figure 2), and the SLRS lookahead n_max, by dynamic programming over
 * byte positions (lib/analysis/psi_stats.h gives the definitions: count, nodes, parts,
 * n_max). Counts are kept as double (exact to 2^53) and as uint64 saturating at UINT64_MAX.
 * ==================================================================================== */
typedef struct hsd_psi_params {
    size_t size; /* sizeof(hsd_psi_params), set by its *_default_params() */
    bool distinct_surfaces; /* count surface sequences, not id sequences (default false) */
} hsd_psi_params;
HSD_API hsd_psi_params hsd_psi_default_params(void);

typedef struct hsd_psi_token {
    double count;       /* decompositions */
    uint64_t count_u64; /* the same, UINT64_MAX when it does not fit */
    double nodes;       /* tree nodes (drafter positions) ψ(t) needs */
    int32_t parts_max, parts_min;
    int32_t n_max;
} hsd_psi_token;

/* Per target token results for a whole vocabulary. */
typedef struct hsd_psi_stats {
    int32_t n_ids;       /* target vocabulary size (ids); tok/len are indexed by id */
    hsd_psi_token *tok;  /* [n_ids] */
    uint32_t *len;       /* [n_ids] surface bytes; 0 = not counted (unused, special, empty) */
    int32_t n_tokens;    /* target tokens counted */
    int32_t n_none;      /* ... with no decomposition into drafter tokens (count 0) */
    int32_t n_saturated; /* ... whose count exceeds UINT64_MAX */
    int32_t n_inexact;   /* ... whose count exceeds 2^53 (the double is rounded) */
    int32_t n_max;       /* the pair's n_max, and a token attaining it */
    int32_t n_max_id;
    int32_t max_count_id; /* a token with the most decompositions */
    uint32_t max_len;     /* longest target surface counted */
} hsd_psi_stats;

/* Target tokens: used, non-special ids with a non-empty surface; draft: the drafter's trie
 * (hsd_token_trie_build). params may be NULL (defaults). The caller releases *out with
 * hsd_psi_stats_free. Errors: INVALID_ARG (NULL target/draft/out), NOMEM. */
HSD_API hsd_status hsd_psi_stats_compute(const hsd_tokenizer *target, const hsd_token_trie *draft,
                                         const hsd_psi_params *params, hsd_psi_stats *out);
HSD_API void hsd_psi_stats_free(hsd_psi_stats *s); /* NULL is a no-op */

/* Describe-style summary (pandas conventions: sample standard deviation, percentiles by
 * linear interpolation between order statistics). */
typedef struct hsd_psi_summary {
    int64_t n;
    double mean, sd, min, p25, median, p75, max;
} hsd_psi_summary;
/* Summarizes v[0..n), sorting v in place. n = 0 or a NULL v gives an all-zero summary; a
 * NULL out is a no-op. */
HSD_API void hsd_psi_summarize(double *v, size_t n, hsd_psi_summary *out);
/* Counted target ids ordered by (surface length, id): the paper's "shortest N tokens" are
 * the first N. *ids is yours (hsd_free); *n gets s->n_tokens. Errors: INVALID_ARG (NULL args),
 * NOMEM. */
HSD_API hsd_status hsd_psi_ids_by_length(const hsd_psi_stats *s, int32_t **ids, size_t *n);

/* One row of the per-length table (Figure 2). */
typedef struct hsd_psi_length_row {
    uint32_t len;   /* surface bytes */
    int32_t tokens; /* target tokens of this length */
    int32_t none;   /* of which without decomposition */
    hsd_psi_summary count;
    double nodes_mean;
    int32_t n_max; /* largest n_max(t) at this length */
} hsd_psi_length_row;
/* Rows for every length that has tokens, shortest first; *rows is yours (hsd_free). Errors:
 * INVALID_ARG (NULL args), NOMEM. */
HSD_API hsd_status hsd_psi_by_length(const hsd_psi_stats *s, hsd_psi_length_row **rows,
                                     size_t *n_rows);

/* ====================================================================================
 * Injectivity: strings s with decode(encode(s, no specials), keep specials) != s (paper
 * Sec 3.2 / Appendix F), found in a corpus or by fuzzing with ICU-generated text, each
 * shrunk to a 1-minimal counterexample and classified by experiment.
 * ==================================================================================== */
typedef enum hsd_inj_cause {
    HSD_INJ_UNK = 0,           /* a character the tokenizer cannot encode: its unk id */
    HSD_INJ_ADDED_TOKEN = 1,   /* the text contains an added token's content, split out */
    HSD_INJ_NORMALIZATION = 2, /* equal after normalization (NFC/NFKC/case folding, ...) */
    HSD_INJ_WHITESPACE = 3,    /* only whitespace/control characters differ */
    HSD_INJ_BYTES = 4,         /* decoded bytes became U+FFFD */
    HSD_INJ_OTHER = 5,
} hsd_inj_cause;
/* "unk", "added_token", "normalization", "whitespace", "byte_sequence", "other" (also
 * outside the enum). Static string. */
HSD_API const char *hsd_inj_cause_name(hsd_inj_cause c);

typedef struct hsd_inj_example {
    char *input, *decoded, *minimal; /* NUL-terminated; released by hsd_inj_result_free */
    size_t input_len, decoded_len, minimal_len;
    hsd_inj_cause cause;
    int64_t sample; /* corpus index, or -1 when found by the fuzzer */
} hsd_inj_example;

typedef struct hsd_inj_result {
    int64_t samples;       /* corpus samples checked */
    int64_t non_injective; /* of which do not round-trip */
    hsd_inj_example *ex;   /* corpus failures first (corpus order), then fuzz finds */
    size_t n_ex, cap_ex;
    int64_t fuzz_candidates; /* strings the fuzzer tried */
    int64_t fuzz_found;      /* distinct minimal counterexamples it found */
    double fuzz_seconds;     /* time it actually ran */
} hsd_inj_result;

typedef void (*hsd_inj_progress_fn)(void *ctx, double done_frac, int64_t candidates, int64_t found);

typedef struct hsd_inj_params {
    size_t size; /* sizeof(hsd_inj_params), set by its *_default_params() */
    size_t prefix_chars;          /* corpus: check only the first N characters; 0 = all */
    bool minimize;                /* shrink and classify each failure (default true) */
    double fuzz_seconds;          /* fuzz budget (default 0) */
    uint64_t seed;                /* default 1 */
    int64_t fuzz_max_found;       /* stop after this many distinct finds; 0 = run the budget */
    int64_t fuzz_max_report;      /* record at most this many finds (all counted); 0 = all */
    const hsd_corpus *fuzz_seeds; /* texts to mutate and take scripts from; may be NULL */
    hsd_inj_progress_fn progress; /* called about every 0.2 s while fuzzing; may be NULL */
    void *progress_ctx;
} hsd_inj_params;
HSD_API hsd_inj_params hsd_inj_default_params(void);

/* Checks every corpus text into r (zero it first; release with hsd_inj_result_free).
 * Errors: INVALID_ARG (NULL tok/c/params/r), NOMEM, and the tokenizer's. */
HSD_API hsd_status hsd_inj_check_corpus(const hsd_tokenizer *tok, const hsd_corpus *c,
                                        const hsd_inj_params *params, hsd_inj_result *r);
/* Appends fuzz finds to r (which may hold corpus results). Deterministic for a seed as far
 * as the candidates tried go; how many are tried depends on the time budget. Errors:
 * INVALID_ARG (NULL tok/params/r), NOMEM. */
HSD_API hsd_status hsd_inj_fuzz(const hsd_tokenizer *tok, const hsd_inj_params *params,
                                hsd_inj_result *r);
HSD_API void hsd_inj_result_free(hsd_inj_result *r); /* NULL is a no-op */

/* ====================================================================================
 * Vocabulary trimming with the exact coverage-latency optimum (BCL, PAPERS.md §3). Ids are
 * ranked by corpus frequency f (ties: smaller id first); with N = sum f,
 *   C(K) = (f_1 + ... + f_K) / N, R(K) = 1 - (F_fixed + 2 d K) / (F_fixed + 2 d V),
 *   U(K) = alpha C(K) + (1 - alpha) R(K),
 * and K* maximises U over K = 1..V subject to C(K) >= c_min (smallest K among ties).
 * ==================================================================================== */
typedef struct hsd_trim_params {
    size_t size; /* sizeof(hsd_trim_params), set by its *_default_params() */
    double alpha;        /* weight of coverage in U, in [0, 1] (default 0.5) */
    double min_coverage; /* c_min in [0, 1] (default 0) */
    int32_t dim;         /* hidden size d of the drafter head (no default: 0 is an error) */
    double fixed_flops;  /* F_fixed: the drafter's FLOPs that do not depend on K (default 0) */
} hsd_trim_params;
HSD_API hsd_trim_params hsd_trim_default_params(void);

typedef struct hsd_trim_result {
    int32_t k;              /* K* */
    double coverage;        /* C(K*) */
    double saving;          /* R(K*) */
    double utility;         /* U(K*) */
    int32_t k_min_feasible; /* smallest K with C(K) >= c_min */
} hsd_trim_result;

/* counts[id] += occurrences of id in the corpus texts encoded without special tokens;
 * counts has hsd_tokenizer_vocab_size(tok) entries (zeroed by the caller), *n_tokens gets
 * the total. Errors: INVALID_ARG (NULL args), and the tokenizer's naming the text. */
HSD_API hsd_status hsd_trim_count(const hsd_tokenizer *tok, const hsd_corpus *corpus,
                                  int64_t *counts, int64_t *n_tokens);
/* order[0..V) = ids by decreasing count, ties by increasing id. Errors: INVALID_ARG (NULL
 * counts/order, V < 0), NOMEM. */
HSD_API hsd_status hsd_trim_rank(const int64_t *counts, int32_t V, int32_t *order);
/* Keeps of the ranked target ids order[0..n) those the drafter spells with one non-special
 * token of identical surface bytes (T ∩ D, as TLI drafts), in rank order; of several target
 * ids with one surface (a byte-fallback twin) the first keeps the drafter row. order is
 * compacted in place to *n_cand ids and draft_ids[i] receives order[i]'s drafter id
 * (draft_ids has room for n). Errors: INVALID_ARG (NULL args, n < 0), OUT_OF_RANGE (no
 * target token has a drafter token with the same bytes), NOMEM. */
HSD_API hsd_status hsd_trim_candidates(const hsd_tokenizer *target, const hsd_tokenizer *draft,
                                       int32_t *order, int32_t n, int32_t *draft_ids,
                                       int32_t *n_cand);
/* The trim quantities at one K (1 <= k <= n_cand): out->k = k, coverage C(K), saving R(K),
 * utility U(K), k_min_feasible 0. prefix[k] is the sum of the counts of the k first ranked
 * candidates (prefix[0] = 0, n_cand + 1 entries); total = N, v_full = rows of the full head.
 * Errors: INVALID_ARG (NULL args, k outside 1..n_cand, bad parameters, named). */
HSD_API hsd_status hsd_trim_eval(const int64_t *prefix, int32_t n_cand, int64_t total,
                                 int32_t v_full, const hsd_trim_params *p, int32_t k,
                                 hsd_trim_result *out);
/* K* over K = 1..n_cand, the candidates being the ranked ids behind prefix (all V ids, or
 * T ∩ D from hsd_trim_candidates, where coverage tops out below 1); total = N, v_full = rows
 * of the full head. Errors: INVALID_ARG (NULL args, bad parameters, named), OUT_OF_RANGE (an
 * empty corpus, or a c_min no K reaches: the message names the best coverage there is). */
HSD_API hsd_status hsd_trim_optimum(const int64_t *prefix, int32_t n_cand, int64_t total,
                                    int32_t v_full, const hsd_trim_params *p, hsd_trim_result *out);

/* ====================================================================================
 * Synthetic and inflated models: random weights of a real shape (loader round trips and
 * speed tests), and a trained model inflated to a bigger shape without changing its logits
 * (models/inflate.c explains the construction). Shapes: hsd_synth_shape_list.
 * ==================================================================================== */
/* Storage types: hsd_ftype (include/hsd.h); AUTO means F32 here. */

/* The known shape names, comma-separated. Static string. */
HSD_API const char *hsd_synth_shape_list(void);

typedef struct hsd_synth_model hsd_synth_model;
typedef struct hsd_synth_params {
    size_t size; /* sizeof(hsd_synth_params), set by its *_default_params() */
    const char *shape; /* a name of hsd_synth_shape_list (required) */
    hsd_ftype type;    /* default F32 */
    uint64_t seed;     /* default 1 */
    /* The ids of the tokenizer the model is for (hsd_tokenizer_vocab_size; default 0: none):
     * the embedding and LM-head rows cover them. A tiny-* shape gets exactly that many rows
     * (a small model with a real vocabulary), a real shape keeps its own (padded) rows unless
     * the tokenizer has more ids. */
    int32_t tokenizer_ids;
} hsd_synth_params;
HSD_API hsd_synth_params hsd_synth_default_params(void);
/* Generates the weights in memory. The caller releases *out with hsd_synth_free. Errors:
 * INVALID_ARG (NULL params/out, no shape, an unknown shape (the message lists the known
 * ones), a type outside the enum), NOMEM. */
HSD_API hsd_status hsd_synth_init(const hsd_synth_params *params, hsd_synth_model **out);
HSD_API void hsd_synth_free(hsd_synth_model *m); /* NULL is a no-op */
/* Bytes of all its tensors; 0 for NULL. */
HSD_API size_t hsd_synth_weight_bytes(const hsd_synth_model *m);
/* dir/config.json + dir/model.safetensors (F32, F16, BF16). Errors: INVALID_ARG (NULL m/dir),
 * UNSUPPORTED (Q8_0), IO. */
HSD_API hsd_status hsd_synth_write_safetensors(const hsd_synth_model *m, const char *dir);
/* One GGUF v3 file that llama.cpp loads, with the tokenizer at `tokenizer` (GGUF, llama2.c
 * tokenizer.bin or tokenizer.json; its vocabulary may not exceed the model's) in its
 * metadata, or a placeholder vocabulary when it is NULL. Errors: INVALID_ARG (NULL m/path),
 * IO, and the tokenizer's. */
HSD_API hsd_status hsd_synth_write_gguf_tok(const hsd_synth_model *m, const char *path,
                                            const char *tokenizer);
/* A tokenizer.json's vocabulary is written only where GGUF (llama.cpp's vocabulary) runs its
 * whole pipeline, so that hsd and llama.cpp tokenize the GGUF exactly like the source; else
 * UNSUPPORTED names what GGUF cannot hold (a normalizer, a pre-tokenizer regex, a model
 * type, ...). This flag writes a byte-level BPE without its normalizer (Qwen's NFC,
 * llama.cpp's own Qwen GGUFs do the same): then it tokenizes like the source only on text
 * the normalizer leaves unchanged. */
#define HSD_GGUF_VOCAB_DROP_NORMALIZER 1u
/* hsd_synth_write_gguf_tok with HSD_GGUF_VOCAB_* flags (0: none). */
HSD_API hsd_status hsd_synth_write_gguf_vocab(const hsd_synth_model *m, const char *path,
                                              const char *tokenizer, unsigned flags);

typedef struct hsd_inflate_params {
    size_t size; /* sizeof(hsd_inflate_params), set by its *_default_params() */
    const char *shape;     /* target shape, a name of hsd_synth_shape_list (required) */
    const char *tokenizer; /* tokenizer for the GGUF's metadata; NULL: the input's own when
                            * it is a GGUF, else a placeholder vocabulary */
    int32_t n_layers;      /* layers of the output, 1..4096; 0 = the shape's (default) */
    hsd_ftype type;        /* default F32 */
    unsigned gguf_vocab_flags; /* HSD_GGUF_VOCAB_* for the tokenizer (default 0) */
} hsd_inflate_params;
HSD_API hsd_inflate_params hsd_inflate_default_params(void);

/* The inflated model's shape and size. */
typedef struct hsd_inflate_info {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, head_dim, vocab_size;
    size_t weight_bytes;
} hsd_inflate_info;
/* Reads the model at `in` (llama2.c .bin, GGUF or safetensors; llama or qwen2), inflates it
 * and writes a GGUF to out_path through out_path.tmp + rename: on any error no file is left
 * at either name (an existing out_path is kept). info may be NULL. Errors: INVALID_ARG (NULL
 * in/params/out_path, no shape, a shape smaller than the model or whose heads cannot hold
 * it (named), n_layers out of range, a type outside the enum), IO, PARSE, UNSUPPORTED,
 * NOMEM. */
HSD_API hsd_status hsd_inflate_file(const char *in, const hsd_inflate_params *params,
                                    const char *out_path, hsd_inflate_info *info);

/* ====================================================================================
 * Bridge benchmark: the cost of one string-bridge round of the engine (candidates for k
 * draft tokens, commit 1..m of them, drafter resync, target segment advance) at a given
 * committed context, on the engine's own bridge code.
 * ==================================================================================== */
typedef struct hsd_bridge_bench_params {
    size_t size; /* sizeof(hsd_bridge_bench_params), set by its *_default_params() */
    int32_t k;       /* draft tokens per round (default 4) */
    int32_t rounds;  /* timed rounds (default 2000), at least block */
    int32_t block;   /* rounds per block; each block starts again from the same context (25) */
    uint64_t seed;   /* draws of draft chunks and commit lengths (default 7) */
    uint64_t stream; /* RNG stream (default 0; the CLI uses the context's index) */
} hsd_bridge_bench_params;
HSD_API hsd_bridge_bench_params hsd_bridge_bench_default_params(void);

typedef struct hsd_bridge_bench_result {
    size_t context_bytes; /* bytes of the committed context after the warm-up rounds */
    double window_bytes;  /* mean re-tokenized window of the drafter side, bytes */
} hsd_bridge_bench_result;

/* The committed context is the surface of target_ids[0..ctx_tokens) (the prompt: frozen);
 * draft chunks are k consecutive ids of draft_src[0..n_src) at random places. After 2 blocks
 * of warm-up, us[0..rounds) receives each timed round's microseconds (a monotonic clock).
 * Errors: INVALID_ARG (NULL args, k < 1, block < 1, rounds < block, n_src <= k),
 * OUT_OF_RANGE (ctx_tokens < 0 or > n_target), NOMEM, and the tokenizers'. */
HSD_API hsd_status hsd_bridge_bench(const hsd_tokenizer *target, const hsd_tokenizer *draft,
                                    const int32_t *target_ids, size_t n_target,
                                    const int32_t *draft_src, size_t n_src, int32_t ctx_tokens,
                                    const hsd_bridge_bench_params *params, double *us,
                                    hsd_bridge_bench_result *out);

#ifdef __cplusplus
}
#endif
#endif /* HSD_TOOLS_H */

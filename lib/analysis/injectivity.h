/* Tokenizer injectivity: strings s with decode(encode(s, add_special=false),
 * skip_special=false) != s (paper Sec 3.2 / Appendix F). Such strings make the string bridge
 * of SLEM/SLRS/TLI re-encode differently from what was committed, so the engine needs the
 * look-behind fix for them. This module checks a corpus, shrinks each failure to a minimal
 * counterexample (delta debugging over characters), classifies its cause by experiment, and
 * fuzzes for new failures with ICU-generated adversarial text. */
#ifndef HSD_LIB_INJECTIVITY_H
#define HSD_LIB_INJECTIVITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/analysis/corpus.h"

typedef enum hsd_inj_cause {
    HSD_INJ_UNK = 0,           /* a character the tokenizer cannot encode: its unk id appears */
    HSD_INJ_ADDED_TOKEN = 1,   /* the text contains an added token's content, split out as it */
    HSD_INJ_NORMALIZATION = 2, /* input and output are equal after normalization (the
                                  tokenizer's own normalizer, or NFC/NFKC/case folding) */
    HSD_INJ_WHITESPACE = 3,    /* only whitespace/control characters differ (collapse, strip) */
    HSD_INJ_BYTES = 4,         /* decoded bytes became U+FFFD (byte tokens not forming UTF-8) */
    HSD_INJ_OTHER = 5,
} hsd_inj_cause;

/* "unk", "added_token", "normalization", "whitespace", "byte_sequence", "other" */
const char *hsd_inj_cause_name(hsd_inj_cause c);

/* decode(encode(s)) with the settings above; *same tells whether it equals s. `decoded` may be
 * NULL; otherwise it receives a malloc'ed NUL-terminated copy (release with free). */
hsd_status hsd_inj_roundtrip(const hsd_tokenizer *tok, const char *s, size_t n, char **decoded,
                             size_t *dlen, bool *same);

/* Shrinks a non-injective s (valid UTF-8) to a 1-minimal non-injective string: removing any
 * one more character makes it round-trip (ddmin over characters, bounded number of tests).
 * *out is malloc'ed. If s round-trips, *out is a copy of s. */
hsd_status hsd_inj_minimize(const hsd_tokenizer *tok, const char *s, size_t n, char **out,
                            size_t *out_len);

/* Decides the cause of a (minimal) non-injective string by experiment, in this order: an added
 * token's content present and encoded as that token (a literal "<unk>" counts here); the unk
 * id produced; the tokenizer's
 * normalizer or NFC/NFKC/NFKC-casefold/accent stripping maps s and its decoding to the same
 * string; they differ only in whitespace/control characters; U+FFFD appeared; else other. */
hsd_status hsd_inj_classify(const hsd_tokenizer *tok, const char *s, size_t n, hsd_inj_cause *cause);

typedef struct hsd_inj_example {
    char *input, *decoded, *minimal; /* malloc'ed, NUL-terminated */
    size_t input_len, decoded_len, minimal_len;
    hsd_inj_cause cause;
    int64_t sample; /* corpus index, or -1 when found by the fuzzer */
} hsd_inj_example;

typedef struct hsd_inj_result {
    int64_t samples;       /* corpus samples checked */
    int64_t non_injective; /* of which do not round-trip */
    hsd_inj_example *ex;   /* corpus failures first (in corpus order), then fuzz finds */
    size_t n_ex, cap_ex;
    int64_t fuzz_candidates; /* strings the fuzzer tried */
    int64_t fuzz_found;      /* distinct minimal counterexamples it found (recorded or not) */
    double fuzz_seconds;     /* time it actually ran */
} hsd_inj_result;

typedef void (*hsd_inj_progress_fn)(void *ctx, double done_frac, int64_t candidates, int64_t found);

typedef struct hsd_inj_opts {
    size_t prefix_chars; /* corpus: check only the first N characters (paper: 100); 0 = all */
    bool minimize;       /* shrink and classify each failure (default in the CLI) */
    double fuzz_seconds; /* fuzz budget */
    uint64_t seed;
    int64_t fuzz_max_found;      /* stop after this many distinct finds; 0 = run the budget */
    int64_t fuzz_max_report;     /* record at most this many finds (all counted); 0 = all */
    const hsd_corpus *fuzz_seeds; /* texts to mutate and to take scripts from; may be NULL */
    hsd_inj_progress_fn progress; /* called about every 0.2 s while fuzzing; may be NULL */
    void *progress_ctx;
} hsd_inj_opts;

hsd_status hsd_inj_check_corpus(const hsd_tokenizer *tok, const hsd_corpus *c,
                                const hsd_inj_opts *o, hsd_inj_result *r);
/* Appends fuzz finds to r (which may already hold corpus results). Deterministic for a seed
 * as far as the candidates tried go; how many are tried depends on the time budget. */
hsd_status hsd_inj_fuzz(const hsd_tokenizer *tok, const hsd_inj_opts *o, hsd_inj_result *r);
void hsd_inj_result_free(hsd_inj_result *r);

#endif

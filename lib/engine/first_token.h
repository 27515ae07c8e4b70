/* First-token determination: which target tokens of a growing text can no longer change,
 * whatever text follows.
 *
 * The rule is a "hard cut". A position b between two characters of the text is a cut when no
 * symbol the tokenizer can ever build spans it. For SentencePiece-style score BPE (spm.c:
 * characters merged pairwise into vocabulary strings, no normalizer, no pre-tokenizer, no
 * added tokens), the symbols are single characters and the vocabulary strings that merges can
 * reach (a string is reachable when it splits into two reachable halves). If the character
 * pair around b occurs in no reachable string, no merge ever crosses b, and because merges on
 * either side only compete by (score, position), the merge sequence restricted to the left
 * side is exactly the left side's own: T(x + s) = T(x[:b]) ++ T(x[b:] + s) for every s. So
 * every target token of x[:b] is fixed, in particular T(x)_1 once x has any cut b > 0.
 *
 * The rule is conservative (no cut claimed that is not one). For other tokenizers (byte-level
 * BPE with regex pre-tokenizers, Unigram, WordPiece, normalizers) it reports no cut at all,
 * which keeps every user correct: SLRS then stops branches by depth (fixed n) instead. */
#ifndef HSD_LIB_FIRST_TOKEN_H
#define HSD_LIB_FIRST_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/base/buf.h"
#include "lib/base/map.h"

typedef struct hsd_first_token {
    const hsd_tokenizer *tok;
    bool has_rule;        /* the cut rule applies to this tokenizer */
    hsd_u64map pairs;     /* adjacent character pairs inside reachable vocabulary strings */
    size_t max_token_len; /* longest surface of a non-special token, in bytes */
} hsd_first_token;

hsd_status hsd_first_token_init(hsd_first_token *ft, const hsd_tokenizer *tok);
void hsd_first_token_free(hsd_first_token *ft);

/* Byte offset of the first cut b > 0 in s[0..n) (0 when there is none); *last (optional)
 * receives the last cut. Only cuts with a valid prefix and a complete, valid character after
 * them count, so bytes still to come cannot move them. */
size_t hsd_first_token_cut(const hsd_first_token *ft, const char *s, size_t n, size_t *last);

/* Appends the target tokens of s that no continuation can change: T(s[:last cut]). Appends
 * nothing when s has no cut. */
hsd_status hsd_first_token_stable(const hsd_first_token *ft, const char *s, size_t n, hsd_ids *out);

/* T(s)_1 as the target tokenizes s now, encoded as a continuation: an incomplete final
 * character is held back and invalid bytes read as U+FFFD (as the string bridge does).
 * *id = -1 when nothing is left to encode. */
hsd_status hsd_first_token_now(const hsd_first_token *ft, const char *s, size_t n, int32_t *id);

#endif

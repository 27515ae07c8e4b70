/* The vocabulary map between a target tokenizer T and a drafter tokenizer D: which tokens of
 * one side have a token of the other side with the same surface bytes (T ∩ D by bytes). One
 * home for the engine's draft-to-target map (TLI, union), the pair advisor's |T ∩ D| counts
 * and trim's candidate rows.
 *
 * Matching. Two tokens match when their surface bytes (hsd_tokenizer_token_bytes) are equal
 * and non-empty. Text tokens match text tokens only. Special (control) tokens never travel
 * through text, so they are left out; with `specials` they match the other side's special
 * tokens of the same bytes (the pair advisor counts them that way), never a text token. Ids
 * no token occupies are left out.
 *
 * Tie-breaking, the one rule: several ids of one side can spell one surface (SentencePiece's
 * "A" and its byte-fallback "<0x41>"). A surface is then represented by the id that is NOT a
 * byte-fallback token (it is what that side's own tokenizer produces from text), and among
 * equals by the smallest id. d2t[d] is the target representative of d's surface and t2d[t]
 * the drafter representative of t's surface, for every id of the surface, so t2d[d2t[d]] is
 * the drafter representative of d's surface. */
#ifndef HSD_VOCAB_MAP_H
#define HSD_VOCAB_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"

typedef struct hsd_vocab_map {
    int32_t n_t, n_d; /* the tokenizers' vocabulary sizes */
    int32_t *d2t;     /* n_d entries: the target representative of d's surface, or -1 */
    int32_t *t2d;     /* n_t entries: the drafter representative of t's surface, or -1 */
    int32_t n_d_mapped; /* drafter ids with d2t >= 0 */
    int32_t n_t_mapped; /* target ids with t2d >= 0 (every id of a shared surface counts) */
    int32_t n_shared;   /* shared surfaces: distinct target representatives */
    /* the same vocabulary: equal sizes, and every id unused on both sides or used on both
     * with the same token string and surface bytes (ids then mean the same on both sides) */
    bool identical;
} hsd_vocab_map;

/* Builds the map of T and D; on error nothing is left allocated. */
hsd_status hsd_vocab_map_build(const hsd_tokenizer *t, const hsd_tokenizer *d, bool specials,
                               hsd_vocab_map *out);
void hsd_vocab_map_free(hsd_vocab_map *m);

#endif

/* The string bridge: keeps one committed text and, for each model, a token sequence whose
 * surface bytes spell it. Draft tokens become target candidates and accepted target tokens
 * become drafter tokens by re-tokenizing only a bounded window behind the end of the text
 * (the "segment"), with longest-common-prefix realignment against what is already
 * committed, so the cost of a round does not grow with the context. */
#ifndef HSD_LIB_BRIDGE_H
#define HSD_LIB_BRIDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/base/buf.h"
#include <stddef.h>

/* One model's view: ids[0..n) of which ids[seg..n) spell text[seg_off..end) and may still
 * be re-tokenized; ids before seg are frozen. */
typedef struct hsd_bridge_side {
    const hsd_tokenizer *tok;
    hsd_ids ids;
    int32_t seg;
    size_t seg_off;
    /* The target's special ids were emitted by the model and commit no text; a drafter's
     * special ids come from re-encoding text that spells them, so they keep their bytes. */
    bool specials_silent;
} hsd_bridge_side;

/* Tokens kept behind the end of the text when the segment advances (look-behind). */
#define HSD_BRIDGE_LOOKBEHIND 6

/* Re-encodes text[side->seg_off..text->n) and realigns: keeps the longest common prefix with
 * the current ids[seg..], replaces the rest. *first_changed receives the index of the first
 * id that changed (== old n when nothing changed but ids were appended). Then advances the
 * segment so that at most about HSD_BRIDGE_LOOKBEHIND tokens stay re-tokenizable. */
hsd_status hsd_bridge_resync(hsd_bridge_side *side, const hsd_buf *text, int32_t *first_changed);

/* Target candidates for committed text + draft bytes: the re-tokenized window continued past
 * the committed ids when the window reproduces them, else the draft bytes tokenized alone.
 * At most max_cand ids are written to cand. */
hsd_status hsd_bridge_candidates(const hsd_bridge_side *side, const hsd_buf *text,
                                 const char *draft, size_t draft_len, hsd_ids *cand,
                                 int32_t max_cand);

/* Moves the segment start forward to a word start about HSD_BRIDGE_LOOKBEHIND tokens before
 * the end, where the ids' surface bytes provably spell the text. */
void hsd_bridge_advance(hsd_bridge_side *side, const hsd_buf *text);

/* Length of an incomplete UTF-8 character at the end of s (0 if none): held back from
 * re-tokenization until the next token completes it. */
size_t hsd_bridge_pending_tail(const char *s, size_t n);

/* Debug check of the invariant: the surface bytes of ids[seg..] spell text[seg_off..]. */
int hsd_bridge_consistent(const hsd_bridge_side *side, const hsd_buf *text);

#endif

/* The one algorithm recommender: `--algo auto` (hsd_engine_auto_algo, fixed when the engine is
 * made) and `hsd pair` (hsd_pair_recommend) both call hsd_recommend on facts that
 * hsd_recommend_facts gathers the same way (docs/PAIR.md states the rule). */
#ifndef HSD_RECOMMEND_H
#define HSD_RECOMMEND_H

#include <stdbool.h>
#include <stddef.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "lib/engine/vocab_map.h"

/* Fills the pair facts of r from the tokenizers and their map (built with specials, as the
 * counting rules of docs/PAIR.md say): |T|, |D|, their special ids, |T∩D| and its ratio,
 * identical, the drafter's surface lengths, and the ψ summary when `psi` is set or the rule
 * needs it (drafter text tokens short enough for SLRS). Leaves the rest of r as it is. */
hsd_status hsd_recommend_facts(const hsd_tokenizer *t, const hsd_tokenizer *d,
                               const hsd_vocab_map *vm, bool psi, hsd_pair_report *r);

/* The rule, in order (paper Table 4):
 *   1. identical vocabularies → SD (no translation needed);
 *   2. |T∩D|/|T| >= HSD_PAIR_TLI_MIN_VOCAB, and with a corpus at least
 *      HSD_PAIR_TLI_MIN_CORPUS of the target tokens it uses are drafter tokens too (TLI drafts
 *      only T∩D tokens, so overlap the text never uses does not help) → TLI;
 *   3. every drafter text token <= HSD_PAIR_SLRS_MAX_BYTES bytes (the ψ sum stays small) and,
 *      when the ψ summary was computed, 3 of 4 target tokens need at most
 *      HSD_PAIR_SLRS_MAX_NODES drafter tree nodes → SLRS (short tokens with a costly ψ → SLEM);
 *   4. otherwise → SLEM, which works for any pair.
 * Writes why to reason (cap bytes, truncated, NUL-terminated; NULL or 0: nothing). Never AR:
 * a pair has a drafter. */
hsd_algo hsd_recommend(const hsd_pair_report *r, char *reason, size_t cap);

#endif

/* Target and draft token tries walked together (see slrs_shape.h). */
#include "hsd_tools.h"
#include "lib/engine/slrs_shape.h"

#include <string.h>

#include "lib/base/error.h"

hsd_status hsd_slrs_shape_init(hsd_slrs_shape *s, const hsd_tokenizer *target,
                               const hsd_tokenizer *draft) {
    if (!s || !target || !draft)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_slrs_shape_init: NULL argument");
    memset(s, 0, sizeof *s);
    hsd_status st = hsd_token_trie_build(target, &s->target);
    if (!st) st = hsd_token_trie_build(draft, &s->draft);
    if (st) hsd_slrs_shape_free(s);
    return st;
}

void hsd_slrs_shape_free(hsd_slrs_shape *s) {
    if (!s) return;
    hsd_token_trie_free(s->target);
    hsd_token_trie_free(s->draft);
    memset(s, 0, sizeof *s);
}

int32_t hsd_slrs_shape_walk(const hsd_slrs_shape *s, int32_t node, const char *b, size_t n) {
    return hsd_token_trie_walk(s->target, node, (const uint8_t *)b, n);
}

/* Depth-first over byte paths present in both tries below (tnode, dnode). */
static void walk_both(const hsd_slrs_shape *s, int32_t tnode, int32_t dnode, int32_t *toks,
                      int32_t *tnodes, int32_t cap, int32_t *found) {
    int32_t first, n = hsd_token_trie_children(s->draft, dnode, &first);
    for (int32_t d = first; d < first + n; d++) {
        int32_t t = hsd_token_trie_step(s->target, tnode, hsd_token_trie_byte(s->draft, d));
        /* x ⊕ bytes must stay a proper prefix of some target token */
        if (t < 0 || !hsd_token_trie_has_children(s->target, t)) continue;
        size_t n_ids;
        const int32_t *ids = hsd_token_trie_ids(s->draft, d, &n_ids);
        if (n_ids) {
            if (*found < cap) {
                toks[*found] = ids[0];
                tnodes[*found] = t;
            }
            (*found)++;
        }
        walk_both(s, t, d, toks, tnodes, cap, found);
    }
}

int32_t hsd_slrs_shape_children(const hsd_slrs_shape *s, int32_t tnode, int32_t *toks,
                                int32_t *tnodes, int32_t cap) {
    int32_t found = 0;
    if (s && tnode >= 0 && hsd_token_trie_has_children(s->target, tnode))
        walk_both(s, tnode, HSD_TOKEN_TRIE_ROOT, toks, tnodes, cap, &found);
    return found;
}

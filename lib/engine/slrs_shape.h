/* The shape of a single-forward SLRS tree, chosen from the vocabularies alone.
 *
 * A level-by-level tree needs the logits of a level before it knows the next one. To score
 * every node in one tree-masked drafter forward, the nodes to score must be chosen before any
 * of their logits exist. The choice made here walks a trie of target token bytes and a trie of
 * draft token bytes together (both lib/engine/token_trie.h): below a node whose text is x, the
 * candidate children are the draft tokens d for which x ⊕ d is still a proper prefix of some
 * target token, i.e. the branches along which a longer first target token is still possible.
 * Only the logits of chosen nodes exist afterwards; a sampled branch that leaves the chosen
 * shape stops there (a leaf), which is a deterministic rule, so psi stays exact. */
#ifndef HSD_LIB_SLRS_SHAPE_H
#define HSD_LIB_SLRS_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "lib/engine/token_trie.h"

typedef struct hsd_slrs_shape {
    hsd_token_trie *target, *draft; /* surfaces of the non-special tokens */
} hsd_slrs_shape;

hsd_status hsd_slrs_shape_init(hsd_slrs_shape *s, const hsd_tokenizer *target,
                               const hsd_tokenizer *draft);
void hsd_slrs_shape_free(hsd_slrs_shape *s);

/* Target-trie node reached from `node` (0 = root) by bytes b[0..n), or -1. */
int32_t hsd_slrs_shape_walk(const hsd_slrs_shape *s, int32_t node, const char *b, size_t n);

/* Draft tokens d with (text of target node tnode) ⊕ d a proper prefix of a target token (the
 * smallest id where several spell d): up to cap ids go to toks and the target nodes reached to
 * tnodes, in byte order; returns how many were found (the total, which may exceed cap). */
int32_t hsd_slrs_shape_children(const hsd_slrs_shape *s, int32_t tnode, int32_t *toks,
                                int32_t *tnodes, int32_t cap);

#endif

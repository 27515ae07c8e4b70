/* Token trie: a compact, immutable byte trie over a vocabulary's surface bytes
 * (hsd_tokenizer_token_bytes), for the string-level algorithms that need "which tokens start
 * here" questions: ψ(t) in SLRS (walk the drafter's continuations and the target vocabulary
 * together), decomposition counts (lib/analysis/psi_stats), and first-token determination (a
 * text is a proper prefix of some token iff its walk ends on a node with children).
 *
 * Contents: every used, non-special id with a non-empty surface. Several ids may share one
 * surface (SentencePiece "A" and its byte fallback "<0x41>"); they end on the same node and
 * hsd_token_trie_ids lists them all, smallest id first.
 *
 * Layout: nodes are numbered breadth-first, the root is node 0, and the children of a node
 * are consecutive and sorted by byte, so a step is a binary search over at most 256 bytes
 * (the root uses a direct table). Building sorts nothing and allocates O(total bytes).
 * Once built a trie is read-only and may be shared by any number of threads. The queries
 * answer a NULL trie or an out-of-range node as "nothing there" (-1, no ids, 0 matches). */
#ifndef HSD_LIB_TOKEN_TRIE_H
#define HSD_LIB_TOKEN_TRIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

/* hsd_token_trie, hsd_token_trie_build / _free / _n_nodes / _n_tokens are public
 * (include/hsd_tools.h); the queries below serve the engine and the ψ statistics. */

#define HSD_TOKEN_TRIE_ROOT 0

/* Builds a trie from explicit byte strings: strs[i] (lens[i] bytes) gets id i; NULL or empty
 * entries are left out. For toy vocabularies and for callers with their own token sets. */
hsd_status hsd_token_trie_build_strings(const uint8_t *const *strs, const size_t *lens, int32_t n,
                                        hsd_token_trie **out);
/* Longest surface stored, in bytes. */
size_t hsd_token_trie_max_len(const hsd_token_trie *t);

/* The child of `node` along `byte`, or -1 when no token continues that way. */
int32_t hsd_token_trie_step(const hsd_token_trie *t, int32_t node, uint8_t byte);
/* Follows n bytes from `node`; the node reached, or -1 as soon as a byte has no child.
 * From the root: s is a prefix of some token iff the result is >= 0. */
int32_t hsd_token_trie_walk(const hsd_token_trie *t, int32_t node, const uint8_t *s, size_t n);
/* Ids whose surface ends exactly at `node` (*n = 0 when none); smallest id first. */
const int32_t *hsd_token_trie_ids(const hsd_token_trie *t, int32_t node, size_t *n);
/* The children of `node` are the nodes *first .. *first + n - 1 (consecutive, in byte order);
 * returns n (0 for a leaf or an invalid node). */
int32_t hsd_token_trie_children(const hsd_token_trie *t, int32_t node, int32_t *first);
/* The byte on the edge into `node` (0 for the root or an invalid node). */
uint8_t hsd_token_trie_byte(const hsd_token_trie *t, int32_t node);
/* True when some longer token continues below `node`. */
bool hsd_token_trie_has_children(const hsd_token_trie *t, int32_t node);

/* One token that is a prefix of a queried string. */
typedef struct hsd_token_trie_match {
    int32_t node;   /* where its surface ends: hsd_token_trie_ids(node) gives the ids */
    uint32_t len;   /* its surface length in bytes */
    uint32_t n_ids; /* how many ids share that surface (>= 1) */
} hsd_token_trie_match;

/* All tokens whose surface is a prefix of s[0..n), shortest first, written to out (at most cap
 * of them; cap = hsd_token_trie_max_len always suffices). Returns how many there are, which
 * may exceed cap. One entry per surface: ids sharing it are behind the node. */
size_t hsd_token_trie_prefixes(const hsd_token_trie *t, const uint8_t *s, size_t n,
                               hsd_token_trie_match *out, size_t cap);

#endif

/* ψ statistics: how many drafter-token sequences stand behind each target token (paper
 * Lemma 3.1, Table 5, Figure 2), and the SLRS lookahead n_max — computed offline from the two
 * vocabularies by dynamic programming over byte positions, never by enumeration.
 *
 * For a target token t with surface s = s[0..n) and the drafter's token trie:
 *   count     decompositions: draft-token sequences whose concatenation is exactly s, i.e.
 *             the paper's "combinations" (14 for 'hello' in Qwen2, t itself included when it
 *             is a drafter token). f[0] = 1, f[e] += f[i] · mult(s[i..e)) for every drafter
 *             surface s[i..e); count = f[n]. mult is the number of drafter ids with that
 *             surface (ψ sums over id sequences; SentencePiece "A" and "<0x41>" are two), or 1
 *             with hsd_psi_params.distinct_surfaces. A token with no decomposition counts 0.
 *   nodes     the non-leaf nodes of the tree of those decompositions, root included: the
 *             drafter forward passes the paper needs for ψ(t) (16 for 'hello'; Fig. 1), and the
 *             number of positions one tree-masked forward scores. nodes = Σ f[j] over j < n
 *             from which s[j..n) still decomposes.
 *   parts_max / parts_min   most / fewest draft tokens in one decomposition (0 when none).
 *   n_max     the paper's maximum lookahead (Sec. 3.3): the most draft tokens that may have
 *             to be sampled before the first target token is determined. With the paper's
 *             tokenization (longest target-token prefix), drafting must go on while the drafts'
 *             concatenation is a proper prefix of some target token, so
 *             n_max(t) = 1 + max{parts_max(s[0..j)) : j < n, s[0..j) decomposes}
 *             and the pair's n_max is the largest n_max(t). It is ≥ parts_max(t), and equal to
 *             it when the drafter has every single byte. ('hello_world' over {hello_, world,
 *             wo, rld}: 3, as in the paper.)
 * Counts are kept twice: as double (exact up to 2^53, then rounded; inf past DBL_MAX, which
 * takes a surface of about 1000 bytes or more — qwen3's largest count is 2^127) and as uint64
 * saturating at UINT64_MAX; the statistics use the double, and the report says how many
 * tokens exceeded 2^53 and 2^64. */
#ifndef HSD_LIB_PSI_STATS_H
#define HSD_LIB_PSI_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "lib/engine/token_trie.h"

/* Decomposes one byte string over the drafter trie. Any length; no allocation below 1024
 * bytes. params may be NULL (defaults). */
hsd_status hsd_psi_decompose(const hsd_token_trie *draft, const uint8_t *s, size_t n,
                             const hsd_psi_params *params, hsd_psi_token *out);

/* The rest of the ψ statistics (hsd_psi_params, hsd_psi_stats_compute, summaries, the
 * per-length table) is public: include/hsd_tools.h. */

#endif

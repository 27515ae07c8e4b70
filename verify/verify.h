/* Acceptance rules of speculative decoding as pure functions over probability vectors and
 * the shared counter-based RNG. The decoding loop computes the distributions (target p,
 * drafter q, both after temperature/top-k/top-p) and maps vocabularies; these functions
 * only decide. Every rule keeps the output distributed exactly as the target's sampling
 * distribution (greedy: identical to argmax decoding).
 *
 * Random draws happen in a fixed order (one uniform per acceptance test, one per resample),
 * so a round is reproducible from the RNG state. */
#ifndef HSD_VERIFY_H
#define HSD_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/base/rng.h"

/* Standard speculative sampling (Leviathan et al., Alg 5) over one shared vocabulary of n
 * entries. d[0..k) are the drafted tokens; q is k rows of n (the distribution each draft was
 * sampled from); p is k+1 rows of n (target distribution before each draft and after the
 * last). Draft j is accepted with probability min(1, p_j(d_j)/q_j(d_j)); at the first
 * rejection a token is sampled from norm(max(0, p_j - q_j)); if all k are accepted a bonus
 * token is sampled from p_k. Greedy: accept while d_j == argmax p_j, then emit argmax.
 * Writes the accepted drafts plus the final token to out (k+1 slots); returns the count
 * (accepted + 1). *n_accepted receives the number of accepted drafts. `scratch` holds n
 * floats. Union (Alg 1) and TLI (Alg 4) reduce to this rule after the caller maps both
 * distributions into one space (see hsd_verify_map_draft). */
int32_t hsd_verify_sd(const float *p, const float *q, int32_t n, const int32_t *d, int32_t k,
                      bool greedy, hsd_rng *rng, float *scratch, int32_t *out,
                      int32_t *n_accepted);

/* The greedy case of hsd_verify_sd from the rows' argmaxes (argmax[0..k], computed once per
 * row by the caller): accept while d_j == argmax_j, then emit argmax. Same out / count. */
int32_t hsd_verify_sd_greedy(const int32_t *argmax, const int32_t *d, int32_t k, int32_t *out,
                             int32_t *n_accepted);

/* String-level exact match (Alg 2) over a tree of candidates: c[0..m) are candidate target
 * tokens (the drafter's text re-tokenized by the target); parents[j] is the index of c[j]'s
 * parent among the candidates (< j) or -1 for a child of the committed text; parents == NULL
 * is a chain (parents[j] = j-1). p holds m+1 rows of n target distributions: row 0 after the
 * committed text, row j+1 after candidate j's path. From the root, the target's own token is
 * drawn (greedy: argmax) at the current node; the walk moves to the first child (lowest
 * index) equal to the draw and draws again; the first draw with no such child ends the round.
 * So exactly one draw per emitted token, each from the target's distribution after the text
 * emitted so far: the output is the target's own sampling whatever the candidates are.
 * Writes the accepted candidates' tokens and then that last draw to out (m+1 slots) and, when
 * path is not NULL, the accepted candidates' indices to path (m slots); returns the count
 * (accepted + 1). *n_accepted receives the number of accepted candidates. Greedy callers that
 * already hold each row's argmax pass them in argmax[0..m] (then p is not read); NULL computes
 * them from p. */
int32_t hsd_verify_slem(const float *p, int32_t n, const int32_t *argmax, const int32_t *c,
                        const int32_t *parents, int32_t m, bool greedy, hsd_rng *rng, int32_t *out,
                        int32_t *path, int32_t *n_accepted);

/* Maps a drafter distribution q over nd draft ids into the target space (nt entries plus
 * n_extra slots after them): out[map[i]] += q[i] for every draft id i with map[i] >= 0.
 * With only_mapped_mass the result is renormalised to sum 1 over the mapped ids (TLI's q'
 * on T ∩ D); returns the mass of q that was mapped. */
double hsd_verify_map_draft(const float *q, int32_t nd, const int32_t *map, int32_t n_out,
                            bool renormalise, float *out);
/* The same over the listed draft ids only (ids[0..n_ids), e.g. a top-k/top-p row's support or
 * the pair's mapped ids): O(n_ids + n_out). ids == NULL lists 0..n_ids-1. */
double hsd_verify_map_draft_ids(const float *q, const int32_t *ids, int32_t n_ids,
                                const int32_t *map, int32_t n_out, bool renormalise, float *out);

/* The resample after a rejection, shared by every rule: one draw (one uniform) from
 * norm(max(0, p - q)) over n entries, or from p when p == q up to rounding leaves no residual
 * mass (p itself is then the right law). scratch holds n floats. */
int32_t hsd_verify_residual(const float *p, const float *q, int32_t n, hsd_rng *rng,
                            float *scratch);

/* One draw from the (unnormalised, non-negative) weights w[0..n) with uniform u in [0,1);
 * returns the last index with positive weight if rounding leaves u past the total. Every
 * draw of the library goes through here with a 53-bit uniform (hsd_rng_uniform_f64): double,
 * so that u * total resolves probabilities far below float's 2^-24 step (a 24-bit uniform
 * could never pick a token of mass < 2^-24 at the end of a large vocabulary). */
int32_t hsd_verify_draw(const float *w, int32_t n, double u);
/* Index of the largest value (lowest index on ties): hsd_row_argmax, one vectorised pass. */
int32_t hsd_verify_argmax(const float *p, int32_t n);

#endif

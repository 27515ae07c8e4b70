/* The tree of draft continuations behind string-level rejection sampling (SLRS, Alg 3).
 *
 * A round drafts from a sparse proposal q~: at every node, the drafter's sampling
 * distribution cut to its top-k / top-p and renormalised. The tree holds every draft
 * sequence q~ can produce before the lookahead rule stops it, so the law of anything the
 * round derives from the draft is an exact finite sum over the leaves:
 *
 *   - a node stops (becomes a leaf) when the rule says so: its first target token is
 *     determined (first_token.h), or it reached the depth n, or the drafter emitted a special
 *     token, or the node budget is spent. Every stop is a deterministic function of the path
 *     and of drafter logits that are computed before anything is sampled, so truncation
 *     changes what is proposed, never the exactness of psi;
 *   - each leaf carries its target candidates c(leaf): the target tokens of its text that no
 *     continuation can change, or T(text)_1 when nothing is determined yet (a truncated
 *     branch), or nothing (the "none" outcome, always rejected);
 *   - psi_j(t | t_<j) = P(c_j = t | c_<j = t_<j) under q~ — the proposal of the j-th target
 *     token given the accepted ones (the multi-token extension) — is summed over the leaves.
 *
 * The draft that is verified is sampled from exactly these q~ edge probabilities
 * (hsd_slrs_tree_sample), so rejection sampling against psi is lossless (Thm 3.2). */
#ifndef HSD_LIB_SLRS_TREE_H
#define HSD_LIB_SLRS_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/base/buf.h"
#include "lib/engine/first_token.h"
#include "lib/base/rng.h"

typedef enum hsd_slrs_rule {
    HSD_SLRS_STOP_DETERMINED = 0, /* stop once T(text)_1 is determined, at most n tokens deep */
    HSD_SLRS_STOP_FIXED = 1,      /* always n draft tokens (the paper's S1(i) = [i > n]) */
    HSD_SLRS_STOP_NMAX = 2,       /* n_max draft tokens: enough to outgrow the longest target
                                     token (capped by n) */
} hsd_slrs_rule;

enum { HSD_SLRS_FRONTIER = 0, HSD_SLRS_INTERNAL = 1, HSD_SLRS_LEAF = 2 };

typedef struct hsd_slrs_node {
    int32_t parent, tok, depth;
    int32_t child0, n_child; /* children are contiguous */
    double q;                /* probability of the edge from the parent under q~ */
    double prob;             /* probability of the whole path */
    uint32_t text_off, text_len;
    int32_t cand_off, n_cand; /* leaf: candidate target ids in tree->cands */
    int8_t state;
} hsd_slrs_node;

typedef struct hsd_slrs_tree {
    hsd_slrs_node *nodes;
    int32_t n_nodes, cap;
    int32_t n_open; /* nodes that were ever frontier (each costs one drafter row) */
    hsd_buf text;   /* node texts */
    hsd_ids cands;  /* leaf candidates */
    /* configuration */
    const hsd_tokenizer *dtok; /* drafter tokenizer: token bytes */
    const hsd_first_token *ft; /* target side */
    hsd_slrs_rule rule;
    int32_t max_depth, max_open, n_max;
    int32_t target_eos; /* candidate for a drafter EOS on empty text (-1: none) */
} hsd_slrs_tree;

/* n_max for a pair: draft tokens needed before the text must be longer than the longest
 * target token (every draft token spells at least one byte, except specials that stop). */
int32_t hsd_slrs_n_max(const hsd_first_token *ft);

/* Starts a tree with the root (empty text, frontier). max_open bounds the nodes that need a
 * drafter row besides the root. */
hsd_status hsd_slrs_tree_reset(hsd_slrs_tree *t, const hsd_tokenizer *dtok,
                               const hsd_first_token *ft, hsd_slrs_rule rule, int32_t max_depth,
                               int32_t max_open);
void hsd_slrs_tree_free(hsd_slrs_tree *t);

/* Gives frontier node `node` its children: draft tokens toks[0..n) with weights w (>= 0,
 * renormalised here). Each child becomes a leaf or a frontier node by the rule. */
hsd_status hsd_slrs_tree_expand(hsd_slrs_tree *t, int32_t node, const int32_t *toks, const float *w,
                                int32_t n);

/* Whether the lookahead rule stops a node at `depth` whose last draft token is tok and whose
 * text is text[0..len). */
bool hsd_slrs_tree_stops_at(const hsd_slrs_tree *t, int32_t depth, int32_t tok, const char *text,
                            size_t len);

/* Makes every node still on the frontier a leaf (a branch the caller stopped expanding). */
hsd_status hsd_slrs_tree_close(hsd_slrs_tree *t);

/* Cuts a drafter distribution q[0..vd) to its top_k entries (<= 0: all) and then to the
 * smallest prefix of those (by probability) whose mass reaches top_p; writes the kept ids in
 * decreasing probability (lowest id first on ties) to toks and their q to w; returns the
 * count. toks and w need room for min(top_k, vd) entries (vd when top_k <= 0). */
int32_t hsd_slrs_sparsify(const float *q, int32_t vd, int32_t top_k, float top_p, int32_t *toks,
                          float *w);

/* The same over the ids ids[0..n_ids) alone (increasing; every other entry of q is 0), e.g.
 * a sampled row's support (lib/engine/sample.h): O(n_ids) instead of O(vd). n_ids < 0: all. */
int32_t hsd_slrs_sparsify_ids(const float *q, int32_t vd, const int32_t *ids, int32_t n_ids,
                              int32_t top_k, float top_p, int32_t *toks, float *w);

/* Samples a leaf from q~ (one uniform per internal node on the path). */
int32_t hsd_slrs_tree_sample(const hsd_slrs_tree *t, hsd_rng *rng);

/* psi_j over the target vocabulary: psi[t] = P(c_j = t | c_<j = prefix[0..j)), t < n_t.
 * *none (optional) receives P(no j-th candidate | prefix). Fails if no leaf has the prefix. */
hsd_status hsd_slrs_tree_psi(const hsd_slrs_tree *t, const int32_t *prefix, int32_t j, float *psi,
                             int32_t n_t, double *none);
/* psi_j at one target id alone, bit-identical to hsd_slrs_tree_psi's psi[tok]: O(tree) with no
 * pass over the vocabulary (greedy verification needs no other entry). */
hsd_status hsd_slrs_tree_psi_at(const hsd_slrs_tree *t, const int32_t *prefix, int32_t j,
                                int32_t tok, int32_t n_t, float *value);

static inline const char *hsd_slrs_node_text(const hsd_slrs_tree *t, int32_t i, size_t *len) {
    *len = t->nodes[i].text_len;
    return t->text.p ? t->text.p + t->nodes[i].text_off : "";
}

#endif

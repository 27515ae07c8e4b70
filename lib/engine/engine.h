/* The engine's internal state and the seams between its files.
 *
 *   engine.c     the pair: vocabulary map, AUTO's choice, names and default parameters;
 *   driver.c     THE decoding loop: arguments checked once, a request of B prompts (a single
 *                request is a batch of one), per round: plan, draft, one target forward,
 *                finish; adaptive k, stop reasons, streaming, results;
 *   k_cost.c     the cost-aware draft length (measured forward costs, running acceptance);
 *   seq.c        one sequence's state and the steps every round shares (prompt encoding,
 *                the target request, emit with EOS/stop strings/budget, drafter resync);
 *   prefill.c    the ids a cache lacks before a round, through the causal path in chunks,
 *                with the one row the round reads next (AR's token, the first draft);
 *   draft_window.c  the drafter's own context: a trailing window of the text when full;
 *   round_*.c    one file per algorithm family behind hsd_eng_round (below): ar,
 *                token (SD, union, TLI), slem, slrs.
 *
 * A round is split into phases around its one target forward so that the driver can run the
 * phases of every live sequence and do each forward once for all of them:
 *
 *   draft       chain rounds: the driver feeds the drafter in lockstep (one batched drafter
 *               forward per draft position) and hands each sequence's logits to draft_take;
 *               SLRS drafts its own tree (round->draft) one sequence at a time;
 *   candidates  what the target scores (m ids after the pending ones) and the row width;
 *   target      ONE forward over every sequence's pending ids + candidates (the driver);
 *   finish      verification, KV bookkeeping, emit, drafter resync.
 *
 * Every phase acts on the sequence's slots, which the driver selects (hsd_model_seq_select)
 * before calling it. Internal prefix: hsd_eng_. */
#ifndef HSD_LIB_ENGINE_ENGINE_H
#define HSD_LIB_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/base/buf.h"
#include "lib/engine/bridge.h"
#include "lib/engine/k_cost.h"
#include "lib/engine/sample.h"
#include "lib/base/rng.h"

struct hsd_eng_slrs;
struct hsd_eng_slem;
struct hsd_first_token;

#define HSD_ENG_MAX_CAND 64 /* most target candidates a round verifies */
#define HSD_ENG_MAX_K 63    /* longest draft chain */

struct hsd_engine {
    hsd_model *tm, *dm;
    const hsd_tokenizer *tt, *dt;
    int32_t vt, vd;    /* model vocabulary sizes */
    int32_t *d2t;      /* draft id -> target id with identical surface bytes, or -1 */
    int32_t overlap;   /* |T ∩ D| over mapped draft ids */
    int32_t overlap_t; /* distinct target ids those drafter ids reach (byte-fallback twins
                        * of one string count once): the |T ∩ D| that compares with |T| */
    bool same_vocab;
    /* `--algo auto`'s choice, made once from the tokenizers (lib/analysis/recommend.h) */
    hsd_algo auto_algo;
    char auto_reason[512];
    /* ids each KV cache holds after the last single generation: a new prompt reuses the
     * common prefix instead of prefilling it again (prefix caching) */
    hsd_ids t_cached, d_cached;
    struct hsd_first_token *slrs_ft; /* SLRS: the target's first-token rule, built once */
    int32_t t_format_eos; /* the target format's end id (models/model.h), or -1 */
    int32_t *eos_extra; /* hsd_engine_set_eos_ids: more target ids that end generation */
    int32_t n_eos_extra;
    /* what drafting needs of the pair, computed once (round_token.c, round_slem.c): */
    int32_t *d_mapped, n_d_mapped; /* drafter ids with d2t >= 0, increasing */
    float *d_mask;                 /* 1 where d2t >= 0, else 0 (vd entries) */
    struct hsd_eng_dvocab *dvocab; /* SLEM: drafter specials and ids sorted by their bytes */
    hsd_kcost_machine kc;          /* cost_k: what the forwards cost here (k_cost.h) */
};

typedef struct hsd_eng_seq hsd_eng_seq;
typedef struct hsd_eng_request hsd_eng_request;

/* One algorithm family's round (see the phases above). */
typedef struct hsd_eng_round {
    const char *name;
    bool drafts; /* false: no drafter is used (AR) */
    /* Own drafting (SLRS's tree); NULL: the driver drafts a chain of up to g->kk tokens and
     * calls draft_take with the drafter's logits after each forward. */
    hsd_status (*draft)(hsd_eng_seq *g);
    /* Optional, before a chain round's drafting (the sequence's slots selected): may change
     * what the first lockstep forward feeds (SLEM's token healing). */
    hsd_status (*draft_begin)(hsd_eng_seq *g);
    /* One chain draft from the drafter's logits (appends to rd.d, g->dj++), or sets g->dstop.
     * The next lockstep forward feeds D.ids[d_kv..): a round may rewrite those ids and cut
     * d_kv (and the drafter's cache) back to move to another branch (SLEM's tree). */
    hsd_status (*draft_take)(hsd_eng_seq *g, const float *logits);
    /* After drafting: the m candidates the target scores and the width of its rows. */
    hsd_status (*candidates)(hsd_eng_seq *g, const int32_t **cand, int32_t *m, int32_t *width);
    /* After the target forward (g->p holds m + 1 rows): verify, keep, emit, resync. */
    hsd_status (*finish)(hsd_eng_seq *g);
    /* Optional: the round's own statistics into the result, and the release of its
     * per-sequence state (g->slrs). Through the table, so that the shared steps (seq.c)
     * never call up into a round file. */
    void (*stats)(const hsd_eng_seq *g, hsd_gen_result *res);
    void (*seq_free)(hsd_eng_seq *g);
} hsd_eng_round;

extern const hsd_eng_round hsd_eng_round_ar, hsd_eng_round_token, hsd_eng_round_slem,
    hsd_eng_round_slrs;

/* The round in progress, between its phases. */
typedef struct hsd_eng_round_data {
    int32_t d[HSD_ENG_MAX_K + 1], vtok[HSD_ENG_MAX_K + 1]; /* drafts and their verification ids */
    int32_t kd;                                            /* drafts taken */
    int32_t m;                                             /* candidates fed to the target */
    int32_t n_old; /* committed target ids before the round */
    int32_t depth; /* SLEM: the verified tree's depth (the adaptive-k controller's "drafted") */
    hsd_ids cand;  /* SLEM's target candidates */
    double t1, t2; /* end of drafting, end of the bridge */
    /* the target forward: pending ids + candidates, and the rows whose logits it needs */
    int32_t *toks, *rows;
    int32_t n_toks, toks_cap, rows_cap;
    /* candidates as a tree (SLEM): cpar[j] = parent candidate of candidate j (< j) or -1
     * for the committed text; NULL = a chain. tpar: the forward's parents over toks. */
    const int32_t *cpar;
    int32_t *tpar, tpar_cap;
    const int32_t *cand_ids; /* the candidates phase's ids, kept for the target request */
    /* the target's prefill took every pending id and gave the row of the last one: the round
     * needs no verification forward (prefill.c, hsd_eng_prefill_targets) */
    bool served;
} hsd_eng_round_data;

struct hsd_eng_seq {
    hsd_engine *e;
    const hsd_gen_params *prm;
    int32_t index;          /* in the request (the streaming callback's seq) */
    int32_t t_slot, d_slot; /* sequence slots of the target and the drafter */
    hsd_algo algo;
    const hsd_eng_round *round; /* the algorithm's round */
    hsd_sampler_params sp;
    bool greedy;
    hsd_rng rng_draft, rng_verify;
    hsd_buf text;          /* committed text in the target's surface bytes */
    size_t gen_text_start; /* where generated text begins */
    hsd_bridge_side T, D;
    int32_t t_kv, d_kv;
    int32_t t_limit, d_limit; /* positions each model may use (context limits) */
    /* the drafter's window (draft_window.c): slides so far; SD: D.ids = sd_pre BOS ids then
     * T.ids[sd_base..) */
    int32_t window_slides, sd_base, sd_pre;
    bool warned_no_draft; /* the notice that the drafter's context leaves no room was given */
    hsd_ids out;
    float *dlog, *q, *p, *scratch, *resid; /* drafter logits, q rows, p rows, scratch */
    size_t p_cap;
    /* greedy: the argmax of each target row; the rows of p are then not written (verifying
     * greedily needs nothing else, and a one-hot row costs a pass over the vocabulary) */
    int32_t *p_arg;
    int32_t p_arg_cap;
    hsd_sampler_ws sw, dw; /* the sampler's scratch for target and drafter rows, allocated once */
    /* the drafter's logits after D.ids[0..d_carry_kv), from its prefill (prefill.c): the
     * first draft of the round reads them instead of a forward; valid only while
     * d_kv == d_carry_kv == D.ids.n (0: none) */
    float *d_carry;
    int32_t d_carry_kv;
    int32_t n_union, *d2u;
    double t_draft, t_verify, t_bridge;
    int32_t rounds, drafted, accepted;
    int32_t first_tried, first_acc; /* rounds with a first candidate / it accepted */
    bool done;
    hsd_stop_reason stop;
    hsd_eng_round_data rd;
    struct hsd_eng_slrs *slrs; /* SLRS round buffers and statistics */
    struct hsd_eng_slem *slem; /* SLEM's draft tree, candidate trie and cost estimates */
    /* driver state of the round in progress */
    bool live, dstop;
    const hsd_eng_round *cur; /* this round's (AR when the drafter's context is full) */
    int32_t k, kk, dj, width, m;
    double acc_ema, t0, t_first, t_end;
    hsd_kcost_seq kc; /* cost_k: the text's acceptance (k_cost.h) */
    int64_t k_sum;    /* planned draft lengths summed over the drafting rounds, */
    int32_t k_rounds; /* and those rounds (the result's k_mean) */
    int32_t before, drafted_before, acc_before;
    /* streaming: generated ids and decoded bytes already handed to the callback */
    int32_t streamed_ids;
    size_t streamed_bytes;
    /* a prompt given as target ids (step.c's hsd_batch_add_ids), used by hsd_eng_seq_setup
     * instead of encoding the prompt text; borrowed for the setup only */
    const int32_t *prompt_tids;
    size_t n_prompt_tids;
};

/* ---- seq.c ---- */
hsd_status hsd_eng_oom(void);
/* Encodes the prompt, fills both sides and allocates the buffers (e, prm, algo, slots and
 * limits set by the caller; the prefix cache in e->t_cached / d_cached is reused). */
hsd_status hsd_eng_seq_setup(hsd_eng_seq *g, const char *prompt, size_t len);
void hsd_eng_seq_free(hsd_eng_seq *g);
/* A tokenizer belongs to a model: a row for each of its ids and at most padding past them
 * (engine.c says how much). An error names fn, the side ("target", "drafter") and both sizes. */
hsd_status hsd_eng_check_vocab(const char *fn, const char *side, const hsd_tokenizer *tok,
                               int32_t rows);
/* A prompt's ids for one side ("target" or "drafter", named in errors): BOS (when add_bos and
 * the tokenizer has one), then the text encoded without post-processor; an empty result is an
 * error. */
hsd_status hsd_eng_prompt_ids(const char *side, const hsd_tokenizer *tok, const char *prompt,
                              size_t len, bool add_bos, hsd_ids *ids);
/* Appends the surface bytes of committed target ids to g->text (special ids commit none). */
hsd_status hsd_eng_commit_text(hsd_eng_seq *g, const int32_t *ids, int32_t n);
/* After target ids were committed: realigns the drafter's side with the text (bridge resync),
 * cuts its cache back to what is still valid and advances the target's segment. */
hsd_status hsd_eng_sync_drafter(hsd_eng_seq *g);
/* Selects the sequence's slots on both models (the target's only when there is one). */
hsd_status hsd_eng_seq_select(hsd_eng_seq *g);
/* A side's pending ids are side->ids.p[*kv .. *kv + *n) (at least one: with nothing pending
 * the last position is truncated and recomputed); the caller forwards them, logits for the
 * last, then adds *n to *kv. */
hsd_status hsd_eng_feed_prepare(hsd_model *m, hsd_bridge_side *side, int32_t *kv, int32_t *n);
/* Feeds the drafter's pending ids; the logits of the last one go to `logits`. */
hsd_status hsd_eng_feed_drafter(hsd_eng_seq *g, float *logits);
/* The target forward of a round: rd.toks[0..rd.n_toks) are the pending ids then the m
 * candidates; logits are needed for rd.rows[0..m]. target_probs turns those logits (m + 1
 * rows of vocab_size) into g->p rows of `width` (entries past the vocabulary are zero). */
hsd_status hsd_eng_target_request(hsd_eng_seq *g, const int32_t *cand, int32_t m);
hsd_status hsd_eng_target_probs(hsd_eng_seq *g, const float *logits, int32_t m, int32_t width);
/* Keeps acc of the round's candidates in the target cache (a tree round has moved its
 * accepted path to the front with kv_keep, or cut the cache back to the round's start when
 * the model has no kv_keep: then the accepted ids are fed again next round), emits
 * out[0..r) (EOS, stop strings, budget) and realigns the drafter. */
hsd_status hsd_eng_commit(hsd_eng_seq *g, int32_t acc, const int32_t *out, int32_t r);
/* Hands newly final text to params->on_text; final: the sequence ended (flush all). */
hsd_status hsd_eng_stream(hsd_eng_seq *g, bool final);
/* Width of the drafter's q rows: target ids, or union ids. */
int32_t hsd_eng_q_width(const hsd_eng_seq *g);
/* Positions a model may use: its KV capacity, capped by its trained context unless
 * `override` (> 0) asks for more. */
int32_t hsd_eng_ctx_limit(const hsd_model *m, int32_t override);

/* ---- prefill.c ---- */
/* Prompt ids per prefill forward (prefill.c says why this size). */
#define HSD_ENG_PREFILL_CHUNK 512
/* Feeds ids[*kv .. end) through the plain causal path (parents NULL) in chunks; *kv advances.
 * last_logits NULL: no logits at all; else the last chunk asks for one row, the logits after
 * ids[end - 1], written there (a cache already holding ids[0..end) recomputes its last
 * position). The model's current slot must be the sequence's. */
hsd_status hsd_eng_prefill(hsd_model *m, const hsd_ids *ids, int32_t *kv, int32_t end,
                           float *last_logits);
/* The drafters' side of a round, before drafting (the sequences whose round drafts): their
 * pending ids through the causal path, the logits of the last one kept for the first draft
 * (g->d_carry). */
hsd_status hsd_eng_prefill_all(hsd_eng_request *rq);
/* The target's side, in the verification phase after the candidates are known. rows false:
 * every pending id but the last (which the verification forward carries); true (no
 * sequence has candidates): every pending id, the last one's row turned into g->p row 0,
 * g->rd.served set, and no verification forward follows. */
hsd_status hsd_eng_prefill_targets(hsd_eng_request *rq, bool rows);
/* The drafter's logits kept by its prefill, when still valid for g->D (consumed: the next
 * call returns NULL). */
const float *hsd_eng_take_carry(hsd_eng_seq *g);

/* ---- draft_window.c ---- */
/* When the drafter's side holds more than d_limit - need ids, restarts it on a trailing
 * window of the committed text (about half its context) and cuts its cache to 0, with a
 * notice (hsd_log INFO); the next prefill feeds the window. Leaves the side as it is when no
 * window leaves `need` positions free. The drafter's slot must be selected. */
hsd_status hsd_eng_window_fit(hsd_eng_seq *g, int32_t need);

/* ---- driver.c: the phases of a round over a request's sequences ---- */
/* One call of hsd_engine_generate(_batch), or a running batch (step.c): B sequences in slots
 * 0..B-1 (slot i of both models; a single request uses the selected slots); the phases skip
 * sequences that are not live, so a running batch leaves free slots zeroed. */
typedef struct hsd_eng_request {
    hsd_engine *e;
    const char *fn; /* the public function, for error messages */
    bool single;    /* hsd_engine_generate: prefix caching, the caller's selected slots */
    bool seed_as_given; /* false: sequence i samples with params->seed + i (generate_batch) */
    int32_t B;
    hsd_eng_seq *sq;
    hsd_gen_params *prm; /* per sequence */
    hsd_model_batch_seq *ent;
    int32_t *idx, *last_row;
    float *dlog, *tlog;
    size_t dlog_cap, tlog_cap;
    double draft_ms;  /* the round's drafting phase (all sequences' lockstep) */
    double fwd_ms;    /* the round's target verification forward: its time, */
    int32_t fwd_toks; /* and the tokens it carried (0: none this round); */
    bool fwd_clean;   /* false when a prompt rode along (a first round): not a round's cost */
} hsd_eng_request;

/* The parameter checks of hsd_engine_generate; resolves AUTO into *algo with the reason. */
hsd_status hsd_eng_check_params(hsd_engine *e, const char *fn, const hsd_gen_params *p,
                                hsd_algo *algo, char *reason, size_t cap);
/* Sequence i (zeroed before): its parameters (copied into rq->prm[i]), slots, limits and
 * prompt. Not live afterwards when max_new_tokens is 0. */
hsd_status hsd_eng_start_seq(hsd_eng_request *rq, int32_t i, const hsd_gen_params *p,
                             hsd_algo algo, const char *prompt, size_t len);
/* One round = plan (*any: a sequence is live), prefill_all (the drafters'), draft_all,
 * verify_all (the target's prefill, then its one forward when a sequence has candidates),
 * after_round. */
hsd_status hsd_eng_plan(hsd_eng_request *rq, bool *any);
hsd_status hsd_eng_draft_all(hsd_eng_request *rq);
hsd_status hsd_eng_verify_all(hsd_eng_request *rq);
hsd_status hsd_eng_after_round(hsd_eng_request *rq);
void hsd_eng_end_seq(hsd_eng_seq *g, hsd_stop_reason why, double t);
/* The sequence's result, times from t_start. */
hsd_status hsd_eng_fill_result(hsd_engine *e, hsd_eng_seq *g, const char *reason, double t_start,
                               hsd_gen_result *res);

/* ---- round_token.c: one chain draft (token-level rounds and SLEM) ---- */
hsd_status hsd_eng_draft_take(hsd_eng_seq *g, const float *logits);

/* ---- round_slem.c: the verified tree of the last candidates phase (draft-only proposals) ---- */
/* Copies up to cap nodes (trie order, parents first: target ids, parent index or -1, score =
 * the most probable drafter path's probability through the node); returns the node count. */
int32_t hsd_eng_slem_tree(const hsd_eng_seq *g, int32_t *ids, int32_t *parents, double *scores,
                          int32_t cap);
/* The chain of that tree a chain verifier gets (its deepest path, the first among equally
 * deep ones), cut to k_out ids, all below vt; returns its length. */
int32_t hsd_eng_slem_chain(const hsd_eng_seq *g, int32_t vt, int32_t k_out, int32_t *out);

/* ---- round_slem.c: whether the round's draft_begin will heal (drop) the drafter's last id,
 * so that its prefill stops before it (prefill.c) ---- */
bool hsd_eng_slem_heals(const hsd_eng_seq *g);

/* ---- round_slem.c: the pair's drafter vocabulary tables (e->dvocab), for the frees ---- */
void hsd_eng_slem_release(hsd_engine *e);
/* Builds those tables once per pair (hsd_engine_init, with the vocabulary map: a 262k
 * vocabulary's sort is ~30 ms that a request's first SLEM round would otherwise pay). */
hsd_status hsd_eng_slem_prepare(hsd_engine *e);
/* The non-special ids among 0..n-1 that have surface bytes, ordered by those bytes
 * (lexicographic, a prefix before its extensions), then by id: SLEM's table for the drafter
 * ids that start with a healed root's bytes. ids holds n entries; *n_ids gets the count. */
hsd_status hsd_eng_ids_by_bytes(const hsd_tokenizer *t, int32_t n, int32_t *ids, int32_t *n_ids);

/* ---- round_slrs.c: the engine's share of SLRS (its first-token rule), for hsd_engine_free ---- */
void hsd_eng_slrs_release(hsd_engine *e);

#endif

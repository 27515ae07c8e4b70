/* State shared by the single-sequence decoding loop (lib/engine.c) and the batch driver
 * (lib/engine_batch.c). A round of every algorithm is split into phases around its one
 * target forward, so the batch driver can run the phases of all sequences and do that
 * forward once for all of them:
 *
 *   AR          target_request(m = 0) | forward | target_probs, ar_finish
 *   SD/UNION/TLI  drafting (feed_prepare + draft_take per draft), tl_candidates,
 *               target_request | forward | target_probs, tl_finish
 *   SLEM        drafting, slem_candidates, target_request | forward | target_probs, slem_finish
 *
 * hsd_engine_generate runs the same phases with one forward per step (round_ar,
 * round_token_level, round_slem in lib/engine.c). Every phase acts on the models' selected
 * sequence slot (hsd_model_seq_select). */
#ifndef HSD_LIB_ENGINE_INTERNAL_H
#define HSD_LIB_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/bridge.h"
#include "lib/buf.h"
#include "lib/rng.h"
#include "lib/sample.h"

struct hsd_slrs_state;
struct hsd_first_token;

#define MAX_CAND 64 /* most target candidates a round verifies */

struct hsd_engine {
    hsd_model *tm, *dm;
    const hsd_tokenizer *tt, *dt;
    int32_t vt, vd;  /* model vocabulary sizes */
    int32_t *d2t;    /* draft id -> target id with identical surface bytes, or -1 */
    int32_t overlap; /* |T ∩ D| over mapped draft ids */
    int32_t overlap_t; /* distinct target ids those drafter ids reach (byte-fallback twins
                        * of one string count once): the |T ∩ D| that compares with |T| */
    bool same_vocab;
    /* ids each KV cache holds after the last generation: a new prompt reuses the common
     * prefix instead of prefilling it again (prefix caching) */
    hsd_ids t_cached, d_cached;
    struct hsd_first_token *slrs_ft; /* SLRS: the target's first-token rule, built once */
};

/* The round in progress, between its phases. */
typedef struct round_data {
    int32_t d[64], vtok[64], kd; /* drafted ids (k <= 63) and their verification-space ids */
    int32_t m;                   /* candidates fed to the target */
    int32_t n_old;               /* committed target ids before the round */
    hsd_ids cand;                /* SLEM's target candidates */
    double t1, t2;               /* end of drafting, end of the bridge */
    /* the target forward: pending ids + candidates, and the rows whose logits it needs */
    int32_t *toks, *rows;
    int32_t n_toks, toks_cap, rows_cap;
} round_data;

typedef struct gen {
    hsd_engine *e;
    const hsd_gen_params *prm;
    hsd_algo algo;
    hsd_sampler_params sp;
    bool greedy;
    hsd_rng rng_draft, rng_verify;
    hsd_buf text;          /* committed text in the target's surface bytes */
    size_t gen_text_start; /* where generated text begins */
    hsd_bridge_side T, D;
    int32_t t_kv, d_kv;
    hsd_ids out;
    float *tlog, *dlog, *q, *p, *scratch, *resid;
    size_t tlog_cap;
    int32_t n_union, *d2u;
    double t_draft, t_verify, t_bridge;
    int32_t rounds, drafted, accepted;
    bool done;
    round_data rd;
    int32_t first_tried, first_acc; /* rounds with a first candidate / it accepted */
    struct hsd_slrs_state *slrs;    /* SLRS round buffers and statistics */
} gen;

/* Encodes the prompt, fills both sides and allocates the buffers (gen's e, prm and algo set
 * by the caller; the models' prefix cache in e->t_cached / d_cached is reused). */
hsd_status hsd_eng_gen_setup(gen *g, const char *prompt, size_t len);
void hsd_eng_gen_free(gen *g);
/* Width of the drafter's q rows: the verification space (target ids, or union ids), 0 for
 * SLEM (which verifies candidates, not distributions). */
int32_t hsd_eng_q_width(const gen *g);

/* Drafting, one draft at a time. feed_prepare: the pending ids of a side are
 * side->ids.p[*kv .. *kv + *n) (at least one: with nothing pending the last position is
 * truncated and recomputed); the caller forwards them with logits for the last and then
 * adds *n to *kv. draft_take: one draft from those logits (d[*j], q row *j); *j advances
 * when a token was taken; *stop when drafting must end for this round. */
hsd_status hsd_eng_feed_prepare(hsd_model *m, hsd_bridge_side *side, int32_t *kv, int32_t *n);
hsd_status hsd_eng_draft_take(gen *g, const float *logits, int32_t *d, int32_t *j, int32_t width,
                              bool *stop);

/* Candidates after drafting: token-level (vtok, m) and SLEM (bridge candidates, m). */
void hsd_eng_tl_candidates(gen *g);
hsd_status hsd_eng_slem_candidates(gen *g);

/* The target forward of a round: rd.toks[0..rd.n_toks) are the pending ids then the m
 * candidates; logits are needed for rd.rows[0..m] (m + 1 rows). target_probs turns those
 * logits (m + 1 rows of vocab_size) into g->p rows of `width`. */
hsd_status hsd_eng_target_request(gen *g, const int32_t *cand, int32_t m);
hsd_status hsd_eng_target_probs(gen *g, const float *logits, int32_t m, int32_t width);

/* After target_probs: verify, keep the accepted part of the target's cache, emit (EOS,
 * stop strings, budget) and resync the drafter. t0: when AR's round began. */
hsd_status hsd_eng_ar_finish(gen *g, double t0);
hsd_status hsd_eng_tl_finish(gen *g);
hsd_status hsd_eng_slem_finish(gen *g);

/* Entry points for rounds defined outside lib/engine.c (lib/engine_slrs.c). */
double hsd_gen_now_ms(void);
/* Feeds the drafter's pending ids; logits of the last one go to `logits`. */
hsd_status hsd_gen_feed_drafter(gen *g, float *logits);
/* Target forward over pending ids + m candidates: g->p gets m+1 probability rows of vt. */
hsd_status hsd_gen_target_rows(gen *g, const int32_t *cand, int32_t m);
/* Keeps acc accepted candidates in the target cache, emits out[0..r), realigns the drafter. */
hsd_status hsd_gen_finish_round(gen *g, int32_t n_old, int32_t acc, const int32_t *out, int32_t r);

/* engine_slrs.c */
hsd_status hsd_gen_round_slrs(gen *g, int32_t k);
void hsd_gen_slrs_stats(const gen *g, hsd_gen_result *res);
void hsd_gen_slrs_free(gen *g);
void hsd_engine_slrs_release(hsd_engine *e);

#endif

/* What the decoding loop shares with rounds defined outside lib/engine.c (lib/engine_slrs.c):
 * the engine and per-generation state, and a few entry points into engine.c. */
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

#define MAX_CAND 64

struct hsd_engine {
    hsd_model *tm, *dm;
    const hsd_tokenizer *tt, *dt;
    int32_t vt, vd;  /* model vocabulary sizes */
    int32_t *d2t;    /* draft id -> target id with identical surface bytes, or -1 */
    int32_t overlap; /* |T ∩ D| over mapped draft ids */
    bool same_vocab;
    /* ids each KV cache holds after the last generation: a new prompt reuses the common
     * prefix instead of prefilling it again (prefix caching) */
    hsd_ids t_cached, d_cached;
    struct hsd_first_token *slrs_ft; /* SLRS: the target's first-token rule, built once */
};

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
    int32_t first_tried, first_acc; /* rounds with a first candidate / it accepted */
    struct hsd_slrs_state *slrs;    /* SLRS round buffers and statistics */
} gen;

/* engine.c */
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

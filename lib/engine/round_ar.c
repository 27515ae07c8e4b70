/* The autoregressive round: no drafts, the target's next token from its own distribution
 * (argmax when greedy). Also the fallback round of every algorithm once the drafter's
 * context is full. */
#include "lib/engine/engine.h"
#include "lib/base/timer.h"
#include "verify/verify.h"

static hsd_status ar_candidates(hsd_eng_seq *g, const int32_t **cand, int32_t *m, int32_t *width) {
    *cand = NULL;
    *m = 0;
    *width = g->e->vt;
    return HSD_OK;
}

static hsd_status ar_finish(hsd_eng_seq *g) {
    int32_t vt = g->e->vt;
    int32_t tok = g->greedy ? g->p_arg[0]
                            : hsd_sample_draw_ws(&g->sw, g->p, vt, hsd_rng_uniform_f64(&g->rng_verify));
    g->t_verify += hsd_timer_ms() - g->rd.t1;
    g->rounds++;
    return hsd_eng_commit(g, 0, &tok, 1);
}

const hsd_eng_round hsd_eng_round_ar = {
    .name = "ar",
    .drafts = false,
    .candidates = ar_candidates,
    .finish = ar_finish,
};

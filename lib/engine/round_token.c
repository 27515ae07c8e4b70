/* Token-level rounds: SD, union (Alg 1) and TLI (Alg 4). The drafter proposes a chain of
 * tokens; each is mapped into the verification space (target ids for SD and TLI, T ∪ D for
 * union) together with the distribution it was drawn from, and standard speculative sampling
 * (verify/verify.h) accepts a prefix of them. */
#include <string.h>

#include "lib/engine/engine.h"
#include "lib/base/timer.h"
#include "verify/verify.h"

/* One draft from the drafter's logits. For TLI the drafter's distribution is restricted to
 * T ∩ D. The rows written to q are in the verification space: target ids (SD, TLI) or union
 * ids. (SLEM drafts a tree of its own: round_slem.c.) */
hsd_status hsd_eng_draft_take(hsd_eng_seq *g, const float *logits) {
    hsd_engine *e = g->e;
    hsd_status s;
    float *qd = g->scratch; /* draft-space probabilities */
    if ((s = hsd_sample_probs(logits, e->vd, &g->sp, qd))) return s;
    float *row = g->q + (size_t)g->dj * (size_t)g->width;
    if (g->algo == HSD_ALGO_TLI) {
        /* TLI's q' on T ∩ D: the mapped mass renormalised (hsd_verify_map_draft's flag); the
         * draft is drawn from the same weights, unnormalised (hsd_verify_draw takes weights) */
        for (int32_t i = 0; i < e->vd; i++)
            if (e->d2t[i] < 0) qd[i] = 0;
        if (!(hsd_verify_map_draft(qd, e->vd, e->d2t, g->width, true, row) > 0)) {
            g->dstop = true; /* the drafter puts no mass on T ∩ D: nothing to propose */
            return HSD_OK;
        }
    }
    int32_t tok = g->greedy ? hsd_verify_argmax(qd, e->vd)
                            : hsd_verify_draw(qd, e->vd, hsd_rng_uniform_f64(&g->rng_draft));
    if (g->algo == HSD_ALGO_SD)
        memcpy(row, qd, (size_t)e->vd * sizeof *row);
    else if (g->algo == HSD_ALGO_UNION)
        hsd_verify_map_draft(qd, e->vd, g->d2u, g->width, false, row);
    g->rd.d[g->dj++] = tok;
    if (hsd_ids_push(&g->D.ids, tok)) return hsd_eng_oom();
    /* a draft outside T ends the chain: it can only be rejected */
    if (g->algo == HSD_ALGO_UNION && g->d2u[tok] >= e->vt) g->dstop = true;
    return HSD_OK;
}

/* Drafts as verification-space ids; only the leading ones inside T are fed to the target. */
static hsd_status token_candidates(hsd_eng_seq *g, const int32_t **cand, int32_t *m,
                                   int32_t *width) {
    hsd_engine *e = g->e;
    hsd_eng_round_data *rd = &g->rd;
    rd->m = 0;
    for (int32_t j = 0; j < rd->kd; j++) {
        int32_t u = g->algo == HSD_ALGO_SD    ? rd->d[j]
                    : g->algo == HSD_ALGO_TLI ? e->d2t[rd->d[j]]
                                              : g->d2u[rd->d[j]];
        rd->vtok[j] = u;
        if (u < e->vt && rd->m == j) rd->m = j + 1;
    }
    *cand = rd->vtok;
    *m = rd->m;
    *width = hsd_eng_q_width(g);
    return HSD_OK;
}

static hsd_status token_finish(hsd_eng_seq *g) {
    hsd_eng_round_data *rd = &g->rd;
    int32_t width = hsd_eng_q_width(g), out[HSD_ENG_MAX_K + 2], acc = 0, r;
    if (rd->kd == 0) { /* nothing drafted: one plain target step */
        out[0] = g->greedy ? hsd_verify_argmax(g->p, width)
                           : hsd_verify_draw(g->p, width, hsd_rng_uniform_f64(&g->rng_verify));
        r = 1;
    } else {
        r = hsd_verify_sd(g->p, g->q, width, rd->vtok, rd->kd, g->greedy, &g->rng_verify, g->resid,
                          out, &acc);
    }
    g->t_verify += hsd_timer_ms() - rd->t1;
    g->rounds++;
    g->drafted += rd->kd;
    g->accepted += acc;
    /* the drafter keeps its accepted drafts; the bridge decides what else to roll back */
    return hsd_eng_commit(g, acc, out, r);
}

const hsd_eng_round hsd_eng_round_token = {
    .name = "token",
    .drafts = true,
    .draft_take = hsd_eng_draft_take,
    .candidates = token_candidates,
    .finish = token_finish,
};

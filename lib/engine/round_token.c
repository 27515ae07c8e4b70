/* Token-level rounds: SD, union (Alg 1) and TLI (Alg 4). The drafter proposes a chain of
 * tokens; each is mapped into the verification space (target ids for SD and TLI, T ∪ D for
 * union) together with the distribution it was drawn from, and standard speculative sampling
 * (verify/verify.h) accepts a prefix of them. */
#include <string.h>

#include "lib/engine/engine.h"
#include "lib/base/timer.h"
#include "verify/verify.h"

/* The draft `tok` joins the chain (its q row is written already, or not needed). */
static hsd_status push_draft(hsd_eng_seq *g, int32_t tok) {
    g->rd.d[g->dj++] = tok;
    if (hsd_ids_push(&g->D.ids, tok)) return hsd_eng_oom();
    /* a draft outside T ends the chain: it can only be rejected */
    if (g->algo == HSD_ALGO_UNION && g->d2u[tok] >= g->e->vt) g->dstop = true;
    return HSD_OK;
}

/* One draft from the drafter's logits. For TLI the drafter's distribution is restricted to
 * T ∩ D. The rows written to q are in the verification space: target ids (SD, TLI) or union
 * ids. (SLEM drafts a tree of its own: round_slem.c.)
 *
 * Cost: greedy drafting is one argmax pass (a greedy round verifies against the target's
 * argmax and reads no q row). Sampled rows cut by top-k / top-p carry their support
 * (sample.h), and the mask, the renormalisation, the draw and the map into the verification
 * space then visit those ids alone; full rows use the pair's list of mapped ids (e->d_mapped). */
hsd_status hsd_eng_draft_take(hsd_eng_seq *g, const float *logits) {
    hsd_engine *e = g->e;
    hsd_status s;
    if (g->greedy) {
        int32_t tok = hsd_sample_greedy(logits, e->vd);
        /* as the one-hot row restricted to T ∩ D: no mass left when the argmax is outside */
        if (g->algo == HSD_ALGO_TLI && e->d2t[tok] < 0) {
            g->dstop = true;
            return HSD_OK;
        }
        return push_draft(g, tok);
    }
    float *qd = g->scratch; /* draft-space probabilities */
    hsd_sampler_ws *w = &g->dw;
    if ((s = hsd_sampler_ws_reserve(w, e->vd)) || (s = hsd_sample_probs_ws(w, logits, e->vd, &g->sp, qd)))
        return s;
    const bool sparse = w->n_support >= 0; /* a cut row lists its kept ids */
    float *row = g->q + (size_t)g->dj * (size_t)g->width;
    if (g->algo == HSD_ALGO_TLI) {
        /* TLI's q' on T ∩ D: the drafter's row restricted to the mapped ids (the draw below
         * takes these weights), and its map renormalised by hsd_verify_map_draft's flag, over
         * the row's support or the pair's mapped ids, never the whole vocabulary twice */
        const int32_t *ids = e->d_mapped;
        int32_t n_ids = e->n_d_mapped;
        if (sparse) {
            int32_t k = 0;
            for (int32_t j = 0; j < w->n_support; j++) {
                const int32_t i = w->support[j];
                if (e->d2t[i] < 0) qd[i] = 0;
                else w->idx[k++] = i;
            }
            w->n_support = k;
            ids = w->support, n_ids = k;
        } else { /* a product with the pair's 0/1 mask: a loop the compiler vectorises */
            const float *mask = e->d_mask;
            for (int32_t i = 0; i < e->vd; i++) qd[i] *= mask[i];
        }
        if (!(hsd_verify_map_draft_ids(qd, ids, n_ids, e->d2t, g->width, true, row) > 0)) {
            g->dstop = true; /* the drafter puts no mass on T ∩ D: nothing to propose */
            return HSD_OK;
        }
    }
    int32_t tok = hsd_sample_draw_ws(w, qd, e->vd, hsd_rng_uniform_f64(&g->rng_draft));
    if (g->algo == HSD_ALGO_SD) {
        memcpy(row, qd, (size_t)e->vd * sizeof *row);
    } else if (g->algo == HSD_ALGO_UNION) {
        if (sparse)
            hsd_verify_map_draft_ids(qd, w->support, w->n_support, g->d2u, g->width, false, row);
        else
        hsd_verify_map_draft(qd, e->vd, g->d2u, g->width, false, row);
    }
    return push_draft(g, tok);
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
        out[0] = g->greedy ? g->p_arg[0]
                           : hsd_verify_draw(g->p, width, hsd_rng_uniform_f64(&g->rng_verify));
        r = 1;
    } else if (g->greedy) { /* the rule on the rows' argmaxes (the rows are not written) */
        r = hsd_verify_sd_greedy(g->p_arg, rd->vtok, rd->kd, out, &acc);
    } else {
        r = hsd_verify_sd(g->p, g->q, width, rd->vtok, rd->kd, false, &g->rng_verify, g->resid,
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

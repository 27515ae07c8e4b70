/* Prefill: the ids a model's cache lacks before a round, fed through the plain causal path
 * (parents NULL) in chunks. Every algorithm, the running batch and the proposer prefill this
 * way: a tree round (SLEM) never sends the prompt through tree attention, and a chunk asks for
 * no classifier row except the one row a caller reads next:
 *
 *   - the target, when no sequence of the round has candidates (AR; a drafting round that
 *     drafted nothing): the last pending id joins the last chunk and its row is the round's
 *     distribution. The first token comes out of the prefill itself, where a prefill without
 *     it was followed by a forward of that one id (a whole pass over the weights: ~60 ms at
 *     the llama-3.2-1b shape);
 *   - the target, when a sequence has candidates: the last pending ids, up to a chunk, stay
 *     for the verification forward and only whole chunks before them are prefilled (in a
 *     batch of B sequences, up to chunk / B ids each, else only the last id stays). That
 *     forward runs for the candidates anyway: its pending ids cost their arithmetic but no
 *     second pass over the weights, the last one's row is p for the first candidate (a row
 *     in the prefill would cost a pass over the classifier, the 128k x 2048 matrix at that
 *     shape), and the model runs them as a chain segment, the causal path of a prefill
 *     (models/forward.c). A 65-token prompt's first SLEM round on the Q4_K_M 1B target:
 *     one forward of 77 rows (141 ms) instead of 64 rows and then 13 (118 + 50);
 *   - the drafter: its last id joins the last chunk and the row is the first draft's
 *     distribution (g->d_carry), so the first draft needs no forward of its own. When SLEM
 *     will heal (drop) that id, the prefill stops before it and the row is the healed root's.
 *
 * Why chunks of HSD_ENG_PREFILL_CHUNK (512) tokens: the forward's scratch grows with the
 * rows it stacks (activations, the q/k/v and FFN buffers: about 120 KB a row at the
 * llama-3.2-1b shape, 60 MB for 512 rows, where 8k rows would need 1 GB), while the
 * products' efficiency stops improving long before 512 rows (the packed tile products read
 * each weight block once for all rows; from a few dozen rows on they are compute bound and
 * sgemm's too). llama.cpp's default micro-batch is also 512. A chunk is a plain causal
 * forward that attends to the chunks before it through the cache, so the result does not
 * depend on the chunk size beyond the products' summation order. */
#include <stdlib.h>
#include <string.h>

#include "lib/engine/engine.h"
#include "lib/base/error.h"
#include "lib/base/timer.h"

hsd_status hsd_eng_prefill(hsd_model *m, const hsd_ids *ids, int32_t *kv, int32_t end,
                           float *last_logits) {
    hsd_status s = HSD_OK;
    if (last_logits && *kv >= end) *kv = end - 1; /* all cached: recompute the last position */
    if (*kv >= end) return HSD_OK;
    /* the cache may hold more than *kv (a cut-back not applied yet): start from *kv */
    if (hsd_model_kv_len(m) != *kv && (s = hsd_model_kv_truncate(m, *kv))) return s;
    while (*kv < end) {
        int32_t n = end - *kv < HSD_ENG_PREFILL_CHUNK ? end - *kv : HSD_ENG_PREFILL_CHUNK;
        int32_t row = n - 1;
        bool last = last_logits && *kv + n == end;
        if ((s = hsd_model_forward(m, ids->p + *kv, n, NULL, last ? &row : NULL, last ? 1 : 0,
                                   last ? last_logits : NULL)))
            return s;
        *kv += n;
    }
    return HSD_OK;
}

/* Where a side's prefill ends and whether it keeps a row (see the top of the file). Returns
 * false when this side has nothing to prefill this round. */
static bool plan_side(const hsd_eng_seq *g, bool target, bool rows, int32_t carry_max,
                      int32_t *end, bool *row) {
    if (!g->live) return false;
    if (target) {
        int32_t n = (int32_t)g->T.ids.n, rem = n - g->t_kv;
        *row = rows;
        if (rows) {
            *end = n;
            return true;
        }
        /* candidates follow: what is left after whole chunks (1..HSD_ENG_PREFILL_CHUNK ids)
         * stays for their verification forward if it is at most carry_max ids, else only the
         * last id does */
        int32_t carry = rem > 0 ? 1 + (rem - 1) % HSD_ENG_PREFILL_CHUNK : 0;
        if (carry > carry_max) carry = 1;
        *end = rem > 0 ? n - carry : g->t_kv;
        return g->t_kv < *end;
    }
    /* only a round that drafts; SLRS's own tree reads the carry at its root
     * (hsd_eng_feed_drafter), chain rounds at their first lockstep step (driver.c) */
    if (!g->cur || !g->cur->drafts) return false;
    int32_t n = (int32_t)g->D.ids.n;
    /* a row only where a prefill forward runs anyway (more than the last id pending): with
     * one id pending the first lockstep forward is that id's, shared with the batch */
    if (g->d_kv >= n - 1) {
        *end = n - 1;
        *row = false;
        return false;
    }
    *end = g->cur->draft_begin && hsd_eng_slem_heals(g) ? n - 1 : n;
    *row = true;
    return true;
}

const float *hsd_eng_take_carry(hsd_eng_seq *g) {
    int32_t c = g->d_carry_kv;
    g->d_carry_kv = 0;
    return c > 0 && c == g->d_kv && c == (int32_t)g->D.ids.n ? g->d_carry : NULL;
}

/* The row of a sequence's last prefill chunk: the drafter's is kept for its first draft, the
 * target's becomes the round's distribution (p row 0). */
static hsd_status take_row(hsd_eng_seq *g, bool target, const float *logits) {
    hsd_engine *e = g->e;
    if (!target) {
        if (logits != g->d_carry) memcpy(g->d_carry, logits, (size_t)e->vd * sizeof *logits);
        g->d_carry_kv = g->d_kv;
        return HSD_OK;
    }
    g->rd.served = true;
    g->rd.n_old = (int32_t)g->T.ids.n;
    return hsd_eng_target_probs(g, logits, 0, g->width);
}

static hsd_status grow(float **buf, size_t *cap, size_t need) {
    if (need <= *cap) return HSD_OK;
    float *p = realloc(*buf, need * sizeof *p);
    if (!p) return hsd_eng_oom();
    *buf = p;
    *cap = need;
    return HSD_OK;
}

/* A request of one sequence: hsd_model_forward on its selected slots. */
static hsd_status prefill_one(hsd_eng_request *rq, bool target, bool rows) {
    hsd_eng_seq *g = &rq->sq[0];
    hsd_engine *e = rq->e;
    int32_t end;
    bool row;
    if (!plan_side(g, target, rows, HSD_ENG_PREFILL_CHUNK, &end, &row)) return HSD_OK;
    hsd_status s = hsd_eng_seq_select(g);
    float *lg = NULL;
    if (!s && row && target && !(s = grow(&rq->tlog, &rq->tlog_cap, (size_t)e->vt))) lg = rq->tlog;
    if (!s && row && !target) lg = g->d_carry;
    if (s) return s;
    double t0 = hsd_timer_ms();
    if (target)
        s = hsd_eng_prefill(e->tm, &g->T.ids, &g->t_kv, end, lg);
    else
        s = hsd_eng_prefill(e->dm, &g->D.ids, &g->d_kv, end, lg);
    if (!target) g->t_draft += hsd_timer_ms() - t0; /* the target's: its round's verify time */
    return s || !row ? s : take_row(g, target, lg);
}

/* A request of several sequences: their chunks share batched forwards (at most
 * HSD_ENG_PREFILL_CHUNK rows in all, the weights read once for all of them), as the rounds'
 * forwards of a batch do. `target`: the target's side, else the drafters'. */
static hsd_status prefill_batched(hsd_eng_request *rq, bool target, bool rows) {
    hsd_engine *e = rq->e;
    hsd_model *m = target ? e->tm : e->dm;
    const int32_t V = target ? e->vt : e->vd;
    for (;;) {
        int32_t nb = 0, rows_in = 0, n_out = 0;
        hsd_status s = HSD_OK;
        for (int32_t i = 0; i < rq->B && rows_in < HSD_ENG_PREFILL_CHUNK; i++) {
            hsd_eng_seq *g = &rq->sq[i];
            int32_t end;
            bool row;
            /* the verification forward stacks every sequence's carried ids: together at most
             * about a chunk, as a prefill forward (its scratch grows with the rows) */
            if (!plan_side(g, target, rows, HSD_ENG_PREFILL_CHUNK / rq->B, &end, &row)) continue;
            const hsd_ids *ids = target ? &g->T.ids : &g->D.ids;
            int32_t *kv = target ? &g->t_kv : &g->d_kv;
            /* the row was taken (a sequence's last chunk came in an earlier forward) */
            if (row && (target ? g->rd.served : g->d_carry_kv > 0)) continue;
            if (row && *kv >= end) *kv = end - 1; /* all cached: recompute the last position */
            if (*kv >= end) continue;
            /* the slot's cache must end where the new rows start */
            if ((s = hsd_model_seq_select(m, target ? g->t_slot : g->d_slot))) return s;
            if (hsd_model_kv_len(m) != *kv && (s = hsd_model_kv_truncate(m, *kv))) return s;
            int32_t n = end - *kv < HSD_ENG_PREFILL_CHUNK - rows_in ? end - *kv
                                                                    : HSD_ENG_PREFILL_CHUNK - rows_in;
            bool last = row && *kv + n == end;
            rq->last_row[nb] = n - 1;
            rq->ent[nb] = (hsd_model_batch_seq){sizeof(hsd_model_batch_seq),
                                                target ? g->t_slot : g->d_slot,
                                                ids->p + *kv,
                                                n,
                                                NULL,
                                                last ? &rq->last_row[nb] : NULL,
                                                last ? 1 : 0};
            rq->idx[nb++] = i;
            rows_in += n;
            n_out += last;
        }
        if (nb == 0) return HSD_OK;
        float **buf = target ? &rq->tlog : &rq->dlog;
        if (n_out && (s = grow(buf, target ? &rq->tlog_cap : &rq->dlog_cap, (size_t)n_out * (size_t)V)))
            return s;
        double t0 = hsd_timer_ms();
        if ((s = hsd_model_forward_batch(m, rq->ent, nb, n_out ? *buf : NULL))) return s;
        double dt = hsd_timer_ms() - t0;
        for (int32_t b = 0, o = 0; b < nb && !s; b++) {
            hsd_eng_seq *g = &rq->sq[rq->idx[b]];
            *(target ? &g->t_kv : &g->d_kv) += rq->ent[b].n;
            if (!target) g->t_draft += dt; /* shared, as the rounds' forwards */
            if (rq->ent[b].n_rows) s = take_row(g, target, *buf + (size_t)o++ * (size_t)V);
        }
        if (s) return s;
    }
}

hsd_status hsd_eng_prefill_all(hsd_eng_request *rq) {
    for (int32_t i = 0; i < rq->B; i++) rq->sq[i].d_carry_kv = 0;
    if (!rq->e->dm) return HSD_OK;
    return rq->B == 1 ? prefill_one(rq, false, false) : prefill_batched(rq, false, false);
}

hsd_status hsd_eng_prefill_targets(hsd_eng_request *rq, bool rows) {
    for (int32_t i = 0; i < rq->B; i++) rq->sq[i].rd.served = false;
    return rq->B == 1 ? prefill_one(rq, true, rows) : prefill_batched(rq, true, rows);
}

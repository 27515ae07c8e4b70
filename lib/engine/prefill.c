/* Prefill: the ids a model's cache lacks before a round, fed through the plain causal path
 * (parents NULL) in chunks, with no logits. Every algorithm, the running batch and the
 * proposer prefill this way, so that a round's own forward carries one pending id and its
 * candidates: a tree round (SLEM) never sends the prompt through tree attention, and no
 * forward computes classifier rows nobody reads.
 *
 * Why chunks of HSD_ENG_PREFILL_CHUNK (512) tokens: the forward's scratch grows with the
 * rows it stacks (activations, the q/k/v and FFN buffers: about 120 KB a row at the
 * llama-3.2-1b shape, 60 MB for 512 rows, where 8k rows would need 1 GB), while the
 * products' efficiency stops improving long before 512 rows (the packed tile products read
 * each weight block once for all rows; from a few dozen rows on they are compute bound and
 * sgemm's too). llama.cpp's default micro-batch is also 512. A chunk is a plain causal
 * forward that attends to the chunks before it through the cache, so the result does not
 * depend on the chunk size beyond the products' summation order. */
#include "lib/engine/engine.h"
#include "lib/base/error.h"
#include "lib/base/timer.h"

hsd_status hsd_eng_prefill(hsd_model *m, const hsd_ids *ids, int32_t *kv) {
    int32_t end = (int32_t)ids->n - 1; /* the last id stays pending: the round needs its logits */
    hsd_status s = HSD_OK;
    if (*kv >= end) return HSD_OK;
    /* the cache may hold more than *kv (a cut-back not applied yet): start from *kv */
    if (hsd_model_kv_len(m) != *kv && (s = hsd_model_kv_truncate(m, *kv))) return s;
    while (*kv < end) {
        int32_t n = end - *kv < HSD_ENG_PREFILL_CHUNK ? end - *kv : HSD_ENG_PREFILL_CHUNK;
        if ((s = hsd_model_forward(m, ids->p + *kv, n, NULL, NULL, 0, NULL))) return s;
        *kv += n;
    }
    return HSD_OK;
}

hsd_status hsd_eng_prefill_seq(hsd_eng_seq *g) {
    hsd_engine *e = g->e;
    hsd_status s = hsd_eng_seq_select(g);
    double t0 = hsd_timer_ms();
    if (!s && e->tm) s = hsd_eng_prefill(e->tm, &g->T.ids, &g->t_kv);
    double t1 = hsd_timer_ms();
    if (!s && e->dm && g->cur && g->cur->drafts) s = hsd_eng_prefill(e->dm, &g->D.ids, &g->d_kv);
    g->t_verify += t1 - t0;
    g->t_draft += hsd_timer_ms() - t1;
    return s;
}

/* A request of several sequences: their chunks share batched forwards (at most
 * HSD_ENG_PREFILL_CHUNK rows in all, the weights read once for all of them), as the rounds'
 * forwards of a batch do. `target`: the target's side, else the drafters'. */
static hsd_status prefill_batched(hsd_eng_request *rq, bool target) {
    hsd_engine *e = rq->e;
    hsd_model *m = target ? e->tm : e->dm;
    for (;;) {
        int32_t nb = 0, rows = 0;
        hsd_status s = HSD_OK;
        for (int32_t i = 0; i < rq->B && rows < HSD_ENG_PREFILL_CHUNK; i++) {
            hsd_eng_seq *g = &rq->sq[i];
            if (!g->live || (!target && !(g->cur && g->cur->drafts))) continue;
            const hsd_ids *ids = target ? &g->T.ids : &g->D.ids;
            int32_t kv = target ? g->t_kv : g->d_kv, end = (int32_t)ids->n - 1;
            if (kv >= end) continue;
            /* the slot's cache must end where the new rows start */
            if ((s = hsd_model_seq_select(m, target ? g->t_slot : g->d_slot))) return s;
            if (hsd_model_kv_len(m) != kv && (s = hsd_model_kv_truncate(m, kv))) return s;
            int32_t n =
                end - kv < HSD_ENG_PREFILL_CHUNK - rows ? end - kv : HSD_ENG_PREFILL_CHUNK - rows;
            rq->ent[nb] = (hsd_model_batch_seq){sizeof(hsd_model_batch_seq),
                target ? g->t_slot : g->d_slot, ids->p + kv, n, NULL, NULL, 0};
            rq->idx[nb++] = i;
            rows += n;
        }
        if (nb == 0) return HSD_OK;
        double t0 = hsd_timer_ms();
        if ((s = hsd_model_forward_batch(m, rq->ent, nb, NULL))) return s;
        double dt = hsd_timer_ms() - t0;
        for (int32_t b = 0; b < nb; b++) {
            hsd_eng_seq *g = &rq->sq[rq->idx[b]];
            *(target ? &g->t_kv : &g->d_kv) += rq->ent[b].n;
            *(target ? &g->t_verify : &g->t_draft) += dt; /* shared, as the rounds' forwards */
        }
    }
}

hsd_status hsd_eng_prefill_all(hsd_eng_request *rq) {
    if (rq->B == 1) return rq->sq[0].live ? hsd_eng_prefill_seq(&rq->sq[0]) : HSD_OK;
    hsd_status s = prefill_batched(rq, true);
    if (!s && rq->e->dm) s = prefill_batched(rq, false);
    return s;
}

/* The running batch (include/hsd.h, "Running batch"): continuous batching over the driver's
 * round phases (driver.c). The batch is one request whose B sequences are the slots; a free
 * slot is a zeroed sequence that is not live, which every phase skips. Sequences join and
 * leave between rounds; a step is one plan + draft + verify + after_round over whatever is
 * live, so a sequence's rounds are exactly the rounds hsd_engine_generate would run for it:
 * its own k (adaptive or not), its own RNG streams from its own seed, its own stop strings.
 * What the other sequences change is only which rows share a forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/buf.h"
#include "lib/base/error.h"
#include "lib/base/params.h"
#include "lib/base/timer.h"
#include "lib/engine/engine.h"

typedef struct slot {
    bool used;
    int64_t id;
    double t_start;
    int32_t n_prompt;
    char reason[512];
    char **stop; /* the request's stop strings, copied */
    int32_t n_stop;
    hsd_buf piece;   /* text made final during the current step */
    hsd_ids piece_ids;
    hsd_gen_result res; /* the result of a sequence that ended during the last step */
} slot;

struct hsd_batch {
    hsd_engine *e;
    hsd_eng_request rq;
    slot *sl;
    int32_t n_active;
    int64_t next_id;
    hsd_batch_event *ev;
};

hsd_batch_params hsd_batch_default_params(void) {
    hsd_batch_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    return p;
}

void hsd_batch_free(hsd_batch *b) {
    if (!b) return;
    for (int32_t i = 0; i < b->rq.B; i++) {
        slot *s = &b->sl[i];
        if (s->used) hsd_eng_seq_free(&b->rq.sq[i]);
        for (int32_t j = 0; j < s->n_stop; j++) free(s->stop[j]);
        free(s->stop);
        hsd_buf_free(&s->piece);
        hsd_ids_free(&s->piece_ids);
        hsd_gen_result_free(&s->res);
    }
    hsd_eng_request *rq = &b->rq;
    free(rq->sq), free(rq->prm), free(rq->ent), free(rq->idx), free(rq->last_row);
    free(rq->dlog), free(rq->tlog);
    free(b->sl);
    free(b->ev);
    free(b);
}

hsd_status hsd_batch_init(hsd_engine *e, const hsd_batch_params *params, hsd_batch **out) {
    if (out) *out = NULL;
    if (!e || !out)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_batch_init: NULL %s", !e ? "engine" : "out");
    hsd_batch_params p = hsd_batch_default_params();
    if (params) {
        hsd_status st = hsd_params_read(&p, sizeof p, params, "hsd_batch_init", "params",
                                        "hsd_batch_default_params()");
        if (st) return st;
    }
    int32_t nt = hsd_model_n_seq(e->tm), nd = e->dm ? hsd_model_n_seq(e->dm) : nt;
    int32_t n = p.n_slots > 0 ? p.n_slots : nt;
    if (p.n_slots < 0 || n > nt || n > nd)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_batch_init: %d slots requested; the target has %d sequence slots "
                         "and the drafter %d (hsd_model_params.n_seq)",
                         (int)p.n_slots, (int)nt, (int)nd);
    hsd_batch *b = calloc(1, sizeof *b);
    if (!b) return hsd_eng_oom();
    b->e = e;
    b->rq = (hsd_eng_request){.e = e, .fn = "hsd_batch_add", .single = false,
                              .seed_as_given = true, .B = n};
    b->rq.sq = calloc((size_t)n, sizeof *b->rq.sq);
    b->rq.prm = calloc((size_t)n, sizeof *b->rq.prm);
    b->rq.ent = calloc((size_t)n, sizeof *b->rq.ent);
    b->rq.idx = calloc((size_t)n, sizeof *b->rq.idx);
    b->rq.last_row = calloc((size_t)n, sizeof *b->rq.last_row);
    b->sl = calloc((size_t)n, sizeof *b->sl);
    b->ev = calloc((size_t)n, sizeof *b->ev);
    if (!b->rq.sq || !b->rq.prm || !b->rq.ent || !b->rq.idx || !b->rq.last_row || !b->sl ||
        !b->ev) {
        hsd_batch_free(b);
        return hsd_eng_oom();
    }
    *out = b;
    return HSD_OK;
}

int32_t hsd_batch_n_active(const hsd_batch *b) { return b ? b->n_active : 0; }
int32_t hsd_batch_n_slots(const hsd_batch *b) { return b ? b->rq.B : 0; }

/* The streaming callback of every sequence: collects what a round made final. */
static bool collect(void *user, int32_t seq, const char *text, size_t len, const int32_t *ids,
                    int32_t n_ids) {
    hsd_batch *b = user;
    slot *s = &b->sl[seq];
    /* out of memory here loses only the piece, never the result (which is decoded again) */
    if (len) (void)hsd_buf_append(&s->piece, text, len);
    for (int32_t i = 0; i < n_ids; i++) (void)hsd_ids_push(&s->piece_ids, ids[i]);
    return true;
}

/* Forgets what the last step handed out: pieces and results. */
static void clear_events(hsd_batch *b) {
    for (int32_t i = 0; i < b->rq.B; i++) {
        b->sl[i].piece.n = 0;
        b->sl[i].piece_ids.n = 0;
        hsd_gen_result_free(&b->sl[i].res);
    }
}

static void release_slot(hsd_batch *b, int32_t i) {
    slot *s = &b->sl[i];
    hsd_eng_seq_free(&b->rq.sq[i]);
    memset(&b->rq.sq[i], 0, sizeof b->rq.sq[i]);
    for (int32_t j = 0; j < s->n_stop; j++) free(s->stop[j]);
    free(s->stop);
    s->stop = NULL;
    s->n_stop = 0;
    if (s->used) b->n_active--;
    s->used = false;
}

static hsd_status add(hsd_batch *b, const char *prompt, size_t len, const int32_t *ids,
                      size_t n_ids, const hsd_gen_params *params, int64_t *id) {
    hsd_gen_params p = hsd_gen_default_params();
    hsd_status st = hsd_params_read(&p, sizeof p, params, "hsd_batch_add", "params",
                                    "hsd_gen_default_params()");
    if (st) return st;
    hsd_algo algo = HSD_ALGO_AR;
    char reason[512] = "";
    st = hsd_eng_check_params(b->e, "hsd_batch_add", &p, &algo, reason, sizeof reason);
    if (st) return st;
    int32_t i = 0;
    while (i < b->rq.B && b->sl[i].used) i++;
    if (i == b->rq.B)
        return hsd_error(HSD_ERR_BUFFER_TOO_SMALL, "hsd_batch_add: all %d slots are in use",
                         (int)b->rq.B);
    clear_events(b);
    slot *s = &b->sl[i];
    if (p.n_stop > 0) {
        s->stop = calloc((size_t)p.n_stop, sizeof *s->stop);
        if (!s->stop) return hsd_eng_oom();
        for (int32_t j = 0; j < p.n_stop; j++) {
            const char *src = p.stop[j] ? p.stop[j] : "";
            if (!(s->stop[j] = strdup(src))) {
                s->n_stop = j;
                release_slot(b, i);
                return hsd_eng_oom();
            }
        }
        s->n_stop = p.n_stop;
        p.stop = (const char *const *)s->stop;
    }
    p.on_text = collect;
    p.user_data = b;
    hsd_eng_seq *g = &b->rq.sq[i];
    memset(g, 0, sizeof *g);
    g->prompt_tids = ids;
    g->n_prompt_tids = n_ids;
    s->t_start = hsd_timer_ms();
    st = hsd_eng_start_seq(&b->rq, i, &p, algo, ids ? "" : prompt, ids ? 0 : len);
    g->prompt_tids = NULL;
    if (st) {
        release_slot(b, i);
        return st;
    }
    if (!g->live) g->t_end = s->t_start; /* max_new_tokens 0: ends at the next step */
    s->used = true;
    s->id = b->next_id++;
    s->n_prompt = (int32_t)g->T.ids.n;
    snprintf(s->reason, sizeof s->reason, "%s", reason);
    b->n_active++;
    *id = s->id;
    return HSD_OK;
}

hsd_status hsd_batch_add(hsd_batch *b, const char *prompt, size_t len,
                         const hsd_gen_params *params, int64_t *id) {
    if (!b || !id || (!prompt && len))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_batch_add: NULL %s",
                         !b ? "batch" : !id ? "id" : "prompt with len > 0");
    return add(b, prompt ? prompt : "", len, NULL, 0, params, id);
}

hsd_status hsd_batch_add_ids(hsd_batch *b, const int32_t *ids, size_t n_ids,
                             const hsd_gen_params *params, int64_t *id) {
    static const int32_t none[1] = {0};
    if (!b || !id || (!ids && n_ids))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_batch_add_ids: NULL %s",
                         !b ? "batch" : !id ? "id" : "ids with n_ids > 0");
    return add(b, NULL, 0, ids ? ids : none, n_ids, params, id);
}

hsd_status hsd_batch_cancel(hsd_batch *b, int64_t id) {
    if (!b) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_batch_cancel: NULL batch");
    for (int32_t i = 0; i < b->rq.B; i++)
        if (b->sl[i].used && b->sl[i].id == id) {
            clear_events(b);
            release_slot(b, i);
            return HSD_OK;
        }
    return hsd_error(HSD_ERR_INVALID_ARG, "hsd_batch_cancel: no active sequence %lld",
                     (long long)id);
}

hsd_status hsd_batch_step(hsd_batch *b, const hsd_batch_event **events, int32_t *n_events) {
    if (events) *events = NULL;
    if (n_events) *n_events = 0;
    if (!b || !events || !n_events)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_batch_step: NULL %s",
                         !b ? "batch" : !events ? "events" : "n_events");
    clear_events(b);
    hsd_eng_request *rq = &b->rq;
    bool any = false;
    hsd_status s = hsd_eng_plan(rq, &any);
    if (!s && any && !(s = hsd_eng_prefill_all(rq)) && !(s = hsd_eng_draft_all(rq)) &&
        !(s = hsd_eng_verify_all(rq)))
        s = hsd_eng_after_round(rq);
    if (s) {
        /* a failed round leaves the caches unknown: every sequence is dropped */
        for (int32_t i = 0; i < rq->B; i++)
            if (b->sl[i].used) release_slot(b, i);
        return s;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < rq->B && !s; i++) {
        slot *sl = &b->sl[i];
        hsd_eng_seq *g = &rq->sq[i];
        if (!sl->used || (!g->done && sl->piece.n == 0 && sl->piece_ids.n == 0)) continue;
        hsd_batch_event *ev = &b->ev[n++];
        memset(ev, 0, sizeof *ev);
        ev->size = sizeof *ev;
        ev->id = sl->id;
        ev->text = sl->piece.p ? sl->piece.p : "";
        ev->len = sl->piece.n;
        ev->ids = sl->piece_ids.p;
        ev->n_ids = (int32_t)sl->piece_ids.n;
        ev->n_prompt = sl->n_prompt;
        if (g->done) {
            s = hsd_eng_fill_result(b->e, g, sl->reason, sl->t_start, &sl->res);
            ev->done = true;
            ev->result = &sl->res;
            release_slot(b, i);
        }
    }
    if (s) {
        for (int32_t i = 0; i < rq->B; i++)
            if (b->sl[i].used) release_slot(b, i);
        return s;
    }
    *events = b->ev;
    *n_events = n;
    return HSD_OK;
}

/* Batch decoding (hsd_engine_generate_batch): B prompts, each with its own generation state
 * (committed text, bridge sides, RNG streams, KV slot i of both models), advanced in
 * lockstep rounds. A round of every live sequence runs the phases of lib/engine.c's rounds
 * (see lib/engine_internal.h); what is shared is the forwards:
 *   - drafting: draft position j of every sequence still drafting goes into one batched
 *     drafter forward (k forwards per round for the whole batch instead of k per sequence);
 *   - verification: the pending ids and candidates of all sequences go into ONE batched
 *     target forward.
 * Each sequence then verifies and emits on its own and finishes independently (EOS, stop
 * strings, its token budget, a full context); finished sequences leave the batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsd.h"
#include "lib/engine_internal.h"
#include "lib/error.h"

enum { MODE_AR, MODE_TL, MODE_SLEM };

typedef struct bseq {
    gen g;
    hsd_gen_params prm; /* the caller's, with seed + index */
    int32_t slot;
    bool live;
    int32_t k; /* draft length (adaptive k moves it) */
    double acc_ema;
    double t_first, t_end;
    /* the round in progress */
    int mode;
    int32_t kk, dj, before, drafted_before, acc_before, width, m;
    bool dstop;
    double t0;
} bseq;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static hsd_status oom(void) {
    return hsd_error(HSD_ERR_NOMEM, "out of memory");
}

/* Both models act on the sequence's slot (the phases truncate and query caches). */
static hsd_status select_slot(hsd_engine *e, const bseq *s) {
    hsd_status st = hsd_model_seq_select(e->tm, s->slot);
    if (!st && e->dm && s->g.algo != HSD_ALGO_AR) st = hsd_model_seq_select(e->dm, s->slot);
    return st;
}

static int grow(float **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    float *p = realloc(*buf, need * sizeof *p);
    if (!p) return -1;
    *buf = p;
    *cap = need;
    return 0;
}

/* Lockstep drafting: at each draft position, one drafter forward over the pending ids of
 * every sequence still drafting (the same inputs draft_tokens feeds one sequence at a time). */
static hsd_status draft_all(hsd_engine *e, bseq *sq, int32_t B, hsd_model_batch_seq *ent,
                            int32_t *idx, int32_t *last_row, float **dlog, size_t *dlog_cap) {
    hsd_status s = HSD_OK;
    double t0 = now_ms();
    bool any = false;
    for (int32_t i = 0; i < B; i++)
        if (sq[i].live && sq[i].mode != MODE_AR) {
            sq[i].dj = 0;
            sq[i].dstop = false;
            any = true;
        }
    if (!any) return HSD_OK;
    int32_t n_ctx_d = hsd_model_n_ctx(e->dm);
    for (;;) {
        int32_t nb = 0;
        for (int32_t i = 0; i < B && !s; i++) {
            bseq *q = &sq[i];
            if (!q->live || q->mode == MODE_AR || q->dstop || q->dj >= q->kk) continue;
            /* a drafter whose context is full stops proposing; the target goes on alone */
            if ((int32_t)q->g.D.ids.n + 1 >= n_ctx_d) {
                q->dstop = true;
                continue;
            }
            int32_t n;
            if ((s = select_slot(e, q)) ||
                (s = hsd_eng_feed_prepare(e->dm, &q->g.D, &q->g.d_kv, &n)))
                break;
            last_row[nb] = n - 1;
            ent[nb] =
                (hsd_model_batch_seq){q->slot, q->g.D.ids.p + q->g.d_kv, n, NULL, &last_row[nb], 1};
            idx[nb++] = i;
        }
        if (s || nb == 0) break;
        if (grow(dlog, dlog_cap, (size_t)nb * (size_t)e->vd)) return oom();
        if ((s = hsd_model_forward_batch(e->dm, ent, nb, *dlog))) break;
        for (int32_t b = 0; b < nb && !s; b++) {
            bseq *q = &sq[idx[b]];
            q->g.d_kv += ent[b].n;
            s = hsd_eng_draft_take(&q->g, *dlog + (size_t)b * e->vd, q->g.rd.d, &q->dj, q->width,
                                   &q->dstop);
        }
        if (s) break;
    }
    double t1 = now_ms();
    for (int32_t i = 0; i < B; i++)
        if (sq[i].live && sq[i].mode != MODE_AR) {
            sq[i].g.rd.kd = sq[i].dj;
            sq[i].g.rd.t1 = t1;
            sq[i].g.t_draft += t1 - t0; /* the batched drafting, shared */
        }
    return s;
}

/* Candidates of every live sequence, ONE target forward over all of them, then verification
 * and emission per sequence. */
static hsd_status verify_all(hsd_engine *e, bseq *sq, int32_t B, hsd_model_batch_seq *ent,
                             int32_t *idx, float **tlog, size_t *tlog_cap) {
    hsd_status s = HSD_OK;
    int32_t nb = 0;
    size_t rows = 0;
    for (int32_t i = 0; i < B && !s; i++) {
        bseq *q = &sq[i];
        if (!q->live) continue;
        if ((s = select_slot(e, q))) break;
        round_data *rd = &q->g.rd;
        const int32_t *cand = NULL;
        q->m = 0;
        if (q->mode == MODE_TL) {
            hsd_eng_tl_candidates(&q->g);
            cand = rd->vtok;
            q->m = rd->m;
        } else if (q->mode == MODE_SLEM) {
            if ((s = hsd_eng_slem_candidates(&q->g))) break;
            cand = rd->cand.p;
            q->m = rd->m;
        }
        if ((s = hsd_eng_target_request(&q->g, cand, q->m))) break;
        ent[nb] = (hsd_model_batch_seq){q->slot, rd->toks, rd->n_toks, NULL, rd->rows, q->m + 1};
        idx[nb++] = i;
        rows += (size_t)q->m + 1;
    }
    if (s || nb == 0) return s;
    if (grow(tlog, tlog_cap, rows * (size_t)e->vt)) return oom();
    if ((s = hsd_model_forward_batch(e->tm, ent, nb, *tlog))) return s;
    size_t off = 0;
    for (int32_t b = 0; b < nb && !s; b++) {
        bseq *q = &sq[idx[b]];
        const float *lg = *tlog + off * (size_t)e->vt;
        off += (size_t)q->m + 1;
        if ((s = select_slot(e, q))) break;
        if (q->mode == MODE_AR) {
            if (!(s = hsd_eng_target_probs(&q->g, lg, 0, e->vt)))
                s = hsd_eng_ar_finish(&q->g, q->t0);
        } else if (q->mode == MODE_TL) {
            if (!(s = hsd_eng_target_probs(&q->g, lg, q->m, q->width)))
                s = hsd_eng_tl_finish(&q->g);
        } else {
            if (!(s = hsd_eng_target_probs(&q->g, lg, q->m, e->vt))) s = hsd_eng_slem_finish(&q->g);
        }
    }
    return s;
}

/* The result of one sequence (as hsd_engine_generate fills it; times from the batch start). */
static hsd_status fill_result(hsd_engine *e, bseq *q, const char *reason, double t_start,
                              hsd_gen_result *res) {
    gen *g = &q->g;
    res->algo = g->algo;
    snprintf(res->reason, sizeof res->reason, "%s", reason);
    res->n_ids = (int32_t)g->out.n;
    res->ids = malloc((g->out.n ? g->out.n : 1) * sizeof *res->ids);
    if (!res->ids) return oom();
    if (g->out.n) memcpy(res->ids, g->out.p, g->out.n * sizeof *res->ids);
    hsd_status s = hsd_tokenizer_decode_alloc(e->tt, res->ids, (size_t)res->n_ids, true, &res->text,
                                              &res->text_len);
    if (s) return s;
    res->n_rounds = g->rounds;
    res->n_drafted = g->drafted;
    res->n_accepted = g->accepted;
    res->acceptance_rate = g->drafted ? (double)g->accepted / g->drafted : 0;
    res->tau = g->rounds ? (double)res->n_ids / g->rounds : 0;
    res->total_ms = q->t_end - t_start;
    res->ttft_ms = q->t_first > 0 ? q->t_first - t_start : res->total_ms;
    res->tpot_ms = res->n_ids > 1 ? (q->t_end - q->t_first) / (res->n_ids - 1) : 0;
    res->tokens_per_s = res->total_ms > 0 ? 1000.0 * res->n_ids / res->total_ms : 0;
    res->draft_ms = g->t_draft;
    res->verify_ms = g->t_verify;
    res->bridge_ms = g->t_bridge;
    return HSD_OK;
}

/* Checks the arguments; resolves the algorithm into *algo with the reason. */
static hsd_status check_args(hsd_engine *e, const char *const *prompts, const size_t *lens,
                             int32_t B, const hsd_gen_params *p, hsd_algo *algo, char *reason,
                             size_t reason_cap) {
    if (B < 1)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate_batch: %d prompts (need >= 1)",
                         B);
    for (int32_t i = 0; i < B; i++)
        if (!prompts[i] && (!lens || lens[i]))
            return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate_batch: prompt %d is NULL",
                             i);
    if (p->max_new_tokens < 0 || p->n_draft < 1 || p->n_draft > 63 ||
        (p->adaptive_k && (p->k_max < 1 || p->k_max > 63)))
        return hsd_error(
            HSD_ERR_INVALID_ARG,
            "hsd_engine_generate_batch: need max_new_tokens >= 0 and 1 <= n_draft, k_max <= 63");
    if (!strcmp(hsd_algo_name(p->algo), "?"))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate_batch: unknown algorithm %d",
                         (int)p->algo);
    *algo = p->algo;
    if (*algo == HSD_ALGO_AUTO)
        *algo = hsd_engine_auto_algo(e, reason, reason_cap);
    else
        snprintf(reason, reason_cap, "requested");
    if (*algo != HSD_ALGO_AR && *algo != HSD_ALGO_SD && *algo != HSD_ALGO_UNION &&
        *algo != HSD_ALGO_TLI && *algo != HSD_ALGO_SLEM)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "hsd_engine_generate_batch: algorithm %s is not supported in batch mode "
                         "(supported: ar, sd, union, tli, slem, auto); use hsd_engine_generate",
                         hsd_algo_name(*algo));
    if (*algo != HSD_ALGO_AR && !e->dm)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_engine_generate_batch: algorithm %s needs a drafter",
                         hsd_algo_name(*algo));
    if (*algo == HSD_ALGO_SD && !e->same_vocab)
        return hsd_error(
            HSD_ERR_INVALID_ARG,
            "hsd_engine_generate_batch: SD needs identical vocabularies; use tli, slem or union");
    int32_t nt = hsd_model_n_seq(e->tm), nd = *algo != HSD_ALGO_AR ? hsd_model_n_seq(e->dm) : B;
    if (nt < B || nd < B)
        return hsd_error(
            HSD_ERR_INVALID_ARG,
            "hsd_engine_generate_batch: %d prompts need %d sequence slots, the %s model has %d "
            "(load it with hsd_model_params.n_seq >= %d)",
            B, B, nt < B ? "target" : "draft", nt < B ? nt : nd, B);
    return HSD_OK;
}

hsd_status hsd_engine_generate_batch(hsd_engine *e, const char *const *prompts, const size_t *lens,
                                     int32_t n_prompts, const hsd_gen_params *params,
                                     hsd_gen_result *results) {
    if (!e || !prompts || !results)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate_batch: NULL %s",
                         !e         ? "engine"
                         : !prompts ? "prompts"
                                    : "results");
    const int32_t B = n_prompts;
    for (int32_t i = 0; i < B; i++) memset(&results[i], 0, sizeof results[i]);
    hsd_gen_params dp = hsd_gen_default_params();
    const hsd_gen_params *p = params ? params : &dp;
    hsd_algo algo = HSD_ALGO_AR;
    char reason[160] = "";
    hsd_status s = check_args(e, prompts, lens, B, p, &algo, reason, sizeof reason);
    if (s) return s;

    bseq *sq = calloc((size_t)B, sizeof *sq);
    hsd_model_batch_seq *ent = calloc((size_t)B, sizeof *ent);
    int32_t *idx = calloc((size_t)B, sizeof *idx), *last_row = calloc((size_t)B, sizeof *last_row);
    float *dlog = NULL, *tlog = NULL;
    size_t dlog_cap = 0, tlog_cap = 0;
    if (!sq || !ent || !idx || !last_row) {
        free(sq), free(ent), free(idx), free(last_row);
        return oom();
    }
    const int32_t t_sel = hsd_model_seq_current(e->tm),
                  d_sel = e->dm ? hsd_model_seq_current(e->dm) : 0;
    /* the slots are overwritten: the single-sequence prefix cache no longer holds */
    e->t_cached.n = e->d_cached.n = 0;
    double t_start = now_ms();
    for (int32_t i = 0; i < B && !s; i++) {
        bseq *q = &sq[i];
        q->prm = *p;
        q->prm.seed = p->seed + (uint64_t)i;
        q->slot = i;
        q->k = p->n_draft;
        q->acc_ema = 0.7;
        q->g.e = e;
        q->g.prm = &q->prm;
        q->g.algo = algo;
        if (!(s = select_slot(e, q))) {
            const char *pr = prompts[i] ? prompts[i] : "";
            s = hsd_eng_gen_setup(&q->g, pr, lens ? lens[i] : strlen(pr));
        }
        /* prefix caching is per engine, not per slot: start every slot empty */
        e->t_cached.n = e->d_cached.n = 0;
        q->live = !q->g.done && (int32_t)q->g.out.n < p->max_new_tokens;
        if (!q->live) q->t_end = t_start;
    }

    for (;;) {
        /* plan the round of every live sequence (as hsd_engine_generate's loop does) */
        bool any = false;
        for (int32_t i = 0; i < B && !s; i++) {
            bseq *q = &sq[i];
            if (!q->live) continue;
            gen *g = &q->g;
            int32_t room = hsd_model_n_ctx(e->tm) - (int32_t)g->T.ids.n - 1;
            if (room <= 0) { /* context full */
                q->live = false;
                q->t_end = now_ms();
                continue;
            }
            q->kk = q->k < room ? q->k : room;
            bool draft_full = false;
            if (algo != HSD_ALGO_AR) {
                int32_t droom = hsd_model_n_ctx(e->dm) - (int32_t)g->D.ids.n;
                if (droom < q->kk) q->kk = droom;
                draft_full = q->kk < 1;
            }
            q->mode = algo == HSD_ALGO_AR || draft_full ? MODE_AR
                      : algo == HSD_ALGO_SLEM           ? MODE_SLEM
                                                        : MODE_TL;
            q->width = hsd_eng_q_width(g);
            q->before = (int32_t)g->out.n;
            q->drafted_before = g->drafted;
            q->acc_before = g->accepted;
            q->t0 = now_ms();
            any = true;
        }
        if (s || !any) break;
        if (algo != HSD_ALGO_AR && (s = draft_all(e, sq, B, ent, idx, last_row, &dlog, &dlog_cap)))
            break;
        if ((s = verify_all(e, sq, B, ent, idx, &tlog, &tlog_cap))) break;
        double t = now_ms();
        for (int32_t i = 0; i < B && !s; i++) {
            bseq *q = &sq[i];
            if (!q->live) continue;
            gen *g = &q->g;
            if (q->before == 0 && g->out.n > 0) q->t_first = t;
            if (p->adaptive_k && g->drafted > q->drafted_before) {
                double a = (double)(g->accepted - q->acc_before) / (g->drafted - q->drafted_before);
                q->acc_ema = 0.8 * q->acc_ema + 0.2 * a;
                if (q->acc_ema > 0.8 && q->k < p->k_max)
                    q->k++;
                else if (q->acc_ema < 0.5 && q->k > 1)
                    q->k--;
            }
#ifndef NDEBUG
            if (!hsd_bridge_consistent(&g->T, &g->text))
                s = hsd_error(HSD_ERR_INTERNAL,
                              "bridge invariant broken in sequence %d after round %d", i,
                              g->rounds);
#endif
            if (g->done || (int32_t)g->out.n >= p->max_new_tokens) {
                q->live = false;
                q->t_end = t;
            }
        }
        if (s) break;
    }

    for (int32_t i = 0; i < B && !s; i++) s = fill_result(e, &sq[i], reason, t_start, &results[i]);
    for (int32_t i = 0; i < B; i++) hsd_eng_gen_free(&sq[i].g);
    /* the caller's slot selection is restored; the caches hold what the batch left */
    hsd_model_seq_select(e->tm, t_sel);
    if (e->dm) hsd_model_seq_select(e->dm, d_sel);
    if (s)
        for (int32_t i = 0; i < B; i++) hsd_gen_result_free(&results[i]);
    free(sq), free(ent), free(idx), free(last_row), free(dlog), free(tlog);
    return s;
}

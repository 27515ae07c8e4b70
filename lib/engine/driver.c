/* The decoding driver: the one loop behind hsd_engine_generate (a batch of one) and
 * hsd_engine_generate_batch. Each prompt is a sequence with its own state (committed text,
 * bridge sides, RNG streams, a KV slot of both models, lib/engine/seq.c); the sequences
 * advance in lockstep rounds, each round made of the phases of its algorithm's round
 * (lib/engine/engine.h, round_*.c). What is shared between sequences is the forwards:
 *   - chain drafting: draft position j of every sequence still drafting goes into one
 *     batched drafter forward;
 *   - verification: the pending ids and candidates of all sequences go into ONE batched
 *     target forward.
 * A request of one sequence calls hsd_model_forward directly (no batching overhead).
 * Each sequence then verifies and emits on its own and finishes independently (EOS, stop
 * strings, its token budget, its context, the streaming callback). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/engine/engine.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/params.h"
#include "lib/base/timer.h"
#include "tokenize/tokenizer.h"

/* One call (or a running batch, lib/engine/step.c): engine.h's hsd_eng_request. */
typedef hsd_eng_request request;

static int grow(float **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    float *p = realloc(*buf, need * sizeof *p);
    if (!p) return -1;
    *buf = p;
    *cap = need;
    return 0;
}

/* One forward over the entries: hsd_model_forward for a request of one sequence (its slot
 * selected), else one batched forward (also when one sequence is left: the batched path
 * stays the same for the whole request). */
static hsd_status forward(const request *rq, hsd_model *m, const hsd_model_batch_seq *ent,
                          int32_t nb, float *logits) {
    if (rq->B > 1) return hsd_model_forward_batch(m, ent, nb, logits);
    hsd_status s = hsd_model_seq_select(m, ent[0].seq);
    if (!s)
        s = hsd_model_forward(m, ent[0].tokens, ent[0].n, ent[0].parents, ent[0].rows,
                              ent[0].n_rows, logits);
    return s;
}

/* The parameters' checks (shared with the running batch, step.c); resolves the algorithm
 * into *algo with the reason. */
hsd_status hsd_eng_check_params(hsd_engine *e, const char *fn, const hsd_gen_params *p,
                                hsd_algo *algo, char *reason, size_t cap) {
    if (p->max_new_tokens < 0 || p->n_draft < 1 || p->n_draft > HSD_ENG_MAX_K ||
        ((p->adaptive_k || p->cost_k) && (p->k_max < 1 || p->k_max > HSD_ENG_MAX_K)))
        return hsd_error(
            HSD_ERR_INVALID_ARG,
            "%s: need max_new_tokens >= 0 and 1 <= n_draft, k_max <= %d (got %d, %d, %d)", fn,
            HSD_ENG_MAX_K, (int)p->max_new_tokens, (int)p->n_draft, (int)p->k_max);
    if (isnan(p->temp) || isnan(p->top_p))
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: temp and top_p must be numbers", fn);
    if (p->n_stop < 0 || (p->n_stop > 0 && !p->stop))
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: %d stop strings with stop %s", fn,
                         (int)p->n_stop, p->stop ? "given" : "NULL");
    if ((unsigned)p->slrs_lookahead > 2)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: slrs_lookahead must be 0, 1 or 2 (got %d)", fn,
                         (int)p->slrs_lookahead);
    if (p->n_ctx < 0)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: n_ctx %d must be >= 0", fn, (int)p->n_ctx);
    if ((unsigned)p->algo > HSD_ALGO_AUTO)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: unknown algorithm %d", fn, (int)p->algo);
    *algo = p->algo;
    if (*algo == HSD_ALGO_AUTO)
        *algo = hsd_engine_auto_algo(e, reason, cap);
    else
        snprintf(reason, cap, "requested");
    if (*algo != HSD_ALGO_AR && !e->dm)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: algorithm %s needs a drafter", fn,
                         hsd_algo_name(*algo));
    if (*algo == HSD_ALGO_SD && !e->same_vocab)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "%s: SD needs identical vocabularies; use tli, slem or union", fn);
    int32_t train = hsd_model_n_ctx_train(e->tm);
    if (p->n_ctx > 0 && train > 0 && p->n_ctx > train)
        hsd_log(HSD_LOG_WARN,
                "%s: n_ctx %d runs past the %d positions the target was trained for; output "
                "quality degrades there",
                fn, (int)p->n_ctx, (int)train);
    return HSD_OK;
}

/* Checks everything once; resolves the algorithm into *algo with the reason. */
static hsd_status check_args(const request *rq, const char *const *prompts, const size_t *lens,
                             const hsd_gen_params *p, hsd_algo *algo, char *reason, size_t cap) {
    const char *fn = rq->fn;
    hsd_engine *e = rq->e;
    int32_t B = rq->B;
    if (B < 1) return hsd_error(HSD_ERR_INVALID_ARG, "%s: %d prompts (need >= 1)", fn, B);
    for (int32_t i = 0; i < B; i++)
        if (!prompts[i] && (!lens || lens[i]))
            return hsd_error(HSD_ERR_INVALID_ARG, "%s: prompt %d is NULL", fn, i);
    hsd_status s = hsd_eng_check_params(e, fn, p, algo, reason, cap);
    if (s) return s;
    if (!rq->single) {
        int32_t nt = hsd_model_n_seq(e->tm), nd = *algo != HSD_ALGO_AR ? hsd_model_n_seq(e->dm) : B;
        if (nt < B || nd < B)
            return hsd_error(HSD_ERR_INVALID_ARG,
                             "%s: %d prompts need %d sequence slots, the %s model has %d "
                             "(load it with hsd_model_params.n_seq >= %d)",
                             fn, B, B, nt < B ? "target" : "draft", nt < B ? nt : nd, B);
    }
    return HSD_OK;
}

void hsd_eng_end_seq(hsd_eng_seq *g, hsd_stop_reason why, double t) {
    if (!g->done) g->done = true, g->stop = why;
    g->live = false;
    g->t_end = t;
}

/* Plans the round of every live sequence: its draft length and its round (AR once the
 * drafter's context is full). *any: whether a sequence is live. */
hsd_status hsd_eng_plan(request *rq, bool *any) {
    *any = false;
    for (int32_t i = 0; i < rq->B; i++) {
        hsd_eng_seq *g = &rq->sq[i];
        if (!g->live) continue;
        /* the committed ids never outgrow the context: a round emits at most its
         * candidates + 1, so at most room - 1 candidates (0: a plain target step), and every
         * algorithm stops with the same number of ids there */
        int32_t room = g->t_limit - (int32_t)g->T.ids.n;
        if (room <= 0) { /* the context is full: a clean stop */
            hsd_eng_end_seq(g, HSD_STOP_CONTEXT, hsd_timer_ms());
            hsd_status s = hsd_eng_stream(g, true);
            if (s) return s;
            continue;
        }
        g->kk = g->k < room - 1 ? g->k : room - 1;
        /* the drafter's context is its own (it may be shorter, or spell the text in more
         * tokens): when the text outgrows it, the drafter goes on from a trailing window of
         * the text (draft_window.c). Only a context too small for any window leaves plain
         * target steps, with a notice: the output stays exact either way. */
        bool draft_full = g->kk < 1;
        if (g->round->drafts && !draft_full) {
            int32_t need = g->kk + 2; /* the drafts, the pending id, the lockstep's margin */
            if (g->algo == HSD_ALGO_SLRS) /* its tree's nodes go through the cache too */
                need += g->prm->slrs_max_nodes < g->d_limit / 4 ? g->prm->slrs_max_nodes
                                                                : g->d_limit / 4;
            hsd_status s = hsd_eng_seq_select(g);
            if (!s) s = hsd_eng_window_fit(g, need);
            if (s) return s;
            int32_t droom = g->d_limit - (int32_t)g->D.ids.n;
            if (droom < g->kk) g->kk = droom;
            draft_full = g->kk < 1;
            if (draft_full && !g->warned_no_draft) {
                g->warned_no_draft = true;
                hsd_log(HSD_LOG_WARN,
                        "sequence %d: the drafter's context of %d positions leaves no room to "
                        "draft; the target goes on alone",
                        (int)g->index, (int)g->d_limit);
            }
        }
        g->cur = draft_full ? &hsd_eng_round_ar : g->round;
        g->width = hsd_eng_q_width(g);
        g->before = (int32_t)g->out.n;
        g->drafted_before = g->drafted;
        g->acc_before = g->accepted;
        g->rd.kd = 0;
        g->rd.cpar = NULL; /* a chain unless the round builds a tree */
        g->rd.depth = 0;
        g->t0 = hsd_timer_ms();
        *any = true;
    }
    return HSD_OK;
}

/* Drafting: rounds with their own drafting run it one sequence at a time; chain rounds are
 * fed in lockstep, one drafter forward per draft position for all of them. */
hsd_status hsd_eng_draft_all(request *rq) {
    hsd_engine *e = rq->e;
    hsd_status s = HSD_OK;
    double t0 = hsd_timer_ms();
    bool chain = false;
    for (int32_t i = 0; i < rq->B && !s; i++) {
        hsd_eng_seq *g = &rq->sq[i];
        if (!g->live || !g->cur->drafts) continue;
        g->dj = 0;
        g->dstop = false;
        if (g->cur->draft) {
            if (!(s = hsd_eng_seq_select(g))) s = g->cur->draft(g);
        } else {
            chain = true;
            if (g->cur->draft_begin && !(s = hsd_eng_seq_select(g))) s = g->cur->draft_begin(g);
            /* the first draft from the drafter's prefill row, when it is still this
             * position's (SLEM's healing moves the root): no forward for it */
            const float *carry = s ? NULL : hsd_eng_take_carry(g);
            if (carry && (int32_t)g->D.ids.n + 1 < g->d_limit) s = g->cur->draft_take(g, carry);
        }
    }
    while (chain && !s) {
        int32_t nb = 0;
        for (int32_t i = 0; i < rq->B && !s; i++) {
            hsd_eng_seq *g = &rq->sq[i];
            if (!g->live || !g->cur->draft_take || g->dstop || g->dj >= g->kk) continue;
            /* a drafter whose context is full stops proposing; the target goes on alone */
            if ((int32_t)g->D.ids.n + 1 >= g->d_limit) {
                g->dstop = true;
                continue;
            }
            int32_t n;
            if ((s = hsd_eng_seq_select(g)) ||
                (s = hsd_eng_feed_prepare(e->dm, &g->D, &g->d_kv, &n)))
                break;
            rq->last_row[nb] = n - 1;
            rq->ent[nb] = (hsd_model_batch_seq){sizeof(hsd_model_batch_seq), g->d_slot, g->D.ids.p + g->d_kv, n,
                                                NULL,      &rq->last_row[nb],    1};
            rq->idx[nb++] = i;
        }
        if (s || nb == 0) break;
        if (grow(&rq->dlog, &rq->dlog_cap, (size_t)nb * (size_t)e->vd)) return hsd_eng_oom();
        if ((s = forward(rq, e->dm, rq->ent, nb, rq->dlog))) break;
        for (int32_t b = 0; b < nb && !s; b++) {
            hsd_eng_seq *g = &rq->sq[rq->idx[b]];
            g->d_kv += rq->ent[b].n;
            s = g->cur->draft_take(g, rq->dlog + (size_t)b * e->vd);
        }
    }
    double t1 = hsd_timer_ms();
    int32_t drafts = 0; /* the lockstep's length: its longest chain */
    for (int32_t i = 0; i < rq->B; i++) {
        hsd_eng_seq *g = &rq->sq[i];
        if (!g->live) continue;
        g->rd.t1 = g->cur->drafts ? t1 : g->t0;
        if (g->cur->draft_take) {
            g->rd.kd = g->dj;
            g->t_draft += t1 - t0; /* the lockstep drafting, shared */
            if (g->dj > drafts) drafts = g->dj;
        }
    }
    rq->draft_ms = t1 - t0;
    if (!s && chain) hsd_kcost_draft(&e->kc, drafts, t1 - t0);
    return s;
}

/* Candidates of every live sequence, the target's prefill, ONE target forward over all of
 * them, then verification and emission per sequence. When no sequence has candidates (AR,
 * or nothing drafted) the prefill takes every pending id and its rows are the round's: no
 * forward follows (prefill.c says why the last id otherwise waits for this forward). */
hsd_status hsd_eng_verify_all(request *rq) {
    hsd_engine *e = rq->e;
    hsd_status s = HSD_OK;
    bool any_cand = false;
    for (int32_t i = 0; i < rq->B && !s; i++) {
        hsd_eng_seq *g = &rq->sq[i];
        if (!g->live) continue;
        if (!(s = hsd_eng_seq_select(g))) s = g->cur->candidates(g, &g->rd.cand_ids, &g->m, &g->width);
        any_cand |= g->m > 0;
    }
    if (!s) s = hsd_eng_prefill_targets(rq, !any_cand);
    int32_t nb = 0;
    size_t rows = 0;
    for (int32_t i = 0; i < rq->B && !s; i++) {
        hsd_eng_seq *g = &rq->sq[i];
        if (!g->live || g->rd.served) continue;
        if ((s = hsd_eng_seq_select(g)) || (s = hsd_eng_target_request(g, g->rd.cand_ids, g->m)))
            break;
        rq->ent[nb] = (hsd_model_batch_seq){sizeof(hsd_model_batch_seq), g->t_slot,    g->rd.toks,
                                            g->rd.n_toks, g->rd.cpar ? g->rd.tpar : NULL,
                                            g->rd.rows,   g->m + 1};
        rq->idx[nb++] = i;
        rows += (size_t)g->m + 1;
    }
    rq->fwd_ms = 0, rq->fwd_toks = 0, rq->fwd_clean = false;
    if (!s && nb > 0) {
        if (grow(&rq->tlog, &rq->tlog_cap, rows * (size_t)e->vt)) return hsd_eng_oom();
        int32_t pend = 0; /* ids before the candidates: one per sequence, unless a prompt
                           * rides along (a first round), which is no verification's cost */
        for (int32_t b = 0; b < nb; b++)
            rq->fwd_toks += rq->ent[b].n, pend += rq->ent[b].n - rq->sq[rq->idx[b]].m;
        double t0 = hsd_timer_ms();
        s = forward(rq, e->tm, rq->ent, nb, rq->tlog);
        rq->fwd_ms = hsd_timer_ms() - t0;
        rq->fwd_clean = pend <= 2 * nb;
        if (!s && rq->fwd_clean) hsd_kcost_target(&e->kc, rq->fwd_toks, rq->fwd_ms);
    }
    size_t off = 0;
    for (int32_t b = 0; b < nb && !s; b++) {
        hsd_eng_seq *g = &rq->sq[rq->idx[b]];
        const float *lg = rq->tlog + off * (size_t)e->vt;
        off += (size_t)g->m + 1;
        if (!(s = hsd_eng_seq_select(g)) && !(s = hsd_eng_target_probs(g, lg, g->m, g->width)))
            s = g->cur->finish(g);
    }
    /* the sequences the prefill served: their p row 0 is written */
    for (int32_t i = 0; i < rq->B && !s; i++) {
        hsd_eng_seq *g = &rq->sq[i];
        if (g->live && g->rd.served && !(s = hsd_eng_seq_select(g))) s = g->cur->finish(g);
    }
    return s;
}

/* After a round: first-token time, adaptive k, streaming, the end of finished sequences. */
hsd_status hsd_eng_after_round(request *rq) {
    double t = hsd_timer_ms();
    hsd_status s = HSD_OK;
    for (int32_t i = 0; i < rq->B && !s; i++) {
        hsd_eng_seq *g = &rq->sq[i];
        if (!g->live) continue;
        const hsd_gen_params *p = g->prm; /* a running batch mixes requests' parameters */
        if (g->before == 0 && g->out.n > 0) g->t_first = t;
        if (g->cur->drafts) g->k_sum += g->kk, g->k_rounds++;
        /* a tree's rate is accepted over its depth (its nodes are alternatives) */
        int32_t den = g->rd.depth > 0 ? g->rd.depth : g->drafted - g->drafted_before;
        if (p->cost_k && g->cur->drafts && g->cur->draft_take && rq->fwd_toks > 0 && !g->rd.served) {
            /* the round's work outside the two forwards (bridge, sampling, the drafter's
             * catch-up feed), then the text's acceptance, then the next k (k_cost.c) */
            if (rq->fwd_clean) hsd_kcost_over(&rq->e->kc, (t - g->t0) - rq->draft_ms - rq->fwd_ms);
            hsd_kcost_round(&g->kc, g->kk, g->m, den, g->accepted - g->acc_before);
            g->k = hsd_kcost_choose(&rq->e->kc, &g->kc, g->kk, p->k_max,
                                    rq->fwd_toks - g->rd.n_toks);
        } else if (p->adaptive_k && !p->cost_k && den > 0) {
            double a = (double)(g->accepted - g->acc_before) / den;
            g->acc_ema = 0.8 * g->acc_ema + 0.2 * a;
            if (g->acc_ema > 0.8 && g->k < p->k_max)
                g->k++;
            else if (g->acc_ema < 0.5 && g->k > 1)
                g->k--;
        }
#ifndef NDEBUG
        /* invariant: the committed target ids spell the committed text, nothing lost or
         * duplicated (the drafter's side may legitimately differ for normalizing
         * tokenizers, which only costs acceptance) */
        if (!hsd_bridge_consistent(&g->T, &g->text))
            s = hsd_error(HSD_ERR_INTERNAL, "bridge invariant broken in sequence %d after round %d",
                          i, g->rounds);
#endif
        if (!s) s = hsd_eng_stream(g, g->done);
        if (g->done) hsd_eng_end_seq(g, g->stop, t);
    }
    return s;
}

/* The result of one sequence (times from the start of the request). */
hsd_status hsd_eng_fill_result(hsd_engine *e, hsd_eng_seq *g, const char *reason, double t_start,
                              hsd_gen_result *res) {
    res->size = sizeof *res; /* the library's own result; hsd_eng_result_export copies it out */
    res->algo = g->algo;
    res->reason = strdup(reason);
    if (!res->reason) return hsd_eng_oom();
    if (g->algo == HSD_ALGO_SLRS) { /* the per-algorithm statistics, only where they exist */
        res->slrs = calloc(1, sizeof *res->slrs);
        if (!res->slrs) return hsd_eng_oom();
        res->slrs->size = sizeof *res->slrs;
    }
    res->n_ids = (int32_t)g->out.n;
    res->ids = malloc((g->out.n ? g->out.n : 1) * sizeof *res->ids);
    if (!res->ids) return hsd_eng_oom();
    if (g->out.n) memcpy(res->ids, g->out.p, g->out.n * sizeof *res->ids);
    hsd_status s = hsd_tokenizer_decode_alloc(e->tt, res->ids, (size_t)res->n_ids, true, &res->text,
                                              &res->text_len);
    if (s) return s;
    res->stop_reason = g->stop;
    res->n_rounds = g->rounds;
    res->n_drafted = g->drafted;
    res->n_accepted = g->accepted;
    res->k_mean = g->k_rounds ? (double)g->k_sum / g->k_rounds : 0;
    res->acceptance_rate = g->drafted ? (double)g->accepted / g->drafted : 0;
    res->first_accept_rate = g->first_tried ? (double)g->first_acc / g->first_tried : 0;
    res->tau = g->rounds ? (double)res->n_ids / g->rounds : 0;
    res->total_ms = g->t_end - t_start;
    res->ttft_ms = g->t_first > 0 ? g->t_first - t_start : res->total_ms;
    res->tpot_ms = res->n_ids > 1 ? (g->t_end - g->t_first) / (res->n_ids - 1) : 0;
    res->tokens_per_s = res->total_ms > 0 ? 1000.0 * res->n_ids / res->total_ms : 0;
    res->draft_ms = g->t_draft;
    res->verify_ms = g->t_verify;
    res->bridge_ms = g->t_bridge;
    if (g->round->stats) g->round->stats(g, res);
    return HSD_OK;
}

static hsd_status remember_cache(hsd_ids *cached, const hsd_ids *ids, int32_t kv) {
    if (kv > (int32_t)ids->n) kv = (int32_t)ids->n;
    cached->n = 0;
    if (hsd_ids_reserve(cached, (size_t)kv)) return hsd_eng_oom();
    if (kv) memcpy(cached->p, ids->p, (size_t)kv * sizeof(int32_t));
    cached->n = (size_t)kv;
    return HSD_OK;
}

static const hsd_eng_round *round_of(hsd_algo a) {
    switch (a) {
    case HSD_ALGO_SD:
    case HSD_ALGO_UNION:
    case HSD_ALGO_TLI:
        return &hsd_eng_round_token;
    case HSD_ALGO_SLEM:
        return &hsd_eng_round_slem;
    case HSD_ALGO_SLRS:
        return &hsd_eng_round_slrs;
    default:
        return &hsd_eng_round_ar;
    }
}

/* Sequence i: its parameters, slots, limits and prompt. */
hsd_status hsd_eng_start_seq(request *rq, int32_t i, const hsd_gen_params *p, hsd_algo algo,
                             const char *prompt, size_t len) {
    hsd_engine *e = rq->e;
    hsd_eng_seq *g = &rq->sq[i];
    rq->prm[i] = *p;
    if (!rq->seed_as_given) rq->prm[i].seed = p->seed + (uint64_t)i;
    g->e = e;
    g->prm = &rq->prm[i];
    g->index = i;
    g->algo = algo;
    g->round = g->cur = round_of(algo);
    /* a single request keeps the caller's selected slots and the engine's prefix cache */
    g->t_slot = rq->single ? hsd_model_seq_current(e->tm) : i;
    g->d_slot = rq->single && e->dm ? hsd_model_seq_current(e->dm) : i;
    g->t_limit = hsd_eng_ctx_limit(e->tm, p->n_ctx);
    g->d_limit = g->round->drafts ? hsd_eng_ctx_limit(e->dm, 0) : 0;
    if (!rq->single) e->t_cached.n = e->d_cached.n = 0; /* slots are overwritten */
    hsd_status s = hsd_eng_seq_select(g);
    if (!s) s = hsd_eng_seq_setup(g, prompt, len);
    g->live = !s && p->max_new_tokens > 0;
    if (g->live && (int64_t)g->T.ids.n + p->max_new_tokens > g->t_limit)
        hsd_log(HSD_LOG_INFO,
                "%s: prompt %d takes %zu of the context's %d positions: generation stops at the "
                "context (stop reason \"context\") before max_new_tokens %d",
                rq->fn, (int)i, g->T.ids.n, (int)g->t_limit, (int)p->max_new_tokens);
    if (!s && !g->live) g->done = true, g->stop = HSD_STOP_MAX_TOKENS;
    return s;
}

static hsd_status run(request *rq, const char *const *prompts, const size_t *lens,
                      const hsd_gen_params *params, hsd_gen_result *results) {
    hsd_engine *e = rq->e;
    hsd_gen_params dp = hsd_gen_default_params();
    hsd_status s = hsd_params_read(&dp, sizeof dp, params, rq->fn, "params",
                                   "hsd_gen_default_params()");
    if (s) return s;
    const hsd_gen_params *p = &dp;
    hsd_algo algo = HSD_ALGO_AR;
    char reason[512] = ""; /* the resolver's one-line reason; the result gets a copy */
    s = check_args(rq, prompts, lens, p, &algo, reason, sizeof reason);
    if (s) return s;
    int32_t B = rq->B;
    rq->sq = calloc((size_t)B, sizeof *rq->sq);
    rq->prm = calloc((size_t)B, sizeof *rq->prm);
    rq->ent = calloc((size_t)B, sizeof *rq->ent);
    rq->idx = calloc((size_t)B, sizeof *rq->idx);
    rq->last_row = calloc((size_t)B, sizeof *rq->last_row);
    if (!rq->sq || !rq->prm || !rq->ent || !rq->idx || !rq->last_row) s = hsd_eng_oom();
    const int32_t t_sel = hsd_model_seq_current(e->tm),
                  d_sel = e->dm ? hsd_model_seq_current(e->dm) : 0;
    double t_start = hsd_timer_ms();
    for (int32_t i = 0; i < B && !s; i++) {
        const char *pr = prompts[i] ? prompts[i] : "";
        s = hsd_eng_start_seq(rq, i, p, algo, pr, lens ? lens[i] : strlen(pr));
        if (!s && !rq->sq[i].live) rq->sq[i].t_end = t_start;
    }
    for (bool any = true; !s && !(s = hsd_eng_plan(rq, &any)) && any;) {
        if ((s = hsd_eng_prefill_all(rq)) || (s = hsd_eng_draft_all(rq)) ||
            (s = hsd_eng_verify_all(rq)))
            break;
        s = hsd_eng_after_round(rq);
    }
    /* what the caches hold now (a failed round leaves them unknown: forget them) */
    e->t_cached.n = e->d_cached.n = 0;
    if (!s && rq->single) {
        hsd_eng_seq *g = &rq->sq[0];
        s = remember_cache(&e->t_cached, &g->T.ids, g->t_kv);
        if (!s && g->round->drafts) s = remember_cache(&e->d_cached, &g->D.ids, g->d_kv);
    }
    for (int32_t i = 0; i < B && !s; i++)
        s = hsd_eng_fill_result(e, &rq->sq[i], reason, t_start, &results[i]);
    for (int32_t i = 0; rq->sq && i < B; i++) hsd_eng_seq_free(&rq->sq[i]);
    /* the caller's slot selection is restored */
    hsd_model_seq_select(e->tm, t_sel);
    if (e->dm) hsd_model_seq_select(e->dm, d_sel);
    if (s)
        for (int32_t i = 0; i < B; i++) hsd_gen_result_free(&results[i]);
    free(rq->sq), free(rq->prm), free(rq->ent), free(rq->idx), free(rq->last_row);
    free(rq->dlog), free(rq->tlog);
    return s;
}

/* A caller's result array: element i at base + i * size, where size is what the caller's
 * header says (results[0].size); at least the size field, and the same for every element. */
static hsd_status check_result_sizes(const char *fn, const hsd_gen_result *res, int32_t n) {
    size_t size = res->size;
    if (size < HSD_PARAMS_MIN_SIZE)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "%s: result size is %zu: set it before the call (HSD_GEN_RESULT_INIT, or "
                         "hsd_gen_results_init for an array)",
                         fn, size);
    for (int32_t i = 1; i < n; i++) {
        size_t si = hsd_params_size(hsd_params_at(res, size, (size_t)i));
        if (si != size)
            return hsd_error(HSD_ERR_INVALID_ARG,
                             "%s: results[%d].size is %zu but results[0].size is %zu (set every "
                             "element with hsd_gen_results_init)",
                             fn, (int)i, si, size);
    }
    return HSD_OK;
}

/* Copies the library's result `own` into the caller's (dst_size bytes, the caller's header):
 * the fields the caller knows move over (dst then owns their allocations); anything the
 * library allocated past the caller's size is released here, since the caller cannot. */
#define RESULT_HAS(size, field) ((size) >= offsetof(hsd_gen_result, field) + sizeof(((hsd_gen_result *)0)->field))
static void result_export(hsd_gen_result *own, void *dst, size_t dst_size) {
    size_t n = dst_size < sizeof *own ? dst_size : sizeof *own;
    /* an older caller's result lacks these fields: nobody could free them there */
    if (!RESULT_HAS(dst_size, reason)) hsd_free(own->reason);
    if (!RESULT_HAS(dst_size, slrs)) hsd_free(own->slrs);
    own->size = dst_size;
    memcpy(dst, own, n);
    memset(own, 0, sizeof *own);
}

hsd_status hsd_engine_generate(hsd_engine *e, const char *prompt, size_t len,
                               const hsd_gen_params *params, hsd_gen_result *res) {
    if (!e || !res || (!prompt && len))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate: NULL %s",
                         !e     ? "engine"
                         : !res ? "result"
                                : "prompt with len > 0");
    hsd_status s = check_result_sizes("hsd_engine_generate", res, 1);
    if (s) return s;
    size_t size = res->size;
    /* a failed call leaves nothing to free (the size stays) */
    memset(res, 0, size < sizeof *res ? size : sizeof *res);
    res->size = size;
    const char *ps[1] = {prompt ? prompt : ""};
    request rq = {.e = e, .fn = "hsd_engine_generate", .single = true, .B = 1};
    hsd_gen_result own = {.size = sizeof own};
    s = run(&rq, ps, &len, params, &own);
    if (!s) result_export(&own, res, size);
    return s;
}

hsd_status hsd_engine_generate_batch(hsd_engine *e, const char *const *prompts, const size_t *lens,
                                     int32_t n_prompts, const hsd_gen_params *params,
                                     hsd_gen_result *results) {
    if (!e || !prompts || !results)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate_batch: NULL %s",
                         !e         ? "engine"
                         : !prompts ? "prompts"
                                    : "results");
    request rq = {.e = e, .fn = "hsd_engine_generate_batch", .single = false, .B = n_prompts};
    if (n_prompts < 1) return run(&rq, prompts, lens, params, NULL); /* the count's error */
    hsd_status s = check_result_sizes("hsd_engine_generate_batch", results, n_prompts);
    if (s) return s;
    size_t size = results->size;
    for (int32_t i = 0; i < n_prompts; i++) {
        hsd_gen_result *r = (hsd_gen_result *)(void *)((char *)results + size * (size_t)i);
        memset(r, 0, size < sizeof *r ? size : sizeof *r);
        r->size = size;
    }
    hsd_gen_result *own = calloc((size_t)n_prompts, sizeof *own);
    if (!own) return hsd_eng_oom();
    s = run(&rq, prompts, lens, params, own);
    for (int32_t i = 0; !s && i < n_prompts; i++)
        result_export(&own[i], (char *)results + size * (size_t)i, size);
    free(own);
    return s;
}

void hsd_gen_result_free(hsd_gen_result *r) {
    if (!r) return;
    /* only the fields the result's size covers exist (a caller's older, shorter result) */
    hsd_free(r->ids);
    hsd_free(r->text);
    r->ids = NULL;
    r->text = NULL;
    r->n_ids = 0;
    if (RESULT_HAS(r->size, reason)) {
        hsd_free(r->reason);
        r->reason = NULL;
    }
    if (RESULT_HAS(r->size, slrs)) {
        hsd_free(r->slrs);
        r->slrs = NULL;
    }
}

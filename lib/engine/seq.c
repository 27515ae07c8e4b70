/* One sequence of a request: its state and the steps every round shares.
 *
 * Invariants kept every round:
 *   - the target's context is exactly the committed target ids (never re-tokenized), so the
 *     output law is the target's own whatever the drafter proposes;
 *   - text == surface bytes of the committed target ids (after the prompt's);
 *   - T.ids[0..t_kv) and D.ids[0..d_kv) are what the two KV caches hold; the remaining ids
 *     are "pending" and fed by the next forward. */
#include <stdlib.h>
#include <string.h>

#include "lib/engine/engine.h"
#include "lib/base/error.h"
#include "lib/base/timer.h"
#include "tokenize/tokenizer.h"

hsd_status hsd_eng_oom(void) {
    return hsd_error(HSD_ERR_NOMEM, "out of memory");
}

int32_t hsd_eng_ctx_limit(const hsd_model *m, int32_t override) {
    int32_t kv = hsd_model_n_ctx(m), train = hsd_model_n_ctx_train(m);
    int32_t allowed = override > 0 ? override : train > 0 ? train : kv;
    return allowed < kv ? allowed : kv;
}

hsd_status hsd_eng_seq_select(hsd_eng_seq *g) {
    /* a proposer (propose.c) drafts without a target model */
    hsd_status s = g->e->tm ? hsd_model_seq_select(g->e->tm, g->t_slot) : HSD_OK;
    if (!s && g->e->dm && g->algo != HSD_ALGO_AR) s = hsd_model_seq_select(g->e->dm, g->d_slot);
    return s;
}

/* An empty prompt leaves a side nothing to start from: say whose tokenizer and why. */
static hsd_status empty_prompt(const char *side, const hsd_tokenizer *tok, bool add_bos) {
    if (!add_bos)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "generate: empty prompt with add_bos off: the %s has no token to start "
                         "from",
                         side);
    return hsd_error(HSD_ERR_INVALID_ARG,
                     "generate: empty prompt and the %s tokenizer (%s) has no BOS to start from",
                     side, hsd_tok_name(tok));
}

/* Encodes the prompt for one side: optional BOS, then the text without post-processor. */
hsd_status hsd_eng_prompt_ids(const char *side, const hsd_tokenizer *tok, const char *prompt,
                              size_t len, bool add_bos, hsd_ids *ids) {
    int32_t *v = NULL;
    size_t n = 0;
    hsd_status s = hsd_tokenizer_encode_alloc(tok, prompt, len, false, &v, &n);
    if (s) return s;
    int32_t bos = hsd_tokenizer_bos_id(tok);
    if (add_bos && bos >= 0 && hsd_ids_push(ids, bos)) s = hsd_eng_oom();
    for (size_t i = 0; !s && i < n; i++)
        if (hsd_ids_push(ids, v[i])) s = hsd_eng_oom();
    hsd_free(v);
    if (!s && ids->n == 0) s = empty_prompt(side, tok, add_bos);
    return s;
}

/* A prompt given as target ids: used as they are, after the BOS when add_bos asks for one
 * and they do not start with it (as an encoded prompt gets it). */
static hsd_status given_ids(const hsd_engine *e, const int32_t *v, size_t n, bool add_bos,
                            hsd_ids *ids) {
    int32_t bos = hsd_tokenizer_bos_id(e->tt);
    if (add_bos && bos >= 0 && (n == 0 || v[0] != bos) && hsd_ids_push(ids, bos))
        return hsd_eng_oom();
    for (size_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= e->vt)
            return hsd_error(HSD_ERR_OUT_OF_RANGE,
                             "generate: prompt id %d at index %zu is outside the target's "
                             "vocabulary of %d",
                             (int)v[i], i, (int)e->vt);
        if (hsd_ids_push(ids, v[i])) return hsd_eng_oom();
    }
    if (ids->n == 0) return empty_prompt("target", e->tt, add_bos);
    return HSD_OK;
}

hsd_status hsd_eng_feed_prepare(hsd_model *m, hsd_bridge_side *side, int32_t *kv, int32_t *n_out) {
    int32_t n = (int32_t)side->ids.n - *kv;
    if (n <= 0) { /* nothing pending: recompute the last position */
        *kv = (int32_t)side->ids.n - 1;
        hsd_status s = hsd_model_kv_truncate(m, *kv);
        if (s) return s;
        n = 1;
    }
    *n_out = n;
    return HSD_OK;
}

hsd_status hsd_eng_feed_drafter(hsd_eng_seq *g, float *logits) {
    const float *carry = hsd_eng_take_carry(g); /* the prefill's row: no forward needed */
    if (carry) {
        memcpy(logits, carry, (size_t)g->e->vd * sizeof *logits);
        return HSD_OK;
    }
    int32_t n;
    hsd_status s = hsd_eng_feed_prepare(g->e->dm, &g->D, &g->d_kv, &n);
    if (s) return s;
    int32_t row = n - 1;
    s = hsd_model_forward(g->e->dm, g->D.ids.p + g->d_kv, n, NULL, &row, 1, logits);
    if (s) return s;
    g->d_kv += n;
    return HSD_OK;
}

hsd_status hsd_eng_commit_text(hsd_eng_seq *g, const int32_t *ids, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(g->e->tt, ids[i], &len);
        if (b && !hsd_tokenizer_is_special(g->e->tt, ids[i]) && hsd_buf_append(&g->text, b, len))
            return hsd_eng_oom();
    }
    if (!g->text.p && hsd_buf_append(&g->text, "", 0)) return hsd_eng_oom();
    return HSD_OK;
}

static void finish_with(hsd_eng_seq *g, hsd_stop_reason why) {
    g->done = true;
    g->stop = why;
}

/* Appends emitted target tokens, applying EOS, stop strings and the token budget. */
static hsd_status emit(hsd_eng_seq *g, const int32_t *toks, int32_t n) {
    int32_t eos = hsd_tokenizer_eos_id(g->e->tt);
    for (int32_t k = 0; k < n && !g->done; k++) {
        bool is_eos = toks[k] == eos || toks[k] == g->e->t_format_eos;
        for (int32_t j = 0; !is_eos && j < g->e->n_eos_extra; j++) is_eos = toks[k] == g->e->eos_extra[j];
        if (g->prm->stop_at_eos && is_eos) {
            finish_with(g, HSD_STOP_EOS);
            break;
        }
        if ((int32_t)g->out.n >= g->prm->max_new_tokens) {
            finish_with(g, HSD_STOP_MAX_TOKENS);
            break;
        }
        if (hsd_ids_push(&g->out, toks[k]) || hsd_ids_push(&g->T.ids, toks[k]))
            return hsd_eng_oom();
        hsd_status s = hsd_eng_commit_text(g, &toks[k], 1);
        if (s) return s;
        for (int32_t j = 0; j < g->prm->n_stop; j++) {
            const char *st = g->prm->stop[j];
            size_t sl = st ? strlen(st) : 0, gl = g->text.n - g->gen_text_start;
            if (sl && gl >= sl && memmem(g->text.p + g->gen_text_start, gl, st, sl))
                finish_with(g, HSD_STOP_STRING);
        }
    }
    if (!g->done && (int32_t)g->out.n >= g->prm->max_new_tokens)
        finish_with(g, HSD_STOP_MAX_TOKENS);
    return HSD_OK;
}

/* After target tokens were committed: realign the drafter and roll back its cache. */
hsd_status hsd_eng_sync_drafter(hsd_eng_seq *g) {
    double t0 = hsd_timer_ms();
    hsd_status s = HSD_OK;
    if (g->algo == HSD_ALGO_SD) {
        /* same vocabulary: the drafter's ids are the target's (from the window's start,
         * after its BOS, once the drafter's context slid: draft_window.c) */
        size_t pre = (size_t)g->sd_pre, base = (size_t)g->sd_base, c = 0;
        while (pre + c < g->D.ids.n && base + c < g->T.ids.n &&
               g->D.ids.p[pre + c] == g->T.ids.p[base + c])
            c++;
        g->D.ids.n = pre;
        for (size_t i = base; i < g->T.ids.n; i++)
            if (hsd_ids_push(&g->D.ids, g->T.ids.p[i])) return hsd_eng_oom();
        if ((int32_t)(pre + c) < g->d_kv) g->d_kv = (int32_t)(pre + c);
    } else {
        int32_t first;
        if ((s = hsd_bridge_resync(&g->D, &g->text, &first))) return s;
        if (first < g->d_kv) g->d_kv = first;
    }
    if (g->d_kv > (int32_t)g->D.ids.n) g->d_kv = (int32_t)g->D.ids.n;
    if (g->d_kv < hsd_model_kv_len(g->e->dm)) s = hsd_model_kv_truncate(g->e->dm, g->d_kv);
    hsd_bridge_advance(&g->T, &g->text);
    g->t_bridge += hsd_timer_ms() - t0;
    return s;
}

hsd_status hsd_eng_commit(hsd_eng_seq *g, int32_t acc, const int32_t *out, int32_t r) {
    /* the target's cache holds the old ids + the candidates: keep the accepted ones */
    g->t_kv = g->rd.n_old + acc;
    int32_t kvl = hsd_model_kv_len(g->e->tm);
    if (g->t_kv > kvl) g->t_kv = kvl;
    hsd_status s = hsd_model_kv_truncate(g->e->tm, g->t_kv);
    if (!s) s = emit(g, out, r);
    if (s) return s;
    if (g->t_kv > (int32_t)g->T.ids.n) g->t_kv = (int32_t)g->T.ids.n;
    return g->done || !g->cur->drafts ? HSD_OK : hsd_eng_sync_drafter(g);
}

/* Room for `rows` target probability rows (the verification space may be wider than T). */
static hsd_status ensure_prob_rows(hsd_eng_seq *g, int32_t rows) {
    if (rows > g->p_arg_cap) {
        int32_t *a = realloc(g->p_arg, (size_t)rows * sizeof *a);
        if (!a) return hsd_eng_oom();
        g->p_arg = a;
        g->p_arg_cap = rows;
    }
    size_t need = (size_t)rows * (size_t)(g->n_union > g->e->vt ? g->n_union : g->e->vt);
    if (need <= g->p_cap) return HSD_OK;
    float *b = realloc(g->p, need * sizeof *b);
    if (!b) return hsd_eng_oom();
    g->p = b;
    g->p_cap = need;
    return HSD_OK;
}

hsd_status hsd_eng_target_request(hsd_eng_seq *g, const int32_t *cand, int32_t m) {
    hsd_eng_round_data *r = &g->rd;
    int32_t pend;
    hsd_status s = hsd_eng_feed_prepare(g->e->tm, &g->T, &g->t_kv, &pend);
    if (s) return s;
    int32_t n = pend + m;
    if (n > r->toks_cap) {
        int32_t *t = realloc(r->toks, (size_t)n * sizeof *t);
        if (!t) return hsd_eng_oom();
        r->toks = t;
        r->toks_cap = n;
    }
    if (m + 1 > r->rows_cap) {
        int32_t *t = realloc(r->rows, (size_t)(m + 1) * sizeof *t);
        if (!t) return hsd_eng_oom();
        r->rows = t;
        r->rows_cap = m + 1;
    }
    if ((s = ensure_prob_rows(g, m + 1))) return s;
    memcpy(r->toks, g->T.ids.p + g->t_kv, (size_t)pend * sizeof *r->toks);
    if (m) memcpy(r->toks + pend, cand, (size_t)m * sizeof *r->toks);
    for (int32_t j = 0; j <= m; j++) r->rows[j] = pend - 1 + j;
    if (r->cpar) { /* a candidate tree hangs below the last pending id */
        if (n > r->tpar_cap) {
            int32_t *t = realloc(r->tpar, (size_t)n * sizeof *t);
            if (!t) return hsd_eng_oom();
            r->tpar = t;
            r->tpar_cap = n;
        }
        for (int32_t i = 0; i < pend; i++) r->tpar[i] = i - 1;
        for (int32_t j = 0; j < m; j++)
            r->tpar[pend + j] = r->cpar[j] >= 0 ? pend + r->cpar[j] : pend - 1;
    }
    r->n_toks = n;
    r->n_old = (int32_t)g->T.ids.n;
    return HSD_OK;
}

hsd_status hsd_eng_target_probs(hsd_eng_seq *g, const float *logits, int32_t m, int32_t width) {
    int32_t vt = g->e->vt;
    hsd_status s = HSD_OK;
    if (g->greedy) { /* one argmax pass per row and nothing written (g->p_arg) */
        for (int32_t j = 0; j <= m; j++) g->p_arg[j] = hsd_sample_greedy(logits + (size_t)j * vt, vt);
        return HSD_OK;
    }
    if ((s = hsd_sampler_ws_reserve(&g->sw, vt))) return s;
    for (int32_t j = 0; !s && j <= m; j++) {
        float *pr = g->p + (size_t)j * width;
        s = hsd_sample_probs_ws(&g->sw, logits + (size_t)j * vt, vt, &g->sp, pr);
        for (int32_t i = vt; i < width; i++) pr[i] = 0;
    }
    return s;
}

int32_t hsd_eng_q_width(const hsd_eng_seq *g) {
    return g->algo == HSD_ALGO_UNION ? g->n_union : g->e->vt;
}

/* Bytes at the end of a decoded text that may still change when more ids follow: an
 * incomplete UTF-8 character, or U+FFFD, which decoders write for one (a byte-fallback
 * sequence cut short) and replace once the rest arrives. */
static size_t unsettled_tail(const char *s, size_t n) {
    size_t t = hsd_bridge_pending_tail(s, n);
    while (n - t >= 3 && !memcmp(s + n - t - 3, "\xEF\xBF\xBD", 3)) t += 3;
    return t;
}

hsd_status hsd_eng_stream(hsd_eng_seq *g, bool final) {
    const hsd_gen_params *p = g->prm;
    if (!p->on_text || g->streamed_ids > (int32_t)g->out.n) return HSD_OK;
    /* the result's text is the decode of all ids: a piece is what that decode gained, so the
     * pieces add up to it exactly (decoders may look back across ids, e.g. byte fallback) */
    char *text = NULL;
    size_t n = 0;
    hsd_status s = hsd_tokenizer_decode_alloc(g->e->tt, g->out.p, g->out.n, true, &text, &n);
    if (s) return s;
    size_t end = final ? n : n - unsettled_tail(text, n);
    size_t from = g->streamed_bytes < end ? g->streamed_bytes : end;
    int32_t n_new = (int32_t)g->out.n - g->streamed_ids;
    if (end > from || n_new > 0) {
        bool go_on = p->on_text(p->user_data, g->index, text + from, end - from,
                                g->out.p + g->streamed_ids, n_new);
        g->streamed_bytes = end > g->streamed_bytes ? end : g->streamed_bytes;
        g->streamed_ids = (int32_t)g->out.n;
        if (!go_on && !g->done) finish_with(g, HSD_STOP_CALLBACK);
    }
    hsd_free(text);
    return HSD_OK;
}

void hsd_eng_seq_free(hsd_eng_seq *g) {
    hsd_buf_free(&g->text);
    hsd_ids_free(&g->T.ids);
    hsd_ids_free(&g->D.ids);
    hsd_ids_free(&g->out);
    free(g->dlog);
    free(g->d_carry);
    free(g->q);
    free(g->p);
    free(g->scratch);
    free(g->resid);
    free(g->p_arg);
    hsd_sampler_ws_free(&g->sw);
    hsd_sampler_ws_free(&g->dw);
    free(g->d2u);
    hsd_ids_free(&g->rd.cand);
    free(g->rd.toks);
    free(g->rd.rows);
    free(g->rd.tpar);
    if (g->round && g->round->seq_free) g->round->seq_free(g);
}

/* Keeps the longest prefix of the cache that the new ids share (at least one id stays
 * pending so the first forward yields logits). */
static hsd_status reuse_cache(hsd_model *m, const hsd_ids *cached, const hsd_ids *ids,
                              int32_t *kv) {
    size_t c = 0, kvl = (size_t)hsd_model_kv_len(m);
    while (c < cached->n && c < kvl && c + 1 < ids->n && cached->p[c] == ids->p[c]) c++;
    *kv = (int32_t)c;
    return hsd_model_kv_truncate(m, (int32_t)c);
}

hsd_status hsd_eng_seq_setup(hsd_eng_seq *g, const char *prompt, size_t len) {
    hsd_engine *e = g->e;
    const hsd_gen_params *p = g->prm;
    hsd_status s;
    g->sp = (hsd_sampler_params){p->temp, p->top_k, p->top_p};
    g->greedy = p->temp <= 0;
    hsd_rng_init(&g->rng_draft, p->seed, 1);
    hsd_rng_init(&g->rng_verify, p->seed, 2);
    /* an adaptive k starts within its bound (the q rows below are sized for both) */
    g->k = (p->adaptive_k || p->cost_k) && p->n_draft > p->k_max ? p->k_max : p->n_draft;
    g->acc_ema = 0.7;
    g->T.tok = e->tt;
    g->T.specials_silent = true;
    if (g->prompt_tids) {
        if ((s = given_ids(e, g->prompt_tids, g->n_prompt_tids, p->add_bos, &g->T.ids))) return s;
    } else if ((s = hsd_eng_prompt_ids("target", e->tt, prompt, len, p->add_bos, &g->T.ids))) {
        return s;
    }
    /* the prompt and at least one generated position must fit */
    if ((int32_t)g->T.ids.n >= g->t_limit)
        return hsd_error(HSD_ERR_OUT_OF_RANGE,
                         "generate: prompt %d is %zu target tokens, the context holds %d "
                         "(hsd_gen_params.n_ctx, the model's n_ctx)",
                         (int)g->index, g->T.ids.n, (int)g->t_limit);
    if ((s = hsd_eng_commit_text(g, g->T.ids.p, (int32_t)g->T.ids.n))) return s;
    g->gen_text_start = g->text.n;
    /* prompt tokens are frozen: bridge windows start where generation starts */
    g->T.seg = (int32_t)g->T.ids.n;
    g->T.seg_off = g->text.n;
    if ((s = reuse_cache(e->tm, &e->t_cached, &g->T.ids, &g->t_kv))) return s;
    int32_t k = (p->adaptive_k || p->cost_k) && p->k_max > p->n_draft ? p->k_max : p->n_draft;
    int32_t maxrows = (k > HSD_ENG_MAX_CAND ? k : HSD_ENG_MAX_CAND) + 1;
    if (g->algo != HSD_ALGO_AR) {
        g->D.tok = e->dt;
        if (g->algo == HSD_ALGO_SD) {
            for (size_t i = 0; i < g->T.ids.n; i++)
                if (hsd_ids_push(&g->D.ids, g->T.ids.p[i])) return hsd_eng_oom();
        } else if (g->prompt_tids) {
            /* the drafter reads the ids' text (surface bytes of the non-special ids) */
            if ((s = hsd_eng_prompt_ids("drafter", e->dt, g->text.p, g->text.n, p->add_bos, &g->D.ids)))
                return s;
        } else if ((s = hsd_eng_prompt_ids("drafter", e->dt, prompt, len, p->add_bos, &g->D.ids))) {
            return s;
        }
        g->D.seg = (int32_t)g->D.ids.n;
        g->D.seg_off = g->text.n;
        /* a prompt past the drafter's context: the driver's plan moves the drafter to a
         * window of the text (draft_window.c) */
        if ((int32_t)g->D.ids.n < g->d_limit &&
            (s = reuse_cache(e->dm, &e->d_cached, &g->D.ids, &g->d_kv)))
            return s;
        g->n_union = e->vt;
        if (g->algo == HSD_ALGO_UNION) {
            g->d2u = malloc((size_t)e->vd * sizeof *g->d2u);
            if (!g->d2u) return hsd_eng_oom();
            for (int32_t i = 0; i < e->vd; i++)
                g->d2u[i] = e->d2t[i] >= 0 ? e->d2t[i] : g->n_union++;
        }
        int32_t width = g->n_union > e->vd ? g->n_union : e->vd;
        g->dlog = malloc((size_t)e->vd * sizeof *g->dlog);
        g->d_carry = malloc((size_t)e->vd * sizeof *g->d_carry);
        g->q = malloc((size_t)(k + 1) * (size_t)width * sizeof *g->q);
        g->scratch = malloc((size_t)width * sizeof *g->scratch);
        g->resid = malloc((size_t)width * sizeof *g->resid);
        if (!g->dlog || !g->d_carry || !g->q || !g->scratch || !g->resid) return hsd_eng_oom();
    }
    return ensure_prob_rows(g, maxrows);
}

/* Draft-only proposals (hsd_proposer_*): SLEM's drafting for a target that is verified
 * elsewhere (vLLM's rejection sampler through bindings/python/hsd/vllm.py).
 *
 * Nothing here re-implements SLEM or the bridge. Each slot is an engine sequence
 * (hsd_eng_seq) of an engine without a target model, and a call runs exactly the part of an
 * engine round that comes before the target forward:
 *   - the slot's state is brought to the caller's context the way the engine brings a
 *     sequence from one round to the next (the new target ids committed as text, then
 *     hsd_eng_sync_drafter: bridge resync, drafter cache cut back, target segment advanced),
 *     or set up as hsd_eng_seq_setup sets up a prompt when the context does not extend it;
 *   - the draft phase of hsd_eng_round_slem (token healing, the best-first drafter tree),
 *     fed in lockstep like the driver's chain drafting: one batched drafter forward per
 *     draft position for all requests of the call;
 *   - its candidates phase (every drafter path re-tokenized by the target's tokenizer into
 *     the candidate trie, the 2k most probable nodes kept).
 * Of that trie the call returns one chain, the one with the most expected accepted tokens
 * (hsd_eng_slem_chain in round_slem.c): vLLM verifies one chain per request. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lib/engine/engine.h"
#include "lib/base/error.h"
#include "lib/base/params.h"
#include "lib/base/timer.h"
#include "tokenize/tokenizer.h"

struct hsd_proposer {
    struct hsd_engine e; /* the pair as the round sees it: no target model */
    hsd_proposer_params prm;
    hsd_gen_params gp; /* what a sequence points to (SLEM's phases read none of it) */
    int32_t n_slots, t_limit, d_limit;
    hsd_eng_seq *sq; /* one sequence per slot */
    bool *live;      /* the slot holds a request's state */
    bool *has_tree;  /* its last call proposed (its SLEM tree is still there) */
    /* per call */
    hsd_model_batch_seq *ent;
    int32_t *idx, *last_row, *seen;
    bool *active;
    float *dlog;
    size_t dlog_cap;
    hsd_proposer_stats st;
};

hsd_proposer_params hsd_proposer_default_params(void) {
    hsd_proposer_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.n_draft = 4;
    p.add_bos = true;
    return p;
}

int32_t hsd_proposer_n_slots(const hsd_proposer *p) { return p ? p->n_slots : 0; }

void hsd_proposer_free(hsd_proposer *p) {
    if (!p) return;
    for (int32_t i = 0; p->sq && i < p->n_slots; i++) hsd_eng_seq_free(&p->sq[i]);
    free(p->sq), free(p->live), free(p->has_tree), free(p->ent), free(p->idx), free(p->last_row), free(p->seen);
    free(p->active), free(p->dlog);
    hsd_eng_slem_release(&p->e);
    free(p);
}

hsd_status hsd_proposer_init(hsd_model *draft, const hsd_tokenizer *draft_tok,
                             const hsd_tokenizer *target_tok, const hsd_proposer_params *params,
                             hsd_proposer **out) {
    static const char fn[] = "hsd_proposer_init";
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "%s: out is NULL", fn);
    *out = NULL;
    if (!draft || !draft_tok || !target_tok)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: NULL %s", fn,
                         !draft ? "draft model" : !draft_tok ? "draft tokenizer" : "target tokenizer");
    hsd_proposer_params prm = hsd_proposer_default_params();
    hsd_status st = hsd_params_read(&prm, sizeof prm, params, fn, "params",
                                    "hsd_proposer_default_params()");
    if (st) return st;
    if (prm.n_draft < 1 || prm.n_draft > HSD_ENG_MAX_K || prm.n_ctx < 0 || prm.target_vocab < 0)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "%s: need 1 <= n_draft <= %d, n_ctx >= 0, target_vocab >= 0 (got %d, %d, %d)",
                         fn, HSD_ENG_MAX_K, (int)prm.n_draft, (int)prm.n_ctx, (int)prm.target_vocab);
    int32_t vd = hsd_model_vocab_size(draft), vt = hsd_tokenizer_vocab_size(target_tok);
    if (vd <= 0 || hsd_model_n_ctx(draft) <= 0 || vt <= 0)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: the %s", fn,
                         vt <= 0   ? "target tokenizer has no vocabulary"
                         : vd <= 0 ? "drafter has no vocabulary"
                                   : "drafter reports no context size (hsd_model_iface.n_ctx)");
    hsd_status vs = hsd_eng_check_vocab(fn, "drafter", draft_tok, vd);
    if (vs) return vs;
    hsd_proposer *p = calloc(1, sizeof *p);
    if (!p) return hsd_eng_oom();
    p->prm = prm;
    p->gp = hsd_gen_default_params();
    p->gp.algo = HSD_ALGO_SLEM;
    p->gp.n_draft = prm.n_draft;
    p->gp.add_bos = prm.add_bos;
    p->e.tm = NULL;
    p->e.tt = target_tok;
    p->e.dm = draft;
    p->e.dt = draft_tok;
    p->e.vt = prm.target_vocab > 0 && prm.target_vocab < vt ? prm.target_vocab : vt;
    p->e.vd = vd;
    p->e.t_format_eos = -1; /* the caller's verifier decides where the target stops */
    p->n_slots = hsd_model_n_seq(draft);
    p->t_limit = prm.n_ctx > 0 ? prm.n_ctx : INT32_MAX / 2;
    p->d_limit = hsd_eng_ctx_limit(draft, 0);
    size_t ns = (size_t)p->n_slots;
    p->sq = calloc(ns, sizeof *p->sq);
    p->live = calloc(ns, sizeof *p->live);
    p->has_tree = calloc(ns, sizeof *p->has_tree);
    p->ent = calloc(ns, sizeof *p->ent);
    p->idx = calloc(ns, sizeof *p->idx);
    p->last_row = calloc(ns, sizeof *p->last_row);
    p->seen = calloc(ns, sizeof *p->seen);
    p->active = calloc(ns, sizeof *p->active);
    if (!p->sq || !p->live || !p->has_tree || !p->ent || !p->idx || !p->last_row || !p->seen || !p->active) {
        hsd_proposer_free(p);
        return hsd_eng_oom();
    }
    for (int32_t i = 0; i < p->n_slots; i++) {
        hsd_eng_seq *g = &p->sq[i];
        g->e = &p->e;
        g->prm = &p->gp;
        g->index = i;
        g->t_slot = 0;
        g->d_slot = i;
        g->algo = HSD_ALGO_SLEM;
        g->round = g->cur = &hsd_eng_round_slem;
        g->greedy = true;
        g->T.tok = target_tok;
        g->T.specials_silent = true; /* the target's specials commit no text (seq.c) */
        g->D.tok = draft_tok;
        g->t_limit = p->t_limit;
        g->d_limit = p->d_limit;
    }
    *out = p;
    return HSD_OK;
}

hsd_status hsd_proposer_forget(hsd_proposer *p, int32_t slot) {
    if (!p || slot < 0 || slot >= (p ? p->n_slots : 0))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_proposer_forget: %s",
                         !p ? "NULL proposer" : "slot out of range");
    p->live[slot] = false;
    p->has_tree[slot] = false;
    return HSD_OK;
}

hsd_status hsd_proposer_last_tree(const hsd_proposer *p, int32_t slot, int32_t *ids,
                                  int32_t *parents, double *scores, int32_t cap, int32_t *n) {
    if (!p || !n || slot < 0 || slot >= p->n_slots || cap < 0 ||
        (cap > 0 && (!ids || !parents || !scores)))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_proposer_last_tree: %s",
                         !p || !n ? "NULL proposer or n"
                         : slot < 0 || slot >= p->n_slots ? "slot out of range"
                                                           : "NULL buffer with cap > 0");
    *n = p->has_tree[slot] ? hsd_eng_slem_tree(&p->sq[slot], NULL, NULL, NULL, 0) : 0;
    if (*n > cap)
        return hsd_error(HSD_ERR_BUFFER_TOO_SMALL, "hsd_proposer_last_tree: %d nodes, room for %d",
                         (int)*n, (int)cap);
    if (*n) hsd_eng_slem_tree(&p->sq[slot], ids, parents, scores, cap);
    return HSD_OK;
}

hsd_status hsd_proposer_get_stats(const hsd_proposer *p, hsd_proposer_stats *out) {
    if (!p || !out)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_proposer_get_stats: NULL %s",
                         !p ? "proposer" : "out");
    *out = p->st;
    return HSD_OK;
}

void hsd_proposer_reset_stats(hsd_proposer *p) {
    if (p) memset(&p->st, 0, sizeof p->st);
}

/* A fresh state: the context as a prompt, as hsd_eng_seq_setup sets one up (the target ids
 * as given, their text committed and frozen; the drafter's side from the decoded text). */
static hsd_status start_fresh(hsd_proposer *p, hsd_eng_seq *g, const int32_t *ctx, int32_t n) {
    g->T.ids.n = 0;
    g->D.ids.n = 0;
    g->text.n = 0;
    if (g->text.p) g->text.p[0] = 0;
    g->d_kv = 0;
    if (hsd_ids_reserve(&g->T.ids, (size_t)n)) return hsd_eng_oom();
    memcpy(g->T.ids.p, ctx, (size_t)n * sizeof *ctx);
    g->T.ids.n = (size_t)n;
    hsd_status s = hsd_eng_commit_text(g, ctx, n);
    if (s) return s;
    g->T.seg = n;
    g->T.seg_off = g->text.n;
    char *prompt = NULL;
    size_t len = 0;
    if ((s = hsd_tokenizer_decode_alloc(p->e.tt, ctx, (size_t)n, true, &prompt, &len))) return s;
    /* a context without text (only special ids) and a drafter without BOS: nothing to draft
     * from, the slot proposes nothing until text arrives (D stays empty) */
    if (len > 0 || (p->prm.add_bos && hsd_tokenizer_bos_id(p->e.dt) >= 0))
        s = hsd_eng_prompt_ids("drafter", p->e.dt, prompt, len, p->prm.add_bos, &g->D.ids);
    hsd_free(prompt);
    if (s) return s;
    g->D.seg = (int32_t)g->D.ids.n;
    g->D.seg_off = g->text.n;
    return hsd_model_kv_truncate(p->e.dm, 0); /* the slot is selected */
}

/* Brings slot's state to the context: extended (the engine's step from one round to the
 * next) or started afresh. */
static hsd_status bring_to(hsd_proposer *p, int32_t slot, const int32_t *ctx, int32_t n) {
    hsd_eng_seq *g = &p->sq[slot];
    hsd_status s = hsd_eng_seq_select(g);
    if (s) return s;
    size_t old = g->T.ids.n;
    bool extends = p->live[slot] && old <= (size_t)n && old > 0 && g->D.ids.n > 0 &&
                   !memcmp(g->T.ids.p, ctx, old * sizeof *ctx);
    p->live[slot] = false; /* until the state is consistent again */
    if (extends) {
        if (hsd_ids_reserve(&g->T.ids, (size_t)n - old)) return hsd_eng_oom();
        memcpy(g->T.ids.p + old, ctx + old, ((size_t)n - old) * sizeof *ctx);
        g->T.ids.n = (size_t)n;
        if ((s = hsd_eng_commit_text(g, ctx + old, n - (int32_t)old))) return s;
        /* also with nothing new: the resync undoes the last call's healing and tree path */
        if ((s = hsd_eng_sync_drafter(g))) return s;
        p->st.n_reused++;
    } else {
        if ((s = start_fresh(p, g, ctx, n))) return s;
        p->st.n_fresh++;
    }
    p->live[slot] = true;
    return HSD_OK;
}

static hsd_status check_call(const hsd_proposer *p, int32_t n, const int32_t *slots,
                             const int32_t *const *ctx, const int32_t *n_ctx, int32_t k_out,
                             const int32_t *out, const int32_t *n_out, int32_t *seen) {
    static const char fn[] = "hsd_proposer_propose";
    if (!p) return hsd_error(HSD_ERR_INVALID_ARG, "%s: NULL proposer", fn);
    if (n < 0) return hsd_error(HSD_ERR_INVALID_ARG, "%s: n = %d requests", fn, (int)n);
    if (n == 0) return HSD_OK;
    if (!slots || !ctx || !n_ctx || !out || !n_out)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: NULL %s", fn,
                         !slots ? "slots" : !ctx ? "ctx" : !n_ctx ? "n_ctx" : !out ? "out" : "n_out");
    if (k_out < 1 || k_out > HSD_ENG_MAX_CAND)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: k_out %d outside 1..%d", fn, (int)k_out,
                         HSD_ENG_MAX_CAND);
    if (n > p->n_slots)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: %d requests, the proposer has %d slots", fn,
                         (int)n, (int)p->n_slots);
    const int32_t vocab = hsd_tokenizer_vocab_size(p->e.tt);
    for (int32_t i = 0; i < p->n_slots; i++) seen[i] = -1;
    for (int32_t i = 0; i < n; i++) {
        if (slots[i] < 0 || slots[i] >= p->n_slots)
            return hsd_error(HSD_ERR_INVALID_ARG, "%s: request %d: slot %d outside 0..%d", fn,
                             (int)i, (int)slots[i], (int)p->n_slots - 1);
        if (seen[slots[i]] >= 0)
            return hsd_error(HSD_ERR_INVALID_ARG, "%s: requests %d and %d both use slot %d", fn,
                             (int)seen[slots[i]], (int)i, (int)slots[i]);
        seen[slots[i]] = i;
        if (!ctx[i] || n_ctx[i] < 1)
            return hsd_error(HSD_ERR_INVALID_ARG, "%s: request %d: %s", fn, (int)i,
                             !ctx[i] ? "NULL context" : "empty context (n_ctx < 1)");
        for (int32_t j = 0; j < n_ctx[i]; j++)
            if (ctx[i][j] < 0 || ctx[i][j] >= vocab)
                return hsd_error(HSD_ERR_OUT_OF_RANGE,
                                 "%s: request %d: context id %d at position %d is outside the "
                                 "target tokenizer's vocabulary (%d ids)",
                                 fn, (int)i, (int)ctx[i][j], (int)j, (int)vocab);
    }
    return HSD_OK;
}

/* The lockstep drafting of the active requests: per draft position one batched forward. */
static hsd_status draft_lockstep(hsd_proposer *p, int32_t n, const int32_t *slots) {
    hsd_status s = HSD_OK;
    const int32_t vd = p->e.vd;
    for (;;) {
        int32_t nb = 0;
        for (int32_t i = 0; i < n; i++) {
            hsd_eng_seq *g = &p->sq[slots[i]];
            if (!p->active[i] || g->dstop || g->dj >= g->kk) continue;
            /* a drafter whose context is full stops proposing (as in the driver) */
            if ((int32_t)g->D.ids.n + 1 >= p->d_limit) {
                g->dstop = true;
                continue;
            }
            int32_t m;
            if ((s = hsd_eng_seq_select(g)) || (s = hsd_eng_feed_prepare(p->e.dm, &g->D, &g->d_kv, &m)))
                return s;
            p->last_row[nb] = m - 1;
            p->ent[nb] = (hsd_model_batch_seq){sizeof(hsd_model_batch_seq), g->d_slot, g->D.ids.p + g->d_kv, m, NULL,
                                               &p->last_row[nb], 1};
            p->idx[nb++] = i;
        }
        if (nb == 0) return HSD_OK;
        size_t need = (size_t)nb * (size_t)vd;
        if (need > p->dlog_cap) {
            float *b = realloc(p->dlog, need * sizeof *b);
            if (!b) return hsd_eng_oom();
            p->dlog = b;
            p->dlog_cap = need;
        }
        double t0 = hsd_timer_ms();
        s = hsd_model_forward_batch(p->e.dm, p->ent, nb, p->dlog);
        p->st.draft_ms += hsd_timer_ms() - t0;
        p->st.n_drafter_forwards++;
        if (s) return s;
        for (int32_t b = 0; b < nb; b++) {
            hsd_eng_seq *g = &p->sq[slots[p->idx[b]]];
            g->d_kv += p->ent[b].n;
            if ((s = hsd_eng_round_slem.draft_take(g, p->dlog + (size_t)b * vd))) return s;
        }
    }
}

static hsd_status propose(hsd_proposer *p, int32_t n, const int32_t *slots,
                          const int32_t *const *ctx, const int32_t *n_ctx, int32_t k_out,
                          int32_t *out, int32_t *n_out) {
    hsd_status s = HSD_OK;
    double t_start = hsd_timer_ms(), draft_before = p->st.draft_ms;
    /* each request's state, then its plan and the root of its tree (healing) */
    for (int32_t i = 0; i < n && !s; i++) {
        hsd_eng_seq *g = &p->sq[slots[i]];
        p->active[i] = false;
        p->has_tree[slots[i]] = false;
        if ((s = bring_to(p, slots[i], ctx[i], n_ctx[i]))) break;
        int32_t room = p->t_limit - (int32_t)g->T.ids.n - 1;
        int32_t kk = p->prm.n_draft < room ? p->prm.n_draft : room;
        /* a context past the drafter's: it drafts from a trailing window (draft_window.c) */
        if (g->D.ids.n > 0 && (s = hsd_eng_window_fit(g, kk + 2))) break;
        int32_t droom = p->d_limit - (int32_t)g->D.ids.n;
        if (droom < kk) kk = droom;
        if (kk < 1 || g->D.ids.n == 0) continue; /* nothing to propose */
        g->kk = kk;
        g->dj = 0;
        g->dstop = false;
        g->rd.kd = 0;
        g->rd.cpar = NULL;
        g->rd.depth = 0;
        if ((s = hsd_eng_round_slem.draft_begin(g))) break;
        /* the context the cache lacks, through the causal path (prefill.c) */
        double t0 = hsd_timer_ms();
        s = hsd_eng_prefill(p->e.dm, &g->D.ids, &g->d_kv, (int32_t)g->D.ids.n - 1, NULL);
        p->st.draft_ms += hsd_timer_ms() - t0;
        if (s) break;
        p->active[i] = true;
    }
    if (!s) s = draft_lockstep(p, n, slots);
    double t_drafted = hsd_timer_ms();
    for (int32_t i = 0; i < n && !s; i++) {
        if (!p->active[i]) continue;
        hsd_eng_seq *g = &p->sq[slots[i]];
        const int32_t *cand;
        int32_t m, width;
        g->rd.t1 = t_drafted;
        if ((s = hsd_eng_seq_select(g)) ||
            (s = hsd_eng_round_slem.candidates(g, &cand, &m, &width)))
            break;
        (void)cand, (void)width;
        p->has_tree[slots[i]] = true;
        n_out[i] = hsd_eng_slem_chain(g, p->e.vt, k_out, out + (size_t)i * k_out);
        p->st.n_tokens += n_out[i];
    }
    p->st.n_calls++;
    p->st.n_proposals += n;
    p->st.bridge_ms += (hsd_timer_ms() - t_start) - (p->st.draft_ms - draft_before);
    return s;
}

hsd_status hsd_proposer_propose(hsd_proposer *p, int32_t n, const int32_t *slots,
                                const int32_t *const *ctx, const int32_t *n_ctx, int32_t k_out,
                                int32_t *out, int32_t *n_out) {
    hsd_status s = check_call(p, n, slots, ctx, n_ctx, k_out, out, n_out, p ? p->seen : NULL);
    if (s || n == 0) return s;
    for (int32_t i = 0; i < n; i++) n_out[i] = 0;
    const int32_t d_sel = hsd_model_seq_current(p->e.dm);
    s = propose(p, n, slots, ctx, n_ctx, k_out, out, n_out);
    if (s)
        for (int32_t i = 0; i < n; i++) {
            p->live[slots[i]] = false; /* a failed step leaves the states unknown */
            n_out[i] = 0;
        }
    hsd_model_seq_select(p->e.dm, d_sel); /* the caller's selection is restored */
    return s;
}

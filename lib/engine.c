/* The decoding loop: AR, SD, union, TLI and SLEM over the model interface, with the string
 * bridge keeping the drafter's tokens in step with the target's committed text.
 *
 * Invariants kept every round:
 *   - the target's context is exactly the committed target ids (never re-tokenized), so the
 *     output law is the target's own whatever the drafter proposes;
 *   - text == surface bytes of the committed target ids (after the prompt's);
 *   - T.ids[0..t_kv) and D.ids[0..d_kv) are what the two KV caches hold; the remaining ids
 *     are "pending" and fed by the next forward. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsd.h"
#include "lib/bridge.h"
#include "lib/engine_internal.h"
#include "lib/error.h"
#include "lib/map.h"
#include "lib/rng.h"
#include "lib/sample.h"
#include "tokenize/tokenizer.h"
#include "verify/verify.h"


static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

const char *hsd_algo_name(hsd_algo a) {
    static const char *names[] = {"ar", "sd", "union", "tli", "slem", "slrs", "auto"};
    return (unsigned)a <= HSD_ALGO_AUTO ? names[a] : "?";
}

int hsd_algo_parse(const char *name) {
    for (int a = 0; a <= HSD_ALGO_AUTO; a++)
        if (name && !strcmp(name, hsd_algo_name((hsd_algo)a))) return a;
    return -1;
}

hsd_gen_params hsd_gen_default_params(void) {
    hsd_gen_params p;
    memset(&p, 0, sizeof p);
    p.algo = HSD_ALGO_AUTO;
    p.max_new_tokens = 128;
    p.n_draft = 4;
    p.k_max = 16;
    p.top_p = 1.0f;
    p.stop_at_eos = true;
    p.add_bos = true;
    p.slrs_top_k = 2;
    p.slrs_top_p = 0.95f;
    p.slrs_max_nodes = 16;
    return p;
}

/* Maps draft ids to target ids by surface bytes. Special tokens are left out: their
 * spellings are conventions, not text. Among target ids with equal bytes the one that is not
 * a byte-fallback token wins (it is what the target's own tokenizer produces). */
static hsd_status build_map(hsd_engine *e) {
    hsd_strmap by_bytes;
    if (hsd_strmap_init(&by_bytes, (size_t)e->vt)) return hsd_error(HSD_ERR_NOMEM, "oom");
    for (int pass = 0; pass < 2; pass++)
        for (int32_t t = 0; t < e->vt && t < hsd_tokenizer_vocab_size(e->tt); t++) {
            if (hsd_tokenizer_is_special(e->tt, t) || !hsd_tokenizer_id_to_token(e->tt, t)) continue;
            bool byte_tok = (e->tt->flags[t] & HSD_TOKF_BYTE) != 0;
            if (byte_tok != (pass == 1)) continue;
            size_t n;
            const uint8_t *b = hsd_tokenizer_token_bytes(e->tt, t, &n);
            if (!n || (pass == 1 && hsd_strmap_get(&by_bytes, b, n) >= 0)) continue;
            if (pass == 0 && hsd_strmap_get(&by_bytes, b, n) >= 0) continue; /* keep first */
            if (hsd_strmap_put(&by_bytes, b, n, t)) {
                hsd_strmap_free(&by_bytes);
                return hsd_error(HSD_ERR_NOMEM, "oom");
            }
        }
    e->d2t = malloc((size_t)e->vd * sizeof *e->d2t);
    if (!e->d2t) {
        hsd_strmap_free(&by_bytes);
        return hsd_error(HSD_ERR_NOMEM, "oom");
    }
    e->overlap = 0;
    for (int32_t d = 0; d < e->vd; d++) {
        e->d2t[d] = -1;
        if (d >= hsd_tokenizer_vocab_size(e->dt) || hsd_tokenizer_is_special(e->dt, d) ||
            !hsd_tokenizer_id_to_token(e->dt, d))
            continue;
        size_t n;
        const uint8_t *b = hsd_tokenizer_token_bytes(e->dt, d, &n);
        if (!n) continue;
        e->d2t[d] = hsd_strmap_get(&by_bytes, b, n);
        if (e->d2t[d] >= 0) e->overlap++;
    }
    hsd_strmap_free(&by_bytes);
    /* several drafter ids can spell one string (e.g. "A" and its byte-fallback <0x41>): the
     * share of T that can be drafted counts each target id once */
    uint8_t *hit = calloc((size_t)e->vt, 1);
    if (!hit) return hsd_error(HSD_ERR_NOMEM, "oom");
    e->overlap_t = 0;
    for (int32_t d = 0; d < e->vd; d++)
        if (e->d2t[d] >= 0 && !hit[e->d2t[d]]) hit[e->d2t[d]] = 1, e->overlap_t++;
    free(hit);
    /* identical vocabularies: same size and every id maps to itself */
    e->same_vocab = e->vt == e->vd;
    for (int32_t d = 0; d < e->vd && e->same_vocab; d++)
        if (hsd_tokenizer_id_to_token(e->dt, d) &&
            (!hsd_tokenizer_id_to_token(e->tt, d) ||
             strcmp(hsd_tokenizer_id_to_token(e->dt, d), hsd_tokenizer_id_to_token(e->tt, d))))
            e->same_vocab = false;
    return HSD_OK;
}

hsd_status hsd_engine_init(hsd_model *target, const hsd_tokenizer *target_tok, hsd_model *draft,
                           const hsd_tokenizer *draft_tok, hsd_engine **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_init: out is NULL");
    *out = NULL;
    if (!target || !target_tok)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_init: target model and tokenizer are required");
    if ((draft == NULL) != (draft_tok == NULL))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_init: a drafter needs its tokenizer");
    hsd_engine *e = calloc(1, sizeof *e);
    if (!e) return hsd_error(HSD_ERR_NOMEM, "out of memory");
    e->tm = target;
    e->tt = target_tok;
    e->dm = draft;
    e->dt = draft_tok;
    e->vt = hsd_model_vocab_size(target);
    if (e->vt <= 0) {
        free(e);
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_init: target has no vocabulary");
    }
    /* generation stops where the context ends: a model without one (an hsd_model_iface
     * with no n_ctx callback) would silently generate nothing */
    if (hsd_model_n_ctx(target) <= 0 || (draft && hsd_model_n_ctx(draft) <= 0)) {
        free(e);
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_engine_init: the %s reports no context size (hsd_model_iface.n_ctx)",
                         hsd_model_n_ctx(target) <= 0 ? "target" : "drafter");
    }
    if (draft) {
        e->vd = hsd_model_vocab_size(draft);
        hsd_status s = build_map(e);
        if (s) {
            hsd_engine_free(e);
            return s;
        }
    }
    *out = e;
    return HSD_OK;
}

void hsd_engine_free(hsd_engine *e) {
    if (!e) return;
    hsd_ids_free(&e->t_cached);
    hsd_ids_free(&e->d_cached);
    hsd_engine_slrs_release(e);
    free(e->d2t);
    free(e);
}

void hsd_engine_reset(hsd_engine *e) {
    if (e) e->t_cached.n = e->d_cached.n = 0;
}

int32_t hsd_engine_overlap(const hsd_engine *e) { return e ? e->overlap : 0; }

hsd_status hsd_engine_overlap_ids(const hsd_engine *e, int32_t *ids, int32_t cap, int32_t *n) {
    if (!e || !n || (cap > 0 && !ids))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_overlap_ids: NULL argument");
    if (!e->dm)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_overlap_ids: the engine has no drafter");
    int32_t k = 0;
    for (int32_t d = 0; d < e->vd; d++)
        if (e->d2t[d] >= 0) {
            if (k < cap) ids[k] = d;
            k++;
        }
    *n = k;
    return k > cap ? hsd_error(HSD_ERR_BUFFER_TOO_SMALL,
                               "hsd_engine_overlap_ids: %d ids, room for %d", k, cap)
                   : HSD_OK;
}

hsd_algo hsd_engine_auto_algo(const hsd_engine *e, char *reason, size_t cap) {
    char tmp[160];
    if (!reason) reason = tmp, cap = sizeof tmp;
    if (!e || !e->dm) {
        snprintf(reason, cap, "no drafter: autoregressive");
        return HSD_ALGO_AR;
    }
    if (e->same_vocab) {
        snprintf(reason, cap, "identical vocabularies (%d tokens): standard SD", e->vt);
        return HSD_ALGO_SD;
    }
    /* shares by strings: distinct target ids over |T|, mapped drafter ids over |D| */
    double of_t = (double)e->overlap_t / e->vt, of_d = (double)e->overlap / e->vd;
    if (of_t >= 0.5 && of_d >= 0.5) {
        snprintf(reason, cap, "|T∩D| = %d strings covers %.0f%% of T and %.0f%% of D: TLI",
                 e->overlap_t, 100 * of_t, 100 * of_d);
        return HSD_ALGO_TLI;
    }
    snprintf(reason, cap, "|T∩D| = %d strings covers %.0f%% of T and %.0f%% of D (< 50%%): SLEM",
             e->overlap_t, 100 * of_t, 100 * of_d);
    return HSD_ALGO_SLEM;
}

/* ------------------------------------------------------------------ generation ---- */

/* (struct gen, the per-generation state, is in lib/engine_internal.h: the batch driver in
 * lib/engine_batch.c runs the same round phases) */

static hsd_status oom(void) { return hsd_error(HSD_ERR_NOMEM, "out of memory"); }

/* Encodes the prompt for one side: optional BOS, then the text without post-processor. */
static hsd_status prompt_ids(const hsd_tokenizer *tok, const char *prompt, size_t len,
                             bool add_bos, hsd_ids *ids) {
    int32_t *v = NULL;
    size_t n = 0;
    hsd_status s = hsd_tokenizer_encode_alloc(tok, prompt, len, false, &v, &n);
    if (s) return s;
    int32_t bos = hsd_tokenizer_bos_id(tok);
    if (add_bos && bos >= 0 && hsd_ids_push(ids, bos)) s = oom();
    for (size_t i = 0; !s && i < n; i++)
        if (hsd_ids_push(ids, v[i])) s = oom();
    hsd_free(v);
    if (!s && ids->n == 0)
        s = hsd_error(HSD_ERR_INVALID_ARG, "generate: empty prompt and the tokenizer has no BOS");
    return s;
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

/* Feeds a side's pending ids and leaves the logits of the last one in `logits`. */
static hsd_status feed_last(hsd_model *m, hsd_bridge_side *side, int32_t *kv, float *logits) {
    int32_t n;
    hsd_status s = hsd_eng_feed_prepare(m, side, kv, &n);
    if (s) return s;
    int32_t row = n - 1;
    s = hsd_model_forward(m, side->ids.p + *kv, n, NULL, &row, 1, logits);
    if (s) return s;
    *kv += n;
    return HSD_OK;
}

static hsd_status commit_text(gen *g, const int32_t *ids, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(g->e->tt, ids[i], &len);
        if (b && !hsd_tokenizer_is_special(g->e->tt, ids[i]) && hsd_buf_append(&g->text, b, len))
            return oom();
    }
    if (!g->text.p && hsd_buf_append(&g->text, "", 0)) return oom();
    return HSD_OK;
}

/* Appends emitted target tokens, applying EOS, stop strings and the token budget. */
static hsd_status emit(gen *g, const int32_t *toks, int32_t n, int32_t *n_kept) {
    int32_t eos = hsd_tokenizer_eos_id(g->e->tt), k = 0;
    for (; k < n; k++) {
        if (g->prm->stop_at_eos && toks[k] == eos) {
            g->done = true;
            break;
        }
        if ((int32_t)g->out.n >= g->prm->max_new_tokens) {
            g->done = true;
            break;
        }
        if (hsd_ids_push(&g->out, toks[k]) || hsd_ids_push(&g->T.ids, toks[k])) return oom();
        hsd_status s = commit_text(g, &toks[k], 1);
        if (s) return s;
        for (int32_t j = 0; j < g->prm->n_stop; j++) {
            const char *st = g->prm->stop[j];
            size_t sl = st ? strlen(st) : 0, gl = g->text.n - g->gen_text_start;
            if (sl && gl >= sl && memmem(g->text.p + g->gen_text_start, gl, st, sl)) g->done = true;
        }
        if (g->done) {
            k++;
            break;
        }
    }
    if ((int32_t)g->out.n >= g->prm->max_new_tokens) g->done = true;
    *n_kept = k;
    return HSD_OK;
}

/* After target tokens were committed: realign the drafter and roll back its cache. */
static hsd_status sync_drafter(gen *g) {
    double t0 = now_ms();
    hsd_status s = HSD_OK;
    if (g->algo == HSD_ALGO_SD) {
        /* same vocabulary: the drafter's ids are the target's */
        size_t c = 0;
        while (c < g->D.ids.n && c < g->T.ids.n && g->D.ids.p[c] == g->T.ids.p[c]) c++;
        g->D.ids.n = 0;
        for (size_t i = 0; i < g->T.ids.n; i++)
            if (hsd_ids_push(&g->D.ids, g->T.ids.p[i])) return oom();
        if ((int32_t)c < g->d_kv) g->d_kv = (int32_t)c;
    } else {
        int32_t first;
        if ((s = hsd_bridge_resync(&g->D, &g->text, &first))) return s;
        if (first < g->d_kv) g->d_kv = first;
    }
    if (g->d_kv > (int32_t)g->D.ids.n) g->d_kv = (int32_t)g->D.ids.n;
    if (g->d_kv < hsd_model_kv_len(g->e->dm)) s = hsd_model_kv_truncate(g->e->dm, g->d_kv);
    hsd_bridge_advance(&g->T, &g->text);
    g->t_bridge += now_ms() - t0;
    return s;
}

static hsd_status ensure_tlog(gen *g, int32_t rows) {
    size_t need = (size_t)rows * (size_t)(g->n_union > g->e->vt ? g->n_union : g->e->vt);
    if (need <= g->tlog_cap) return HSD_OK;
    float *a = realloc(g->tlog, need * sizeof *a), *b = a ? realloc(g->p, need * sizeof *b) : NULL;
    if (!a || !b) {
        if (a) g->tlog = a;
        return oom();
    }
    g->tlog = a;
    g->p = b;
    g->tlog_cap = need;
    return HSD_OK;
}

hsd_status hsd_eng_target_request(gen *g, const int32_t *cand, int32_t m) {
    round_data *r = &g->rd;
    int32_t pend = (int32_t)g->T.ids.n - g->t_kv;
    if (pend <= 0) {
        g->t_kv = (int32_t)g->T.ids.n - 1;
        hsd_status s = hsd_model_kv_truncate(g->e->tm, g->t_kv);
        if (s) return s;
        pend = 1;
    }
    int32_t n = pend + m;
    if (n > r->toks_cap) {
        int32_t *t = realloc(r->toks, (size_t)n * sizeof *t);
        if (!t) return oom();
        r->toks = t;
        r->toks_cap = n;
    }
    if (m + 1 > r->rows_cap) {
        int32_t *t = realloc(r->rows, (size_t)(m + 1) * sizeof *t);
        if (!t) return oom();
        r->rows = t;
        r->rows_cap = m + 1;
    }
    hsd_status s = ensure_tlog(g, m + 1);
    if (s) return s;
    memcpy(r->toks, g->T.ids.p + g->t_kv, (size_t)pend * sizeof *r->toks);
    if (m) memcpy(r->toks + pend, cand, (size_t)m * sizeof *r->toks);
    for (int32_t j = 0; j <= m; j++) r->rows[j] = pend - 1 + j;
    r->n_toks = n;
    return HSD_OK;
}

hsd_status hsd_eng_target_probs(gen *g, const float *logits, int32_t m, int32_t width) {
    int32_t vt = g->e->vt;
    hsd_status s = HSD_OK;
    for (int32_t j = 0; !s && j <= m; j++) {
        float *pr = g->p + (size_t)j * width;
        s = hsd_sample_probs(logits + (size_t)j * vt, vt, &g->sp, pr);
        for (int32_t i = vt; i < width; i++) pr[i] = 0;
    }
    return s;
}

/* Target forward over pending ids + candidates; p receives m+1 probability rows of width
 * `width` (entries past the model vocabulary are zero). */
static hsd_status target_rows(gen *g, const int32_t *cand, int32_t m, int32_t width) {
    hsd_status s = hsd_eng_target_request(g, cand, m);
    if (!s)
        s = hsd_model_forward(g->e->tm, g->rd.toks, g->rd.n_toks, NULL, g->rd.rows, m + 1, g->tlog);
    if (!s) s = hsd_eng_target_probs(g, g->tlog, m, width);
    return s;
}

/* Target KV holds old ids + m candidates; keep the a accepted ones. */
static hsd_status target_keep(gen *g, int32_t n_old, int32_t a) {
    g->t_kv = n_old + a;
    return hsd_model_kv_truncate(g->e->tm, g->t_kv);
}

static hsd_status round_ar(gen *g) {
    double t0 = now_ms();
    hsd_status s = target_rows(g, NULL, 0, g->e->vt);
    return s ? s : hsd_eng_ar_finish(g, t0);
}

hsd_status hsd_eng_ar_finish(gen *g, double t0) {
    g->t_kv = (int32_t)g->T.ids.n;
    int32_t tok = g->greedy ? hsd_verify_argmax(g->p, g->e->vt)
                            : hsd_verify_draw(g->p, g->e->vt, hsd_rng_uniform_f64(&g->rng_verify));
    g->t_verify += now_ms() - t0;
    int32_t kept;
    g->rounds++;
    return emit(g, &tok, 1, &kept);
}

int32_t hsd_eng_q_width(const gen *g) {
    return g->algo == HSD_ALGO_SLEM ? 0 : g->algo == HSD_ALGO_UNION ? g->n_union : g->e->vt;
}

/* One draft from the drafter's logits. For TLI the drafter's distribution is restricted to
 * T ∩ D. The rows written to q are in the verification space: target ids (SD, TLI) or
 * union ids. */
hsd_status hsd_eng_draft_take(gen *g, const float *logits, int32_t *d, int32_t *j, int32_t width,
                              bool *stop) {
    hsd_engine *e = g->e;
    hsd_status s;
    float *qd = g->scratch; /* draft-space probabilities */
    if ((s = hsd_sample_probs(logits, e->vd, &g->sp, qd))) return s;
    if (g->algo == HSD_ALGO_TLI) {
        double mass = 0;
        for (int32_t i = 0; i < e->vd; i++) {
            if (e->d2t[i] < 0) qd[i] = 0;
            mass += qd[i];
        }
        if (mass <= 0) { /* the drafter puts no mass on T ∩ D: nothing to propose */
            *stop = true;
            return HSD_OK;
        }
        for (int32_t i = 0; i < e->vd; i++) qd[i] = (float)(qd[i] / mass);
    }
    int32_t tok = g->greedy ? hsd_verify_argmax(qd, e->vd)
                            : hsd_verify_draw(qd, e->vd, hsd_rng_uniform_f64(&g->rng_draft));
    float *row = g->q + (size_t)*j * width;
    if (g->algo == HSD_ALGO_SD)
        memcpy(row, qd, (size_t)e->vd * sizeof *row);
    else if (g->algo == HSD_ALGO_TLI)
        hsd_verify_map_draft(qd, e->vd, e->d2t, width, false, row);
    else if (g->algo == HSD_ALGO_UNION)
        hsd_verify_map_draft(qd, e->vd, g->d2u, width, false, row);
    d[(*j)++] = tok;
    if (hsd_ids_push(&g->D.ids, tok)) return oom();
    /* a draft outside T ends the chain: it can only be rejected */
    if (g->algo == HSD_ALGO_UNION && g->d2u[tok] >= e->vt) *stop = true;
    return HSD_OK;
}

/* Drafts up to k tokens, one drafter forward each. */
static hsd_status draft_tokens(gen *g, int32_t k, int32_t *d, int32_t *k_out, int32_t width) {
    hsd_engine *e = g->e;
    int32_t j = 0;
    bool stop = false;
    hsd_status s = HSD_OK;
    while (j < k && !stop) {
        /* a drafter whose context is full stops proposing; the target goes on alone */
        if ((int32_t)g->D.ids.n + 1 >= hsd_model_n_ctx(e->dm)) break;
        if ((s = feed_last(e->dm, &g->D, &g->d_kv, g->dlog))) return s;
        if ((s = hsd_eng_draft_take(g, g->dlog, d, &j, width, &stop))) return s;
    }
    *k_out = j;
    return HSD_OK;
}

/* Drafts as verification-space ids; only the leading ones inside T are fed to the target. */
void hsd_eng_tl_candidates(gen *g) {
    hsd_engine *e = g->e;
    round_data *rd = &g->rd;
    rd->m = 0;
    for (int32_t j = 0; j < rd->kd; j++) {
        int32_t u = g->algo == HSD_ALGO_SD    ? rd->d[j]
                    : g->algo == HSD_ALGO_TLI ? e->d2t[rd->d[j]]
                                              : g->d2u[rd->d[j]];
        rd->vtok[j] = u;
        if (u < e->vt && rd->m == j) rd->m = j + 1;
    }
    rd->n_old = (int32_t)g->T.ids.n;
}

static hsd_status round_token_level(gen *g, int32_t k) {
    round_data *rd = &g->rd;
    int32_t width = hsd_eng_q_width(g);
    double t0 = now_ms();
    hsd_status s = draft_tokens(g, k, rd->d, &rd->kd, width);
    if (s) return s;
    rd->t1 = now_ms();
    g->t_draft += rd->t1 - t0;
    hsd_eng_tl_candidates(g);
    if ((s = target_rows(g, rd->vtok, rd->m, width))) return s;
    return hsd_eng_tl_finish(g);
}

hsd_status hsd_eng_tl_finish(gen *g) {
    round_data *rd = &g->rd;
    int32_t width = hsd_eng_q_width(g), out[65], acc = 0, r;
    hsd_status s;
    if (rd->kd == 0) { /* nothing drafted: one plain target step */
        out[0] = g->greedy ? hsd_verify_argmax(g->p, width)
                           : hsd_verify_draw(g->p, width, hsd_rng_uniform_f64(&g->rng_verify));
        r = 1;
    } else {
        r = hsd_verify_sd(g->p, g->q, width, rd->vtok, rd->kd, g->greedy, &g->rng_verify, g->resid,
                          out, &acc);
    }
    if ((s = target_keep(g, rd->n_old, acc))) return s;
    g->t_verify += now_ms() - rd->t1;
    g->rounds++;
    g->drafted += rd->kd;
    g->accepted += acc;
    /* the drafter keeps its accepted drafts; the bridge decides what else to roll back */
    int32_t kept;
    if ((s = emit(g, out, r, &kept))) return s;
    if (kept < r && g->t_kv > (int32_t)g->T.ids.n) g->t_kv = (int32_t)g->T.ids.n;
    return g->done ? HSD_OK : sync_drafter(g);
}

/* Draft text -> target candidates (rd.cand, the first rd.m of them verified). */
hsd_status hsd_eng_slem_candidates(gen *g) {
    hsd_engine *e = g->e;
    round_data *rd = &g->rd;
    hsd_buf dtext = {0};
    for (int32_t j = 0; j < rd->kd; j++) {
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(e->dt, rd->d[j], &len);
        if (b && !hsd_tokenizer_is_special(e->dt, rd->d[j]) && hsd_buf_append(&dtext, b, len)) {
            hsd_buf_free(&dtext);
            return oom();
        }
    }
    int32_t room = hsd_model_n_ctx(e->tm) - (int32_t)g->T.ids.n - 1;
    hsd_status s =
        hsd_bridge_candidates(&g->T, &g->text, dtext.p ? dtext.p : "", dtext.n, &rd->cand,
                              room < MAX_CAND ? (room > 0 ? room : 0) : MAX_CAND);
    hsd_buf_free(&dtext);
    /* candidates must be ids the target model knows */
    size_t m = 0;
    while (!s && m < rd->cand.n && rd->cand.p[m] >= 0 && rd->cand.p[m] < e->vt) m++;
    rd->m = (int32_t)m;
    rd->t2 = now_ms();
    g->t_bridge += rd->t2 - rd->t1;
    rd->n_old = (int32_t)g->T.ids.n;
    return s;
}

static hsd_status round_slem(gen *g, int32_t k) {
    round_data *rd = &g->rd;
    double t0 = now_ms();
    hsd_status s = draft_tokens(g, k, rd->d, &rd->kd, 0);
    if (s) return s;
    rd->t1 = now_ms();
    g->t_draft += rd->t1 - t0;
    if ((s = hsd_eng_slem_candidates(g))) return s;
    if ((s = target_rows(g, rd->cand.p, rd->m, g->e->vt))) return s;
    return hsd_eng_slem_finish(g);
}

hsd_status hsd_eng_slem_finish(gen *g) {
    round_data *rd = &g->rd;
    int32_t out[MAX_CAND + 1], acc = 0;
    int32_t r =
        hsd_verify_slem(g->p, g->e->vt, rd->cand.p, rd->m, g->greedy, &g->rng_verify, out, &acc);
    hsd_status s = target_keep(g, rd->n_old, acc);
    if (s) return s;
    g->t_verify += now_ms() - rd->t2;
    g->rounds++;
    if (rd->m) g->first_tried++, g->first_acc += acc > 0;
    g->drafted += rd->m;
    g->accepted += acc;
    int32_t kept;
    if ((s = emit(g, out, r, &kept))) return s;
    if (g->t_kv > (int32_t)g->T.ids.n) g->t_kv = (int32_t)g->T.ids.n;
    return g->done ? HSD_OK : sync_drafter(g);
}

/* Keeps the longest prefix of the cache that the new ids share (at least one id stays
 * pending so the first forward yields logits). */
static hsd_status reuse_cache(hsd_model *m, hsd_ids *cached, const hsd_ids *ids, int32_t *kv) {
    size_t c = 0, kvl = (size_t)hsd_model_kv_len(m);
    while (c < cached->n && c < kvl && c + 1 < ids->n && cached->p[c] == ids->p[c]) c++;
    *kv = (int32_t)c;
    return hsd_model_kv_truncate(m, (int32_t)c);
}

static hsd_status remember_cache(hsd_ids *cached, const hsd_ids *ids, int32_t kv) {
    cached->n = 0;
    if (hsd_ids_reserve(cached, (size_t)kv)) return oom();
    if (kv) memcpy(cached->p, ids->p, (size_t)kv * sizeof(int32_t));
    cached->n = (size_t)kv;
    return HSD_OK;
}

void hsd_eng_gen_free(gen *g) {
    hsd_buf_free(&g->text);
    hsd_ids_free(&g->T.ids);
    hsd_ids_free(&g->D.ids);
    hsd_ids_free(&g->out);
    free(g->tlog);
    free(g->dlog);
    free(g->q);
    free(g->p);
    free(g->scratch);
    free(g->resid);
    free(g->d2u);
    hsd_ids_free(&g->rd.cand);
    free(g->rd.toks);
    free(g->rd.rows);
    hsd_gen_slrs_free(g);
}

hsd_status hsd_eng_gen_setup(gen *g, const char *prompt, size_t len) {
    hsd_engine *e = g->e;
    const hsd_gen_params *p = g->prm;
    hsd_status s;
    g->sp = (hsd_sampler_params){p->temp, p->top_k, p->top_p};
    g->greedy = p->temp <= 0;
    hsd_rng_init(&g->rng_draft, p->seed, 1);
    hsd_rng_init(&g->rng_verify, p->seed, 2);
    g->T.tok = e->tt;
    g->T.specials_silent = true;
    if ((s = prompt_ids(e->tt, prompt, len, p->add_bos, &g->T.ids))) return s;
    if ((s = commit_text(g, g->T.ids.p, (int32_t)g->T.ids.n))) return s;
    g->gen_text_start = g->text.n;
    /* prompt tokens are frozen: bridge windows start where generation starts */
    g->T.seg = (int32_t)g->T.ids.n;
    g->T.seg_off = g->text.n;
    if ((s = reuse_cache(e->tm, &e->t_cached, &g->T.ids, &g->t_kv))) return s;
    int32_t k = p->adaptive_k ? p->k_max : p->n_draft;
    int32_t maxrows = (k > MAX_CAND ? k : MAX_CAND) + 1;
    if (g->algo != HSD_ALGO_AR) {
        g->D.tok = e->dt;
        if (g->algo == HSD_ALGO_SD) {
            for (size_t i = 0; i < g->T.ids.n; i++)
                if (hsd_ids_push(&g->D.ids, g->T.ids.p[i])) return oom();
        } else if ((s = prompt_ids(e->dt, prompt, len, p->add_bos, &g->D.ids))) {
            return s;
        }
        g->D.seg = (int32_t)g->D.ids.n;
        g->D.seg_off = g->text.n;
        if ((s = reuse_cache(e->dm, &e->d_cached, &g->D.ids, &g->d_kv))) return s;
        g->n_union = e->vt;
        if (g->algo == HSD_ALGO_UNION) {
            g->d2u = malloc((size_t)e->vd * sizeof *g->d2u);
            if (!g->d2u) return oom();
            for (int32_t i = 0; i < e->vd; i++) g->d2u[i] = e->d2t[i] >= 0 ? e->d2t[i] : g->n_union++;
        }
        int32_t width = g->n_union > e->vd ? g->n_union : e->vd;
        g->dlog = malloc((size_t)e->vd * sizeof *g->dlog);
        g->q = malloc((size_t)(k + 1) * (size_t)width * sizeof *g->q);
        g->scratch = malloc((size_t)width * sizeof *g->scratch);
        g->resid = malloc((size_t)width * sizeof *g->resid);
        if (!g->dlog || !g->q || !g->scratch || !g->resid) return oom();
    }
    return ensure_tlog(g, maxrows);
}

hsd_status hsd_engine_generate(hsd_engine *e, const char *prompt, size_t len,
                               const hsd_gen_params *params, hsd_gen_result *res) {
    if (res) memset(res, 0, sizeof *res); /* a failed call leaves nothing to free */
    if (!e || !res || (!prompt && len))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate: NULL argument");
    hsd_gen_params dp = hsd_gen_default_params();
    const hsd_gen_params *p = params ? params : &dp;
    if (p->max_new_tokens < 0 || p->n_draft < 1 || p->n_draft > 63 ||
        (p->adaptive_k && (p->k_max < 1 || p->k_max > 63)))
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_engine_generate: need max_new_tokens >= 0 and 1 <= n_draft, k_max <= 63");
    if (isnan(p->temp) || isnan(p->top_p))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate: temp and top_p must be numbers");
    if (p->n_stop < 0 || (p->n_stop > 0 && !p->stop))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate: %d stop strings with stop %s",
                         (int)p->n_stop, p->stop ? "given" : "NULL");
    if ((unsigned)p->slrs_lookahead > 2)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate: slrs_lookahead must be 0, 1 or 2");
    if ((unsigned)p->algo > HSD_ALGO_AUTO)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate: unknown algorithm %d", (int)p->algo);
    gen g;
    memset(&g, 0, sizeof g);
    g.e = e;
    g.prm = p;
    g.algo = p->algo;
    if (g.algo == HSD_ALGO_AUTO) g.algo = hsd_engine_auto_algo(e, res->reason, sizeof res->reason);
    else snprintf(res->reason, sizeof res->reason, "requested");
    if (g.algo != HSD_ALGO_AR && !e->dm) {
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_generate: algorithm %s needs a drafter",
                         hsd_algo_name(g.algo));
    }
    if (g.algo == HSD_ALGO_SD && !e->same_vocab)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_engine_generate: SD needs identical vocabularies; use tli, slem or union");
    double t_start = now_ms(), t_first = 0;
    hsd_status s = hsd_eng_gen_setup(&g, prompt ? prompt : "", len);
    int32_t k = p->n_draft;
    double acc_ema = 0.7;
    while (!s && !g.done && (int32_t)g.out.n < p->max_new_tokens) {
        int32_t room = hsd_model_n_ctx(e->tm) - (int32_t)g.T.ids.n - 1;
        if (room <= 0) break; /* context full */
        int32_t kk = k < room ? k : room;
        /* the drafter may have the shorter context (or spell the text in more tokens): once
         * k drafts no longer fit, the remaining rounds are plain target steps, which keeps
         * the output exact instead of failing */
        bool draft_full = false;
        if (g.algo != HSD_ALGO_AR) {
            int32_t droom = hsd_model_n_ctx(e->dm) - (int32_t)g.D.ids.n;
            if (droom < kk) kk = droom;
            draft_full = kk < 1;
        }
        int32_t before = (int32_t)g.out.n, drafted_before = g.drafted, acc_before = g.accepted;
        if (g.algo == HSD_ALGO_AR || draft_full) s = round_ar(&g);
        else if (g.algo == HSD_ALGO_SLEM) s = round_slem(&g, kk);
        else if (g.algo == HSD_ALGO_SLRS) s = hsd_gen_round_slrs(&g, kk);
        else s = round_token_level(&g, kk);
        if (!s && before == 0 && g.out.n > 0) t_first = now_ms();
        if (!s && p->adaptive_k && g.drafted > drafted_before) {
            double a = (double)(g.accepted - acc_before) / (g.drafted - drafted_before);
            acc_ema = 0.8 * acc_ema + 0.2 * a;
            if (acc_ema > 0.8 && k < p->k_max) k++;
            else if (acc_ema < 0.5 && k > 1) k--;
        }
#ifndef NDEBUG
        /* invariant: the committed target ids spell the committed text, nothing lost or
         * duplicated (the drafter's side may legitimately differ for normalizing
         * tokenizers, which only costs acceptance) */
        if (!s && !hsd_bridge_consistent(&g.T, &g.text))
            s = hsd_error(HSD_ERR_INTERNAL, "bridge invariant broken after round %d", g.rounds);
#endif
    }
    double t_end = now_ms();
    /* what the caches hold now (a failed round leaves them unknown: forget them) */
    e->t_cached.n = e->d_cached.n = 0;
    if (!s) s = remember_cache(&e->t_cached, &g.T.ids, g.t_kv < (int32_t)g.T.ids.n ? g.t_kv : (int32_t)g.T.ids.n);
    if (!s && e->dm && g.algo != HSD_ALGO_AR)
        s = remember_cache(&e->d_cached, &g.D.ids, g.d_kv < (int32_t)g.D.ids.n ? g.d_kv : (int32_t)g.D.ids.n);
    if (!s) {
        res->algo = g.algo;
        res->n_ids = (int32_t)g.out.n;
        res->ids = malloc((g.out.n ? g.out.n : 1) * sizeof *res->ids);
        if (!res->ids) s = oom();
        else if (g.out.n) memcpy(res->ids, g.out.p, g.out.n * sizeof *res->ids);
    }
    if (!s) s = hsd_tokenizer_decode_alloc(e->tt, res->ids, (size_t)res->n_ids, true, &res->text,
                                           &res->text_len);
    if (!s) {
        res->n_rounds = g.rounds;
        res->n_drafted = g.drafted;
        res->n_accepted = g.accepted;
        res->acceptance_rate = g.drafted ? (double)g.accepted / g.drafted : 0;
        res->tau = g.rounds ? (double)res->n_ids / g.rounds : 0;
        res->total_ms = t_end - t_start;
        res->ttft_ms = t_first > 0 ? t_first - t_start : res->total_ms;
        res->tpot_ms = res->n_ids > 1 ? (t_end - t_first) / (res->n_ids - 1) : 0;
        res->tokens_per_s = res->total_ms > 0 ? 1000.0 * res->n_ids / res->total_ms : 0;
        res->draft_ms = g.t_draft;
        res->verify_ms = g.t_verify;
        res->bridge_ms = g.t_bridge;
        res->first_accept_rate = g.first_tried ? (double)g.first_acc / g.first_tried : 0;
        hsd_gen_slrs_stats(&g, res);
    }
    hsd_eng_gen_free(&g);
    if (s) hsd_gen_result_free(res);
    return s;
}

void hsd_gen_result_free(hsd_gen_result *r) {
    if (!r) return;
    free(r->ids);
    hsd_free(r->text);
    r->ids = NULL;
    r->text = NULL;
    r->n_ids = 0;
}

/* Entry points for rounds that live in their own files (lib/engine_slrs.c). */
double hsd_gen_now_ms(void) { return now_ms(); }
hsd_status hsd_gen_feed_drafter(gen *g, float *logits) {
    return feed_last(g->e->dm, &g->D, &g->d_kv, logits);
}
hsd_status hsd_gen_target_rows(gen *g, const int32_t *cand, int32_t m) {
    return target_rows(g, cand, m, g->e->vt);
}
hsd_status hsd_gen_finish_round(gen *g, int32_t n_old, int32_t acc, const int32_t *out, int32_t r) {
    hsd_status s = target_keep(g, n_old, acc);
    int32_t kept;
    if (!s) s = emit(g, out, r, &kept);
    if (s) return s;
    if (g->t_kv > (int32_t)g->T.ids.n) g->t_kv = (int32_t)g->T.ids.n;
    return g->done ? HSD_OK : sync_drafter(g);
}

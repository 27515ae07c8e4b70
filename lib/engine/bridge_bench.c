/* The bridge benchmark (public: hsd_bridge_bench in include/hsd_tools.h): one engine round of
 * string-bridge work, timed on the engine's own bridge code with the committed text at a given
 * context length. A round: k drafter tokens at a random place of the source become draft
 * bytes → target candidates (hsd_bridge_candidates) → 1..m of them are committed → the
 * drafter side resyncs and the target segment advances. Blocks of rounds start again from
 * one snapshot of the context, so every timed round sees the same context length. */
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/base/timer.h"
#include "lib/base/rng.h"
#include "hsd_tools.h"
#include "lib/base/buf.h"
#include "lib/base/error.h"
#include "lib/base/params.h"
#include "lib/engine/bridge.h"

hsd_bridge_bench_params hsd_bridge_bench_default_params(void) {
    return (hsd_bridge_bench_params){.size = sizeof(hsd_bridge_bench_params), .k = 4, .rounds = 2000, .block = 25, .seed = 7, .stream = 0};
}

/* The surface bytes of ids (special tokens spell nothing), appended to text. */
static int append_surface(const hsd_tokenizer *tok, const int32_t *ids, size_t n, hsd_buf *text) {
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(tok, ids[i], &len);
        if (b && !hsd_tokenizer_is_special(tok, ids[i]) && hsd_buf_append(text, b, len)) return 1;
    }
    return 0;
}

typedef struct state {
    hsd_buf text;
    hsd_bridge_side T, D;
} state;

static void state_free(state *s) {
    hsd_buf_free(&s->text);
    hsd_ids_free(&s->T.ids);
    hsd_ids_free(&s->D.ids);
}

static int state_copy(state *dst, const state *src) {
    dst->text.n = dst->T.ids.n = dst->D.ids.n = 0;
    if (hsd_buf_append(&dst->text, src->text.p, src->text.n) ||
        hsd_ids_reserve(&dst->T.ids, src->T.ids.n) || hsd_ids_reserve(&dst->D.ids, src->D.ids.n))
        return 1;
    memcpy(dst->T.ids.p, src->T.ids.p, src->T.ids.n * sizeof(int32_t));
    memcpy(dst->D.ids.p, src->D.ids.p, src->D.ids.n * sizeof(int32_t));
    dst->T.ids.n = src->T.ids.n, dst->D.ids.n = src->D.ids.n;
    dst->T.tok = src->T.tok, dst->D.tok = src->D.tok;
    dst->T.specials_silent = src->T.specials_silent;
    dst->T.seg = src->T.seg, dst->T.seg_off = src->T.seg_off;
    dst->D.seg = src->D.seg, dst->D.seg_off = src->D.seg_off;
    return 0;
}

/* One round: draft bytes → candidates → commit 1..m of them → resync drafter, advance target. */
static hsd_status one_round(state *s, const hsd_tokenizer *dt, const int32_t *src, size_t n_src,
                            int32_t k, hsd_rng *r) {
    size_t at = hsd_rng_u32(r) % (n_src - (size_t)k);
    hsd_buf draft = {0};
    hsd_ids cand = {0};
    hsd_status st = HSD_OK;
    if (append_surface(dt, src + at, (size_t)k, &draft)) st = HSD_ERR_NOMEM;
    if (!st && draft.n) st = hsd_bridge_candidates(&s->T, &s->text, draft.p, draft.n, &cand, 64);
    if (!st && cand.n) {
        size_t a = 1 + hsd_rng_u32(r) % cand.n;
        for (size_t i = 0; !st && i < a; i++)
            if (hsd_ids_push(&s->T.ids, cand.p[i])) st = HSD_ERR_NOMEM;
        if (!st && append_surface(s->T.tok, cand.p, a, &s->text)) st = HSD_ERR_NOMEM;
    }
    int32_t first;
    if (!st) st = hsd_bridge_resync(&s->D, &s->text, &first);
    if (!st) hsd_bridge_advance(&s->T, &s->text);
    hsd_buf_free(&draft);
    hsd_ids_free(&cand);
    if (st == HSD_ERR_NOMEM) return hsd_error(st, "hsd_bridge_bench: out of memory");
    return st;
}

/* The committed context: the surface of target_ids[0..ctx) on the target side, its drafter
 * encoding on the other, both frozen (the prompt: bridge windows start where generation
 * starts). */
static hsd_status context(state *base, const hsd_tokenizer *tt, const hsd_tokenizer *dt,
                          const int32_t *tids, int32_t ctx) {
    base->T.tok = tt;
    base->T.specials_silent = true;
    if (hsd_ids_reserve(&base->T.ids, (size_t)ctx)) return HSD_ERR_NOMEM;
    for (int32_t i = 0; i < ctx; i++) hsd_ids_push(&base->T.ids, tids[i]);
    if (append_surface(tt, tids, (size_t)ctx, &base->text)) return HSD_ERR_NOMEM;
    int32_t *dp = NULL;
    size_t dn = 0;
    hsd_status st = hsd_tokenizer_encode_alloc(dt, base->text.p, base->text.n, false, &dp, &dn);
    if (st) return hsd_error_prefix(st, "hsd_bridge_bench: encoding the context: ");
    base->D.tok = dt;
    for (size_t i = 0; !st && i < dn; i++)
        if (hsd_ids_push(&base->D.ids, dp[i])) st = HSD_ERR_NOMEM;
    hsd_free(dp);
    base->T.seg = (int32_t)base->T.ids.n, base->D.seg = (int32_t)base->D.ids.n;
    base->T.seg_off = base->D.seg_off = base->text.n;
    return st;
}

hsd_status hsd_bridge_bench(const hsd_tokenizer *target, const hsd_tokenizer *draft,
                            const int32_t *target_ids, size_t n_target, const int32_t *draft_src,
                            size_t n_src, int32_t ctx_tokens, const hsd_bridge_bench_params *params,
                            double *us, hsd_bridge_bench_result *out) {
    if (!target || !draft || !target_ids || !draft_src || !params || !us || !out)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_bridge_bench: %s is NULL",
                         !target       ? "target tokenizer"
                         : !draft      ? "draft tokenizer"
                         : !target_ids ? "target_ids"
                         : !draft_src  ? "draft_src"
                         : !params     ? "params"
                         : !us         ? "us"
                                       : "out");
    hsd_bridge_bench_params params_own = hsd_bridge_bench_default_params();
    hsd_status params_st = hsd_params_read(&params_own, sizeof params_own, params, "hsd_bridge_bench", "params", "hsd_bridge_bench_default_params()");
    if (params_st) return params_st;
    params = &params_own;
    const hsd_bridge_bench_params *p = params;
    if (p->k < 1 || p->block < 1 || p->rounds < p->block)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_bridge_bench: k = %d, block = %d, rounds = %d (need k >= 1, "
                         "block >= 1, rounds >= block)",
                         p->k, p->block, p->rounds);
    if (n_src <= (size_t)p->k)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_bridge_bench: %zu draft source ids, need more than k = %d", n_src,
                         p->k);
    if (ctx_tokens < 0 || (size_t)ctx_tokens > n_target)
        return hsd_error(HSD_ERR_OUT_OF_RANGE,
                         "hsd_bridge_bench: context of %d tokens outside the %zu target ids",
                         ctx_tokens, n_target);
    memset(out, 0, sizeof *out);
    state base = {0}, s = {0};
    hsd_status st = context(&base, target, draft, target_ids, ctx_tokens);
    if (st == HSD_ERR_NOMEM) st = hsd_error(st, "hsd_bridge_bench: out of memory");
    hsd_rng r;
    hsd_rng_init(&r, p->seed, p->stream);
    /* warm-up rounds bring the segments to their steady state before the snapshot */
    for (int i = 0; !st && i < 2 * p->block; i++)
        st = one_round(&base, draft, draft_src, n_src, p->k, &r);
    size_t window = 0;
    for (int i = 0; !st && i < p->rounds; i++) {
        if (i % p->block == 0 && state_copy(&s, &base)) {
            st = hsd_error(HSD_ERR_NOMEM, "hsd_bridge_bench: out of memory");
            break;
        }
        double t0 = hsd_timer_ms();
        st = one_round(&s, draft, draft_src, n_src, p->k, &r);
        us[i] = (hsd_timer_ms() - t0) * 1000;
        window += s.text.n - s.D.seg_off;
    }
    if (!st) {
        out->context_bytes = base.text.n;
        out->window_bytes = (double)window / p->rounds;
    }
    state_free(&base);
    state_free(&s);
    return st;
}

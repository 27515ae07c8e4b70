/* hsd bench bridge: µs per round of the string bridge at growing context lengths.
 *
 * A round is what the engine's SLEM round and drafter resync do on the CPU besides the
 * forwards: hsd_bridge_candidates (draft bytes → target candidates), committing some target
 * tokens to the text, hsd_bridge_resync of the drafter side and hsd_bridge_advance of the
 * target side. The sides start as the engine starts them (the prompt frozen, the segment at
 * its end), so this is the engine's real per-round cost; it should not depend on the
 * context length because only a window behind the end is ever re-tokenized. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/prompts.h"
#include "lib/base/timer.h"
#include "hsd.h"
#include "lib/engine/bridge.h"
#include "lib/base/rng.h"

#define BLOCK 25 /* rounds per block; each block starts again from the same context */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Corpus texts of the wanted kinds, joined by spaces, repeated until at least `bytes`. */
static int corpus_text(const char *path, const char *kinds, size_t bytes, hsd_buf *out) {
    char **texts;
    int n = hsd_cli_read_prompts_of("bench bridge", path, kinds, 0, 0, &texts);
    if (n < 0) return 1;
    hsd_buf once = {0};
    for (int i = 0; i < n; i++) {
        if (once.n) hsd_buf_push(&once, ' ');
        hsd_buf_append(&once, texts[i], strlen(texts[i]));
    }
    hsd_cli_free_prompts(texts, n);
    while (once.n && out->n < bytes) {
        if (out->n) hsd_buf_push(out, ' ');
        hsd_buf_append(out, once.p, once.n);
    }
    hsd_buf_free(&once);
    return out->n < bytes;
}

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
    if (hsd_buf_append(&dst->text, src->text.p, src->text.n) || hsd_ids_reserve(&dst->T.ids, src->T.ids.n) ||
        hsd_ids_reserve(&dst->D.ids, src->D.ids.n))
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
static int one_round(state *s, const hsd_tokenizer *dt, const hsd_ids *src, int32_t k, hsd_rng *r) {
    size_t at = hsd_rng_u32(r) % (src->n - (size_t)k);
    hsd_buf draft = {0};
    hsd_ids cand = {0};
    int rc = append_surface(dt, src->p + at, (size_t)k, &draft);
    if (!rc && draft.n) rc = hsd_bridge_candidates(&s->T, &s->text, draft.p, draft.n, &cand, 64) != HSD_OK;
    if (!rc && cand.n) {
        size_t a = 1 + hsd_rng_u32(r) % cand.n;
        for (size_t i = 0; !rc && i < a; i++) rc = hsd_ids_push(&s->T.ids, cand.p[i]);
        if (!rc) rc = append_surface(s->T.tok, cand.p, a, &s->text);
    }
    int32_t first;
    if (!rc) rc = hsd_bridge_resync(&s->D, &s->text, &first) != HSD_OK;
    if (!rc) hsd_bridge_advance(&s->T, &s->text);
    hsd_buf_free(&draft);
    hsd_ids_free(&cand);
    return rc;
}

typedef struct bbridge_opts {
    const char *tt, *dt, *corpus, *kinds;
    hsd_opt_ints contexts;
    int32_t rounds, k;
    int json;
} bbridge_opts;

#define O(f) offsetof(bbridge_opts, f)
static const hsd_opt bbridge_table[] = {
    HSD_OPT_ROWS_TOKENIZERS(bbridge_opts, tt, dt, 0, 0),
    {"corpus", 0, HSD_OPT_STRING, O(corpus), "corpus.jsonl", "JSONL {\"text\", \"kind\"}", 0, 0},
    {"contexts", 0, HSD_OPT_INTS, O(contexts), "100,1000,10000",
     "committed text lengths (target tokens)", 0, 1e9},
    {"rounds", 0, HSD_OPT_INT, O(rounds), "R", "rounds per context (2000)", BLOCK, 1e9},
    {"", 'k', HSD_OPT_INT, O(k), "K", "draft tokens per round (4)", 1, 1e6},
    {"kinds", 0, HSD_OPT_STRING, O(kinds), "prose,...", "corpus kinds to use", 0, 0},
    HSD_OPT_ROW_JSON(bbridge_opts, json),
};
#undef O

const hsd_cli_spec hsd_spec_bench_bridge = {
    "bench bridge", "--target-tokenizer T --draft-tokenizer D --corpus corpus.jsonl [OPTIONS]",
    "  µs per bridge round (candidates for k draft tokens + commit + drafter resync)\n"
    "  with the committed text at each context length (target tokens).\n",
    NULL, bbridge_table, HSD_OPTS_N(bbridge_table), 0,
};

int hsd_cmd_bench_bridge(int argc, char **argv) {
    bbridge_opts o = {0};
    o.kinds = "prose,long_prose,long_prose_newlines,code,long_code_python,long_code_c";
    o.contexts = (hsd_opt_ints){{100, 1000, 10000}, 3};
    o.rounds = 2000, o.k = 4;
    HSD_OPTS_PARSE(&hsd_spec_bench_bridge, &o, argc, argv, NULL);
    if (!o.tt || !o.dt || !o.corpus)
        return hsd_opts_fail(&hsd_spec_bench_bridge,
                             "--target-tokenizer, --draft-tokenizer and --corpus are required");
    const char *tt_path = o.tt, *dt_path = o.dt, *corpus = o.corpus, *kinds = o.kinds;
    int rounds = o.rounds, json = o.json, n_ctx = o.contexts.n;
    int32_t k = o.k;
    const int32_t *ctx = o.contexts.v;
    hsd_tokenizer *tt = NULL, *dt = NULL;
    if (hsd_tokenizer_load_file(tt_path, &tt) || hsd_tokenizer_load_file(dt_path, &dt)) {
        fprintf(stderr, "hsd bench bridge: %s\n", hsd_last_error());
        hsd_tokenizer_free(tt);
        return 1;
    }
    int rc = 1;
    int32_t max_ctx = 0;
    for (int i = 0; i < n_ctx; i++) max_ctx = ctx[i] > max_ctx ? ctx[i] : max_ctx;
    hsd_buf raw = {0};
    int32_t *tids = NULL, *dids = NULL;
    size_t n_t = 0, n_d = 0;
    hsd_ids src = {0};
    double *us = malloc((size_t)rounds * sizeof *us);
    json_t *out = json_array();
    /* 8 bytes per token is more than any of these tokenizers averages on prose */
    if (!us || corpus_text(corpus, kinds, (size_t)max_ctx * 8 + 4096, &raw)) {
        fprintf(stderr, "hsd bench bridge: cannot build text from %s (kinds %s)\n", corpus, kinds);
        goto done;
    }
    if (hsd_tokenizer_encode_alloc(tt, raw.p, raw.n, false, &tids, &n_t) ||
        hsd_tokenizer_encode_alloc(dt, raw.p, raw.n, false, &dids, &n_d)) {
        fprintf(stderr, "hsd bench bridge: %s\n", hsd_last_error());
        goto done;
    }
    /* draft chunks: k consecutive drafter tokens of the same text at random places */
    for (size_t i = 0; i < n_d && i < 100000; i++) hsd_ids_push(&src, dids[i]);
    if (n_t < (size_t)max_ctx || src.n <= (size_t)k) {
        fprintf(stderr, "hsd bench bridge: corpus too short (%zu target tokens)\n", n_t);
        goto done;
    }
    if (!json)
        printf("target %s, drafter %s, k = %d, %d rounds per context (blocks of %d from the same context)\n"
               "%10s %10s %12s %12s %12s %10s\n",
               tt_path, dt_path, k, rounds, BLOCK, "ctx tokens", "ctx bytes", "median us", "mean us", "p90 us",
               "window");
    for (int ci = 0; ci < n_ctx; ci++) {
        state base = {0}, s = {0};
        /* committed text = surface bytes of the first ctx target ids, as in the engine */
        base.T.tok = tt;
        base.T.specials_silent = true;
        for (int32_t i = 0; i < ctx[ci]; i++) hsd_ids_push(&base.T.ids, tids[i]);
        append_surface(tt, tids, (size_t)ctx[ci], &base.text);
        int32_t *dp = NULL;
        size_t dn = 0;
        if (hsd_tokenizer_encode_alloc(dt, base.text.p, base.text.n, false, &dp, &dn)) {
            fprintf(stderr, "hsd bench bridge: %s\n", hsd_last_error());
            state_free(&base);
            goto done;
        }
        base.D.tok = dt;
        for (size_t i = 0; i < dn; i++) hsd_ids_push(&base.D.ids, dp[i]);
        hsd_free(dp);
        /* the prompt is frozen: bridge windows start where generation starts */
        base.T.seg = (int32_t)base.T.ids.n, base.D.seg = (int32_t)base.D.ids.n;
        base.T.seg_off = base.D.seg_off = base.text.n;
        hsd_rng r;
        hsd_rng_init(&r, 7, (uint64_t)ci);
        /* warm-up rounds bring the segments to their steady state before the snapshot */
        for (int i = 0; i < 2 * BLOCK; i++)
            if (one_round(&base, dt, &src, k, &r)) {
                fprintf(stderr, "hsd bench bridge: %s\n", hsd_last_error());
                state_free(&base);
                goto done;
            }
        size_t window = 0;
        for (int i = 0; i < rounds; i++) {
            if (i % BLOCK == 0 && state_copy(&s, &base)) break;
            double t0 = hsd_timer_ms();
            int e = one_round(&s, dt, &src, k, &r);
            us[i] = (hsd_timer_ms() - t0) * 1000;
            window += s.text.n - s.D.seg_off;
            if (e) {
                fprintf(stderr, "hsd bench bridge: %s\n", hsd_last_error());
                state_free(&base);
                state_free(&s);
                goto done;
            }
        }
        double sum = 0;
        for (int i = 0; i < rounds; i++) sum += us[i];
        qsort(us, (size_t)rounds, sizeof *us, cmp_d);
        double med = us[rounds / 2], p90 = us[rounds * 9 / 10];
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "context_tokens", json_integer(ctx[ci]));
            json_object_set_new(o, "context_bytes", json_integer((json_int_t)base.text.n));
            json_object_set_new(o, "median_us", json_real(med));
            json_object_set_new(o, "mean_us", json_real(sum / rounds));
            json_object_set_new(o, "p90_us", json_real(p90));
            json_array_append_new(out, o);
        } else {
            printf("%10d %10zu %12.2f %12.2f %12.2f %7.0f B\n", ctx[ci], base.text.n, med, sum / rounds, p90,
                   (double)window / rounds);
        }
        state_free(&base);
        state_free(&s);
    }
    if (json) {
        hsd_cli_put_json(out, JSON_COMPACT);
        out = NULL;
    }
    rc = 0;
done:
    json_decref(out);
    free(us);
    hsd_free(tids);
    hsd_free(dids);
    hsd_ids_free(&src);
    hsd_buf_free(&raw);
    hsd_tokenizer_free(tt);
    hsd_tokenizer_free(dt);
    return rc;
}

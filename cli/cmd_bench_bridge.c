/* hsd bench bridge: µs per round of the string bridge at growing context lengths.
 *
 * A round is what the engine's SLEM round and drafter resync do on the CPU besides the
 * forwards: hsd_bridge_candidates (draft bytes → target candidates), committing some target
 * tokens to the text, hsd_bridge_resync of the drafter side and hsd_bridge_advance of the
 * target side. The sides start as the engine starts them (the prompt frozen, the segment at
 * its end), so this is the engine's real per-round cost; it should not depend on the
 * context length because only a window behind the end is ever re-tokenized. The rounds run
 * in the library (hsd_bridge_bench), on the engine's own bridge code. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/prompts.h"
#include "hsd.h"
#include "hsd_tools.h"

#define BLOCK 25 /* rounds per block; each block starts again from the same context */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Corpus texts of the wanted kinds, joined by spaces, repeated until at least `bytes`
 * (malloc'ed, NUL-terminated; *len gets its length). */
static int corpus_text(const char *path, const char *kinds, size_t bytes, char **out, size_t *len) {
    char **texts;
    int n = hsd_cli_read_prompts_of("bench bridge", path, kinds, 0, 0, &texts);
    if (n < 0) return 1;
    size_t once = 0;
    for (int i = 0; i < n; i++) once += strlen(texts[i]) + 1;
    char *p = once > 1 ? malloc(bytes + once + 1) : NULL;
    size_t k = 0;
    while (p && k < bytes) /* copies of the joined texts, the copies joined by a space too */
        for (int i = 0; i < n; i++) {
            size_t l = strlen(texts[i]);
            if (k) p[k++] = ' ';
            memcpy(p + k, texts[i], l);
            k += l;
        }
    hsd_cli_free_prompts(texts, n);
    if (!p) return 1;
    p[k] = 0;
    *out = p, *len = k;
    return 0;
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
        fprintf(stderr, "hsd bench bridge: %s\n", hsd_cli_error("bench bridge"));
        hsd_tokenizer_free(tt);
        return 1;
    }
    int rc = 1;
    int32_t max_ctx = 0;
    for (int i = 0; i < n_ctx; i++) max_ctx = ctx[i] > max_ctx ? ctx[i] : max_ctx;
    char *raw = NULL;
    size_t raw_n = 0;
    int32_t *tids = NULL, *dids = NULL;
    size_t n_t = 0, n_d = 0;
    double *us = malloc((size_t)rounds * sizeof *us);
    json_t *out = json_array();
    hsd_bridge_bench_params bp = hsd_bridge_bench_default_params();
    bp.k = k, bp.rounds = rounds, bp.block = BLOCK, bp.seed = 7;
    /* 8 bytes per token is more than any of these tokenizers averages on prose */
    if (!us || corpus_text(corpus, kinds, (size_t)max_ctx * 8 + 4096, &raw, &raw_n)) {
        fprintf(stderr, "hsd bench bridge: cannot build text from %s (kinds %s)\n", corpus, kinds);
        goto done;
    }
    if (hsd_tokenizer_encode_alloc(tt, raw, raw_n, false, &tids, &n_t) ||
        hsd_tokenizer_encode_alloc(dt, raw, raw_n, false, &dids, &n_d)) {
        fprintf(stderr, "hsd bench bridge: %s\n", hsd_cli_error("bench bridge"));
        goto done;
    }
    /* draft chunks: k consecutive drafter tokens of the same text at random places */
    size_t n_src = n_d < 100000 ? n_d : 100000;
    if (n_t < (size_t)max_ctx || n_src <= (size_t)k) {
        fprintf(stderr, "hsd bench bridge: corpus too short (%zu target tokens)\n", n_t);
        goto done;
    }
    if (!json)
        printf("target %s, drafter %s, k = %d, %d rounds per context (blocks of %d from the same context)\n"
               "%10s %10s %12s %12s %12s %10s\n",
               tt_path, dt_path, k, rounds, BLOCK, "ctx tokens", "ctx bytes", "median us", "mean us", "p90 us",
               "window");
    for (int ci = 0; ci < n_ctx; ci++) {
        /* committed text = surface bytes of the first ctx target ids, as in the engine */
        hsd_bridge_bench_result res;
        bp.stream = (uint64_t)ci;
        if (hsd_bridge_bench(tt, dt, tids, n_t, dids, n_src, ctx[ci], &bp, us, &res)) {
            fprintf(stderr, "hsd bench bridge: %s\n", hsd_cli_error("bench bridge"));
            goto done;
        }
        double sum = 0;
        for (int i = 0; i < rounds; i++) sum += us[i];
        qsort(us, (size_t)rounds, sizeof *us, cmp_d);
        double med = us[rounds / 2], p90 = us[rounds * 9 / 10];
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "context_tokens", json_integer(ctx[ci]));
            json_object_set_new(o, "context_bytes", json_integer((json_int_t)res.context_bytes));
            json_object_set_new(o, "median_us", json_real(med));
            json_object_set_new(o, "mean_us", json_real(sum / rounds));
            json_object_set_new(o, "p90_us", json_real(p90));
            json_array_append_new(out, o);
        } else {
            printf("%10d %10zu %12.2f %12.2f %12.2f %7.0f B\n", ctx[ci], res.context_bytes, med,
                   sum / rounds, p90, res.window_bytes);
        }
    }
    if (json) {
        hsd_cli_put_json(out, JSON_COMPACT);
        out = NULL;
    }
    rc = 0;
done:
    json_decref(out);
    free(us);
    free(raw);
    hsd_free(tids);
    hsd_free(dids);
    hsd_tokenizer_free(tt);
    hsd_tokenizer_free(dt);
    return rc;
}

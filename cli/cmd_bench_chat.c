/* hsd bench chat: chat-template render cost, microseconds per conversation (bench/notes/chat.md
 * compares it with Python Jinja2 and @huggingface/jinja on the same template and context). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clock.h"
#include "cli/cli.h"
#include "hsd.h"

typedef struct chat_bench_opts {
    const char *tok, *context;
    int32_t iters;
    int json;
} chat_bench_opts;

#define O(f) offsetof(chat_bench_opts, f)
static const hsd_opt chat_bench_table[] = {
    {"tokenizer", 't', HSD_OPT_STRING, O(tok), "TEMPLATE",
     "the template (tokenizer_config.json, GGUF, directory or .jinja file)", 0, 0},
    {"context", 0, HSD_OPT_STRING, O(context), "FILE", "the variables (JSON object)", 0, 0},
    {"iters", 0, HSD_OPT_INT, O(iters), "N", "renders timed (default 2000)", 1, 1e8},
    HSD_OPT_ROW_JSON(chat_bench_opts, json),
};
#undef O

const hsd_cli_spec hsd_spec_bench_chat = {
    "bench chat", "-t TEMPLATE --context FILE [--iters N] [--json]",
    "  Times hsd_chat_render_json on a loaded template (best of 5 runs of N renders, the mean\n"
    "  per render), and loading (parsing) the template alone.\n",
    NULL, chat_bench_table, HSD_OPTS_N(chat_bench_table), 0,
};

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) b[n] = 0;
    fclose(f);
    return b;
}

int hsd_cmd_bench_chat(int argc, char **argv) {
    chat_bench_opts o = {0};
    o.iters = 2000;
    HSD_OPTS_PARSE(&hsd_spec_bench_chat, &o, argc, argv, NULL);
    if (!o.tok || !o.context) return hsd_opts_fail(&hsd_spec_bench_chat, "-t TEMPLATE and --context FILE are required");
    char *ctx = read_all(o.context);
    if (!ctx) {
        fprintf(stderr, "hsd bench chat: cannot read %s\n", o.context);
        return 1;
    }
    hsd_chat_template *t;
    double t0 = cli_timer_ms();
    int loads = 0;
    do { /* loading: parse time, repeated for a stable figure */
        if (hsd_chat_template_load(o.tok, NULL, &t)) {
            fprintf(stderr, "hsd bench chat: %s\n", hsd_cli_error("bench chat"));
            free(ctx);
            return 1;
        }
        if (++loads < 200) hsd_chat_template_free(t);
    } while (loads < 200);
    double load_us = (cli_timer_ms() - t0) * 1000.0 / loads;
    hsd_chat_params p = hsd_chat_default_params();
    p.now_unix = 1721952000;
    char *out = NULL;
    size_t n = 0;
    if (hsd_chat_render_json(t, ctx, &p, &out, &n)) {
        fprintf(stderr, "hsd bench chat: %s\n", hsd_cli_error("bench chat"));
        hsd_chat_template_free(t);
        free(ctx);
        return 1;
    }
    hsd_free(out);
    double best = 1e300;
    for (int run = 0; run < 5; run++) {
        double s = cli_timer_ms();
        for (int32_t i = 0; i < o.iters; i++) {
            hsd_chat_render_json(t, ctx, &p, &out, NULL);
            hsd_free(out);
        }
        double us = (cli_timer_ms() - s) * 1000.0 / o.iters;
        if (us < best) best = us;
    }
    if (o.json)
        printf("{\"render_us\": %.3f, \"load_us\": %.3f, \"output_bytes\": %zu, \"iters\": %d}\n", best, load_us, n,
               (int)o.iters);
    else
        printf("render %.2f us per conversation (%zu bytes out, best of 5 x %d), load %.2f us\n", best, n,
               (int)o.iters, load_us);
    hsd_chat_template_free(t);
    free(ctx);
    return 0;
}

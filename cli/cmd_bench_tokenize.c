/* hsd bench tokenize: single-thread encode throughput, same method and fields as
 * shared/tools/bench-hf.js (texts repeated to N MB, median of R runs, load time). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/clock.h"
#include "cli/cli.h"
#include "cli/prompts.h"
#include "hsd.h"

typedef struct btok_opts {
    const char *path, *corpus;
    double mb;
    int32_t runs;
    int json;
} btok_opts;

#define O(f) offsetof(btok_opts, f)
static const hsd_opt btok_table[] = {
    {"tokenizer", 't', HSD_OPT_STRING, O(path), "T", "tokenizer file", 0, 0},
    {"corpus", 0, HSD_OPT_STRING, O(corpus), "C", "JSONL {\"text\"} corpus", 0, 0},
    {"mb", 0, HSD_OPT_DOUBLE, O(mb), "N", "MB per run: the corpus repeated (default 8)", 1e-6, 1e6},
    {"runs", 0, HSD_OPT_INT, O(runs), "R", "timed runs; the median is reported (5)", 1, 1e6},
    {"json", 0, HSD_OPT_FLAG, O(json), NULL, "one JSON object (bench-hf.js fields)", 0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_bench_tokenize = {
    "bench tokenize", "-t T --corpus C [--mb N] [--runs R] [--json]",
    "  single-thread encode throughput, as shared/tools/bench-hf.js measures it\n", NULL,
    btok_table, HSD_OPTS_N(btok_table), 0,
};

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int hsd_cmd_bench_tokenize(int argc, char **argv) {
    btok_opts o = {0};
    o.mb = 8, o.runs = 5;
    HSD_OPTS_PARSE(&hsd_spec_bench_tokenize, &o, argc, argv, NULL);
    if (!o.path || !o.corpus)
        return hsd_opts_fail(&hsd_spec_bench_tokenize, "-t and --corpus are required");
    const char *path = o.path;
    double mb = o.mb;
    int runs = o.runs;
    bool json = o.json;
    char **texts = NULL;
    size_t *lens = NULL, nt = 0;
    if (hsd_cli_load_corpus(o.corpus, &texts, &lens, &nt)) return 1;
    if (!nt) {
        fprintf(stderr, "hsd bench tokenize: no texts in %s\n", o.corpus);
        return 1;
    }
    /* the batch: whole corpus passes until the byte target is reached (as bench-hf.js) */
    size_t target = (size_t)(mb * 1024 * 1024), bytes = 0, passes = 0;
    while (bytes < target) {
        for (size_t i = 0; i < nt; i++) bytes += lens[i];
        passes++;
    }
    double t0 = cli_timer_ms();
    hsd_tokenizer *tok;
    if (hsd_tokenizer_load_file(path, &tok)) {
        fprintf(stderr, "hsd bench: %s\n", hsd_cli_error("bench"));
        return 1;
    }
    double load_ms = cli_timer_ms() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long rss_kb = ru.ru_maxrss;
    size_t idcap = 1 << 16, tokens = 0;
    int32_t *ids = malloc(idcap * sizeof *ids);
    double *rates = calloc((size_t)runs, sizeof *rates);
    for (int r = -1; r < runs; r++) { /* r = -1: warm-up over 64 texts */
        double s = cli_timer_ms();
        size_t ntok = 0;
        for (size_t p = 0; p < (r < 0 ? 1 : passes); p++)
            for (size_t i = 0; i < (r < 0 ? (nt < 64 ? nt : 64) : nt); i++) {
                size_t got;
                hsd_status st = hsd_tokenizer_encode(tok, texts[i], lens[i], false, ids, idcap, &got);
                if (st == HSD_ERR_BUFFER_TOO_SMALL) {
                    idcap = got * 2;
                    ids = realloc(ids, idcap * sizeof *ids);
                    st = hsd_tokenizer_encode(tok, texts[i], lens[i], false, ids, idcap, &got);
                }
                if (st) {
                    fprintf(stderr, "hsd bench: %s\n", hsd_cli_error("bench"));
                    return 1;
                }
                ntok += got;
            }
        double sec = (cli_timer_ms() - s) / 1e3;
        if (r >= 0) {
            rates[r] = (double)bytes / (1024.0 * 1024.0) / sec;
            if (r == 0) tokens = ntok;
        }
    }
    double *sorted = malloc((size_t)runs * sizeof *sorted);
    memcpy(sorted, rates, (size_t)runs * sizeof *sorted);
    qsort(sorted, (size_t)runs, sizeof *sorted, cmp_d);
    double median = sorted[runs / 2];
    if (json) {
        printf("{\"impl\":\"hsd\",\"version\":\"%s\",\"load_ms\":%.1f,\"bytes\":%zu,\"tokens\":%zu,"
               "\"runs_mb_s\":[", hsd_version(), load_ms, bytes, tokens);
        for (int r = 0; r < runs; r++) printf("%s%.2f", r ? "," : "", rates[r]);
        printf("],\"median_mb_s\":%.2f,\"rss_after_load_kb\":%ld}\n", median, rss_kb);
    } else {
        printf("%s: load %.1f ms, %zu bytes, %zu tokens, median %.2f MB/s over %d runs, "
               "peak RSS after load %.1f MB\n",
               path, load_ms, bytes, tokens, median, runs, rss_kb / 1024.0);
    }
    free(sorted);
    free(rates);
    free(ids);
    hsd_cli_free_corpus(texts, lens, nt);
    hsd_tokenizer_free(tok);
    return 0;
}

/* hsd bench tokenize: single-thread encode throughput, same method and fields as
 * shared/tools/bench-hf.js (texts repeated to N MB, median of R runs, load time). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cli/cli.h"
#include "hsd.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int hsd_cmd_bench_tokenize(int argc, char **argv) {
    const char *path = NULL, *corpus = NULL;
    double mb = 8;
    int runs = 5;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--corpus") && i + 1 < argc) corpus = argv[++i];
        else if (!strcmp(argv[i], "--mb") && i + 1 < argc) mb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json")) json = true;
        else {
            fprintf(stderr, "usage: hsd bench tokenize -t T --corpus C [--mb N] [--runs R] [--json]\n");
            return 2;
        }
    }
    if (!path || !corpus || runs < 1 || mb <= 0) {
        fprintf(stderr, "usage: hsd bench tokenize -t T --corpus C [--mb N] [--runs R] [--json]\n");
        return 2;
    }
    FILE *f = fopen(corpus, "r");
    if (!f) {
        fprintf(stderr, "hsd bench: cannot open corpus %s\n", corpus);
        return 1;
    }
    char **texts = NULL;
    size_t *lens = NULL, nt = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t n;
    while ((n = getline(&line, &lcap, f)) >= 0) {
        json_t *j = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, NULL);
        json_t *t = j ? json_object_get(j, "text") : NULL;
        if (t && json_is_string(t)) {
            if (nt == cap) {
                cap = cap ? cap * 2 : 512;
                texts = realloc(texts, cap * sizeof *texts);
                lens = realloc(lens, cap * sizeof *lens);
            }
            lens[nt] = json_string_length(t);
            texts[nt] = malloc(lens[nt] + 1);
            memcpy(texts[nt], json_string_value(t), lens[nt] + 1);
            nt++;
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    if (!nt) {
        fprintf(stderr, "hsd bench: no {\"text\"} lines in %s\n", corpus);
        return 1;
    }
    /* the batch: whole corpus passes until the byte target is reached (as bench-hf.js) */
    size_t target = (size_t)(mb * 1024 * 1024), bytes = 0, passes = 0;
    while (bytes < target) {
        for (size_t i = 0; i < nt; i++) bytes += lens[i];
        passes++;
    }
    double t0 = now_ms();
    hsd_tokenizer *tok;
    if (hsd_tokenizer_load_file(path, &tok)) {
        fprintf(stderr, "hsd bench: %s\n", hsd_last_error());
        return 1;
    }
    double load_ms = now_ms() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long rss_kb = ru.ru_maxrss;
    size_t idcap = 1 << 16, tokens = 0;
    int32_t *ids = malloc(idcap * sizeof *ids);
    double *rates = calloc((size_t)runs, sizeof *rates);
    for (int r = -1; r < runs; r++) { /* r = -1: warm-up over 64 texts */
        double s = now_ms();
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
                    fprintf(stderr, "hsd bench: %s\n", hsd_last_error());
                    return 1;
                }
                ntok += got;
            }
        double sec = (now_ms() - s) / 1e3;
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
    for (size_t i = 0; i < nt; i++) free(texts[i]);
    free(texts);
    free(lens);
    hsd_tokenizer_free(tok);
    return 0;
}

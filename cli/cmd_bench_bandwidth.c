/* hsd bench bandwidth: the memory read bandwidth a forward pass can hope for, measured as a
 * forward reads its weights: T threads each streaming their share of a buffer much larger
 * than the caches, once per repetition. A memory-bound forward(1) cannot beat
 * weight bytes ÷ this bandwidth (the "bandwidth floor" of bench/RESULTS.md and bench/notes/). */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "hsd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* 4 independent 32-byte streams of loads, xor-folded so the loads cannot be dropped */
__attribute__((target("avx2"))) static uint64_t read_avx2(const uint8_t *p, size_t len) {
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i + 128 <= len; i += 128) {
        a = _mm256_xor_si256(a, _mm256_load_si256((const __m256i *)(const void *)(p + i)));
        b = _mm256_xor_si256(b, _mm256_load_si256((const __m256i *)(const void *)(p + i + 32)));
        c = _mm256_xor_si256(c, _mm256_load_si256((const __m256i *)(const void *)(p + i + 64)));
        d = _mm256_xor_si256(d, _mm256_load_si256((const __m256i *)(const void *)(p + i + 96)));
    }
    a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    return (uint64_t)_mm256_extract_epi64(a, 0) ^ (uint64_t)_mm256_extract_epi64(a, 3);
}
#endif

static uint64_t read_all(const uint8_t *p, size_t len) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2")) return read_avx2(p, len);
#endif
    uint64_t s = 0, v;
    for (size_t i = 0; i + 8 <= len; i += 8) memcpy(&v, p + i, 8), s ^= v;
    return s;
}

typedef struct bw_ctx {
    const uint8_t *buf;
    size_t slice; /* bytes per thread (multiple of 128) */
    int32_t reps, threads;
    pthread_barrier_t start, done;
    double *ms; /* [reps] wall time of each repetition (thread 0 measures) */
    volatile uint64_t sink;
} bw_ctx;

static void *bw_worker(void *arg) {
    bw_ctx *c = ((void **)arg)[0];
    int32_t tid = (int32_t)(intptr_t)((void **)arg)[1];
    for (int32_t r = 0; r < c->reps; r++) {
        pthread_barrier_wait(&c->start);
        double t0 = hsd_timer_ms();
        uint64_t s = read_all(c->buf + (size_t)tid * c->slice, c->slice);
        pthread_barrier_wait(&c->done);
        if (tid == 0) c->ms[r] = hsd_timer_ms() - t0;
        c->sink ^= s;
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct bw_opts {
    int32_t threads, reps;
    double mb, weights_mb;
} bw_opts;

#define O(f) offsetof(bw_opts, f)
static const hsd_opt bw_table[] = {
    {"threads", 0, HSD_OPT_INT, O(threads), "T", "reading threads (2)", 1, 256},
    {"mb", 0, HSD_OPT_DOUBLE, O(mb), "MB", "buffer size, much larger than the caches (1024)", 1,
     1e7},
    {"reps", 0, HSD_OPT_INT, O(reps), "R", "repetitions; the median is reported (15)", 1, 1e6},
    {"weights-mb", 0, HSD_OPT_DOUBLE, O(weights_mb), "W",
     "also print the forward(1) floor W / bandwidth", 0, 1e9},
};
#undef O

const hsd_cli_spec hsd_spec_bench_bandwidth = {
    "bench bandwidth",
    "[--threads 2] [--mb 1024] [--reps 15] [--weights-mb W]",
    "  median read bandwidth of T threads streaming an MB-sized buffer (>> caches); with\n"
    "  --weights-mb, the forward(1) floor W / bandwidth\n",
    NULL,
    bw_table,
    HSD_OPTS_N(bw_table),
    0,
};

int hsd_cmd_bench_bandwidth(int argc, char **argv) {
    bw_opts o = {2, 15, 1024, 0};
    HSD_OPTS_PARSE(&hsd_spec_bench_bandwidth, &o, argc, argv, NULL);
    int32_t threads = o.threads, reps = o.reps;
    double mb = o.mb, weights_mb = o.weights_mb;
    bw_ctx c;
    memset(&c, 0, sizeof c);
    c.threads = threads;
    c.reps = reps;
    c.slice = ((size_t)(mb * 1e6) / (size_t)threads) & ~(size_t)127;
    void *buf = NULL;
    if (posix_memalign(&buf, 4096, c.slice * threads) != 0) {
        fprintf(stderr, "hsd bench bandwidth: cannot allocate %.0f MB\n", mb);
        return 1;
    }
    memset(buf, 1, c.slice * threads); /* fault the pages in before timing */
    c.buf = buf;
    c.ms = calloc((size_t)reps, sizeof *c.ms);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    void *(*args)[2] = calloc((size_t)threads, sizeof *args);
    if (!c.ms || !th || !args) {
        fprintf(stderr, "hsd bench bandwidth: out of memory\n");
        return free(buf), free(c.ms), free(th), free(args), 1;
    }
    pthread_barrier_init(&c.start, NULL, (unsigned)threads);
    pthread_barrier_init(&c.done, NULL, (unsigned)threads);
    int32_t started = 1;
    for (int32_t t = 0; t < threads; t++) args[t][0] = &c, args[t][1] = (void *)(intptr_t)t;
    for (int32_t t = 1; t < threads; t++, started++)
        if (pthread_create(&th[t], NULL, bw_worker, args[t]) != 0) break;
    if (started < threads) { /* barriers would wait forever: nothing to measure */
        fprintf(stderr, "hsd bench bandwidth: could not start %d threads\n", threads);
        return 1; /* process exit reclaims the started threads */
    }
    bw_worker(args[0]);
    for (int32_t t = 1; t < threads; t++) pthread_join(th[t], NULL);
    qsort(c.ms, (size_t)reps, sizeof *c.ms, cmp_double);
    double bytes = (double)c.slice * threads, med = c.ms[reps / 2], best = c.ms[0];
    double gbs = bytes / med / 1e6;
    printf(
        "read bandwidth: %d threads, %.0f MB buffer, %d reps: median %.2f GB/s (best %.2f GB/s)\n",
        threads, bytes / 1e6, reps, gbs, bytes / best / 1e6);
    if (weights_mb > 0)
        printf("forward(1) floor for %.1f MB of weights: %.1f ms (80%%: %.1f ms)\n", weights_mb,
               weights_mb / gbs, weights_mb / gbs / 0.8);
    pthread_barrier_destroy(&c.start);
    pthread_barrier_destroy(&c.done);
    free(buf), free(c.ms), free(th), free(args);
    return 0;
}

/* What the llama.cpp peer drivers (llama_forward.c, llama_prefill.c) share: a millisecond
 * clock, a comparison for qsort's medians, and a log callback that keeps llama.cpp's warnings
 * and errors only. Bench code, built against llama.cpp's headers by the bench scripts. */
#ifndef HSD_BENCH_PEER_UTIL_H
#define HSD_BENCH_PEER_UTIL_H

#include <stdio.h>
#include <time.h>

#include "ggml-backend.h"

/* ms on `clock` (CLOCK_MONOTONIC, or CLOCK_PROCESS_CPUTIME_ID for CPU time) */
static inline double peer_ms(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static inline int peer_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline void peer_quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

#endif

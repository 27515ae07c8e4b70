/* The CLI's clock and the generator of its benchmarks' random inputs. The library's own clock
 * and Philox generator are internal (issue 20: no timer or RNG in the exported ABI), so the
 * CLI, a pure client of the public API, keeps these few lines itself. */
#ifndef HSD_CLI_CLOCK_H
#define HSD_CLI_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic wall milliseconds. */
static inline double cli_timer_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* CPU milliseconds of the whole process (all threads): on a shared machine it leaves out
 * the time other processes held the CPU. */
static inline double cli_timer_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* SplitMix64 (Steele et al., OOPSLA'14): random token ids for timing runs, where only
 * "arbitrary but reproducible" matters. */
typedef struct cli_rng {
    uint64_t s;
} cli_rng;
static inline void cli_rng_init(cli_rng *r, uint64_t seed) {
    r->s = seed;
}
static inline uint32_t cli_rng_u32(cli_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

#endif

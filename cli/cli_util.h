/* Small helpers shared by CLI subcommands. */
#ifndef HSD_CLI_UTIL_H
#define HSD_CLI_UTIL_H

#include <stdint.h>
#include <time.h>

static inline double hsd_cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of the whole process (all threads): on a shared machine it leaves out the time
 * other processes held the CPU, which wall time counts. */
static inline double hsd_cli_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Parses "1,2,4" into out (cap entries); returns the count or -1 on a bad list. */
static inline int hsd_cli_parse_ints(const char *s, int32_t *out, int cap) {
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || n == cap || v < -2147483647L || v > 2147483647L) return -1;
        out[n++] = (int32_t)v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return n;
}

#endif

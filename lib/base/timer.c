#include "lib/base/timer.h"

#include <time.h>

double hsd_timer_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* CPU time of the whole process (all threads): on a shared machine it leaves out the time
 * other processes held the CPU, which wall time counts. */
double hsd_timer_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Monotonic milliseconds for the library's own time accounting (model head / backbone split). */
#ifndef HSD_LIB_TIMER_H
#define HSD_LIB_TIMER_H

#include <time.h>

static inline double hsd_timer_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

#endif

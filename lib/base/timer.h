/* Monotonic and process-CPU milliseconds for time accounting (model head / backbone split,
 * the engine's TTFT/TPOT): the one clock of the library. Internal (not in the exported ABI
 * since issue 20: the CLI, a client, keeps its own clock in cli/clock.h); defined in timer.c. */
#ifndef HSD_LIB_TIMER_H
#define HSD_LIB_TIMER_H

#include "hsd.h"

/* Monotonic milliseconds (CLOCK_MONOTONIC). Thread-safe. */
double hsd_timer_ms(void);
/* CPU milliseconds of the whole process, all threads (CLOCK_PROCESS_CPUTIME_ID). */
double hsd_timer_cpu_ms(void);

#endif

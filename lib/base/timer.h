/* Monotonic and process-CPU milliseconds for time accounting (model head / backbone split,
 * the engine's TTFT/TPOT, the CLI's benchmarks): the one clock of the tree. Public
 * (hsd_timer_ms, hsd_timer_cpu_ms in include/hsd_tools.h); defined in timer.c. */
#ifndef HSD_LIB_TIMER_H
#define HSD_LIB_TIMER_H

#include "hsd.h"

#endif

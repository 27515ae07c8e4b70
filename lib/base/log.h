/* Internal logging: the library never prints; notices (e.g. "CUDA backend not used (no CUDA device (...)); using CPU") go
 * to the caller's callback set with hsd_log_set, or nowhere. */
#ifndef HSD_LIB_LOG_H
#define HSD_LIB_LOG_H

#include "hsd.h"
#include "lib/base/error.h"

void hsd_log(hsd_log_level level, const char *fmt, ...) HSD_PRINTF(2, 3);

#endif

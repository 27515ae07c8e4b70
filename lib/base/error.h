/* Internal error reporting: set the thread-local message and return the status, so that a
 * failure site reads `return hsd_error(HSD_ERR_PARSE, "%s: ...", path);` (SQLite style). */
#ifndef HSD_LIB_ERROR_H
#define HSD_LIB_ERROR_H

#include "hsd.h"

#if defined(__GNUC__)
#define HSD_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HSD_PRINTF(a, b)
#endif

hsd_status hsd_error(hsd_status s, const char *fmt, ...) HSD_PRINTF(2, 3);
/* Prefix the current message with context ("loading x.json: " + old message). */
hsd_status hsd_error_prefix(hsd_status s, const char *fmt, ...) HSD_PRINTF(2, 3);
void hsd_error_clear(void);

#endif

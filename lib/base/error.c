#include "lib/base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HSD_ERR_CAP 1024

static _Thread_local char err_msg[HSD_ERR_CAP];

const char *hsd_last_error(void) { return err_msg; }

void hsd_error_clear(void) { err_msg[0] = 0; }

hsd_status hsd_error(hsd_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    return s;
}

hsd_status hsd_error_prefix(hsd_status s, const char *fmt, ...) {
    char old[HSD_ERR_CAP];
    memcpy(old, err_msg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof err_msg)
        snprintf(err_msg + n, sizeof err_msg - (size_t)n, "%s", old);
    return s;
}

const char *hsd_status_str(hsd_status s) {
    switch (s) {
    case HSD_OK: return "HSD_OK";
    case HSD_ERR_INVALID_ARG: return "HSD_ERR_INVALID_ARG";
    case HSD_ERR_IO: return "HSD_ERR_IO";
    case HSD_ERR_PARSE: return "HSD_ERR_PARSE";
    case HSD_ERR_UNSUPPORTED: return "HSD_ERR_UNSUPPORTED";
    case HSD_ERR_INVALID_UTF8: return "HSD_ERR_INVALID_UTF8";
    case HSD_ERR_OUT_OF_RANGE: return "HSD_ERR_OUT_OF_RANGE";
    case HSD_ERR_NOMEM: return "HSD_ERR_NOMEM";
    case HSD_ERR_BUFFER_TOO_SMALL: return "HSD_ERR_BUFFER_TOO_SMALL";
    case HSD_ERR_INTERNAL: return "HSD_ERR_INTERNAL";
    }
    return "HSD_ERR_UNKNOWN";
}

/* From the header this library was built with, so the two cannot drift apart. */
const char *hsd_version(void) {
    return HSD_VERSION_STRING;
}

void hsd_free(void *p) { free(p); }

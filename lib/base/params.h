/* Size-prefixed structs (issue 20, the zstd / llama.cpp convention): every params struct of
 * the public API, hsd_model_iface, and every struct passed as an array starts with
 * `size_t size`, the sizeof the caller's header gave. A newer library reads min(caller size,
 * own size) bytes and keeps its defaults for the tail the caller does not know; an older
 * library reads only the fields it knows. The one place this copy is made. */
#ifndef HSD_LIB_PARAMS_H
#define HSD_LIB_PARAMS_H

#include <stddef.h>

#include "hsd.h"

/* The smallest size any version of a size-prefixed struct has: its size field. */
#define HSD_PARAMS_MIN_SIZE sizeof(size_t)

/* dst (own_size bytes) holds the defaults; src is the caller's struct, whose first member is
 * its size. Copies min(src size, own_size) bytes over dst and sets dst's size to own_size, so
 * the rest keeps the defaults. A NULL src leaves the defaults. Errors: INVALID_ARG naming fn
 * and what (e.g. "hsd_model_load: params->size is 0 (start from hsd_model_default_params)")
 * for a size of 0 or below HSD_PARAMS_MIN_SIZE; dst is then left as it was. */
hsd_status hsd_params_read(void *dst, size_t own_size, const void *src, const char *fn,
                           const char *what, const char *init_hint);

/* The size a caller's size-prefixed struct declares (its first member). */
static inline size_t hsd_params_size(const void *p) {
    return *(const size_t *)p;
}

/* Element i of a caller's array of size-prefixed structs, striding by the first element's
 * size (every element of one array has the same size). */
static inline const void *hsd_params_at(const void *base, size_t stride, size_t i) {
    return (const char *)base + stride * i;
}

#endif

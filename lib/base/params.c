#include "lib/base/params.h"

#include <string.h>

#include "lib/base/error.h"

hsd_status hsd_params_read(void *dst, size_t own_size, const void *src, const char *fn,
                           const char *what, const char *init_hint) {
    if (!src) return HSD_OK;
    size_t size = hsd_params_size(src);
    if (size < HSD_PARAMS_MIN_SIZE)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "%s: %s->size is %zu, smaller than its size field (start from %s, which "
                         "sets it to sizeof)",
                         fn, what, size, init_hint);
    /* an older caller's struct is shorter (the tail keeps the defaults); a newer caller's is
     * longer (the fields this library does not know are ignored) */
    memcpy(dst, src, size < own_size ? size : own_size);
    *(size_t *)dst = own_size;
    return HSD_OK;
}

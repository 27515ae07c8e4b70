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

#include "hsd_tools.h"

size_t hsd_struct_size(const char *name) {
    /* the structs a binding mirrors (and every size-prefixed one) */
#define HSD_STRUCT(t) {#t, sizeof(t)}
    static const struct {
        const char *name;
        size_t size;
    } known[] = {
        HSD_STRUCT(hsd_model_params),   HSD_STRUCT(hsd_model_batch_seq),
        HSD_STRUCT(hsd_model_iface),    HSD_STRUCT(hsd_gen_params),
        HSD_STRUCT(hsd_gen_result),     HSD_STRUCT(hsd_slrs_stats),
        HSD_STRUCT(hsd_head_params),    HSD_STRUCT(hsd_model_timing),
        HSD_STRUCT(hsd_batch_params),   HSD_STRUCT(hsd_batch_event),
        HSD_STRUCT(hsd_chat_params),    HSD_STRUCT(hsd_proposer_params),
        HSD_STRUCT(hsd_proposer_stats), HSD_STRUCT(hsd_psi_params),
        HSD_STRUCT(hsd_inj_params),     HSD_STRUCT(hsd_trim_params),
        HSD_STRUCT(hsd_synth_params),   HSD_STRUCT(hsd_inflate_params),
        HSD_STRUCT(hsd_bridge_bench_params), HSD_STRUCT(hsd_pair_psi),
        HSD_STRUCT(hsd_pair_report),
    };
#undef HSD_STRUCT
    for (size_t i = 0; name && i < sizeof known / sizeof *known; i++)
        if (!strcmp(name, known[i].name)) return known[i].size;
    return 0;
}

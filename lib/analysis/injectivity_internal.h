/* Shared between the injectivity checker and its fuzzer. */
#ifndef HSD_LIB_INJECTIVITY_INTERNAL_H
#define HSD_LIB_INJECTIVITY_INTERNAL_H

#include "hsd_tools.h"
#include "lib/analysis/injectivity.h"

/* Records s (known not to round-trip) with its decoding, and if `minimize`, its minimal
 * counterexample and cause. */
hsd_status hsd_inj_result_add(hsd_inj_result *r, const hsd_tokenizer *tok, const char *s,
                              size_t n, int64_t sample, bool minimize);

#endif

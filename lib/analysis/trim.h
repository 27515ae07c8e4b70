/* The trim arithmetic behind hsd_trim_optimum / hsd_trim_eval (include/hsd_tools.h): kept out
 * of the exported ABI (one-line helpers are no API); tests link the static library. */
#ifndef HSD_LIB_ANALYSIS_TRIM_H
#define HSD_LIB_ANALYSIS_TRIM_H

#include <stdint.h>

#include "hsd_tools.h"

/* prefix[k] = sum of the counts of order[0..k) (prefix[0] = 0), n + 1 entries. NULL
 * arguments or n < 0: no-op. */
void hsd_trim_prefix(const int64_t *counts, const int32_t *order, int32_t n, int64_t *prefix);
/* C(K) = prefix[k] / total; 0 when total <= 0, k < 0 or prefix is NULL. */
double hsd_trim_coverage(const int64_t *prefix, int64_t total, int32_t k);
/* R(K) for a head of v_full rows; 0 for a NULL p or a head of no FLOPs. */
double hsd_trim_saving(const hsd_trim_params *p, int32_t v_full, int32_t k);

#endif

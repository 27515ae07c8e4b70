#include "kernels/head_ops.h"

#include <math.h>
#include <stdlib.h>

/* "a ranks before b": larger score, then smaller index (a total order, so selection is
 * deterministic whatever the input). */
static inline int before(const float *s, int32_t a, int32_t b) {
    float x = s[a], y = s[b];
    if (isnan(x)) x = -INFINITY;
    if (isnan(y)) y = -INFINITY;
    return x > y || (x == y && a < b);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int32_t hsd_topk_ids(const float *s, int32_t n, int32_t k, int32_t *idx, int32_t *work) {
    if (k <= 0 || n <= 0) return 0;
    if (k > n) k = n;
    for (int32_t i = 0; i < n; i++) work[i] = i;
    /* quickselect (median-of-three pivots) until work[0..k) holds the k first in order */
    int32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2, a = work[lo], b = work[mid], c = work[hi];
        int32_t piv = before(s, a, b) ? (before(s, b, c)   ? b
                                         : before(s, a, c) ? c
                                                           : a)
                                      : (before(s, a, c)   ? a
                                         : before(s, b, c) ? c
                                                           : b);
        int32_t i = lo, j = hi;
        while (i <= j) {
            while (before(s, work[i], piv)) i++;
            while (before(s, piv, work[j])) j--;
            if (i <= j) {
                int32_t t = work[i];
                work[i] = work[j];
                work[j] = t;
                i++;
                j--;
            }
        }
        if (k - 1 <= j)
            hi = j;
        else if (k - 1 >= i)
            lo = i;
        else
            break;
    }
    for (int32_t i = 0; i < k; i++) idx[i] = work[i];
    qsort(idx, (size_t)k, sizeof *idx, cmp_i32);
    return k;
}

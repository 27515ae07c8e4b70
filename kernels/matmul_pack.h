/* Load-time packed copies of weight matrices for the AVX-512 products (kernels-internal).
 *
 * Q8_0 and BF16 products under AVX-512 read their weights row-interleaved: rows in groups of
 * 16, one row per vector lane (layouts: matmul_q8.h, matmul_bf16p.h), so that one weight
 * vector feeds every token of a tile with no horizontal sum. hsd_mm_pack keeps such a copy of
 * a matrix on the matrix itself (hsd_mat.packed; it was a process-wide registry keyed by the
 * data pointer, searched under a mutex on every product). Products of matrices without a
 * copy, and of row subsets, pack one group at a time into scratch: the same lanes, the same
 * bits. */
#ifndef HSD_KERNELS_MATMUL_PACK_H
#define HSD_KERNELS_MATMUL_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "kernels/cpu_ops.h"
#include "kernels/threadpool.h"

#define HSD_MM_PACK_ROWS 16 /* rows per group, one per 32-bit lane of a 512-bit vector */

/* A packed copy of a matrix. */
typedef struct hsd_mm_packed {
    const void *src; /* the matrix data it was packed from */
    hsd_dtype type;
    int32_t rows, cols;
    size_t group_bytes; /* bytes per group, a multiple of 64 */
    uint8_t *data;      /* 64-byte aligned, ceil(rows/16) groups */
} hsd_mm_packed;

/* hsd_mm_pack_on (kernels/matmul.h) for a matrix whose data lies in a private read-only file
 * mapping (never written: a dropped page faults back in from the page cache with the file's
 * bytes): each thread hands the whole pages of the rows it has packed back to the kernel
 * (MADV_DONTNEED) every 2 MB as it goes, so that loading holds about one copy of the weights
 * at its peak (before: one copy plus the largest matrix, the tied classifier: +215 MB for a
 * 1B Q4_K_M file, +525 MB in BF16). The pages at the ends of the threads' row ranges stay:
 * the caller drops the matrix's whole pages afterwards (models/tf_load.c). Not for data in
 * ordinary memory, whose contents a drop would zero. */
hsd_status hsd_mm_pack_release(hsd_mat *w, hsd_pool *pool, int32_t nth);

/* Whether storage type t has a row-interleaved layout (Q8_0, Q5_0, Q4_0, Q5_1, Q4_1:
 * matmul_q8.h; BF16;
 * Q4_K/Q5_K/Q6_K: matmul_kq.h): its AVX-512 products run on 16-row groups. */
static inline bool hsd_mm_packed_type(hsd_dtype t) {
    return t == HSD_DT_Q8_0 || t == HSD_DT_Q5_0 || t == HSD_DT_Q4_0 || t == HSD_DT_Q5_1 ||
           t == HSD_DT_Q4_1 || t == HSD_DT_BF16 || t == HSD_DT_Q4_K || t == HSD_DT_Q5_K ||
           t == HSD_DT_Q6_K;
}

/* The packed copy of w, or NULL: w's own, where it was packed from w's data and shape (a view
 * of part of a packed matrix copies the pointer, not the layout). */
static inline const hsd_mm_packed *hsd_mm_packed_find(const hsd_mat *w) {
    const hsd_mm_packed *p = w->packed;
    return p && p->src == w->data && p->type == w->type && p->rows == w->rows &&
                   p->cols == w->cols
               ? p
               : NULL;
}

/* Pointers to the `count` (<= 16) rows of one group: w's rows ids[first + j] with ids, else
 * first + j. */
static inline void hsd_mm_group_rows(const hsd_mat *w, const int32_t *ids, int32_t first,
                                     int32_t count, const uint8_t **rows) {
    const size_t rb = hsd_dtype_row_bytes(w->type, w->cols);
    for (int32_t j = 0; j < count; j++)
        rows[j] = (const uint8_t *)w->data + (size_t)(ids ? ids[first + j] : first + j) * rb;
}

/* The packed groups (of HSD_MM_PACK_ROWS rows) that the row range [r0, r0 + count) covers, as
 * at most three spans: a first group cut at r0, the whole groups, a last group cut at the end.
 * Span i covers n_groups groups from group g, their rows lo..hi-1 (relative to the group),
 * written at out + out_off. Returns the number of spans. */
typedef struct hsd_mm_span {
    int32_t g, n_groups, lo, hi, out_off;
} hsd_mm_span;
static inline int hsd_mm_group_spans(int32_t r0, int32_t count, hsd_mm_span sp[3]) {
    const int32_t G = HSD_MM_PACK_ROWS, end = r0 + count, g1 = (end + G - 1) / G;
    int32_t g = r0 / G;
    int n = 0;
    if (r0 % G) { /* a first group cut by the row range */
        sp[n++] = (hsd_mm_span){g, 1, r0 % G, end - g * G < G ? end - g * G : G, 0};
        g++;
    }
    int32_t whole = end / G - g; /* whole groups from g on */
    if (whole > 0) {
        sp[n++] = (hsd_mm_span){g, whole, 0, G, g * G - r0};
        g += whole;
    }
    if (g < g1) sp[n++] = (hsd_mm_span){g, 1, 0, end - g * G, g * G - r0};
    return n;
}

#endif

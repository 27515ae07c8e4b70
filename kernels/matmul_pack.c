/* Copies packed at load time (see matmul_pack.h; the layouts: matmul_q8.h for the 32-block
 * types, matmul_bf16p.h, matmul_kq.h), kept on their matrix (hsd_mat.packed). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/matmul.h"
#include "kernels/matmul_bf16p.h"
#include "kernels/matmul_kq.h"
#include "kernels/matmul_q8.h"
#include "lib/base/error.h"

size_t hsd_q8p_group_bytes(hsd_dtype t, int32_t cols) {
    return ((size_t)cols / 32 + 1) / 2 * hsd_q8p_pair_bytes(t); /* whole pairs (matmul_q8.h) */
}

#define HUGE_ALIGN ((size_t)2 << 20)

#ifdef HSD_MM_HAVE_AVX512
/* Groups [tid·G/nth, (tid+1)·G/nth) of one copy: threads write disjoint pages, so the first
 * touch of the new memory (the kernel zeroing it: most of the packing time on this VM) runs
 * on every thread. */
typedef struct pack_job {
    const hsd_mat *w;
    uint8_t *dst;
    size_t gb;
    int32_t groups;
    bool release; /* hand the source pages back as they are packed (hsd_mm_pack_release) */
} pack_job;

#define RELEASE_BYTES ((size_t)2 << 20) /* source bytes packed between two releases */

static void pack_task(void *arg, int32_t tid, int32_t nth) {
    const pack_job *j = arg;
    const hsd_mat *w = j->w;
    const uint8_t *rows[HSD_MM_PACK_ROWS];
    int32_t g0 = (int32_t)((int64_t)j->groups * tid / nth),
            g1 = (int32_t)((int64_t)j->groups * (tid + 1) / nth);
    /* Released so far: whole pages from the first one inside this thread's rows (a page
     * shared with the neighbour's rows stays for the caller's final release: dropping it
     * early would be safe, only a fault more for the neighbour). */
    const size_t rb = hsd_dtype_row_bytes(w->type, w->cols),
                 pg = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t base = (uintptr_t)w->data;
    uintptr_t done = (base + (size_t)g0 * HSD_MM_PACK_ROWS * rb + pg - 1) & ~(uintptr_t)(pg - 1);
    int32_t every = (int32_t)(RELEASE_BYTES / (HSD_MM_PACK_ROWS * rb));
    if (every < 1) every = 1;
    for (int32_t g = g0; g < g1; g++) {
        int32_t c = w->rows - g * HSD_MM_PACK_ROWS;
        if (c > HSD_MM_PACK_ROWS) c = HSD_MM_PACK_ROWS;
        hsd_mm_group_rows(w, NULL, g * HSD_MM_PACK_ROWS, c, rows);
        if (hsd_q8p_type(w->type))
            hsd_q8p_pack_group(w->type, rows, c, w->cols / 32, j->dst + (size_t)g * j->gb);
        else if (w->type != HSD_DT_BF16)
            hsd_kqp_pack_group(w->type, rows, c, w->cols / HSD_QK_K, j->dst + (size_t)g * j->gb);
        else
            hsd_bf16p_pack_group(rows, c, w->cols, j->dst + (size_t)g * j->gb);
        if (j->release && ((g - g0 + 1) % every == 0 || g == g1 - 1)) {
            uintptr_t end = (base + (size_t)(g * HSD_MM_PACK_ROWS + c) * rb) & ~(uintptr_t)(pg - 1);
            if (end > done) (void)madvise((void *)done, end - done, MADV_DONTNEED);
            if (end > done) done = end;
        }
    }
}

hsd_status hsd_mm_pack(hsd_mat *w) {
    return hsd_mm_pack_on(w, NULL, 1);
}

static hsd_status pack_copy(hsd_mat *w, hsd_pool *pool, int32_t nth, bool release);

hsd_status hsd_mm_pack_on(hsd_mat *w, hsd_pool *pool, int32_t nth) {
    return pack_copy(w, pool, nth, false);
}

hsd_status hsd_mm_pack_release(hsd_mat *w, hsd_pool *pool, int32_t nth) {
    return pack_copy(w, pool, nth, true);
}

static hsd_status pack_copy(hsd_mat *w, hsd_pool *pool, int32_t nth, bool release) {
    /* only where the products will read it (AVX-512 and AMX): not under the avx2 or scalar
     * override (1.3 GB saved for a 1B Q8_0 model, 2.5 GB for BF16) */
    const bool q8 = hsd_q8p_type(w->type), kq = hsd_quant_is_q8k(w->type);
    if (!hsd_mm_packed_type(w->type) || w->rows <= 0 || w->cols <= 0 ||
        (q8 && (w->cols < 32 || w->cols % 32 != 0)) ||
        (kq && (w->cols < HSD_QK_K || w->cols % HSD_QK_K != 0)) ||
        hsd_mm_isa_default() < HSD_MM_AVX512)
        return HSD_OK;
    if (hsd_mm_packed_find(w)) return HSD_OK;
    if (w->packed) hsd_mm_unpack(w); /* another shape or data since (a reused struct) */
    hsd_mm_packed *p;

    int32_t groups = (w->rows + HSD_MM_PACK_ROWS - 1) / HSD_MM_PACK_ROWS;
    size_t gb = q8   ? hsd_q8p_group_bytes(w->type, w->cols)
                : kq ? hsd_kqp_group_bytes(w->type, w->cols)
                     : hsd_bf16p_group_bytes(w->cols);
    p = calloc(1, sizeof *p);
    void *data = NULL;
    size_t bytes = gb * (size_t)groups;
    if (!p || posix_memalign(&data, HUGE_ALIGN, bytes) != 0) {
        free(p);
        return hsd_error(HSD_ERR_NOMEM,
                         "matmul: out of memory packing a %d x %d %s matrix (%zu bytes)", w->rows,
                         w->cols, hsd_dtype_name(w->type), gb * (size_t)groups);
    }
#ifdef MADV_HUGEPAGE
    /* 2 MB pages: the hardware prefetchers stop at page boundaries, and a stream of 4 KB
     * pages ran the n = 1 product ~20% below a mapped file's (huge-page) speed. Advice
     * only: without it the copy is just slower. */
    if (bytes >= HUGE_ALIGN) (void)madvise(data, bytes, MADV_HUGEPAGE);
#endif
    *p = (hsd_mm_packed){w->data, w->type, w->rows, w->cols, gb, data};
    pack_job job = {w, p->data, gb, groups, release};
    if (!pool || nth < 2 || bytes < 2 * HUGE_ALIGN)
        pack_task(&job, 0, 1);
    else
        hsd_pool_run(pool, pack_task, &job, nth < hsd_pool_size(pool) ? nth : hsd_pool_size(pool));

    w->packed = p;
    return HSD_OK;
}

#else
hsd_status hsd_mm_pack(hsd_mat *w) {
    (void)w; /* no AVX-512 kernels in this build: nothing reads a packed copy */
    return HSD_OK;
}

hsd_status hsd_mm_pack_on(hsd_mat *w, hsd_pool *pool, int32_t nth) {
    (void)pool, (void)nth;
    return hsd_mm_pack(w);
}

hsd_status hsd_mm_pack_release(hsd_mat *w, hsd_pool *pool, int32_t nth) {
    (void)pool, (void)nth;
    return hsd_mm_pack(w);
}
#endif

void hsd_mm_unpack(hsd_mat *w) {
    if (!w || !w->packed) return;
    hsd_mm_packed *p = (hsd_mm_packed *)w->packed;
    w->packed = NULL;
    free(p->data), free(p);
}

/* The registry of copies packed at load time (see matmul_pack.h; the layouts: matmul_q8.h,
 * matmul_bf16p.h). hsd_mm_run looks a matrix up once per call; an entry also checks the
 * type, rows and cols, so a view of part of a packed matrix (another pointer or shape) is
 * never mistaken for it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernels/matmul.h"
#include "kernels/matmul_bf16p.h"
#include "kernels/matmul_kq.h"
#include "kernels/matmul_q8.h"
#include "lib/base/error.h"

size_t hsd_q8p_group_bytes(int32_t cols) {
    size_t nb = (size_t)cols / 32;
    size_t b = nb * (HSD_Q8P_BLOCK_BYTES + HSD_Q8P_SCALE_BYTES);
    return (b + 63) & ~(size_t)63;
}

/* ---- registry --------------------------------------------------------------------------- */

#define HUGE_ALIGN ((size_t)2 << 20)

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static hsd_mm_packed **reg;
static size_t reg_n, reg_cap;

/* index of w's entry, or reg_n (caller holds reg_mu) */
static size_t reg_index(const hsd_mat *w) {
    size_t i = 0;
    while (i < reg_n && !(reg[i]->src == w->data && reg[i]->type == w->type &&
                          reg[i]->rows == w->rows && reg[i]->cols == w->cols))
        i++;
    return i;
}

static hsd_mm_packed *reg_lookup(const hsd_mat *w) {
    size_t i = reg_index(w);
    return i < reg_n ? reg[i] : NULL;
}

const hsd_mm_packed *hsd_mm_packed_find(const hsd_mat *w) {
    if (!hsd_mm_packed_type(w->type)) return NULL;
    pthread_mutex_lock(&reg_mu);
    const hsd_mm_packed *p = reg_n ? reg_lookup(w) : NULL;
    pthread_mutex_unlock(&reg_mu);
    return p;
}

#ifdef HSD_MM_HAVE_AVX512
/* Groups [tid·G/nth, (tid+1)·G/nth) of one copy: threads write disjoint pages, so the first
 * touch of the new memory (the kernel zeroing it: most of the packing time on this VM) runs
 * on every thread. */
typedef struct pack_job {
    const hsd_mat *w;
    uint8_t *dst;
    size_t gb;
    int32_t groups;
} pack_job;

static void pack_task(void *arg, int32_t tid, int32_t nth) {
    const pack_job *j = arg;
    const hsd_mat *w = j->w;
    const uint8_t *rows[HSD_MM_PACK_ROWS];
    int32_t g0 = (int32_t)((int64_t)j->groups * tid / nth),
            g1 = (int32_t)((int64_t)j->groups * (tid + 1) / nth);
    for (int32_t g = g0; g < g1; g++) {
        int32_t c = w->rows - g * HSD_MM_PACK_ROWS;
        if (c > HSD_MM_PACK_ROWS) c = HSD_MM_PACK_ROWS;
        hsd_mm_group_rows(w, NULL, g * HSD_MM_PACK_ROWS, c, rows);
        if (w->type == HSD_DT_Q8_0)
            hsd_q8p_pack_group(rows, c, w->cols / 32, j->dst + (size_t)g * j->gb);
        else if (w->type != HSD_DT_BF16)
            hsd_kqp_pack_group(w->type, rows, c, w->cols / HSD_QK_K, j->dst + (size_t)g * j->gb);
        else
            hsd_bf16p_pack_group(rows, c, w->cols, j->dst + (size_t)g * j->gb);
    }
}

hsd_status hsd_mm_pack(const hsd_mat *w) {
    return hsd_mm_pack_on(w, NULL, 1);
}

hsd_status hsd_mm_pack_on(const hsd_mat *w, hsd_pool *pool, int32_t nth) {
    /* only where the products will read it (AVX-512 and AMX): not under the avx2 or scalar
     * override (1.3 GB saved for a 1B Q8_0 model, 2.5 GB for BF16) */
    const bool q8 = w->type == HSD_DT_Q8_0, kq = hsd_quant_is_q8k(w->type);
    if (!hsd_mm_packed_type(w->type) || w->rows <= 0 || w->cols <= 0 ||
        (q8 && (w->cols < 32 || w->cols % 32 != 0)) ||
        (kq && (w->cols < HSD_QK_K || w->cols % HSD_QK_K != 0)) ||
        hsd_mm_isa_default() < HSD_MM_AVX512)
        return HSD_OK;
    pthread_mutex_lock(&reg_mu);
    hsd_mm_packed *p = reg_lookup(w);
    if (p) { /* the same data loaded twice (two transformers of one synth model) */
        p->refs++;
        pthread_mutex_unlock(&reg_mu);
        return HSD_OK;
    }
    pthread_mutex_unlock(&reg_mu);

    int32_t groups = (w->rows + HSD_MM_PACK_ROWS - 1) / HSD_MM_PACK_ROWS;
    size_t gb = q8   ? hsd_q8p_group_bytes(w->cols)
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
    *p = (hsd_mm_packed){w->data, w->type, w->rows, w->cols, 1, gb, data};
    pack_job job = {w, p->data, gb, groups};
    if (!pool || nth < 2 || bytes < 2 * HUGE_ALIGN)
        pack_task(&job, 0, 1);
    else
        hsd_pool_run(pool, pack_task, &job, nth < hsd_pool_size(pool) ? nth : hsd_pool_size(pool));

    pthread_mutex_lock(&reg_mu);
    hsd_mm_packed *other = reg_lookup(w); /* packed by another thread meanwhile */
    if (other) {
        other->refs++;
        pthread_mutex_unlock(&reg_mu);
        free(p->data), free(p);
        return HSD_OK;
    }
    if (reg_n == reg_cap) {
        size_t cap = reg_cap ? 2 * reg_cap : 64;
        hsd_mm_packed **r = realloc(reg, cap * sizeof *r);
        if (!r) {
            pthread_mutex_unlock(&reg_mu);
            free(p->data), free(p);
            return hsd_error(HSD_ERR_NOMEM, "matmul: out of memory for the packed-matrix registry");
        }
        reg = r, reg_cap = cap;
    }
    reg[reg_n++] = p;
    pthread_mutex_unlock(&reg_mu);
    return HSD_OK;
}

#else
hsd_status hsd_mm_pack(const hsd_mat *w) {
    (void)w; /* no AVX-512 kernels in this build: nothing reads a packed copy */
    return HSD_OK;
}

hsd_status hsd_mm_pack_on(const hsd_mat *w, hsd_pool *pool, int32_t nth) {
    (void)pool, (void)nth;
    return hsd_mm_pack(w);
}
#endif

void hsd_mm_unpack(const hsd_mat *w) {
    if (!w || !hsd_mm_packed_type(w->type)) return;
    pthread_mutex_lock(&reg_mu);
    hsd_mm_packed *p = NULL;
    size_t i = reg_index(w);
    if (i < reg_n && --reg[i]->refs == 0) {
        p = reg[i];
        reg[i] = reg[--reg_n];
    }
    if (reg_n == 0) { /* last one out: no allocation left behind for leak checkers */
        free(reg);
        reg = NULL, reg_cap = 0;
    }
    pthread_mutex_unlock(&reg_mu);
    if (p) free(p->data), free(p);
}

/* The forward products' driver (see matmul.h): picks the kernel set, prepares the
 * activations once per call, and splits the weight rows over the thread pool. The one
 * threaded matmul job of the transformer and of the draft heads. */
#include "kernels/matmul.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu_features.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_kern.h"
#include "kernels/matmul_bf16p.h"
#include "kernels/matmul_kq.h"
#include "kernels/matmul_q8.h"
#include "kernels/quant.h"
#include "lib/base/error.h"

/* Below this many multiply-adds a product runs on one thread: the hand-off costs more. */
#define MM_PAR_MIN_WORK (1 << 17)
#define MM_ROW_BATCH 64 /* row pointers built per kernel call */
/* Per-thread scratch in floats: 4 rows of fp32 (the AVX2 set), or one 16-row group packed on
 * the fly: Q8_0 17 bytes per column (matmul_q8_avx512.c), BF16 32 bytes per column pair
 * rounded up (matmul_bf16p_avx512.c) */
#define MM_SCRATCH_FLOATS(cols) ((8 * (size_t)(cols) + 16 + 15) & ~(size_t)15)
/* (a multiple of 16 floats: every thread's share starts 64-byte aligned, as the packing's
 * aligned stores need; 8·cols + 16 alone is 32 bytes off for odd cols) */

_Static_assert((int)HSD_MM_AMX == (int)HSD_CPU_AMX && (int)HSD_MM_N_ISA == (int)HSD_CPU_N_LEVELS,
               "kernel sets are the CPU levels");

const char *hsd_mm_isa_name(hsd_mm_isa isa) {
    return hsd_cpu_level_name((hsd_cpu_level)isa);
}

int hsd_mm_isa_available(hsd_mm_isa isa) {
#ifndef HSD_MM_HAVE_AVX512
    if (isa >= HSD_MM_AVX512) return 0; /* not built */
#endif
    return hsd_cpu_level_supported((hsd_cpu_level)isa);
}

hsd_mm_isa hsd_mm_isa_default(void) {
    hsd_mm_isa v = (hsd_mm_isa)hsd_cpu_level_active();
    while (v > HSD_MM_SCALAR && !hsd_mm_isa_available(v)) v--;
    return v;
}

void hsd_mm_ws_free(hsd_mm_ws *ws) {
    if (!ws) return;
    free(ws->buf);
    ws->buf = NULL;
    ws->cap = 0;
}

static hsd_status ws_reserve(hsd_mm_ws *ws, size_t bytes) {
    if (bytes <= ws->cap) return HSD_OK;
    bytes = (bytes + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0)
        return hsd_error(HSD_ERR_NOMEM, "matmul: out of memory for %zu bytes of scratch", bytes);
    free(ws->buf);
    ws->buf = p;
    ws->cap = bytes;
    return HSD_OK;
}

/* Q8_K activations of the k-quant products, quantised once per job rather than once per
 * chunk of rows: at 8 tokens the per-chunk quantisation was 37% of a Q4_K_M forward. */
static size_t q8k_acts_bytes(int32_t n, int32_t cols) {
    return (((size_t)n * (size_t)(cols / HSD_QK_K) * sizeof(hsd_q8k) + 63) & ~(size_t)63) +
           hsd_kqp_extra_bytes(n, cols)
#ifdef HSD_MM_HAVE_AVX512
           + hsd_amx_kq_acts_bytes(n, cols)
#endif
        ;
}

/* Activations of the widest kind (Q8_0's u8 + scales, or BF16's pairs), then the row buffers. */
static size_t ws_bytes(int32_t nth, int32_t n, int32_t cols) {
    size_t acts = 0;
#ifdef HSD_MM_HAVE_AVX512
    size_t a = hsd_bf16p_acts_bytes(n, cols), b = hsd_q8p_acts_bytes(n, cols),
           c = hsd_amx_bf16_acts_bytes(n, cols);
    acts = a > b ? a : b;
    if (c > acts) acts = c;
#endif
    size_t k = q8k_acts_bytes(n, cols);
    if (k > acts) acts = k;
    return acts + (size_t)nth * MM_SCRATCH_FLOATS(cols) * sizeof(float);
}

hsd_status hsd_mm_ws_reserve(hsd_mm_ws *ws, int32_t nth, int32_t n, int32_t cols) {
    return ws_reserve(ws, ws_bytes(nth < 1 ? 1 : nth, n, cols));
}

/* ---- plain C kernel ------------------------------------------------------------------ */

/* Rows through hsd_mat_rows_f32 (exact widening, the same floats on every ISA), then a
 * sequential fp32 dot per token: the portable reference set. */
static void scalar_rows(const hsd_mm_acts *a, const hsd_mat *w, const int32_t *ids, int32_t row0,
                        int32_t count, float *out, int32_t ld, float *row) {
    for (int32_t j = 0; j < count; j++) {
        hsd_mat_rows_f32(w, ids ? ids[row0 + j] : row0 + j, 1, row);
        for (int32_t t = 0; t < a->n; t++) {
            const float *xt = a->x + (size_t)t * a->cols;
            float s = 0.0f;
            for (int32_t i = 0; i < a->cols; i++) s += row[i] * xt[i];
            out[(size_t)t * ld + j] = s;
        }
    }
}

/* ---- the job ------------------------------------------------------------------------- */

/* One product of a job. */
typedef struct mm_part {
    const hsd_mat *w;
    const int32_t *ids;
    int32_t rows;
    float *out;
    int32_t ld;
    int32_t chunk; /* rows per chunk (a multiple of 4: threads keep whole 4-row tiles; of 16
                    * for Q8_0 and BF16 under AVX-512: their 16-row groups) */
    int32_t first; /* index of its first chunk among the job's */
    const hsd_mm_packed *pk; /* Q8_0 / BF16 under AVX-512: the packed copy of w, if any */
} mm_part;

typedef struct mm_job {
    hsd_mm_acts a;
    hsd_mm_isa isa;
    mm_part part[HSD_MM_MAX_FUSED];
    int32_t n_parts, n_chunks;
    atomic_int next; /* next chunk to hand out */
    bool
        split; /* Q8_0 under AVX-512: each part in nth contiguous chunks, chunk tid to thread tid */
    float *scratch; /* [threads][MM_SCRATCH_FLOATS(cols)] */
} mm_job;

/* Rows [r0, r0 + count) of part p (indices into ids when there are ids). */
static void job_rows(const mm_job *j, const mm_part *p, int32_t r0, int32_t count, float *scratch) {
    const hsd_mat *w = p->w;
    float *out = p->out + r0;
    if (j->isa == HSD_MM_SCALAR) {
        scalar_rows(&j->a, w, p->ids, r0, count, out, p->ld, scratch);
        return;
    }
    size_t rb = hsd_dtype_row_bytes(w->type, w->cols);
    const uint8_t *base = w->data;
#ifdef HSD_MM_HAVE_AVX512
    /* Q8_0 on AMX (matmul_amx.c) from 2 tokens: one token's product (decode) streams the
     * weights faster on the VNNI kernel, the same bits (a 1-token forward of the 1B Q8_0 file
     * 52.8-54.2 -> 50.6-51.2 ms; 2 tokens even; from 3 tokens AMX is the faster by 9-20%:
     * bench/notes/kquant_packed.md) */
    if (j->isa == HSD_MM_AMX && w->type == HSD_DT_Q8_0 && j->a.n >= HSD_Q8P_AMX_MIN_T) {
        hsd_amx_q8_rows(&j->a, w, p->pk, p->ids, r0, count, out, p->ld, (uint8_t *)scratch);
        return;
    }
    if (j->a.xb && w->type == HSD_DT_BF16) { /* AMX, whole 32-column steps: matmul_amx.c */
        hsd_amx_bf16_rows(&j->a, w, p->pk, p->ids, r0, count, out, p->ld, (uint8_t *)scratch);
        return;
    }
    if (j->isa >= HSD_MM_AVX512 && hsd_q8p_type(w->type)) { /* matmul_q8_avx512.c */
        hsd_q8p_rows(&j->a, w, p->pk, p->ids, r0, count, out, p->ld, (uint8_t *)scratch);
        return;
    }
    if (j->isa >= HSD_MM_AVX512 && w->type == HSD_DT_BF16) { /* matmul_bf16p_avx512.c */
        hsd_bf16p_rows(&j->a, w, p->pk, p->ids, r0, count, out, p->ld, (uint8_t *)scratch);
        return;
    }
    /* k-quants: the AVX-512 kernel; at the AMX level its tiles of several tokens run on
     * AMX-INT8 with the scales folded into the weights (matmul_amx.c), the same bits */
    if (j->isa >= HSD_MM_AVX512 && hsd_quant_is_q8k(w->type)) { /* matmul_kq_avx512.c */
        hsd_kqp_rows(&j->a, w, p->pk, p->ids, r0, count, out, p->ld, (uint8_t *)scratch,
                     j->isa == HSD_MM_AMX);
        return;
    }
    if (j->isa >= HSD_MM_AVX512 && hsd_mm_avx512_handles(w->type)) {
        const uint8_t *ptr[MM_ROW_BATCH];
        for (int32_t k = 0; k < count; k += MM_ROW_BATCH) {
            int32_t c = count - k < MM_ROW_BATCH ? count - k : MM_ROW_BATCH;
            for (int32_t i = 0; i < c; i++)
                ptr[i] = base + (size_t)(p->ids ? p->ids[r0 + k + i] : r0 + k + i) * rb;
            hsd_mm_avx512_rows(&j->a, w->type, ptr, c, out + k, p->ld);
        }
        return;
    }
#endif
    /* AVX2 set, and storage types the AVX-512 kernels do not know: cpu_ops.c's row kernel,
     * on runs of consecutive rows */
    int32_t k = 0;
    while (k < count) {
        int32_t first = p->ids ? p->ids[r0 + k] : r0 + k, run = 1;
        if (p->ids)
            while (k + run < count && p->ids[r0 + k + run] == first + run) run++;
        else
            run = count - k;
        if (j->a.xk && hsd_quant_is_q8k(w->type))
            hsd_quant_matmul_q8k_rows(out + k, p->ld, j->a.xk, j->a.n, w, first, run);
        else
            hsd_matmul_rows(out + k, p->ld, j->a.x, j->a.n, w, first, run, scratch);
        k += run;
    }
}

/* Threads take chunks of rows from a shared counter until none is left: whichever thread
 * runs faster (the caller starts first, a core may be shared or interrupted) takes more,
 * so all finish within one chunk of each other. A row's result does not depend on which
 * thread computes it (batch invariance). */
static void mm_task(void *arg, int32_t tid, int32_t nth) {
    mm_job *j = arg;
    float *scratch = j->scratch + (size_t)tid * MM_SCRATCH_FLOATS(j->a.cols);
    if (j->split) { /* see split_rows */
        for (int32_t i = 0; i < j->n_parts; i++) {
            const mm_part *pt = &j->part[i];
            int32_t r0 = tid * pt->chunk;
            if (r0 < pt->rows)
                job_rows(j, pt, r0, pt->rows - r0 < pt->chunk ? pt->rows - r0 : pt->chunk, scratch);
        }
        return;
    }
    (void)nth;
    int32_t p = 0;
    for (;;) {
        int32_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (c >= j->n_chunks) return;
        while (p + 1 < j->n_parts && c >= j->part[p + 1].first) p++;
        const mm_part *pt = &j->part[p];
        int32_t r0 = (c - pt->first) * pt->chunk;
        int32_t cnt = pt->rows - r0 < pt->chunk ? pt->rows - r0 : pt->chunk;
        job_rows(j, pt, r0, cnt, scratch);
    }
}

/* Rows per chunk: about MM_CHUNK_BYTES of weights per token, at least enough chunks for
 * every thread to take several (balance), a multiple of 4 — of 16 for Q8_0, whose AVX-512
 * tile is a 16-row group: a chunk edge inside a group would compute the group twice. */
#define MM_CHUNK_BYTES (256 << 10)
static int32_t chunk_rows(const hsd_mat *w, int32_t rows, int32_t nth) {
    if (nth <= 1) return rows > 0 ? rows : 1;
    size_t rb = hsd_dtype_row_bytes(w->type, w->cols);
    int64_t c = (int64_t)(MM_CHUNK_BYTES / (rb ? rb : 1));
    int64_t most = rows / (4 * nth); /* >= 4 chunks per thread when the product allows */
    if (c > most) c = most;
    int64_t m = hsd_mm_packed_type(w->type) ? HSD_MM_PACK_ROWS : 4;
    c = (c + m - 1) / m * m;
    return c < m ? (int32_t)m : (int32_t)c;
}

/* Q8_0 and BF16 products under AVX-512 go in one contiguous range of rows per thread (a multiple of
 * the tile's 16-row group) instead of chunks handed out from the counter: measured at the
 * llama-3.2-1b shape, 2 threads (18:58 UTC, load ~1.1, 2 rounds), forward(8) 34.8 -> 27.7 ms
 * and forward(16) 52.3 -> 43.3 ms with the same kernel; n = 1 unchanged. Interleaving 256 KB
 * chunks between the threads breaks each thread's stream (prefetch restarts, two streams
 * close together) where the tile is both memory- and arithmetic-heavy. */
static int32_t split_rows(int32_t rows, int32_t nth) {
    int32_t c = (rows + nth - 1) / nth;
    return (c + 15) / 16 * 16;
}

static hsd_status job_setup(mm_job *j, hsd_mm_ws *ws, hsd_mm_isa isa, int32_t nth, const float *x,
                            int32_t n, const hsd_mm_prod *prods, int32_t np) {
    memset(j, 0, sizeof *j);
    const hsd_mat *w0 = prods[0].w;
    j->a.n = n;
    j->a.cols = w0->cols;
    j->a.x = x;
    j->isa = isa;
    for (int32_t i = 0; i < np; i++) {
        mm_part *p = &j->part[j->n_parts];
        p->w = prods[i].w;
        p->ids = prods[i].ids;
        p->rows = prods[i].ids ? prods[i].count : prods[i].w->rows;
        p->out = prods[i].out;
        p->ld = prods[i].ld;
        if (p->rows <= 0) continue;
        p->chunk = isa >= HSD_MM_AVX512 && hsd_mm_packed_type(p->w->type)
                       ? split_rows(p->rows, nth)
                       : chunk_rows(p->w, p->rows, nth);
        p->first = j->n_chunks;
        j->n_chunks += (p->rows + p->chunk - 1) / p->chunk;
        j->n_parts++;
    }
    atomic_init(&j->next, 0);
    j->split = isa >= HSD_MM_AVX512 && hsd_mm_packed_type(w0->type) && nth > 1;
    size_t acts = 0;
#ifdef HSD_MM_HAVE_AVX512
    const int q8p = isa >= HSD_MM_AVX512 && hsd_q8p_type(w0->type);
    const int bfp = isa >= HSD_MM_AVX512 && w0->type == HSD_DT_BF16;
    const int bfa = bfp && isa == HSD_MM_AMX && hsd_amx_bf16_cols_ok(w0->cols);
    if (q8p)
        acts = hsd_q8p_acts_bytes(n, w0->cols);
    else if (bfa)
        acts = hsd_amx_bf16_acts_bytes(n, w0->cols);
    else if (bfp)
        acts = hsd_bf16p_acts_bytes(n, w0->cols);
#endif
    const bool q8k = isa != HSD_MM_SCALAR && hsd_quant_is_q8k(w0->type);
    if (q8k) acts = q8k_acts_bytes(n, w0->cols);
    size_t rows = (size_t)nth * MM_SCRATCH_FLOATS(w0->cols) * sizeof(float);
    hsd_status s = ws_reserve(ws, acts + rows);
    if (s) return s;
    j->scratch = (float *)(void *)((uint8_t *)ws->buf + acts);
    if (q8k) {
        hsd_q8k *xk = ws->buf;
        const int64_t nb = w0->cols / HSD_QK_K;
        for (int32_t t = 0; t < n; t++)
#ifdef HSD_MM_HAVE_AVX512
            if (isa >= HSD_MM_AVX512)
                hsd_kqp_quantize(x + (size_t)t * w0->cols, w0->cols, xk + t * nb);
            else
#endif
                hsd_quant_q8k(x + (size_t)t * w0->cols, w0->cols, xk + t * nb);
        j->a.xk = xk;
#ifdef HSD_MM_HAVE_AVX512
        if (isa >= HSD_MM_AVX512) { /* the packed kernels' sums, after the blocks */
            const size_t ab = hsd_amx_kq_acts_bytes(n, w0->cols);
            hsd_kqp_prepare(&j->a, w0->type,
                            (uint8_t *)ws->buf + acts - ab - hsd_kqp_extra_bytes(n, w0->cols));
            if (isa == HSD_MM_AMX && n >= HSD_KQP_AMX_MIN_T) /* the AMX tiles' layout of them */
                hsd_amx_kq_prepare(&j->a, (uint8_t *)ws->buf + acts - ab);
            for (int32_t i = 0; i < j->n_parts; i++)
                j->part[i].pk = j->part[i].ids ? NULL : hsd_mm_packed_find(j->part[i].w);
        }
#endif
    }
#ifdef HSD_MM_HAVE_AVX512
    if (q8p || bfp) {
        if (q8p)
            hsd_q8p_prepare(&j->a, ws->buf, w0->type);
        else if (bfa)
            hsd_amx_bf16_prepare(&j->a, ws->buf);
        else
            hsd_bf16p_prepare(&j->a, ws->buf);
        for (int32_t i = 0; i < j->n_parts; i++)
            j->part[i].pk = j->part[i].ids ? NULL : hsd_mm_packed_find(j->part[i].w);
    }
#endif
    return HSD_OK;
}

hsd_status hsd_mm_run_fused(hsd_mm_ws *ws, hsd_pool *pool, int32_t nth, const float *x, int32_t n,
                            const hsd_mm_prod *prods, int32_t np) {
    if (n <= 0 || np <= 0) return HSD_OK;
    if (np > HSD_MM_MAX_FUSED)
        return hsd_error(HSD_ERR_INVALID_ARG, "matmul: %d products in one job (at most %d)", np,
                         HSD_MM_MAX_FUSED);
    int64_t work = 0;
    for (int32_t i = 0; i < np; i++) {
        const hsd_mat *w = prods[i].w;
        /* one activation preparation serves the job: same columns and storage type */
        if (w->cols != prods[0].w->cols || w->type != prods[0].w->type)
            return hsd_error(HSD_ERR_INVALID_ARG,
                             "matmul: fused product %d has %d columns of %s, product 0 %d of %s", i,
                             w->cols, hsd_dtype_name(w->type), prods[0].w->cols,
                             hsd_dtype_name(prods[0].w->type));
        work += (int64_t)(prods[i].ids ? prods[i].count : w->rows) * w->cols * n;
    }
    if (work <= 0) return HSD_OK;
    if (!pool || nth < 1) nth = 1;
    if (pool && nth > hsd_pool_size(pool)) nth = hsd_pool_size(pool);
    if (work < MM_PAR_MIN_WORK) nth = 1;
    mm_job j;
    hsd_status s = job_setup(&j, ws, hsd_mm_isa_default(), nth, x, n, prods, np);
    if (s) return s;
    if (nth == 1)
        mm_task(&j, 0, 1);
    else
        hsd_pool_run(pool, mm_task, &j, nth);
    return HSD_OK;
}

hsd_status hsd_mm_run(hsd_mm_ws *ws, hsd_pool *pool, int32_t nth, float *out, int32_t ld,
                      const float *x, int32_t n, const hsd_mat *w, const int32_t *ids,
                      int32_t count) {
    hsd_mm_prod p = {out, ld, w, ids, count};
    return hsd_mm_run_fused(ws, pool, nth, x, n, &p, 1);
}

hsd_status hsd_mm_run_isa(hsd_mm_ws *ws, hsd_mm_isa isa, float *out, int32_t ld, const float *x,
                          int32_t n, const hsd_mat *w, const int32_t *ids, int32_t count) {
    if ((unsigned)isa >= HSD_MM_N_ISA || !hsd_mm_isa_available(isa))
        return hsd_error(HSD_ERR_UNSUPPORTED, "matmul: kernel set %s not available on this CPU",
                         hsd_mm_isa_name(isa));
    if (n <= 0 || (ids ? count : w->rows) <= 0) return HSD_OK;
    hsd_mm_prod p = {out, ld, w, ids, count};
    mm_job j;
    hsd_status s = job_setup(&j, ws, isa, 1, x, n, &p, 1);
    if (s) return s;
    mm_task(&j, 0, 1);
    return HSD_OK;
}

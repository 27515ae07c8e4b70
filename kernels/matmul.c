/* The forward products' driver (see matmul.h): picks the kernel set, prepares the
 * activations once per call, and splits the weight rows over the thread pool. The one
 * threaded matmul job of the transformer and of the draft heads. */
#include "kernels/matmul.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/matmul_kern.h"
#include "kernels/matmul_q8.h"
#include "lib/base/error.h"

/* Below this many multiply-adds a product runs on one thread: the hand-off costs more. */
#define MM_PAR_MIN_WORK (1 << 17)
#define MM_ROW_BATCH 64 /* row pointers built per kernel call */
/* Per-thread scratch in floats: 4 rows of fp32 (the AVX2 set), or one 16-row group of Q8_0
 * packed on the fly (17 bytes per column, matmul_q8_avx512.c) */
#define MM_SCRATCH_FLOATS(cols) (5 * (size_t)(cols))

const char *hsd_mm_isa_name(hsd_mm_isa isa) {
    static const char *names[] = {"scalar", "avx2", "avx512"};
    return (unsigned)isa < HSD_MM_N_ISA ? names[isa] : "?";
}

int hsd_mm_isa_available(hsd_mm_isa isa) {
    switch (isa) {
    case HSD_MM_SCALAR:
        return 1;
#if defined(__x86_64__) && defined(__GNUC__)
    case HSD_MM_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    case HSD_MM_AVX512:
        return hsd_mm_isa_available(HSD_MM_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bf16") &&
               __builtin_cpu_supports("avx512vnni");
#endif
    default:
        return 0;
    }
}

hsd_mm_isa hsd_mm_isa_default(void) {
    /* read once; atomic so that concurrent first reads are no data race (every thread
     * computes the same value) */
    static atomic_int cached = -1;
    int v = cached;
    if (v >= 0) return (hsd_mm_isa)v;
    v = HSD_MM_SCALAR;
    for (int i = HSD_MM_N_ISA - 1; i > 0; i--)
        if (hsd_mm_isa_available((hsd_mm_isa)i)) {
            v = i;
            break;
        }
    const char *env = getenv("HSD_MATMUL");
    for (int i = 0; env && i < HSD_MM_N_ISA; i++)
        if (!strcmp(env, hsd_mm_isa_name((hsd_mm_isa)i)) && hsd_mm_isa_available((hsd_mm_isa)i))
            v = i;
    cached = v;
    return (hsd_mm_isa)v;
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

/* Activations of the widest kind (Q8_0's u8 + scales, or BF16's), then the row buffers. */
static size_t ws_bytes(int32_t nth, int32_t n, int32_t cols) {
    size_t acts = 0;
#ifdef HSD_MM_HAVE_AVX512
    size_t a = hsd_mm_avx512_acts_bytes(HSD_DT_BF16, n, cols), b = hsd_q8p_acts_bytes(n, cols);
    acts = a > b ? a : b;
#endif
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

typedef struct mm_job {
    hsd_mm_acts a;
    hsd_mm_isa isa;
    const hsd_mat *w;
    const int32_t *ids;
    int32_t rows;
    float *out;
    int32_t ld;
    float *scratch; /* [threads][MM_SCRATCH_FLOATS(cols)] */
    const struct hsd_q8p *q8p; /* Q8_0 under AVX-512: the packed copy of w, if any */
} mm_job;

/* Rows [r0, r0 + count) of the job (indices into ids when there are ids). */
static void job_rows(const mm_job *j, int32_t r0, int32_t count, float *scratch) {
    const hsd_mat *w = j->w;
    float *out = j->out + r0;
    if (j->isa == HSD_MM_SCALAR) {
        scalar_rows(&j->a, w, j->ids, r0, count, out, j->ld, scratch);
        return;
    }
    size_t rb = hsd_dtype_row_bytes(w->type, w->cols);
    const uint8_t *base = w->data;
#ifdef HSD_MM_HAVE_AVX512
    if (j->isa == HSD_MM_AVX512 && w->type == HSD_DT_Q8_0) { /* matmul_q8_avx512.c */
        hsd_q8p_rows(&j->a, w, j->q8p, j->ids, r0, count, out, j->ld, (uint8_t *)scratch);
        return;
    }
    if (j->isa == HSD_MM_AVX512 && hsd_mm_avx512_handles(w->type)) {
        const uint8_t *ptr[MM_ROW_BATCH];
        for (int32_t k = 0; k < count; k += MM_ROW_BATCH) {
            int32_t c = count - k < MM_ROW_BATCH ? count - k : MM_ROW_BATCH;
            for (int32_t i = 0; i < c; i++)
                ptr[i] = base + (size_t)(j->ids ? j->ids[r0 + k + i] : r0 + k + i) * rb;
            hsd_mm_avx512_rows(&j->a, w->type, ptr, c, out + k, j->ld);
        }
        return;
    }
#endif
    /* AVX2 set, and storage types the AVX-512 kernels do not know: cpu_ops.c's row kernel,
     * on runs of consecutive rows */
    int32_t k = 0;
    while (k < count) {
        int32_t first = j->ids ? j->ids[r0 + k] : r0 + k, run = 1;
        if (j->ids)
            while (k + run < count && j->ids[r0 + k + run] == first + run) run++;
        else
            run = count - k;
        hsd_matmul_rows(out + k, j->ld, j->a.x, j->a.n, w, first, run, scratch);
        k += run;
    }
}

static void mm_task(void *arg, int32_t tid, int32_t nth) {
    const mm_job *j = arg;
    /* split rows in multiples of 4 so each thread keeps whole 4-row tiles */
    int32_t per = ((j->rows + nth - 1) / nth + 3) & ~3;
    int32_t r0 = tid * per, r1 = r0 + per < j->rows ? r0 + per : j->rows;
    if (r0 >= r1) return;
    job_rows(j, r0, r1 - r0, j->scratch + (size_t)tid * MM_SCRATCH_FLOATS(j->w->cols));
}

static hsd_status job_setup(mm_job *j, hsd_mm_ws *ws, hsd_mm_isa isa, int32_t nth, float *out,
                            int32_t ld, const float *x, int32_t n, const hsd_mat *w,
                            const int32_t *ids, int32_t count) {
    memset(j, 0, sizeof *j);
    j->a.n = n;
    j->a.cols = w->cols;
    j->a.x = x;
    j->isa = isa;
    j->w = w;
    j->ids = ids;
    j->rows = ids ? count : w->rows;
    j->out = out;
    j->ld = ld;
    size_t acts = 0;
#ifdef HSD_MM_HAVE_AVX512
    const int q8p = isa == HSD_MM_AVX512 && w->type == HSD_DT_Q8_0;
    if (q8p)
        acts = hsd_q8p_acts_bytes(n, w->cols);
    else if (isa == HSD_MM_AVX512 && hsd_mm_avx512_handles(w->type))
        acts = hsd_mm_avx512_acts_bytes(w->type, n, w->cols);
#endif
    size_t rows = (size_t)nth * MM_SCRATCH_FLOATS(w->cols) * sizeof(float);
    hsd_status s = ws_reserve(ws, acts + rows);
    if (s) return s;
    j->scratch = (float *)(void *)((uint8_t *)ws->buf + acts);
#ifdef HSD_MM_HAVE_AVX512
    if (q8p) {
        hsd_q8p_prepare(&j->a, ws->buf);
        j->q8p = ids ? NULL : hsd_q8p_find(w);
    } else if (acts) {
        hsd_mm_avx512_prepare(&j->a, w->type, ws->buf);
    }
#endif
    return HSD_OK;
}

hsd_status hsd_mm_run(hsd_mm_ws *ws, hsd_pool *pool, int32_t nth, float *out, int32_t ld,
                      const float *x, int32_t n, const hsd_mat *w, const int32_t *ids,
                      int32_t count) {
    if (n <= 0) return HSD_OK;
    int32_t rows = ids ? count : w->rows;
    if (rows <= 0) return HSD_OK;
    if (!pool || nth < 1) nth = 1;
    if (pool && nth > hsd_pool_size(pool)) nth = hsd_pool_size(pool);
    if ((int64_t)rows * w->cols * n < MM_PAR_MIN_WORK) nth = 1;
    mm_job j;
    hsd_status s = job_setup(&j, ws, hsd_mm_isa_default(), nth, out, ld, x, n, w, ids, count);
    if (s) return s;
    if (nth == 1)
        mm_task(&j, 0, 1);
    else
        hsd_pool_run(pool, mm_task, &j, nth);
    return HSD_OK;
}

hsd_status hsd_mm_run_isa(hsd_mm_ws *ws, hsd_mm_isa isa, float *out, int32_t ld, const float *x,
                          int32_t n, const hsd_mat *w, const int32_t *ids, int32_t count) {
    if ((unsigned)isa >= HSD_MM_N_ISA || !hsd_mm_isa_available(isa))
        return hsd_error(HSD_ERR_UNSUPPORTED, "matmul: kernel set %s not available on this CPU",
                         hsd_mm_isa_name(isa));
    if (n <= 0 || (ids ? count : w->rows) <= 0) return HSD_OK;
    mm_job j;
    hsd_status s = job_setup(&j, ws, isa, 1, out, ld, x, n, w, ids, count);
    if (s) return s;
    mm_task(&j, 0, 1);
    return HSD_OK;
}

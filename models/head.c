/* Draft LM heads on the CPU (see head.h). The heavy products run on the model's thread pool,
 * split by output rows like the transformer's own matmuls. */
#include "models/head.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/head_ops.h"
#include "kernels/matmul.h"
#include "lib/base/error.h"
#include "lib/base/log.h"

#define HEAD_CAPTURE 100 /* internal kind: collect rows (calibration) */

struct hsd_head {
    int kind;
    int32_t vocab, dim;
    char desc[160];
    hsd_mat cls; /* borrowed classifier */
    /* TRIMMED: kept ids (increasing) and their rows of U packed in U's storage type */
    int32_t *keep, n_keep;
    void *packed;
    hsd_mat packed_m;
    /* SPECULATIVE / LOWRANK factors: down [rank][dim] f32, up [vocab][rank] (f32, or U's
     * 16-bit type so the factor is read at the same width as U) */
    int32_t rank, top_k;
    float *down;
    void *up;
    hsd_mat down_m, up_m;
    /* scratch, grown on demand */
    float *hr;  /* [n][rank] */
    float *tmp; /* [n][n_keep] or [top_k] */
    int32_t *sel, *work;
    hsd_mm_ws mm; /* products' scratch, reserved for cap_n rows on cap_threads threads */
    int32_t cap_n, cap_threads;
    /* capture */
    float *cap;
    int32_t cap_rows, max_rows;
};

hsd_head_params hsd_head_default_params(void) {
    hsd_head_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.kind = HSD_HEAD_FULL;
    p.top_k = 2048;
    return p;
}

const char *hsd_head_kind_name(hsd_head_kind k) {
    static const char *names[] = {"full", "trimmed", "speculative", "lowrank"};
    return (unsigned)k <= HSD_HEAD_LOWRANK ? names[k] : "?";
}

hsd_head_kind hsd_head_get_kind(const hsd_head *h) {
    return (hsd_head_kind)h->kind;
}
const char *hsd_head_desc(const hsd_head *h) {
    return h ? h->desc : "full";
}

void hsd_head_free(hsd_head *h) {
    if (!h) return;
    free(h->keep);
    if (h->packed) hsd_mm_unpack(&h->packed_m);
    free(h->packed);
    free(h->down);
    free(h->up);
    free(h->hr);
    free(h->tmp);
    free(h->sel);
    free(h->work);
    hsd_mm_ws_free(&h->mm);
    free(h->cap);
    free(h);
}

int32_t hsd_head_factors(const hsd_head *h, hsd_mat *down, hsd_mat *up) {
    if (!h->down) return 0;
    if (down) *down = h->down_m;
    if (up) *up = h->up_m;
    return h->rank;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static hsd_status setup_trimmed(hsd_head *h, const hsd_head_params *p, const char *src) {
    if (!p->keep_ids || p->n_keep <= 0)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: trimmed head needs kept ids (got %d)", src,
                         p->n_keep);
    if (p->n_keep > h->vocab)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "%s: trimmed head keeps %d ids, the vocabulary has %d", src, p->n_keep,
                         h->vocab);
    h->n_keep = p->n_keep;
    h->keep = malloc((size_t)h->n_keep * sizeof *h->keep);
    if (!h->keep) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", src);
    memcpy(h->keep, p->keep_ids, (size_t)h->n_keep * sizeof *h->keep);
    qsort(h->keep, (size_t)h->n_keep, sizeof *h->keep, cmp_i32);
    for (int32_t i = 0; i < h->n_keep; i++) {
        if (h->keep[i] < 0 || h->keep[i] >= h->vocab)
            return hsd_error(HSD_ERR_OUT_OF_RANGE,
                             "%s: trimmed head: id %d outside the vocabulary of %d", src,
                             h->keep[i], h->vocab);
        if (i > 0 && h->keep[i] == h->keep[i - 1])
            return hsd_error(HSD_ERR_INVALID_ARG, "%s: trimmed head: id %d listed twice", src,
                             h->keep[i]);
    }
    /* a packed copy turns K scattered row reads into one streaming product */
    size_t rb = hsd_dtype_row_bytes(h->cls.type, h->dim);
    h->packed = malloc((size_t)h->n_keep * rb);
    if (!h->packed)
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory for %d kept rows", src, h->n_keep);
    for (int32_t i = 0; i < h->n_keep; i++)
        memcpy((uint8_t *)h->packed + (size_t)i * rb,
               (const uint8_t *)h->cls.data + (size_t)h->keep[i] * rb, rb);
    h->packed_m = (hsd_mat){h->cls.type, h->n_keep, h->dim, h->packed, NULL};
    /* Q8_0 / BF16: the AVX-512 layout (kernels/matmul.h). Without memory for it the product
     * packs on the fly (the same bits, slower): a notice, not an error. */
    if (hsd_mm_pack(&h->packed_m) != HSD_OK) {
        hsd_log(HSD_LOG_INFO, "%s: %s; the trimmed head's rows are packed on the fly", src,
                hsd_last_error());
        hsd_error_clear();
    }
    snprintf(h->desc, sizeof h->desc, "trimmed: %d of %d rows", h->n_keep, h->vocab);
    return HSD_OK;
}

/* Takes ownership of down/up (f32). up is narrowed to U's 16-bit type when U has one. */
static hsd_status adopt_factors(hsd_head *h, float *down, float *up, int32_t rank,
                                const char *src) {
    h->rank = rank;
    h->down = down;
    h->down_m = (hsd_mat){HSD_DT_F32, rank, h->dim, down, NULL};
    size_t n = (size_t)h->vocab * (size_t)rank;
    if (h->cls.type == HSD_DT_F16 || h->cls.type == HSD_DT_BF16) {
        uint16_t *u = malloc(n * sizeof *u);
        if (!u) {
            free(up);
            return hsd_error(HSD_ERR_NOMEM, "%s: out of memory for the head factors", src);
        }
        for (size_t i = 0; i < n; i++)
            u[i] = h->cls.type == HSD_DT_F16 ? hsd_fp32_to_fp16(up[i]) : hsd_fp32_to_bf16(up[i]);
        free(up);
        h->up = u;
        h->up_m = (hsd_mat){h->cls.type, h->vocab, rank, u, NULL};
    } else {
        h->up = up;
        h->up_m = (hsd_mat){HSD_DT_F32, h->vocab, rank, up, NULL};
    }
    return HSD_OK;
}

static hsd_status setup_factors(hsd_head *h, const hsd_head_params *p, const float *calib,
                                int32_t n_calib, const char *src) {
    const char *how = "svd";
    float *down = NULL, *up = NULL;
    int32_t rank = 0;
    hsd_status s;
    if (p->factors_path) {
        s = hsd_head_factors_load(p->factors_path, (hsd_head_kind)h->kind, h->vocab, h->dim, &down,
                                  &up, &rank);
        if (s) return s;
        how = "file";
    } else {
        rank = p->rank > 0 ? p->rank : (h->dim / 8 > 0 ? h->dim / 8 : 1);
        if (p->rank < 0 || rank > h->dim)
            return hsd_error(HSD_ERR_INVALID_ARG,
                             "%s: head rank %d outside 1..%d (the hidden size)", src, p->rank,
                             h->dim);
        down = malloc((size_t)rank * h->dim * sizeof *down);
        up = malloc((size_t)h->vocab * rank * sizeof *up);
        if (!down || !up) {
            free(down);
            free(up);
            return hsd_error(HSD_ERR_NOMEM, "%s: out of memory for rank-%d factors", src, rank);
        }
        s = hsd_head_svd_factors(&h->cls, rank, calib, n_calib, down, up, NULL);
        if (s) {
            free(down);
            free(up);
            return s;
        }
        if (calib && n_calib > 0) how = "svd, calibrated";
    }
    if ((s = adopt_factors(h, down, up, rank, src))) {
        free(down);
        h->down = NULL;
        return s;
    }
    if (h->kind == HSD_HEAD_SPECULATIVE) {
        h->top_k = p->top_k > 0 ? (p->top_k < h->vocab ? p->top_k : h->vocab) : 0;
        if (h->top_k <= 0)
            return hsd_error(HSD_ERR_INVALID_ARG, "%s: speculative head needs top_k >= 1 (got %d)",
                             src, p->top_k);
        h->work = malloc((size_t)h->vocab * sizeof *h->work);
        h->sel = malloc((size_t)h->top_k * sizeof *h->sel);
        if (!h->work || !h->sel) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", src);
        snprintf(h->desc, sizeof h->desc, "speculative: top-k %d of %d, router rank %d (%s)",
                 h->top_k, h->vocab, rank, how);
    } else {
        snprintf(h->desc, sizeof h->desc, "lowrank: rank %d of %d (%s)", rank, h->dim, how);
    }
    return HSD_OK;
}

hsd_status hsd_head_create(const hsd_mat *cls, const hsd_head_params *p, const float *calib,
                           int32_t n_calib, const char *src, hsd_head **out) {
    if (!out || !cls || !p) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_head_create: NULL argument");
    *out = NULL;
    if (!src) src = "model";
    if ((unsigned)p->kind > HSD_HEAD_LOWRANK)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: unknown head kind %d", src, (int)p->kind);
    if (p->n_calib < 0 || (calib && n_calib < 0))
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: negative calibration size", src);
    hsd_head *h = calloc(1, sizeof *h);
    if (!h) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", src);
    h->kind = p->kind;
    h->cls = *cls;
    h->vocab = cls->rows;
    h->dim = cls->cols;
    hsd_status s = HSD_OK;
    if (p->kind == HSD_HEAD_FULL)
        snprintf(h->desc, sizeof h->desc, "full: %d x %d", h->vocab, h->dim);
    else if (p->kind == HSD_HEAD_TRIMMED)
        s = setup_trimmed(h, p, src);
    else
        s = setup_factors(h, p, calib, n_calib, src);
    if (s) {
        hsd_head_free(h);
        return s;
    }
    *out = h;
    return HSD_OK;
}

hsd_status hsd_head_capture_create(int32_t dim, int32_t vocab, int32_t max_rows, hsd_head **out) {
    *out = NULL;
    hsd_head *h = calloc(1, sizeof *h);
    if (!h) return hsd_error(HSD_ERR_NOMEM, "out of memory");
    h->kind = HEAD_CAPTURE;
    h->dim = dim;
    h->vocab = vocab;
    h->max_rows = max_rows;
    h->cap = malloc((size_t)(max_rows > 0 ? max_rows : 1) * dim * sizeof *h->cap);
    if (!h->cap) {
        free(h);
        return hsd_error(HSD_ERR_NOMEM, "out of memory for %d calibration rows", max_rows);
    }
    snprintf(h->desc, sizeof h->desc, "capture");
    *out = h;
    return HSD_OK;
}

const float *hsd_head_captured(const hsd_head *h, int32_t *n_rows) {
    *n_rows = h->cap_rows;
    return h->cap;
}

/* ---- forward ----------------------------------------------------------------------- */

static hsd_status ensure_scratch(hsd_head *h, int32_t n, int32_t nth) {
    if (nth > h->cap_threads || n > h->cap_n) {
        int32_t cols = h->dim > h->rank ? h->dim : h->rank;
        int32_t tn = nth > h->cap_threads ? nth : h->cap_threads;
        if (hsd_mm_ws_reserve(&h->mm, tn, n > h->cap_n ? n : h->cap_n, cols) != HSD_OK)
            return hsd_error(HSD_ERR_NOMEM, "head: out of memory");
        h->cap_threads = tn;
    }
    if (n > h->cap_n) {
        size_t per = (size_t)(h->kind == HSD_HEAD_TRIMMED ? h->n_keep : h->top_k);
        float *hr = h->rank ? realloc(h->hr, (size_t)n * h->rank * sizeof *hr) : h->hr;
        if (hr) h->hr = hr;
        float *tmp = per ? realloc(h->tmp, (size_t)n * per * sizeof *tmp) : h->tmp;
        if (tmp) h->tmp = tmp;
        if ((h->rank && !hr) || (per && !tmp))
            return hsd_error(HSD_ERR_NOMEM, "head: out of memory for %d rows", n);
        h->cap_n = n;
    }
    return HSD_OK;
}

/* The products go through the one threaded matmul job (kernels/matmul.h); ensure_scratch
 * reserved its workspace, so they cannot fail. ids: rows ids[0..count) of w (n = 1). */
static void run_job(hsd_head *h, hsd_pool *pool, int32_t nth, float *out, int32_t ld,
                    const float *x, int32_t n, const hsd_mat *w, const int32_t *ids,
                    int32_t count) {
    (void)hsd_mm_run(&h->mm, pool, nth, out, ld, x, n, w, ids, count);
}

static void fill_neg_inf(float *row, int32_t n) {
    for (int32_t i = 0; i < n; i++) row[i] = -INFINITY;
}

hsd_status hsd_head_forward(hsd_head *h, hsd_pool *pool, int32_t n_threads, const float *x,
                            int32_t n, float *logits) {
    if (!h || !x || n < 0 || (n > 0 && !logits && h->kind != HEAD_CAPTURE))
        return hsd_error(HSD_ERR_INVALID_ARG, "head forward: bad arguments (n = %d)", n);
    if (n == 0) return HSD_OK;
    int32_t nth = pool ? (n_threads > 0 ? n_threads : 1) : 1;
    if (pool && nth > hsd_pool_size(pool)) nth = hsd_pool_size(pool);
    if (nth < 1) nth = 1;
    if (h->kind == HEAD_CAPTURE) {
        int32_t room = h->max_rows - h->cap_rows, take = n < room ? n : room;
        if (take > 0)
            memcpy(h->cap + (size_t)h->cap_rows * h->dim, x, (size_t)take * h->dim * sizeof *x);
        h->cap_rows += take > 0 ? take : 0;
        return HSD_OK; /* logits are not written: calibration passes a dummy pointer */
    }
    hsd_status s = ensure_scratch(h, n, nth);
    if (s) return s;
    const int32_t V = h->vocab, d = h->dim;
    switch (h->kind) {
    case HSD_HEAD_FULL: {
        run_job(h, pool, nth, logits, V, x, n, &h->cls, NULL, 0);
        break;
    }
    case HSD_HEAD_TRIMMED: {
        run_job(h, pool, nth, h->tmp, h->n_keep, x, n, &h->packed_m, NULL, 0);
        for (int32_t t = 0; t < n; t++) {
            float *row = logits + (size_t)t * V;
            const float *z = h->tmp + (size_t)t * h->n_keep;
            fill_neg_inf(row, V);
            for (int32_t i = 0; i < h->n_keep; i++) row[h->keep[i]] = z[i];
        }
        break;
    }
    case HSD_HEAD_LOWRANK:
    case HSD_HEAD_SPECULATIVE: {
        run_job(h, pool, nth, h->hr, h->rank, x, n, &h->down_m, NULL, 0);
        /* LOWRANK: the logits themselves; SPECULATIVE: the router scores s, kept in the
         * logits rows until the top-k is known */
        run_job(h, pool, nth, logits, V, h->hr, n, &h->up_m, NULL, 0);
        if (h->kind == HSD_HEAD_LOWRANK) break;
        for (int32_t t = 0; t < n; t++) {
            float *row = logits + (size_t)t * V;
            int32_t k = hsd_topk_ids(row, V, h->top_k, h->sel, h->work);
            run_job(h, pool, nth, h->tmp, 1, x + (size_t)t * d, 1, &h->cls, h->sel, k);
            fill_neg_inf(row, V);
            for (int32_t i = 0; i < k; i++) row[h->sel[i]] = h->tmp[i];
        }
        break;
    }
    default:
        return hsd_error(HSD_ERR_INTERNAL, "head forward: kind %d", h->kind);
    }
    return HSD_OK;
}

#include "lib/engine/sample.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/row_ops.h"
#include "lib/base/error.h"
#include "verify/verify.h"

hsd_status hsd_sampler_ws_reserve(hsd_sampler_ws *w, int32_t n) {
    if (n <= w->cap) return HSD_OK;
    int32_t *i = realloc(w->idx, (size_t)n * sizeof *i);
    if (i) w->idx = i;
    float *v = realloc(w->val, (size_t)n * sizeof *v);
    if (v) w->val = v;
    if (!i || !v) return hsd_error(HSD_ERR_NOMEM, "sample: out of memory for a %d-entry row", n);
    w->cap = n;
    return HSD_OK;
}

void hsd_sampler_ws_free(hsd_sampler_ws *w) {
    free(w->idx);
    free(w->val);
    memset(w, 0, sizeof *w);
}

int32_t hsd_sample_greedy(const float *logits, int32_t n) { return hsd_verify_argmax(logits, n); }

static void swap_i32(int32_t *a, int32_t *b) {
    int32_t t = *a;
    *a = *b;
    *b = t;
}

static void sort_ids(int32_t *v, int32_t n) { /* insertion sort: a few dozen ids */
    for (int32_t i = 1; i < n; i++) {
        int32_t x = v[i], j = i;
        while (j > 0 && v[j - 1] > x) v[j] = v[j - 1], j--;
        v[j] = x;
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static float median3(float a, float b, float c) {
    if (a > b) {
        float t = a;
        a = b;
        b = t;
    }
    return c <= a ? a : c >= b ? b : c;
}

/* The nucleus among candidates idx[0..m): the smallest prefix of them in sorted order
 * (decreasing logit, increasing id among equal logits) whose weight e[] reaches `need`. A
 * weighted quickselect: three-way partitions around a pivot logit, keeping the side where the
 * running mass crosses `need`; only the group of logits equal to the crossing value is sorted
 * (by id). Leaves the nucleus in idx[0..return) in no particular order. Expected O(m). */
static int32_t nucleus(const float *logits, const float *e, int32_t *idx, int32_t m, double need) {
    int32_t lo = 0, hi = m;
    double acc = 0;
    while (lo < hi) {
        float piv = median3(logits[idx[lo]], logits[idx[lo + (hi - lo) / 2]], logits[idx[hi - 1]]);
        int32_t a = lo, i = lo, b = hi; /* [lo,a) > piv, [a,b) == piv, [b,hi) < piv */
        while (i < b) {
            float v = logits[idx[i]];
            if (v > piv)
                swap_i32(&idx[a++], &idx[i++]);
            else if (v < piv)
                swap_i32(&idx[i], &idx[--b]);
            else
                i++;
        }
        double mg = 0, me = 0;
        for (int32_t j = lo; j < a; j++) mg += e[idx[j]];
        if (acc + mg >= need) { /* the crossing is among the larger logits */
            hi = a;
            continue;
        }
        for (int32_t j = a; j < b; j++) me += e[idx[j]];
        if (acc + mg + me >= need) { /* among the equal ones: they go by increasing id */
            qsort(idx + a, (size_t)(b - a), sizeof *idx, cmp_i32);
            double t = acc + mg;
            for (int32_t j = a; j < b; j++) {
                t += e[idx[j]];
                if (t >= need) return j + 1;
            }
            return b;
        }
        acc += mg + me;
        lo = b;
    }
    return lo;
}

/* probs = kept weights (ids idx[0..K), weights val[0..K)) renormalised, zero elsewhere; the
 * support (the kept ids, increasing) goes to w. */
static void write_kept(hsd_sampler_ws *w, int32_t K, float *probs, int32_t n) {
    double kept = 0;
    for (int32_t j = 0; j < K; j++) kept += w->val[j];
    memset(probs, 0, (size_t)n * sizeof *probs);
    for (int32_t j = 0; j < K; j++) probs[w->idx[j]] = (float)(w->val[j] / kept);
    if (K <= 64) {
        sort_ids(w->idx, K);
        /* a weight that rounded to 0 is not in the support */
        int32_t s = 0;
        for (int32_t j = 0; j < K; j++)
            if (probs[w->idx[j]] > 0) w->idx[s++] = w->idx[j];
        K = s;
    } else { /* many kept: one vectorised pass finds them in order */
        K = hsd_row_gather_ge(probs, n, FLT_TRUE_MIN, w->idx);
    }
    w->support = w->idx;
    w->n_support = K;
}

hsd_status hsd_sample_probs_ws(hsd_sampler_ws *w, const float *logits, int32_t n,
                               const hsd_sampler_params *p, float *probs) {
    if (!w || !logits || !probs || n <= 0 || !p)
        return hsd_error(HSD_ERR_INVALID_ARG, "sample: bad arguments (n = %d)", n);
    if (n > w->cap)
        return hsd_error(HSD_ERR_INVALID_ARG, "sample: row of %d entries, workspace for %d", n,
                         w->cap);
    int32_t a = hsd_row_argmax(logits, n);
    const float mx = logits[a];
    if (!(p->temp > 0.0f) || !(mx > -INFINITY)) { /* greedy (or nothing but -inf) */
        memset(probs, 0, (size_t)n * sizeof *probs);
        probs[a] = 1.0f;
        w->idx[0] = a;
        w->support = w->idx;
        w->n_support = 1;
        return HSD_OK;
    }
    const bool use_k = p->top_k > 0 && p->top_k < n, use_p = p->top_p > 0.0f && p->top_p < 1.0f;
    const double temp = p->temp;
    if (use_k) {
        /* only the k best need weights: exp relative to the max, which the renormalisation
         * over the kept ones makes exact (the full softmax's sum cancels) */
        const int32_t k = p->top_k;
        hsd_row_topk(logits, n, k, w->idx);
        double total = 0;
        for (int32_t j = 0; j < k; j++) total += w->val[j] = (float)exp((logits[w->idx[j]] - mx) / temp);
        int32_t K = k;
        if (use_p) {
            double acc = 0, need = p->top_p * total;
            for (int32_t j = 0; j < k; j++) {
                acc += w->val[j];
                if (acc >= need) {
                    K = j + 1;
                    break;
                }
            }
        }
        write_kept(w, K, probs, n);
        return HSD_OK;
    }
    const double sum = hsd_row_exp_sum(logits, n, mx, (float)(1.0 / temp), probs);
    if (!use_p) {
        hsd_row_scale(probs, n, (float)(1.0 / sum));
        w->support = NULL;
        w->n_support = -1;
        return HSD_OK;
    }
    /* Top-p alone. Candidates: in the sorted order, the token where the mass first reaches
     * top_p carries at least (1 - top_p) / n of it (the tokens from there on hold more than
     * 1 - top_p, and it is the largest of at most n), so lighter tokens are never inside. */
    const double need = p->top_p * sum;
    const float cut = (float)((1.0 - p->top_p) * sum / n * (1.0 - 1e-6));
    int32_t m = hsd_row_gather_ge(probs, n, cut, w->idx);
    int32_t K = nucleus(logits, probs, w->idx, m, need);
    if (K == 0) K = m; /* rounding left the candidates short of `need`: keep them all */
    for (int32_t j = 0; j < K; j++) w->val[j] = probs[w->idx[j]];
    write_kept(w, K, probs, n);
    return HSD_OK;
}

hsd_status hsd_sample_probs(const float *logits, int32_t n, const hsd_sampler_params *p, float *probs) {
    if (!logits || !probs || n <= 0 || !p)
        return hsd_error(HSD_ERR_INVALID_ARG, "sample: bad arguments (n = %d)", n);
    hsd_sampler_ws w = {0};
    hsd_status s = hsd_sampler_ws_reserve(&w, n);
    if (!s) s = hsd_sample_probs_ws(&w, logits, n, p, probs);
    hsd_sampler_ws_free(&w);
    return s;
}

int32_t hsd_sample_draw_ws(const hsd_sampler_ws *w, const float *probs, int32_t n, double u) {
    if (w->n_support < 0) return hsd_verify_draw(probs, n, u);
    /* hsd_verify_draw's two passes over the nonzero entries only, in the same order: adding
     * the zeros it also visits changes neither its total nor its running sum */
    const int32_t *s = w->support;
    double total = 0;
    for (int32_t j = 0; j < w->n_support; j++) total += probs[s[j]];
    double target = u * total, acc = 0;
    int32_t last = -1;
    for (int32_t j = 0; j < w->n_support; j++) {
        if (probs[s[j]] <= 0) continue;
        acc += probs[s[j]];
        last = s[j];
        if (target < acc) return s[j];
    }
    return last >= 0 ? last : 0;
}

hsd_status hsd_sample(const float *logits, int32_t n, const hsd_sampler_params *p, hsd_rng *rng,
                      float *probs, int32_t *token) {
    if (!(p->temp > 0.0f)) {
        *token = hsd_sample_greedy(logits, n);
        return HSD_OK;
    }
    hsd_status s = hsd_sample_probs(logits, n, p, probs);
    if (s != HSD_OK) return s;
    *token = hsd_verify_draw(probs, n, hsd_rng_uniform_f64(rng));
    return HSD_OK;
}

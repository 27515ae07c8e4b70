#include "verify/verify.h"

#include "kernels/row_ops.h"

#include <math.h>
#include <stddef.h>

int32_t hsd_verify_argmax(const float *p, int32_t n) { return hsd_row_argmax(p, n); }

int32_t hsd_verify_draw(const float *w, int32_t n, double u) {
    double total = 0;
    for (int32_t i = 0; i < n; i++) total += w[i];
    double target = u * total, acc = 0;
    int32_t last = -1;
    for (int32_t i = 0; i < n; i++) {
        if (w[i] <= 0) continue;
        acc += w[i];
        last = i;
        if (target < acc) return i;
    }
    return last >= 0 ? last : 0;
}

int32_t hsd_verify_residual(const float *p, const float *q, int32_t n, hsd_rng *rng,
                            float *scratch) {
    double mass = 0;
    for (int32_t i = 0; i < n; i++) {
        float r = p[i] - q[i];
        scratch[i] = r > 0 ? r : 0;
        mass += scratch[i];
    }
    double u = hsd_rng_uniform_f64(rng);
    /* p == q up to rounding leaves no residual: p itself is then the right law */
    return mass > 0 ? hsd_verify_draw(scratch, n, u) : hsd_verify_draw(p, n, u);
}

int32_t hsd_verify_sd_greedy(const int32_t *argmax, const int32_t *d, int32_t k, int32_t *out,
                             int32_t *n_accepted) {
    for (int32_t j = 0; j < k; j++) {
        out[j] = argmax[j];
        if (argmax[j] != d[j]) {
            *n_accepted = j;
            return j + 1;
        }
    }
    out[k] = argmax[k];
    *n_accepted = k;
    return k + 1;
}

int32_t hsd_verify_sd(const float *p, const float *q, int32_t n, const int32_t *d, int32_t k,
                      bool greedy, hsd_rng *rng, float *scratch, int32_t *out,
                      int32_t *n_accepted) {
    int32_t j = 0;
    for (; j < k; j++) {
        const float *pj = p + (size_t)j * n, *qj = q + (size_t)j * n;
        int32_t dj = d[j];
        if (greedy) {
            int32_t a = hsd_verify_argmax(pj, n);
            if (a != dj) {
                out[j] = a;
                *n_accepted = j;
                return j + 1;
            }
            out[j] = dj;
            continue;
        }
        double u = hsd_rng_uniform_f64(rng);
        /* accept with probability min(1, p/q): u < p/q  <=>  u*q < p */
        if (qj[dj] > 0 && u * (double)qj[dj] < (double)pj[dj]) {
            out[j] = dj;
            continue;
        }
        /* rejected: resample from the residual max(0, p - q) */
        out[j] = hsd_verify_residual(pj, qj, n, rng, scratch);
        *n_accepted = j;
        return j + 1;
    }
    const float *pk = p + (size_t)k * n;
    out[k] = greedy ? hsd_verify_argmax(pk, n) : hsd_verify_draw(pk, n, hsd_rng_uniform_f64(rng));
    *n_accepted = k;
    return k + 1;
}

int32_t hsd_verify_slem(const float *p, int32_t n, const int32_t *argmax, const int32_t *c,
                        const int32_t *parents, int32_t m, bool greedy, hsd_rng *rng, int32_t *out,
                        int32_t *path, int32_t *n_accepted) {
    int32_t acc = 0, cur = -1;
    for (;;) {
        const float *pj = p + (size_t)(cur + 1) * n;
        int32_t t = greedy ? (argmax ? argmax[cur + 1] : hsd_verify_argmax(pj, n))
                           : hsd_verify_draw(pj, n, hsd_rng_uniform_f64(rng));
        out[acc] = t;
        /* children come after their parent: the first one spelling the draw */
        int32_t next = -1;
        if (!parents)
            next = cur + 1 < m && c[cur + 1] == t ? cur + 1 : -1;
        else
            for (int32_t j = cur + 1; j < m && next < 0; j++)
                if (parents[j] == cur && c[j] == t) next = j;
        if (next < 0) break;
        if (path) path[acc] = next;
        acc++;
        cur = next;
    }
    *n_accepted = acc;
    return acc + 1;
}

double hsd_verify_map_draft(const float *q, int32_t nd, const int32_t *map, int32_t n_out,
                            bool renormalise, float *out) {
    return hsd_verify_map_draft_ids(q, NULL, nd, map, n_out, renormalise, out);
}

double hsd_verify_map_draft_ids(const float *q, const int32_t *ids, int32_t n_ids,
                                const int32_t *map, int32_t n_out, bool renormalise, float *out) {
    /* the mapped mass first, then each mapped entry added already scaled: the same arithmetic
     * whether the ids are listed (a sparse row) or all of them */
    double mass = 0;
    for (int32_t j = 0; j < n_ids; j++) {
        const int32_t i = ids ? ids[j] : j;
        if (map[i] >= 0 && map[i] < n_out) mass += q[i];
    }
    for (int32_t i = 0; i < n_out; i++) out[i] = 0;
    const double scale = renormalise && mass > 0 ? 1.0 / mass : 1.0;
    for (int32_t j = 0; j < n_ids; j++) {
        const int32_t i = ids ? ids[j] : j;
        if (map[i] >= 0 && map[i] < n_out) out[map[i]] += (float)(q[i] * scale);
    }
    return mass;
}

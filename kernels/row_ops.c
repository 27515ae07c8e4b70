/* Row kernels (row_ops.h): a scalar reference, AVX2 and AVX-512 paths. The rows are a few
 * hundred KB (152k floats for Qwen3), so these are memory-bound passes; the point of the vector
 * code is to stay near the bandwidth instead of at one compare or one libm call per element. */
#include "kernels/row_ops.h"
#include "kernels/cpu_features.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "kernels/simd_exp.h"
#define ROW_X86 1
#define ROW_AVX2 __attribute__((target("avx2,fma")))
#define ROW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#endif

/* Constants of the Cephes-style expf (exp(x) = 2^n p(r), r = x - n ln2) and tanhf (an odd
 * polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) above). */
#define EXP_LO HSD_EXP_LO /* below: exp < 1.2e-38, flushed to an exact 0 (-inf logits give 0) */
#define TANH_SMALL 0.625f
#define TP0 -5.70498872745e-3f
#define TP1 2.06390887954e-2f
#define TP2 -5.37397155531e-2f
#define TP3 1.33314422036e-1f
#define TP4 -3.33332819422e-1f

static hsd_cpu_level level(void) { return hsd_cpu_level_active(); }

/* ---- scalar reference ------------------------------------------------------------------- */

static int32_t argmax_scalar(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* The end of a vectorised argmax: lanes' best values vv and indices ii (−1: the lane saw no
 * value above −inf), the larger value then the lower index across lanes, then the tail
 * x[i..n) scalar. Both vector widths share it, so their ties resolve the same way. */
static int32_t argmax_lanes(const float *vv, const int32_t *ii, int lanes, const float *x,
                            int32_t i, int32_t n) {
    int32_t best = -1;
    for (int l = 0; l < lanes; l++)
        if (ii[l] >= 0 && (best < 0 || vv[l] > x[best] || (vv[l] == x[best] && ii[l] < best)))
            best = ii[l];
    if (best < 0) best = 0;
    for (; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static float max_scalar(const float *x, int32_t n) {
    float m = x[0];
    for (int32_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

static double exp_sum_scalar(const float *x, int32_t n, float mx, float scale, float *out) {
    double s = 0;
    for (int32_t i = 0; i < n; i++) {
        float a = (x[i] - mx) * scale;
        float e = a < EXP_LO ? 0.0f : expf(a);
        if (out) out[i] = e;
        s += e;
    }
    return s;
}

static int32_t gather_ge_scalar(const float *x, int32_t n, float thr, int32_t *idx) {
    int32_t c = 0;
    for (int32_t i = 0; i < n; i++)
        if (x[i] >= thr) idx[c++] = i;
    return c;
}

static void softcap_scalar(float *x, size_t n, float cap) {
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i])) x[i] = cap * tanhf(x[i] / cap);
}

#ifdef ROW_X86
/* ---- AVX2 ------------------------------------------------------------------------------- */


ROW_AVX2 static inline __m256 tanh8(__m256 z) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 a = _mm256_andnot_ps(sign, z);
    __m256 z2 = _mm256_mul_ps(z, z);
    __m256 p = _mm256_set1_ps(TP0);
    p = _mm256_fmadd_ps(p, z2, _mm256_set1_ps(TP1));
    p = _mm256_fmadd_ps(p, z2, _mm256_set1_ps(TP2));
    p = _mm256_fmadd_ps(p, z2, _mm256_set1_ps(TP3));
    p = _mm256_fmadd_ps(p, z2, _mm256_set1_ps(TP4));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, z2), z, z);
    __m256 e = hsd_exp8(_mm256_add_ps(a, a));
    __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                               _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    big = _mm256_or_ps(big, _mm256_and_ps(z, sign));
    return _mm256_blendv_ps(big, p, _mm256_cmp_ps(a, _mm256_set1_ps(TANH_SMALL), _CMP_LT_OQ));
}

ROW_AVX2 static inline __m256 softcap8(__m256 x, __m256 cap) {
    __m256 y = _mm256_mul_ps(cap, tanh8(_mm256_div_ps(x, cap)));
    __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    __m256 fin = _mm256_cmp_ps(a, _mm256_set1_ps(INFINITY), _CMP_LT_OQ); /* false for NaN */
    return _mm256_blendv_ps(x, y, fin);
}

ROW_AVX2 static int32_t argmax_avx2(const float *x, int32_t n) {
    if (n < 16) return argmax_scalar(x, n);
    __m256 bv = _mm256_set1_ps(-INFINITY);
    __m256i bi = _mm256_set1_epi32(-1), cur = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i step = _mm256_set1_epi32(8);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 gt = _mm256_cmp_ps(v, bv, _CMP_GT_OQ); /* strict: a lane keeps its first max */
        bv = _mm256_blendv_ps(bv, v, gt);
        bi = _mm256_castps_si256(
            _mm256_blendv_ps(_mm256_castsi256_ps(bi), _mm256_castsi256_ps(cur), gt));
        cur = _mm256_add_epi32(cur, step);
    }
    float vv[8];
    int32_t ii[8];
    _mm256_storeu_ps(vv, bv);
    _mm256_storeu_si256((__m256i *)ii, bi);
    return argmax_lanes(vv, ii, 8, x, i, n);
}

ROW_AVX2 static float max_avx2(const float *x, int32_t n) {
    __m256 m = _mm256_set1_ps(-INFINITY);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
    float v[8], r = x[0];
    _mm256_storeu_ps(v, m);
    for (int l = 0; l < 8; l++) r = v[l] > r ? v[l] : r;
    for (; i < n; i++) r = x[i] > r ? x[i] : r;
    return r;
}

ROW_AVX2 static inline __m256d add_f32x8_pd(__m256d acc, __m256 e) {
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    return _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}

ROW_AVX2 static double exp_sum_avx2(const float *x, int32_t n, float mx, float scale, float *out) {
    const __m256 m = _mm256_set1_ps(mx), s = _mm256_set1_ps(scale);
    __m256d acc = _mm256_setzero_pd();
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = hsd_exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), m), s));
        if (out) _mm256_storeu_ps(out + i, e);
        acc = add_f32x8_pd(acc, e);
    }
    if (i < n) { /* the tail through the same code, padded with -inf (exp = 0) */
        float t[8];
        for (int l = 0; l < 8; l++) t[l] = i + l < n ? x[i + l] : -INFINITY;
        __m256 e = hsd_exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(t), m), s));
        _mm256_storeu_ps(t, e);
        if (out) memcpy(out + i, t, (size_t)(n - i) * sizeof *out);
        acc = add_f32x8_pd(acc, e);
    }
    double d[4];
    _mm256_storeu_pd(d, acc);
    return (d[0] + d[1]) + (d[2] + d[3]);
}

ROW_AVX2 static void scale_avx2(float *x, int32_t n, float s) {
    const __m256 v = _mm256_set1_ps(s);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), v));
    for (; i < n; i++) x[i] *= s;
}

ROW_AVX2 static int32_t gather_ge_avx2(const float *x, int32_t n, float thr, int32_t *idx) {
    const __m256 t = _mm256_set1_ps(thr);
    int32_t i = 0, c = 0;
    for (; i + 8 <= n; i += 8) {
        unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), t, _CMP_GE_OQ));
        while (m) {
            idx[c++] = i + __builtin_ctz(m);
            m &= m - 1;
        }
    }
    for (; i < n; i++)
        if (x[i] >= thr) idx[c++] = i;
    return c;
}

ROW_AVX2 static void softcap_avx2(float *x, size_t n, float cap) {
    const __m256 c = _mm256_set1_ps(cap);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, softcap8(_mm256_loadu_ps(x + i), c));
    if (i < n) {
        float t[8] = {0};
        memcpy(t, x + i, (n - i) * sizeof *x);
        _mm256_storeu_ps(t, softcap8(_mm256_loadu_ps(t), c));
        memcpy(x + i, t, (n - i) * sizeof *x);
    }
}

/* ---- AVX-512 ---------------------------------------------------------------------------- */


ROW_AVX512 static inline __m512 tanh16(__m512 z) {
    __m512 a = _mm512_abs_ps(z);
    __m512 z2 = _mm512_mul_ps(z, z);
    __m512 p = _mm512_set1_ps(TP0);
    p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(TP1));
    p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(TP2));
    p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(TP3));
    p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(TP4));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, z2), z, z);
    __m512 e = hsd_exp16(_mm512_add_ps(a, a));
    __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.0f),
                               _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
    big = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(big),
        _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32((int)0x80000000u))));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(TANH_SMALL), _CMP_LT_OQ), big, p);
}

ROW_AVX512 static inline __m512 softcap16(__m512 x, __m512 cap) {
    __m512 y = _mm512_mul_ps(cap, tanh16(_mm512_div_ps(x, cap)));
    __mmask16 fin = _mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(INFINITY), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(fin, x, y);
}

ROW_AVX512 static int32_t argmax_avx512(const float *x, int32_t n) {
    if (n < 32) return argmax_scalar(x, n);
    __m512 bv = _mm512_set1_ps(-INFINITY);
    __m512i bi = _mm512_set1_epi32(-1),
            cur = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_set1_epi32(16);
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __mmask16 gt = _mm512_cmp_ps_mask(v, bv, _CMP_GT_OQ); /* strict: first max per lane */
        bv = _mm512_mask_mov_ps(bv, gt, v);
        bi = _mm512_mask_mov_epi32(bi, gt, cur);
        cur = _mm512_add_epi32(cur, step);
    }
    float vv[16];
    int32_t ii[16];
    _mm512_storeu_ps(vv, bv);
    _mm512_storeu_si512(ii, bi);
    return argmax_lanes(vv, ii, 16, x, i, n);
}

ROW_AVX512 static float max_avx512(const float *x, int32_t n) {
    __m512 m = _mm512_set1_ps(-INFINITY);
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
    if (i < n) m = _mm512_mask_max_ps(m, (__mmask16)((1u << (n - i)) - 1), m, _mm512_maskz_loadu_ps((__mmask16)((1u << (n - i)) - 1), x + i));
    float r = _mm512_reduce_max_ps(m);
    return r > x[0] ? r : x[0];
}

ROW_AVX512 static inline __m512d add_f32x16_pd(__m512d acc, __m512 e) {
    acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    return _mm512_add_pd(acc, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
}

ROW_AVX512 static double exp_sum_avx512(const float *x, int32_t n, float mx, float scale, float *out) {
    const __m512 m = _mm512_set1_ps(mx), s = _mm512_set1_ps(scale);
    __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
    int32_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 e0 = hsd_exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), m), s));
        __m512 e1 = hsd_exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), m), s));
        if (out) _mm512_storeu_ps(out + i, e0), _mm512_storeu_ps(out + i + 16, e1);
        acc0 = add_f32x16_pd(acc0, e0);
        acc1 = add_f32x16_pd(acc1, e1);
    }
    for (; i < n; i += 16) { /* masked: the tail through the same code, padded with -inf */
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, x + i);
        __m512 e = hsd_exp16(_mm512_mul_ps(_mm512_sub_ps(v, m), s));
        if (out) _mm512_mask_storeu_ps(out + i, k, e);
        acc0 = add_f32x16_pd(acc0, e);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
}

ROW_AVX512 static void scale_avx512(float *x, int32_t n, float s) {
    const __m512 v = _mm512_set1_ps(s);
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), v));
    for (; i < n; i++) x[i] *= s;
}

ROW_AVX512 static int32_t gather_ge_avx512(const float *x, int32_t n, float thr, int32_t *idx) {
    const __m512 t = _mm512_set1_ps(thr);
    __m512i cur = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_set1_epi32(16);
    int32_t i = 0, c = 0;
    for (; i + 16 <= n; i += 16) {
        __mmask16 m = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), t, _CMP_GE_OQ);
        _mm512_mask_compressstoreu_epi32(idx + c, m, cur);
        c += __builtin_popcount((unsigned)m);
        cur = _mm512_add_epi32(cur, step);
    }
    for (; i < n; i++)
        if (x[i] >= thr) idx[c++] = i;
    return c;
}

ROW_AVX512 static void softcap_avx512(float *x, size_t n, float cap) {
    const __m512 c = _mm512_set1_ps(cap);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, softcap16(_mm512_loadu_ps(x + i), c));
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(x + i, k, softcap16(_mm512_maskz_loadu_ps(k, x + i), c));
    }
}

/* The vector part of the top-k scan: the positions in x[i..i+w) above thr as a bit mask. */
ROW_AVX512 static unsigned above16(const float *x, float thr) {
    return (unsigned)_mm512_cmp_ps_mask(_mm512_loadu_ps(x), _mm512_set1_ps(thr), _CMP_GT_OQ);
}
ROW_AVX2 static unsigned above8(const float *x, float thr) {
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x), _mm256_set1_ps(thr), _CMP_GT_OQ));
}
#endif /* ROW_X86 */

/* ---- entry points ----------------------------------------------------------------------- */

int32_t hsd_row_argmax(const float *x, int32_t n) {
    if (n <= 1 || x[0] != x[0]) return 0; /* NaN first: the scalar loop's answer */
#ifdef ROW_X86
    hsd_cpu_level l = level();
    if (l >= HSD_CPU_AVX512) return argmax_avx512(x, n);
    if (l >= HSD_CPU_AVX2) return argmax_avx2(x, n);
#endif
    return argmax_scalar(x, n);
}

float hsd_row_max(const float *x, int32_t n) {
#ifdef ROW_X86
    hsd_cpu_level l = level();
    if (l >= HSD_CPU_AVX512) return max_avx512(x, n);
    if (l >= HSD_CPU_AVX2) return max_avx2(x, n);
#endif
    return max_scalar(x, n);
}

double hsd_row_exp_sum(const float *x, int32_t n, float mx, float scale, float *out) {
#ifdef ROW_X86
    hsd_cpu_level l = level();
    if (l >= HSD_CPU_AVX512) return exp_sum_avx512(x, n, mx, scale, out);
    if (l >= HSD_CPU_AVX2) return exp_sum_avx2(x, n, mx, scale, out);
#endif
    return exp_sum_scalar(x, n, mx, scale, out);
}

void hsd_row_scale(float *x, int32_t n, float s) {
#ifdef ROW_X86
    hsd_cpu_level l = level();
    if (l >= HSD_CPU_AVX512) {
        scale_avx512(x, n, s);
        return;
    }
    if (l >= HSD_CPU_AVX2) {
        scale_avx2(x, n, s);
        return;
    }
#endif
    for (int32_t i = 0; i < n; i++) x[i] *= s;
}

int32_t hsd_row_gather_ge(const float *x, int32_t n, float thr, int32_t *idx) {
#ifdef ROW_X86
    hsd_cpu_level l = level();
    if (l >= HSD_CPU_AVX512) return gather_ge_avx512(x, n, thr, idx);
    if (l >= HSD_CPU_AVX2) return gather_ge_avx2(x, n, thr, idx);
#endif
    return gather_ge_scalar(x, n, thr, idx);
}

void hsd_row_softcap(float *x, size_t n, float cap) {
#ifdef ROW_X86
    hsd_cpu_level l = level();
    if (l >= HSD_CPU_AVX512) {
        softcap_avx512(x, n, cap);
        return;
    }
    if (l >= HSD_CPU_AVX2) {
        softcap_avx2(x, n, cap);
        return;
    }
#endif
    softcap_scalar(x, n, cap);
}

/* Top-k: idx[0..k) is a min-heap in rank order (rank: larger value first, lower index first
 * among equal values), so its root is the entry ranked last. A later index i enters only when
 * x[i] > x[root]: on equal values the earlier index ranks first and stays. */
static bool ranks_before(const float *x, int32_t a, int32_t b) {
    return x[a] > x[b] || (x[a] == x[b] && a < b);
}

static void sift_down(const float *x, int32_t *h, int32_t i, int32_t n) {
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && ranks_before(x, h[c], h[c + 1])) c++; /* the child ranked last */
        if (!ranks_before(x, h[i], h[c])) return;
        int32_t t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

static inline void offer(const float *x, int32_t *h, int32_t k, int32_t i) {
    if (x[i] > x[h[0]]) {
        h[0] = i;
        sift_down(x, h, 0, k);
    }
}

void hsd_row_topk(const float *x, int32_t n, int32_t k, int32_t *idx) {
    if (k > n) k = n;
    if (k <= 0) return;
    for (int32_t i = 0; i < k; i++) idx[i] = i;
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift_down(x, idx, i, k);
    int32_t i = k;
#ifdef ROW_X86
    hsd_cpu_level l = level();
    if (l >= HSD_CPU_AVX512) {
        for (; i + 16 <= n; i += 16)
            for (unsigned m = above16(x + i, x[idx[0]]); m; m &= m - 1) offer(x, idx, k, i + __builtin_ctz(m));
    } else if (l >= HSD_CPU_AVX2) {
        for (; i + 8 <= n; i += 8)
            for (unsigned m = above8(x + i, x[idx[0]]); m; m &= m - 1) offer(x, idx, k, i + __builtin_ctz(m));
    }
#endif
    for (; i < n; i++) offer(x, idx, k, i);
    /* heap sort: the entry ranked last moves to the end each time */
    for (int32_t end = k - 1; end > 0; end--) {
        int32_t t = idx[0];
        idx[0] = idx[end];
        idx[end] = t;
        sift_down(x, idx, 0, end);
    }
}

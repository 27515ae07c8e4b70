/* The streaming attention kernel (kernels/attention.c) against a float64 reference.
 *
 * The reference computes softmax(softcap(scale q·k)) V in double from the same cache values
 * the kernel reads (F16/BF16 rounded or Q8_0 dequantised from the stored bytes, Q4_0 rounded
 * by llama.cpp's rule restated here, then exact in double; against a Q8_0 or Q4_0 cache, with
 * the query rounded by llama.cpp's Q8_0 rule, restated here, as kernels/attention.h defines
 * the scores), so the only difference is the kernel's
 * fp32 arithmetic and its exp polynomial. Tolerance: |out - ref| <= 2e-6 * (1 + max
 * |v|) per element, about 16 fp32 ulps of the value scale: the fp32 sums over up to 4,096
 * positions with scores of magnitude ~5 stay inside it (the largest error seen is printed,
 * ~1.7e-7), and a wrong mask, block or rescale is off by orders of magnitude more.
 *
 * Run at every CPU kernel level the machine has (scalar, AVX2, AVX-512): depths 1..4,096,
 * GQA ratios 1, 3, 4, 8 and 16, F32/F16/BF16/Q8_0/Q4_0 caches, chains (causal), token trees, sliding windows,
 * a soft-cap, and batch invariance (a row's bits alone = with others; a tree row's bits = the
 * same path's as a chain). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/cpu_features.h"
#include "tests/quant_rows.h"
#include "tests/testutil.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(void) { /* uniform in [-1, 1) */
    return (float)((double)(hsd_test_xorshift(&rng) >> 8) / (double)(1u << 24)) * 2.0f - 1.0f;
}

/* A KV head of n positions in `type`, and the same values read back as float. */
typedef struct cache {
    hsd_dtype type;
    bool tiled; /* Q8_0 keys and values in tiles (kernels/attention.h) */
    int32_t n, hd;
    void *k, *v;
    float *kf, *vf;
    float *kraw, *vraw; /* the keys and values before rounding */
} cache;

/* A Q8_0 cache row read back from its bytes by the layout alone (kernels/attention.h: the
 * nb fp16 scales, then the nb * 32 int8 quants; value q * d, exact in double). */
static void q8_row_back(const uint8_t *row, int32_t hd, float *out) {
    const int32_t nb = (hd + 31) / 32;
    for (int32_t e = 0; e < hd; e++) {
        const uint8_t *d = row + 2 * (e / 32);
        uint16_t h = (uint16_t)(d[0] | d[1] << 8);
        out[e] = (float)((double)(int8_t)row[2 * nb + e] * hsd_fp16_to_fp32(h));
    }
}

/* llama.cpp's Q8_0 rule (ggml-cpu x86 quantize_row_q8_0, restated from its description): per
 * block of 32, d = fp16(amax / 127), q = round-half-even(x * (127 / amax)), value q * d; a short
 * last block as if padded with zeros. The scores against a Q8_0 cache use the query quantised
 * by it (as llama.cpp's flash attention converts Q to the K type's dot type). */
static void q8_0_round(const float *x, int32_t n, double *out) {
    for (int32_t b = 0; b < n; b += 32) {
        const int32_t e = b + 32 < n ? b + 32 : n;
        float amax = 0.0f;
        for (int32_t i = b; i < e; i++) amax = fmaxf(amax, fabsf(x[i]));
        const double d = hsd_fp16_to_fp32(hsd_fp32_to_fp16(amax / 127.0f));
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (int32_t i = b; i < e; i++) out[i] = (double)nearbyintf(x[i] * id) * d;
    }
}

/* llama.cpp's Q4_0 rule (ggml quantize_row_q4_0_ref, restated from its description): per block
 * of 32, max = the first element of largest |x|, d = max / -8, n = min(15, trunc(x / d + 8.5))
 * with the quotient by the unrounded d, the scale stored as fp16: value (n - 8) * fp16(d). A
 * short last block as if padded with zeros. The nibbles into nib, the scale's bits into dh. */
static void q4_0_block(const float *x32, uint16_t *dh, int nib[32]) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < 32; i++)
        if (fabsf(x32[i]) > amax) amax = fabsf(x32[i]), max = x32[i];
    const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    *dh = hsd_fp32_to_fp16(d);
    for (int i = 0; i < 32; i++) {
        const int t = (int)(int8_t)(x32[i] * id + 8.5f);
        nib[i] = t < 15 ? t : 15;
    }
}
static void q4_0_round(const float *x, int32_t n, float *out) {
    for (int32_t b = 0; b < n; b += 32) {
        float blk[32] = {0};
        uint16_t dh;
        int nib[32];
        for (int32_t i = b; i < n && i < b + 32; i++) blk[i - b] = x[i];
        q4_0_block(blk, &dh, nib);
        for (int32_t i = b; i < n && i < b + 32; i++) out[i] = (float)((nib[i - b] - 8) * (double)hsd_fp16_to_fp32(dh));
    }
}

/* Positions a cache of n holds: a tiled one whole tiles, the last tile's other lanes filled
 * with NaN-making bytes (0xff: an fp16 NaN scale), which the kernel must mask, as it meets
 * them in a cache that grows. */
static int32_t cache_cap(int32_t n) {
    return (n + HSD_ATTN_KVTILE - 1) / HSD_ATTN_KVTILE * HSD_ATTN_KVTILE;
}

static void cache_fill_t(cache *c, hsd_dtype type, bool tiled, int32_t n, int32_t hd) {
    size_t cnt = (size_t)n * hd, rb = hsd_attn_row_bytes(type, hd);
    c->type = type, c->tiled = tiled, c->n = n, c->hd = hd;
    c->k = malloc((size_t)cache_cap(n) * rb), c->v = malloc((size_t)cache_cap(n) * rb);
    memset(c->k, 0xff, (size_t)cache_cap(n) * rb);
    memset(c->v, 0xff, (size_t)cache_cap(n) * rb);
    c->kf = malloc(cnt * sizeof(float)), c->vf = malloc(cnt * sizeof(float));
    c->kraw = malloc(cnt * sizeof(float)), c->vraw = malloc(cnt * sizeof(float));
    float *tmp = malloc(cnt * sizeof(float));
    uint8_t *row = malloc(rb);
    for (int pass = 0; pass < 2; pass++) {
        /* keys scaled so that scores reach a few units: the softmax is neither flat nor
         * one-hot */
        for (size_t i = 0; i < cnt; i++) tmp[i] = urand() * (pass == 0 ? 2.0f : 1.0f);
        memcpy(pass == 0 ? c->kraw : c->vraw, tmp, cnt * sizeof(float));
        void *dst = pass == 0 ? c->k : c->v;
        float *back = pass == 0 ? c->kf : c->vf;
        for (int32_t p = 0; p < n; p++) /* row by row: a Q8_0 row's blocks restart per row */
            hsd_attn_store_at(type, tiled, pass == 1, dst, p, tmp + (size_t)p * hd, hd);
        for (int32_t p = 0; type == HSD_DT_Q4_0 && p < n; p++)
            q4_0_round(tmp + (size_t)p * hd, hd, back + (size_t)p * hd);
        for (int32_t p = 0; type == HSD_DT_Q8_0 && p < n; p++) {
            /* the values a row of the row layout holds (tiled: the same rounding) */
            const uint8_t *r = (const uint8_t *)dst + (size_t)p * rb;
            if (tiled) hsd_attn_store(type, row, tmp + (size_t)p * hd, hd), r = row;
            q8_row_back(r, hd, back + (size_t)p * hd);
        }
        for (size_t i = 0; type != HSD_DT_Q8_0 && type != HSD_DT_Q4_0 && i < cnt; i++) {
            const uint16_t *h = dst;
            back[i] = type == HSD_DT_F32 ? ((float *)dst)[i]
                      : type == HSD_DT_F16 ? hsd_fp16_to_fp32(h[i])
                                           : hsd_bf16_to_fp32(h[i]);
        }
    }
    free(tmp), free(row);
}

static void cache_free(cache *c) {
    free(c->k), free(c->v), free(c->kf), free(c->vf), free(c->kraw), free(c->vraw);
}

/* The float64 softmax weights exp(s_j - max) of q over the physical positions pos[0..n) of c
 * into p, their sum returned; quant: q as a Q8_0 cache's scores take it (q8_0_round) or, for
 * the check of what that rounding costs, exact. */
static double ref_weights(const cache *c, const float *q, const int32_t *pos, int32_t n, double scale,
                          double softcap, bool quant, double *p) {
    const int32_t hd = c->hd;
    double mx = -INFINITY, sum = 0, qd[512];
    if (quant)
        q8_0_round(q, hd, qd);
    else
        for (int32_t i = 0; i < hd; i++) qd[i] = q[i];
    for (int32_t j = 0; j < n; j++) {
        double d = 0;
        for (int32_t i = 0; i < hd; i++) d += qd[i] * c->kf[(size_t)pos[j] * hd + i];
        d *= scale;
        if (softcap > 0) d = softcap * tanh(d / softcap);
        p[j] = d, mx = d > mx ? d : mx;
    }
    for (int32_t j = 0; j < n; j++) sum += p[j] = exp(p[j] - mx);
    return sum;
}

/* float64 attention of q over the physical positions pos[0..n) of c (quant: as ref_weights) */
static void reference(const cache *c, const float *q, const int32_t *pos, int32_t n, double scale,
                      double softcap, bool quant, double *out) {
    double *s = malloc((size_t)n * sizeof(double));
    const double sum = ref_weights(c, q, pos, n, scale, softcap, quant, s);
    for (int32_t i = 0; i < c->hd; i++) out[i] = 0;
    for (int32_t j = 0; j < n; j++)
        for (int32_t i = 0; i < c->hd; i++) out[i] += s[j] / sum * c->vf[(size_t)pos[j] * c->hd + i];
    free(s);
}

static double max_err_seen, max_qerr_seen, max_werr_seen;

/* What the value tile kernel's weights may add (kernels/attention.h): each weight p_j · d_j,b
 * is rounded to an int16 step of S / 32767, S the largest weight of its 32 positions, so by at
 * most S / 65534, and the integer sums are exact. Bounded here over the whole row, with S the
 * row's largest weight (no smaller than any block's), in float64 from the reference's own
 * probabilities: bound[i] = S_b · sum_j |q_j,i| / 65534 / sum_j p_j, q_j,i = v_j,i / d_j,b and
 * d_j,b = the block's largest |v| / 127 (its largest quant is ±127; Q4_0: / 8, its largest
 * value is -8 d). Only where that kernel runs: a tiled cache at the AVX-512 level, hd a
 * multiple of 16 up to 256. */
static void weight_bound(const cache *c, const float *q, const int32_t *pos, int32_t n,
                         double scale, double softcap, double *bound) {
    const int32_t hd = c->hd, nb = (hd + 31) / 32;
    double *p = malloc((size_t)n * sizeof(double));
    const double sum = ref_weights(c, q, pos, n, scale, softcap, true, p);
    for (int32_t b = 0; b < nb; b++) {
        double S = 0, qs[32] = {0};
        for (int32_t j = 0; j < n; j++) {
            const float *v = c->vf + (size_t)pos[j] * hd;
            double dmax = 0;
            for (int32_t i = 32 * b; i < hd && i < 32 * b + 32; i++) dmax = fabs(v[i]) > dmax ? fabs(v[i]) : dmax;
            const double d = dmax / (c->type == HSD_DT_Q4_0 ? 8.0 : 127.0);
            if (p[j] * d > S) S = p[j] * d;
            for (int32_t i = 32 * b; d > 0 && i < hd && i < 32 * b + 32; i++) qs[i - 32 * b] += fabs(v[i]) / d;
        }
        for (int32_t i = 32 * b; i < hd && i < 32 * b + 32; i++) bound[i] = S * qs[i - 32 * b] / 65534.0 / sum;
    }
    free(p);
}

static void check_row(const char *what, const cache *c, const float *q, const float *out,
                      const int32_t *pos, int32_t n, float scale, float softcap) {
    double ref[512], vmax = 0;
    const bool quant = c->type == HSD_DT_Q8_0 || c->type == HSD_DT_Q4_0;
    reference(c, q, pos, n, scale, softcap, quant, ref);
    for (int32_t j = 0; j < n; j++)
        for (int32_t i = 0; i < c->hd; i++) {
            double a = fabs(c->vf[(size_t)pos[j] * c->hd + i]);
            vmax = a > vmax ? a : vmax;
        }
    double wb[512] = {0};
    const bool wtiles = c->tiled && hsd_cpu_level_active() >= HSD_CPU_AVX512 && c->hd % 16 == 0 && c->hd <= 256;
    if (wtiles) weight_bound(c, q, pos, n, scale, softcap, wb);
    for (int32_t i = 0; i < c->hd; i++) {
        double err = fabs(out[i] - ref[i]), tol = 2e-6 * (1.0 + vmax) + wb[i];
        if (wtiles && err / (1.0 + vmax) > max_werr_seen) max_werr_seen = err / (1.0 + vmax);
        else if (!wtiles && err / (1.0 + vmax) > max_err_seen) max_err_seen = err / (1.0 + vmax);
        if (!(err <= tol))
            fail_msg("%s (%s%s, level %s, hd %d, %d positions): out[%d] = %.9g, float64 %.9g "
                     "(|err| %.3g > %.3g, of which the int16 weights' bound %.3g)",
                     what, hsd_dtype_name(c->type), c->tiled ? " tiled" : "", hsd_cpu_level_name(hsd_cpu_level_active()),
                     c->hd, n, i, out[i], ref[i], err, tol, wb[i]);
    }
    if (!quant) return;
    /* What quantising the query costs, against the exact query: the scores move by about
     * |k| · amax(q) / 254 per element, a few tenths of a percent of the output here, not a
     * wrong row (a mask or block error is off by the value scale). */
    reference(c, q, pos, n, scale, softcap, false, ref);
    for (int32_t i = 0; i < c->hd; i++) {
        double err = fabs(out[i] - ref[i]) / (1.0 + vmax);
        if (err > max_qerr_seen) max_qerr_seen = err;
        if (!(err <= 2e-2))
            fail_msg("%s (%s, level %s, hd %d, %d positions): out[%d] = %.9g, exact query %.9g: "
                     "|err| %.3g x (1 + max|v|) > 2e-2",
                     what, hsd_dtype_name(c->type), hsd_cpu_level_name(hsd_cpu_level_active()), c->hd, n, i, out[i], ref[i], err);
    }
}

/* the cache types, Q8_0 twice: in rows, then in tiles; Q4_0 (always tiles) */
static const hsd_dtype types[] = {HSD_DT_F32, HSD_DT_F16, HSD_DT_BF16, HSD_DT_Q8_0, HSD_DT_Q8_0, HSD_DT_Q4_0};
static const bool tiles[] = {false, false, false, false, true, true};
#define N_TYPES (sizeof types / sizeof types[0])

/* Runs body() at every level the CPU has. */
static void each_level(void (*body)(void)) {
    for (int lv = HSD_CPU_SCALAR; lv <= HSD_CPU_AVX512; lv++) {
        if (!hsd_cpu_level_supported((hsd_cpu_level)lv)) {
            printf("# level %s: not on this CPU, skipped\n", hsd_cpu_level_name((hsd_cpu_level)lv));
            continue;
        }
        hsd_cpu_level_limit((hsd_cpu_level)lv);
        max_err_seen = max_qerr_seen = max_werr_seen = 0;
        body();
        printf("# level %s: largest error %.3g x (1 + max|v|); tiled Q8_0 / Q4_0 (int16 weights) %.3g; "
               "Q8_0 / Q4_0 against the unquantised query %.3g\n",
               hsd_cpu_level_name((hsd_cpu_level)lv), max_err_seen, max_werr_seen, max_qerr_seen);
    }
    hsd_cpu_level_limit(HSD_CPU_N_LEVELS);
}

/* Chains: T new tokens after a cache of depth - T; every query head of a GQA group, all in
 * one call; each row against float64 and, bit for bit, against itself computed alone. */
static void chain_body(void) {
    static const int32_t depths[] = {1, 2, 3, 17, 64, 255, 1000, 4096};
    /* 3: a group split into parts of 2 and 1 rows; 16: one position per step at 16 lanes */
    static const int32_t ratios[] = {1, 4, 8, 3, 16};
    /* 96: an odd number of Q8_0 blocks (the AVX-512 kernel's half pair); 40: a Q8_0 row whose
     * last block is padded, and a dimension of 5 vectors at AVX2; 80: a tiled cache's last
     * block half padding (an odd number of 16-element chunks); 256: the tile kernels' largest */
    static const int32_t hds[] = {64, 128, 8, 96, 40, 80, 256};
    for (size_t ti = 0; ti < N_TYPES; ti++)
        for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
            for (size_t di = 0; di < sizeof depths / sizeof depths[0]; di++) {
                const int32_t depth = depths[di], hd = hds[hi], T = depth < 4 ? depth : 4;
                if (hd > 64 && depth > 1000) continue; /* the time goes to the reference */
                cache c;
                cache_fill_t(&c, types[ti], tiles[ti], depth, hd);
                int32_t *pos = malloc((size_t)depth * sizeof(int32_t));
                for (int32_t j = 0; j < depth; j++) pos[j] = j;
                for (size_t ri = 0; ri < sizeof ratios / sizeof ratios[0]; ri++) {
                    const int32_t R = ratios[ri], nr = R * T;
                    const int32_t window = (di % 2) && depth > 8 ? depth / 3 : 0; /* sliding */
                    const float softcap = ri == 1 ? 3.0f : 0.0f, scale = 1.0f / sqrtf((float)hd);
                    float *q = malloc((size_t)nr * hd * sizeof(float));
                    float *out = malloc((size_t)nr * hd * sizeof(float)), alone[256];
                    /* the scratch this call needs, no more: an undersized formula shows */
                    float *scratch = malloc(hsd_attn_scratch_floats(hd, nr) * sizeof(float));
                    for (int32_t i = 0; i < nr * hd; i++) q[i] = urand();
                    hsd_attn_row rows[64];
                    for (int32_t t = 0; t < T; t++)
                        for (int32_t h = 0; h < R; h++) {
                            int32_t last = depth - T + t, first = window && last - window + 1 > 0 ? last - window + 1 : 0;
                            rows[t * R + h] = (hsd_attn_row){q + (size_t)(t * R + h) * hd,
                                                             out + (size_t)(t * R + h) * hd, first, last};
                        }
                    hsd_attn_kv kv = {types[ti], c.k, c.v, hd, depth, NULL, tiles[ti]};
                    hsd_attn_rows(&kv, rows, nr, scale, softcap, scratch);
                    for (int32_t r = 0; r < nr; r++) {
                        char what[96];
                        snprintf(what, sizeof what, "chain depth %d, ratio %d, row %d%s%s", depth,
                                 R, r, window ? ", window" : "", softcap > 0 ? ", softcap" : "");
                        check_row(what, &c, rows[r].q, rows[r].out, pos + rows[r].first,
                                  rows[r].last - rows[r].first + 1, scale, softcap);
                        hsd_attn_row one = rows[r];
                        one.out = alone;
                        hsd_attn_rows(&kv, &one, 1, scale, softcap, scratch);
                        if (memcmp(alone, rows[r].out, (size_t)hd * sizeof(float)))
                            fail_msg("%s: the row alone differs from the row among %d (batch "
                                     "invariance)", what, nr);
                    }
                    free(q), free(out), free(scratch);
                }
                free(pos);
                cache_free(&c);
            }
}

/* Token trees: a prefix of L positions, then n tree tokens at L..L+n; token i sees the
 * prefix and its ancestors (itself included). Each row against float64 over exactly those
 * positions, and bit for bit against the same path laid out as a chain. */
static void tree_body(void) {
    static const int32_t prefixes[] = {0, 5, 31, 32, 700};
    static const int32_t parents[] = {-1, 0, 0, 1, 2, 3, 3, 6, 4, 8};
    const int32_t n = 10, hd = 64, R = 4;
    float *scratch = malloc(hsd_attn_scratch_floats(hd, R) * sizeof(float));
    for (size_t ti = 0; ti < N_TYPES; ti++)
        for (size_t pi = 0; pi < sizeof prefixes / sizeof prefixes[0]; pi++) {
            const int32_t L = prefixes[pi];
            cache c, ch;
            cache_fill_t(&c, types[ti], tiles[ti], L + n, hd);
            const size_t rowb = hsd_attn_row_bytes(types[ti], hd);
            for (int32_t i = 0; i < n; i++) {
                int32_t anc[16], d = 0, pos[1024];
                for (int32_t k = i; k >= 0; k = parents[k]) d++;
                for (int32_t k = i, at = d - 1; k >= 0; k = parents[k]) anc[at--] = k;
                for (int32_t j = 0; j < L; j++) pos[j] = j;
                for (int32_t j = 0; j < d; j++) pos[L + j] = L + anc[j];
                /* the same path as a chain: prefix, then the ancestors' rows in order */
                ch.type = c.type, ch.tiled = c.tiled, ch.n = L + d, ch.hd = hd;
                ch.k = malloc((size_t)cache_cap(L + d) * rowb), ch.v = malloc((size_t)cache_cap(L + d) * rowb);
                memset(ch.k, 0xff, (size_t)cache_cap(L + d) * rowb);
                memset(ch.v, 0xff, (size_t)cache_cap(L + d) * rowb);
                for (int32_t j = 0; j < L + d; j++) {
                    if (c.tiled) { /* the same key and value stored again: their own lanes */
                        hsd_attn_store_at(c.type, true, false, ch.k, j, c.kraw + (size_t)pos[j] * hd, hd);
                        hsd_attn_store_at(c.type, true, true, ch.v, j, c.vraw + (size_t)pos[j] * hd, hd);
                        continue;
                    }
                    memcpy((char *)ch.k + (size_t)j * rowb, (char *)c.k + (size_t)pos[j] * rowb, rowb);
                    memcpy((char *)ch.v + (size_t)j * rowb, (char *)c.v + (size_t)pos[j] * rowb, rowb);
                }
                float q[4 * 64], out[4 * 64], outc[4 * 64];
                for (int32_t k = 0; k < R * hd; k++) q[k] = urand();
                for (int win = 0; win < 2; win++) {
                    const int32_t last = L + d - 1;
                    const int32_t first = win && last > 3 ? last - 3 : 0;
                    hsd_attn_row rows[4], rowsc[4];
                    for (int32_t h = 0; h < R; h++) {
                        rows[h] = (hsd_attn_row){q + h * hd, out + h * hd, first, last};
                        rowsc[h] = (hsd_attn_row){q + h * hd, outc + h * hd, first, last};
                    }
                    hsd_attn_kv kv = {types[ti], c.k, c.v, hd, L, anc, tiles[ti]};
                    hsd_attn_kv kvc = {types[ti], ch.k, ch.v, hd, L + d, NULL, tiles[ti]};
                    const float scale = 0.125f;
                    hsd_attn_rows(&kv, rows, R, scale, 0.0f, scratch);
                    hsd_attn_rows(&kvc, rowsc, R, scale, 0.0f, scratch);
                    for (int32_t h = 0; h < R; h++) {
                        char what[96];
                        snprintf(what, sizeof what, "tree prefix %d, token %d (depth %d), head %d%s",
                                 L, i, d, h, win ? ", window" : "");
                        check_row(what, &c, q + h * hd, out + h * hd, pos + first, last - first + 1,
                                  scale, 0.0f);
                    }
                    if (memcmp(out, outc, sizeof out))
                        fail_msg("tree prefix %d, token %d: the tree row differs from the same "
                                 "path as a chain", L, i);
                }
                free(ch.k), free(ch.v);
            }
            cache_free(&c);
        }
    free(scratch);
}

/* The float caches' two prefetch forms (kernels/attention.c: spread over the loops on AMD,
 * block bursts elsewhere) on any CPU: the spread form against float64, and bit for bit
 * against the bursts, for chains (several tokens, windows: the stream ahead starts and stops
 * at block edges) and a tree (its stream ahead runs past the prefix into the tree rows). */
static void prefetch_body(void) {
    static const int32_t depths[] = {1, 31, 33, 129, 160, 1000, 3000};
    static const int32_t hds[] = {64, 128, 80, 40};
    static const int32_t ratios[] = {1, 4, 8};
    for (size_t ti = 0; ti < 3; ti++) /* F32, F16, BF16 */
        for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
            for (size_t di = 0; di < sizeof depths / sizeof depths[0]; di++) {
                const int32_t depth = depths[di], hd = hds[hi], T = depth < 3 ? depth : 3;
                cache c;
                cache_fill_t(&c, types[ti], false, depth, hd);
                int32_t *pos = malloc((size_t)depth * sizeof(int32_t));
                for (int32_t j = 0; j < depth; j++) pos[j] = j;
                for (size_t ri = 0; ri < sizeof ratios / sizeof ratios[0]; ri++) {
                    const int32_t R = ratios[ri], nr = R * T;
                    const int32_t window = ri == 1 && depth > 64 ? depth / 2 + 7 : 0;
                    const float scale = 1.0f / sqrtf((float)hd);
                    float *q = malloc((size_t)nr * hd * sizeof(float));
                    float *o1 = malloc((size_t)nr * hd * sizeof(float)), *o0 = malloc((size_t)nr * hd * sizeof(float));
                    float *scratch = malloc(hsd_attn_scratch_floats(hd, nr) * sizeof(float));
                    for (int32_t i = 0; i < nr * hd; i++) q[i] = urand();
                    hsd_attn_row rows[32];
                    hsd_attn_kv kv = {types[ti], c.k, c.v, hd, depth, NULL, false};
                    for (int form = 1; form >= 0; form--) {
                        for (int32_t t = 0; t < T; t++)
                            for (int32_t h = 0; h < R; h++) {
                                const int32_t last = depth - T + t;
                                const int32_t first = window && last - window + 1 > 0 ? last - window + 1 : 0;
                                rows[t * R + h] = (hsd_attn_row){q + (size_t)(t * R + h) * hd,
                                                                 (form ? o1 : o0) + (size_t)(t * R + h) * hd, first, last};
                            }
                        hsd_attn_prefetch_set(form);
                        hsd_attn_rows(&kv, rows, nr, scale, 0.0f, scratch);
                    }
                    hsd_attn_prefetch_set(-1);
                    for (int32_t r = 0; r < nr; r++) {
                        char what[112];
                        snprintf(what, sizeof what, "prefetch spread, depth %d, ratio %d, row %d%s",
                                 depth, R, r, window ? ", window" : "");
                        const int32_t last = depth - T + r / R;
                        const int32_t first = window && last - window + 1 > 0 ? last - window + 1 : 0;
                        check_row(what, &c, q + (size_t)r * hd, o1 + (size_t)r * hd, pos + first, last - first + 1, scale, 0.0f);
                    }
                    if (memcmp(o1, o0, (size_t)nr * hd * sizeof(float)))
                        fail_msg("%s cache, hd %d, depth %d, ratio %d, level %s: the spread prefetch "
                                 "changed the output bits", hsd_dtype_name(types[ti]), hd, depth, R,
                                 hsd_cpu_level_name(hsd_cpu_level_active()));
                    free(q), free(o1), free(o0), free(scratch);
                }
                free(pos);
                cache_free(&c);
            }
    /* a tree: 500 prefix positions, then a path of 40 tree rows whose ancestors skip about */
    const int32_t L = 500, n = 60, hd = 64, R = 4;
    cache c;
    cache_fill_t(&c, HSD_DT_F16, false, L + n, hd);
    int32_t anc[40], pos[L + 40];
    for (int32_t i = 0; i < 40; i++) anc[i] = (i * 37) % n;
    for (int32_t j = 0; j < L; j++) pos[j] = j;
    for (int32_t j = 0; j < 40; j++) pos[L + j] = L + anc[j];
    float q[4 * 64], o1[4 * 64], o0[4 * 64];
    float *scratch = malloc(hsd_attn_scratch_floats(hd, R) * sizeof(float));
    for (int32_t k = 0; k < R * hd; k++) q[k] = urand();
    hsd_attn_kv kv = {HSD_DT_F16, c.k, c.v, hd, L, anc, false};
    for (int form = 1; form >= 0; form--) {
        hsd_attn_row rows[4];
        for (int32_t h = 0; h < R; h++) rows[h] = (hsd_attn_row){q + h * hd, (form ? o1 : o0) + h * hd, 0, L + 39};
        hsd_attn_prefetch_set(form);
        hsd_attn_rows(&kv, rows, R, 0.125f, 0.0f, scratch);
    }
    hsd_attn_prefetch_set(-1);
    for (int32_t h = 0; h < R; h++)
        check_row("prefetch spread, tree", &c, q + h * hd, o1 + h * hd, pos, L + 40, 0.125f, 0.0f);
    if (memcmp(o1, o0, sizeof o1)) fail_msg("tree: the spread prefetch changed the output bits");
    free(scratch);
    cache_free(&c);
}

static void test_prefetch_forms(void **state) {
    (void)state;
    each_level(prefetch_body);
}

static void test_chain(void **state) {
    (void)state;
    each_level(chain_body);
}

static void test_tree(void **state) {
    (void)state;
    each_level(tree_body);
}

/* The cache stores round to nearest even: F16 as the scalar converter (which tests/
 * test_model_forward checks), BF16 as truncation plus the rounding bit. */
static void test_store(void **state) {
    (void)state;
    float x[37];
    uint16_t h[37];
    for (int i = 0; i < 37; i++) x[i] = urand() * 1000.0f;
    x[3] = 65504.0f, x[4] = 1e-7f, x[5] = -0.0f;
    for (int lv = HSD_CPU_SCALAR; lv <= HSD_CPU_AVX2; lv++) {
        if (!hsd_cpu_level_supported((hsd_cpu_level)lv)) continue;
        hsd_cpu_level_limit((hsd_cpu_level)lv);
        hsd_attn_store(HSD_DT_F16, h, x, 37);
        for (int i = 0; i < 37; i++) {
            double back = hsd_fp16_to_fp32(h[i]), ulp = ldexp(1.0, (int)floor(log2(fabs(x[i]) + 1e-30)) - 10);
            if (fabs(x[i]) < 6.1e-5) ulp = ldexp(1.0, -24);
            assert_true(fabs(back - x[i]) <= 0.5 * ulp);
        }
    }
    hsd_cpu_level_limit(HSD_CPU_N_LEVELS);
    hsd_attn_store(HSD_DT_BF16, h, x, 37);
    for (int i = 0; i < 37; i++) {
        double back = hsd_bf16_to_fp32(h[i]);
        assert_true(fabs(back - x[i]) <= fabs(x[i]) * ldexp(1.0, -8));
    }
}

/* Q8_0 rows as llama.cpp's CPU backend quantises a Q8_0 KV cache (ggml-cpu x86
 * quantize_row_q8_0, restated from its description): per block of 32, d = fp16(amax / 127),
 * q = round-half-even(x * (127 / amax)); a short last block as if padded with zeros. Rows of
 * 128 (whole blocks) and 40 (a short block), random values, ties, an all-zero block. */
static void test_store_q8_0(void **state) {
    (void)state;
    static const int32_t hds[] = {128, 40};
    for (size_t hi = 0; hi < 2; hi++)
        for (int trial = 0; trial < 40; trial++) {
            const int32_t hd = hds[hi];
            float x[128];
            uint8_t row[5 * 34];
            for (int32_t i = 0; i < hd; i++)
                x[i] = trial % 4 == 1 ? (float)((int)(urand() * 127.0f)) * 0.5f /* ties */
                                      : urand() * (float)(1 + trial);
            if (trial % 4 == 2)
                for (int32_t i = 0; i < 32; i++) x[i] = 0.0f;
            assert_int_equal(hsd_attn_row_bytes(HSD_DT_Q8_0, hd), (size_t)(hd + 31) / 32 * 34);
            hsd_attn_store(HSD_DT_Q8_0, row, x, hd);
            for (int32_t b = 0; b * 32 < hd; b++) {
                float amax = 0.0f;
                for (int32_t i = b * 32; i < hd && i < b * 32 + 32; i++)
                    amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
                const uint16_t d = hsd_fp32_to_fp16(amax / 127.0f);
                const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
                const int32_t nb = (hd + 31) / 32; /* the scales, then the quants */
                assert_int_equal(row[2 * b] | row[2 * b + 1] << 8, d);
                for (int32_t i = b * 32; i < b * 32 + 32; i++) {
                    const int q = i < hd ? (int)nearbyintf(x[i] * id) : 0;
                    if ((int8_t)row[2 * nb + i] != q)
                        fail_msg("Q8_0 row of %d, trial %d, element %d: q %d, llama.cpp's rule %d",
                                 hd, trial, i, (int8_t)row[2 * nb + i], q);
                }
            }
        }
}

/* Q4_0 rows (kernels/attention.h) as llama.cpp's CPU backend quantises a q4_0 KV cache
 * (q4_0_block above): the scales' bits and every nibble. Rows of 128 and 40 (a short block),
 * random values, values on the rounding edges (multiples of max / 16), an all-zero block. */
static void test_store_q4_0(void **state) {
    (void)state;
    static const int32_t hds[] = {128, 40};
    for (size_t hi = 0; hi < 2; hi++)
        for (int trial = 0; trial < 40; trial++) {
            const int32_t hd = hds[hi], nb = (hd + 31) / 32;
            float x[128];
            uint8_t row[4 * 18];
            for (int32_t i = 0; i < hd; i++)
                x[i] = trial % 4 == 1 ? (float)((int)(urand() * 16.0f)) * 0.25f /* edges */
                                      : urand() * (float)(1 + trial);
            if (trial % 4 == 2)
                for (int32_t i = 0; i < 32; i++) x[i] = 0.0f;
            assert_int_equal(hsd_attn_row_bytes(HSD_DT_Q4_0, hd), (size_t)nb * 18);
            hsd_attn_store(HSD_DT_Q4_0, row, x, hd);
            for (int32_t b = 0; b < nb; b++) {
                float blk[32] = {0};
                uint16_t dh;
                int nib[32];
                for (int32_t i = b * 32; i < hd && i < b * 32 + 32; i++) blk[i - b * 32] = x[i];
                q4_0_block(blk, &dh, nib);
                assert_int_equal(row[2 * b] | row[2 * b + 1] << 8, dh);
                for (int i = 0; i < 32; i++) { /* byte i % 16: element i in its low nibble, i + 16 high */
                    const uint8_t byte = row[2 * nb + 16 * b + i % 16];
                    const int got = i < 16 ? byte & 15 : byte >> 4;
                    if (got != nib[i])
                        fail_msg("Q4_0 row of %d, trial %d, element %d: n %d, llama.cpp's rule %d", hd, trial,
                                 32 * b + i, got, nib[i]);
                }
            }
        }
}

/* A tiled cache rolled back as the engine keeps a tree path (models/kv_cache.c: keys moved
 * by hsd_attn_copy_at, positions increasing, across tiles and within one): attention over
 * the result equals, bit for bit, attention over a cache that stored the kept keys directly,
 * and equals float64 over them. At every level (the tile kernel, and the levels that copy
 * tiles back into rows). */
static void copy_body_t(hsd_dtype t) {
    const int32_t base = 29, n = 20, hd = 128, R = 2;
    static const int32_t keep[] = {0, 3, 4, 9, 17, 19}; /* into 29, 30, ...: crosses a tile */
    const int32_t nk = (int32_t)(sizeof keep / sizeof keep[0]), len = base + nk;
    float *scratch = malloc(hsd_attn_scratch_floats(hd, R) * sizeof(float));
    cache c, d;
    cache_fill_t(&c, t, true, base + n, hd);
    for (int32_t j = 0; j < nk; j++) {
        hsd_attn_copy_at(t, true, false, c.k, base + j, base + keep[j], hd);
        hsd_attn_copy_at(t, true, true, c.v, base + j, base + keep[j], hd);
    }
    const size_t rb = hsd_attn_row_bytes(t, hd);
    d = c; /* keys and values stored directly at their new positions */
    d.k = malloc((size_t)cache_cap(len) * rb), d.v = malloc((size_t)cache_cap(len) * rb);
    memset(d.k, 0xff, (size_t)cache_cap(len) * rb);
    memset(d.v, 0xff, (size_t)cache_cap(len) * rb);
    int32_t pos[64];
    for (int32_t j = 0; j < len; j++) {
        pos[j] = j < base ? j : base + keep[j - base];
        hsd_attn_store_at(t, true, false, d.k, j, c.kraw + (size_t)pos[j] * hd, hd);
        hsd_attn_store_at(t, true, true, d.v, j, c.vraw + (size_t)pos[j] * hd, hd);
    }
    float q[2 * 128], out[2 * 128], outd[2 * 128];
    for (int32_t i = 0; i < R * hd; i++) q[i] = urand();
    hsd_attn_row rows[2], rowsd[2];
    for (int32_t h = 0; h < R; h++) {
        rows[h] = (hsd_attn_row){q + h * hd, out + h * hd, 0, len - 1};
        rowsd[h] = (hsd_attn_row){q + h * hd, outd + h * hd, 0, len - 1};
    }
    hsd_attn_kv kv = {t, c.k, c.v, hd, len, NULL, true};
    hsd_attn_kv kvd = {t, d.k, d.v, hd, len, NULL, true};
    hsd_attn_rows(&kv, rows, R, 0.1f, 0.0f, scratch);
    hsd_attn_rows(&kvd, rowsd, R, 0.1f, 0.0f, scratch);
    if (memcmp(out, outd, sizeof out))
        fail_msg("tiled %s keys and values moved by hsd_attn_copy_at differ from those stored there", hsd_dtype_name(t));
    /* float64 over the kept positions: key and value of position j are pos[j]'s */
    for (int32_t h = 0; h < R; h++)
        check_row("tiled cache after copy_at", &c, q + h * hd, out + h * hd, pos, len, 0.1f, 0.0f);
    free(d.k), free(d.v);
    cache_free(&c);
    free(scratch);
}

static void copy_body(void) {
    copy_body_t(HSD_DT_Q8_0);
    copy_body_t(HSD_DT_Q4_0);
}

static void test_copy_at(void **state) {
    (void)state;
    each_level(copy_body);
}

/* The rotation a quantised cache takes (hsd_hadamard, models/layer.c): each block of x
 * against float64 with the matrix written out, H[i][j] = (-1)^popcount(i & j) / sqrt(b); the
 * vector level's bits equal the scalar level's (the same butterflies); twice is the identity
 * (to rounding). Blocks 4 (scalar only), 8..1,024. */
static void test_hadamard(void **state) {
    (void)state;
    static const int32_t blocks[] = {4, 8, 16, 64, 128, 256, 1024};
    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
        const int32_t B = blocks[bi], n = 3 * B;
        float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y),
              *z = malloc((size_t)n * sizeof *z);
        for (int32_t i = 0; i < n; i++) x[i] = urand() * (i % 17 == 0 ? 50.0f : 1.0f); /* outliers */
        for (int lv = HSD_CPU_SCALAR; lv <= HSD_CPU_AVX2; lv++) {
            if (!hsd_cpu_level_supported((hsd_cpu_level)lv)) continue;
            hsd_cpu_level_limit((hsd_cpu_level)lv);
            memcpy(lv == HSD_CPU_SCALAR ? y : z, x, (size_t)n * sizeof *x);
            hsd_hadamard(lv == HSD_CPU_SCALAR ? y : z, n, B);
        }
        hsd_cpu_level_limit(HSD_CPU_N_LEVELS);
        if (hsd_cpu_level_supported(HSD_CPU_AVX2) && memcmp(y, z, (size_t)n * sizeof *y))
            fail_msg("hadamard block %d: the AVX2 level's bits differ from the scalar level's", B);
        for (int32_t b0 = 0; b0 < n; b0 += B) {
            double l1 = 0;
            for (int32_t j = 0; j < B; j++) l1 += fabs(x[b0 + j]);
            for (int32_t i = 0; i < B; i++) {
                double r = 0;
                for (int32_t j = 0; j < B; j++)
                    r += (__builtin_popcount((unsigned)(i & j)) % 2 ? -1.0 : 1.0) * x[b0 + j];
                r /= sqrt((double)B);
                if (!(fabs(y[b0 + i] - r) <= 1e-6 * l1 / sqrt((double)B) * log2((double)B)))
                    fail_msg("hadamard block %d, element %d: %.9g, float64 %.9g", B, b0 + i, y[b0 + i], r);
            }
        }
        hsd_hadamard(y, n, B);
        for (int32_t i = 0; i < n; i++)
            if (!(fabs(y[i] - x[i]) <= 1e-5 * 50.0)) fail_msg("hadamard block %d twice: element %d %.9g, was %.9g", B, i, y[i], x[i]);
        free(x), free(y), free(z);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hadamard),
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_store_q8_0),
        cmocka_unit_test(test_store_q4_0),
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_prefetch_forms),
        cmocka_unit_test(test_copy_at),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The forward products' kernels (kernels/matmul.h): every kernel set this CPU runs (plain C
 * always) against a float64 reference, every n in 1..16 and every weight storage type, on
 * random non-zero inputs and odd shapes; batch invariance (a row's result does not depend on
 * n, on its position among the n tokens, on the row subset or on the thread split), also on
 * the real models' logits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "kernels/cpu_features.h"
#include "kernels/matmul.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_bf16p.h"
#include "kernels/matmul_kq.h"
#include "kernels/matmul_q8.h"
#include "kernels/quant.h"
#include "models/inflate.h"
#include "lib/base/rng.h"
#include "models/synth.h"
#include "tests/testutil.h"

static hsd_rng rng;

/* uniform in ±[0.05, 1): never zero, so every product contributes */
static float nz(void) {
    float v = 0.05f + 0.95f * (float)hsd_rng_uniform(&rng);
    return hsd_rng_u32(&rng) & 1 ? -v : v;
}

/* The test's own conversions (the definitions, not the library's code paths). */
static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -v : v;
}
static uint16_t double_to_half(double v) { /* normal range only, round to nearest */
    int e;
    double f = frexp(fabs(v), &e); /* v = f·2^e, f in [0.5, 1) */
    int m = (int)lround(f * 2048.0) - 1024;
    if (m == 1024) m = 0, e++;
    return (uint16_t)((v < 0 ? 0x8000 : 0) | ((e + 14) << 10) | m);
}
static float bf16_value(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* round to nearest, ties to even, on the top 16 bits (finite inputs) */
static uint16_t bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t lo = u & 0xffff, hi = u >> 16;
    if (lo > 0x8000 || (lo == 0x8000 && (hi & 1))) hi++;
    return (uint16_t)hi;
}

/* A random matrix in storage type t, and its exact values as double. */
typedef struct mat {
    hsd_mat m;
    void *data;
    double *v; /* [rows][cols] */
} mat;

static mat make_mat(hsd_dtype t, int32_t rows, int32_t cols) {
    mat a;
    size_t rb = hsd_dtype_row_bytes(t, cols), N = (size_t)rows * cols;
    a.data = malloc(rb * rows);
    a.v = malloc(N * sizeof *a.v);
    for (int32_t r = 0; r < rows; r++) {
        uint8_t *row = (uint8_t *)a.data + rb * r;
        for (int32_t i = 0; i < cols; i++) {
            double *v = &a.v[(size_t)r * cols + i];
            float f = nz();
            switch (t) {
            case HSD_DT_F32:
                memcpy(row + 4 * i, &f, 4), *v = f;
                break;
            case HSD_DT_F16: {
                uint16_t h = double_to_half(f);
                memcpy(row + 2 * i, &h, 2), *v = half_to_double(h);
                break;
            }
            case HSD_DT_BF16: {
                uint16_t h = bf16_round(f);
                memcpy(row + 2 * i, &h, 2), *v = bf16_value(h);
                break;
            }
            case HSD_DT_Q8_0: {
                uint8_t *blk = row + (size_t)(i / 32) * HSD_Q8_0_BYTES;
                if (i % 32 == 0) { /* a random scale per block, 2^-9..2^-5 */
                    uint16_t d = double_to_half(
                        ldexp(1.0 + hsd_rng_uniform(&rng), -9 + (int)(hsd_rng_u32(&rng) % 4)));
                    memcpy(blk, &d, 2);
                }
                int q = 1 + (int)(hsd_rng_u32(&rng) % 127); /* ±1..127, and -128 sometimes */
                q = hsd_rng_u32(&rng) & 1 ? -q : q;
                if (hsd_rng_u32(&rng) % 50 == 0) q = -128;
                blk[2 + i % 32] = (uint8_t)(int8_t)q;
                uint16_t d;
                memcpy(&d, blk, 2);
                *v = half_to_double(d) * q;
                break;
            }
            case HSD_DT_Q4_0:
            case HSD_DT_Q5_0:
            case HSD_DT_Q4_1:
            case HSD_DT_Q5_1: { /* (q − o)·d, or q·d + m for the _1 types; q a nibble (+ a fifth
                                 * bit in qh); never q = o (no zero weights) */
                const int five = t == HSD_DT_Q5_0 || t == HSD_DT_Q5_1,
                          mins = t == HSD_DT_Q4_1 || t == HSD_DT_Q5_1,
                          o = mins ? -1 : five ? 16 : 8;
                const size_t bb = hsd_dtype_row_bytes(t, 32), qh_at = mins ? 4 : 2;
                uint8_t *blk = row + (size_t)(i / 32) * bb;
                if (i % 32 == 0) {
                    memset(blk, 0, bb);
                    uint16_t d = double_to_half(
                        ldexp(1.0 + hsd_rng_uniform(&rng), -7 + (int)(hsd_rng_u32(&rng) % 4)));
                    memcpy(blk, &d, 2);
                    if (mins) { /* a minimum of either sign, up to ~8 steps of d */
                        uint16_t m = double_to_half(-ldexp(1.0 + hsd_rng_uniform(&rng), -5 + (int)(hsd_rng_u32(&rng) % 4)) *
                                                    (hsd_rng_u32(&rng) & 1 ? 1 : -0.25));
                        memcpy(blk + 2, &m, 2);
                    }
                }
                int q;
                do q = (int)(hsd_rng_u32(&rng) % (five ? 32u : 16u));
                while (q == o);
                const int e = i % 32; /* qs[e % 16]: low nibble for e < 16, high for the rest */
                uint8_t *qs = blk + qh_at + (five ? 4 : 0);
                qs[e % 16] |= (uint8_t)((q & 15) << (e < 16 ? 0 : 4));
                if (five && (q & 16)) blk[qh_at + e / 8] |= (uint8_t)(1u << (e % 8)); /* qh bit e */
                uint16_t d, m = 0;
                memcpy(&d, blk, 2);
                if (mins) memcpy(&m, blk + 2, 2);
                *v = mins ? half_to_double(d) * q + half_to_double(m) : half_to_double(d) * (q - o);
                break;
            }
            default: /* the GGUF block types are the quant tests' (test_gguf_quant) */
                fail_msg("make_mat: dtype %s is not covered here", hsd_dtype_name(t));
            }
        }
    }
    a.m = (hsd_mat){t, rows, cols, a.data, NULL};
    return a;
}
static void free_mat(mat *a) {
    free(a->data), free(a->v);
}

/* The activations as the kernel set multiplies them: bf16-rounded for BF16 weights under
 * AVX-512 (vdpbf16ps), int8 per 32-block for Q8_0 weights under AVX-512 (vpdpbusd) and for
 * Q4_0 / Q5_0 / Q4_1 / Q5_1 weights at every vector level (llama.cpp's vec_dot types for them,
 * Q8_0 and Q8_1, round the same way) with
 * d = fp16(max|x|/127) and q = round-to-even(x · 127/max|x|) (llama.cpp's rule); fp32
 * otherwise. */
static void effective_x(hsd_mm_isa isa, hsd_dtype t, const float *x, int32_t cols, double *out) {
    if (isa >= HSD_MM_AVX512 && t == HSD_DT_BF16) { /* AMX too (tdpbf16ps) */
        for (int32_t i = 0; i < cols; i++) out[i] = bf16_value(bf16_round(x[i]));
    } else if ((isa >= HSD_MM_AVX512 && t == HSD_DT_Q8_0) || /* AMX too (tdpbsud) */
               (isa >= HSD_MM_AVX2 && t != HSD_DT_Q8_0 && hsd_q8p_type(t))) {
        for (int32_t b = 0; b < cols / 32; b++) {
            float amax = 0;
            for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
            /* d as llama.cpp stores it (fp16), q = round-to-even(x · 127/amax) */
            double d = half_to_double(double_to_half(amax / 127.0f));
            float id = amax > 0 ? 127.0f / amax : 0.0f;
            for (int i = 0; i < 32; i++) out[b * 32 + i] = d * rintf(x[b * 32 + i] * id);
        }
    } else {
        for (int32_t i = 0; i < cols; i++) out[i] = x[i];
    }
}

/* Additions per (row, token) in sequence, a bound on the rounding steps: plain C sums the
 * row in order, and so does AVX-512 for BF16 weights (one lane per row, two fused steps per
 * column pair: matmul_bf16p.h); AVX2 in 8 lanes, AVX-512 otherwise in 16 (then a tree), +2
 * for widening products (Q8_0's d·q) and the scale product. AMX: BF16 in the tile's own
 * order (any summation order of k terms is within γ_(k−1), so cols + 2 bounds it); Q8_0 the
 * AVX-512 kernel's arithmetic (exact int32 per block, then the same fp32 steps).
 * |error| <= steps · 2^-24 · sum|w·x| (Higham's γ_k). */
static double steps(hsd_mm_isa isa, hsd_dtype t, int32_t cols) {
    if (isa == HSD_MM_SCALAR || (isa >= HSD_MM_AVX512 && t == HSD_DT_BF16)) return cols + 2;
    return (isa == HSD_MM_AVX2 ? cols / 8 + 8 : cols / 16 + 8) + 2;
}

static int32_t isa_list(hsd_mm_isa *out) {
    int32_t k = 0;
    for (int i = 0; i < HSD_MM_N_ISA; i++)
        if (hsd_mm_isa_available((hsd_mm_isa)i))
            out[k++] = (hsd_mm_isa)i;
        else
            fprintf(stderr, "kernel set %s: not on this CPU, skipped\n",
                    hsd_mm_isa_name((hsd_mm_isa)i));
    return k;
}

static void check_shape(hsd_mm_isa isa, hsd_dtype t, int32_t rows, int32_t cols) {
    /* n = 1..16 (verification) and 37 (a prefill: 16-token tiles, then 5) */
    enum { NMAX = 16, NALL = 37 };
    mat a = make_mat(t, rows, cols);
    float *x = malloc((size_t)NALL * cols * sizeof *x);
    double *xe = malloc((size_t)NALL * cols * sizeof *xe);
    for (int32_t i = 0; i < NALL * cols; i++) x[i] = nz() * 4.0f;
    for (int32_t tk = 0; tk < NALL; tk++)
        effective_x(isa, t, x + (size_t)tk * cols, cols, xe + (size_t)tk * cols);
    float *out = malloc((size_t)NALL * rows * sizeof *out),
          *one = malloc((size_t)NALL * rows * sizeof *one);
    hsd_mm_ws ws = {0};
    /* each token alone (n = 1): the reference for invariance */
    for (int32_t tk = 0; tk < NALL; tk++)
        assert_int_equal(hsd_mm_run_isa(&ws, isa, one + (size_t)tk * rows, rows,
                                        x + (size_t)tk * cols, 1, &a.m, NULL, 0),
                         HSD_OK);
    double worst = 0;
    for (int32_t n = 1; n <= NALL; n = n == NMAX ? NALL : n + 1) {
        assert_int_equal(hsd_mm_run_isa(&ws, isa, out, rows, x, n, &a.m, NULL, 0), HSD_OK);
        for (int32_t tk = 0; tk < n; tk++)
            for (int32_t r = 0; r < rows; r++) {
                double s = 0, mag = 0;
                for (int32_t i = 0; i < cols; i++) {
                    double p = a.v[(size_t)r * cols + i] * xe[(size_t)tk * cols + i];
                    s += p, mag += fabs(p);
                }
                double err = fabs(out[(size_t)tk * rows + r] - s),
                       tol = steps(isa, t, cols) * ldexp(mag, -24);
                if (err > tol)
                    fprintf(stderr,
                            "%s %s %dx%d n=%d token %d row %d: got %.9g want %.9g (tol %.3g)\n",
                            hsd_mm_isa_name(isa), hsd_dtype_name(t), rows, cols, n, tk, r,
                            out[(size_t)tk * rows + r], s, tol);
                assert_true(err <= tol);
                worst = fmax(worst, err / ldexp(mag, -24));
            }
        /* batch invariance: bit-identical to the token computed alone */
        assert_memory_equal(out, one, (size_t)n * rows * sizeof *out);
    }
    /* Q8_0 and BF16 packed at load time (kernels/matmul_pack.h; a no-op where AVX-512 does not run):
     * the same bits as above, so the float64 check holds for it too */
    assert_int_equal(hsd_mm_pack(&a.m), HSD_OK);
    for (int amd = 0; amd < 2; amd++) { /* both vendors' tunings (BF16: the prefetch hint) */
        hsd_kqp_tuning_set(amd);
        for (int32_t n = 1; n <= NALL; n = n == NMAX ? NALL : n + 1) {
            assert_int_equal(hsd_mm_run_isa(&ws, isa, out, rows, x, n, &a.m, NULL, 0), HSD_OK);
            assert_memory_equal(out, one, (size_t)n * rows * sizeof *out);
        }
    }
    hsd_kqp_tuning_set(-1);
    hsd_mm_unpack(&a.m);
    /* row subsets (ids) give the same bits as the same rows of the full product */
    int32_t ids[8]; /* runs and jumps, repeats when rows < 8 */
    for (int j = 0; j < 8; j++) ids[j] = (j < 3 ? j : 5 * j + 1) % rows;
    float sub[16 * 8];
    assert_int_equal(hsd_mm_run_isa(&ws, isa, sub, 8, x, NMAX, &a.m, ids, 8), HSD_OK);
    for (int32_t tk = 0; tk < NMAX; tk++)
        for (int j = 0; j < 8; j++)
            assert_memory_equal(&sub[tk * 8 + j], &out[(size_t)tk * rows + ids[j]], sizeof(float));
    fprintf(stderr, "%-6s %-4s %4d x %-5d n 1..16, 37: worst error %5.2f ulp-steps (bound %g)\n",
            hsd_mm_isa_name(isa), hsd_dtype_name(t), rows, cols, worst, steps(isa, t, cols));
    hsd_mm_ws_free(&ws);
    free(x), free(xe), free(out), free(one);
    free_mat(&a);
}

static void test_kernels_vs_float64(void **state) {
    (void)state;
    hsd_rng_init(&rng, 21, 1);
    hsd_mm_isa isas[HSD_MM_N_ISA];
    int32_t k = isa_list(isas);
    static const hsd_dtype types[] = {HSD_DT_F32,  HSD_DT_F16,  HSD_DT_BF16, HSD_DT_Q8_0,
                                      HSD_DT_Q5_0, HSD_DT_Q4_0, HSD_DT_Q5_1, HSD_DT_Q4_1};
    /* rows not a multiple of the 4-row tile; columns with vector tails (not for the 32-block
     * types, whose rows are whole blocks: an odd block count takes the half-width tail) */
    /* (and 32-column multiples of several 16-row groups: AMX's tiles of 4 groups, a cut one) */
    static const int32_t rows[] = {37, 5, 1, 83}, cols_fp[] = {33, 520, 2048, 96},
                         cols_q8[] = {32, 96, 2048, 160};
    for (int32_t i = 0; i < k; i++)
        for (int ty = 0; ty < 8; ty++)
            for (int s = 0; s < 4; s++)
                check_shape(isas[i], types[ty], rows[s], ty >= 3 ? cols_q8[s] : cols_fp[s]);
}

/* The pool splits rows over threads: same bits as one thread, for every n. */
static void test_threads_invariant(void **state) {
    (void)state;
    hsd_rng_init(&rng, 22, 1);
    hsd_pool *pool = hsd_pool_create(2);
    assert_non_null(pool);
    static const hsd_dtype types[] = {HSD_DT_F32,  HSD_DT_F16,  HSD_DT_BF16, HSD_DT_Q8_0,
                                      HSD_DT_Q5_0, HSD_DT_Q4_0, HSD_DT_Q5_1};
    /* an odd column count too: each thread's scratch for packing on the fly must stay
     * 64-byte aligned (the 32-block types' rows are whole blocks) */
    static const int32_t colss[] = {256, 255};
    enum { ROWS = 1003, NIDS = 600 };
    int32_t ids[NIDS]; /* a row subset, large enough to be split over the threads */
    for (int i = 0; i < NIDS; i++) ids[i] = (7 * i + 3) % ROWS;
    for (int ci = 0; ci < 2; ci++)
        for (int ty = 0; ty < 7; ty++) {
            const int32_t cols = colss[ci];
            if (ty >= 3 && cols % 32) continue;
            mat a = make_mat(types[ty], ROWS, cols);
            float *x = malloc(16 * (size_t)cols * sizeof *x), *p = malloc(16 * ROWS * sizeof *p),
                  *q = malloc(16 * ROWS * sizeof *q), *sub = malloc(16 * NIDS * sizeof *sub);
            for (int i = 0; i < 16 * cols; i++) x[i] = nz();
            hsd_mm_ws w1 = {0}, w2 = {0};
            for (int32_t n = 1; n <= 16; n++) {
                assert_int_equal(hsd_mm_run(&w1, NULL, 1, p, ROWS, x, n, &a.m, NULL, 0), HSD_OK);
                assert_int_equal(hsd_mm_run(&w2, pool, 2, q, ROWS, x, n, &a.m, NULL, 0), HSD_OK);
                assert_memory_equal(p, q, (size_t)n * ROWS * sizeof *p);
                /* a row subset on 2 threads: the same bits as those rows of the product */
                assert_int_equal(hsd_mm_run(&w2, pool, 2, sub, NIDS, x, n, &a.m, ids, NIDS),
                                 HSD_OK);
                for (int32_t t = 0; t < n; t++)
                    for (int i = 0; i < NIDS; i++)
                        assert_memory_equal(&sub[t * NIDS + i], &p[t * ROWS + ids[i]],
                                            sizeof(float));
                if (ty < 2) continue; /* BF16 and the 32-block types have packed copies */
                /* packed: threads split the 16-row groups (1003 / 2 = 502 rows each) */
                assert_int_equal(hsd_mm_pack(&a.m), HSD_OK);
                assert_int_equal(hsd_mm_run(&w2, pool, 2, q, ROWS, x, n, &a.m, NULL, 0), HSD_OK);
                hsd_mm_unpack(&a.m);
                assert_memory_equal(p, q, (size_t)n * ROWS * sizeof *p);
            }
            hsd_mm_ws_free(&w1), hsd_mm_ws_free(&w2);
            free(x), free(p), free(q), free(sub);
            free_mat(&a);
        }
    hsd_pool_free(pool);
}

/* A copy packed on 2 threads (each writing its share of the groups: matrices of 4 MB and up)
 * gives the bits of the products without a copy (packed on the fly), for every n. */
static void test_pack_on_threads(void **state) {
    (void)state;
    hsd_rng_init(&rng, 24, 1);
    hsd_pool *pool = hsd_pool_create(2);
    assert_non_null(pool);
    static const hsd_dtype types[] = {HSD_DT_BF16, HSD_DT_Q8_0, HSD_DT_Q5_0};
    enum { ROWS = 4099, COLS = 1056 }; /* 8.7 MB of BF16, 4.6 MB of Q8_0, 3.0 MB of Q5_0 */
    for (int ty = 0; ty < 3; ty++) {
        mat a = make_mat(types[ty], ROWS, COLS);
        float *x = malloc(16 * COLS * sizeof *x), *p = malloc(16 * ROWS * sizeof *p),
              *q = malloc(16 * ROWS * sizeof *q);
        for (int i = 0; i < 16 * COLS; i++) x[i] = nz();
        hsd_mm_ws ws = {0};
        assert_int_equal(hsd_mm_pack_on(&a.m, pool, 2), HSD_OK);
        for (int32_t n = 1; n <= 16; n++) {
            assert_int_equal(hsd_mm_run(&ws, pool, 2, q, ROWS, x, n, &a.m, NULL, 0), HSD_OK);
            hsd_mm_unpack(&a.m);
            assert_int_equal(hsd_mm_run(&ws, pool, 2, p, ROWS, x, n, &a.m, NULL, 0), HSD_OK);
            assert_memory_equal(p, q, (size_t)n * ROWS * sizeof *p);
            assert_int_equal(hsd_mm_pack_on(&a.m, pool, 2), HSD_OK);
        }
        hsd_mm_unpack(&a.m);
        hsd_mm_ws_free(&ws);
        free(x), free(p), free(q);
        free_mat(&a);
    }
    hsd_pool_free(pool);
}

/* A fused job (a layer's q, k, v: one activation, several matrices of different row counts)
 * on 2 threads, rows handed out in chunks: every product equals the float64 reference and
 * has the bits of that matrix's product computed alone for each token alone (n = 1), at
 * every n. Mismatched columns or storage types are refused. */
static void test_fused_products(void **state) {
    (void)state;
    hsd_rng_init(&rng, 23, 1);
    hsd_pool *pool = hsd_pool_create(2);
    assert_non_null(pool);
    hsd_mm_isa isa = hsd_mm_isa_default();
    static const hsd_dtype types[] = {HSD_DT_F32, HSD_DT_F16, HSD_DT_BF16, HSD_DT_Q8_0};
    enum { COLS = 512, NP = 3, NMAX = 16 };
    static const int32_t rows[NP] = {1003, 130, 61};
    for (int ty = 0; ty < 4; ty++) {
        mat m[NP];
        float *x = malloc((size_t)NMAX * COLS * sizeof *x);
        double *xe = malloc((size_t)NMAX * COLS * sizeof *xe);
        for (int i = 0; i < NMAX * COLS; i++) x[i] = nz();
        for (int32_t tk = 0; tk < NMAX; tk++)
            effective_x(isa, types[ty], x + (size_t)tk * COLS, COLS, xe + (size_t)tk * COLS);
        float *out[NP], *one[NP];
        hsd_mm_prod prods[NP];
        hsd_mm_ws ws = {0}, w1 = {0};
        for (int p = 0; p < NP; p++) {
            m[p] = make_mat(types[ty], rows[p], COLS);
            out[p] = malloc((size_t)NMAX * rows[p] * sizeof(float));
            one[p] = malloc((size_t)NMAX * rows[p] * sizeof(float));
            prods[p] = (hsd_mm_prod){out[p], rows[p], &m[p].m, NULL, 0};
            for (int32_t tk = 0; tk < NMAX; tk++)
                assert_int_equal(hsd_mm_run_isa(&w1, isa, one[p] + (size_t)tk * rows[p], rows[p],
                                                x + (size_t)tk * COLS, 1, &m[p].m, NULL, 0),
                                 HSD_OK);
        }
        for (int32_t n = 1; n <= NMAX; n++) {
            assert_int_equal(hsd_mm_run_fused(&ws, pool, 2, x, n, prods, NP), HSD_OK);
            for (int p = 0; p < NP; p++) {
                for (int32_t tk = 0; tk < n; tk++)
                    for (int32_t r = 0; r < rows[p]; r++) {
                        double s = 0, mag = 0;
                        for (int32_t i = 0; i < COLS; i++) {
                            double v = m[p].v[(size_t)r * COLS + i] * xe[(size_t)tk * COLS + i];
                            s += v, mag += fabs(v);
                        }
                        assert_true(fabs(out[p][(size_t)tk * rows[p] + r] - s) <=
                                    steps(isa, types[ty], COLS) * ldexp(mag, -24));
                    }
                assert_memory_equal(out[p], one[p], (size_t)n * rows[p] * sizeof(float));
            }
        }
        /* one activation preparation serves the job: other columns or types are refused */
        mat odd = make_mat(types[ty], 7, COLS + 32), other = make_mat(types[(ty + 1) % 4], 7, COLS);
        hsd_mm_prod bad[2] = {prods[0], {out[1], 7, &odd.m, NULL, 0}};
        assert_int_equal(hsd_mm_run_fused(&ws, pool, 2, x, 1, bad, 2), HSD_ERR_INVALID_ARG);
        bad[1].w = &other.m;
        assert_int_equal(hsd_mm_run_fused(&ws, pool, 2, x, 1, bad, 2), HSD_ERR_INVALID_ARG);
        free_mat(&odd), free_mat(&other);
        for (int p = 0; p < NP; p++) free(out[p]), free(one[p]), free_mat(&m[p]);
        hsd_mm_ws_free(&ws), hsd_mm_ws_free(&w1);
        free(x), free(xe);
    }
    hsd_pool_free(pool);
}

/* ---- real models: logits of a token alone vs inside a forward of n = 2..16 ------------ */

static void check_model_invariance(hsd_model *m, const char *label) {
    int32_t V = hsd_model_vocab_size(m);
    enum { P = 7, NMAX = 16 };
    int32_t toks[P + NMAX];
    for (int i = 0; i < P + NMAX; i++) toks[i] = (int32_t)(hsd_rng_u32(&rng) % (uint32_t)V);
    float *alone = malloc((size_t)NMAX * V * sizeof *alone),
          *batch = malloc((size_t)NMAX * V * sizeof *batch);
    assert_int_equal(hsd_model_kv_truncate(m, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(m, toks, P, NULL, NULL, 0, NULL), HSD_OK);
    for (int i = 0; i < NMAX; i++) /* one at a time: how AR decoding sees each token */
        assert_int_equal(
            hsd_model_forward(m, toks + P + i, 1, NULL, NULL, 1, alone + (size_t)i * V), HSD_OK);
    for (int32_t n = 2; n <= NMAX; n++) {
        assert_int_equal(hsd_model_kv_truncate(m, P), HSD_OK);
        assert_int_equal(hsd_model_forward(m, toks + P, n, NULL, NULL, n, batch), HSD_OK);
        /* memcmp, not a tolerance: greedy verification must see AR's exact logits */
        assert_memory_equal(batch, alone, (size_t)n * V * sizeof *batch);
    }
    fprintf(stderr, "%-24s logits of each token alone == inside n = 2..16 (bit-identical)\n",
            label);
    free(alone), free(batch);
}

static void test_models_batch_invariant(void **state) {
    (void)state;
    hsd_rng_init(&rng, 23, 1);
    static const char *files[] = {"models/stories260K/stories260K.bin",
                                  "models/babyllama-tok105/model5000.bin"};
    for (int f = 0; f < 2; f++) {
        const char *p = hsd_test_path(files[f]);
        if (!hsd_test_require(p)) continue;
        hsd_model *m;
        assert_int_equal(hsd_model_load(p, NULL, &m), HSD_OK);
        check_model_invariance(m, files[f] + 7);
        hsd_model_free(m);
    }
    /* synthetic models in the storage types the real ones do not have */
    static const hsd_dtype types[] = {HSD_DT_BF16, HSD_DT_Q8_0, HSD_DT_F16};
    for (int ty = 0; ty < 3; ty++) {
        hsd_synth_model *sm;
        assert_int_equal(hsd_synth_create("small", types[ty], 31, &sm), HSD_OK);
        hsd_transformer *tf;
        assert_int_equal(hsd_synth_to_transformer(sm, NULL, &tf), HSD_OK);
        hsd_model_iface it = {HSD_MODEL_IFACE_INIT};
        hsd_tf_iface(tf, &it);
        hsd_model *m;
        assert_int_equal(hsd_model_from_iface(&it, &m), HSD_OK);
        char label[64];
        snprintf(label, sizeof label, "synth small %s", hsd_dtype_name(types[ty]));
        check_model_invariance(m, label);
        hsd_model_free(m);
        hsd_synth_free(sm);
    }
}

/* AMX-INT8 Q8_0 (an integer path: exact int32 block dots, then the AVX-512 kernel's fp32
 * steps) against the AVX-512 VNNI kernel as its reference: bit-identical for every n 1..16,
 * packed or not, whole and cut groups. Skipped (printed) where the CPU has no AMX. */
static void test_amx_q8_matches_avx512(void **state) {
    (void)state;
    if (!hsd_mm_isa_available(HSD_MM_AMX) || !hsd_mm_isa_available(HSD_MM_AVX512)) {
        fprintf(stderr, "AMX or AVX-512 not on this CPU (%s): skipped\n",
                hsd_cpu_features_get()->desc);
        skip();
    }
    hsd_rng_init(&rng, 25, 1);
    static const int32_t rows[] = {1, 16, 83, 250}, cols[] = {32, 2048, 160, 576};
    for (int s = 0; s < 4; s++) {
        mat a = make_mat(HSD_DT_Q8_0, rows[s], cols[s]);
        float *x = malloc(16 * (size_t)cols[s] * sizeof *x);
        float *p = malloc(16 * (size_t)rows[s] * sizeof *p), *q = malloc(16 * (size_t)rows[s] * sizeof *q);
        for (int i = 0; i < 16 * cols[s]; i++) x[i] = nz() * 3.0f;
        hsd_mm_ws ws = {0};
        for (int packed = 0; packed < 2; packed++) {
            if (packed) assert_int_equal(hsd_mm_pack(&a.m), HSD_OK);
            for (int32_t n = 1; n <= 16; n++) {
                assert_int_equal(hsd_mm_run_isa(&ws, HSD_MM_AVX512, p, rows[s], x, n, &a.m, NULL, 0),
                                 HSD_OK);
                assert_int_equal(hsd_mm_run_isa(&ws, HSD_MM_AMX, q, rows[s], x, n, &a.m, NULL, 0),
                                 HSD_OK);
                assert_memory_equal(p, q, (size_t)n * rows[s] * sizeof *p);
            }
            if (packed) hsd_mm_unpack(&a.m);
        }
        fprintf(stderr, "amx Q8_0 %4d x %-5d == avx512 Q8_0, n 1..16, packed and not\n", rows[s],
                cols[s]);
        hsd_mm_ws_free(&ws);
        free(x), free(p), free(q);
        free_mat(&a);
    }
}

/* A random k-quant matrix: random bytes (every bit pattern of the quants and of the packed
 * 6-bit scales is a valid block) with the fp16 scales set to 2^-9..2^-5, so that every
 * product contributes and nothing overflows. */
static void *make_kquant(hsd_dtype t, int32_t rows, int32_t cols) {
    size_t rb = hsd_dtype_row_bytes(t, cols), bb = hsd_dtype_block_bytes(t);
    uint8_t *d = malloc(rb * rows);
    for (size_t i = 0; i < rb * rows; i++) d[i] = (uint8_t)hsd_rng_u32(&rng);
    for (size_t b = 0; b < rb * rows / bb; b++) {
        uint8_t *blk = d + b * bb;
        for (int k = 0; k < 2; k++) {
            uint16_t h = double_to_half(
                ldexp(1.0 + hsd_rng_uniform(&rng), -9 + (int)(hsd_rng_u32(&rng) % 4)));
            if (t == HSD_DT_Q6_K) {
                memcpy(blk + 208, &h, 2);
                break;
            }
            memcpy(blk + 2 * k, &h, 2); /* d, then dmin */
        }
    }
    return d;
}

/* The AMX products leave the calling thread's tile state as they found it: another library in
 * the process (llama.cpp's AMX kernels) configures a thread's tiles once and relies on that,
 * and a product that released them under it made its next tile instruction fault (SIGILL in
 * test_model_arch_llama_cpp). Each AMX family (BF16, Q8_0, the k-quant tiles at 16 tokens),
 * after a foreign configuration (T = 5) and from the released state: sttilecfg after the
 * product reads what it read before. Skipped (printed) where the CPU has no AMX. */
static void test_amx_tile_state_restored(void **state) {
    (void)state;
    if (!hsd_mm_isa_available(HSD_MM_AMX)) {
        fprintf(stderr, "AMX not on this CPU (%s): skipped\n", hsd_cpu_features_get()->desc);
        skip();
    }
#ifdef HSD_MM_HAVE_AVX512
    hsd_rng_init(&rng, 41, 1);
    const int32_t R = 48, C = 512, N = 16;
    float *x = malloc((size_t)N * C * sizeof *x), *out = malloc((size_t)N * R * sizeof *out);
    for (int i = 0; i < N * C; i++) x[i] = nz();
    static const hsd_dtype types[] = {HSD_DT_BF16, HSD_DT_Q8_0, HSD_DT_Q4_K, HSD_DT_Q6_K};
    hsd_mm_ws ws = {0};
    for (int ty = 0; ty < 4; ty++) {
        const hsd_dtype t = types[ty];
        mat a = {0};
        hsd_mat m;
        void *kq = NULL;
        if (t == HSD_DT_Q4_K || t == HSD_DT_Q6_K) {
            kq = make_kquant(t, R, C);
            m = (hsd_mat){t, R, C, kq, NULL};
        } else {
            a = make_mat(t, R, C);
            m = a.m;
        }
        /* k-quants: Intel's tuning too, where 16 tokens run on the AMX tiles (AMD's keeps
         * them on AVX-512 at this width; both must leave the state alone) */
        for (int run = 0; run < (kq ? 4 : 2); run++) {
            const int foreign = run & 1;
            if (kq) hsd_kqp_tuning_set(run >> 1);
            hsd_amx_cfg before, after;
            if (foreign) hsd_amx_tiles_set(5); /* as another library would have left them */
            hsd_amx_tiles_save(&before);
            assert_int_equal(before.palette, foreign ? 1 : 0);
            assert_int_equal(hsd_mm_run_isa(&ws, HSD_MM_AMX, out, R, x, N, &m, NULL, 0), HSD_OK);
            hsd_amx_tiles_save(&after);
            if (memcmp(&before, &after, sizeof before))
                fail_msg("amx %s: tile configuration %s the product (palette %d rows[0] %d)",
                         hsd_dtype_name(t), foreign ? "changed by" : "left configured by",
                         after.palette, after.rows[0]);
            memset(&before, 0, sizeof before);
            hsd_amx_tiles_restore(&before); /* released: the state the next round starts from */
        }
        hsd_kqp_tuning_set(-1);
        fprintf(stderr, "amx %-5s x %d tokens: tile state kept (foreign configuration and none)\n",
                hsd_dtype_name(t), N);
        if (kq) free(kq);
        else free_mat(&a);
    }
    hsd_mm_ws_free(&ws);
    free(x), free(out);
#endif
}

/* The packed k-quant products (kernels/matmul_kq.h) on every level that runs them (AVX-512 and
 * AMX): bit-identical to the scalar integer reference of the same arithmetic for every token,
 * every n in 1..16 (so batch-invariant), packed at load time and packed on the fly, full and
 * row subsets; and that reference within rounding of a float64 dot product of the dequantised
 * weights (the GGUF block formulas, quant_ref.c) with the Q8_K-rounded activations. */
static void test_kquant_packed_vs_reference(void **state) {
    (void)state;
    hsd_mm_isa isas[HSD_MM_N_ISA];
    int32_t k = isa_list(isas), ran = 0;
    hsd_rng_init(&rng, 31, 1);
    static const hsd_dtype types[] = {HSD_DT_Q4_K, HSD_DT_Q5_K, HSD_DT_Q6_K};
    static const int32_t rows[] = {37, 1, 83}, cols[] = {256, 768, 512};
    for (int ty = 0; ty < 3; ty++)
        for (int s = 0; s < 3; s++) {
            const hsd_dtype t = types[ty];
            const int32_t R = rows[s], C = cols[s], nb = C / HSD_QK_K;
            void *data = make_kquant(t, R, C);
            hsd_mat m = {t, R, C, data, NULL};
            float *x = malloc(16 * (size_t)C * sizeof *x), *wf = malloc((size_t)C * sizeof *wf);
            for (int i = 0; i < 16 * C; i++) x[i] = nz() * 3.0f;
            hsd_q8k *xq = malloc(16 * (size_t)nb * sizeof *xq);
            for (int tk = 0; tk < 16; tk++) hsd_quant_q8k(x + (size_t)tk * C, C, xq + tk * nb);
            float *ref = malloc(16 * (size_t)R * sizeof *ref);
            const size_t rb = hsd_dtype_row_bytes(t, C);
            double worst = 0;
            for (int32_t r = 0; r < R; r++) {
                hsd_quant_dequant_ref(t, (uint8_t *)data + rb * r, C, wf);
                for (int tk = 0; tk < 16; tk++) {
                    const hsd_q8k *xb = xq + tk * nb;
                    ref[tk * R + r] = hsd_kqp_dot_ref(t, (uint8_t *)data + rb * r, xb, C);
                    double e = 0, mag = 0;
                    for (int32_t i = 0; i < C; i++) {
                        double p = (double)wf[i] * ((double)xb[i / HSD_QK_K].d * xb[i / HSD_QK_K].qs[i % HSD_QK_K]);
                        e += p, mag += fabs(p);
                    }
                    /* per block: the integer sums exact, float(I), float(M) and the two
                     * products and fmas round (≤ 6 steps of 2^-24 of the block's magnitude),
                     * the dequantised weights d·sc·q − dmin·m twice more */
                    double err = fabs(ref[tk * R + r] - e), tol = (6.0 * nb + 4.0) * ldexp(mag, -24);
                    if (err > tol)
                        fprintf(stderr, "%s %dx%d row %d token %d: ref %.9g float64 %.9g\n",
                                hsd_dtype_name(t), R, C, r, tk, ref[tk * R + r], e);
                    assert_true(err <= tol);
                    worst = fmax(worst, err / ldexp(mag, -24));
                }
            }
            float *out = malloc(16 * (size_t)R * sizeof *out);
            hsd_mm_ws ws = {0};
            int levels = 0;
            for (int32_t i = 0; i < k; i++) {
                if (isas[i] < HSD_MM_AVX512) continue;
                ran++, levels++;
                for (int pv = 0; pv < 4; pv++) { /* packed or not × Intel's or AMD's tuning */
                    const int packed = pv & 1;
                    hsd_kqp_tuning_set(pv >> 1);
                    if (packed) assert_int_equal(hsd_mm_pack(&m), HSD_OK);
                    for (int32_t n = 1; n <= 16; n++) {
                        assert_int_equal(hsd_mm_run_isa(&ws, isas[i], out, R, x, n, &m, NULL, 0), HSD_OK);
                        for (int32_t q = 0; q < n * R; q++)
                            if (memcmp(&out[q], &ref[q], sizeof *out))
                                fail_msg("%s %s %dx%d tuning %s n=%d packed=%d token %d row %d: %.9g, reference %.9g",
                                         hsd_mm_isa_name(isas[i]), hsd_dtype_name(t), R, C,
                                         pv >> 1 ? "amd" : "intel", n, packed, q / R, q % R, out[q], ref[q]);
                    }
                    /* a row subset (packed on the fly, runs and jumps) */
                    int32_t ids[8];
                    for (int j = 0; j < 8; j++) ids[j] = (j < 3 ? j : 5 * j + 1) % R;
                    float sub[16 * 8];
                    assert_int_equal(hsd_mm_run_isa(&ws, isas[i], sub, 8, x, 16, &m, ids, 8), HSD_OK);
                    for (int tk = 0; tk < 16; tk++)
                        for (int j = 0; j < 8; j++)
                            assert_memory_equal(&sub[tk * 8 + j], &ref[tk * R + ids[j]], sizeof(float));
                    if (packed) hsd_mm_unpack(&m);
                }
                hsd_kqp_tuning_set(-1);
            }
            fprintf(stderr, "%-4s %3d x %-4d reference vs float64 %5.2f ulp-steps of the magnitude; "
                    "packed kernels == reference on %d levels (Intel and AMD tunings), n 1..16\n",
                    hsd_dtype_name(t), R, C, worst, levels);
            hsd_mm_ws_free(&ws);
            free(out), free(ref), free(xq), free(x), free(wf), free(data);
        }
    if (!ran) {
        fprintf(stderr, "no AVX-512 VNNI on this CPU (%s): packed k-quant kernels not run\n",
                hsd_cpu_features_get()->desc);
        skip();
    }
}

/* The probe against the kernel's own reading of the CPU (/proc/cpuinfo, Linux): the vendor
 * that picks the k-quant kernels' tuning (vendor_id), and each feature the probe reports is one
 * the kernel lists in flags (the probe may report fewer: it also needs the OS state). */
static void test_cpu_probe_matches_proc(void **state) {
    (void)state;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        fprintf(stderr, "no /proc/cpuinfo here: the probe is not checked against it\n");
        skip();
    }
    char line[8192], vendor[64] = "", flags[8192] = "";
    while (fgets(line, sizeof line, f) && (!vendor[0] || !flags[0])) {
        if (!vendor[0] && !strncmp(line, "vendor_id", 9) && strchr(line, ':'))
            sscanf(strchr(line, ':') + 1, "%63s", vendor);
        if (!flags[0] && !strncmp(line, "flags", 5) && strchr(line, ':'))
            snprintf(flags, sizeof flags, "%s ", strchr(line, ':') + 1);
    }
    fclose(f);
    if (!vendor[0] || !flags[0]) {
        fprintf(stderr, "/proc/cpuinfo names no x86 vendor_id / flags: not checked\n");
        skip();
    }
    for (char *c = flags; *c; c++)
        if (*c == '\n') *c = ' ';
    const hsd_cpu_features *cf = hsd_cpu_features_get();
    assert_int_equal(cf->amd, strcmp(vendor, "AuthenticAMD") == 0);
    /* test_matmul_kernels_amx_emu: AMX in C (kernels/matmul_amx_emu.h), not the CPU's */
    const bool amx_emu = strstr(cf->desc, "(amx_emulated)") != NULL;
    const struct {
        bool on;
        const char *flag;
    } k[] = {{cf->avx2, " avx2 "},          {cf->fma, " fma "},
             {cf->f16c, " f16c "},          {cf->avx512, " avx512bw "},
             {cf->avx512_vnni, " avx512_vnni "}, {cf->avx512_bf16, " avx512_bf16 "},
             {cf->amx_tile && !amx_emu, " amx_tile "},
             {cf->amx_int8 && !amx_emu, " amx_int8 "}};
    char padded[8200];
    snprintf(padded, sizeof padded, " %s", flags);
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (k[i].on && !strstr(padded, k[i].flag))
            fail_msg("the probe reports%sbut /proc/cpuinfo's flags do not list it", k[i].flag);
    fprintf(stderr, "probe (%s) agrees with /proc/cpuinfo (vendor %s)\n", cf->desc, vendor);
}

/* Every level that runs the packed k-quant kernels (AVX-512 VNNI, AMX), with the weights
 * packed on the fly and packed at load: m times the first n tokens of x equals ref ([token]
 * [row], the scalar reference) bit for bit, for each n of ns. Returns the levels run. */
static int kq_levels_equal_ref(hsd_mat *m, const float *x, const int32_t *ns, int nn,
                               const float *ref, float *out, const char *what) {
    hsd_mm_isa isas[HSD_MM_N_ISA];
    const int32_t k = isa_list(isas), R = m->rows;
    int ran = 0;
    hsd_mm_ws ws = {0};
    for (int32_t i = 0; i < k; i++) {
        if (isas[i] < HSD_MM_AVX512) continue;
        ran++;
        /* both vendors' tunings (Q4_K / Q6_K's scaling form, the prefetch) on any CPU */
        for (int amd = 0; amd < 2; amd++) {
            hsd_kqp_tuning_set(amd);
            for (int packed = 0; packed < 2; packed++) {
                if (packed) assert_int_equal(hsd_mm_pack(m), HSD_OK);
                for (int q = 0; q < nn; q++) {
                    const int32_t n = ns[q];
                    assert_int_equal(hsd_mm_run_isa(&ws, isas[i], out, R, x, n, m, NULL, 0), HSD_OK);
                    for (int32_t e = 0; e < n * R; e++)
                        if (memcmp(&out[e], &ref[e], sizeof *out))
                            fail_msg("%s %s %s tuning %s n=%d packed=%d token %d row %d: %.9g, reference %.9g",
                                     hsd_mm_isa_name(isas[i]), hsd_dtype_name(m->type), what,
                                     amd ? "amd" : "intel", n, packed, e / R, e % R, out[e], ref[e]);
                }
                if (packed) hsd_mm_unpack(m);
            }
        }
        hsd_kqp_tuning_set(-1);
        fprintf(stderr, "%s %-4s %d x %d %s, Intel and AMD tunings: == reference\n",
                hsd_mm_isa_name(isas[i]), hsd_dtype_name(m->type), R, m->cols, what);
    }
    hsd_mm_ws_free(&ws);
    return ran;
}

static void kq_skip_without_vnni(int ran, const char *what) {
    if (ran) return;
    fprintf(stderr, "no AVX-512 VNNI on this CPU (%s): %s not run\n", hsd_cpu_features_get()->desc, what);
    skip();
}

/* The integer sums at their bounds. The VNNI kernel scales each half sub-block by vpdpwssd,
 * which reads the low 16 bits of the half's int32 sum: exact only while that sum fits int16
 * (Q4_K: 16 columns · 15 · 127 = 30480; Q6_K: 8 columns · 32 · 127 = 32512). Random blocks
 * stay far from it, so here every quant and scale is at an extreme (Q4_K/Q5_K: q = 0 or
 * 15/31 with 6-bit scales and mins 63; Q6_K: q = 0 or 63, scales 127 and -128) against
 * activations whose Q8_K bytes are all -127 or all +127 (but the first): each kernel level
 * equals the scalar statement of the arithmetic bit for bit, for n = 1..16 (and 37, past the
 * AMX chunks), and that within rounding of float64. A 16-column half for Q6_K (65024) would
 * fail here. */
static void test_kquant_extremes(void **state) {
    (void)state;
    static const hsd_dtype types[] = {HSD_DT_Q4_K, HSD_DT_Q5_K, HSD_DT_Q6_K};
    enum { R = 32, C = 512, NT = 37 };
    int ran = 0;
    for (int ty = 0; ty < 3; ty++) {
        const hsd_dtype t = types[ty];
        const size_t rb = hsd_dtype_row_bytes(t, C), bb = hsd_dtype_block_bytes(t);
        const int32_t nb = C / HSD_QK_K;
        uint8_t *data = malloc(rb * R);
        for (int32_t r = 0; r < R; r++)
            for (int32_t b = 0; b < nb; b++) {
                uint8_t *blk = data + rb * r + bb * b;
                const uint8_t q = (r + b) % 2 ? 0xFF : 0x00; /* every quant its max or 0 */
                const uint16_t d = double_to_half(ldexp(1.0, -8)), dm = double_to_half(ldexp(1.0, -9));
                memset(blk, q, bb);
                if (t == HSD_DT_Q6_K) {
                    for (int i = 0; i < 16; i++) blk[192 + i] = (uint8_t)((r / 2 + i) % 2 ? 127 : -128);
                    memcpy(blk + 208, &d, 2);
                } else {
                    memcpy(blk, &d, 2), memcpy(blk + 2, &dm, 2);
                    memset(blk + 4, 0xFF, 12); /* every 6-bit scale and min 63 */
                }
            }
        hsd_mat m = {t, R, C, data, NULL};
        float *x = malloc((size_t)NT * C * sizeof *x);
        for (int tk = 0; tk < NT; tk++)
            for (int i = 0; i < C; i++) /* all -127, or +127 but each block's first -127 */
                x[(size_t)tk * C + i] = tk % 2 == 0 || i % HSD_QK_K == 0 ? -1.0f - (float)(tk % 3) : 1.0f + (float)(tk % 3);
        hsd_q8k *xq = malloc((size_t)NT * nb * sizeof *xq);
        float *ref = malloc((size_t)NT * R * sizeof *ref), *out = malloc((size_t)NT * R * sizeof *out);
        float wf[C];
        for (int tk = 0; tk < NT; tk++) {
            hsd_quant_q8k(x + (size_t)tk * C, C, xq + (size_t)tk * nb);
            for (int32_t i = 0; i < C; i++) assert_int_equal(abs(xq[(size_t)tk * nb + i / HSD_QK_K].qs[i % HSD_QK_K]), 127);
        }
        for (int32_t r = 0; r < R; r++) {
            hsd_quant_dequant_ref(t, data + rb * r, C, wf);
            for (int tk = 0; tk < NT; tk++) {
                const hsd_q8k *xb = xq + (size_t)tk * nb;
                ref[(size_t)tk * R + r] = hsd_kqp_dot_ref(t, data + rb * r, xb, C);
                double e = 0, mag = 0;
                for (int32_t i = 0; i < C; i++) {
                    const double p = (double)wf[i] * ((double)xb[i / HSD_QK_K].d * xb[i / HSD_QK_K].qs[i % HSD_QK_K]);
                    e += p, mag += fabs(p);
                }
                assert_true(fabs(ref[(size_t)tk * R + r] - e) <= (6.0 * nb + 4.0) * ldexp(mag, -24));
            }
        }
        int32_t ns[17];
        for (int i = 0; i < 16; i++) ns[i] = i + 1;
        ns[16] = NT;
        ran += kq_levels_equal_ref(&m, x, ns, 17, ref, out, "extremes, n 1..16 and 37");
        free(out), free(ref), free(xq), free(x), free(data);
    }
    kq_skip_without_vnni(ran, "the k-quant kernels' bounds");
}

/* The AVX-512 Q8_K activation quantiser gives hsd_quant_q8k's bytes (the scalar rule of
 * llama.cpp's quantize_row_q8_K_ref): random blocks, ties for the largest magnitude (the
 * first one sets the sign), zero blocks, values rounding to ±127.5, NaN and infinities. */
static void test_q8k_quantize_matches_scalar(void **state) {
    (void)state;
#ifdef HSD_MM_HAVE_AVX512
    if (!hsd_mm_isa_available(HSD_MM_AVX512)) {
        fprintf(stderr, "no AVX-512 on this CPU (%s): skipped\n", hsd_cpu_features_get()->desc);
        skip();
    }
    hsd_rng_init(&rng, 41, 1);
    enum { C = 1024, NB = C / HSD_QK_K };
    float x[C];
    hsd_q8k a[NB], b[NB];
    for (int it = 0; it < 400; it++) {
        for (int i = 0; i < C; i++) x[i] = nz() * (it % 5 == 0 ? 1e-30f : it % 5 == 1 ? 1e30f : 3.0f);
        switch (it % 8) {
        case 0: for (int i = 0; i < HSD_QK_K; i++) x[i] = 0.0f; break;  /* a zero block */
        case 1: x[7] = 50.0f, x[100] = -50.0f, x[3] = 1.0f; break;      /* a tie: + first */
        case 2: x[7] = -50.0f, x[100] = 50.0f; break;                   /* a tie: − first */
        case 3: x[5] = NAN, x[300] = INFINITY; break;
        case 4: x[9] = -INFINITY, x[600] = NAN; break;
        case 5: x[0] = 127.0f, x[1] = 126.5f, x[2] = -126.5f, x[3] = 0.5f, x[4] = -0.5f; break;
        default: break;
        }
        memset(a, 0, sizeof a), memset(b, 0, sizeof b);
        hsd_quant_q8k(x, C, a);
        hsd_kqp_quantize(x, C, b);
        for (int k = 0; k < NB; k++) {
            if (memcmp(&a[k].d, &b[k].d, sizeof a[k].d) && !(isnan(a[k].d) && isnan(b[k].d)))
                fail_msg("case %d block %d: d %g vs scalar %g", it, k, b[k].d, a[k].d);
            assert_memory_equal(a[k].qs, b[k].qs, sizeof a[k].qs);
            assert_memory_equal(a[k].bsums, b[k].bsums, sizeof a[k].bsums);
        }
    }
    fprintf(stderr, "AVX-512 Q8_K quantiser == scalar on 400 x 1024 values (ties, zeros, NaN, inf)\n");
#else
    fprintf(stderr, "not an x86-64 GCC build: the AVX-512 quantiser is not built; skipped\n");
    skip();
#endif
}

/* Prefill-sized products (more than 16 tokens: the AMX k-quant kernel builds each block's
 * scaled weights once for several 16-token chunks, with a tail chunk of its own): bit-identical
 * to the scalar integer reference for every token, on every level that runs the packed
 * kernels, packed and on the fly, whole and cut groups. Token counts: whole chunks only, a
 * tail below the AMX threshold (the AVX-512 tile), a tail above it (tiles reconfigured). */
static void test_kquant_many_tokens_vs_reference(void **state) {
    (void)state;
    hsd_rng_init(&rng, 37, 1);
    static const hsd_dtype types[] = {HSD_DT_Q4_K, HSD_DT_Q5_K, HSD_DT_Q6_K};
    static const int32_t ns[] = {48, 53, 61, 16 * 33 + 2};
    const int32_t R = 37, C = 512, nb = C / HSD_QK_K, NMAX = 16 * 33 + 2;
    int ran = 0;
    for (int ty = 0; ty < 3; ty++) {
        const hsd_dtype t = types[ty];
        void *data = make_kquant(t, R, C);
        hsd_mat m = {t, R, C, data, NULL};
        float *x = malloc((size_t)NMAX * C * sizeof *x), *out = malloc((size_t)NMAX * R * sizeof *out),
              *ref = malloc((size_t)NMAX * R * sizeof *ref);
        hsd_q8k *xq = malloc((size_t)NMAX * nb * sizeof *xq);
        for (int i = 0; i < NMAX * C; i++) x[i] = nz() * 3.0f;
        for (int tk = 0; tk < NMAX; tk++) hsd_quant_q8k(x + (size_t)tk * C, C, xq + tk * nb);
        const size_t rb = hsd_dtype_row_bytes(t, C);
        for (int tk = 0; tk < NMAX; tk++)
            for (int32_t r = 0; r < R; r++)
                ref[(size_t)tk * R + r] = hsd_kqp_dot_ref(t, (uint8_t *)data + rb * r, xq + tk * nb, C);
        ran += kq_levels_equal_ref(&m, x, ns, 4, ref, out, "n 48/53/61/530");
        free(out), free(ref), free(xq), free(x), free(data);
    }
    kq_skip_without_vnni(ran, "packed k-quant kernels");
}

/* ---- packers: the vector packers against references, every row count of a group ---------- */

#ifdef HSD_MM_HAVE_AVX512 /* the helpers of test_packers_match_reference */
/* `count` rows of rb bytes each, at odd (unaligned) addresses, row 0 ending exactly where a
 * PROT_NONE page starts: a packer that reads one byte past a row's last block faults. */
typedef struct guarded {
    uint8_t *map;
    size_t len;
    const uint8_t *rows[16];
} guarded;

static void guarded_make(guarded *g, int32_t count, size_t rb) {
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE), need = (size_t)count * (rb + 3);
    g->len = (need + pg - 1) / pg * pg + pg;
    g->map = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(g->map != MAP_FAILED);
    assert_int_equal(mprotect(g->map + g->len - pg, pg, PROT_NONE), 0);
    uint8_t *end = g->map + g->len - pg;
    for (int32_t j = 0; j < count; j++) {
        uint8_t *r = end - (size_t)(j + 1) * rb - 3 * (size_t)j;
        for (size_t i = 0; i < rb; i++) r[i] = (uint8_t)hsd_rng_u32(&rng);
        g->rows[j] = r;
    }
}

/* The Q8_0 group as matmul_q8.h states it: blocks in pairs of 1088 bytes, the two blocks'
 * 8 vectors each (vector k, lane j: bytes 4k..4k+3 of row j's quants, + 128), then their
 * rows' fp16 scales [2][16]; missing rows, and an odd count's last block: zero weights (128)
 * and scales. */
static void q8p_layout(const uint8_t *const *rows, int32_t count, int32_t nb, uint8_t *dst) {
    memset(dst, 0, hsd_q8p_group_bytes(HSD_DT_Q8_0, nb * 32));
    for (int32_t b = 0; b < (nb + 1) / 2 * 2; b++) {
        const size_t w = (size_t)(b / 2) * 1088 + (size_t)(b % 2) * 512,
                     s = (size_t)(b / 2) * 1088 + 1024 + (size_t)(b % 2) * 32;
        for (int32_t j = 0; j < 16; j++) {
            const uint8_t *blk = j < count && b < nb ? rows[j] + (size_t)b * HSD_Q8_0_BYTES : NULL;
            for (int e = 0; e < 32; e++)
                dst[w + 64 * (e / 4) + 4 * j + e % 4] = (uint8_t)((blk ? blk[2 + e] : 0) ^ 0x80);
            for (int h = 0; h < 2; h++) dst[s + 2 * j + h] = blk ? blk[h] : 0;
        }
    }
}

/* The Q4_0 / Q5_0 / Q4_1 / Q5_1 group as matmul_q8.h states it: blocks in pairs, the two
 * blocks' weights (bb bytes each), then their fp16 scales [2][16], then (_1 types) their fp16
 * minima [2][16]. A block's weights: nibble vectors k < 4 (lane j: quant bytes 4k..4k+3 of
 * row j), for the 5-bit types then one vector whose lane j has bit 8b + k set to the fifth
 * bit of weight 4k + b (qh bit 4k + b). Missing rows and an odd count's last block zero. */
static void nibble_layout(hsd_dtype t, const uint8_t *const *rows, int32_t count, int32_t nb,
                          uint8_t *dst) {
    const int five = t == HSD_DT_Q5_0 || t == HSD_DT_Q5_1, mins = t == HSD_DT_Q4_1 || t == HSD_DT_Q5_1;
    const size_t bb = five ? 320 : 256, src = hsd_dtype_row_bytes(t, 32), qh = mins ? 4 : 2,
                 qs = qh + (five ? 4 : 0);
    const size_t pair = 2 * bb + (mins ? 128 : 64);
    memset(dst, 0, hsd_q8p_group_bytes(t, nb * 32));
    for (int32_t b = 0; b < nb; b++)
        for (int32_t j = 0; j < count; j++) {
            const uint8_t *blk = rows[j] + (size_t)b * src;
            const size_t w = (size_t)(b / 2) * pair + (size_t)(b % 2) * bb,
                         s = (size_t)(b / 2) * pair + 2 * bb + (size_t)(b % 2) * 32;
            for (int i = 0; i < 16; i++) dst[w + 64 * (i / 4) + 4 * j + i % 4] = blk[qs + i];
            for (int e = 0; five && e < 32; e++) {
                int bit = (blk[qh + e / 8] >> (e % 8)) & 1, k = e / 4, by = e % 4;
                dst[w + 256 + 4 * j + by] |= (uint8_t)(bit << k);
            }
            for (int h = 0; h < 2; h++) {
                dst[s + 2 * j + h] = blk[h];
                if (mins) dst[s + 64 + 2 * j + h] = blk[2 + h];
            }
        }
}

/* The BF16 group as matmul_bf16p.h states it: vector p, lane j = (w[j][2p], w[j][2p+1]),
 * zero past an odd last column and in missing rows. */
static void bf16p_layout(const uint8_t *const *rows, int32_t count, int32_t cols, uint8_t *dst) {
    memset(dst, 0, hsd_bf16p_group_bytes(cols));
    for (int32_t j = 0; j < count; j++)
        for (int32_t c = 0; c < cols; c++)
            memcpy(dst + 64 * (size_t)(c / 2) + 4 * j + 2 * (c % 2), rows[j] + 2 * (size_t)c, 2);
}
#endif

/* The 32-block types (Q4_0, Q5_0, Q4_1, Q5_1) at the AVX-512 and AMX levels (the packed kernel,
 * matmul_q8.h) give the bits of the AVX2 level's integer kernel, which kernels/quant_q32.c
 * (tested against its scalar reference in test_quant_int_dots) keeps to exact block sums and
 * then acc = fma(isum, d_w·d_x, acc) (+ the minimum's fma) in block order: for Q4_0,
 * llama.cpp's repacked arithmetic. Every n 1..16 and a 37-token prefill, packed and on the fly. */
static void test_q32_levels_bit_identical(void **state) {
    (void)state;
    if (!hsd_mm_isa_available(HSD_MM_AVX512) || !hsd_mm_isa_available(HSD_MM_AVX2)) {
        fprintf(stderr, "no AVX-512 here (%s): the packed 32-block kernel does not run\n",
                hsd_cpu_features_get()->desc);
        skip();
    }
    hsd_rng_init(&rng, 26, 1);
    enum { ROWS = 77, COLS = 2048, NALL = 37 };
    static const hsd_dtype types[] = {HSD_DT_Q4_0, HSD_DT_Q5_0, HSD_DT_Q4_1, HSD_DT_Q5_1};
    float *x = malloc((size_t)NALL * COLS * sizeof *x), *want = malloc((size_t)NALL * ROWS * sizeof *want),
          *got = malloc((size_t)NALL * ROWS * sizeof *got);
    for (int32_t i = 0; i < NALL * COLS; i++) x[i] = nz() * 3.0f;
    hsd_mm_ws ws = {0};
    int checked = 0;
    for (int ty = 0; ty < 4; ty++) {
    mat a = make_mat(types[ty], ROWS, COLS);
    for (int isa = HSD_MM_AVX512; isa < HSD_MM_N_ISA; isa++) {
        if (!hsd_mm_isa_available((hsd_mm_isa)isa)) continue;
        for (int packed = 0; packed < 2; packed++) {
            if (packed) assert_int_equal(hsd_mm_pack(&a.m), HSD_OK);
            for (int32_t n = 1; n <= NALL; n = n == 16 ? NALL : n + 1) {
                assert_int_equal(hsd_mm_run_isa(&ws, HSD_MM_AVX2, want, ROWS, x, n, &a.m, NULL, 0), HSD_OK);
                assert_int_equal(hsd_mm_run_isa(&ws, (hsd_mm_isa)isa, got, ROWS, x, n, &a.m, NULL, 0), HSD_OK);
                for (int32_t i = 0; i < n * ROWS; i++)
                    if (memcmp(&got[i], &want[i], sizeof *got))
                        fail_msg("%s %s%s n=%d token %d row %d: %.9g, AVX2 %.9g",
                                 hsd_dtype_name(types[ty]), hsd_mm_isa_name((hsd_mm_isa)isa),
                                 packed ? " packed" : "", n, i / ROWS, i % ROWS, got[i], want[i]);
                checked++;
            }
            hsd_mm_unpack(&a.m);
        }
    }
    free_mat(&a);
    }
    fprintf(stderr, "Q4_0 Q5_0 Q4_1 Q5_1: packed 32-block kernel == AVX2 integer kernel bit for "
                    "bit (%d products)\n",
            checked);
    hsd_mm_ws_free(&ws);
    free(x), free(want), free(got);
}

/* The AVX-512 packers give the groups of their references byte for byte: the k-quant one the
 * portable hsd_kqp_pack_group_ref (itself tested through the products against float64 above),
 * Q8_0's and BF16's the layouts of their headers written out here; random blocks, every row
 * count 1..16 (cut groups), unaligned rows ending at an unreadable page, a destination
 * filled with garbage first (every byte must be written). Then whole matrices packed on 2
 * threads (hsd_mm_pack_on, as at load) against the reference group by group. */
static void test_packers_match_reference(void **state) {
    (void)state;
    if (!hsd_cpu_level_supported(HSD_CPU_AVX512)) {
        fprintf(stderr, "no AVX-512 on this CPU (%s): vector packers not run\n",
                hsd_cpu_features_get()->desc);
        skip();
    }
#ifdef HSD_MM_HAVE_AVX512
    hsd_rng_init(&rng, 41, 1);
    static const hsd_dtype types[] = {HSD_DT_Q4_K, HSD_DT_Q5_K, HSD_DT_Q6_K, HSD_DT_Q8_0,
                                      HSD_DT_BF16, HSD_DT_Q5_0, HSD_DT_Q4_0, HSD_DT_Q5_1,
                                      HSD_DT_Q4_1};
    static const int32_t cols_kq[] = {256, 768}, cols_q8[] = {32, 96, 2048},
                         cols_bf[] = {32, 37, 64, 2050};
    int groups = 0;
    for (int ty = 0; ty < 9; ty++) {
        const hsd_dtype t = types[ty];
        const bool kq = hsd_quant_is_q8k(t), q8 = hsd_q8p_type(t);
        const int32_t *cl = kq ? cols_kq : q8 ? cols_q8 : cols_bf;
        const int ncols = kq ? 2 : q8 ? 3 : 4;
        for (int ci = 0; ci < ncols; ci++) {
            const int32_t C = cl[ci];
            const size_t rb = hsd_dtype_row_bytes(t, C),
                         gb = kq ? hsd_kqp_group_bytes(t, C)
                              : q8 ? hsd_q8p_group_bytes(t, C)
                                   : hsd_bf16p_group_bytes(C);
            uint8_t *want = malloc(gb), *got = aligned_alloc(64, (gb + 63) / 64 * 64);
            for (int32_t count = 1; count <= 16; count++) {
                guarded g;
                guarded_make(&g, count, rb);
                if (kq) {
                    hsd_kqp_pack_group_ref(t, g.rows, count, C / HSD_QK_K, want);
                    memset(got, 0xa5, gb);
                    hsd_kqp_pack_group_avx512(t, g.rows, count, C / HSD_QK_K, got);
                } else if (q8) {
                    if (t == HSD_DT_Q8_0)
                        q8p_layout(g.rows, count, C / 32, want);
                    else
                        nibble_layout(t, g.rows, count, C / 32, want);
                    memset(got, 0xa5, gb);
                    hsd_q8p_pack_group(t, g.rows, count, C / 32, got);
                } else {
                    bf16p_layout(g.rows, count, C, want);
                    memset(got, 0xa5, gb);
                    hsd_bf16p_pack_group(g.rows, count, C, got);
                }
                for (size_t i = 0; i < gb; i++)
                    if (got[i] != want[i])
                        fail_msg("%s cols %d, %d rows: group byte %zu is %d, reference %d",
                                 hsd_dtype_name(t), C, count, i, got[i], want[i]);
                groups++;
                munmap(g.map, g.len);
            }
            free(want), free(got);
        }
    }
    /* whole matrices as loading packs them: 2 threads, a last group of 3 rows */
    hsd_pool *pool = hsd_pool_create(2);
    assert_non_null(pool);
    for (int ty = 0; ty < 3; ty++) {
        const hsd_dtype t = types[ty];
        enum { R = 4099, C = 2048 }; /* 4.8-6.8 MB: split between the threads */
        void *data = make_kquant(t, R, C);
        hsd_mat m = {t, R, C, data, NULL};
        assert_int_equal(hsd_mm_pack_on(&m, pool, 2), HSD_OK);
        const hsd_mm_packed *p = hsd_mm_packed_find(&m);
        if (!p) { /* the level was capped below AVX-512: nothing packs */
            fprintf(stderr, "%s: no packed copy at level %s\n", hsd_dtype_name(t),
                    hsd_cpu_level_name(hsd_cpu_level_active()));
            free(data);
            continue;
        }
        const size_t gb = hsd_kqp_group_bytes(t, C);
        uint8_t *want = malloc(gb);
        for (int32_t g0 = 0; g0 < (R + 15) / 16; g0++) {
            const int32_t c = R - 16 * g0 < 16 ? R - 16 * g0 : 16;
            const uint8_t *rows[16];
            hsd_mm_group_rows(&m, NULL, 16 * g0, c, rows);
            hsd_kqp_pack_group_ref(t, rows, c, C / HSD_QK_K, want);
            if (memcmp(want, p->data + (size_t)g0 * gb, gb))
                fail_msg("%s %dx%d packed on 2 threads: group %d differs from the reference",
                         hsd_dtype_name(t), R, C, g0);
        }
        fprintf(stderr, "%s %dx%d packed on 2 threads == portable packer, %d groups\n",
                hsd_dtype_name(t), R, C, (R + 15) / 16);
        hsd_mm_unpack(&m);
        free(want), free(data);
    }
    hsd_pool_free(pool);
    fprintf(stderr, "vector packers == references on %d groups (Q4_K Q5_K Q6_K Q8_0 BF16 Q5_0 Q4_0 Q5_1 Q4_1, 1..16 rows)\n",
            groups);
#endif
}

/* Greedy speculative decoding gives AR's ids on every kernel level this CPU runs (the levels
 * are lowered with the one override, kernels/cpu_features.h): the trained babyllama inflated
 * (exactly) to the smollm-135m width in BF16 and Q8_0 — 32-column multiples, so BF16 runs on
 * AMX tiles where there are any — and to the llama-3.2-1b width in Q4_K_M, as the target,
 * stories260K (another tokenizer) drafting. */
static void test_greedy_sd_equals_ar_per_level(void **state) {
    (void)state;
    const char *bm = hsd_test_path("models/babyllama-tok105/model5000.bin"),
               *bt = hsd_test_path("models/babyllama-tok105/tok105.bin"),
               *sm_ = hsd_test_path("models/stories260K/stories260K.bin"),
               *st = hsd_test_path("models/stories260K/tok512.bin");
    HSD_REQUIRE_FILE(bm);
    HSD_REQUIRE_FILE(bt);
    HSD_REQUIRE_FILE(sm_);
    HSD_REQUIRE_FILE(st);
    char *prompts[8];
    const int n_read = hsd_test_bench_prompts(prompts, 8, 48);
    int np = n_read > 4 ? 4 : n_read;
    if (np <= 0) fail_msg("no bench prompts (bench/prompts/*.jsonl under HSD_SOURCE_DIR)");
    hsd_transformer *src;
    assert_int_equal(hsd_inflate_load(bm, &src), HSD_OK);
    hsd_tokenizer *ttok, *dtok;
    assert_int_equal(hsd_tokenizer_load_file(bt, &ttok), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(st, &dtok), HSD_OK);
    hsd_model *draft;
    assert_int_equal(hsd_model_load(sm_, NULL, &draft), HSD_OK);
    /* Q4_K: the Q4_K_M mix of hsd inflate --dtype q4_k_m (Q4_K and Q6_K products), at the
     * llama-3.2-1b width (its widths are multiples of 256), 5 layers, 2 prompts */
    static const hsd_dtype types[] = {HSD_DT_BF16, HSD_DT_Q8_0, HSD_DT_Q4_K};
#ifdef HSD_TEST_AMX_EMU /* the levels below AMX run in test_matmul_kernels */
    const int lv0 = HSD_CPU_AMX;
#else
    const int lv0 = HSD_CPU_AVX2;
#endif
    for (int lv = lv0; lv < HSD_CPU_N_LEVELS; lv++) {
        if (!hsd_cpu_level_supported((hsd_cpu_level)lv)) {
            fprintf(stderr, "level %s: not on this CPU, skipped\n",
                    hsd_cpu_level_name((hsd_cpu_level)lv));
            continue;
        }
        hsd_cpu_level_limit((hsd_cpu_level)lv);
        for (int ty = 0; ty < 3; ty++) {
            const bool kq = types[ty] == HSD_DT_Q4_K;
            hsd_synth_model *sm;
            assert_int_equal(hsd_inflate_build(src, kq ? "llama-3.2-1b" : "smollm-135m", kq ? 5 : 6,
                                               types[ty], &sm),
                             HSD_OK);
            hsd_transformer *tf;
            assert_int_equal(hsd_synth_to_transformer(sm, NULL, &tf), HSD_OK);
            hsd_model_iface it = {HSD_MODEL_IFACE_INIT};
            hsd_tf_iface(tf, &it);
            hsd_model *m;
            assert_int_equal(hsd_model_from_iface(&it, &m), HSD_OK);
            hsd_engine *e;
            assert_int_equal(hsd_engine_init(m, ttok, draft, dtok, &e), HSD_OK);
            int checked = 0;
            for (int i = 0; i < (kq && np > 2 ? 2 : np); i++) {
                hsd_gen_params gp = hsd_gen_default_params();
                gp.temp = 0;
                gp.max_new_tokens = 32;
                gp.n_draft = 6;
                gp.algo = HSD_ALGO_AR;
                hsd_gen_result ar = HSD_GEN_RESULT_INIT, sd = HSD_GEN_RESULT_INIT;
                assert_int_equal(hsd_engine_generate(e, prompts[i], strlen(prompts[i]), &gp, &ar),
                                 HSD_OK);
                const hsd_algo algos[] = {HSD_ALGO_SLEM, HSD_ALGO_TLI};
                for (int a = 0; a < 2; a++) {
                    gp.algo = algos[a];
                    assert_int_equal(
                        hsd_engine_generate(e, prompts[i], strlen(prompts[i]), &gp, &sd), HSD_OK);
                    if (sd.n_ids != ar.n_ids ||
                        memcmp(sd.ids, ar.ids, (size_t)ar.n_ids * sizeof *ar.ids))
                        fail_msg("level %s %s %s prompt %d: '%s' != AR '%s'",
                                 hsd_cpu_level_name((hsd_cpu_level)lv), hsd_dtype_name(types[ty]),
                                 hsd_algo_name(algos[a]), i, sd.text, ar.text);
                    hsd_gen_result_free(&sd);
                    checked++;
                }
                hsd_gen_result_free(&ar);
            }
            fprintf(stderr, "level %-6s %-6s target: %d greedy generations == AR (%s)\n",
                    hsd_cpu_level_name((hsd_cpu_level)lv), kq ? "Q4_K_M" : hsd_dtype_name(types[ty]),
                    checked, hsd_cpu_kernels_name(hsd_cpu_kernels_active()));
            hsd_engine_free(e);
            hsd_model_free(m);
            hsd_synth_free(sm);
        }
    }
    hsd_cpu_level_limit(HSD_CPU_N_LEVELS);
    hsd_model_free(draft);
    hsd_tokenizer_free(ttok), hsd_tokenizer_free(dtok);
    hsd_tf_free(src);
    for (int i = 0; i < n_read; i++) free(prompts[i]); /* all read, not only those used */
}

int main(void) {
#ifdef HSD_TEST_AMX_EMU
    /* test_matmul_kernels_amx_emu: AMX in C needs the AVX-512 level under it; without it this
     * binary would only repeat test_matmul_kernels (ctest reports exit 77 as skipped) */
    if (!hsd_cpu_level_supported(HSD_CPU_AMX)) {
        fprintf(stderr, "no AVX-512 BF16/VNNI on this CPU (%s): the emulated AMX level cannot run, "
                        "skipped\n", hsd_cpu_features_get()->desc);
        return 77;
    }
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_vs_float64),
        cmocka_unit_test(test_threads_invariant),
        cmocka_unit_test(test_pack_on_threads),
        cmocka_unit_test(test_fused_products),
        cmocka_unit_test(test_models_batch_invariant),
        cmocka_unit_test(test_amx_q8_matches_avx512),
        cmocka_unit_test(test_amx_tile_state_restored),
        cmocka_unit_test(test_kquant_packed_vs_reference),
        cmocka_unit_test(test_kquant_many_tokens_vs_reference),
        cmocka_unit_test(test_kquant_extremes),
        cmocka_unit_test(test_cpu_probe_matches_proc),
        cmocka_unit_test(test_q8k_quantize_matches_scalar),
        cmocka_unit_test(test_packers_match_reference),
        cmocka_unit_test(test_q32_levels_bit_identical),
        cmocka_unit_test(test_greedy_sd_equals_ar_per_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

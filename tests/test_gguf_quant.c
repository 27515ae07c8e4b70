/* GGUF tensor types (kernels/quant.h) and llama.cpp's own logits as the oracle.
 *
 * 1. Kernels, on random blocks of every type: the scalar reference dequantiser against an
 *    independent float64 re-derivation from the block fields written here (the layouts of
 *    ggml-common.h); the AVX2 dequantiser equal to the reference bit for bit; the dot
 *    products (reference, AVX2, through hsd_matmul_rows) against the float64 dot.
 * 2. llama.cpp (tests/oracle/llama_oracle, when installed): an hsd-synthesised F32 GGUF,
 *    quantised by llama.cpp to each type, loaded by hsd; logits at every position of a
 *    64-token sequence against llama.cpp's: cosine >= 0.999 per position and the same argmax
 *    on >= 98% of positions. The exact figures are printed per cell.
 * 3. Malformed GGUFs: bad type id, unsupported (IQ) type, row length not a multiple of the
 *    block, truncated tensor data, missing metadata key -> errors naming tensor/key and offset.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "models/synth.h"
#include "tests/quant_rows.h"
#include "tests/testutil.h"

/* ---- float64 re-derivation of each block type --------------------------------------- */

static double f16(const uint8_t *p) {
    return (double)hsd_fp16_to_fp32((uint16_t)(p[0] | p[1] << 8));
}

/* Bit `i` of a little-endian byte string. */
static int bit(const uint8_t *p, int i) {
    return p[i / 8] >> (i % 8) & 1;
}

/* Element e = a + c; mg[e] = |a| + |c| bounds what float rounding can lose (a few ulps). */
#define PUT(e, a, c) (y[e] = (a) + (c), mg[e] = fabs((double)(a)) + fabs((double)(c)))

/* Elements of one block as doubles, following ggml-common.h's field order and
 * ggml-quants.c's element order (written independently of kernels/quant_ref.c). */
static void block_f64(hsd_dtype t, const uint8_t *b, double *y, double *mg) {
    switch (t) {
    case HSD_DT_Q8_0:
        for (int i = 0; i < 32; i++) PUT(i, f16(b) * (int8_t)b[2 + i], 0.0);
        return;
    case HSD_DT_Q4_0:
    case HSD_DT_Q4_1:
    case HSD_DT_Q5_0:
    case HSD_DT_Q5_1: {
        int has_min = t == HSD_DT_Q4_1 || t == HSD_DT_Q5_1,
            five = t == HSD_DT_Q5_0 || t == HSD_DT_Q5_1;
        const uint8_t *qh = b + 2 + 2 * has_min, *qs = qh + 4 * five;
        double d = f16(b), m = has_min ? f16(b + 2) : 0;
        for (int i = 0; i < 16; i++)
            for (int half = 0; half < 2; half++) {
                int e = i + 16 * half, q = half ? qs[i] >> 4 : qs[i] & 15;
                if (five) q += 16 * bit(qh, e);
                int off = has_min ? 0 : (five ? 16 : 8);
                PUT(e, d * (q - off), m);
            }
        return;
    }
    case HSD_DT_Q2_K: { /* x = d*(sc&15)*q - dmin*(sc>>4), 16 sub-blocks of 16 */
        const uint8_t *sc = b, *qs = b + 16;
        double d = f16(b + 80), dmin = f16(b + 82);
        int e = 0;
        for (int half = 0; half < 2; half++)
            for (int shift = 0; shift < 8; shift += 2)
                for (int part = 0; part < 2; part++, e += 16) {
                    int s = sc[e / 16];
                    for (int l = 0; l < 16; l++)
                        PUT(e + l, d * (s & 15) * ((qs[half * 32 + part * 16 + l] >> shift) & 3),
                            -dmin * (s >> 4));
                }
        return;
    }
    case HSD_DT_Q3_K: { /* 6-bit scales: 4 low bits x16 in bytes 0..7, 2 high bits x16 in 8..11 */
        const uint8_t *hm = b, *qs = b + 32, *s = b + 96;
        double d = f16(b + 108);
        int scale[16];
        for (int k = 0; k < 16; k++) {
            int lo = (s[k % 8] >> (4 * (k / 8))) & 15;
            int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
            scale[k] = lo + 16 * hi - 32;
        }
        int e = 0;
        for (int half = 0; half < 2; half++)
            for (int j = 0; j < 4; j++)
                for (int part = 0; part < 2; part++, e += 16)
                    for (int l = 0; l < 16; l++) {
                        int li = part * 16 + l;
                        int q = (qs[half * 32 + li] >> (2 * j)) & 3;
                        if (!bit(hm + li, half * 4 + j)) q -= 4;
                        PUT(e + l, d * scale[e / 16] * q, 0.0);
                    }
        return;
    }
    case HSD_DT_Q4_K:
    case HSD_DT_Q5_K: {
        const uint8_t *s = b + 4, *qh = b + 16, *qs = b + (t == HSD_DT_Q5_K ? 48 : 16);
        double d = f16(b), dmin = f16(b + 2);
        int sc[8], mn[8];
        for (int j = 0; j < 4; j++) sc[j] = s[j] % 64, mn[j] = s[j + 4] % 64;
        for (int j = 4; j < 8; j++) {
            sc[j] = s[j + 4] % 16 + 16 * (s[j - 4] / 64);
            mn[j] = s[j + 4] / 16 + 16 * (s[j] / 64);
        }
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++)
                for (int hi = 0; hi < 2; hi++) {
                    int j = 2 * c + hi, q = hi ? qs[32 * c + l] / 16 : qs[32 * c + l] % 16;
                    if (t == HSD_DT_Q5_K) q += 16 * ((qh[l] >> j) & 1);
                    PUT(32 * j + l, d * sc[j] * q, -dmin * mn[j]);
                }
        return;
    }
    case HSD_DT_Q6_K: {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        double d = f16(b + 208);
        for (int half = 0; half < 2; half++)
            for (int l = 0; l < 32; l++) {
                int h = qh[32 * half + l], a = ql[64 * half + l], c = ql[64 * half + 32 + l];
                int q[4] = {(a & 15) | (h & 3) << 4, (c & 15) | (h >> 2 & 3) << 4,
                            (a >> 4) | (h >> 4 & 3) << 4, (c >> 4) | (h >> 6 & 3) << 4};
                for (int g = 0; g < 4; g++) {
                    int e = 128 * half + 32 * g + l;
                    PUT(e, d * sc[e / 16] * (q[g] - 32), 0.0);
                }
            }
        return;
    }
    default:
        fail_msg("no float64 re-derivation for %s", hsd_dtype_name(t));
    }
}

static const hsd_dtype qtypes[] = {HSD_DT_Q4_0, HSD_DT_Q4_1, HSD_DT_Q5_0, HSD_DT_Q5_1, HSD_DT_Q8_0,
                                   HSD_DT_Q2_K, HSD_DT_Q3_K, HSD_DT_Q4_K, HSD_DT_Q5_K, HSD_DT_Q6_K};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) { return hsd_test_xorshift(&rng_state); }
static void random_row(hsd_dtype t, uint8_t *row, int64_t cols) {
    hsd_test_random_quant_row(t, row, cols, &rng_state);
}

/* llama.cpp's activation rounding before a quantised matmul (ggml quantize_row_q8_K_ref;
 * ggml-cpu x86 quantize_row_q8_0/q8_1), restated here from its description. */
static void act_round_oracle(hsd_dtype t, const float *x, int64_t n, float *out) {
    int k_quant = t == HSD_DT_Q2_K || t == HSD_DT_Q3_K || t == HSD_DT_Q4_K || t == HSD_DT_Q5_K ||
                  t == HSD_DT_Q6_K;
    int blk = k_quant ? 256 : 32;
    for (int64_t b = 0; b < n; b += blk) {
        const float *v = x + b;
        float *o = out + b;
        if (k_quant) { /* scale -127/max of the signed value of largest magnitude (first one) */
            int im = 0;
            for (int j = 1; j < blk; j++)
                if (fabsf(v[j]) > fabsf(v[im])) im = j;
            if (v[im] == 0.0f) {
                for (int j = 0; j < blk; j++) o[j] = 0.0f;
                continue;
            }
            float is = -127.0f / v[im];
            for (int j = 0; j < blk; j++)
                o[j] = (float)(int)fminf(127.0f, nearbyintf(is * v[j])) * (1.0f / is);
        } else { /* fp16 scale amax/127, values rounded half to even at 127/amax */
            float amax = 0.0f;
            for (int j = 0; j < blk; j++) amax = fabsf(v[j]) > amax ? fabsf(v[j]) : amax;
            float d = hsd_fp16_to_fp32(hsd_fp32_to_fp16(amax / 127.0f)),
                  id = amax > 0.0f ? 127.0f / amax : 0.0f;
            for (int j = 0; j < blk; j++) o[j] = (float)(int)nearbyintf(v[j] * id) * d;
        }
    }
}

static void test_act_round(void **state) {
    (void)state;
    const int64_t n = 1024;
    float x[1024], a[1024], b[1024];
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++)
        for (int trial = 0; trial < 50; trial++) {
            for (int64_t i = 0; i < n; i++) x[i] = ((float)(rnd() % 20001) - 10000.0f) * 1e-3f;
            if (trial == 1)
                for (int64_t i = 0; i < 256; i++) x[i] = 0.0f; /* an all-zero block */
            if (trial == 2)
                for (int64_t i = 0; i < n; i++)
                    x[i] = (float)((int)(rnd() % 255) - 127) * 0.5f; /* ties */
            assert_true(hsd_quant_act_round(qtypes[ti], x, n, a));
            act_round_oracle(qtypes[ti], x, n, b);
            for (int64_t i = 0; i < n; i++)
                if (memcmp(&a[i], &b[i], 4))
                    fail_msg("%s activation %lld: hsd %.9g, llama.cpp's rule %.9g",
                             hsd_dtype_name(qtypes[ti]), (long long)i, a[i], b[i]);
        }
    assert_false(hsd_quant_act_round(HSD_DT_BF16, x, n, a));
    /* NaN / infinite activations (a broken model) round without an undefined float-to-int8
     * conversion (fuzz_model_gguf found one; the sanitizer build checks this) */
    for (int64_t i = 0; i < n; i++) x[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -1.0f;
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++)
        hsd_quant_act_round(qtypes[ti], x, n, a);
    hsd_q8k q[4];
    hsd_quant_q8k(x, n, q);
    for (int j = 0; j < 256; j++) assert_true(q[0].qs[j] >= -127 && q[0].qs[j] <= 127);
}

static void test_dequant_and_dot(void **state) {
    (void)state;
    const int64_t cols = 1024;
    uint8_t *row = calloc(1, 4096);
    float *ref = malloc(cols * sizeof *ref), *vec = malloc(cols * sizeof *vec),
          *x = malloc(cols * sizeof *x);
    double y[256], mg[256];
    int have_avx2 = hsd_quant_dequant_avx2(HSD_DT_Q4_0, row, 0, vec);
    if (!have_avx2) fprintf(stderr, "AVX2 versions not checked: this CPU/build has no AVX2+FMA\n");
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++) {
        hsd_dtype t = qtypes[ti];
        int32_t blk = hsd_dtype_block(t);
        assert_true(hsd_dtype_is_quant(t));
        assert_int_equal(hsd_dtype_row_bytes(t, cols),
                         (size_t)(cols / blk) * hsd_dtype_block_bytes(t));
        double worst_f64 = 0, worst_dot = 0;
        for (int trial = 0; trial < 200; trial++) {
            random_row(t, row, cols);
            for (int64_t i = 0; i < cols; i++) x[i] = ((float)(rnd() % 20001) - 10000.0f) * 1e-4f;
            hsd_quant_dequant_ref(t, row, cols, ref);
            /* reference vs float64: each element within a few float roundings */
            double dot64 = 0, mag = 0;
            for (int64_t b = 0; b < cols / blk; b++) {
                block_f64(t, row + b * hsd_dtype_block_bytes(t), y, mg);
                for (int j = 0; j < blk; j++) {
                    /* four float roundings (scale product, times q, min product, sum), each
                     * within 2^-24 of a term no larger than mg */
                    double r = ref[b * blk + j], err = fabs(r - y[j]);
                    if (err > 0x1p-22 * mg[j])
                        fail_msg("%s trial %d element %lld: reference %.9g, float64 %.9g",
                                 hsd_dtype_name(t), trial, (long long)(b * blk + j), r, y[j]);
                    worst_f64 = fmax(worst_f64, err / (mg[j] + 1e-300));
                    dot64 += y[j] * x[b * blk + j];
                    mag += fabs(y[j] * x[b * blk + j]);
                }
            }
            /* vectorised dequantiser: bit for bit */
            if (have_avx2) {
                assert_true(hsd_quant_dequant_avx2(t, row, cols, vec));
                if (memcmp(vec, ref, cols * sizeof *ref)) {
                    for (int64_t i = 0; i < cols; i++)
                        if (memcmp(&vec[i], &ref[i], 4))
                            fail_msg("%s trial %d element %lld: AVX2 %.9g != reference %.9g",
                                     hsd_dtype_name(t), trial, (long long)i, vec[i], ref[i]);
                }
            }
            /* dot products against the float64 dot */
            float dr = hsd_quant_dot_ref(t, row, x, cols), dv = dr;
            if (have_avx2) assert_true(hsd_quant_dot_avx2(t, row, x, cols, &dv));
            double tol = 2e-6 * mag + 1e-6;
            assert_true(fabs(dr - dot64) <= tol);
            assert_true(fabs(dv - dot64) <= tol);
            worst_dot = fmax(worst_dot, fabs(dv - dot64) / (mag + 1e-30));
        }
        fprintf(stderr,
                "%-5s dequant: AVX2 == reference bit for bit%s; reference vs float64 max err %.2g "
                "(of |terms|); "
                "dot vs float64 max rel (to sum|w*x|) %.2g\n",
                hsd_dtype_name(t), have_avx2 ? "" : " (not run)", worst_f64, worst_dot);
    }
    free(row), free(ref), free(vec), free(x);
}

/* hsd_matmul_rows with several rows and tokens against float64 over the dequantised rows and
 * the activations rounded by llama.cpp's rule (Q4_K/Q5_K/Q6_K take the integer Q8_K kernels,
 * the 32-block types the integer Q8_0 ones, Q8_0 and the rest the dequantise-then-f32 path). */
static void test_matmul_rows(void **state) {
    (void)state;
    const int32_t rows = 7, cols = 512, ns[3] = {1, 3, 5};
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++)
        for (int ni = 0; ni < 3; ni++) {
            hsd_dtype t = qtypes[ti];
            int32_t n = ns[ni];
            size_t rb = hsd_dtype_row_bytes(t, cols);
            uint8_t *w = malloc(rb * rows);
            float *x = malloc(sizeof(float) * n * cols), *out = malloc(sizeof(float) * n * rows),
                  *scratch = malloc(sizeof(float) * 4 * cols), *deq = malloc(sizeof(float) * cols);
            for (int32_t r = 0; r < rows; r++) random_row(t, w + r * rb, cols);
            for (int32_t i = 0; i < n * cols; i++) x[i] = ((float)(rnd() % 2001) - 1000.0f) * 1e-3f;
            hsd_mat m = {t, rows, cols, w, NULL};
            hsd_matmul_rows(out, rows, x, n, &m, 0, rows, scratch);
            if (t != HSD_DT_Q8_0) /* Q8_0 keeps fp32 activations (kernels/cpu_ops.c) */
                for (int32_t k = 0; k < n; k++)
                    act_round_oracle(t, x + k * cols, cols, x + k * cols);
            for (int32_t r = 0; r < rows; r++) {
                hsd_quant_dequant_ref(t, w + r * rb, cols, deq);
                for (int32_t k = 0; k < n; k++) {
                    double s = 0, mag = 0;
                    for (int32_t i = 0; i < cols; i++)
                        s += (double)deq[i] * x[k * cols + i],
                            mag += fabs((double)deq[i] * x[k * cols + i]);
                    if (fabs(out[k * rows + r] - s) > 2e-6 * mag + 1e-6)
                        fail_msg("%s n=%d row %d token %d: %.9g, float64 %.9g", hsd_dtype_name(t),
                                 n, r, k, out[k * rows + r], s);
                }
            }
            free(w), free(x), free(out), free(scratch), free(deq);
        }
}

/* Batch invariance: a token's products are bit-identical whether it is multiplied alone or at
 * any position among n = 2..16 tokens, for every block type (speculative verification runs
 * n > 1 where AR runs n = 1; any difference could move greedy output at a near-tie). */
static void test_matmul_batch_invariance(void **state) {
    (void)state;
    const int32_t rows = 5, cols = 512, N = 16;
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++) {
        hsd_dtype t = qtypes[ti];
        size_t rb = hsd_dtype_row_bytes(t, cols);
        uint8_t *w = malloc(rb * rows);
        float *x = malloc(sizeof(float) * N * cols), *one = malloc(sizeof(float) * N * rows),
              *many = malloc(sizeof(float) * N * rows), *scratch = malloc(sizeof(float) * 4 * cols);
        for (int32_t r = 0; r < rows; r++) random_row(t, w + r * rb, cols);
        for (int32_t i = 0; i < N * cols; i++) x[i] = ((float)(rnd() % 2001) - 1000.0f) * 1e-3f;
        hsd_mat m = {t, rows, cols, w, NULL};
        for (int32_t k = 0; k < N; k++)
            hsd_matmul_rows(one + k * rows, rows, x + k * cols, 1, &m, 0, rows, scratch);
        hsd_mm_ws ws = {0};
        float *alone = malloc(sizeof(float) * N * rows);
        for (int32_t k = 0; k < N; k++)
            assert_int_equal(
                hsd_mm_run(&ws, NULL, 1, alone + k * rows, rows, x + k * cols, 1, &m, NULL, 0),
                HSD_OK);
        /* the 32-block types' packed kernel under AVX-512 keeps the row kernel's bits */
        if (t != HSD_DT_Q8_0 && (hsd_mm_isa_default() < HSD_MM_AVX512 || !hsd_quant_is_q8k(t)))
            assert_memory_equal(alone, one, sizeof(float) * N * rows);
        for (int32_t n = 2; n <= N; n++) {
            hsd_matmul_rows(many, rows, x, n, &m, 0, rows, scratch);
            for (int32_t k = 0; k < n; k++)
                if (memcmp(many + k * rows, one + k * rows, sizeof(float) * rows))
                    fail_msg("%s: token %d among n = %d differs from the same token alone",
                             hsd_dtype_name(t), k, n);
            /* the forward's product (kernels/matmul.c: k-quant activations quantised once
             * per product, not per row range) is batch-invariant too. Below AVX-512 it gives
             * these bits; Q8_0 and, under AVX-512, Q4_K/Q5_K/Q6_K have their own packed
             * kernels there (test_matmul_kernels checks them against their references), so
             * each token among n is compared with the same product of it alone. */
            if (t == HSD_DT_Q8_0) continue;
            assert_int_equal(hsd_mm_run(&ws, NULL, 1, many, rows, x, n, &m, NULL, 0), HSD_OK);
            for (int32_t k = 0; k < n; k++)
                if (memcmp(many + k * rows, alone + k * rows, sizeof(float) * rows))
                    fail_msg("%s: hsd_mm_run, token %d among n = %d differs from it alone",
                             hsd_dtype_name(t), k, n);
        }
        hsd_mm_ws_free(&ws);
        free(w), free(x), free(one), free(many), free(scratch), free(alone);
    }
}

/* ---- files: temporary directory ------------------------------------------------------- */

static int setup(void **state) {
    (void)state;
    return hsd_test_tmpdir_setup("hsd_gguf_quant");
}
static int teardown(void **state) {
    (void)state;
    return hsd_test_tmpdir_teardown();
}
static const char *tmp(const char *name) {
    return hsd_test_tmp(name);
}

/* ---- malformed GGUFs -------------------------------------------------------------------- */

static uint8_t *file_bytes;
static size_t file_len;

/* Writes the bytes (patched by the caller) to `name` and loads them, expecting failure with
 * an error containing every one of the NULL-terminated needles. */
static void expect_error(const char *name, size_t len, const char *const *needles) {
    const char *path = tmp(name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file_bytes, 1, len, f), len);
    fclose(f);
    hsd_model *m = NULL;
    hsd_status s = hsd_model_load(path, NULL, &m);
    const char *e = hsd_last_error();
    fprintf(stderr, "%-16s -> %s\n", name, e);
    assert_int_not_equal(s, HSD_OK);
    for (int i = 0; needles[i]; i++)
        if (!strstr(e, needles[i])) fail_msg("error of %s lacks \"%s\": %s", name, needles[i], e);
}

static uint8_t *find(const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= file_len; i++)
        if (!memcmp(file_bytes + i, needle, n)) return file_bytes + i;
    fail_msg("'%s' not in the GGUF", needle);
    return NULL;
}

static void test_malformed(void **state) {
    (void)state;
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create("tiny", HSD_DT_F32, 5, &sm), HSD_OK);
    char good[700];
    snprintf(good, sizeof good, "%s", tmp("good.gguf"));
    assert_int_equal(hsd_synth_write_gguf(sm, good), HSD_OK);
    hsd_synth_free(sm);
    file_bytes = (uint8_t *)hsd_test_read_file(good, &file_len);
    assert_non_null(file_bytes);
    /* tensor info of blk.0.attn_q.weight: name, u32 n_dims (2), u64 ne[2], u32 type, u64 off */
    uint8_t *name = find("blk.0.attn_q.weight");
    assert_int_equal(name[19], 2);
    uint8_t *type = name + 19 + 4 + 16, saved = *type;
    char at[64];
    snprintf(at, sizeof at, "at byte %zu", (size_t)(name - 8 - file_bytes));

    *type = 99;
    expect_error("bad-type.gguf", file_len,
                 (const char *const[]){"blk.0.attn_q.weight", "bad tensor type id 99", at, NULL});
    *type = 16; /* IQ2_XXS */
    expect_error(
        "iq-type.gguf", file_len,
        (const char *const[]){"unsupported tensor type IQ2_XXS", "blk.0.attn_q.weight", at, NULL});
    *type = 12; /* Q4_K with 64-element rows: not a whole super-block */
    expect_error("q4k-rows.gguf", file_len,
                 (const char *const[]){"blk.0.attn_q.weight",
                                       "not a multiple of Q4_K's block of 256", at, NULL});
    *type = saved;

    expect_error("truncated.gguf", file_len / 2,
                 (const char *const[]){"tensor '", "beyond the end of the file", NULL});

    uint8_t *key = find("llama.block_count");
    key[12] = 'X';
    expect_error("missing-key.gguf", file_len, (const char *const[]){"llama.block_count", NULL});
    key[12] = 'c';

    /* the unpatched bytes load: the failures above come from the patches */
    hsd_model *m;
    assert_int_equal(hsd_model_load(good, NULL, &m), HSD_OK);
    hsd_model_free(m);
    free(file_bytes);
}

/* ---- llama.cpp's logits ------------------------------------------------------------------ */

#define N_POS 64

static int sh(const char *cmd) {
    int rc = system(cmd);
    if (rc) fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

typedef struct cell_result {
    double cos_min, cos_mean, rel_max, dmax;
    int argmax_same, near_tie; /* near_tie: differing argmax within llama.cpp's own noise */
} cell_result;

/* Logits a against b ([N_POS][V]); a differing argmax counts as a near tie when b's logit of
 * a's argmax is within `eps` of b's maximum. */
static void compare_logits(const float *a_all, const float *b_all, int32_t V, double eps,
                           cell_result *r) {
    *r = (cell_result){2.0, 0.0, 0.0, 0.0, 0, 0};
    double bmax = 0;
    for (int p = 0; p < N_POS; p++) {
        const float *a = a_all + (size_t)p * V, *b = b_all + (size_t)p * V;
        double ab = 0, aa = 0, bb = 0;
        int ia = 0, ib = 0;
        for (int32_t v = 0; v < V; v++) {
            ab += (double)a[v] * b[v], aa += (double)a[v] * a[v], bb += (double)b[v] * b[v];
            r->dmax = fmax(r->dmax, fabs((double)a[v] - b[v])),
            bmax = fmax(bmax, fabs((double)b[v]));
            if (a[v] > a[ia]) ia = v;
            if (b[v] > b[ib]) ib = v;
        }
        double c = ab / sqrt(aa * bb);
        r->cos_min = fmin(r->cos_min, c), r->cos_mean += c / N_POS;
        r->argmax_same += ia == ib;
        r->near_tie += ia != ib && (double)b[ib] - b[ia] <= eps;
    }
    r->rel_max = r->dmax / bmax;
}

/* hsd's logits of the model at `path`, every position of toks; F32 KV cache like the
 * oracle's (tests/oracle/llama_oracle.c): the comparison measures the weights' arithmetic,
 * and F16 keys would round apart where the two arithmetics differ by an ulp (tests/
 * test_model_arch compares the two F16 defaults). */
static float *hsd_logits(const char *path, int32_t V, const int32_t *toks) {
    hsd_model *m;
    hsd_model_params p = hsd_model_default_params();
    p.kv_type = HSD_KV_F32;
    hsd_status s = hsd_model_load(path, &p, &m);
    if (s != HSD_OK) fail_msg("hsd cannot load %s: %s", path, hsd_last_error());
    assert_int_equal(hsd_model_vocab_size(m), V);
    float *lg = malloc(sizeof(float) * N_POS * V);
    assert_int_equal(hsd_model_forward(m, toks, N_POS, NULL, NULL, N_POS, lg), HSD_OK);
    hsd_model_free(m);
    return lg;
}

/* llama.cpp's logits (the oracle tool), with its runtime-repacked kernels or without. */
static float *llama_logits(const char *oracle, const char *path, int32_t V, const int32_t *toks,
                           int repack) {
    char cmd[4096], lf[700];
    snprintf(lf, sizeof lf, "%s", tmp("logits.f32"));
    int len = snprintf(cmd, sizeof cmd, "%s'%s' logits '%s' '%s'",
                       repack ? "" : "LLAMA_ORACLE_NO_REPACK=1 ", oracle, path, lf);
    for (int i = 0; i < N_POS; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %d", toks[i]);
    snprintf(cmd + len, sizeof cmd - (size_t)len, " > /dev/null");
    assert_int_equal(sh(cmd), 0);
    size_t n;
    float *ref = (float *)(void *)hsd_test_read_file(lf, &n);
    assert_non_null(ref);
    assert_int_equal(n, sizeof(float) * N_POS * V);
    return ref;
}

/* ---- llama.cpp's dequantiser: a tensor of a GGUF, located here from the file layout ---- */

/* GGUF fields are unaligned: read them by memcpy */
static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static size_t gguf_kv_size(const uint8_t *p, uint32_t type) {
    static const size_t scalar[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) return 8 + (size_t)rd64(p);
    if (type != 9) return scalar[type];
    uint32_t et = rd32(p);
    uint64_t n = rd64(p + 4);
    size_t off = 12;
    for (uint64_t i = 0; i < n; i++) off += gguf_kv_size(p + off, et);
    return off;
}

/* Type id, row length, row count and data of tensor `name` in a (well-formed) GGUF. */
static const uint8_t *gguf_tensor(const uint8_t *f, const char *name, uint32_t *type, uint64_t *ne0,
                                  uint64_t *rows) {
    uint64_t nt = rd64(f + 8), nkv = rd64(f + 16);
    size_t off = 24, align = 32;
    for (uint64_t i = 0; i < nkv; i++) {
        uint64_t kl = rd64(f + off);
        const char *k = (const char *)f + off + 8;
        off += 8 + kl;
        uint32_t t = rd32(f + off);
        if (kl == 17 && !memcmp(k, "general.alignment", 17)) align = rd32(f + off + 4);
        off += 4 + gguf_kv_size(f + off + 4, t);
    }
    const uint8_t *hit = NULL;
    uint64_t hit_off = 0;
    for (uint64_t i = 0; i < nt; i++) {
        uint64_t nl = rd64(f + off);
        int match = nl == strlen(name) && !memcmp(f + off + 8, name, nl);
        off += 8 + nl;
        uint32_t nd = rd32(f + off);
        const uint8_t *ne = f + off + 4; /* ne[d] at ne + 8 d */
        off += 4 + 8 * nd;
        if (match) {
            *ne0 = rd64(ne), *rows = nd > 1 ? rd64(ne + 8) : 1;
            *type = rd32(f + off);
            hit_off = rd64(f + off + 4), hit = f;
        }
        off += 12;
    }
    return hit ? f + (off + align - 1) / align * align + hit_off : NULL;
}

/* hsd's reference dequantiser equals llama.cpp's (ggml type traits) on every element of the
 * named tensors of a quantised file; returns how many tensors were compared. */
static int check_dequant_vs_ggml(const char *oracle, const char *path) {
    static const char *names[] = {"token_embd.weight", "blk.0.attn_q.weight", "blk.0.attn_v.weight",
                                  "blk.1.ffn_down.weight", "output.weight"};
    size_t len;
    uint8_t *f = (uint8_t *)hsd_test_read_file(path, &len);
    assert_non_null(f);
    int checked = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        uint32_t type = 0;
        uint64_t ne0 = 0, rows = 0;
        const uint8_t *data = gguf_tensor(f, names[i], &type, &ne0, &rows);
        if (!data) continue; /* tied output */
        char cmd[2048], out[700], tname[16] = "";
        snprintf(out, sizeof out, "%s", tmp("deq.f32"));
        snprintf(cmd, sizeof cmd, "'%s' dequant '%s' %s '%s'", oracle, path, names[i], out);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        assert_int_equal(fscanf(p, "%15s", tname), 1);
        assert_int_equal(pclose(p), 0);
        hsd_dtype dt = HSD_DT_COUNT;
        for (int t = 0; t < HSD_DT_COUNT; t++)
            if (!strcasecmp(hsd_dtype_name((hsd_dtype)t), tname))
                dt = (hsd_dtype)t; /* ggml: "q4_K" */
        if (dt == HSD_DT_COUNT)
            fail_msg("%s: ggml type %s has no hsd counterpart", names[i], tname);
        size_t n;
        float *ref = (float *)(void *)hsd_test_read_file(out, &n),
              *mine = malloc(sizeof(float) * ne0);
        assert_int_equal(n, sizeof(float) * ne0 * rows);
        size_t rb = hsd_dtype_row_bytes(dt, (int64_t)ne0);
        for (uint64_t r = 0; r < rows; r++) {
            hsd_quant_dequant_ref(dt, data + r * rb, (int64_t)ne0, mine);
            if (memcmp(mine, ref + r * ne0, sizeof(float) * ne0))
                fail_msg("%s %s row %llu: hsd's %s dequantiser differs from ggml's", path, names[i],
                         (unsigned long long)r, tname);
        }
        free(ref), free(mine);
        checked++;
    }
    free(f);
    return checked;
}

typedef struct cell {
    const char *type;
    int required; /* the set: assert cos >= 0.999 and argmax >= 98%; else report */
} cell;

static void test_llama_logits(void **state) {
    (void)state;
    const char *oracle = getenv("HSD_LLAMA_ORACLE"); /* main checked it */
    assert_non_null(oracle);
    /* "small" is llama with every width a multiple of 256, so the k-quants apply to every
     * matrix; "tiny-qwen2" (widths of 64) makes llama.cpp fall back to its 32-blocks */
    static const char *shapes[] = {"small", "tiny-qwen2"};
    static const cell cells[] = {{"F32", 1},    {"BF16", 1},   {"Q8_0", 1},  {"Q6_K", 1},
                                 {"Q5_K_M", 1}, {"Q4_K_M", 1}, {"Q4_0", 1},  {"F16", 0},
                                 {"Q4_1", 0},   {"Q5_0", 0},   {"Q5_1", 0},  {"Q2_K", 0},
                                 {"Q3_K_M", 0}, {"Q4_K_S", 0}, {"Q5_K_S", 0}};
    char cmd[4096];
    int failed = 0; /* every cell is run and printed before the verdict */
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        hsd_synth_model *sm;
        assert_int_equal(hsd_synth_create(shapes[si], HSD_DT_F32, 11, &sm), HSD_OK);
        const char *raw = tmp("raw.gguf");
        assert_int_equal(hsd_synth_write_gguf(sm, raw), HSD_OK);
        int32_t V = sm->cfg.vocab_size, toks[N_POS];
        hsd_synth_free(sm);
        for (int i = 0; i < N_POS; i++) toks[i] = (i * 37 + 5) % V;
        char base[700];
        snprintf(base, sizeof base, "%s", tmp("base.gguf"));
        snprintf(cmd, sizeof cmd, "'%s' prepare '%s' '%s'", oracle, raw, base);
        assert_int_equal(sh(cmd), 0);
        for (size_t ci = 0; ci < sizeof cells / sizeof cells[0]; ci++) {
            char q[700];
            snprintf(q, sizeof q, "%s", tmp("q.gguf"));
            snprintf(cmd, sizeof cmd, "'%s' quantize '%s' '%s' %s", oracle, base, q,
                     cells[ci].type);
            assert_int_equal(sh(cmd), 0);
            /* llama.cpp's two CPU paths (runtime-repacked weights or not) round activations to
             * 8 bits after different float summation orders, so they differ from each other:
             * that difference is the floor any other implementation can be held to */
            float *ref = llama_logits(oracle, q, V, toks, 1),
                  *ref2 = llama_logits(oracle, q, V, toks, 0);
            float *lg = hsd_logits(q, V, toks);
            int nd = check_dequant_vs_ggml(oracle, q);
            cell_result self, r;
            compare_logits(ref2, ref, V, 0.0, &self);
            compare_logits(lg, ref, V, 2.0 * self.dmax, &r);
            fprintf(stderr,
                    "%-10s %-6s cos min %.7f mean %.7f  argmax %2d/%d (%.1f%%) +%d near-tied  "
                    "max|dlogit|/max|logit| %.2g  [llama.cpp vs itself: argmax %d/%d, %.2g]  "
                    "dequant == ggml (%d tensors)%s\n",
                    shapes[si], cells[ci].type, r.cos_min, r.cos_mean, r.argmax_same, N_POS,
                    100.0 * r.argmax_same / N_POS, r.near_tie, r.rel_max, self.argmax_same, N_POS,
                    self.rel_max, nd, cells[ci].required ? "" : "  (reported)");
            /* the bar: cosine >= 0.999 at every position and the same argmax at >= 98%
             * of them, raw (near-ties, within twice llama.cpp's own path-to-path difference,
             * are printed, not excused) */
            if (cells[ci].required && (r.cos_min < 0.999 || r.argmax_same < 0.98 * N_POS))
                failed++, fprintf(stderr, "  ^ below cosine 0.999 or argmax 98%%\n");
            if (!strcmp(cells[ci].type, "F32") && (r.rel_max > 1e-4 || r.argmax_same != N_POS))
                failed++, fprintf(stderr, "  ^ F32 differs by more than float rounding\n");
            free(ref), free(ref2), free(lg);
        }
    }
    assert_int_equal(failed, 0);
}

/* Without arguments: the tests that need nothing outside hsd. With --llama-cpp: the comparison
 * with llama.cpp's logits (ctest's test_gguf_quant_llama_cpp), exit 77 (ctest: Skipped) when
 * the oracle tool (tests/oracle, built where llama.cpp is installed) is not given. */
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--llama-cpp")) {
        const char *oracle = getenv("HSD_LLAMA_ORACLE");
        if (!oracle || access(oracle, X_OK)) {
            printf("skipped: llama.cpp not installed; run scripts/install_llama_cpp.sh (then "
                   "re-run cmake)\n");
            return 77;
        }
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_llama_logits, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequant_and_dot),
        cmocka_unit_test(test_act_round),
        cmocka_unit_test(test_matmul_rows),
        cmocka_unit_test(test_matmul_batch_invariance),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* hsd_gpu_bench: checks every CUDA kernel against its CPU reference on fresh random inputs,
 * then measures the CUDA backend against the device's bandwidth. Run by bench/gpu.sh on a
 * machine with a device; built only when the CUDA backend is compiled.
 *
 *   checks   every kernel of kernels/cuda_ops.h against kernels/cpu_ops.c (or a plain loop
 *            here, for the indexed head and the sampling steps), then whole models (CPU
 *            transformer vs CUDA model): fp32 paths must stay under 1e-3 relative error,
 *            bf16 paths under 1e-2; the error is max|gpu - cpu| / max|cpu|, and every
 *            reference is checked to be non-zero. Ids (argmax, sampling) must be equal.
 *   benches  device copy bandwidth; AR decode tokens/s and forward(n)/forward(1) of a synth
 *            llama-3.2-1b (bf16) against weights-bytes / copy bandwidth; the indexed head
 *            (V = 151936, d = 4096, k = 2048) in GB/s against copy bandwidth and against
 *            the full head (cuBLAS GEMV and the same kernel over all rows).
 *
 * usage: hsd_gpu_bench [--md FILE] [--seed S] [--no-1b] [--no-head] [--checks-only]
 * (built a second time as hsd_gpu_bench_emu over tests/cuda_emu.c, a host emulation of the
 * kernels, where ctest runs the checks to prove the harness itself)
 * Exit status 1 when any check fails. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsd.h"
#include "kernels/cpu_ops.h"
#include "kernels/cuda_ops.h"
#include "lib/base/rng.h"
#include "models/cuda_model.h"
#include "models/synth.h"
#include "models/transformer.h"
#include "lib/base/timer.h"

static hsd_cuda *cu;
/* --small: the benchmarks at toy sizes, to run their code paths on the host emulation */
static bool g_small;
static hsd_rng rng;
static FILE *md;
static int n_fail, n_pass;

#define TOL_F32 1e-3
#define TOL_BF16 1e-2

static void die(const char *what) {
    fprintf(stderr, "hsd_gpu_bench: %s: %s\n", what, hsd_last_error());
    exit(2);
}
#define OK(x)                                                                                      \
    do {                                                                                           \
        if ((x) != HSD_OK) die(#x);                                                                \
    } while (0)

static void mdf(const char *fmt, ...) {
    if (!md) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(md, fmt, ap);
    va_end(ap);
}


static float urand(void) {
    return 2.0f * hsd_rng_uniform(&rng) - 1.0f;
}
static float *rand_f32(size_t n) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = urand();
    return x;
}
static void *dev(size_t bytes) {
    void *p;
    OK(hsd_cuda_alloc(cu, bytes, &p));
    return p;
}
static void *dev_from(const void *host, size_t bytes) {
    void *p = dev(bytes);
    OK(hsd_cuda_upload(cu, p, host, bytes));
    OK(hsd_cuda_sync(cu));
    return p;
}
static float *host_from(const void *d, size_t n) {
    float *h = malloc(n * sizeof *h);
    OK(hsd_cuda_download(cu, h, d, n * sizeof *h));
    return h;
}

/* max|got - want| / max|want|; inf when the reference is all zeros (a check on zeros proves
 * nothing) or anything is not finite. */
static double rel_err(const float *got, const float *want, size_t n) {
    double md_ = 0, mw = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(want[i])) return INFINITY;
        double d = fabs((double)got[i] - want[i]);
        if (d > md_) md_ = d;
        if (fabs(want[i]) > mw) mw = fabs(want[i]);
    }
    return mw > 0 ? md_ / mw : INFINITY;
}

static void report(const char *name, double err, double tol) {
    bool pass = err < tol;
    pass ? n_pass++ : n_fail++;
    printf("  %-44s %s  rel err %.2e (limit %.0e)\n", name, pass ? "PASS" : "FAIL", err, tol);
    mdf("| %s | %s | %.2e | %.0e |\n", name, pass ? "PASS" : "**FAIL**", err, tol);
}
static void report_ids(const char *name, int n_equal, int n_total) {
    bool pass = n_equal == n_total;
    pass ? n_pass++ : n_fail++;
    printf("  %-44s %s  %d/%d ids equal\n", name, pass ? "PASS" : "FAIL", n_equal, n_total);
    mdf("| %s | %s | %d/%d ids equal | exact |\n", name, pass ? "PASS" : "**FAIL**", n_equal,
        n_total);
}

/* A random matrix stored as `t`; the host copy is what the CPU reference reads. */
static hsd_mat rand_mat(hsd_dtype t, int32_t rows, int32_t cols, void **host) {
    size_t n = (size_t)rows * cols, rb = hsd_dtype_row_bytes(t, cols);
    void *h = malloc(rb * rows);
    for (size_t i = 0; i < n; i++) {
        float v = urand();
        if (t == HSD_DT_F32)
            ((float *)h)[i] = v;
        else if (t == HSD_DT_BF16)
            ((uint16_t *)h)[i] = hsd_fp32_to_bf16(v);
        else
            ((uint16_t *)h)[i] = hsd_fp32_to_fp16(v);
    }
    hsd_mat m = {t, rows, cols, dev_from(h, rb * rows)};
    *host = h;
    return m;
}

/* ---- kernel checks ------------------------------------------------------------------ */

static void check_elementwise(void) {
    const int32_t n = 5, dim = 4096;
    float *x = rand_f32((size_t)n * dim), *w = rand_f32(dim), *y = rand_f32((size_t)n * dim);
    float *dx = dev_from(x, sizeof(float) * n * dim), *dw = dev_from(w, sizeof(float) * dim);
    float *dy = dev_from(y, sizeof(float) * n * dim), *dout = dev(sizeof(float) * n * dim);
    int32_t rows[3] = {4, 0, 2};
    int32_t *drows = dev_from(rows, sizeof rows);
    float *want = malloc(sizeof(float) * n * dim);

    OK(hsd_cuda_rmsnorm(cu, dout, dx, dw, drows, 3, dim, 1e-5f));
    for (int r = 0; r < 3; r++)
        hsd_rmsnorm(want + (size_t)r * dim, x + (size_t)rows[r] * dim, w, dim, 1e-5f);
    float *got = host_from(dout, (size_t)3 * dim);
    report("rmsnorm f32 (row subset)", rel_err(got, want, (size_t)3 * dim), TOL_F32);
    free(got);

    OK(hsd_cuda_copy(cu, dout, dx, sizeof(float) * n * dim));
    OK(hsd_cuda_silu_mul(cu, dout, dy, (int64_t)n * dim));
    memcpy(want, x, sizeof(float) * n * dim);
    hsd_silu_mul(want, y, n * dim);
    got = host_from(dout, (size_t)n * dim);
    report("silu_mul (SwiGLU) f32", rel_err(got, want, (size_t)n * dim), TOL_F32);
    free(got);

    OK(hsd_cuda_copy(cu, dout, dx, sizeof(float) * n * dim));
    OK(hsd_cuda_add(cu, dout, dy, (int64_t)n * dim));
    memcpy(want, x, sizeof(float) * n * dim);
    hsd_add(want, y, n * dim);
    got = host_from(dout, (size_t)n * dim);
    report("add (residual) f32", rel_err(got, want, (size_t)n * dim), TOL_F32);
    free(got);

    /* bias on 5 rows of 1000 columns, rows 4096 apart */
    OK(hsd_cuda_copy(cu, dout, dx, sizeof(float) * n * dim));
    OK(hsd_cuda_add_bias(cu, dout, dw, n, 1000, dim));
    memcpy(want, x, sizeof(float) * n * dim);
    for (int t = 0; t < n; t++) hsd_add(want + (size_t)t * dim, w, 1000);
    got = host_from(dout, (size_t)n * dim);
    report("add_bias (qkv bias) f32", rel_err(got, want, (size_t)n * dim), TOL_F32);
    free(got);

    /* rope, both layouts, random positions */
    const int32_t heads = 8, hd = 128, half = hd / 2, n_ctx = 300;
    float *cs = malloc(sizeof(float) * n_ctx * half), *sn = malloc(sizeof(float) * n_ctx * half);
    for (int32_t p = 0; p < n_ctx; p++)
        for (int32_t i = 0; i < half; i++) {
            double a = p / pow(10000.0, 2.0 * i / hd);
            cs[p * half + i] = (float)cos(a);
            sn[p * half + i] = (float)sin(a);
        }
    float *dcs = dev_from(cs, sizeof(float) * n_ctx * half),
          *dsn = dev_from(sn, sizeof(float) * n_ctx * half);
    int32_t pos[5];
    for (int t = 0; t < n; t++) pos[t] = (int32_t)(hsd_rng_u32(&rng) % n_ctx);
    int32_t *dpos = dev_from(pos, sizeof pos);
    for (int inter = 0; inter < 2; inter++) {
        OK(hsd_cuda_copy(cu, dout, dx, sizeof(float) * n * dim));
        OK(hsd_cuda_rope(cu, dout, n, dim, heads, hd, dpos, dcs, dsn, inter));
        memcpy(want, x, sizeof(float) * n * dim);
        for (int t = 0; t < n; t++)
            hsd_rope(want + (size_t)t * dim, heads, hd, cs + pos[t] * half, sn + pos[t] * half,
                     inter);
        got = host_from(dout, (size_t)n * dim);
        report(inter ? "rope interleaved f32" : "rope half-split f32",
               rel_err(got, want, (size_t)n * dim), TOL_F32);
        free(got);
    }

    /* embedding lookup in the three storage types */
    const hsd_dtype types[3] = {HSD_DT_F32, HSD_DT_BF16, HSD_DT_F16};
    int32_t toks[5] = {7, 999, 0, 512, 7};
    int32_t *dtok = dev_from(toks, sizeof toks);
    for (int k = 0; k < 3; k++) {
        void *hemb;
        hsd_mat emb = rand_mat(types[k], 1000, 96, &hemb);
        hsd_mat hm = {types[k], 1000, 96, hemb};
        OK(hsd_cuda_embed(cu, dout, &emb, dtok, 5));
        for (int t = 0; t < 5; t++) hsd_mat_rows_f32(&hm, toks[t], 1, want + (size_t)t * 96);
        got = host_from(dout, 5 * 96);
        char name[64];
        snprintf(name, sizeof name, "embedding lookup %s", hsd_dtype_name(types[k]));
        report(name, rel_err(got, want, 5 * 96), TOL_F32);
        free(got);
        free(hemb);
        hsd_cuda_free(cu, (void *)emb.data);
    }
    hsd_cuda_free(cu, dtok);
    free(cs), free(sn), free(x), free(w), free(y), free(want);
    hsd_cuda_free(cu, dx), hsd_cuda_free(cu, dw), hsd_cuda_free(cu, dy), hsd_cuda_free(cu, dout);
    hsd_cuda_free(cu, drows), hsd_cuda_free(cu, dcs), hsd_cuda_free(cu, dsn),
        hsd_cuda_free(cu, dpos);
}

static void check_matmul(void) {
    const hsd_dtype types[3] = {HSD_DT_F32, HSD_DT_BF16, HSD_DT_F16};
    /* n = 1 twice: the warp-per-row GEMV (default) and cuBLAS; n = 7: cuBLAS */
    /* j = 3: 7 tokens through the warp-per-row GEMM (HSD_CUDA_GEMM=warp) */
    const int32_t rows = 1536, cols = 2048, ns[4] = {1, 1, 7, 7};
    for (int k = 0; k < 3; k++) {
        void *hw;
        hsd_mat w = rand_mat(types[k], rows, cols, &hw);
        hsd_mat hm = {types[k], rows, cols, hw};
        for (int j = 0; j < 4; j++) {
            int32_t n = ns[j];
            hsd_cuda_use_cublas_gemv(cu, j == 1);
            hsd_cuda_use_warp_gemm(cu, j == 3);
            float *x = rand_f32((size_t)n * cols), *want = malloc(sizeof(float) * n * rows);
            float *scratch = malloc(sizeof(float) * 4 * cols);
            float *dx = dev_from(x, sizeof(float) * n * cols),
                  *dout = dev(sizeof(float) * n * rows);
            void *dxh = dev((size_t)n * cols * 2);
            OK(hsd_cuda_matmul(cu, dout, rows, dx, n, &w, dxh));
            hsd_matmul_rows(want, rows, x, n, &hm, 0, rows, scratch);
            float *got = host_from(dout, (size_t)n * rows);
            char name[64];
            snprintf(name, sizeof name, "matmul (%s) %s, n = %d",
                     j == 0   ? "warp GEMV"
                     : j == 3 ? "warp GEMM"
                              : "cuBLAS",
                     hsd_dtype_name(types[k]), n);
            /* the warp GEMV keeps x in fp32, so only cuBLAS's narrowing needs the bf16 limit */
            report(name, rel_err(got, want, (size_t)n * rows),
                   types[k] == HSD_DT_F32 || j == 0 || j == 3 ? TOL_F32 : TOL_BF16);
            free(got), free(x), free(want), free(scratch);
            hsd_cuda_free(cu, dx), hsd_cuda_free(cu, dout), hsd_cuda_free(cu, dxh);
        }
        hsd_cuda_use_cublas_gemv(cu, false);
        hsd_cuda_use_warp_gemm(cu, false);
        free(hw);
        hsd_cuda_free(cu, (void *)w.data);
    }
}

/* The fused kernels of the CUDA model: q/k/v post-processing (bias, rope, cache writes),
 * SwiGLU over stacked gate/up rows, and products that add into their output. */
static void check_fused(void) {
    const int32_t nh = 8, nkv = 2, hd = 64, half = hd / 2, n_ctx = 64, L = 5, n = 3;
    const int32_t q_dim = nh * hd, kv_dim = nkv * hd, W = q_dim + 2 * kv_dim;
    float *cs = malloc(sizeof(float) * n_ctx * half), *sn = malloc(sizeof(float) * n_ctx * half);
    for (int32_t p = 0; p < n_ctx; p++)
        for (int32_t i = 0; i < half; i++) {
            double a = p / pow(1e6, 2.0 * i / hd);
            cs[p * half + i] = (float)cos(a);
            sn[p * half + i] = (float)sin(a);
        }
    float *qkv = rand_f32((size_t)n * W), *bias = rand_f32(W);
    float *kc = rand_f32((size_t)n_ctx * kv_dim), *vc = rand_f32((size_t)n_ctx * kv_dim);
    int32_t pos[3], meta[1] = {L};
    for (int t = 0; t < n; t++) pos[t] = (int32_t)(hsd_rng_u32(&rng) % n_ctx);
    float *dqkv = dev_from(qkv, sizeof(float) * n * W), *dbias = dev_from(bias, sizeof(float) * W);
    float *dcs = dev_from(cs, sizeof(float) * n_ctx * half),
          *dsn = dev_from(sn, sizeof(float) * n_ctx * half);
    int32_t *dpos = dev_from(pos, sizeof pos), *dmeta = dev_from(meta, sizeof meta);
    float *dq = dev(sizeof(float) * n * q_dim);
    hsd_cuda_attn_shape shape = {nh, nkv, hd, n_ctx};
    for (int inter = 0; inter < 2; inter++) {
        float *dkc = dev_from(kc, sizeof(float) * n_ctx * kv_dim),
              *dvc = dev_from(vc, sizeof(float) * n_ctx * kv_dim);
        OK(hsd_cuda_qkv_post(cu, dqkv, n, &shape, dbias, dpos, dcs, dsn, inter, dq, dkc, dvc,
                             dmeta));
        float *wq = malloc(sizeof(float) * n * q_dim), *wk = malloc(sizeof(float) * n_ctx * kv_dim);
        float *wv = malloc(sizeof(float) * n_ctx * kv_dim), *row = malloc(sizeof(float) * W);
        memcpy(wk, kc, sizeof(float) * n_ctx * kv_dim);
        memcpy(wv, vc, sizeof(float) * n_ctx * kv_dim);
        for (int t = 0; t < n; t++) {
            memcpy(row, qkv + (size_t)t * W, sizeof(float) * W);
            hsd_add(row, bias, W);
            hsd_rope(row, nh, hd, cs + pos[t] * half, sn + pos[t] * half, inter);
            hsd_rope(row + q_dim, nkv, hd, cs + pos[t] * half, sn + pos[t] * half, inter);
            memcpy(wq + (size_t)t * q_dim, row, sizeof(float) * q_dim);
            memcpy(wk + (size_t)(L + t) * kv_dim, row + q_dim, sizeof(float) * kv_dim);
            memcpy(wv + (size_t)(L + t) * kv_dim, row + q_dim + kv_dim, sizeof(float) * kv_dim);
        }
        float *gq = host_from(dq, (size_t)n * q_dim), *gk = host_from(dkc, (size_t)n_ctx * kv_dim);
        float *gv = host_from(dvc, (size_t)n_ctx * kv_dim);
        double e = rel_err(gq, wq, (size_t)n * q_dim), ek = rel_err(gk, wk, (size_t)n_ctx * kv_dim),
               ev = rel_err(gv, wv, (size_t)n_ctx * kv_dim);
        if (ek > e) e = ek;
        if (ev > e) e = ev;
        report(inter ? "qkv_post (bias, rope interleaved, k/v to cache)"
                     : "qkv_post (bias, rope half-split, k/v to cache)",
               e, TOL_F32);
        free(wq), free(wk), free(wv), free(row), free(gq), free(gk), free(gv);
        hsd_cuda_free(cu, dkc), hsd_cuda_free(cu, dvc);
    }
    free(cs), free(sn), free(qkv), free(bias), free(kc), free(vc);
    hsd_cuda_free(cu, dqkv), hsd_cuda_free(cu, dbias), hsd_cuda_free(cu, dcs),
        hsd_cuda_free(cu, dsn);
    hsd_cuda_free(cu, dpos), hsd_cuda_free(cu, dmeta), hsd_cuda_free(cu, dq);

    /* SwiGLU over stacked gate/up rows */
    const int32_t hid = 1000, nt = 4;
    float *gu = rand_f32((size_t)nt * 2 * hid), *want = malloc(sizeof(float) * nt * hid);
    float *dgu = dev_from(gu, sizeof(float) * nt * 2 * hid), *dout = dev(sizeof(float) * nt * hid);
    OK(hsd_cuda_silu_mul_split(cu, dout, dgu, nt, hid));
    for (int t = 0; t < nt; t++) {
        memcpy(want + (size_t)t * hid, gu + (size_t)t * 2 * hid, sizeof(float) * hid);
        hsd_silu_mul(want + (size_t)t * hid, gu + (size_t)t * 2 * hid + hid, hid);
    }
    float *got = host_from(dout, (size_t)nt * hid);
    report("silu_mul_split (stacked gate/up)", rel_err(got, want, (size_t)nt * hid), TOL_F32);
    free(gu), free(want), free(got);
    hsd_cuda_free(cu, dgu), hsd_cuda_free(cu, dout);

    /* out += W·x, single token (warp GEMV) and several (cuBLAS) */
    const int32_t rows = 1024, cols = 2048;
    void *hw;
    hsd_mat w = rand_mat(HSD_DT_BF16, rows, cols, &hw);
    hsd_mat hm = {HSD_DT_BF16, rows, cols, hw};
    for (int32_t pass = 0; pass < 3; pass++) { /* n = 1 (warp GEMV), 5 cuBLAS, 5 warp GEMM */
        int32_t nn = pass == 0 ? 1 : 5;
        hsd_cuda_use_warp_gemm(cu, pass == 2);
        float *x = rand_f32((size_t)nn * cols), *y = rand_f32((size_t)nn * rows);
        float *ref = malloc(sizeof(float) * nn * rows), *scratch = malloc(sizeof(float) * 4 * cols);
        float *dx = dev_from(x, sizeof(float) * nn * cols),
              *dy = dev_from(y, sizeof(float) * nn * rows);
        void *dxh = dev((size_t)nn * cols * 2);
        OK(hsd_cuda_matmul_add(cu, dy, rows, dx, nn, &w, dxh));
        hsd_matmul_rows(ref, rows, x, nn, &hm, 0, rows, scratch);
        hsd_add(ref, y, nn * rows);
        float *g = host_from(dy, (size_t)nn * rows);
        char name[64];
        snprintf(name, sizeof name, "matmul_add (out += W x) BF16, n = %d%s", nn,
                 pass == 2   ? ", warp GEMM"
                 : pass == 1 ? ", cuBLAS"
                             : "");
        report(name, rel_err(g, ref, (size_t)nn * rows), pass == 1 ? TOL_BF16 : TOL_F32);
        free(x), free(y), free(ref), free(scratch), free(g);
        hsd_cuda_free(cu, dx), hsd_cuda_free(cu, dy), hsd_cuda_free(cu, dxh);
    }
    hsd_cuda_use_warp_gemm(cu, false);
    free(hw);
    hsd_cuda_free(cu, (void *)w.data);
}

/* Attention over a cache of L rows plus n new ones, chain and tree, against the CPU path's
 * kernels (what attn_task in models/transformer.c does). */
static void check_attention(void) {
    const int32_t nh = 8, nkv = 2, hd = 64, n_ctx = 128, L = 37, kv_dim = nkv * hd, q_dim = nh * hd;
    const int32_t parents[6] = {-1, 0, 0, 1, 2, -1};
    for (int tree = 0; tree < 2; tree++) {
        const int32_t n = tree ? 6 : 4;
        float *kc = rand_f32((size_t)n_ctx * kv_dim), *vc = rand_f32((size_t)n_ctx * kv_dim);
        float *knew = rand_f32((size_t)n * kv_dim), *vnew = rand_f32((size_t)n * kv_dim);
        float *q = rand_f32((size_t)n * q_dim), *want = malloc(sizeof(float) * n * q_dim);
        float *dkc = dev_from(kc, sizeof(float) * n_ctx * kv_dim),
              *dvc = dev_from(vc, sizeof(float) * n_ctx * kv_dim);
        float *dkn = dev_from(knew, sizeof(float) * n * kv_dim),
              *dvn = dev_from(vnew, sizeof(float) * n * kv_dim);
        float *dq = dev_from(q, sizeof(float) * n * q_dim), *dout = dev(sizeof(float) * n * q_dim);
        /* meta: kv_len, then (tree) offsets and ancestor lists as build_tree makes them */
        int32_t meta[1 + 7 + 64] = {0}, depth[6], off[7], anc[64], o = 0;
        meta[0] = L;
        for (int32_t i = 0; i < n; i++) {
            depth[i] = parents[i] < 0 ? 0 : depth[parents[i]] + 1;
            off[i] = o;
            int32_t d = depth[i];
            for (int32_t k = i; k >= 0; k = parents[k]) anc[o + d--] = k;
            o += depth[i] + 1;
        }
        off[n] = o;
        memcpy(meta + 1, off, sizeof(int32_t) * (n + 1));
        memcpy(meta + 2 + n, anc, sizeof(int32_t) * o);
        int32_t *dmeta = dev_from(meta, sizeof meta);
        OK(hsd_cuda_kv_store(cu, dkc, dkn, n, kv_dim, dmeta));
        OK(hsd_cuda_kv_store(cu, dvc, dvn, n, kv_dim, dmeta));
        hsd_cuda_attn_shape shape = {nh, nkv, hd, n_ctx};
        OK(hsd_cuda_attention(cu, dout, dq, dkc, dvc, &shape, n, dmeta, tree ? dmeta + 2 + n : NULL,
                              tree ? dmeta + 1 : NULL));
        /* reference */
        memcpy(kc + (size_t)L * kv_dim, knew, sizeof(float) * n * kv_dim);
        memcpy(vc + (size_t)L * kv_dim, vnew, sizeof(float) * n * kv_dim);
        float *att = malloc(sizeof(float) * (n_ctx + hd)), tmp[64];
        for (int32_t t = 0; t < n; t++)
            for (int32_t h = 0; h < nh; h++) {
                const float *qv = q + (size_t)t * q_dim + h * hd;
                const float *kb = kc + (h / (nh / nkv)) * hd, *vb = vc + (h / (nh / nkv)) * hd;
                float *ov = want + (size_t)t * q_dim + h * hd;
                int32_t n_new = tree ? off[t + 1] - off[t] : t + 1;
                int32_t slots[8];
                for (int32_t i = 0; i < n_new; i++) slots[i] = tree ? anc[off[t] + i] : i;
                hsd_attn_scores(att, qv, kb, kv_dim, NULL, L, hd, 1.0f / sqrtf((float)hd));
                hsd_attn_scores(att + L, qv, kb + (size_t)L * kv_dim, kv_dim, slots, n_new, hd,
                                1.0f / sqrtf((float)hd));
                hsd_softmax(att, L + n_new);
                hsd_attn_accum(ov, att, vb, kv_dim, NULL, L, hd);
                hsd_attn_accum(tmp, att + L, vb + (size_t)L * kv_dim, kv_dim, slots, n_new, hd);
                hsd_add(ov, tmp, hd);
            }
        float *got = host_from(dout, (size_t)n * q_dim);
        report(tree ? "attention f32, token tree (6 new, GQA 4:1)"
                    : "attention f32, chain (4 new, GQA 4:1)",
               rel_err(got, want, (size_t)n * q_dim), TOL_F32);
        free(got);
        /* the cache rows written by kv_store */
        float *gk = host_from(dkc, (size_t)n_ctx * kv_dim);
        report(tree ? "kv_store (tree)" : "kv_store (chain)",
               rel_err(gk, kc, (size_t)(L + n) * kv_dim), TOL_F32);
        free(gk);
        if (tree) { /* keep the path 0, 2, 4 of the tree, as the engine does after verifying */
            int32_t keep[3] = {0, 2, 4}, nl = 1;
            int32_t *dkeep = dev_from(keep, sizeof keep);
            OK(hsd_cuda_kv_keep(cu, dkc, nl, n_ctx, kv_dim, L, dkeep, 3));
            for (int j = 0; j < 3; j++)
                memmove(kc + (size_t)(L + j) * kv_dim, kc + (size_t)(L + keep[j]) * kv_dim,
                        sizeof(float) * kv_dim);
            gk = host_from(dkc, (size_t)n_ctx * kv_dim);
            report("kv_keep (tree path 0, 2, 4)", rel_err(gk, kc, (size_t)(L + 3) * kv_dim),
                   TOL_F32);
            free(gk);
            hsd_cuda_free(cu, dkeep);
        }
        free(kc), free(vc), free(knew), free(vnew), free(q), free(want), free(att);
        hsd_cuda_free(cu, dkc), hsd_cuda_free(cu, dvc), hsd_cuda_free(cu, dkn),
            hsd_cuda_free(cu, dvn);
        hsd_cuda_free(cu, dq), hsd_cuda_free(cu, dout), hsd_cuda_free(cu, dmeta);
    }
}

/* The indexed head against a plain loop over the selected rows; with no index list against
 * the cuBLAS full head too (speculative with k = V equals the full head). */
static void check_indexed_head(void) {
    const hsd_dtype types[3] = {HSD_DT_F32, HSD_DT_BF16, HSD_DT_F16};
    const int32_t V = 5000, ds[2] = {4096, 1000},
                  k = 777; /* 1000: not a multiple of 8 (scalar path) */
    for (int di = 0; di < 2; di++)
        for (int ti = 0; ti < 3; ti++) {
            int32_t d = ds[di];
            void *hu;
            hsd_mat U = rand_mat(types[ti], V, d, &hu);
            hsd_mat hm = {types[ti], V, d, hu};
            float *h = rand_f32(d), *row = malloc(sizeof(float) * d),
                  *want = malloc(sizeof(float) * V);
            int32_t *idx = malloc(sizeof(int32_t) * k);
            for (int32_t j = 0; j < k; j++) idx[j] = (int32_t)(hsd_rng_u32(&rng) % V);
            float *dh = dev_from(h, sizeof(float) * d), *dout = dev(sizeof(float) * V);
            int32_t *didx = dev_from(idx, sizeof(int32_t) * k);
            OK(hsd_cuda_indexed_head(cu, dout, &U, dh, didx, k));
            for (int32_t j = 0; j < k; j++) {
                hsd_mat_rows_f32(&hm, idx[j], 1, row);
                double s = 0;
                for (int32_t c = 0; c < d; c++) s += (double)row[c] * h[c];
                want[j] = (float)s;
            }
            float *got = host_from(dout, k);
            char name[80];
            snprintf(name, sizeof name, "indexed head %s, d = %d, k = %d",
                     hsd_dtype_name(types[ti]), d, k);
            report(name, rel_err(got, want, k),
                   TOL_F32); /* fp32 accumulation of the stored values */
            free(got);
            if (di == 0 && ti == 1) { /* k = V without an index list vs the cuBLAS GEMV */
                void *dxh = dev((size_t)d * 2);
                float *dfull = dev(sizeof(float) * V);
                OK(hsd_cuda_indexed_head(cu, dout, &U, dh, NULL, V));
                hsd_cuda_use_cublas_gemv(cu, true);
                OK(hsd_cuda_matmul(cu, dfull, V, dh, 1, &U, dxh));
                hsd_cuda_use_cublas_gemv(cu, false);
                float *a = host_from(dout, V), *b = host_from(dfull, V);
                report("indexed head k = V vs full head (cuBLAS) BF16", rel_err(a, b, V), TOL_BF16);
                free(a), free(b);
                hsd_cuda_free(cu, dxh), hsd_cuda_free(cu, dfull);
            }
            free(hu), free(h), free(row), free(want), free(idx);
            hsd_cuda_free(cu, (void *)U.data), hsd_cuda_free(cu, dh), hsd_cuda_free(cu, dout),
                hsd_cuda_free(cu, didx);
        }
}

static const float *g_scores;
static int cmp_score_desc(const void *a, const void *b) {
    float x = g_scores[*(const int32_t *)a], y = g_scores[*(const int32_t *)b];
    return x > y ? -1 : x < y;
}
static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}
static int cmp_f_desc(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x > y ? -1 : x < y;
}

/* How many of the k selected ids agree with a CPU top-k of the same scores: the selected
 * scores, sorted, must equal the k largest scores (so ties at the k-th value may go either
 * way), and the ids must be distinct and in range. */
static int topk_agree(const float *scores, int32_t V, const int32_t *sel, int32_t k) {
    int32_t *all = malloc(sizeof(int32_t) * V), *ids = malloc(sizeof(int32_t) * k);
    float *a = malloc(sizeof(float) * k), *b = malloc(sizeof(float) * k);
    for (int32_t i = 0; i < V; i++) all[i] = i;
    g_scores = scores;
    qsort(all, V, sizeof *all, cmp_score_desc);
    memcpy(ids, sel, sizeof(int32_t) * k);
    qsort(ids, k, sizeof *ids, cmp_i32);
    int bad = 0;
    for (int32_t j = 0; j < k; j++) {
        a[j] = scores[all[j]];
        bool ok = ids[j] >= 0 && ids[j] < V && (j == 0 || ids[j] != ids[j - 1]);
        bad += !ok;
        b[j] = ok ? scores[ids[j]] : -INFINITY;
    }
    qsort(b, k, sizeof *b, cmp_f_desc);
    int eq = 0;
    for (int32_t j = 0; j < k; j++) eq += a[j] == b[j];
    free(all), free(ids), free(a), free(b);
    return eq - bad > 0 ? eq - bad : 0;
}

/* Top-k set of the device against a CPU sort; the speculative head end to end (router
 * W_vocab·(W_down·h), top-k, indexed head) and the low-rank head W_up·(W_down·h), each against
 * the CPU. */
static void check_heads(void) {
    const int32_t V = 151936, k = 2048;
    float *x = rand_f32(V), *dx = dev_from(x, sizeof(float) * V);
    int32_t *didx = dev(sizeof(int32_t) * k), *got = malloc(sizeof(int32_t) * k);
    OK(hsd_cuda_topk(cu, didx, dx, V, k));
    OK(hsd_cuda_download(cu, got, didx, sizeof(int32_t) * k));
    report_ids("top-k, V = 151936, k = 2048", topk_agree(x, V, got, k), k);
    free(x), free(got);
    hsd_cuda_free(cu, dx), hsd_cuda_free(cu, didx);

    /* low-rank and speculative heads on a smaller vocabulary */
    const int32_t Vs = 6000, d = 1024, r = 128, ks = 300;
    void *hdown, *hup, *hu;
    hsd_mat Wd = rand_mat(HSD_DT_BF16, r, d, &hdown), Wu = rand_mat(HSD_DT_BF16, Vs, r, &hup);
    hsd_mat U = rand_mat(HSD_DT_BF16, Vs, d, &hu);
    hsd_mat hWd = {HSD_DT_BF16, r, d, hdown}, hWu = {HSD_DT_BF16, Vs, r, hup},
            hU = {HSD_DT_BF16, Vs, d, hu};
    float *h = rand_f32(d), *dh = dev_from(h, sizeof(float) * d), *dz = dev(sizeof(float) * r);
    float *dout = dev(sizeof(float) * Vs), *scratch = malloc(sizeof(float) * 4 * d);
    float *z = malloc(sizeof(float) * r), *want = malloc(sizeof(float) * Vs);
    void *dxh = dev((size_t)d * 2);
    OK(hsd_cuda_matmul(cu, dz, r, dh, 1, &Wd, dxh));
    OK(hsd_cuda_matmul(cu, dout, Vs, dz, 1, &Wu, dxh));
    hsd_matmul_rows(z, r, h, 1, &hWd, 0, r, scratch);
    hsd_matmul_rows(want, Vs, z, 1, &hWu, 0, Vs, scratch);
    float *g = host_from(dout, Vs);
    report("low-rank head (SlimSpec) BF16, r = 128", rel_err(g, want, Vs), TOL_BF16);
    free(g);
    /* speculative: the device's router scores pick k rows; the set must be the CPU top-k of
     * those same scores, and the logits the CPU dots of those rows */
    int32_t *dsel = dev(sizeof(int32_t) * ks), *sel = malloc(sizeof(int32_t) * ks);
    OK(hsd_cuda_topk(cu, dsel, dout, Vs, ks));
    float *dlog = dev(sizeof(float) * ks);
    OK(hsd_cuda_indexed_head(cu, dlog, &U, dh, dsel, ks));
    float *scores = host_from(dout, Vs), *lg = host_from(dlog, ks),
          *ref = malloc(sizeof(float) * ks);
    OK(hsd_cuda_download(cu, sel, dsel, sizeof(int32_t) * ks));
    float *row = malloc(sizeof(float) * d);
    for (int32_t j = 0; j < ks; j++) {
        hsd_mat_rows_f32(&hU, sel[j], 1, row);
        double acc = 0;
        for (int32_t c = 0; c < d; c++) acc += (double)row[c] * h[c];
        ref[j] = (float)acc;
    }
    report("speculative head (router, top-k, indexed) BF16", rel_err(lg, ref, ks), TOL_F32);
    report_ids("speculative head: selected rows = CPU top-k", topk_agree(scores, Vs, sel, ks), ks);
    free(hdown), free(hup), free(hu), free(h), free(scratch), free(z), free(want), free(sel);
    free(scores), free(lg), free(ref), free(row);
    hsd_cuda_free(cu, (void *)Wd.data), hsd_cuda_free(cu, (void *)Wu.data),
        hsd_cuda_free(cu, (void *)U.data);
    hsd_cuda_free(cu, dh), hsd_cuda_free(cu, dz), hsd_cuda_free(cu, dout), hsd_cuda_free(cu, dxh);
    hsd_cuda_free(cu, dsel), hsd_cuda_free(cu, dlog);
}

static double weight_at(const float *p, const float *q, int32_t i) {
    return q ? fmax((double)p[i] - q[i], 0.0) : p[i];
}

static int32_t cpu_sample(const float *p, const float *q, int32_t V, float u) {
    double total = 0;
    for (int32_t i = 0; i < V; i++) total += weight_at(p, q, i);
    double target = u * total, acc = 0;
    for (int32_t i = 0; i < V; i++) {
        acc += weight_at(p, q, i);
        if (acc > target) return i;
    }
    return V - 1;
}

/* Whether `got` is the inverse-CDF draw for u up to float summation: the device adds in
 * float (in chunks), the reference in double, so a target within 1e-4 of the total from a
 * token boundary may land on either side. */
static bool sample_matches(const float *p, const float *q, int32_t V, float u, int32_t got) {
    if (got < 0 || got >= V || !(weight_at(p, q, got) > 0)) return false;
    double total = 0, before = 0;
    for (int32_t i = 0; i < V; i++) {
        if (i == got) before = total;
        total += weight_at(p, q, i);
    }
    double target = u * total, tol = 1e-4 * total;
    return before <= target + tol && before + weight_at(p, q, got) >= target - tol;
}

static void check_sampling(void) {
    const int32_t V = 151936, R = 4;
    float *x = malloc(sizeof(float) * R * V);
    for (size_t i = 0; i < (size_t)R * V; i++) x[i] = 8.0f * urand();
    float *dx = dev_from(x, sizeof(float) * R * V);
    int32_t *dids = dev(sizeof(int32_t) * 64), ids[64];
    OK(hsd_cuda_argmax(cu, dids, dx, R, V));
    OK(hsd_cuda_download(cu, ids, dids, sizeof(int32_t) * R));
    int eq = 0;
    for (int r = 0; r < R; r++) {
        int32_t b = 0;
        for (int32_t i = 1; i < V; i++)
            if (x[(size_t)r * V + i] > x[(size_t)r * V + b]) b = i;
        eq += ids[r] == b;
    }
    report_ids("argmax, V = 151936", eq, R);

    OK(hsd_cuda_softmax(cu, dx, R, V, 0.7f));
    float *want = malloc(sizeof(float) * R * V);
    for (size_t i = 0; i < (size_t)R * V; i++) want[i] = x[i] / 0.7f;
    for (int r = 0; r < R; r++) hsd_softmax(want + (size_t)r * V, V);
    float *got = host_from(dx, (size_t)R * V);
    report("softmax f32 (temperature 0.7)", rel_err(got, want, (size_t)R * V), TOL_F32);

    /* sampling and rejection from the device's own probabilities (the same p on both sides) */
    const float *p = got, *q = got + V;
    float *dp = dev_from(p, sizeof(float) * V), *dq = dev_from(q, sizeof(float) * V);
    int n_eq = 0, n_rej_eq = 0, n = 20;
    for (int i = 0; i < n; i++) {
        float u = hsd_rng_uniform(&rng);
        int32_t id;
        OK(hsd_cuda_sample(cu, dids, dp, V, u));
        OK(hsd_cuda_download(cu, &id, dids, sizeof id));
        n_eq += sample_matches(p, NULL, V, u, id);
        /* rejection: half the draws from q's most likely token (often accepted), half random */
        int32_t xt = i % 2 ? (int32_t)(hsd_rng_u32(&rng) % V) : cpu_sample(q, NULL, V, u);
        float ua = hsd_rng_uniform(&rng), ur = hsd_rng_uniform(&rng);
        int32_t out[2];
        OK(hsd_cuda_reject(cu, dids, dp, dq, V, xt, ua, ur));
        OK(hsd_cuda_download(cu, out, dids, sizeof out));
        bool acc = ua * q[xt] < p[xt];
        n_rej_eq +=
            out[0] == (int32_t)acc && (acc ? out[1] == xt : sample_matches(p, q, V, ur, out[1]));
    }
    report_ids("sample (inverse CDF), 20 draws", n_eq, n);
    report_ids("rejection step, 20 draws", n_rej_eq, n);
    free(x), free(want), free(got);
    hsd_cuda_free(cu, dx), hsd_cuda_free(cu, dids), hsd_cuda_free(cu, dp), hsd_cuda_free(cu, dq);
}

/* ---- whole-model checks: the CPU transformer against the CUDA model ------------------ */

static void model_pair(const char *shape, hsd_dtype dt, hsd_transformer **tf, hsd_model_iface *cpu,
                       hsd_model_iface *gpu, hsd_synth_model **sm) {
    OK(hsd_synth_create(shape, dt, hsd_rng_u32(&rng), sm));
    hsd_model_params p = hsd_model_default_params();
    p.n_ctx = 96;
    OK(hsd_synth_to_transformer(*sm, &p, tf));
    hsd_tf_iface(*tf, cpu);
    char desc[512];
    OK(hsd_cuda_model_create(*tf, &p, gpu, desc, sizeof desc));
}

static void check_model(const char *shape, hsd_dtype dt, double tol) {
    hsd_synth_model *sm;
    hsd_transformer *tf;
    hsd_model_iface c, g;
    model_pair(shape, dt, &tf, &c, &g, &sm);
    int32_t V = c.vocab_size(c.ctx), toks[16];
    for (int i = 0; i < 16; i++) toks[i] = (int32_t)(hsd_rng_u32(&rng) % V);
    float *lc = malloc(sizeof(float) * 16 * V), *lg = malloc(sizeof(float) * 16 * V);
    double worst = 0;
    char name[96];
#define BOTH(call_c, call_g)                                                                       \
    do {                                                                                           \
        OK(call_c);                                                                                \
        OK(call_g);                                                                                \
    } while (0)
    /* prefill 9 tokens, all rows */
    BOTH(c.forward(c.ctx, toks, 9, NULL, NULL, 9, lc),
         g.forward(g.ctx, toks, 9, NULL, NULL, 9, lg));
    double e = rel_err(lg, lc, (size_t)9 * V);
    worst = e > worst ? e : worst;
    /* a token tree of 5, then keep one path of it */
    int32_t parents[5] = {-1, 0, 0, 1, 2}, keep[3] = {0, 2, 4};
    BOTH(c.forward(c.ctx, toks + 9, 5, parents, NULL, 5, lc),
         g.forward(g.ctx, toks + 9, 5, parents, NULL, 5, lg));
    double et = rel_err(lg, lc, (size_t)5 * V);
    BOTH(c.kv_keep(c.ctx, 9, keep, 3), g.kv_keep(g.ctx, 9, keep, 3));
    /* decode steps (the graph path), then truncate and a forward with a row subset */
    double ed = 0;
    for (int s = 0; s < 4; s++) {
        BOTH(c.forward(c.ctx, toks + s, 1, NULL, NULL, 1, lc),
             g.forward(g.ctx, toks + s, 1, NULL, NULL, 1, lg));
        double x = rel_err(lg, lc, V);
        ed = x > ed ? x : ed;
    }
    int32_t rows[2] = {3, 1};
    BOTH(c.kv_truncate(c.ctx, 5), g.kv_truncate(g.ctx, 5));
    BOTH(c.forward(c.ctx, toks + 4, 4, NULL, rows, 2, lc),
         g.forward(g.ctx, toks + 4, 4, NULL, rows, 2, lg));
    double er = rel_err(lg, lc, (size_t)2 * V);
    snprintf(name, sizeof name, "model %s %s: prefill 9", shape, hsd_dtype_name(dt));
    report(name, e, tol);
    snprintf(name, sizeof name, "model %s %s: tree of 5", shape, hsd_dtype_name(dt));
    report(name, et, tol);
    snprintf(name, sizeof name, "model %s %s: kv_keep + 4 decode steps", shape, hsd_dtype_name(dt));
    report(name, ed, tol);
    snprintf(name, sizeof name, "model %s %s: truncate + rows subset", shape, hsd_dtype_name(dt));
    report(name, er, tol);
    free(lc), free(lg);
    g.free(g.ctx);
    hsd_tf_free(tf);
    hsd_synth_free(sm);
}

/* ---- benchmarks --------------------------------------------------------------------- */

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static double copy_bandwidth(void) {
    size_t bytes = g_small ? (size_t)1 << 24 : (size_t)1 << 30;
    void *a = dev(bytes), *b = dev(bytes);
    OK(hsd_cuda_copy(cu, b, a, bytes));
    float t[10];
    for (int i = 0; i < 10; i++) {
        OK(hsd_cuda_timer_start(cu));
        OK(hsd_cuda_copy(cu, b, a, bytes));
        OK(hsd_cuda_timer_stop(cu, &t[i]));
    }
    qsort(t, 10, sizeof *t, cmp_f);
    hsd_cuda_free(cu, a), hsd_cuda_free(cu, b);
    return 2.0 * bytes / (t[5] * 1e-3) / 1e9; /* read + write */
}

static void bench_1b(double bw) {
    const char *shape = g_small ? "small" : "llama-3.2-1b";
    printf("\n== AR decode, synth %s (bf16) ==\n", shape);
    double t0 = hsd_timer_ms();
    hsd_synth_model *sm;
    OK(hsd_synth_create(shape, HSD_DT_BF16, 7, &sm));
    hsd_model_params p = hsd_model_default_params();
    p.n_ctx = 1024;
    hsd_transformer *tf;
    OK(hsd_synth_to_transformer(sm, &p, &tf));
    const hsd_tf_config *c = hsd_tf_get_config(tf);
    double wbytes = 0; /* bytes a decode step reads: every layer matrix and the classifier */
    for (int32_t l = 0; l < c->n_layers; l++)
        for (hsd_tkind k = HSD_T_WQ; k <= HSD_T_W_UP; k++) {
            const hsd_mat *m = hsd_tf_matrix(tf, k, l);
            if (m) wbytes += (double)hsd_dtype_row_bytes(HSD_DT_BF16, m->cols) * m->rows;
        }
    wbytes += (double)hsd_dtype_row_bytes(HSD_DT_BF16, c->dim) * c->vocab_size;
    printf("  synthesized in %.1f s; %.2f GB of weights read per decode step\n",
           (hsd_timer_ms() - t0) / 1e3, wbytes / 1e9);
    double ideal = bw * 1e9 / wbytes;
    mdf("\n| synth %s bf16 | value |\n|---|---|\n| weights read per step | %.2f GB |\n"
        "| bound: copy bandwidth / weights | %.1f tok/s |\n",
        shape, wbytes / 1e9, ideal);
    /* decode configurations: graph replay or eager launches; GEMVs by the warp-per-row
     * kernel or by cuBLAS (the forward(n) table is taken with the first) */
    const struct {
        bool graphs, cublas, warp_gemm;
        const char *name;
    } cfgs[4] = {{true, false, false, "CUDA graph, warp GEMV, cuBLAS GEMM"},
                 {true, true, false, "CUDA graph, cuBLAS GEMV, cuBLAS GEMM"},
                 {false, false, false, "eager, warp GEMV, cuBLAS GEMM"},
                 {true, false, true, "CUDA graph, warp GEMV, warp GEMM (n <= 8)"}};
    for (int ci = 0; ci < 4; ci++) {
        bool graphs = cfgs[ci].graphs;
        setenv("HSD_CUDA_GRAPHS", graphs ? "1" : "0", 1);
        setenv("HSD_CUDA_GEMV", cfgs[ci].cublas ? "cublas" : "warp", 1);
        setenv("HSD_CUDA_GEMM", cfgs[ci].warp_gemm ? "warp" : "cublas", 1);
        hsd_model_iface g;
        char desc[512];
        OK(hsd_cuda_model_create(tf, &p, &g, desc, sizeof desc));
        int32_t V = c->vocab_size, toks[64];
        for (int i = 0; i < 64; i++) toks[i] = (int32_t)(hsd_rng_u32(&rng) % V);
        float *logits = malloc(sizeof(float) * 16 * V);
        OK(g.forward(g.ctx, toks, 32, NULL, NULL, 0, NULL));
        for (int i = 0; i < 8; i++) OK(g.forward(g.ctx, toks + i, 1, NULL, NULL, 1, logits));
        const int steps = g_small ? 8 : 256;
        double ts = hsd_timer_ms();
        for (int i = 0; i < steps; i++)
            OK(g.forward(g.ctx, toks + i % 64, 1, NULL, NULL, 1, logits));
        double ms = (hsd_timer_ms() - ts) / steps;
        bool met = (1e3 / ms) / ideal >= 0.8;
        printf("  decode (%s): %.3f ms/token, %.1f tok/s = %.0f%% of the bandwidth bound %.1f "
               "tok/s (target >= 80%%: %s)\n",
               cfgs[ci].name, ms, 1e3 / ms, 100.0 * (1e3 / ms) / ideal, ideal,
               met ? "met" : "NOT met");
        mdf("| AR decode, %s | %.1f tok/s (%.3f ms), %.0f%% of bound, target %s |\n", cfgs[ci].name,
            1e3 / ms, ms, 100.0 * (1e3 / ms) / ideal, met ? "met" : "**not met**");
        if (ci == 0 || ci == 3) { /* forward(n) with cuBLAS, then with the warp GEMM */
            printf("  %4s %12s %12s %14s\n", "n", "ms (all rows)", "vs n=1", "ms (1 row)");
            double base = 0;
            for (int32_t n = 1; n <= 16; n *= 2) {
                float ta[15], t1[15];
                int32_t last = n - 1;
                for (int r = 0; r < 15; r++) {
                    OK(g.kv_truncate(g.ctx, 40));
                    double a = hsd_timer_ms();
                    OK(g.forward(g.ctx, toks, n, NULL, NULL, n, logits));
                    ta[r] = (float)(hsd_timer_ms() - a);
                    OK(g.kv_truncate(g.ctx, 40));
                    a = hsd_timer_ms();
                    OK(g.forward(g.ctx, toks, n, NULL, &last, 1, logits));
                    t1[r] = (float)(hsd_timer_ms() - a);
                }
                qsort(ta, 15, sizeof *ta, cmp_f);
                qsort(t1, 15, sizeof *t1, cmp_f);
                if (n == 1) base = ta[7];
                printf("  %4d %12.3f %11.2fx %14.3f\n", n, ta[7], ta[7] / base, t1[7]);
                mdf("| forward(%d) / forward(1), %s | %.2fx (%.3f ms all rows; %.3f ms last row "
                    "only) |\n",
                    n, ci == 3 && n <= 8 ? "warp GEMM" : "cuBLAS GEMM", ta[7] / base, ta[7], t1[7]);
            }
        }
        free(logits);
        g.free(g.ctx);
    }
    hsd_tf_free(tf);
    hsd_synth_free(sm);
}

static void bench_head(double bw) {
    const int32_t V = g_small ? 8192 : 151936, d = g_small ? 512 : 4096, k = g_small ? 256 : 2048;
    printf("\n== LM head, V = %d, d = %d, bf16: indexed (k = %d) vs full ==\n", V, d, k);
    size_t rb = (size_t)d * 2, total = rb * V, tile = (size_t)64 << 20;
    uint16_t *h16 = malloc(tile);
    for (size_t i = 0; i < tile / 2; i++) h16[i] = hsd_fp32_to_bf16(urand() * 0.05f);
    char *du = dev(total);
    for (size_t off = 0; off < total; off += tile)
        OK(hsd_cuda_upload(cu, du + off, h16, total - off < tile ? total - off : tile));
    OK(hsd_cuda_sync(cu));
    hsd_mat U = {HSD_DT_BF16, V, d, du};
    float *h = rand_f32(d), *dh = dev_from(h, sizeof(float) * d), *dout = dev(sizeof(float) * V);
    void *dxh = dev((size_t)d * 2);
    /* k distinct rows in random order (a partial Fisher-Yates shuffle) */
    int32_t *perm = malloc(sizeof(int32_t) * V);
    for (int32_t i = 0; i < V; i++) perm[i] = i;
    for (int32_t i = 0; i < k; i++) {
        int32_t j = i + (int32_t)(hsd_rng_u32(&rng) % (uint32_t)(V - i)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int32_t *didx = dev_from(perm, sizeof(int32_t) * k);
    float t_idx[50], t_full[50], t_all[50];
    for (int r = -3; r < 50; r++) { /* 3 warm-up runs */
        float a, b, c2;
        OK(hsd_cuda_timer_start(cu));
        OK(hsd_cuda_indexed_head(cu, dout, &U, dh, didx, k));
        OK(hsd_cuda_timer_stop(cu, &a));
        hsd_cuda_use_cublas_gemv(cu, true);
        OK(hsd_cuda_timer_start(cu));
        OK(hsd_cuda_matmul(cu, dout, V, dh, 1, &U, dxh));
        OK(hsd_cuda_timer_stop(cu, &b));
        hsd_cuda_use_cublas_gemv(cu, false);
        OK(hsd_cuda_timer_start(cu));
        OK(hsd_cuda_indexed_head(cu, dout, &U, dh, NULL, V));
        OK(hsd_cuda_timer_stop(cu, &c2));
        if (r >= 0) t_idx[r] = a, t_full[r] = b, t_all[r] = c2;
    }
    qsort(t_idx, 50, sizeof(float), cmp_f);
    qsort(t_full, 50, sizeof(float), cmp_f);
    qsort(t_all, 50, sizeof(float), cmp_f);
    double mi = t_idx[25], mf = t_full[25], ma = t_all[25];
    /* speed-ups are against the faster of the two full heads */
    double full = mf < ma ? mf : ma;
    const char *full_name = mf < ma ? "cuBLAS" : "warp kernel";
    double gi = (double)k * rb / (mi * 1e-3) / 1e9, gf = (double)total / (mf * 1e-3) / 1e9,
           ga = (double)total / (ma * 1e-3) / 1e9;
    printf("  indexed head k = %d: %.4f ms, %.0f GB/s (%.0f%% of copy bandwidth)\n", k, mi, gi,
           100 * gi / bw);
    printf("  full head, cuBLAS GEMV: %.4f ms, %.0f GB/s (%.0f%%)\n", mf, gf, 100 * gf / bw);
    printf("  full head, same kernel over all rows: %.4f ms, %.0f GB/s (%.0f%%)\n", ma, ga,
           100 * ga / bw);
    printf("  speed-up indexed vs full (%s): %.1fx %s\n", full_name, full / mi,
           full / mi >= 4 ? "(target >= 4x: met)" : "(target >= 4x: NOT met)");
    mdf("\n| LM head V=%d d=%d bf16 | time | GB/s | of copy BW |\n|---|---|---|---|\n", V, d);
    mdf("| indexed, k = %d | %.4f ms | %.0f | %.0f%% |\n", k, mi, gi, 100 * gi / bw);
    mdf("| full, cuBLAS GEMV | %.4f ms | %.0f | %.0f%% |\n", mf, gf, 100 * gf / bw);
    mdf("| full, indexed kernel over all rows | %.4f ms | %.0f | %.0f%% |\n", ma, ga,
        100 * ga / bw);
    mdf("| **speed-up indexed vs full (%s)** | %.1fx (target >= 4x%s) | | |\n", full_name,
        full / mi, full / mi >= 4 ? ", met" : ", **not met**");
    /* low-rank head (SlimSpec) r = 256: W_up·(W_down·h); the speculative head (SpecVocab) uses
     * the same two GEMVs as its router, then top-k and the indexed head */
    const int32_t r = g_small ? 64 : 256;
    size_t bdown = (size_t)r * d * 2, bup = (size_t)V * r * 2;
    char *dwd = dev(bdown), *dwu = dev(bup);
    for (size_t off = 0; off < bup; off += tile)
        OK(hsd_cuda_upload(cu, dwu + off, h16, bup - off < tile ? bup - off : tile));
    OK(hsd_cuda_upload(cu, dwd, h16, bdown));
    hsd_mat Wd = {HSD_DT_BF16, r, d, dwd}, Wu = {HSD_DT_BF16, V, r, dwu};
    float *dz = dev(sizeof(float) * r), *dscore = dev(sizeof(float) * V);
    int32_t *dsel = dev(sizeof(int32_t) * k);
    float t_lr[50], t_spec[50], t_topk[50];
    for (int i = -3; i < 50; i++) {
        float a, b, c2;
        OK(hsd_cuda_timer_start(cu));
        OK(hsd_cuda_matmul(cu, dz, r, dh, 1, &Wd, dxh));
        OK(hsd_cuda_matmul(cu, dscore, V, dz, 1, &Wu, dxh));
        OK(hsd_cuda_timer_stop(cu, &a));
        OK(hsd_cuda_timer_start(cu));
        OK(hsd_cuda_topk(cu, dsel, dscore, V, k));
        OK(hsd_cuda_timer_stop(cu, &c2));
        OK(hsd_cuda_timer_start(cu));
        OK(hsd_cuda_matmul(cu, dz, r, dh, 1, &Wd, dxh));
        OK(hsd_cuda_matmul(cu, dscore, V, dz, 1, &Wu, dxh));
        OK(hsd_cuda_topk(cu, dsel, dscore, V, k));
        OK(hsd_cuda_indexed_head(cu, dout, &U, dh, dsel, k));
        OK(hsd_cuda_timer_stop(cu, &b));
        if (i >= 0) t_lr[i] = a, t_spec[i] = b, t_topk[i] = c2;
    }
    qsort(t_lr, 50, sizeof(float), cmp_f);
    qsort(t_spec, 50, sizeof(float), cmp_f);
    qsort(t_topk, 50, sizeof(float), cmp_f);
    printf("  low-rank head r = %d: %.4f ms (speed-up %.1fx vs full)\n", r, t_lr[25],
           full / t_lr[25]);
    printf("  top-k (k = %d of %d): %.4f ms\n", k, V, t_topk[25]);
    printf(
        "  speculative head (router r = %d + top-k + indexed): %.4f ms (speed-up %.1fx vs full)\n",
        r, t_spec[25], full / t_spec[25]);
    mdf("| low-rank head, r = %d (two GEMVs) | %.4f ms | | speed-up %.1fx vs full |\n", r, t_lr[25],
        full / t_lr[25]);
    mdf("| top-k, k = %d (single-block radix select) | %.4f ms | | |\n", k, t_topk[25]);
    mdf("| speculative head: router + top-k + indexed | %.4f ms | | speed-up %.1fx vs full |\n",
        t_spec[25], full / t_spec[25]);
    hsd_cuda_free(cu, dwd), hsd_cuda_free(cu, dwu), hsd_cuda_free(cu, dz),
        hsd_cuda_free(cu, dscore);
    hsd_cuda_free(cu, dsel);
    free(h16), free(h), free(perm);
    hsd_cuda_free(cu, du), hsd_cuda_free(cu, dh), hsd_cuda_free(cu, dout), hsd_cuda_free(cu, dxh),
        hsd_cuda_free(cu, didx);
}

int main(int argc, char **argv) {
    const char *md_path = NULL;
    uint64_t seed = (uint64_t)time(NULL);
    bool do_1b = true, do_head = true, do_bw = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--md") && i + 1 < argc)
            md_path = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--no-1b"))
            do_1b = false;
        else if (!strcmp(argv[i], "--no-head"))
            do_head = false;
        else if (!strcmp(argv[i], "--small"))
            g_small = true;
        else if (!strcmp(argv[i], "--checks-only"))
            do_bw = do_1b = do_head = false;
        else {
            fprintf(stderr, "usage: hsd_gpu_bench [--md FILE] [--seed S] [--no-1b] [--no-head] "
                            "[--checks-only]\n");
            return 2;
        }
    }
    if (hsd_cuda_open(0, &cu) != HSD_OK) {
        fprintf(stderr, "hsd_gpu_bench: %s\n", hsd_last_error());
        return 2;
    }
    hsd_rng_init(&rng, seed, 0);
    if (md_path && !(md = fopen(md_path, "w"))) {
        perror(md_path);
        return 2;
    }
    printf("device: %s\nseed: %llu (fresh random inputs; rerun with --seed to reproduce)\n\n== "
           "kernel checks vs CPU reference ==\n",
           hsd_cuda_device_desc(cu), (unsigned long long)seed);
    mdf("Device: %s. Input seed %llu.\n\n| check (GPU vs CPU reference) | result | error | limit "
        "|\n|---|---|---|---|\n",
        hsd_cuda_device_desc(cu), (unsigned long long)seed);
    check_elementwise();
    check_matmul();
    check_fused();
    check_attention();
    check_indexed_head();
    check_sampling();
    check_heads();
    check_model("tiny", HSD_DT_F32, TOL_F32);
    check_model("tiny-qwen2", HSD_DT_F32, TOL_F32);
    check_model("small", HSD_DT_BF16, TOL_BF16);
    printf("  %d checks passed, %d failed\n", n_pass, n_fail);
    mdf("\n%d checks passed, %d failed.\n", n_pass, n_fail);

    if (!do_bw) goto done;
    double bw = copy_bandwidth();
    printf("\n== device copy bandwidth (cudaMemcpy D2D, read + write) ==\n  %.0f GB/s\n", bw);
    mdf("\nDevice copy bandwidth (cudaMemcpy D2D, 1 GiB, read + write counted): %.0f GB/s.\n", bw);
    if (do_1b) bench_1b(bw);
    if (do_head) bench_head(bw);
done:
    if (md) fclose(md);
    hsd_cuda_close(cu);
    return n_fail ? 1 : 0;
}

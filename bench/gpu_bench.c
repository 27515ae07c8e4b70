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
 * Exit status 1 when any check fails.
 * The checks are in gpu_bench_checks.c and gpu_bench_checks_heads.c, shared state and
 * helpers declared in gpu_bench.h. */
#include "lib/base/timer.h"
#include "lib/base/rng.h"
#include "hsd_tools.h"
#include "bench/gpu_bench.h"

hsd_cuda *cu;
/* --small: the benchmarks at toy sizes, to run their code paths on the host emulation */
bool g_small;
hsd_rng rng;
FILE *md;
int n_fail, n_pass;

void die(const char *what) {
    fprintf(stderr, "hsd_gpu_bench: %s: %s\n", what, hsd_last_error());
    exit(2);
}

void mdf(const char *fmt, ...) {
    if (!md) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(md, fmt, ap);
    va_end(ap);
}

float urand(void) {
    return 2.0f * hsd_rng_uniform(&rng) - 1.0f;
}
float *rand_f32(size_t n) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = urand();
    return x;
}
void *dev(size_t bytes) {
    void *p;
    OK(hsd_cuda_alloc(cu, bytes, &p));
    return p;
}
void *dev_from(const void *host, size_t bytes) {
    void *p = dev(bytes);
    OK(hsd_cuda_upload(cu, p, host, bytes));
    OK(hsd_cuda_sync(cu));
    return p;
}
float *host_from(const void *d, size_t n) {
    float *h = malloc(n * sizeof *h);
    OK(hsd_cuda_download(cu, h, d, n * sizeof *h));
    return h;
}

/* max|got - want| / max|want|; inf when the reference is all zeros (a check on zeros proves
 * nothing) or anything is not finite. */
double rel_err(const float *got, const float *want, size_t n) {
    double md_ = 0, mw = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(want[i])) return INFINITY;
        double d = fabs((double)got[i] - want[i]);
        if (d > md_) md_ = d;
        if (fabs(want[i]) > mw) mw = fabs(want[i]);
    }
    return mw > 0 ? md_ / mw : INFINITY;
}

void report(const char *name, double err, double tol) {
    bool pass = err < tol;
    pass ? n_pass++ : n_fail++;
    printf("  %-44s %s  rel err %.2e (limit %.0e)\n", name, pass ? "PASS" : "FAIL", err, tol);
    mdf("| %s | %s | %.2e | %.0e |\n", name, pass ? "PASS" : "**FAIL**", err, tol);
}
void report_ids(const char *name, int n_equal, int n_total) {
    bool pass = n_equal == n_total;
    pass ? n_pass++ : n_fail++;
    printf("  %-44s %s  %d/%d ids equal\n", name, pass ? "PASS" : "FAIL", n_equal, n_total);
    mdf("| %s | %s | %d/%d ids equal | exact |\n", name, pass ? "PASS" : "**FAIL**", n_equal,
        n_total);
}

/* A random matrix stored as `t`; the host copy is what the CPU reference reads. */
hsd_mat rand_mat(hsd_dtype t, int32_t rows, int32_t cols, void **host) {
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
    hsd_mat m = {t, rows, cols, dev_from(h, rb * rows), NULL};
    *host = h;
    return m;
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
        bool graphs, cublas, warp_gemm, pdl;
        const char *mma, *name;
    } cfgs[8] = {
        {true, false, false, true, "0", "CUDA graph, tensor-core products (batch-invariant), PDL"},
        {true, true, false, true, "0", "CUDA graph, cuBLAS products"},
        {false, false, false, true, "0", "eager, tensor-core products, PDL"},
        {true, false, true, true, "0", "CUDA graph, fp32 warp GEMM for n = 2..8"},
        {true, false, false, false, "0", "CUDA graph, tensor-core products, no PDL"},
        {true, false, false, true, "1", "CUDA graph, tensor-core 8 warps x 4 chunks, PDL"},
        {true, false, false, true, "2", "CUDA graph, tensor-core 4 warps x 4 chunks, PDL"},
        {true, false, false, true, "4", "CUDA graph, tensor-core 8 warps x 2 chunks, PDL"}};
    for (int ci = 0; ci < 8; ci++) {
        bool graphs = cfgs[ci].graphs;
        setenv("HSD_CUDA_GRAPHS", graphs ? "1" : "0", 1);
        setenv("HSD_CUDA_GEMV", cfgs[ci].cublas ? "cublas" : "warp", 1);
        setenv("HSD_CUDA_GEMM", cfgs[ci].warp_gemm ? "warp" : "cublas", 1);
        setenv("HSD_CUDA_PDL", cfgs[ci].pdl ? "1" : "0", 1);
        setenv("HSD_CUDA_MMA", cfgs[ci].mma, 1);
        hsd_model_iface g = {HSD_MODEL_IFACE_INIT};
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
        if (ci <= 1 || ci == 3 || ci == 4) { /* forward(n): tensor cores, cuBLAS, warp GEMM */
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
                    n, cfgs[ci].name, ta[7] / base, ta[7], t1[7]);
            }
        }
        free(logits);
        g.free(g.ctx);
    }
    hsd_tf_free(tf);
    hsd_synth_free(sm);
}

/* The products of one llama-3.2-1b decode step, each alone: time and GB/s of the default
 * (tensor-core, batch-invariant) product at n = 1, 8 and 16, against cuBLAS at n = 1 and 8.
 * Their sum over the layers, next to the measured decode step, says how much of the step is
 * the products and how much the other kernels and the gaps between launches. */
static void bench_shapes(double bw) {
    const int32_t L = g_small ? 2 : 16;
    const struct {
        const char *name;
        int32_t rows, cols, per_step;
    } sh[5] = {{"q|k|v (stacked)", g_small ? 384 : 3072, g_small ? 256 : 2048, L},
               {"o", g_small ? 256 : 2048, g_small ? 256 : 2048, L},
               {"gate|up (stacked)", g_small ? 1024 : 16384, g_small ? 256 : 2048, L},
               {"down", g_small ? 256 : 2048, g_small ? 512 : 8192, L},
               {"classifier", g_small ? 4096 : 128256, g_small ? 256 : 2048, 1}};
    printf("\n== the products of a decode step, alone (bf16) ==\n");
    mdf("\n| product (rows x cols, bf16) | mma n=1 | GB/s | of copy BW | mma n=8 / n=1 | mma n=16 / n=1 "
        "| cuBLAS n=1 | cuBLAS n=8 |\n|---|---|---|---|---|---|---|---|\n");
    double sum1 = 0;
    for (int i = 0; i < 5; i++) {
        void *hw;
        hsd_mat w = rand_mat(HSD_DT_BF16, sh[i].rows, sh[i].cols, &hw);
        free(hw);
        float *x = rand_f32((size_t)16 * sh[i].cols);
        float *dx = dev_from(x, sizeof(float) * 16 * sh[i].cols),
              *dout = dev(sizeof(float) * 16 * sh[i].rows);
        void *dxh = dev((size_t)16 * sh[i].cols * 2);
        double med[8];
        /* default shape (16 warps x 2) n = 1, 8, 16; cuBLAS n = 1, 8; fixed shapes at n = 1 */
        const int cfg_n[8] = {1, 8, 16, 1, 8, 1, 1, 1}, cfg_v[8] = {0, 0, 0, 0, 0, 1, 2, 4};
        for (int c = 0; c < 8; c++) {
            hsd_cuda_use_cublas_gemv(cu, c == 3 || c == 4);
            hsd_cuda_set_mma_variant(cu, cfg_v[c]);
            float t[21];
            for (int r = -3; r < 21; r++) {
                float ms;
                OK(hsd_cuda_timer_start(cu));
                OK(hsd_cuda_matmul(cu, dout, sh[i].rows, dx, cfg_n[c], &w, dxh));
                OK(hsd_cuda_timer_stop(cu, &ms));
                if (r >= 0) t[r] = ms;
            }
            qsort(t, 21, sizeof *t, cmp_f);
            med[c] = t[10];
        }
        hsd_cuda_use_cublas_gemv(cu, false);
        hsd_cuda_set_mma_variant(cu, 0);
        double bytes = (double)sh[i].rows * sh[i].cols * 2, gbs = bytes / (med[0] * 1e-3) / 1e9;
        printf("  %-18s shapes at n=1: 16 warps x 2 chunks %.4f ms, 8x4 %.4f, 4x4 %.4f, 8x2 %.4f\n",
               "", med[0], med[5], med[6], med[7]);
        mdf("| %s, block shapes at n=1 (16x2 default, 8x4, 4x4, 8x2) | %.4f / %.4f / %.4f / %.4f ms | "
            "| | | | | |\n",
            sh[i].name, med[0], med[5], med[6], med[7]);
        sum1 += med[0] * sh[i].per_step;
        printf("  %-18s %6d x %-5d  mma n=1 %.4f ms %5.0f GB/s (%3.0f%%)  n=8 %.2fx  n=16 %.2fx  "
               "cuBLAS n=1 %.4f ms, n=8 %.4f ms\n",
               sh[i].name, sh[i].rows, sh[i].cols, med[0], gbs, 100 * gbs / bw, med[1] / med[0],
               med[2] / med[0], med[3], med[4]);
        mdf("| %s (%d x %d) | %.4f ms | %.0f | %.0f%% | %.2fx | %.2fx | %.4f ms | %.4f ms |\n",
            sh[i].name, sh[i].rows, sh[i].cols, med[0], gbs, 100 * gbs / bw, med[1] / med[0],
            med[2] / med[0], med[3], med[4]);
        free(x);
        hsd_cuda_free(cu, dx), hsd_cuda_free(cu, dout), hsd_cuda_free(cu, dxh);
        hsd_cuda_free(cu, (void *)w.data);
    }
    printf("  sum over one decode step (each timed alone, launch gaps included): %.3f ms\n", sum1);
    mdf("| **sum over a decode step** (each product timed alone) | %.3f ms | | | | | | |\n", sum1);
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
    hsd_mat U = {HSD_DT_BF16, V, d, du, NULL};
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
    float t_idx[50], t_full[50], t_all[50], t_mma[50];
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
        float c3;
        OK(hsd_cuda_timer_start(cu));
        OK(hsd_cuda_matmul(cu, dout, V, dh, 1, &U, dxh));
        OK(hsd_cuda_timer_stop(cu, &c3));
        if (r >= 0) t_idx[r] = a, t_full[r] = b, t_all[r] = c2, t_mma[r] = c3;
    }
    qsort(t_idx, 50, sizeof(float), cmp_f);
    qsort(t_full, 50, sizeof(float), cmp_f);
    qsort(t_all, 50, sizeof(float), cmp_f);
    qsort(t_mma, 50, sizeof(float), cmp_f);
    double mi = t_idx[25], mf = t_full[25], ma = t_all[25], mm = t_mma[25];
    double gm = (double)total / (mm * 1e-3) / 1e9;
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
    printf("  full head, tensor-core product (the model's default): %.4f ms, %.0f GB/s (%.0f%%)\n",
           mm, gm, 100 * gm / bw);
    printf("  speed-up indexed vs full (%s): %.1fx %s\n", full_name, full / mi,
           full / mi >= 4 ? "(target >= 4x: met)" : "(target >= 4x: NOT met)");
    mdf("\n| LM head V=%d d=%d bf16 | time | GB/s | of copy BW |\n|---|---|---|---|\n", V, d);
    mdf("| indexed, k = %d | %.4f ms | %.0f | %.0f%% |\n", k, mi, gi, 100 * gi / bw);
    mdf("| full, cuBLAS GEMV | %.4f ms | %.0f | %.0f%% |\n", mf, gf, 100 * gf / bw);
    mdf("| full, indexed kernel over all rows | %.4f ms | %.0f | %.0f%% |\n", ma, ga,
        100 * ga / bw);
    mdf("| full, tensor-core product (model default) | %.4f ms | %.0f | %.0f%% |\n", mm, gm,
        100 * gm / bw);
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
    hsd_mat Wd = {HSD_DT_BF16, r, d, dwd, NULL}, Wu = {HSD_DT_BF16, V, r, dwu, NULL};
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

/* Decode attention alone at depth: one token over one layer's cache (hsd_cuda_attention, the
 * chunk and combine kernels), F32 and F16 caches, llama-3.2-1b (32/8 heads of 64) and
 * qwen3-0.6b (16/8 of 128) shapes; the K and V bytes it reads over the time, against the copy
 * bandwidth. */
static void bench_attention(double bw) {
    static const struct {
        const char *name;
        int32_t nh, nkv, hd;
    } shp[2] = {{"llama-3.2-1b", 32, 8, 64}, {"qwen3-0.6b", 16, 8, 128}};
    const int32_t depths[4] = {512, 2048, 8192, 32768};
    const hsd_dtype types[2] = {HSD_DT_F32, HSD_DT_F16};
    printf("\n== decode attention at depth (one token, one layer) ==\n");
    mdf("\n| decode attention, one token, one layer | cache | depth | time | K+V GB/s | of copy BW |\n|---|---|---|---|---|---|\n");
    for (int si = 0; si < 2; si++)
        for (int di = 0; di < 4; di++)
            for (int ti = 0; ti < 2; ti++) {
                const int32_t D = g_small ? depths[di] / 16 : depths[di], kv_dim = shp[si].nkv * shp[si].hd;
                const int32_t n_ctx = D + 1;
                const size_t eb = hsd_cuda_kv_elem_bytes(types[ti]), cb = (size_t)n_ctx * kv_dim * eb;
                void *kc = dev(cb), *vc = dev(cb);
                /* random finite values: F32 noise, or its F16 rounding */
                float *h = rand_f32((size_t)n_ctx * kv_dim);
                void *hc = malloc(cb);
                for (size_t i = 0; i < (size_t)n_ctx * kv_dim; i++)
                    if (types[ti] == HSD_DT_F16) ((uint16_t *)hc)[i] = hsd_fp32_to_fp16(h[i]);
                    else ((float *)hc)[i] = h[i];
                OK(hsd_cuda_upload(cu, kc, hc, cb));
                OK(hsd_cuda_upload(cu, vc, hc, cb));
                free(h), free(hc);
                float *q = rand_f32((size_t)shp[si].nh * shp[si].hd);
                float *dq = dev_from(q, sizeof(float) * shp[si].nh * shp[si].hd);
                float *dout = dev(sizeof(float) * shp[si].nh * shp[si].hd);
                int32_t meta[1] = {D};
                int32_t *dmeta = dev_from(meta, sizeof meta);
                hsd_cuda_attn_shape sh = {shp[si].nh, shp[si].nkv, shp[si].hd, n_ctx, 0, types[ti]};
                const size_t wb = hsd_cuda_attn_work_bytes(&sh, 1);
                void *dw = dev(wb);
                OK(hsd_cuda_attn_work_init(cu, dw, wb));
                OK(hsd_cuda_attention(cu, dout, dq, kc, vc, &sh, 1, dmeta, NULL, NULL, dw, wb));
                float t[21];
                for (int r = 0; r < 21; r++) {
                    OK(hsd_cuda_timer_start(cu));
                    OK(hsd_cuda_attention(cu, dout, dq, kc, vc, &sh, 1, dmeta, NULL, NULL, dw, wb));
                    OK(hsd_cuda_timer_stop(cu, &t[r]));
                }
                qsort(t, 21, sizeof *t, cmp_f);
                const double bytes = 2.0 * (D + 1) * kv_dim * eb, gbs = bytes / (t[10] * 1e-3) / 1e9;
                printf("  %-13s %s depth %6d: %8.4f ms  %6.0f GB/s (%2.0f%% of copy)\n", shp[si].name,
                       hsd_dtype_name(types[ti]), D, t[10], gbs, 100 * gbs / bw);
                mdf("| %s | %s | %d | %.4f ms | %.0f | %.0f%% |\n", shp[si].name, hsd_dtype_name(types[ti]), D,
                    t[10], gbs, 100 * gbs / bw);
                free(q);
                hsd_cuda_free(cu, kc), hsd_cuda_free(cu, vc), hsd_cuda_free(cu, dq), hsd_cuda_free(cu, dout);
                hsd_cuda_free(cu, dmeta), hsd_cuda_free(cu, dw);
            }
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
    check_invariance();
    check_head_norm();
    check_fused();
    check_attention();
    check_indexed_head();
    check_sampling();
    check_heads();
    check_model("tiny", HSD_DT_F32, TOL_F32);
    check_model("tiny-qwen2", HSD_DT_F32, TOL_F32);
    check_model("tiny-qwen3", HSD_DT_F32, TOL_F32);
    check_model("tiny-phi3", HSD_DT_F32, TOL_F32);
    check_model("small", HSD_DT_BF16, TOL_BF16);
    check_model_batch("tiny-qwen3", HSD_DT_F32, TOL_F32);
    check_model_batch("small", HSD_DT_BF16, TOL_BF16);
    printf("  %d checks passed, %d failed\n", n_pass, n_fail);
    mdf("\n%d checks passed, %d failed.\n", n_pass, n_fail);

    if (!do_bw) goto done;
    double bw = copy_bandwidth();
    printf("\n== device copy bandwidth (cudaMemcpy D2D, read + write) ==\n  %.0f GB/s\n", bw);
    mdf("\nDevice copy bandwidth (cudaMemcpy D2D, 1 GiB, read + write counted): %.0f GB/s.\n", bw);
    if (do_1b) bench_shapes(bw);
    if (do_1b) bench_1b(bw);
    if (do_head) bench_head(bw);
    if (do_1b) bench_attention(bw);
done:
    if (md) fclose(md);
    hsd_cuda_close(cu);
    return n_fail ? 1 : 0;
}

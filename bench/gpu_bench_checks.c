/* hsd_gpu_bench's kernel checks: elementwise ops, matmul, the fused kernels and attention,
 * each CUDA kernel of kernels/cuda_ops.h against its CPU reference (kernels/cpu_ops.c) on
 * fresh random inputs. */
#include "lib/base/rng.h"
#include "bench/gpu_bench.h"

/* ---- kernel checks ------------------------------------------------------------------ */

void check_elementwise(void) {
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
        hsd_mat hm = {types[k], 1000, 96, hemb, NULL};
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

void check_matmul(void) {
    const hsd_dtype types[3] = {HSD_DT_F32, HSD_DT_BF16, HSD_DT_F16};
    /* j = 0, 4, 5: the default, batch-invariant products (tensor cores for F16/BF16, the
     * warp-per-row GEMV once per token for F32) at n = 1, 7 and 37 (three token tiles);
     * j = 1, 2: cuBLAS (HSD_CUDA_GEMV=cublas); j = 3: the fp32 warp GEMM (HSD_CUDA_GEMM=warp).
     * 1000 rows and 2056 columns: neither a multiple of the tiles, so the edges are checked. */
    const int32_t rows = 1000, cols = 2056, ns[6] = {1, 1, 7, 7, 7, 37};
    for (int k = 0; k < 3; k++) {
        void *hw;
        hsd_mat w = rand_mat(types[k], rows, cols, &hw);
        hsd_mat hm = {types[k], rows, cols, hw, NULL};
        for (int j = 0; j < 6; j++) {
            int32_t n = ns[j];
            hsd_cuda_use_cublas_gemv(cu, j == 1 || j == 2);
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
                     j == 3                ? "warp GEMM"
                     : j == 1 || j == 2    ? "cuBLAS"
                     : types[k] == HSD_DT_F32 ? "GEMV per token"
                                           : "mma, invariant",
                     hsd_dtype_name(types[k]), n);
            /* fp32 x: the GEMV and the warp GEMM; narrowed x (bf16/f16 limit): cuBLAS and the
             * tensor cores, as the CPU's BF16 kernel narrows it too */
            report(name, rel_err(got, want, (size_t)n * rows),
                   types[k] == HSD_DT_F32 || j == 3 ? TOL_F32 : TOL_BF16);
            free(got), free(x), free(want), free(scratch);
            hsd_cuda_free(cu, dx), hsd_cuda_free(cu, dout), hsd_cuda_free(cu, dxh);
        }
        hsd_cuda_use_cublas_gemv(cu, false);
        hsd_cuda_use_warp_gemm(cu, false);
        free(hw);
        hsd_cuda_free(cu, (void *)w.data);
    }
}

/* Qwen3's per-head q/k norm against hsd_rmsnorm on each head. */
void check_head_norm(void) {
    const int32_t nh = 8, nkv = 2, hd = 128, n = 3, W = (nh + 2 * nkv) * hd;
    hsd_cuda_attn_shape shape = {nh, nkv, hd, 16, 0, HSD_DT_F32};
    float *qkv = rand_f32((size_t)n * W), *qn = rand_f32(hd), *kn = rand_f32(hd);
    float *want = malloc(sizeof(float) * n * W);
    memcpy(want, qkv, sizeof(float) * n * W);
    for (int32_t t = 0; t < n; t++)
        for (int32_t h = 0; h < nh + nkv; h++) {
            float *x = want + (size_t)t * W + (size_t)h * hd;
            hsd_rmsnorm(x, x, h < nh ? qn : kn, hd, 1e-6f);
        }
    float *d = dev_from(qkv, sizeof(float) * n * W), *dq = dev_from(qn, sizeof(float) * hd),
          *dk = dev_from(kn, sizeof(float) * hd);
    OK(hsd_cuda_head_norm(cu, d, n, &shape, dq, dk, 1e-6f));
    float *got = host_from(d, (size_t)n * W);
    report("head_norm (Qwen3 q/k per-head RMSNorm)", rel_err(got, want, (size_t)n * W), TOL_F32);
    free(qkv), free(qn), free(kn), free(want), free(got);
    hsd_cuda_free(cu, d), hsd_cuda_free(cu, dq), hsd_cuda_free(cu, dk);
}

/* Batch invariance of the default products, which greedy SD = AR rests on: the result of a
 * token must be bit-identical whether it is alone (a decode step), the first of n = 2..17
 * (a verification), or inside a batch of 40 (a first round with its prompt), also when the
 * product adds into its output. Counted in values; every one must be equal. */
void check_invariance(void) {
    const hsd_dtype types[3] = {HSD_DT_F32, HSD_DT_BF16, HSD_DT_F16};
    const int32_t rows = 1000, cols = 2056, N = 40;
    for (int k = 0; k < 3; k++) {
        void *hw;
        hsd_mat w = rand_mat(types[k], rows, cols, &hw);
        float *x = rand_f32((size_t)N * cols), *base = rand_f32((size_t)N * rows);
        float *dx = dev_from(x, sizeof(float) * N * cols), *dall = dev(sizeof(float) * N * rows),
              *dpart = dev(sizeof(float) * N * rows);
        void *dxh = dev((size_t)N * cols * 2);
        for (int add = 0; add < 2; add++) {
            /* the reference: all N tokens in one product */
            if (add) OK(hsd_cuda_upload(cu, dall, base, sizeof(float) * N * rows));
            OK((add ? hsd_cuda_matmul_add : hsd_cuda_matmul)(cu, dall, rows, dx, N, &w, dxh));
            float *all = host_from(dall, (size_t)N * rows);
            long n_eq = 0, n_tot = 0;
            /* prefixes of n tokens, then each token alone at its own offset */
            for (int32_t n = 1; n <= 17 + N; n++) {
                int32_t off = n <= 17 ? 0 : n - 18, cnt = n <= 17 ? n : 1;
                if (add)
                    OK(hsd_cuda_upload(cu, dpart + (size_t)off * rows, base + (size_t)off * rows,
                                       sizeof(float) * cnt * rows));
                OK((add ? hsd_cuda_matmul_add : hsd_cuda_matmul)(
                    cu, dpart + (size_t)off * rows, rows, dx + (size_t)off * cols, cnt, &w, dxh));
                float *got = host_from(dpart + (size_t)off * rows, (size_t)cnt * rows);
                for (size_t i = 0; i < (size_t)cnt * rows; i++, n_tot++)
                    n_eq += !memcmp(&got[i], &all[(size_t)off * rows + i], sizeof(float));
                free(got);
            }
            char name[96];
            snprintf(name, sizeof name, "batch invariance %s%s, n = 1..17, 40, alone",
                     hsd_dtype_name(types[k]), add ? " (adding)" : "");
            bool pass = n_eq == n_tot;
            pass ? n_pass++ : n_fail++;
            printf("  %-44s %s  %ld/%ld values bit-identical\n", name, pass ? "PASS" : "FAIL", n_eq,
                   n_tot);
            mdf("| %s | %s | %ld/%ld values bit-identical | exact |\n", name,
                pass ? "PASS" : "**FAIL**", n_eq, n_tot);
            free(all);
        }
        free(hw), free(x), free(base);
        hsd_cuda_free(cu, dx), hsd_cuda_free(cu, dall), hsd_cuda_free(cu, dpart),
            hsd_cuda_free(cu, dxh);
        hsd_cuda_free(cu, (void *)w.data);
    }
}

/* The fused kernels of the CUDA model: q/k/v post-processing (bias, rope, cache writes),
 * SwiGLU over stacked gate/up rows, and products that add into their output. */
void check_fused(void) {
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
    hsd_cuda_attn_shape shape = {nh, nkv, hd, n_ctx, 0, HSD_DT_F32};
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

    /* out += W·x: one token and five through the default (tensor-core, invariant) product,
     * five through cuBLAS, five through the fp32 warp GEMM */
    const int32_t rows = 1024, cols = 2048;
    void *hw;
    hsd_mat w = rand_mat(HSD_DT_BF16, rows, cols, &hw);
    hsd_mat hm = {HSD_DT_BF16, rows, cols, hw, NULL};
    for (int32_t pass = 0; pass < 4; pass++) { /* n = 1 mma, 5 cuBLAS, 5 warp GEMM, 5 mma */
        int32_t nn = pass == 0 ? 1 : 5;
        hsd_cuda_use_cublas_gemv(cu, pass == 1);
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
                             : ", mma");
        /* only the warp GEMM keeps x in fp32 */
        report(name, rel_err(g, ref, (size_t)nn * rows), pass == 2 ? TOL_F32 : TOL_BF16);
        free(x), free(y), free(ref), free(scratch), free(g);
        hsd_cuda_free(cu, dx), hsd_cuda_free(cu, dy), hsd_cuda_free(cu, dxh);
    }
    hsd_cuda_use_warp_gemm(cu, false);
    hsd_cuda_use_cublas_gemv(cu, false);
    free(hw);
    hsd_cuda_free(cu, (void *)w.data);
}

/* Attention over a cache of L rows plus n new ones, chain and tree, against the CPU path's
 * kernels (what the attention in models/layer.c does). */
/* A cache of n floats as the device stores it (elements of t, rounded to nearest even), and
 * the floats it then holds (what the CPU reference reads). */
static void *kv_cache_host(const float *x, size_t n, hsd_dtype t, float *rounded) {
    const size_t eb = hsd_cuda_kv_elem_bytes(t);
    uint8_t *c = malloc(n * eb);
    for (size_t i = 0; i < n; i++) {
        if (t == HSD_DT_F16) {
            ((uint16_t *)c)[i] = hsd_fp32_to_fp16(x[i]);
            rounded[i] = hsd_fp16_to_fp32(((uint16_t *)c)[i]);
        } else if (t == HSD_DT_BF16) {
            ((uint16_t *)c)[i] = hsd_fp32_to_bf16(x[i]);
            rounded[i] = hsd_bf16_to_fp32(((uint16_t *)c)[i]);
        } else {
            ((float *)c)[i] = rounded[i] = x[i];
        }
    }
    return c;
}

typedef struct attn_case {
    const char *name;
    hsd_dtype type;
    int32_t nh, nkv, hd, n_ctx, L, n, window;
    bool tree;
    int32_t work_tokens; /* the work buffer holds this many tokens' chunks (0: all n) */
} attn_case;

/* One attention call on the device (new rows stored by kv_store) against the CPU's float
 * scores, softmax and accumulation over the rounded cache. Returns the device output (n
 * q_dim floats) for the invariance checks. */
static float *attn_run(const attn_case *c, uint64_t seed, bool check) {
    const int32_t kv_dim = c->nkv * c->hd, q_dim = c->nh * c->hd, n = c->n, L = c->L;
    hsd_rng saved = rng;
    /* the same inputs for every run of a case, whatever its n: one stream per array */
    float *in[5];
    const size_t sizes[5] = {(size_t)c->n_ctx * kv_dim, (size_t)c->n_ctx * kv_dim, (size_t)n * kv_dim,
                             (size_t)n * kv_dim, (size_t)n * q_dim};
    for (int k = 0; k < 5; k++) hsd_rng_init(&rng, seed, (uint64_t)k), in[k] = rand_f32(sizes[k]);
    float *kc = in[0], *vc = in[1], *knew = in[2], *vnew = in[3], *q = in[4];
    rng = saved;
    float *kr = malloc(sizeof(float) * c->n_ctx * kv_dim), *vr = malloc(sizeof(float) * c->n_ctx * kv_dim);
    const size_t eb = hsd_cuda_kv_elem_bytes(c->type);
    void *hk = kv_cache_host(kc, (size_t)c->n_ctx * kv_dim, c->type, kr);
    void *hv = kv_cache_host(vc, (size_t)c->n_ctx * kv_dim, c->type, vr);
    void *dkc = dev_from(hk, eb * c->n_ctx * kv_dim), *dvc = dev_from(hv, eb * c->n_ctx * kv_dim);
    float *dkn = dev_from(knew, sizeof(float) * n * kv_dim), *dvn = dev_from(vnew, sizeof(float) * n * kv_dim);
    float *dq = dev_from(q, sizeof(float) * n * q_dim), *dout = dev(sizeof(float) * n * q_dim);
    /* a tree: token i's parent is (i - 1) / 2 (a binary tree), its ancestor list as
     * build_tree makes it: root first, itself last */
    int32_t *meta = calloc((size_t)2 + n + (size_t)n * (n + 1), sizeof(int32_t));
    int32_t *off = meta + 1, *anc = meta + 2 + n, o = 0;
    meta[0] = L;
    for (int32_t i = 0; i < n; i++) {
        int32_t d = 0;
        for (int32_t k = i; k > 0; k = (k - 1) / 2) d++;
        off[i] = o;
        for (int32_t k = i, j = d; j >= 0; k = (k - 1) / 2, j--) anc[o + j] = k;
        o += d + 1;
    }
    off[n] = o;
    int32_t *dmeta = dev_from(meta, sizeof(int32_t) * (2 + n + o));
    OK(hsd_cuda_kv_store(cu, dkc, c->type, dkn, n, kv_dim, dmeta));
    OK(hsd_cuda_kv_store(cu, dvc, c->type, dvn, n, kv_dim, dmeta));
    hsd_cuda_attn_shape shape = {c->nh, c->nkv, c->hd, c->n_ctx, c->window, c->type};
    const size_t wb = hsd_cuda_attn_work_bytes(&shape, c->work_tokens > 0 ? c->work_tokens : n);
    void *dwork = dev(wb);
    OK(hsd_cuda_attn_work_init(cu, dwork, wb));
    OK(hsd_cuda_attention(cu, dout, dq, dkc, dvc, &shape, n, dmeta, c->tree ? dmeta + 2 + n : NULL,
                          c->tree ? dmeta + 1 : NULL, dwork, wb));
    float *got = host_from(dout, (size_t)n * q_dim);
    if (check) {
        /* the new rows rounded as the device stores them, then the reference */
        free(kv_cache_host(knew, (size_t)n * kv_dim, c->type, kr + (size_t)L * kv_dim));
        free(kv_cache_host(vnew, (size_t)n * kv_dim, c->type, vr + (size_t)L * kv_dim));
        float *want = malloc(sizeof(float) * n * q_dim), *att = malloc(sizeof(float) * (c->n_ctx + 16));
        int32_t *vis = malloc(sizeof(int32_t) * (c->n_ctx + 16));
        for (int32_t t = 0; t < n; t++)
            for (int32_t h = 0; h < c->nh; h++) {
                const int32_t g = h / (c->nh / c->nkv);
                int32_t n_new = c->tree ? off[t + 1] - off[t] : t + 1, nv = L + n_new;
                int32_t lo = c->window > 0 && nv > c->window ? nv - c->window : 0;
                for (int32_t i = lo; i < nv; i++) vis[i - lo] = i < L ? i : L + (c->tree ? anc[off[t] + i - L] : i - L);
                hsd_attn_scores(att, q + (size_t)t * q_dim + h * c->hd, kr + g * c->hd, kv_dim, vis, nv - lo,
                                c->hd, 1.0f / sqrtf((float)c->hd));
                hsd_softmax(att, nv - lo);
                hsd_attn_accum(want + (size_t)t * q_dim + h * c->hd, att, vr + g * c->hd, kv_dim, vis, nv - lo, c->hd);
            }
        report(c->name, rel_err(got, want, (size_t)n * q_dim), TOL_F32);
        free(want), free(att), free(vis);
        /* kv_store's rounding: the stored rows read back as the reference rounded them */
        if (c->type != HSD_DT_F32 && !c->tree && c->window == 0) {
            float *back = malloc(sizeof(float) * n * kv_dim);
            uint8_t *raw = malloc(eb * n * kv_dim);
            OK(hsd_cuda_download(cu, raw, (uint8_t *)dkc + eb * (size_t)L * kv_dim, eb * n * kv_dim));
            int same = 0;
            for (size_t i = 0; i < (size_t)n * kv_dim; i++) {
                uint16_t u = ((uint16_t *)raw)[i];
                back[i] = c->type == HSD_DT_F16 ? hsd_fp16_to_fp32(u) : hsd_bf16_to_fp32(u);
                same += back[i] == kr[(size_t)L * kv_dim + i];
            }
            char nm[160];
            snprintf(nm, sizeof nm, "kv_store %s: rounded to nearest even", hsd_dtype_name(c->type));
            report_ids(nm, same, n * kv_dim);
            free(back), free(raw);
        }
    }
    free(kc), free(vc), free(knew), free(vnew), free(q), free(kr), free(vr), free(hk), free(hv), free(meta);
    hsd_cuda_free(cu, dkc), hsd_cuda_free(cu, dvc), hsd_cuda_free(cu, dkn), hsd_cuda_free(cu, dvn);
    hsd_cuda_free(cu, dq), hsd_cuda_free(cu, dout), hsd_cuda_free(cu, dmeta), hsd_cuda_free(cu, dwork);
    return got;
}

void check_attention(void) {
    /* small shapes first (chain, tree, both under a sliding window), then depths to 4,096
     * with GQA 1, 4 and 8, a context whose chunks are not 128 (n_ctx 20,000: 384), and a
     * work buffer for fewer tokens than the call has */
    const bool sm = g_small;
    const attn_case cases[] = {
        {"attention f32, chain (4 new, GQA 4:1)", HSD_DT_F32, 8, 2, 64, 128, 37, 4, 0, false, 0},
        {"attention f32, token tree (6 new, GQA 4:1)", HSD_DT_F32, 8, 2, 64, 128, 37, 6, 0, true, 0},
        {"attention f32, chain, sliding window 20", HSD_DT_F32, 8, 2, 64, 128, 37, 4, 20, false, 0},
        {"attention f32, token tree, sliding window 20", HSD_DT_F32, 8, 2, 64, 128, 37, 6, 20, true, 0},
        {"attention f16, chain (4 new, GQA 4:1)", HSD_DT_F16, 8, 2, 64, 128, 37, 4, 0, false, 0},
        {"attention bf16, token tree (6 new, GQA 4:1)", HSD_DT_BF16, 8, 2, 64, 128, 37, 6, 0, true, 0},
        {"attention f16, head_dim 6 (2-element loads)", HSD_DT_F16, 4, 2, 6, 300, 200, 3, 0, false, 0},
        {"attention f16, depth 4,095 + 1, GQA 1:1, hd 128", HSD_DT_F16, 8, 8, 128, 4096, sm ? 700 : 4095, 1, 0, false, 0},
        {"attention f16, depth 4,093 + 3, GQA 4:1, hd 64", HSD_DT_F16, 32, 8, 64, 4096, sm ? 700 : 4093, 3, 0, false, 0},
        {"attention f16, depth 4,000 + 1, GQA 8:1, hd 128", HSD_DT_F16, 64, 8, 128, 4096, sm ? 700 : 4000, 1, 0, false, 0},
        {"attention f16, depth 3,000, tree of 7, GQA 8:1", HSD_DT_F16, 16, 2, 128, 4096, sm ? 500 : 3000, 7, 0, true, 0},
        {"attention f16, depth 3,000, window 1,000, tree of 7", HSD_DT_F16, 16, 2, 128, 4096, sm ? 500 : 3000, 7, 1000, true, 0},
        {"attention bf16, n_ctx 20,000 (chunks of 384), depth 12,345 + 3", HSD_DT_BF16, 8, 2, 128, 20000, sm ? 900 : 12345, 3, 0, false, 0},
        {"attention f16, 9 tokens through a work buffer for 2", HSD_DT_F16, 8, 2, 64, 1024, 500, 9, 0, false, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) free(attn_run(&cases[i], 1000 + i, true));

    /* a row's output depends only on its query and visible slots (kernels/cuda_ops.h): token
     * 0 of a chain of 5 = the same token alone = token 0 of a tree whose node 0 is the root;
     * and the same 5 tokens through a work buffer for 1 token at a time */
    attn_case c = {"", HSD_DT_F16, 16, 4, 128, 4096, sm ? 600 : 2500, 5, 0, false, 0};
    float *chain = attn_run(&c, 77, false);
    c.work_tokens = 1;
    float *grouped = attn_run(&c, 77, false);
    c.work_tokens = 0, c.tree = true;
    float *tree = attn_run(&c, 77, false);
    c.tree = false, c.n = 1;
    float *alone = attn_run(&c, 77, false);
    const int32_t q_dim = 16 * 128;
    int same = 0;
    for (int32_t i = 0; i < 5 * q_dim; i++) same += chain[i] == grouped[i];
    report_ids("attention f16: 5 tokens in groups of 1 = in one call (bit-identical)", same, 5 * q_dim);
    same = 0;
    for (int32_t i = 0; i < q_dim; i++) same += (chain[i] == alone[i]) + (tree[i] == alone[i]);
    report_ids("attention f16: a token alone = in a chain of 5 = as a tree root (bit-identical)", same, 2 * q_dim);
    free(chain), free(grouped), free(tree), free(alone);
}

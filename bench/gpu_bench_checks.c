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
    hsd_cuda_attn_shape shape = {nh, nkv, hd, 16, 0};
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
    hsd_cuda_attn_shape shape = {nh, nkv, hd, n_ctx, 0};
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
void check_attention(void) {
    const int32_t nh = 8, nkv = 2, hd = 64, n_ctx = 128, L = 37, kv_dim = nkv * hd, q_dim = nh * hd;
    const int32_t parents[6] = {-1, 0, 0, 1, 2, -1};
    for (int variant = 0; variant < 4; variant++) {
        /* chain, tree, then both under a sliding window of 20 positions */
        const int tree = variant & 1;
        const int32_t n = tree ? 6 : 4, window = variant >= 2 ? 20 : 0;
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
        hsd_cuda_attn_shape shape = {nh, nkv, hd, n_ctx, window};
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
                int32_t n_new = tree ? off[t + 1] - off[t] : t + 1, nv = L + n_new;
                /* the cache rows the token sees, oldest first: the cache, then its new
                 * predecessors or ancestors; a window keeps the last `window` of them */
                int32_t vis[128], lo = window > 0 && nv > window ? nv - window : 0;
                for (int32_t i = lo; i < nv; i++)
                    vis[i - lo] = i < L ? i : L + (tree ? anc[off[t] + i - L] : i - L);
                hsd_attn_scores(att, qv, kb, kv_dim, vis, nv - lo, hd, 1.0f / sqrtf((float)hd));
                hsd_softmax(att, nv - lo);
                hsd_attn_accum(ov, att, vb, kv_dim, vis, nv - lo, hd);
                (void)tmp;
            }
        float *got = host_from(dout, (size_t)n * q_dim);
        const char *names[4] = {"attention f32, chain (4 new, GQA 4:1)",
                                "attention f32, token tree (6 new, GQA 4:1)",
                                "attention f32, chain, sliding window 20",
                                "attention f32, token tree, sliding window 20"};
        report(names[variant],
               rel_err(got, want, (size_t)n * q_dim), TOL_F32);
        free(got);
        /* the cache rows written by kv_store */
        float *gk = host_from(dkc, (size_t)n_ctx * kv_dim);
        if (variant < 2)
            report(tree ? "kv_store (tree)" : "kv_store (chain)",
                   rel_err(gk, kc, (size_t)(L + n) * kv_dim), TOL_F32);
        free(gk);
        if (tree && variant < 2) { /* keep the path 0, 2, 4 of the tree, as the engine does after verifying */
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

/* hsd_gpu_bench's head, sampling and whole-model checks: the indexed head and the draft heads
 * against plain loops, the sampling steps against a CPU sampler, and whole models (CPU
 * transformer vs CUDA model). */
#include "lib/base/rng.h"
#include "hsd_tools.h"
#include "bench/gpu_bench.h"

/* The indexed head against a plain loop over the selected rows; with no index list against
 * the cuBLAS full head too (speculative with k = V equals the full head). */
void check_indexed_head(void) {
    const hsd_dtype types[3] = {HSD_DT_F32, HSD_DT_BF16, HSD_DT_F16};
    const int32_t V = 5000, ds[2] = {4096, 1000},
                  k = 777; /* 1000: not a multiple of 8 (scalar path) */
    for (int di = 0; di < 2; di++)
        for (int ti = 0; ti < 3; ti++) {
            int32_t d = ds[di];
            void *hu;
            hsd_mat U = rand_mat(types[ti], V, d, &hu);
            hsd_mat hm = {types[ti], V, d, hu, NULL};
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
void check_heads(void) {
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
    hsd_mat hWd = {HSD_DT_BF16, r, d, hdown, NULL}, hWu = {HSD_DT_BF16, Vs, r, hup, NULL},
            hU = {HSD_DT_BF16, Vs, d, hu, NULL};
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

void check_sampling(void) {
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

void check_model(const char *shape, hsd_dtype dt, double tol) {
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
    /* the same tree again, twice: captured as a graph the second time, replayed the third;
     * both must give the eager forward's logits bit for bit */
    float *lt = malloc(sizeof(float) * 5 * V);
    long t_eq = 0;
    for (int rep = 0; rep < 2; rep++) {
        OK(g.kv_truncate(g.ctx, 9));
        OK(g.forward(g.ctx, toks + 9, 5, parents, NULL, 5, lt));
        for (size_t k = 0; k < (size_t)5 * V; k++) t_eq += !memcmp(&lt[k], &lg[k], sizeof(float));
    }
    free(lt);
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
    snprintf(name, sizeof name, "model %s %s: tree from its graph = eager", shape,
             hsd_dtype_name(dt));
    report_ids(name, (int)t_eq, 2 * 5 * V);
    snprintf(name, sizeof name, "model %s %s: kv_keep + 4 decode steps", shape, hsd_dtype_name(dt));
    report(name, ed, tol);
    snprintf(name, sizeof name, "model %s %s: truncate + rows subset", shape, hsd_dtype_name(dt));
    report(name, er, tol);
    free(lc), free(lg);
    g.free(g.ctx);
    hsd_tf_free(tf);
    hsd_synth_free(sm);
}

/* Sequence slots: a batched forward over three slots (chains of different lengths, then a
 * chain, a single token and a token tree together), kv_keep on one slot and decode steps,
 * against the CPU transformer's batched forward, and every slot's logits bit-identical to its
 * own forward alone on a second device model (the products are batch-invariant). */
void check_model_batch(const char *shape, hsd_dtype dt, double tol) {
    hsd_synth_model *sm;
    hsd_transformer *tf;
    hsd_model_iface c, g, g1;
    OK(hsd_synth_create(shape, dt, hsd_rng_u32(&rng), &sm));
    hsd_model_params p = hsd_model_default_params();
    p.n_ctx = 64;
    p.n_seq = 3;
    OK(hsd_synth_to_transformer(sm, &p, &tf));
    hsd_tf_iface(tf, &c);
    char desc[512];
    OK(hsd_cuda_model_create(tf, &p, &g, desc, sizeof desc));
    OK(hsd_cuda_model_create(tf, &p, &g1, desc, sizeof desc));
    const int32_t V = c.vocab_size(c.ctx);
    int32_t toks[32];
    for (int i = 0; i < 32; i++) toks[i] = (int32_t)(hsd_rng_u32(&rng) % V);
    float *lc = malloc(sizeof(float) * 32 * V), *lg = malloc(sizeof(float) * 32 * V),
          *l1 = malloc(sizeof(float) * 32 * V);
    double worst = 0;
    long n_eq = 0, n_tot = 0;
    /* the batch on the CPU and the device, then each entry alone on the second device model */
#define BATCH(seqs, n_seqs, rows_total)                                                            \
    do {                                                                                           \
        OK(c.forward_batch(c.ctx, seqs, n_seqs, lc));                                              \
        OK(g.forward_batch(g.ctx, seqs, n_seqs, lg));                                              \
        size_t off_ = 0;                                                                           \
        for (int i_ = 0; i_ < n_seqs; i_++) {                                                      \
            OK(g1.seq_select(g1.ctx, seqs[i_].seq));                                               \
            OK(g1.forward(g1.ctx, seqs[i_].tokens, seqs[i_].n, seqs[i_].parents, seqs[i_].rows,    \
                          seqs[i_].n_rows, l1 + off_));                                            \
            off_ += (size_t)seqs[i_].n_rows * V;                                                   \
        }                                                                                          \
        double e_ = rel_err(lg, lc, (size_t)(rows_total) * V);                                     \
        worst = e_ > worst ? e_ : worst;                                                           \
        for (size_t k_ = 0; k_ < (size_t)(rows_total) * V; k_++, n_tot++)                          \
            n_eq += !memcmp(&lg[k_], &l1[k_], sizeof(float));                                      \
    } while (0)
    const hsd_model_batch_seq a[3] = {{sizeof(hsd_model_batch_seq), 0, toks, 5, NULL, NULL, 5},
                                      {sizeof(hsd_model_batch_seq), 1, toks + 5, 3, NULL, NULL, 3},
                                      {sizeof(hsd_model_batch_seq), 2, toks + 8, 7, NULL, NULL, 7}};
    BATCH(a, 3, 15);
    const int32_t parents[4] = {-1, 0, 0, 1}, row1[1] = {1};
    const hsd_model_batch_seq b[3] = {{sizeof(hsd_model_batch_seq), 2, toks + 15, 4, parents, NULL, 4},
                                      {sizeof(hsd_model_batch_seq), 0, toks + 19, 2, NULL, row1, 1},
                                      {sizeof(hsd_model_batch_seq), 1, toks + 21, 1, NULL, NULL, 1}};
    BATCH(b, 3, 6);
    /* slot 2 keeps the tree path 0, 1, 3, then decodes alone (its graph) */
    const int32_t keep[3] = {0, 1, 3};
    OK(c.seq_select(c.ctx, 2));
    OK(g.seq_select(g.ctx, 2));
    OK(g1.seq_select(g1.ctx, 2));
    OK(c.kv_keep(c.ctx, 7, keep, 3));
    OK(g.kv_keep(g.ctx, 7, keep, 3));
    OK(g1.kv_keep(g1.ctx, 7, keep, 3));
    for (int s = 0; s < 3; s++) {
        const hsd_model_batch_seq d[1] = {{sizeof(hsd_model_batch_seq), 2, toks + 22 + s, 1, NULL, NULL, 1}};
        BATCH(d, 1, 1);
    }
#undef BATCH
    char name[96];
    snprintf(name, sizeof name, "model %s %s, 3 slots: batches vs CPU", shape, hsd_dtype_name(dt));
    report(name, worst, tol);
    snprintf(name, sizeof name, "model %s %s, 3 slots: batch = each slot alone", shape,
             hsd_dtype_name(dt));
    bool pass = n_eq == n_tot;
    pass ? n_pass++ : n_fail++;
    printf("  %-44s %s  %ld/%ld logits bit-identical\n", name, pass ? "PASS" : "FAIL", n_eq, n_tot);
    mdf("| %s | %s | %ld/%ld logits bit-identical | exact |\n", name, pass ? "PASS" : "**FAIL**",
        n_eq, n_tot);
    free(lc), free(lg), free(l1);
    g.free(g.ctx), g1.free(g1.ctx);
    hsd_tf_free(tf);
    hsd_synth_free(sm);
}

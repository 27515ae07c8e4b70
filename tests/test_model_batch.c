/* Multi-sequence forward (hsd_model_params.n_seq, hsd_model_forward_batch): a batch over
 * several sequence slots gives the logits of single-sequence forwards of the same tokens, for
 * chains of different lengths, token trees, row subsets and slots listed in any order; the
 * slots' caches are independent (truncate / kv_keep per slot); a failing batch changes no
 * slot; a caller's model without forward_batch goes through the per-slot fallback.
 * Fixtures as in test_model_forward.c (synthetic shapes in f32, q8_0, bf16 and the real
 * stories260K); "synth small f32" with a 36-row batch takes the OpenBLAS sgemm path while
 * each single-sequence forward (< 32 rows) takes the row kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "lib/base/rng.h"
#include "models/synth.h"
#include "tests/testutil.h"

#define N_SEQ 4

typedef struct fixture {
    const char *label;
    hsd_model *batch, *ref; /* batch: N_SEQ slots; ref: one slot, same weights */
    hsd_synth_model *synth;
} fixture;

static hsd_model *wrap_tf(hsd_transformer *tf) {
    hsd_model_iface it = {HSD_MODEL_IFACE_INIT};
    hsd_tf_iface(tf, &it);
    hsd_model *m;
    assert_int_equal(hsd_model_from_iface(&it, &m), HSD_OK);
    return m;
}

#define N_FIXTURES 8

static bool open_fixture(int which, fixture *f) {
    memset(f, 0, sizeof *f);
    static const char *shapes[] = {"tiny", "tiny-qwen2", "tiny", "tiny-qwen2", "", "small",
                                   "tiny-qwen2", "small"};
    static const hsd_dtype types[] = {HSD_DT_F32,  HSD_DT_F32, HSD_DT_Q8_0, HSD_DT_BF16,
                                      HSD_DT_F32,  HSD_DT_F32, HSD_DT_BF16, HSD_DT_BF16};
    static const char *labels[] = {"synth tiny f32",  "synth tiny-qwen2 f32",
                                   "synth tiny q8_0", "synth tiny-qwen2 bf16",
                                   "stories260K",     "synth small f32",
                                   "synth tiny-qwen2 bf16, Q8_0 KV cache",
                                   "synth small bf16, Q4_0 KV cache (rotated: head_dim 64)"};
    hsd_model_params pb = hsd_model_default_params(), pr = hsd_model_default_params();
    pb.n_seq = N_SEQ;
    pb.n_threads = pr.n_threads = 1;
    /* the sgemm fixture's tolerance measures sgemm against the row kernels in fp32; an F16
     * cache would round two nearly equal keys apart and measure that rounding instead (the
     * other fixtures are bit-identical with the default F16 cache) */
    if (which == 5) pb.kv_type = pr.kv_type = HSD_KV_F32;
    if (which == 6) pb.kv_type = pr.kv_type = HSD_KV_Q8_0; /* a quantised cache, the same bits */
    if (which == 7) pb.kv_type = pr.kv_type = HSD_KV_Q4_0;
    f->label = labels[which];
    if (which == 4) {
        const char *p = hsd_test_path("models/stories260K/stories260K.bin");
        if (!hsd_test_require(p)) return false;
        assert_int_equal(hsd_model_load(p, &pb, &f->batch), HSD_OK);
        assert_int_equal(hsd_model_load(p, &pr, &f->ref), HSD_OK);
        return true;
    }
    assert_int_equal(hsd_synth_create(shapes[which], types[which], 7 + which, &f->synth), HSD_OK);
    hsd_transformer *tb, *tr;
    assert_int_equal(hsd_synth_to_transformer(f->synth, &pb, &tb), HSD_OK);
    assert_int_equal(hsd_synth_to_transformer(f->synth, &pr, &tr), HSD_OK);
    f->batch = wrap_tf(tb);
    f->ref = wrap_tf(tr);
    return true;
}

static void close_fixture(fixture *f) {
    hsd_model_free(f->batch);
    hsd_model_free(f->ref);
    hsd_synth_free(f->synth);
}

static double rel_err(const float *a, const float *b, size_t n) {
    double mx = 0, scale = 1e-6;
    for (size_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return mx / scale;
}

static void random_tokens(hsd_rng *r, int32_t *t, int n, int32_t V) {
    for (int i = 0; i < n; i++) t[i] = (int32_t)(hsd_rng_u32(r) % (uint32_t)V);
}

/* Logits of one single-sequence forward on the reference model after `hist` (fed as one
 * chain, no logits): what the batch entry must reproduce. */
static void ref_forward(hsd_model *ref, const int32_t *hist, int32_t n_hist,
                        const hsd_model_batch_seq *e, float *out) {
    assert_int_equal(hsd_model_kv_truncate(ref, 0), HSD_OK);
    if (n_hist) assert_int_equal(hsd_model_forward(ref, hist, n_hist, NULL, NULL, 0, NULL), HSD_OK);
    assert_int_equal(hsd_model_forward(ref, e->tokens, e->n, e->parents, e->rows, e->n_rows, out),
                     HSD_OK);
}

static void test_chains_equal_single(void **state) {
    (void)state;
    for (int w = 0; w < N_FIXTURES; w++) {
        fixture f;
        if (!open_fixture(w, &f)) continue;
        int32_t V = hsd_model_vocab_size(f.batch);
        assert_int_equal(hsd_model_n_seq(f.batch), N_SEQ);
        assert_int_equal(hsd_model_n_seq(f.ref), 1);
        hsd_rng r;
        hsd_rng_init(&r, 21, (uint64_t)w);
        /* round 1: prompts of different lengths on slots 0, 1, 3 (all rows) */
        int32_t pre[3][17], plen[3] = {5, 17, 2}, slot[3] = {0, 1, 3};
        for (int i = 0; i < 3; i++) random_tokens(&r, pre[i], plen[i], V);
        hsd_model_batch_seq b1[3];
        for (int i = 0; i < 3; i++)
            b1[i] = (hsd_model_batch_seq){sizeof(hsd_model_batch_seq), slot[i], pre[i], plen[i], NULL, NULL, plen[i]};
        float *lg = malloc((size_t)40 * V * sizeof(float)),
              *want = malloc((size_t)40 * V * sizeof(float));
        assert_int_equal(hsd_model_forward_batch(f.batch, b1, 3, lg), HSD_OK);
        double worst = 0;
        size_t off = 0;
        for (int i = 0; i < 3; i++) {
            ref_forward(f.ref, NULL, 0, &b1[i], want);
            double e = rel_err(lg + off, want, (size_t)plen[i] * V);
            worst = fmax(worst, e);
            off += (size_t)plen[i] * V;
        }
        for (int i = 0; i < 3; i++) {
            assert_int_equal(hsd_model_seq_select(f.batch, slot[i]), HSD_OK);
            assert_int_equal(hsd_model_kv_len(f.batch), plen[i]);
        }
        assert_int_equal(hsd_model_seq_select(f.batch, 2), HSD_OK);
        assert_int_equal(hsd_model_kv_len(f.batch), 0); /* untouched slot */
        assert_int_equal(hsd_model_seq_select(f.batch, 0), HSD_OK);
        /* round 2: 1 + 12 + 20 = 33 new tokens (sgemm for f32 "small"), slots out of order,
         * a row subset in any order and an entry without logits */
        int32_t nt[3] = {20, 1, 12}, order[3] = {2, 0, 1}, toks[3][20], rows1[3] = {11, 0, 5};
        for (int i = 0; i < 3; i++) random_tokens(&r, toks[i], nt[i], V);
        hsd_model_batch_seq b2[3] = {
            {sizeof(hsd_model_batch_seq), slot[order[0]], toks[0], nt[0], NULL, NULL, nt[0]},
            {sizeof(hsd_model_batch_seq), slot[order[1]], toks[1], nt[1], NULL, NULL, 0},
            {sizeof(hsd_model_batch_seq), slot[order[2]], toks[2], nt[2], NULL, rows1, 3},
        };
        assert_int_equal(hsd_model_forward_batch(f.batch, b2, 3, lg), HSD_OK);
        off = 0;
        for (int i = 0; i < 3; i++) {
            int o = order[i];
            ref_forward(f.ref, pre[o], plen[o], &b2[i], want);
            double e = rel_err(lg + off, want, (size_t)b2[i].n_rows * V);
            worst = fmax(worst, e);
            off += (size_t)b2[i].n_rows * V;
        }
        fprintf(stderr, "%-24s batch of 3 chains (%d then 33 rows) vs single: worst rel err %.2g\n",
                f.label, plen[0] + plen[1] + plen[2], worst);
        assert_true(worst < 1e-5);
        /* the selected slot is what the single-sequence calls see; truncating one slot
         * leaves the others alone */
        assert_int_equal(hsd_model_seq_current(f.batch), 0);
        assert_int_equal(hsd_model_kv_len(f.batch), plen[0] + nt[1]);
        assert_int_equal(hsd_model_seq_select(f.batch, 1), HSD_OK);
        assert_int_equal(hsd_model_kv_truncate(f.batch, 3), HSD_OK);
        assert_int_equal(hsd_model_seq_select(f.batch, 3), HSD_OK);
        assert_int_equal(hsd_model_kv_len(f.batch), plen[2] + nt[0]);
        /* single-sequence forward on slot 3 continues exactly that sequence */
        int32_t next;
        random_tokens(&r, &next, 1, V);
        assert_int_equal(hsd_model_forward(f.batch, &next, 1, NULL, NULL, 1, lg), HSD_OK);
        int32_t hist[40];
        memcpy(hist, pre[2], (size_t)plen[2] * sizeof *hist);
        memcpy(hist + plen[2], toks[0], (size_t)nt[0] * sizeof *hist);
        hsd_model_batch_seq one = {sizeof(hsd_model_batch_seq), 0, &next, 1, NULL, NULL, 1};
        ref_forward(f.ref, hist, plen[2] + nt[0], &one, want);
        assert_true(rel_err(lg, want, (size_t)V) < 1e-5);
        free(lg), free(want);
        close_fixture(&f);
    }
}

/* A tree on one slot next to chains on others; kv_keep of the accepted path on the tree's
 * slot equals having fed that path. */
static void test_tree_and_keep(void **state) {
    (void)state;
    for (int w = 0; w < N_FIXTURES; w++) {
        fixture f;
        if (!open_fixture(w, &f)) continue;
        int32_t V = hsd_model_vocab_size(f.batch);
        hsd_rng r;
        hsd_rng_init(&r, 22, (uint64_t)w);
        int32_t pa[6], pb[9], ta[7], cb[4], next;
        random_tokens(&r, pa, 6, V);
        random_tokens(&r, pb, 9, V);
        random_tokens(&r, ta, 7, V);
        random_tokens(&r, cb, 4, V);
        random_tokens(&r, &next, 1, V);
        const int32_t parents[7] = {-1, 0, 0, 1, 1, 2, 5}, keep[4] = {0, 2, 5, 6};
        hsd_model_batch_seq pre[2] = {{sizeof(hsd_model_batch_seq), 2, pa, 6, NULL, NULL, 0}, {sizeof(hsd_model_batch_seq), 0, pb, 9, NULL, NULL, 0}};
        assert_int_equal(hsd_model_forward_batch(f.batch, pre, 2, NULL), HSD_OK);
        hsd_model_batch_seq b[2] = {{sizeof(hsd_model_batch_seq), 0, cb, 4, NULL, NULL, 4}, {sizeof(hsd_model_batch_seq), 2, ta, 7, parents, NULL, 7}};
        float *lg = malloc((size_t)11 * V * sizeof(float)),
              *want = malloc((size_t)7 * V * sizeof(float));
        assert_int_equal(hsd_model_forward_batch(f.batch, b, 2, lg), HSD_OK);
        ref_forward(f.ref, pb, 9, &b[0], want);
        double e0 = rel_err(lg, want, (size_t)4 * V);
        ref_forward(f.ref, pa, 6, &b[1], want);
        double e1 = rel_err(lg + (size_t)4 * V, want, (size_t)7 * V);
        fprintf(stderr, "%-24s chain + tree in one batch vs single: rel err %.2g / %.2g\n", f.label,
                e0, e1);
        assert_true(e0 < 1e-5 && e1 < 1e-5);
        assert_int_equal(hsd_model_seq_select(f.batch, 2), HSD_OK);
        assert_int_equal(hsd_model_kv_keep(f.batch, 6, keep, 4), HSD_OK);
        assert_int_equal(hsd_model_kv_len(f.batch), 10);
        assert_int_equal(hsd_model_seq_select(f.batch, 0), HSD_OK);
        assert_int_equal(hsd_model_kv_len(f.batch), 13);
        hsd_model_batch_seq nx = {sizeof(hsd_model_batch_seq), 2, &next, 1, NULL, NULL, 1};
        assert_int_equal(hsd_model_forward_batch(f.batch, &nx, 1, lg), HSD_OK);
        int32_t chain[10] = {pa[0], pa[1], pa[2], pa[3], pa[4], pa[5], ta[0], ta[2], ta[5], ta[6]};
        hsd_model_batch_seq one = {sizeof(hsd_model_batch_seq), 0, &next, 1, NULL, NULL, 1};
        ref_forward(f.ref, chain, 10, &one, want);
        assert_true(rel_err(lg, want, (size_t)V) < 1e-5);
        free(lg), free(want);
        close_fixture(&f);
    }
}

static void assert_lens(hsd_model *m, const int32_t *lens) {
    int32_t cur = hsd_model_seq_current(m);
    for (int s = 0; s < N_SEQ; s++) {
        assert_int_equal(hsd_model_seq_select(m, s), HSD_OK);
        assert_int_equal(hsd_model_kv_len(m), lens[s]);
    }
    assert_int_equal(hsd_model_seq_select(m, cur), HSD_OK);
}

static void test_bad_arguments(void **state) {
    (void)state;
    fixture f;
    open_fixture(0, &f);
    int32_t V = hsd_model_vocab_size(f.batch), n_ctx = hsd_model_n_ctx(f.batch);
    float *lg = malloc((size_t)8 * V * sizeof(float));
    int32_t t[4] = {1, 2, 3, 4}, bad_tok[2] = {1, V};
    hsd_model_batch_seq ok = {sizeof(hsd_model_batch_seq), 1, t, 3, NULL, NULL, 0};
    assert_int_equal(hsd_model_forward_batch(f.batch, &ok, 1, NULL), HSD_OK);
    const int32_t lens[N_SEQ] = {0, 3, 0, 0};
    hsd_model_batch_seq b[2] = {{sizeof(hsd_model_batch_seq), 0, t, 2, NULL, NULL, 2}, {sizeof(hsd_model_batch_seq), 1, t, 2, NULL, NULL, 2}};
    assert_int_equal(hsd_model_forward_batch(f.batch, b, 0, lg), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_model_forward_batch(f.batch, NULL, 2, lg), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_model_forward_batch(NULL, b, 2, lg), HSD_ERR_INVALID_ARG);
    b[1].seq = 0; /* listed twice */
    assert_int_equal(hsd_model_forward_batch(f.batch, b, 2, lg), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "twice"));
    b[1].seq = N_SEQ;
    assert_int_equal(hsd_model_forward_batch(f.batch, b, 2, lg), HSD_ERR_OUT_OF_RANGE);
    b[1].seq = 1;
    b[1].tokens = bad_tok; /* the second entry is bad: the first must not be applied */
    assert_int_equal(hsd_model_forward_batch(f.batch, b, 2, lg), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "sequence 1"));
    b[1].tokens = t;
    b[1].parents = (const int32_t[]){-1, 1};
    assert_int_equal(hsd_model_forward_batch(f.batch, b, 2, lg), HSD_ERR_INVALID_ARG);
    b[1].parents = NULL;
    assert_int_equal(hsd_model_forward_batch(f.batch, b, 2, NULL),
                     HSD_ERR_INVALID_ARG); /* rows into NULL */
    int32_t *many = calloc((size_t)n_ctx, sizeof *many);
    b[1] = (hsd_model_batch_seq){sizeof(hsd_model_batch_seq), 1, many, n_ctx - 2, NULL, NULL, 0}; /* 3 cached + n_ctx - 2 */
    assert_int_equal(hsd_model_forward_batch(f.batch, b, 2, lg), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "exceed the context"));
    assert_lens(f.batch, lens); /* failed batches change nothing */
    assert_int_equal(hsd_model_seq_select(f.batch, N_SEQ), HSD_ERR_OUT_OF_RANGE);
    assert_int_equal(hsd_model_seq_select(f.batch, -1), HSD_ERR_OUT_OF_RANGE);
    assert_int_equal(hsd_model_seq_current(f.batch), 0);
    /* n_seq in the parameters */
    hsd_model_params p = hsd_model_default_params();
    p.n_seq = -1;
    hsd_transformer *tf = NULL;
    assert_int_equal(hsd_synth_to_transformer(f.synth, &p, &tf), HSD_ERR_INVALID_ARG);
    /* a one-slot model refuses slot 1 */
    hsd_model_batch_seq s1 = {sizeof(hsd_model_batch_seq), 1, t, 1, NULL, NULL, 0};
    assert_int_equal(hsd_model_forward_batch(f.ref, &s1, 1, NULL), HSD_ERR_OUT_OF_RANGE);
    free(many), free(lg);
    close_fixture(&f);
}

/* A caller's model with slots but no forward_batch: the library runs one forward per entry
 * on its slot and restores the selection. */
static int32_t w_vocab(void *c) {
    return hsd_model_vocab_size(c);
}
static int32_t w_nctx(void *c) {
    return hsd_model_n_ctx(c);
}
static hsd_status w_forward(void *c, const int32_t *t, int32_t n, const int32_t *par,
                            const int32_t *rows, int32_t n_rows, float *logits) {
    return hsd_model_forward(c, t, n, par, rows, n_rows, logits);
}
static int32_t w_kvlen(void *c) {
    return hsd_model_kv_len(c);
}
static hsd_status w_trunc(void *c, int32_t len) {
    return hsd_model_kv_truncate(c, len);
}
static int32_t w_nseq(void *c) {
    return hsd_model_n_seq(c);
}
static hsd_status w_select(void *c, int32_t s) {
    return hsd_model_seq_select(c, s);
}

static void test_fallback_without_forward_batch(void **state) {
    (void)state;
    fixture f;
    open_fixture(1, &f);
    int32_t V = hsd_model_vocab_size(f.batch);
    hsd_model_iface it = {sizeof(hsd_model_iface), f.batch, w_vocab, w_nctx, w_forward, w_kvlen, w_trunc,
                          NULL,    NULL,    w_nseq, w_select,  NULL};
    hsd_model *m;
    assert_int_equal(hsd_model_from_iface(&it, &m), HSD_OK);
    assert_int_equal(hsd_model_n_seq(m), N_SEQ);
    assert_int_equal(hsd_model_seq_select(m, 2), HSD_OK);
    hsd_rng r;
    hsd_rng_init(&r, 23, 0);
    int32_t a[6], b[3];
    random_tokens(&r, a, 6, V);
    random_tokens(&r, b, 3, V);
    const int32_t row_b = 2;
    hsd_model_batch_seq e[2] = {{sizeof(hsd_model_batch_seq), 3, a, 6, NULL, NULL, 6}, {sizeof(hsd_model_batch_seq), 0, b, 3, NULL, &row_b, 1}};
    float *lg = malloc((size_t)7 * V * sizeof(float)),
          *want = malloc((size_t)6 * V * sizeof(float));
    assert_int_equal(hsd_model_forward_batch(m, e, 2, lg), HSD_OK);
    assert_int_equal(hsd_model_seq_current(m), 2);
    assert_int_equal(hsd_model_seq_current(f.batch), 2);
    ref_forward(f.ref, NULL, 0, &e[0], want);
    assert_true(rel_err(lg, want, (size_t)6 * V) < 1e-5);
    ref_forward(f.ref, NULL, 0, &e[1], want);
    assert_true(rel_err(lg + (size_t)6 * V, want, (size_t)V) < 1e-5);
    e[1].seq = 3;
    assert_int_equal(hsd_model_forward_batch(m, e, 2, lg), HSD_ERR_INVALID_ARG);
    hsd_model_free(m);
    /* more than one slot without seq_select is refused */
    it.seq_select = NULL;
    assert_int_equal(hsd_model_from_iface(&it, &m), HSD_ERR_INVALID_ARG);
    free(lg), free(want);
    close_fixture(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chains_equal_single),
        cmocka_unit_test(test_tree_and_keep),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_fallback_without_forward_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Every public draft-only-proposal function called wrongly (see test_api_errors.c for the
 * contract and the guard that every function in include/hsd.h has a row), and called rightly
 * once on the toy pair: a proposal holds only target ids, at most k_out of them, and a failed
 * call zeroes n_out. Split from test_api_errors.c by concept. */
#include "tests/api_errors_fixture.h"

/* A toy drafter with two sequence slots: two toy caches behind one iface. */
typedef struct toy2 {
    toy slot[2];
    int32_t cur;
} toy2;
static int32_t toy2_vocab(void *c) { return ((toy2 *)c)->slot[0].vocab; }
static int32_t toy2_n_ctx(void *c) { return ((toy2 *)c)->slot[0].n_ctx; }
static int32_t toy2_kv_len(void *c) { return toy_kv_len(&((toy2 *)c)->slot[((toy2 *)c)->cur]); }
static int32_t toy2_n_seq(void *c) { return (void)c, 2; }
static hsd_status toy2_select(void *c, int32_t seq) {
    ((toy2 *)c)->cur = seq;
    return HSD_OK;
}
static hsd_status toy2_forward(void *c, const int32_t *tokens, int32_t n, const int32_t *parents,
                               const int32_t *rows, int32_t n_rows, float *logits) {
    toy2 *m = c;
    return toy_forward(&m->slot[m->cur], tokens, n, parents, rows, n_rows, logits);
}
static hsd_status toy2_truncate(void *c, int32_t len) {
    return toy_truncate(&((toy2 *)c)->slot[((toy2 *)c)->cur], len);
}

static toy2 two;
static hsd_model *two_slots(void) {
    toy_iface(&two.slot[0], 6);
    toy_iface(&two.slot[1], 6);
    two.cur = 0;
    hsd_model_iface f = {HSD_MODEL_IFACE_INIT, .ctx = &two,
                         .vocab_size = toy2_vocab,
                         .n_ctx = toy2_n_ctx,
                         .forward = toy2_forward,
                         .kv_len = toy2_kv_len,
                         .kv_truncate = toy2_truncate,
                         .n_seq = toy2_n_seq,
                         .seq_select = toy2_select};
    hsd_model *m = NULL;
    assert_int_equal(hsd_model_from_iface(&f, &m), HSD_OK);
    return m;
}

static void row_hsd_proposer_default_params(void **state) {
    (void)state;
    hsd_proposer_params p = hsd_proposer_default_params();
    assert_int_equal(p.size, sizeof p);
    assert_int_equal(p.n_draft, 4);
    assert_int_equal(p.n_ctx, 0);
    assert_int_equal(p.target_vocab, 0);
    assert_true(p.add_bos);
}

static void row_hsd_proposer_init(void **state) {
    (void)state;
    hsd_proposer *p = (hsd_proposer *)1;
    hsd_proposer_params prm = hsd_proposer_default_params();
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_init(model_d, tok_d, tok_t, NULL, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_init(NULL, tok_d, tok_t, NULL, &p));
    assert_null(p);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_init(model_d, NULL, tok_t, NULL, &p));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_init(model_d, tok_d, NULL, NULL, &p));
    prm.size = 0;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_init(model_d, tok_d, tok_t, &prm, &p));
    prm = hsd_proposer_default_params();
    prm.n_draft = 0;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_init(model_d, tok_d, tok_t, &prm, &p));
    prm.n_draft = 64;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_init(model_d, tok_d, tok_t, &prm, &p));
    prm = hsd_proposer_default_params();
    prm.n_ctx = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_init(model_d, tok_d, tok_t, &prm, &p));
    prm = hsd_proposer_default_params();
    prm.target_vocab = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_init(model_d, tok_d, tok_t, &prm, &p));
    assert_null(p);
    /* an older caller's smaller struct: the rest is defaulted */
    prm = hsd_proposer_default_params();
    prm.size = offsetof(hsd_proposer_params, n_ctx);
    prm.n_ctx = -5; /* past the caller's size: not read */
    assert_int_equal(hsd_proposer_init(model_d, tok_d, tok_t, &prm, &p), HSD_OK);
    assert_non_null(p);
    hsd_proposer_free(p);
}

static void row_hsd_proposer_free(void **state) {
    (void)state;
    hsd_proposer_free(NULL);
}

static void row_hsd_proposer_n_slots(void **state) {
    (void)state;
    assert_int_equal(hsd_proposer_n_slots(NULL), 0);
    hsd_proposer *p;
    assert_int_equal(hsd_proposer_init(model_d, tok_d, tok_t, NULL, &p), HSD_OK);
    assert_int_equal(hsd_proposer_n_slots(p), 1); /* a model without slots has one */
    hsd_proposer_free(p);
}

static void row_hsd_proposer_propose(void **state) {
    (void)state;
    hsd_model *m = two_slots();
    hsd_proposer *p;
    assert_int_equal(hsd_proposer_init(m, tok_d, tok_t, NULL, &p), HSD_OK);
    assert_int_equal(hsd_proposer_n_slots(p), 2);
    const int32_t c0[] = {0, 2, 3, 5}, c1[] = {0, 7, 5, 2}, bad[] = {0, 8}, neg[] = {-1};
    const int32_t *ctx[2] = {c0, c1};
    int32_t n_ctx[2] = {4, 4}, slots[2] = {0, 1}, out[2 * 8], n_out[2];
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(NULL, 1, slots, ctx, n_ctx, 8, out, n_out));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, -1, slots, ctx, n_ctx, 8, out, n_out));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, NULL, ctx, n_ctx, 8, out, n_out));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, slots, NULL, n_ctx, 8, out, n_out));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, slots, ctx, NULL, 8, out, n_out));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, slots, ctx, n_ctx, 8, NULL, n_out));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, slots, ctx, n_ctx, 8, out, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, slots, ctx, n_ctx, 0, out, n_out));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, slots, ctx, n_ctx, 65, out, n_out));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 3, slots, ctx, n_ctx, 8, out, n_out));
    int32_t same[2] = {1, 1}, outside[1] = {2}, minus[1] = {-1};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 2, same, ctx, n_ctx, 8, out, n_out));
    assert_non_null(strstr(hsd_last_error(), "slot 1"));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, outside, ctx, n_ctx, 8, out, n_out));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, minus, ctx, n_ctx, 8, out, n_out));
    const int32_t *null_ctx[1] = {NULL};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, slots, null_ctx, n_ctx, 8, out, n_out));
    int32_t empty[1] = {0};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_propose(p, 1, slots, ctx, empty, 8, out, n_out));
    /* ids outside the target tokenizer's 8, named by request and position */
    const int32_t *bad_ctx[2] = {c0, bad}, *neg_ctx[1] = {neg};
    int32_t n_bad[2] = {4, 2}, one[1] = {1};
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_proposer_propose(p, 2, slots, bad_ctx, n_bad, 8, out, n_out));
    assert_non_null(strstr(hsd_last_error(), "request 1"));
    assert_non_null(strstr(hsd_last_error(), "position 1"));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_proposer_propose(p, 1, slots, neg_ctx, one, 8, out, n_out));
    assert_int_equal(hsd_proposer_propose(p, 0, NULL, NULL, NULL, 8, NULL, NULL), HSD_OK);
    /* two requests in one call: target ids only, at most k_out of them */
    for (int k = 1; k <= 8; k += 7) {
        n_out[0] = n_out[1] = -1;
        assert_int_equal(hsd_proposer_propose(p, 2, slots, ctx, n_ctx, k, out, n_out), HSD_OK);
        for (int i = 0; i < 2; i++) {
            assert_in_range(n_out[i], 0, k);
            for (int j = 0; j < n_out[i]; j++) assert_in_range(out[i * k + j], 0, 7);
        }
    }
    hsd_proposer_free(p);
    hsd_model_free(m);
}

static void row_hsd_proposer_forget(void **state) {
    (void)state;
    hsd_proposer *p;
    assert_int_equal(hsd_proposer_init(model_d, tok_d, tok_t, NULL, &p), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_forget(NULL, 0));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_forget(p, -1));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_forget(p, 1));
    assert_int_equal(hsd_proposer_forget(p, 0), HSD_OK);
    hsd_proposer_free(p);
}

static void row_hsd_proposer_last_tree(void **state) {
    (void)state;
    hsd_proposer *p;
    assert_int_equal(hsd_proposer_init(model_d, tok_d, tok_t, NULL, &p), HSD_OK);
    int32_t ids[64], par[64], n = -1;
    double sc[64];
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_last_tree(NULL, 0, ids, par, sc, 64, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_last_tree(p, 0, ids, par, sc, 64, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_last_tree(p, 1, ids, par, sc, 64, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_last_tree(p, 0, NULL, par, sc, 64, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_last_tree(p, 0, ids, par, sc, -1, &n));
    assert_int_equal(hsd_proposer_last_tree(p, 0, NULL, NULL, NULL, 0, &n), HSD_OK);
    assert_int_equal(n, 0); /* nothing proposed yet */
    const int32_t c0[] = {0, 2, 3, 5}, *ctx[1] = {c0};
    int32_t n_ctx[1] = {4}, slot[1] = {0}, out[8], n_out[1];
    assert_int_equal(hsd_proposer_propose(p, 1, slot, ctx, n_ctx, 8, out, n_out), HSD_OK);
    assert_int_equal(hsd_proposer_last_tree(p, 0, ids, par, sc, 64, &n), HSD_OK);
    assert_in_range(n, n_out[0], 64);
    assert_true(n > 0 && n_out[0] > 0); /* the toy drafter counts up: it always has a guess */
    for (int j = 0; j < n; j++) { /* a tree: parents first, target ids, probabilities */
        assert_in_range(par[j] + 1, 0, j);
        assert_in_range(ids[j], 0, 7);
        assert_true(sc[j] > 0 && sc[j] <= 1);
    }
    if (n > 0) {
        int32_t need = -1;
        EXPECT(HSD_ERR_BUFFER_TOO_SMALL, hsd_proposer_last_tree(p, 0, ids, par, sc, n - 1, &need));
        assert_int_equal(need, n);
    }
    hsd_proposer_free(p);
}

static void row_hsd_proposer_get_stats(void **state) {
    (void)state;
    hsd_proposer *p;
    hsd_proposer_stats st;
    assert_int_equal(hsd_proposer_init(model_d, tok_d, tok_t, NULL, &p), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_get_stats(NULL, &st));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_proposer_get_stats(p, NULL));
    const int32_t c0[] = {0, 2, 3, 5}, *ctx[1] = {c0};
    int32_t n_ctx[1] = {4}, slot[1] = {0}, out[8], n_out[1];
    assert_int_equal(hsd_proposer_propose(p, 1, slot, ctx, n_ctx, 8, out, n_out), HSD_OK);
    assert_int_equal(hsd_proposer_propose(p, 1, slot, ctx, n_ctx, 8, out, n_out), HSD_OK);
    assert_int_equal(hsd_proposer_get_stats(p, &st), HSD_OK);
    assert_int_equal(st.n_calls, 2);
    assert_int_equal(st.n_proposals, 2);
    assert_int_equal(st.n_fresh, 1);  /* the first call starts the slot */
    assert_int_equal(st.n_reused, 1); /* the same context again extends it */
    hsd_proposer_free(p);
}

static void row_hsd_proposer_reset_stats(void **state) {
    (void)state;
    hsd_proposer_reset_stats(NULL);
    hsd_proposer *p;
    hsd_proposer_stats st;
    assert_int_equal(hsd_proposer_init(model_d, tok_d, tok_t, NULL, &p), HSD_OK);
    const int32_t c0[] = {0, 2}, *ctx[1] = {c0};
    int32_t n_ctx[1] = {2}, slot[1] = {0}, out[8], n_out[1];
    assert_int_equal(hsd_proposer_propose(p, 1, slot, ctx, n_ctx, 8, out, n_out), HSD_OK);
    hsd_proposer_reset_stats(p);
    assert_int_equal(hsd_proposer_get_stats(p, &st), HSD_OK);
    assert_int_equal(st.n_calls, 0);
    hsd_proposer_free(p);
}

int main(void) {
    const struct CMUnitTest rows[] = {HSD_API_ROWS_PROPOSER(HSD_API_ROW_CASE)};
    return hsd_api_rows_run("api_errors_proposer", NULL, rows, sizeof rows / sizeof rows[0]);
}

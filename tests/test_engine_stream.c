/* Streaming (hsd_gen_params.on_text) and context limits (hsd_gen_params.n_ctx, stop reasons)
 * on the real TinyStories pair (babyllama/tok105 target, stories260K/tok512 drafter; and
 * stories260K drafting for itself for SD):
 *   - for every algorithm, greedy and sampled, single and batched (B = 3): the pieces handed
 *     to the callback add up to the result's text and their ids to the result's ids (the
 *     result's text is the tokenizer's decode of all ids, which the pieces are checked
 *     against), and each call reports its sequence's index;
 *   - returning false stops within one round: nothing is generated after the call that said
 *     stop, the round count equals the calls made, the stop reason is HSD_STOP_CALLBACK; in a
 *     batch only that sequence stops;
 *   - context: stories260K was trained for 512 positions (llama2.c's stories260K config,
 *     seq_len 512): loaded with a KV cache of 1024, a long generation stops cleanly at the
 *     512th position (HSD_STOP_CONTEXT), with the same limit for a speculative algorithm;
 *     n_ctx 700 runs past it with a warning in the log; a KV cache of 256 is the limit when it
 *     is smaller; a prompt longer than the context is HSD_ERR_OUT_OF_RANGE naming the context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

typedef struct {
    hsd_model *m;
    hsd_tokenizer *t;
} lm;

static lm small, baby, small2;

static int load_lm(lm *x, const char *model, const char *tok, int32_t n_ctx, int32_t n_seq) {
    const char *mp = hsd_test_path(model), *tp = hsd_test_path(tok);
    if (!hsd_test_require(mp) || !hsd_test_require(tp)) return -1;
    hsd_model_params prm = hsd_model_default_params();
    prm.n_threads = 1;
    prm.n_ctx = n_ctx;
    prm.n_seq = n_seq;
    if (hsd_model_load(mp, &prm, &x->m) || hsd_tokenizer_load_file(tp, &x->t)) {
        fprintf(stderr, "%s\n", hsd_last_error());
        return -1;
    }
    return 0;
}

static int setup(void **state) {
    (void)state;
    if (load_lm(&small, "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin", 1024,
                3) ||
        load_lm(&small2, "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin",
                1024, 3) ||
        load_lm(&baby, "models/babyllama-tok105/model5000.bin",
                "models/babyllama-tok105/tok105.bin", 0, 3))
        return -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    lm *all[] = {&small, &baby, &small2};
    for (int i = 0; i < 3; i++) hsd_model_free(all[i]->m), hsd_tokenizer_free(all[i]->t);
    return 0;
}

#define MAX_SEQ 3

/* What the callback saw, per sequence. */
typedef struct {
    char text[MAX_SEQ][8192];
    size_t len[MAX_SEQ];
    int32_t ids[MAX_SEQ][1024];
    int32_t n_ids[MAX_SEQ];
    int calls[MAX_SEQ];
    int stop_seq;       /* sequence to stop (-1: none) */
    int32_t stop_after; /* ... once it has seen this many ids */
    int bad_seq;
} sink;

static bool collect(void *user, int32_t seq, const char *text, size_t len, const int32_t *ids,
                    int32_t n_ids) {
    sink *s = user;
    if (seq < 0 || seq >= MAX_SEQ) {
        s->bad_seq++;
        return false;
    }
    if (s->len[seq] + len < sizeof s->text[seq]) memcpy(s->text[seq] + s->len[seq], text, len);
    s->len[seq] += len;
    for (int32_t i = 0; i < n_ids && s->n_ids[seq] < 1024; i++)
        s->ids[seq][s->n_ids[seq]++] = ids[i];
    s->calls[seq]++;
    return !(seq == s->stop_seq && s->n_ids[seq] >= s->stop_after);
}

static hsd_gen_params params(hsd_algo algo, float temp, uint64_t seed, int n, sink *s) {
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = algo;
    p.n_draft = 4;
    p.temp = temp;
    p.seed = seed;
    p.max_new_tokens = n;
    p.on_text = collect;
    p.user_data = s;
    return p;
}

static void check_seq(const sink *s, int i, const hsd_gen_result *r, const char *what) {
    if (s->len[i] != r->text_len || memcmp(s->text[i], r->text, r->text_len))
        fprintf(stderr, "%s seq %d: pieces \"%.*s\"\n  text   \"%s\"\n", what, i, (int)s->len[i],
                s->text[i], r->text);
    assert_int_equal(s->len[i], r->text_len);
    assert_memory_equal(s->text[i], r->text, r->text_len);
    assert_int_equal(s->n_ids[i], r->n_ids);
    assert_memory_equal(s->ids[i], r->ids, (size_t)r->n_ids * sizeof(int32_t));
    assert_true(s->calls[i] >= 1 && s->calls[i] <= r->n_rounds);
}

static void check_pieces(lm *target, lm *draft, const hsd_algo *algos, int n_algos) {
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    const char *ps[MAX_SEQ] = {"Once upon a time, there was a little dog named Max. Max liked to",
                               "", "The sun was hot and the"};
    int streamed_many = 0;
    for (int a = 0; a < n_algos; a++)
        for (int v = 0; v < 2; v++) {
            char what[64];
            snprintf(what, sizeof what, "%s temp %d", hsd_algo_name(algos[a]), v);
            sink *s = calloc(1, sizeof *s);
            s->stop_seq = -1;
            hsd_gen_params p = params(algos[a], v ? 1.0f : 0, 11, 120, s);
            hsd_gen_result r = HSD_GEN_RESULT_INIT;
            assert_int_equal(hsd_engine_generate(e, ps[0], strlen(ps[0]), &p, &r), HSD_OK);
            check_seq(s, 0, &r, what);
            /* nothing stops it but EOS or the budget */
            assert_int_equal(r.stop_reason, r.n_ids < 120 ? HSD_STOP_EOS : HSD_STOP_MAX_TOKENS);
            streamed_many += s->calls[0] > 3;
            hsd_gen_result_free(&r);
            memset(s, 0, sizeof *s);
            s->stop_seq = -1;
            hsd_gen_result rb[MAX_SEQ];
            hsd_gen_results_init(rb, MAX_SEQ);
            assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, MAX_SEQ, &p, rb), HSD_OK);
            for (int i = 0; i < MAX_SEQ; i++) check_seq(s, i, &rb[i], what);
            assert_int_equal(s->bad_seq, 0);
            for (int i = 0; i < MAX_SEQ; i++) hsd_gen_result_free(&rb[i]);
            free(s);
        }
    assert_true(streamed_many > 0); /* pieces came round by round, not once at the end */
    hsd_engine_free(e);
}

static void test_pieces_equal_text(void **state) {
    (void)state;
    const hsd_algo cross[] = {HSD_ALGO_AR, HSD_ALGO_UNION, HSD_ALGO_TLI, HSD_ALGO_SLEM,
                              HSD_ALGO_SLRS};
    check_pieces(&baby, &small, cross, 5);
    const hsd_algo self[] = {HSD_ALGO_SD};
    check_pieces(&small, &small2, self, 1);
}

static void test_callback_stops_within_a_round(void **state) {
    (void)state;
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(baby.m, baby.t, small.m, small.t, &e), HSD_OK);
    const char *ps[MAX_SEQ] = {"Once upon a time", "The dog", "Lily saw a"};
    const hsd_algo algos[] = {HSD_ALGO_AR, HSD_ALGO_UNION, HSD_ALGO_TLI, HSD_ALGO_SLEM,
                              HSD_ALGO_SLRS};
    for (int a = 0; a < 5; a++) {
        sink *s = calloc(1, sizeof *s);
        s->stop_seq = 0;
        s->stop_after = 10;
        hsd_gen_params p = params(algos[a], 0, 0, 200, s);
        p.stop_at_eos = false;
        hsd_gen_result r = HSD_GEN_RESULT_INIT;
        assert_int_equal(hsd_engine_generate(e, ps[0], strlen(ps[0]), &p, &r), HSD_OK);
        assert_int_equal(r.stop_reason, HSD_STOP_CALLBACK);
        /* the round that made the call that said stop was the last one */
        assert_int_equal(r.n_ids, s->n_ids[0]);
        assert_int_equal(r.n_rounds, s->calls[0]);
        assert_true(r.n_ids >= 10 && r.n_ids < 10 + 65);
        hsd_gen_result_free(&r);
        /* in a batch, only the sequence that said stop stops */
        memset(s, 0, sizeof *s);
        s->stop_seq = 1;
        s->stop_after = 1;
        hsd_gen_result rb[MAX_SEQ];
        hsd_gen_results_init(rb, MAX_SEQ);
        assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, MAX_SEQ, &p, rb), HSD_OK);
        assert_int_equal(rb[1].stop_reason, HSD_STOP_CALLBACK);
        assert_int_equal(rb[1].n_rounds, 1);
        assert_int_equal(rb[1].n_ids, s->n_ids[1]);
        for (int i = 0; i < MAX_SEQ; i += 2) {
            assert_int_equal(rb[i].stop_reason, HSD_STOP_MAX_TOKENS);
            assert_int_equal(rb[i].n_ids, 200);
        }
        for (int i = 0; i < MAX_SEQ; i++) hsd_gen_result_free(&rb[i]);
        free(s);
    }
    hsd_engine_free(e);
}

static int32_t prompt_tokens(const hsd_tokenizer *t, const char *prompt) {
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(hsd_tokenizer_encode_alloc(t, prompt, strlen(prompt), false, &ids, &n),
                     HSD_OK);
    hsd_free(ids);
    return (int32_t)n + (hsd_tokenizer_bos_id(t) >= 0);
}

static int warnings;
static void count_warnings(hsd_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == HSD_LOG_WARN && strstr(msg, "n_ctx")) warnings++;
}

static void generate_long(hsd_engine *e, hsd_algo algo, int32_t n_ctx, hsd_gen_result *r) {
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = algo;
    p.max_new_tokens = 2000;
    p.stop_at_eos = false;
    p.n_ctx = n_ctx;
    assert_int_equal(hsd_engine_generate(e, "Once", 4, &p, r), HSD_OK);
}

static void test_context_limit(void **state) {
    (void)state;
    assert_int_equal(hsd_model_n_ctx_train(small.m), 512);
    assert_int_equal(hsd_model_n_ctx(small.m), 1024);
    int32_t np = prompt_tokens(small.t, "Once");
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(small.m, small.t, small2.m, small2.t, &e), HSD_OK);
    hsd_gen_result r = HSD_GEN_RESULT_INIT;
    /* the trained context, not the larger KV cache: no token goes past position 511, the
     * last the model was trained for, and every algorithm fills the context to it (prompt +
     * generated = 512: a round emits at most its candidates + 1, so it proposes at most
     * 512 - committed - 1 of them) */
    const hsd_algo algos[] = {HSD_ALGO_AR, HSD_ALGO_SD};
    for (int a = 0; a < 2; a++) {
        generate_long(e, algos[a], 0, &r);
        assert_int_equal(r.stop_reason, HSD_STOP_CONTEXT);
        assert_int_equal(np + r.n_ids, 512);
        hsd_gen_result_free(&r);
    }
    /* the pieces add up to the text when the context ends the sequence too */
    sink *sk = calloc(1, sizeof *sk);
    sk->stop_seq = -1;
    hsd_gen_params ps_ = params(HSD_ALGO_SD, 1.0f, 5, 2000, sk);
    ps_.stop_at_eos = false;
    assert_int_equal(hsd_engine_generate(e, "Once", 4, &ps_, &r), HSD_OK);
    assert_int_equal(r.stop_reason, HSD_STOP_CONTEXT);
    assert_int_equal(sk->len[0], r.text_len);
    assert_memory_equal(sk->text[0], r.text, r.text_len);
    hsd_gen_result_free(&r);
    free(sk);
    /* a stop string */
    hsd_gen_params pst = hsd_gen_default_params();
    const char *dot[1] = {"."};
    pst.algo = HSD_ALGO_SD;
    pst.stop = dot;
    pst.n_stop = 1;
    pst.max_new_tokens = 300;
    assert_int_equal(hsd_engine_generate(e, "Once", 4, &pst, &r), HSD_OK);
    assert_int_equal(r.stop_reason, HSD_STOP_STRING);
    assert_non_null(strchr(r.text, '.'));
    hsd_gen_result_free(&r);
    /* asking for more: it goes on, with a warning */
    warnings = 0;
    hsd_log_set(count_warnings, NULL);
    generate_long(e, HSD_ALGO_AR, 700, &r);
    hsd_log_set(NULL, NULL);
    assert_int_equal(warnings, 1);
    assert_int_equal(r.stop_reason, HSD_STOP_CONTEXT);
    assert_int_equal(np + r.n_ids, 700);
    hsd_gen_result_free(&r);
    /* a prompt that does not fit: a clear error */
    char *lng = malloc(600 * 5 + 1);
    for (int i = 0; i < 600; i++) memcpy(lng + 5 * i, "Once ", 5);
    lng[600 * 5] = 0;
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = HSD_ALGO_AR;
    assert_int_equal(hsd_engine_generate(e, lng, strlen(lng), &p, &r), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "context"));
    assert_null(r.ids);
    const char *ps[2] = {"Once", lng};
    hsd_gen_result rb[2];
    hsd_gen_results_init(rb, 2);
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 2, &p, rb), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "prompt 1"));
    free(lng);
    hsd_engine_free(e);
    /* a KV cache smaller than the trained context is the limit */
    lm tiny;
    assert_int_equal(load_lm(&tiny, "models/stories260K/stories260K.bin",
                             "models/stories260K/tok512.bin", 256, 1),
                     0);
    assert_int_equal(hsd_engine_init(tiny.m, tiny.t, NULL, NULL, &e), HSD_OK);
    generate_long(e, HSD_ALGO_AR, 0, &r);
    assert_int_equal(r.stop_reason, HSD_STOP_CONTEXT);
    assert_int_equal(np + r.n_ids, 256);
    hsd_gen_result_free(&r);
    hsd_engine_free(e);
    hsd_model_free(tiny.m);
    hsd_tokenizer_free(tiny.t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces_equal_text),
        cmocka_unit_test(test_callback_stops_within_a_round),
        cmocka_unit_test(test_context_limit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

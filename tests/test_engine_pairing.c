/* What a user's probe at real vocabulary sizes found (issue 20), asserted:
 *   - a model and a tokenizer that do not belong together are refused when the engine is
 *     made, naming the side (target or drafter) and both sizes: a tokenizer with more ids
 *     than the model has rows, and a model with more rows than padding explains (a 512-id
 *     tokenizer on a 151,936-row model), while real padding (Qwen3: 151,669 ids on 151,936
 *     rows) is accepted;
 *   - an empty prompt names the side whose tokenizer has no BOS;
 *   - a llama2.c checkpoint stops at id 1, as llama2.c's run.c does (BOS delimits its
 *     training stories), with the ids before it equal to the independent numpy run of run.c
 *     in shared/models/reference_outputs.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

/* ---- a caller model of any vocabulary size; its forward must never run here ---- */
typedef struct fake {
    int32_t vocab;
} fake;
static int32_t f_vocab(void *c) { return ((fake *)c)->vocab; }
static int32_t f_ctx(void *c) { return (void)c, 64; }
static hsd_status f_forward(void *c, const int32_t *t, int32_t n, const int32_t *par,
                            const int32_t *rows, int32_t nr, float *logits) {
    (void)c, (void)t, (void)n, (void)par, (void)rows, (void)nr, (void)logits;
    fail_msg("the forward ran: the check should have refused first");
    return HSD_ERR_UNSUPPORTED;
}
static int32_t f_kv_len(void *c) { return (void)c, 0; }
static hsd_status f_trunc(void *c, int32_t len) { return (void)c, (void)len, HSD_OK; }

static hsd_model *fake_model(fake *f) {
    hsd_model_iface it;
    memset(&it, 0, sizeof it);
    it.size = sizeof it;
    it.ctx = f;
    it.vocab_size = f_vocab;
    it.n_ctx = f_ctx;
    it.forward = f_forward;
    it.kv_len = f_kv_len;
    it.kv_truncate = f_trunc;
    hsd_model *m = NULL;
    assert_int_equal(hsd_model_from_iface(&it, &m), HSD_OK);
    return m;
}

static hsd_tokenizer *tok(const char *rel) {
    const char *p = hsd_test_path(rel);
    if (!hsd_test_require(p)) return NULL;
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(p, &t), HSD_OK);
    return t;
}

static hsd_model *model(const char *rel) {
    const char *p = hsd_test_path(rel);
    if (!hsd_test_require(p)) return NULL;
    hsd_model *m = NULL;
    assert_int_equal(hsd_model_load(p, NULL, &m), HSD_OK);
    return m;
}

/* hsd_engine_init fails with INVALID_ARG and an error holding every word of `want` */
static void expect_refused(hsd_model *tm, hsd_tokenizer *tt, hsd_model *dm, hsd_tokenizer *dt,
                           const char *const *want) {
    hsd_engine *e = (hsd_engine *)1;
    assert_int_equal(hsd_engine_init(tm, tt, dm, dt, &e), HSD_ERR_INVALID_ARG);
    assert_null(e);
    printf("refused: %s\n", hsd_last_error());
    for (int i = 0; want[i]; i++) {
        if (!strstr(hsd_last_error(), want[i])) fail_msg("no '%s' in: %s", want[i], hsd_last_error());
    }
}

static void test_tokenizer_larger_than_model(void **state) {
    (void)state;
    hsd_model *stories = model("models/stories260K/stories260K.bin"),
              *baby = model("models/babyllama-tok105/model5000.bin");
    hsd_tokenizer *qwen = tok("tokenizers/qwen3/tokenizer.json"),
                  *t512 = tok("models/stories260K/tok512.bin");
    if (!stories || !baby || !qwen || !t512) skip();
    /* target side: Qwen3's 151,669 ids on a 512-row model */
    expect_refused(stories, qwen, NULL, NULL,
                   (const char *const[]){"target tokenizer", "151669 ids", "512 rows", NULL});
    /* drafter side: tok512 on babyllama's 105 rows; the target pair is fine */
    expect_refused(stories, t512, baby, t512,
                   (const char *const[]){"drafter tokenizer", "512 ids", "105 rows", NULL});
    hsd_model_free(stories), hsd_model_free(baby);
    hsd_tokenizer_free(qwen), hsd_tokenizer_free(t512);
}

static void test_model_larger_than_padding(void **state) {
    (void)state;
    hsd_tokenizer *qwen = tok("tokenizers/qwen3/tokenizer.json"),
                  *t512 = tok("models/stories260K/tok512.bin");
    if (!qwen || !t512) skip();
    fake f = {151936}; /* Qwen3-0.6B's rows */
    hsd_model *m = fake_model(&f);
    expect_refused(m, t512, NULL, NULL,
                   (const char *const[]){"target tokenizer", "512 ids", "151936 rows", NULL});
    /* and as the drafter */
    fake g = {512};
    hsd_model *small = fake_model(&g);
    expect_refused(small, t512, m, t512,
                   (const char *const[]){"drafter tokenizer", "512 ids", "151936 rows", NULL});
    /* the checkpoint's own padding (267 rows past the tokenizer) is accepted */
    assert_int_equal(hsd_tokenizer_vocab_size(qwen), 151669);
    hsd_engine *e = NULL;
    assert_int_equal(hsd_engine_init(m, qwen, NULL, NULL, &e), HSD_OK);
    hsd_engine_free(e);
    hsd_model_free(m), hsd_model_free(small);
    hsd_tokenizer_free(qwen), hsd_tokenizer_free(t512);
}

static void test_empty_prompt_names_side(void **state) {
    (void)state;
    hsd_tokenizer *gpt2 = tok("tokenizers/gpt2/tokenizer.json"),
                  *t512 = tok("models/stories260K/tok512.bin");
    hsd_model *stories = model("models/stories260K/stories260K.bin");
    if (!gpt2 || !t512 || !stories) skip();
    assert_true(hsd_tokenizer_bos_id(gpt2) < 0); /* GPT-2's tokenizer.json declares none */
    fake f = {50257};
    hsd_model *m = fake_model(&f);
    hsd_gen_params p = hsd_gen_default_params();
    p.max_new_tokens = 4;
    hsd_gen_result r = HSD_GEN_RESULT_INIT;
    /* the target: GPT-2's tokenizer, nothing to start from */
    hsd_engine *e = NULL;
    assert_int_equal(hsd_engine_init(m, gpt2, NULL, NULL, &e), HSD_OK);
    p.algo = HSD_ALGO_AR;
    assert_int_equal(hsd_engine_generate(e, "", 0, &p, &r), HSD_ERR_INVALID_ARG);
    printf("%s\n", hsd_last_error());
    assert_non_null(strstr(hsd_last_error(), "target tokenizer"));
    assert_non_null(strstr(hsd_last_error(), "gpt2"));
    hsd_engine_free(e);
    /* the drafter: the target (tok512) has a BOS, the drafter's GPT-2 tokenizer none */
    assert_int_equal(hsd_engine_init(stories, t512, m, gpt2, &e), HSD_OK);
    p.algo = HSD_ALGO_SLEM;
    assert_int_equal(hsd_engine_generate(e, "", 0, &p, &r), HSD_ERR_INVALID_ARG);
    printf("%s\n", hsd_last_error());
    assert_non_null(strstr(hsd_last_error(), "drafter tokenizer"));
    assert_non_null(strstr(hsd_last_error(), "gpt2"));
    hsd_engine_free(e);
    hsd_model_free(m), hsd_model_free(stories);
    hsd_tokenizer_free(gpt2), hsd_tokenizer_free(t512);
}

/* "greedy_ids": "[403, 407, ...]" of reference_outputs.json's stories260K entry */
static int32_t reference_ids(int32_t *ids, int32_t cap) {
    char *json = hsd_test_read_file(hsd_test_path("models/reference_outputs.json"), NULL);
    assert_non_null(json);
    const char *p = strstr(json, "\"greedy_ids\"");
    assert_non_null(p);
    p = strchr(p, '[');
    assert_non_null(p);
    int32_t n = 0;
    for (p++; *p && *p != ']' && n < cap;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        ids[n++] = (int32_t)v;
        p = end;
    }
    free(json);
    return n;
}

static void test_llama2c_stops_at_bos(void **state) {
    (void)state;
    hsd_model *m = model("models/stories260K/stories260K.bin");
    hsd_tokenizer *t = tok("models/stories260K/tok512.bin");
    if (!m || !t || !hsd_test_require(hsd_test_path("models/reference_outputs.json"))) skip();
    assert_int_equal(hsd_tokenizer_eos_id(t), 2); /* the tokenizer's EOS is not the one */
    int32_t ref[256];
    int32_t n_ref = reference_ids(ref, 256);
    assert_int_equal(n_ref, 200);
    hsd_engine *e = NULL;
    assert_int_equal(hsd_engine_init(m, t, NULL, NULL, &e), HSD_OK);
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = HSD_ALGO_AR;
    p.max_new_tokens = 500; /* the model's context is 512 */
    hsd_gen_result open = HSD_GEN_RESULT_INIT, stopped = HSD_GEN_RESULT_INIT;
    p.stop_at_eos = false;
    assert_int_equal(hsd_engine_generate(e, "", 0, &p, &open), HSD_OK);
    p.stop_at_eos = true;
    assert_int_equal(hsd_engine_generate(e, "", 0, &p, &stopped), HSD_OK);
    /* the story ends with id 1 somewhere past the 200 reference steps */
    int32_t first1 = -1;
    for (int32_t i = 0; i < open.n_ids && first1 < 0; i++)
        if (open.ids[i] == 1) first1 = i;
    printf("greedy from BOS: first id 1 at step %d of %d\n", first1, open.n_ids);
    assert_true(first1 >= n_ref);
    for (int32_t i = 0; i < n_ref; i++) assert_int_equal(open.ids[i], ref[i]);
    /* with stop_at_eos, generation ends there, as run.c does, without emitting it */
    assert_int_equal(stopped.stop_reason, HSD_STOP_EOS);
    assert_int_equal(stopped.n_ids, first1);
    assert_memory_equal(stopped.ids, open.ids, (size_t)first1 * sizeof *open.ids);
    assert_null(strstr(stopped.text, "<s>"));
    hsd_gen_result_free(&open);
    hsd_gen_result_free(&stopped);
    hsd_engine_free(e);
    hsd_model_free(m);
    hsd_tokenizer_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokenizer_larger_than_model),
        cmocka_unit_test(test_model_larger_than_padding),
        cmocka_unit_test(test_empty_prompt_names_side),
        cmocka_unit_test(test_llama2c_stops_at_bos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

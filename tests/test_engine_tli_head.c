/* hsd_engine_set_tli_head on the real pair (babyllama/tok105 target, stories260K/tok512
 * drafter): the drafter's head keeps exactly the T ∩ D rows (hsd_engine_overlap_ids, counted
 * independently here from the two vocabularies' surface bytes), TLI's greedy output with the
 * head equals AR's (the target's argmax decoding), and a keep list narrows the head to the
 * intersection, still lossless. Bad arguments are in test_api_errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

/* |T ∩ D| over drafter ids, from the tokenizers alone: a non-special drafter id whose surface
 * bytes equal some non-special target token's. */
static int32_t count_overlap(const hsd_tokenizer *tt, const hsd_tokenizer *dt) {
    int32_t n = 0, vt = hsd_tokenizer_vocab_size(tt), vd = hsd_tokenizer_vocab_size(dt);
    for (int32_t d = 0; d < vd; d++) {
        size_t ld;
        const uint8_t *bd = hsd_tokenizer_token_bytes(dt, d, &ld);
        if (!bd || !ld || hsd_tokenizer_is_special(dt, d) || !hsd_tokenizer_id_to_token(dt, d))
            continue;
        for (int32_t t = 0; t < vt; t++) {
            size_t lt;
            const uint8_t *bt = hsd_tokenizer_token_bytes(tt, t, &lt);
            if (bt && lt == ld && !memcmp(bt, bd, ld) && !hsd_tokenizer_is_special(tt, t) &&
                hsd_tokenizer_id_to_token(tt, t)) {
                n++;
                break;
            }
        }
    }
    return n;
}

static void generate(hsd_engine *e, hsd_algo algo, hsd_gen_result *r) {
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = algo;
    p.max_new_tokens = 60;
    const char *prompt = "Once upon a time, there was a little dog named Max. Max liked to";
    assert_int_equal(hsd_engine_generate(e, prompt, strlen(prompt), &p, r), HSD_OK);
}

static void test_tli_head(void **state) {
    (void)state;
    const char *tm = hsd_test_path("models/babyllama-tok105/model5000.bin"),
               *tt = hsd_test_path("models/babyllama-tok105/tok105.bin"),
               *dm = hsd_test_path("models/stories260K/stories260K.bin"),
               *dt = hsd_test_path("models/stories260K/tok512.bin");
    if (!hsd_test_require(tm) || !hsd_test_require(tt) || !hsd_test_require(dm) ||
        !hsd_test_require(dt))
        skip();
    hsd_model *t, *d;
    hsd_tokenizer *ttok, *dtok;
    assert_int_equal(hsd_model_load(tm, NULL, &t), HSD_OK);
    assert_int_equal(hsd_model_load(dm, NULL, &d), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(tt, &ttok), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(dt, &dtok), HSD_OK);
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(t, ttok, d, dtok, &e), HSD_OK);
    hsd_gen_result ar = HSD_GEN_RESULT_INIT, tli = HSD_GEN_RESULT_INIT;
    generate(e, HSD_ALGO_AR, &ar);

    int32_t n_overlap = count_overlap(ttok, dtok);
    assert_true(n_overlap > 0 && n_overlap < hsd_model_vocab_size(d));
    assert_int_equal(hsd_engine_set_tli_head(e, NULL, 0), HSD_OK);
    char want[96];
    snprintf(want, sizeof want, "trimmed: %d of %d rows", n_overlap, hsd_model_vocab_size(d));
    assert_string_equal(hsd_model_head_desc(d), want);
    generate(e, HSD_ALGO_TLI, &tli);
    assert_int_equal(tli.n_ids, ar.n_ids);
    assert_memory_equal(tli.ids, ar.ids, (size_t)ar.n_ids * sizeof(int32_t));
    hsd_gen_result_free(&tli);

    /* a keep list (here: every second drafter id) narrows the head to the intersection */
    int32_t V = hsd_model_vocab_size(d), *even = malloc((size_t)V * sizeof *even), n_even = 0;
    for (int32_t i = 0; i < V; i += 2) even[n_even++] = i;
    int32_t *ov = malloc((size_t)V * sizeof *ov), n_ov = 0, n_both = 0;
    assert_int_equal(hsd_engine_overlap_ids(e, ov, V, &n_ov), HSD_OK);
    for (int32_t i = 0; i < n_ov; i++) n_both += ov[i] % 2 == 0;
    assert_int_equal(hsd_engine_set_tli_head(e, even, n_even), HSD_OK);
    snprintf(want, sizeof want, "trimmed: %d of %d rows", n_both, V);
    assert_string_equal(hsd_model_head_desc(d), want);
    generate(e, HSD_ALGO_TLI, &tli);
    assert_memory_equal(tli.ids, ar.ids, (size_t)ar.n_ids * sizeof(int32_t));
    hsd_gen_result_free(&tli);
    free(even), free(ov);

    hsd_gen_result_free(&ar);
    hsd_engine_free(e);
    hsd_model_free(t), hsd_model_free(d);
    hsd_tokenizer_free(ttok), hsd_tokenizer_free(dtok);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tli_head)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

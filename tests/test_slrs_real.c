/* String-level rejection sampling (Alg 3) on real data (split by concept from test_slrs.c,
 * which has the toy vocabularies):
 *   - the determination rule (lib/engine/first_token.h) against brute force on real tokenizers:
 *     whatever follows a text with a cut, its stable tokens stay a prefix of the encoding;
 *   - the real TinyStories pair in both directions: greedy SLRS is identical to AR on bench
 *     prompts, and at temperature 1 the first token follows AR's exact law;
 *   - `hsd generate --algo slrs --json`. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/engine/first_token.h"
#include "lib/base/rng.h"
#include "lib/engine/sample.h"
#include "lib/engine/slrs_tree.h"
#include "lib/base/utf8.h"
#include "tests/testutil.h"
#include "tokenize/tokenizer.h"
#include "verify/slrs.h"

/* ------------------------------------------------------------ determination vs brute force ---- */

static char *corpus;
static size_t corpus_len;

static void check_rule(const char *path, int expect_rule) {
    hsd_tokenizer *t = NULL;
    if (!hsd_test_require(path)) skip();
    if (!corpus) {
        fprintf(stderr, "skipping: %s is missing\n", hsd_test_path("corpus/corpus.jsonl"));
        skip();
    }
    assert_int_equal(hsd_tokenizer_load_file(path, &t), HSD_OK);
    hsd_first_token ft;
    assert_int_equal(hsd_first_token_init(&ft, t), HSD_OK);
    assert_int_equal(ft.has_rule, expect_rule);
    hsd_rng r;
    hsd_rng_init(&r, 11, 0);
    long texts = 0, with_cut = 0, checks = 0;
    hsd_ids stable = {0}, full = {0};
    hsd_buf s = {0};
    for (int i = 0; i < 3000; i++) {
        size_t at = hsd_rng_u32(&r) % (corpus_len - 64), len = 1 + hsd_rng_u32(&r) % 12;
        while (at > 0 && ((unsigned char)corpus[at] & 0xC0) == 0x80) at--;
        texts++;
        size_t last = 0, first = hsd_first_token_cut(&ft, corpus + at, len, &last);
        if (!expect_rule) {
            assert_int_equal(first, 0);
            continue;
        }
        if (!first) continue;
        with_cut++;
        stable.n = 0;
        assert_int_equal(hsd_first_token_stable(&ft, corpus + at, len, &stable), HSD_OK);
        assert_true(stable.n > 0);
        /* brute force: many continuations (corpus text from anywhere, random bytes of the
         * text's own alphabet, nothing) must keep the stable tokens as a prefix */
        for (int j = 0; j < 40; j++) {
            s.n = 0;
            hsd_buf_append(&s, corpus + at, len);
            size_t from = hsd_rng_u32(&r) % (corpus_len - 32),
                   sl = j == 0 ? 0 : hsd_rng_u32(&r) % 24;
            while (from > 0 && ((unsigned char)corpus[from] & 0xC0) == 0x80) from--;
            if (j % 2)
                hsd_buf_append(&s, corpus + from, sl);
            else
                for (size_t q = 0; q < sl; q++)
                    hsd_buf_push(&s, corpus[at + hsd_rng_u32(&r) % len]);
            /* encode the longest valid prefix, as the bridge would */
            size_t ok = hsd_utf8_valid_prefix(s.p, s.n);
            full.n = 0;
            assert_int_equal(hsd_tok_encode_cont(t, s.p, ok, &full), HSD_OK);
            assert_true(full.n >= stable.n);
            if (memcmp(full.p, stable.p, stable.n * sizeof(int32_t))) {
                fprintf(stderr, "%s: '%.*s' + '%.*s' changes its stable tokens\n", path, (int)len,
                        corpus + at, (int)(s.n - len), s.p + len);
                fail();
            }
            checks++;
        }
    }
    printf("%s: rule %s; %ld texts, %ld with a cut, %ld continuations checked\n", path,
           ft.has_rule ? "on" : "off", texts, with_cut, checks);
    if (expect_rule) assert_true(with_cut > texts / 4); /* the rule is not vacuous */
    hsd_ids_free(&stable);
    hsd_ids_free(&full);
    hsd_buf_free(&s);
    hsd_first_token_free(&ft);
    hsd_tokenizer_free(t);
}

static void test_determination_brute_force(void **state) {
    (void)state;
    check_rule(hsd_test_path("models/stories260K/tok512.bin"), 1);
    check_rule(hsd_test_path("models/babyllama-tok105/tok105.bin"), 1);
    check_rule(hsd_test_path("models/llama2-tokenizer/tokenizer.bin"), 1);
    /* byte-level BPE with a regex pre-tokenizer: no rule, so no cut is ever claimed */
    check_rule(hsd_test_path("models/vocab-gguf/ggml-vocab-gpt-2.gguf"), 0);
}

/* ------------------------------------------------------------ the real pair ---- */

typedef struct {
    hsd_model *m;
    hsd_tokenizer *t;
} lm;
static lm small, baby;
static char *prompts[128];
static int n_prompts;

static int load_lm(lm *x, const char *model, const char *tok) {
    const char *mp = hsd_test_path(model), *tp = hsd_test_path(tok);
    if (!hsd_test_require(mp) || !hsd_test_require(tp)) return -1;
    hsd_model_params prm = hsd_model_default_params();
    prm.n_threads = 1;
    if (hsd_model_load(mp, &prm, &x->m) || hsd_tokenizer_load_file(tp, &x->t)) return -1;
    return 0;
}

/* bench prompts clipped to their last ~150 characters (babyllama's context is 256) */
static void load_prompts(void) {
    n_prompts = hsd_test_bench_prompts(prompts, 128, 150);
}

static bool single_forward; /* gen() below: SLRS scores its tree in one drafter forward */

static void gen(hsd_engine *e, const char *prompt, hsd_algo algo, int k, float temp, uint64_t seed,
                int n, hsd_gen_result *r) {
    hsd_gen_params p = hsd_gen_default_params();
    p.slrs_single_forward = single_forward;
    p.algo = algo;
    p.n_draft = k;
    p.temp = temp;
    p.seed = seed;
    p.max_new_tokens = n;
    p.slrs_top_k = 3;
    p.slrs_max_nodes = 24;
    hsd_status s = hsd_engine_generate(e, prompt, strlen(prompt), &p, r);
    if (s) fprintf(stderr, "generate(%s): %s\n", hsd_algo_name(algo), hsd_last_error());
    assert_int_equal(s, HSD_OK);
}

static void greedy_pair(lm *target, lm *draft, const char *label) {
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    int checked = 0;
    for (int i = 0; i < n_prompts; i += 4) {
        hsd_gen_result ar, r;
        gen(e, prompts[i], HSD_ALGO_AR, 1, 0, 0, 40, &ar);
        for (int v = 0; v < 3; v++) {
            single_forward = v == 2; /* depth 4 and 8 by levels, depth 8 in one forward */
            gen(e, prompts[i], HSD_ALGO_SLRS, v == 0 ? 4 : 8, 0, 0, 40, &r);
            single_forward = false;
            if (ar.n_ids != r.n_ids || memcmp(ar.ids, r.ids, (size_t)ar.n_ids * sizeof(int32_t)))
                fprintf(stderr, "%s prompt %d differs:\n AR:   %s\n SLRS: %s\n", label, i, ar.text,
                        r.text);
            assert_int_equal(ar.n_ids, r.n_ids);
            assert_memory_equal(ar.ids, r.ids, (size_t)ar.n_ids * sizeof(int32_t));
            hsd_gen_result_free(&r);
            checked++;
        }
        hsd_gen_result_free(&ar);
    }
    printf("%s: %d greedy SLRS generations identical to AR\n", label, checked);
    hsd_engine_free(e);
}

static void test_real_greedy_identical(void **state) {
    (void)state;
    if (!small.m || !baby.m) skip();
    assert_true(n_prompts >= 90);
    greedy_pair(&small, &baby, "target stories260K, drafter babyllama");
    greedy_pair(&baby, &small, "target babyllama, drafter stories260K");
}

static void law_pair(lm *target, lm *draft, const char *label) {
    /* the next target word is several babyllama characters: psi sums real compositions */
    const char *prompt = "Once upon a time, there was a little";
    int32_t V = hsd_model_vocab_size(target->m);
    double *law = calloc((size_t)V, sizeof *law);
    long *count = calloc((size_t)V, sizeof *count);
    hsd_test_first_token_law(target->m, target->t, prompt, law);
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    const long N = 20000;
    double acc = 0;
    for (long s = 0; s < N; s++) {
        hsd_gen_result r;
        gen(e, prompt, HSD_ALGO_SLRS, 6, 1.0f, 5000 + (uint64_t)s, 1, &r);
        assert_int_equal(r.n_ids, 1);
        if (single_forward) assert_true(r.tree_forwards <= 2.0);
        count[r.ids[0]]++;
        acc += r.first_accept_rate;
        hsd_gen_result_free(&r);
    }
    int df;
    double chi2 = hsd_test_chi2(count, law, V, N, &df), pv = hsd_test_chi2_pvalue(chi2, df);
    printf("%s slrs first token: chi2 %.1f, df %d, p = %.4f (%ld samples, acceptance %.3f)\n",
           label, chi2, df, pv, N, acc / N);
    assert_true(pv > 1e-3);
    hsd_engine_free(e);
    free(law), free(count);
}

static void test_real_first_token_law(void **state) {
    (void)state;
    if (!small.m || !baby.m) skip();
    law_pair(&small, &baby, "target stories260K/draft babyllama:");
    law_pair(&baby, &small, "target babyllama/draft stories260K:");
    single_forward = true;
    law_pair(&small, &baby, "one forward, target stories260K/draft babyllama:");
    single_forward = false;
}
/* `hsd generate --algo slrs --json`: the SLRS fields are there and greedy text equals AR's. */
static void test_cli(void **state) {
    (void)state;
    const char *tm = hsd_test_path("models/stories260K/stories260K.bin"),
               *tt = hsd_test_path("models/stories260K/tok512.bin"),
               *dm = hsd_test_path("models/babyllama-tok105/model5000.bin"),
               *dt = hsd_test_path("models/babyllama-tok105/tok105.bin");
    HSD_REQUIRE_FILE(tm);
    HSD_REQUIRE_FILE(dm);
    char cmd[2048];
    json_t *res[2];
    const char *algos[2] = {"ar", "slrs --lookahead nmax -k 8 --slrs-one-forward"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s "
                 "-p 'Once upon a time' -n 40 --json --algo %s",
                 hsd_test_cli(), tm, tt, dm, dt, algos[i]);
        char *out = hsd_test_run(cmd);
        res[i] = json_loads(out, 0, NULL);
        assert_non_null(res[i]);
        free(out);
    }
    assert_string_equal(json_string_value(json_object_get(res[1], "algo")), "slrs");
    assert_string_equal(json_string_value(json_object_get(res[0], "text")),
                        json_string_value(json_object_get(res[1], "text")));
    assert_true(json_real_value(json_object_get(res[1], "tree_nodes")) >= 1);
    assert_true(json_real_value(json_object_get(res[1], "tree_forwards")) <= 2);
    assert_non_null(json_object_get(res[1], "psi_ms"));
    assert_non_null(json_object_get(res[1], "expected_accept"));
    json_decref(res[0]);
    json_decref(res[1]);
    /* a bad lookahead name is refused */
    snprintf(cmd, sizeof cmd,
             "%s generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s -p x "
             "--algo slrs --lookahead sometimes >/dev/null 2>&1; echo $?",
             hsd_test_cli(), tm, tt, dm, dt);
    char *rc = hsd_test_run(cmd);
    assert_int_equal(atoi(rc), 2);
    free(rc);
}

static int setup(void **state) {
    (void)state;
    char *c = hsd_test_read_file(hsd_test_path("corpus/corpus.jsonl"), &corpus_len);
    if (c) corpus = c;
    if (load_lm(&small, "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin") ||
        load_lm(&baby, "models/babyllama-tok105/model5000.bin",
                "models/babyllama-tok105/tok105.bin"))
        fprintf(stderr, "real-pair tests will skip: models missing under %s\n", hsd_test_shared());
    load_prompts();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    hsd_model_free(small.m), hsd_tokenizer_free(small.t);
    hsd_model_free(baby.m), hsd_tokenizer_free(baby.t);
    for (int i = 0; i < n_prompts; i++) free(prompts[i]);
    free(corpus);
    return 0;
}
int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_determination_brute_force),
        cmocka_unit_test(test_real_greedy_identical),
        cmocka_unit_test(test_real_first_token_law),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* The decoding engine on the real TinyStories pair (stories260K with tok512 BPE, babyllama
 * with the character-level tok105), both directions:
 *   - greedy: SD, union, TLI and SLEM produce ids identical to AR on every bench prompt;
 *   - one model given two tokenizers, one of them non-injective (lowercasing): identical too;
 *   - temperature 1: the first token of every algorithm follows AR's law (chi-square, 20k
 *     seeded samples each, p > 1e-3) — the law computed exactly from the target's logits;
 *   - temperature 1: SLEM's sampled ids equal AR's for the same seed (one draw per token). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/engine/sample.h"
#include "tests/testutil.h"
#include "tokenize/tokenizer.h"

typedef struct {
    hsd_model *m;
    hsd_tokenizer *t;
} lm;

static lm small, baby, small2, baby2; /* *2: second instances for self-drafting */
static lm small_q4, baby_q8;           /* Q4_0 and Q8_0 KV caches (both in tiles) */
static char *prompts[128];
static int n_prompts;

static int load_lm_kv(lm *x, const char *model, const char *tok, hsd_kv_type kv) {
    const char *mp = hsd_test_path(model), *tp = hsd_test_path(tok);
    if (!hsd_test_require(mp) || !hsd_test_require(tp)) return -1;
    hsd_model_params prm = hsd_model_default_params();
    prm.kv_type = kv;
    prm.n_ctx = 0;
    prm.n_threads = 1;
    if (hsd_model_load(mp, &prm, &x->m) || hsd_tokenizer_load_file(tp, &x->t)) {
        fprintf(stderr, "%s\n", hsd_last_error());
        return -1;
    }
    return 0;
}

/* Bench prompts, clipped to their last ~150 characters at a word start so the character-level
 * babyllama (context 256) fits prompt + generation. */
static int load_lm(lm *x, const char *model, const char *tok) {
    return load_lm_kv(x, model, tok, HSD_KV_F16);
}

static void load_prompts(void) {
    n_prompts = hsd_test_bench_prompts(prompts, 128, 150);
}

static int setup(void **state) {
    (void)state;
    if (load_lm(&small, "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin") ||
        load_lm(&baby, "models/babyllama-tok105/model5000.bin",
                "models/babyllama-tok105/tok105.bin") ||
        load_lm(&small2, "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin") ||
        load_lm(&baby2, "models/babyllama-tok105/model5000.bin",
                "models/babyllama-tok105/tok105.bin") ||
        load_lm_kv(&small_q4, "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin",
                   HSD_KV_Q4_0) ||
        load_lm_kv(&baby_q8, "models/babyllama-tok105/model5000.bin",
                   "models/babyllama-tok105/tok105.bin", HSD_KV_Q8_0))
        return -1;
    load_prompts();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    lm *all[] = {&small, &baby, &small2, &baby2, &small_q4, &baby_q8};
    for (int i = 0; i < 6; i++) hsd_model_free(all[i]->m), hsd_tokenizer_free(all[i]->t);
    for (int i = 0; i < n_prompts; i++) free(prompts[i]);
    return 0;
}

/* kmode: 0 a fixed k, 1 adaptive_k, 2 cost_k (k then moves with measured times: the output
 * must not move with it) */
static void gen(hsd_engine *e, const char *prompt, hsd_algo algo, int k, int kmode, float temp,
                uint64_t seed, int n, hsd_gen_result *r) {
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = algo;
    p.n_draft = k;
    p.adaptive_k = kmode == 1;
    p.cost_k = kmode == 2;
    p.k_max = 12;
    p.temp = temp;
    p.seed = seed;
    p.max_new_tokens = n;
    hsd_status s = hsd_engine_generate(e, prompt, strlen(prompt), &p, r);
    if (s) fprintf(stderr, "generate(%s): %s\n", hsd_algo_name(algo), hsd_last_error());
    assert_int_equal(s, HSD_OK);
}

static int same_ids(const hsd_gen_result *a, const hsd_gen_result *b) {
    return a->n_ids == b->n_ids && !memcmp(a->ids, b->ids, (size_t)a->n_ids * sizeof(int32_t));
}

static void check_greedy_pair(lm *target, lm *draft, const char *label, int step) {
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    const hsd_algo algos[] = {HSD_ALGO_SLEM, HSD_ALGO_TLI, HSD_ALGO_UNION, HSD_ALGO_SD};
    int checked = 0;
    for (int i = 0; i < n_prompts; i += step) {
        hsd_gen_result ar = HSD_GEN_RESULT_INIT;
        gen(e, prompts[i], HSD_ALGO_AR, 1, 0, 0, 0, 40, &ar);
        for (size_t a = 0; a < 4; a++) {
            bool self = target->t != draft->t &&
                        !strcmp(hsd_model_desc(target->m), hsd_model_desc(draft->m));
            if (algos[a] == HSD_ALGO_SD && !self) continue;
            /* cost_k on every third prompt: its k follows timings, the output must not */
            for (int kmode = 0; kmode < (i % 3 ? 2 : 3); kmode++) {
                hsd_gen_result r = HSD_GEN_RESULT_INIT;
                gen(e, prompts[i], algos[a], 5, kmode, 0, 0, 40, &r);
                if (!same_ids(&ar, &r))
                    fprintf(stderr, "%s %s prompt %d differs:\n AR:   %s\n algo: %s\n", label,
                            hsd_algo_name(algos[a]), i, ar.text, r.text);
                assert_true(same_ids(&ar, &r));
                checked++;
                hsd_gen_result_free(&r);
            }
        }
        hsd_gen_result_free(&ar);
    }
    printf("%s: %d prompts, %d generations identical to AR\n", label, (n_prompts + step - 1) / step,
           checked);
    hsd_engine_free(e);
}

/* An adaptive or cost-aware k starts within k_max even when n_draft is larger: the first
 * round drafts at most k_max (sampled TLI and union write a q row per draft, sized for
 * k_max + 1 rows before this bound existed: a heap overflow under ASan). */
static void test_k_bound(void **state) {
    (void)state;
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(baby.m, baby.t, small.m, small.t, &e), HSD_OK);
    const hsd_algo algos[] = {HSD_ALGO_TLI, HSD_ALGO_UNION};
    for (int a = 0; a < 2; a++)
        for (int kmode = 1; kmode <= 2; kmode++) {
            hsd_gen_params p = hsd_gen_default_params();
            p.algo = algos[a], p.n_draft = 12, p.k_max = 4, p.temp = 1.0f, p.seed = 5;
            p.adaptive_k = kmode == 1, p.cost_k = kmode == 2;
            p.max_new_tokens = 2; /* one or two rounds: the first one's k weighs in the mean */
            hsd_gen_result r = HSD_GEN_RESULT_INIT;
            assert_int_equal(hsd_engine_generate(e, prompts[0], strlen(prompts[0]), &p, &r), HSD_OK);
            printf("%s, %s k, n_draft 12, k_max 4: mean k %.2f over %d rounds\n", hsd_algo_name(algos[a]),
                   kmode == 1 ? "adaptive" : "cost-aware", r.k_mean, r.n_rounds);
            assert_true(r.k_mean >= 1 && r.k_mean <= 4);
            hsd_gen_result_free(&r);
        }
    hsd_engine_free(e);
}

static void test_greedy_identical_to_ar(void **state) {
    (void)state;
    assert_true(n_prompts >= 90);
    check_greedy_pair(&baby, &small, "target babyllama, drafter stories260K", 1);
    check_greedy_pair(&small, &baby, "target stories260K, drafter babyllama", 1);
    check_greedy_pair(&small, &small2, "stories260K drafting for itself", 1);
    check_greedy_pair(&baby, &baby2, "babyllama drafting for itself", 1);
}

/* The same with quantised KV caches (babyllama's Q8_0, tiled at head_dim 48 where AVX-512
 * VNNI runs; stories260K's Q4_0, always tiled, head_dim 8; each pair both ways; every fourth
 * prompt): verification's tree rows must stay bit-identical to AR's chain rows when the
 * cache holds quantised keys and values in tiles, kept by lane copies (short, zero-padded
 * blocks). */
static void test_greedy_q8_0_kv_identical_to_ar(void **state) {
    (void)state;
    check_greedy_pair(&baby_q8, &small_q4, "Q8_0 / Q4_0 KV: target babyllama (Q8_0), drafter stories260K (Q4_0)", 4);
    check_greedy_pair(&small_q4, &baby_q8, "Q4_0 / Q8_0 KV: target stories260K (Q4_0), drafter babyllama (Q8_0)", 4);
}

/* SLEM draws the target's token once per emitted token from the same stream as AR (it walks
 * its candidate tree with those draws), and its tree rows are bit-identical to AR's rows: the
 * sampled text for a seed must then be AR's own, token for token, whatever the tree held. */
static void check_sampled_pair(lm *target, lm *draft, const char *label) {
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    int checked = 0, long_rounds = 0;
    for (int i = 0; i < n_prompts; i += 3) {
        hsd_gen_result ar = HSD_GEN_RESULT_INIT;
        gen(e, prompts[i], HSD_ALGO_AR, 1, 0, 1.0f, 77 + (uint64_t)i, 40, &ar);
        for (int kmode = 0; kmode < 3; kmode++) {
            hsd_gen_result r = HSD_GEN_RESULT_INIT;
            gen(e, prompts[i], HSD_ALGO_SLEM, 4, kmode, 1.0f, 77 + (uint64_t)i, 40, &r);
            if (!same_ids(&ar, &r))
                fprintf(stderr, "%s sampled slem prompt %d differs:\n AR:   %s\n slem: %s\n",
                        label, i, ar.text, r.text);
            assert_true(same_ids(&ar, &r));
            long_rounds += r.n_accepted > 0; /* the tree was used, not only the bonus draw */
            checked++;
            hsd_gen_result_free(&r);
        }
        hsd_gen_result_free(&ar);
    }
    printf("%s: %d sampled SLEM generations identical to sampled AR (same seeds), %d with "
           "accepted candidates\n",
           label, checked, long_rounds);
    assert_true(long_rounds > checked / 2);
    hsd_engine_free(e);
}

static void test_sampled_slem_equals_ar(void **state) {
    (void)state;
    check_sampled_pair(&baby, &small, "target babyllama, drafter stories260K");
    check_sampled_pair(&small, &baby, "target stories260K, drafter babyllama");
}

static void test_noninjective_drafter(void **state) {
    (void)state;
    /* the same model as drafter, through a second tok512 that lowercases its input:
     * decode(encode("Once")) == "once", so the bridge sees text it cannot spell */
    hsd_tokenizer *lower = NULL;
    assert_int_equal(
        hsd_tokenizer_load_file(hsd_test_path("models/stories260K/tok512.bin"), &lower), HSD_OK);
    lower->norm = calloc(1, sizeof *lower->norm);
    lower->norm[0].type = HSD_NORM_LOWERCASE;
    lower->n_norm = 1;
    int32_t *ids;
    size_t n;
    char *back;
    assert_int_equal(hsd_tokenizer_encode_alloc(lower, "Once Upon", 9, false, &ids, &n), HSD_OK);
    assert_int_equal(hsd_tokenizer_decode_alloc(lower, ids, n, true, &back, NULL), HSD_OK);
    assert_string_not_equal(back, "Once Upon"); /* non-injective indeed */
    hsd_free(ids), hsd_free(back);

    lm d = {small.m, lower};
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(small.m, small.t, d.m, d.t, &e), HSD_OK);
    /* the same model cannot be target and drafter at once (one KV cache): load a second */
    hsd_model *m2;
    hsd_model_params prm = hsd_model_default_params();
    prm.n_threads = 1;
    assert_int_equal(hsd_model_load(hsd_test_path("models/stories260K/stories260K.bin"), &prm, &m2),
                     HSD_OK);
    hsd_engine_free(e);
    assert_int_equal(hsd_engine_init(small.m, small.t, m2, lower, &e), HSD_OK);
    int checked = 0;
    for (int i = 0; i < n_prompts; i += 3) {
        hsd_gen_result ar = HSD_GEN_RESULT_INIT, r1 = HSD_GEN_RESULT_INIT, r2 = HSD_GEN_RESULT_INIT;
        gen(e, prompts[i], HSD_ALGO_AR, 1, 0, 0, 0, 60, &ar);
        gen(e, prompts[i], HSD_ALGO_SLEM, 4, 0, 0, 0, 60, &r1);
        gen(e, prompts[i], HSD_ALGO_TLI, 4, 0, 0, 0, 60, &r2);
        assert_true(same_ids(&ar, &r1));
        assert_true(same_ids(&ar, &r2));
        checked += 2;
        hsd_gen_result_free(&ar), hsd_gen_result_free(&r1), hsd_gen_result_free(&r2);
    }
    printf("non-injective drafter: %d generations identical to AR\n", checked);
    hsd_engine_free(e);
    hsd_model_free(m2);
    hsd_tokenizer_free(lower);
}

static void check_chi2(lm *target, lm *draft, const char *label) {
    const char *prompt = "Once upon a time, there was a little";
    int32_t V = hsd_model_vocab_size(target->m);
    double *law = calloc((size_t)V, sizeof *law);
    long *count = calloc((size_t)V, sizeof *count);
    hsd_test_first_token_law(target->m, target->t, prompt, law);
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    const hsd_algo algos[] = {HSD_ALGO_AR, HSD_ALGO_SLEM, HSD_ALGO_TLI, HSD_ALGO_UNION,
                              HSD_ALGO_SD};
    const long N = 20000;
    for (size_t a = 0; a < 5; a++) {
        bool self = !strcmp(hsd_model_desc(target->m), hsd_model_desc(draft->m));
        if (algos[a] == HSD_ALGO_SD && !self) continue;
        memset(count, 0, (size_t)V * sizeof *count);
        for (long s = 0; s < N; s++) {
            hsd_gen_result r = HSD_GEN_RESULT_INIT;
            gen(e, prompt, algos[a], 2, 0, 1.0f, 1000 + (uint64_t)s + 1000000 * (uint64_t)a, 1,
                &r);
            assert_int_equal(r.n_ids, 1);
            count[r.ids[0]]++;
            hsd_gen_result_free(&r);
        }
        int df;
        double chi2 = hsd_test_chi2(count, law, V, N, &df);
        double pv = hsd_test_chi2_pvalue(chi2, df);
        printf("%s %-5s first token: chi2 %.1f, df %d, p = %.4f (%ld samples)\n", label,
               hsd_algo_name(algos[a]), chi2, df, pv, N);
        assert_true(pv > 1e-3);
    }
    hsd_engine_free(e);
    free(law), free(count);
}

static void test_first_token_law(void **state) {
    (void)state;
    check_chi2(&baby, &small, "target babyllama/draft stories260K:");
    check_chi2(&small, &baby, "target stories260K/draft babyllama:");
    check_chi2(&small, &small2, "stories260K drafting for itself:");
}

static void test_api_contract(void **state) {
    (void)state;
    hsd_engine *e = NULL;
    assert_int_equal(hsd_engine_init(NULL, small.t, NULL, NULL, &e), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_engine_init(baby.m, baby.t, small.m, NULL, &e), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_engine_init(baby.m, baby.t, small.m, small.t, &e), HSD_OK);
    char why[160];
    /* tok105's 101 characters all exist in tok512 (plus the space) */
    assert_true(hsd_engine_overlap(e) >= 100);
    /* so |T∩D| covers more than half of T (tok105: 105 ids): the rule `hsd pair` states
     * (docs/PAIR.md, rule 2) gives TLI; half of D need not be covered */
    assert_int_equal(hsd_engine_auto_algo(e, why, sizeof why), HSD_ALGO_TLI);
    assert_non_null(strstr(why, "|T∩D|/|T|"));
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = HSD_ALGO_SD; /* different vocabularies */
    hsd_gen_result r = HSD_GEN_RESULT_INIT;
    assert_int_equal(hsd_engine_generate(e, "Once", 4, &p, &r), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "identical vocabularies"));
    p.algo = HSD_ALGO_SLEM;
    p.n_draft = 0;
    assert_int_equal(hsd_engine_generate(e, "Once", 4, &p, &r), HSD_ERR_INVALID_ARG);
    /* stop strings end generation right after the first occurrence */
    p = hsd_gen_default_params();
    p.algo = HSD_ALGO_SLEM;
    p.max_new_tokens = 200;
    const char *stop[] = {"Lily"};
    p.stop = stop;
    p.n_stop = 1;
    assert_int_equal(hsd_engine_generate(e, "Once upon a time", 16, &p, &r), HSD_OK);
    assert_non_null(strstr(r.text, "Lily"));
    assert_true(strlen(strstr(r.text, "Lily")) == 4); /* nothing after it */
    hsd_gen_result_free(&r);
    /* the same with AR gives the same text */
    p.algo = HSD_ALGO_AR;
    hsd_gen_result r2 = HSD_GEN_RESULT_INIT;
    assert_int_equal(hsd_engine_generate(e, "Once upon a time", 16, &p, &r2), HSD_OK);
    assert_non_null(strstr(r2.text, "Lily"));
    assert_int_equal(strlen(strstr(r2.text, "Lily")), 4);
    hsd_gen_result_free(&r2);
    /* an AR-only engine refuses drafting algorithms */
    hsd_engine *solo;
    assert_int_equal(hsd_engine_init(baby.m, baby.t, NULL, NULL, &solo), HSD_OK);
    p.algo = HSD_ALGO_TLI;
    assert_int_equal(hsd_engine_generate(solo, "Once", 4, &p, &r), HSD_ERR_INVALID_ARG);
    hsd_engine_free(solo);
    hsd_engine_free(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_contract),
        cmocka_unit_test(test_k_bound),
        cmocka_unit_test(test_greedy_identical_to_ar),
        cmocka_unit_test(test_greedy_q8_0_kv_identical_to_ar),
        cmocka_unit_test(test_sampled_slem_equals_ar),
        cmocka_unit_test(test_noninjective_drafter),
        cmocka_unit_test(test_first_token_law),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

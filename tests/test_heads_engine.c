/* Draft LM heads on real models: hsd_model_set_head's API, a caller model without a head,
 * losslessness of speculative decoding with reduced drafter heads on the real model pair
 * (greedy identical, first-token law), and `hsd generate --draft-head`. Split from
 * test_heads.c by concept. */
#include "tests/heads_fixture.h"

/* ---------------------------------------------------------------- real model pair ----- */

typedef struct {
    hsd_model *m;
    hsd_tokenizer *t;
} lm;

static int load_lm(lm *x, const char *model, const char *tok) {
    const char *mp = hsd_test_path(model), *tp = hsd_test_path(tok);
    if (!hsd_test_require(mp) || !hsd_test_require(tp)) return -1;
    hsd_model_params prm = hsd_model_default_params();
    prm.n_threads = 1;
    if (hsd_model_load(mp, &prm, &x->m) || hsd_tokenizer_load_file(tp, &x->t)) {
        fprintf(stderr, "%s\n", hsd_last_error());
        return -1;
    }
    return 0;
}

static void free_lm(lm *x) {
    hsd_model_free(x->m), hsd_tokenizer_free(x->t);
}

#define SMALL "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin"
#define BABY "models/babyllama-tok105/model5000.bin", "models/babyllama-tok105/tok105.bin"

/* The model API: heads on a loaded model give the same logits as the head object on its
 * classifier; FULL restores U h; timing counts forwards and rows. */
static void test_model_api(void **state) {
    (void)state;
    lm s;
    if (load_lm(&s, SMALL)) skip();
    int32_t V = hsd_model_vocab_size(s.m), toks[] = {1, 400, 300, 290};
    float *full = malloc((size_t)V * sizeof *full), *z = malloc((size_t)V * sizeof *z);
    int32_t last = 3;
    hsd_model_reset_timing(s.m);
    assert_int_equal(hsd_model_forward(s.m, toks, 4, NULL, &last, 1, full), HSD_OK);
    hsd_model_timing tm;
    assert_int_equal(hsd_model_get_timing(s.m, &tm), HSD_OK);
    assert_int_equal(tm.n_forward, 1);
    assert_int_equal(tm.n_head_rows, 1);
    assert_true(tm.head_ms >= 0 && tm.backbone_ms >= 0);
    assert_string_equal(hsd_model_head_desc(s.m), "full");

    hsd_head_params p = hsd_head_default_params();
    p.kind = HSD_HEAD_SPECULATIVE;
    p.top_k = V; /* every row scored exactly: the full logits */
    p.rank = 8;
    assert_int_equal(hsd_model_set_head(s.m, &p), HSD_OK);
    assert_non_null(strstr(hsd_model_head_desc(s.m), "speculative"));
    assert_int_equal(hsd_model_kv_truncate(s.m, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(s.m, toks, 4, NULL, &last, 1, z), HSD_OK);
    for (int32_t i = 0; i < V; i++) assert_close(z[i], full[i], 10, 1e-5);
    /* calibration on the model's own hidden states over a story leaves the cache empty */
    int32_t *ids;
    size_t n;
    const char *story =
        "Once upon a time, there was a little girl named Lily. She loved to play outside.";
    assert_int_equal(hsd_tokenizer_encode_alloc(s.t, story, strlen(story), true, &ids, &n), HSD_OK);
    p.kind = HSD_HEAD_LOWRANK;
    p.calib_tokens = ids;
    p.n_calib = (int32_t)n;
    assert_int_equal(hsd_model_set_head(s.m, &p), HSD_OK);
    assert_non_null(strstr(hsd_model_head_desc(s.m), "calibrated"));
    assert_int_equal(hsd_model_kv_len(s.m), 0);
    hsd_free(ids);
    /* a failed set_head keeps the previous head */
    p.kind = HSD_HEAD_TRIMMED;
    p.keep_ids = NULL;
    p.n_keep = 0;
    assert_int_equal(hsd_model_set_head(s.m, &p), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_model_head_desc(s.m), "lowrank"));
    char path[64];
    snprintf(path, sizeof path, "/tmp/hsd_test_heads_m%d.safetensors", (int)getpid());
    assert_int_equal(hsd_model_save_head(s.m, path), HSD_OK);
    p.kind = HSD_HEAD_LOWRANK;
    p.factors_path = path;
    assert_int_equal(hsd_model_set_head(s.m, &p), HSD_OK);
    unlink(path);
    assert_int_equal(hsd_model_set_head(s.m, NULL), HSD_OK);
    assert_string_equal(hsd_model_head_desc(s.m), "full");
    assert_int_equal(hsd_model_save_head(s.m, path), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_model_kv_truncate(s.m, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(s.m, toks, 4, NULL, &last, 1, z), HSD_OK);
    assert_memory_equal(z, full, (size_t)V * sizeof *z);
    assert_int_equal(hsd_model_get_timing(s.m, &tm), HSD_OK);
    assert_true(tm.n_forward >= 3);

    free(full), free(z);
    free_lm(&s);
}

static int32_t fake_vocab(void *c) {
    return (void)c, 4;
}
static int32_t fake_kv(void *c) {
    return (void)c, 0;
}
static hsd_status fake_fwd(void *c, const int32_t *t, int32_t n, const int32_t *p, const int32_t *r,
                           int32_t nr, float *l) {
    (void)c, (void)t, (void)n, (void)p, (void)r, (void)nr, (void)l;
    return HSD_OK;
}
static hsd_status fake_trunc(void *c, int32_t len) {
    return (void)c, (void)len, HSD_OK;
}

static void test_caller_model_has_no_head(void **state) {
    (void)state;
    hsd_model_iface iface = {HSD_MODEL_IFACE_INIT, .vocab_size = fake_vocab,
                             .forward = fake_fwd,
                             .kv_len = fake_kv,
                             .kv_truncate = fake_trunc};
    hsd_model *m;
    assert_int_equal(hsd_model_from_iface(&iface, &m), HSD_OK);
    hsd_head_params p = hsd_head_default_params();
    assert_int_equal(hsd_model_set_head(m, &p), HSD_ERR_UNSUPPORTED);
    hsd_model_timing t;
    assert_int_equal(hsd_model_get_timing(m, &t), HSD_ERR_UNSUPPORTED);
    hsd_model_free(m);
}

/* Sets a reduced head on the drafter; kind 0 = the full one. */
static void set_draft_head(lm *d, int kind, const int32_t *keep, int32_t n_keep) {
    hsd_head_params p = hsd_head_default_params();
    if (kind == 1) p.kind = HSD_HEAD_TRIMMED, p.keep_ids = keep, p.n_keep = n_keep;
    if (kind == 2) p.kind = HSD_HEAD_SPECULATIVE, p.top_k = 24, p.rank = 4;
    if (kind == 3) p.kind = HSD_HEAD_LOWRANK, p.rank = 4;
    hsd_status s = hsd_model_set_head(d->m, &p);
    if (s) fprintf(stderr, "set head: %s\n", hsd_last_error());
    assert_int_equal(s, HSD_OK);
}

static void gen(hsd_engine *e, const char *prompt, hsd_algo algo, float temp, uint64_t seed, int n,
                hsd_gen_result *r) {
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = algo;
    p.n_draft = 3;
    p.temp = temp;
    p.seed = seed;
    p.max_new_tokens = n;
    hsd_status s = hsd_engine_generate(e, prompt, strlen(prompt), &p, r);
    if (s) fprintf(stderr, "generate(%s): %s\n", hsd_algo_name(algo), hsd_last_error());
    assert_int_equal(s, HSD_OK);
}

/* The drafter ids of the most frequent `k` tokens of a text (a small frequency trim). */
static int32_t frequent_ids(const lm *x, const char *text, int32_t k, int32_t *out) {
    int32_t V = hsd_model_vocab_size(x->m), *ids;
    size_t n;
    assert_int_equal(hsd_tokenizer_encode_alloc(x->t, text, strlen(text), false, &ids, &n), HSD_OK);
    long *cnt = calloc((size_t)V, sizeof *cnt);
    for (size_t i = 0; i < n; i++) cnt[ids[i]]++;
    int32_t m = 0;
    for (; m < k; m++) {
        int32_t best = -1;
        for (int32_t v = 0; v < V; v++)
            if (cnt[v] > 0 && (best < 0 || cnt[v] > cnt[best])) best = v;
        if (best < 0) break;
        out[m] = best;
        cnt[best] = 0;
    }
    free(cnt), hsd_free(ids);
    return m;
}

static const char *story =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "sunshine. One day, she saw a big tree with a swing. She ran to her mom and said, \"Can we go "
    "to the park?\" Her mom smiled and said yes. They had a lot of fun together.";

/* Greedy output with a reduced drafter head is the AR output, for SD (self-drafting), TLI and
 * SLEM, and each reduced head is really used (acceptance changes or rows are -inf). */
static void test_greedy_lossless(void **state) {
    (void)state;
    lm small, small2, baby;
    if (load_lm(&small, SMALL) || load_lm(&small2, SMALL) || load_lm(&baby, BABY)) skip();
    const char *prompts[] = {"Once upon a time", "Tom and Lily went to the park. They saw",
                             "The dog"};
    int32_t keep_s[64], keep_b[64];
    int32_t n_s = frequent_ids(&small2, story, 60, keep_s),
            n_b = frequent_ids(&baby, story, 30, keep_b);
    struct {
        lm *t, *d;
        hsd_algo algo;
        int32_t *keep, n_keep;
    } cases[] = {{&small, &small2, HSD_ALGO_SD, keep_s, n_s},
                 {&small, &baby, HSD_ALGO_TLI, keep_b, n_b},
                 {&small, &baby, HSD_ALGO_SLEM, keep_b, n_b},
                 {&baby, &small2, HSD_ALGO_SLEM, keep_s, n_s}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        hsd_engine *e;
        assert_int_equal(
            hsd_engine_init(cases[c].t->m, cases[c].t->t, cases[c].d->m, cases[c].d->t, &e),
            HSD_OK);
        for (size_t pi = 0; pi < 3; pi++) {
            hsd_gen_result ar = HSD_GEN_RESULT_INIT;
            hsd_engine_reset(e);
            gen(e, prompts[pi], HSD_ALGO_AR, 0, 1, 60, &ar);
            for (int kind = 0; kind < 4; kind++) {
                set_draft_head(cases[c].d, kind, cases[c].keep, cases[c].n_keep);
                hsd_engine_reset(e);
                hsd_gen_result r = HSD_GEN_RESULT_INIT;
                gen(e, prompts[pi], cases[c].algo, 0, 1, 60, &r);
                if (r.n_ids != ar.n_ids ||
                    memcmp(r.ids, ar.ids, (size_t)ar.n_ids * sizeof *ar.ids)) {
                    fprintf(stderr, "%s head %d prompt %zu: differs from AR\n%s\n---\n%s\n",
                            hsd_algo_name(cases[c].algo), kind, pi, r.text, ar.text);
                    fail();
                }
                if (pi == 0)
                    printf("%-4s drafter head %-55s acceptance %.3f, tau %.2f\n",
                           hsd_algo_name(cases[c].algo), hsd_model_head_desc(cases[c].d->m),
                           r.acceptance_rate, r.tau);
                hsd_gen_result_free(&r);
            }
            hsd_gen_result_free(&ar);
        }
        set_draft_head(cases[c].d, 0, NULL, 0);
        hsd_engine_free(e);
    }
    /* TLI prunes the drafter head to T ∩ D: the overlap ids are the drafter ids that map */
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(baby.m, baby.t, small2.m, small2.t, &e), HSD_OK);
    int32_t n_ov = 0, ids[512];
    assert_int_equal(hsd_engine_overlap_ids(e, ids, 1, &n_ov), HSD_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(n_ov, hsd_engine_overlap(e));
    assert_int_equal(hsd_engine_overlap_ids(e, ids, 512, &n_ov), HSD_OK);
    assert_int_equal(n_ov, hsd_engine_overlap(e));
    assert_true(n_ov > 0 && n_ov < 512);
    set_draft_head(&small2, 1, ids, n_ov);
    hsd_gen_result ar = HSD_GEN_RESULT_INIT, r = HSD_GEN_RESULT_INIT;
    gen(e, prompts[0], HSD_ALGO_AR, 0, 1, 60, &ar);
    hsd_engine_reset(e);
    gen(e, prompts[0], HSD_ALGO_TLI, 0, 1, 60, &r);
    assert_int_equal(r.n_ids, ar.n_ids);
    assert_memory_equal(r.ids, ar.ids, (size_t)ar.n_ids * sizeof *ar.ids);
    printf("TLI, drafter stories260K pruned to |T∩D| = %d of 512 rows: acceptance %.3f\n", n_ov,
           r.acceptance_rate);
    hsd_gen_result_free(&ar), hsd_gen_result_free(&r);
    hsd_engine_free(e);
    free_lm(&small), free_lm(&small2), free_lm(&baby);
}

/* At temperature 1 the first token's law is the target's whatever the drafter head: Pearson
 * chi-square against softmax of the target's logits, for SD with a low-rank and a trimmed
 * self-drafter and TLI with a speculative babyllama drafter. */
static void test_first_token_law(void **state) {
    (void)state;
    lm small, small2, baby;
    if (load_lm(&small, SMALL) || load_lm(&small2, SMALL) || load_lm(&baby, BABY)) skip();
    const char *prompt = "Once upon a time, there was a little";
    int32_t V = hsd_model_vocab_size(small.m);
    double *law = calloc((size_t)V, sizeof *law);
    long *count = calloc((size_t)V, sizeof *count);
    {
        int32_t *ids;
        size_t n;
        assert_int_equal(
            hsd_tokenizer_encode_alloc(small.t, prompt, strlen(prompt), false, &ids, &n), HSD_OK);
        int32_t *all = malloc((n + 1) * sizeof *all), row = (int32_t)n;
        all[0] = hsd_tokenizer_bos_id(small.t);
        memcpy(all + 1, ids, n * sizeof *ids);
        float *logits = malloc((size_t)V * sizeof *logits),
              *probs = malloc((size_t)V * sizeof *probs);
        assert_int_equal(hsd_model_forward(small.m, all, (int32_t)n + 1, NULL, &row, 1, logits),
                         HSD_OK);
        assert_int_equal(hsd_model_kv_truncate(small.m, 0), HSD_OK);
        hsd_sampler_params sp = {1.0f, 0, 1.0f};
        assert_int_equal(hsd_sample_probs(logits, V, &sp, probs), HSD_OK);
        for (int32_t i = 0; i < V; i++) law[i] = probs[i];
        free(all), free(logits), free(probs), hsd_free(ids);
    }
    int32_t keep[64];
    int32_t n_keep = frequent_ids(&small2, story, 40, keep);
    struct {
        lm *d;
        hsd_algo algo;
        int kind;
        const char *label;
    } cases[] = {{&small2, HSD_ALGO_SD, 3, "SD, low-rank r=4 drafter"},
                 {&small2, HSD_ALGO_SD, 1, "SD, trimmed 40-row drafter"},
                 {&baby, HSD_ALGO_TLI, 2, "TLI, speculative k=24 drafter"}};
    const long N = 20000;
    for (size_t c = 0; c < 3; c++) {
        set_draft_head(cases[c].d, cases[c].kind, keep, n_keep);
        hsd_engine *e;
        assert_int_equal(hsd_engine_init(small.m, small.t, cases[c].d->m, cases[c].d->t, &e),
                         HSD_OK);
        memset(count, 0, (size_t)V * sizeof *count);
        long accepted = 0, drafted = 0;
        for (long s = 0; s < N; s++) {
            hsd_gen_result r = HSD_GEN_RESULT_INIT;
            gen(e, prompt, cases[c].algo, 1.0f, 5000 + (uint64_t)s + 1000000 * (uint64_t)c, 1, &r);
            assert_int_equal(r.n_ids, 1);
            count[r.ids[0]]++;
            accepted += r.n_accepted, drafted += r.n_drafted;
            hsd_gen_result_free(&r);
        }
        int df;
        double chi2 = hsd_test_chi2(count, law, V, N, &df), pv = hsd_test_chi2_pvalue(chi2, df);
        printf("%s: chi2 %.1f, df %d, p = %.4f (%ld samples, acceptance %.3f)\n", cases[c].label,
               chi2, df, pv, N, drafted ? (double)accepted / drafted : 0);
        assert_true(pv > 1e-3);
        /* the head is really reduced: some drafts get rejected */
        assert_true(accepted < drafted);
        hsd_engine_free(e);
        set_draft_head(cases[c].d, 0, NULL, 0);
    }
    free(law), free(count);
    free_lm(&small), free_lm(&small2), free_lm(&baby);
}

/* The CLI: --draft-head keeps greedy output identical to AR (ids from --json), each head spec
 * form parses, a bad spec fails, and bench heads prints the acceptance–cost table. */
static void test_cli_draft_head(void **state) {
    (void)state;
    const char *tm = hsd_test_path("models/stories260K/stories260K.bin"),
               *tt = hsd_test_path("models/stories260K/tok512.bin");
    const char *dm = hsd_test_path("models/babyllama-tok105/model5000.bin"),
               *dt = hsd_test_path("models/babyllama-tok105/tok105.bin");
    if (!hsd_test_require(tm) || !hsd_test_require(tt) || !hsd_test_require(dm) ||
        !hsd_test_require(dt))
        skip();
    char cmd[2048], ids_path[64], st_path[64];
    snprintf(ids_path, sizeof ids_path, "/tmp/hsd_test_heads_cli_%d.ids", (int)getpid());
    snprintf(st_path, sizeof st_path, "/tmp/hsd_test_heads_cli_%d.safetensors", (int)getpid());
    FILE *f = fopen(ids_path, "w");
    assert_non_null(f);
    fprintf(f, "# a few characters\n");
    for (int i = 3; i < 60; i++) fprintf(f, "%d\n", i);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s generate --target %s --target-tokenizer %s --algo ar -p 'Once upon a time' -n 40 "
             "--json",
             hsd_test_cli(), tm, tt);
    char *ar = hsd_test_run(cmd);
    char *ar_ids = strstr(ar, "\"ids\"");
    assert_non_null(ar_ids);
    *strchr(ar_ids, ']') = 0;
    const char *heads[] = {"full",      "tli",       "trim:IDS",       "tli:IDS",
                           "spec:16/8", "lowrank:8", "lowrank:8:SAVED"};
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
        char spec[160];
        if (!strcmp(heads[i], "trim:IDS") || !strcmp(heads[i], "tli:IDS"))
            snprintf(spec, sizeof spec, "%.*s%s", (int)strcspn(heads[i], ":") + 1, heads[i],
                     ids_path);
        else if (!strcmp(heads[i], "lowrank:8:SAVED"))
            snprintf(spec, sizeof spec, "lowrank:8:%s", st_path);
        else
            snprintf(spec, sizeof spec, "%s", heads[i]);
        for (int algo = 0; algo < 2; algo++) {
            snprintf(cmd, sizeof cmd,
                     "%s generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer "
                     "%s --algo %s "
                     "-p 'Once upon a time' -n 40 --json --draft-head %s%s%s",
                     hsd_test_cli(), tm, tt, dm, dt, algo ? "slem" : "tli", spec,
                     i == 5 ? " --save-draft-head " : "", i == 5 ? st_path : "");
            char *out = hsd_test_run(cmd);
            char *ids = strstr(out, "\"ids\"");
            assert_non_null(ids);
            *strchr(ids, ']') = 0;
            assert_string_equal(ids, ar_ids);
            free(out);
        }
    }
    /* bad specs fail with a message */
    snprintf(cmd, sizeof cmd,
             "%s generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s --algo "
             "tli -p x -n 2 "
             "--draft-head spec:abc 2>&1",
             hsd_test_cli(), tm, tt, dm, dt);
    FILE *pp = popen(cmd, "r");
    char buf[2048];
    size_t got = fread(buf, 1, sizeof buf - 1, pp);
    buf[got] = 0;
    assert_int_not_equal(pclose(pp), 0);
    assert_non_null(strstr(buf, "draft head 'spec:abc'")); /* names the spec */
    snprintf(cmd, sizeof cmd,
             "%s bench heads --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s "
             "--algo slem -p "
             "'Once upon a time' -n 16 --heads 'full;lowrank:8;trim:%s'",
             hsd_test_cli(), tm, tt, dm, dt, ids_path);
    char *out = hsd_test_run(cmd);
    assert_non_null(strstr(out, "kappa"));
    assert_non_null(strstr(out, "lowrank: rank 8 of 128"));
    assert_non_null(strstr(out, "trimmed: 57 of 105 rows"));
    free(out);
    free(ar);
    unlink(ids_path);
    unlink(st_path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_api),       cmocka_unit_test(test_caller_model_has_no_head),
        cmocka_unit_test(test_greedy_lossless), cmocka_unit_test(test_first_token_law),
        cmocka_unit_test(test_cli_draft_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

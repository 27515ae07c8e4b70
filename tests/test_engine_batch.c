/* hsd_engine_generate_batch on the real TinyStories pair (stories260K + tok512, babyllama +
 * tok105; models loaded with 8 sequence slots), both directions and both self-drafting
 * pairs (for SD):
 *   - greedy: for AR, SD, union, TLI, SLEM and AUTO (plain and adaptive k), every sequence of
 *     a batch has the ids of hsd_engine_generate on its prompt, and those of AR. Batches mix
 *     prompt lengths (an empty prompt, a few words, up to 150 characters) and sequences that
 *     finish at different times (EOS, stop strings, the drafter's context filling up);
 *   - sampling (temp 1, and temp 0.8 with top-k/top-p): sequence i of a batch with seed s
 *     equals hsd_engine_generate with seed s + i;
 *   - a caller's model without forward_batch (per-slot fallback) gives the same outputs;
 *   - one batched target forward per round for the whole batch (counted through an iface);
 *   - bad arguments: 0 prompts, NULL prompts/results, a NULL prompt, too few slots (target or
 *     drafter), unknown algorithm, SD across vocabularies.
 * Coverage: 24 of the 90 bench prompts (every 4th, each also clipped shorter for length
 * variety) in batches of 8 for the greedy check; 8 prompts for sampling. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

#define N_SEQ 8

typedef hsd_test_lm lm;

static lm small, baby, small2, baby2; /* *2: second instances for self-drafting (SD) */
static char *prompts[128];
static int n_prompts;

static int load_lm(lm *x, const char *model, const char *tok) {
    return hsd_test_load_lm(x, model, tok, N_SEQ);
}

static void load_prompts(void) { n_prompts = hsd_test_bench_prompts(prompts, 128, 150); }

static int setup(void **state) {
    (void)state;
    if (load_lm(&small, "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin") ||
        load_lm(&baby, "models/babyllama-tok105/model5000.bin",
                "models/babyllama-tok105/tok105.bin") ||
        load_lm(&small2, "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin") ||
        load_lm(&baby2, "models/babyllama-tok105/model5000.bin",
                "models/babyllama-tok105/tok105.bin"))
        return -1;
    load_prompts();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    lm *all[] = {&small, &baby, &small2, &baby2};
    for (int i = 0; i < 4; i++) hsd_model_free(all[i]->m), hsd_tokenizer_free(all[i]->t);
    for (int i = 0; i < n_prompts; i++) free(prompts[i]);
    return 0;
}

static hsd_gen_params params(hsd_algo algo, int k, bool adaptive, float temp, uint64_t seed,
                             int n) {
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = algo;
    p.n_draft = k;
    p.adaptive_k = adaptive;
    p.k_max = 12;
    p.temp = temp;
    p.seed = seed;
    p.max_new_tokens = n;
    return p;
}

static int same_ids(const hsd_gen_result *a, const hsd_gen_result *b) {
    return a->n_ids == b->n_ids && !memcmp(a->ids, b->ids, (size_t)a->n_ids * sizeof(int32_t));
}

static void batch(hsd_engine *e, const char *const *ps, int B, const hsd_gen_params *p,
                  hsd_gen_result *r) {
    hsd_status s = hsd_engine_generate_batch(e, ps, NULL, B, p, r);
    if (s) fprintf(stderr, "generate_batch(%s): %s\n", hsd_algo_name(p->algo), hsd_last_error());
    assert_int_equal(s, HSD_OK);
}

static void single(hsd_engine *e, const char *prompt, const hsd_gen_params *p, hsd_gen_result *r) {
    hsd_status s = hsd_engine_generate(e, prompt, strlen(prompt), p, r);
    if (s) fprintf(stderr, "generate(%s): %s\n", hsd_algo_name(p->algo), hsd_last_error());
    assert_int_equal(s, HSD_OK);
}

static void free_all(hsd_gen_result *r, int n) {
    for (int i = 0; i < n; i++) hsd_gen_result_free(&r[i]);
}

/* The batches of the greedy check: 8 prompts each, lengths mixed (an empty prompt, a word,
 * clipped to 20..150 characters). The strings are owned by the caller (freed by it). */
static int make_batch(int which, char **out) {
    static const size_t clips[N_SEQ] = {150, 0, 30, 150, 90, 8, 150, 45};
    for (int i = 0; i < N_SEQ; i++) {
        const char *src = prompts[(which * N_SEQ + i) * 4 % n_prompts];
        out[i] = clips[i] ? hsd_test_clip_prompt(src, clips[i]) : strdup("");
    }
    return N_SEQ;
}

typedef struct {
    long seqs, distinct_lengths, early_stops;
} coverage;

/* Batch vs single vs AR for one algorithm on one batch of prompts. */
static void check_greedy(hsd_engine *e, char **ps, int B, hsd_algo algo, bool adaptive,
                         const char *stop, const char *label, coverage *cov) {
    hsd_gen_params p = params(algo, 4, adaptive, 0, 0, 40),
                   par = params(HSD_ALGO_AR, 1, false, 0, 0, 40);
    const char *stops[1] = {stop};
    if (stop) p.stop = par.stop = stops, p.n_stop = par.n_stop = 1;
    hsd_gen_result rb[N_SEQ], ra[N_SEQ];
    hsd_gen_results_init(rb, N_SEQ);
    hsd_gen_results_init(ra, N_SEQ);
    batch(e, (const char *const *)ps, B, &p, rb);
    batch(e, (const char *const *)ps, B, &par, ra);
    int32_t min_n = 1 << 30, max_n = 0;
    for (int i = 0; i < B; i++) {
        hsd_gen_result r1 = HSD_GEN_RESULT_INIT;
        single(e, ps[i], &p, &r1);
        if (!same_ids(&rb[i], &r1) || !same_ids(&rb[i], &ra[i]))
            fprintf(stderr,
                    "%s %s%s seq %d differs (prompt \"%s\"):\n batch: %s\n single: %s\n AR: %s\n",
                    label, hsd_algo_name(algo), adaptive ? " adaptive" : "", i, ps[i], rb[i].text,
                    r1.text, ra[i].text);
        assert_true(same_ids(&rb[i], &r1));
        assert_true(same_ids(&rb[i], &ra[i]));
        assert_int_equal(rb[i].algo, r1.algo);
        assert_int_equal(rb[i].n_rounds, r1.n_rounds); /* the same rounds, not only the same ids */
        assert_int_equal(rb[i].n_drafted, r1.n_drafted);
        hsd_gen_result_free(&r1);
        if (rb[i].n_ids < min_n) min_n = rb[i].n_ids;
        if (rb[i].n_ids > max_n) max_n = rb[i].n_ids;
        cov->early_stops += rb[i].n_ids < 40;
    }
    cov->seqs += B;
    cov->distinct_lengths += min_n != max_n;
    free_all(rb, B), free_all(ra, B);
}

static void check_pair(lm *target, lm *draft, bool self, const char *label) {
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    coverage cov = {0};
    const hsd_algo algos[] = {HSD_ALGO_SLEM, HSD_ALGO_TLI, HSD_ALGO_UNION, HSD_ALGO_SD,
                              HSD_ALGO_AUTO};
    for (int b = 0; b < 3; b++) {
        char *ps[N_SEQ];
        int B = make_batch(b, ps);
        for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
            if (algos[a] == HSD_ALGO_SD && !self) continue;
            /* batch 1 ends sequences at the first full stop: they finish at different rounds */
            check_greedy(e, ps, B, algos[a], b == 2, b == 1 ? "." : NULL, label, &cov);
        }
        for (int i = 0; i < B; i++) free(ps[i]);
    }
    printf("%s: %ld sequences identical to single and to AR (batches with differing output "
           "lengths: %ld, "
           "sequences ended before the budget: %ld)\n",
           label, cov.seqs, cov.distinct_lengths, cov.early_stops);
    assert_true(cov.distinct_lengths > 0);
    assert_true(cov.early_stops > 0);
    hsd_engine_free(e);
}

static void test_greedy_batch_equals_single(void **state) {
    (void)state;
    assert_true(n_prompts >= 90);
    check_pair(&baby, &small, false, "target babyllama, drafter stories260K");
    check_pair(&small, &baby, false, "target stories260K, drafter babyllama");
    check_pair(&small, &small2, true, "stories260K drafting for itself");
    check_pair(&baby, &baby2, true, "babyllama drafting for itself");
}

/* Sequence i of a batch with seed s = hsd_engine_generate with seed s + i. */
static void check_sampled(lm *target, lm *draft, const char *label) {
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    const hsd_algo algos[] = {HSD_ALGO_AR, HSD_ALGO_SLEM, HSD_ALGO_TLI, HSD_ALGO_UNION,
                              HSD_ALGO_SD};
    const bool self =
        target->t == draft->t || !strcmp(hsd_model_desc(target->m), hsd_model_desc(draft->m));
    int checked = 0;
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
        if (algos[a] == HSD_ALGO_SD && !self) continue;
        for (int v = 0; v < 2; v++) {
            const char *ps[N_SEQ];
            for (int i = 0; i < N_SEQ; i++) ps[i] = prompts[(i * 11 + 3 * (int)a + v) % n_prompts];
            hsd_gen_params p = params(algos[a], 3, v == 1, v ? 0.8f : 1.0f, 1000 + 77 * a, 32);
            if (v) p.top_k = 40, p.top_p = 0.9f;
            hsd_gen_result rb[N_SEQ];
            hsd_gen_results_init(rb, N_SEQ);
            batch(e, ps, N_SEQ, &p, rb);
            for (int i = 0; i < N_SEQ; i++) {
                hsd_gen_params pi = p;
                pi.seed = p.seed + (uint64_t)i;
                hsd_gen_result r1 = HSD_GEN_RESULT_INIT;
                single(e, ps[i], &pi, &r1);
                if (!same_ids(&rb[i], &r1))
                    fprintf(stderr, "%s %s temp %g seq %d differs:\n batch:  %s\n single: %s\n",
                            label, hsd_algo_name(algos[a]), p.temp, i, rb[i].text, r1.text);
                assert_true(same_ids(&rb[i], &r1));
                checked++;
                hsd_gen_result_free(&r1);
            }
            /* different seeds per sequence: the same prompt twice gives two samples */
            free_all(rb, N_SEQ);
        }
    }
    printf("%s: %d sampled sequences equal to single runs with seed + i\n", label, checked);
    hsd_engine_free(e);
}

static void test_sampling_seed_scheme(void **state) {
    (void)state;
    check_sampled(&baby, &small, "target babyllama, drafter stories260K");
    check_sampled(&small, &baby, "target stories260K, drafter babyllama");
    check_sampled(&small, &small2, "stories260K drafting for itself");
    /* one prompt repeated: the per-sequence seeds make the samples differ */
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(small.m, small.t, baby.m, baby.t, &e), HSD_OK);
    const char *same[4] = {"Once upon a time", "Once upon a time", "Once upon a time",
                           "Once upon a time"};
    hsd_gen_params p = params(HSD_ALGO_SLEM, 4, false, 1.0f, 5, 24);
    hsd_gen_result r[4];
    hsd_gen_results_init(r, 4);
    batch(e, same, 4, &p, r);
    int differ = 0;
    for (int i = 1; i < 4; i++) differ += !same_ids(&r[0], &r[i]);
    assert_true(differ > 0);
    free_all(r, 4);
    hsd_engine_free(e);
}

/* Issue 14: every algorithm, SLRS included, through the one driver, for B in {1, 3, 8}: each
 * sequence of a batch equals its single run (greedy, and sampled with seed + i); greedy
 * output also equals AR's (the target's own argmax decoding, the oracle of exactness). */
static void check_every_algorithm(lm *target, lm *draft, const hsd_algo *algos, int n_algos,
                                  const char *label) {
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    static const int Bs[3] = {1, 3, 8};
    int checked = 0;
    for (int a = 0; a < n_algos; a++)
        for (int bi = 0; bi < 3; bi++)
            for (int v = 0; v < 3; v++) { /* greedy, sampled, SLRS single-forward (greedy) */
                if (v == 2 && algos[a] != HSD_ALGO_SLRS) continue;
                int B = Bs[bi];
                const char *ps[N_SEQ];
                for (int i = 0; i < B; i++) ps[i] = prompts[(i * 7 + 5 * bi + a) % n_prompts];
                hsd_gen_params p = params(algos[a], 3, v == 1, v == 1 ? 1.0f : 0, 4242 + 31 * a, 24);
                p.slrs_single_forward = v == 2;
                hsd_gen_result rb[N_SEQ];
                hsd_gen_results_init(rb, N_SEQ);
                batch(e, ps, B, &p, rb);
                for (int i = 0; i < B; i++) {
                    hsd_gen_params pi = p;
                    pi.seed = p.seed + (uint64_t)i;
                    hsd_gen_result r1 = HSD_GEN_RESULT_INIT, ra = HSD_GEN_RESULT_INIT;
                    single(e, ps[i], &pi, &r1);
                    if (!same_ids(&rb[i], &r1))
                        fprintf(stderr, "%s %s B=%d v%d seq %d differs:\n batch:  %s\n single: %s\n",
                                label, hsd_algo_name(algos[a]), B, v, i, rb[i].text, r1.text);
                    assert_true(same_ids(&rb[i], &r1));
                    assert_int_equal(rb[i].n_rounds, r1.n_rounds);
                    assert_int_equal(rb[i].stop_reason, r1.stop_reason);
                    assert_true(rb[i].first_accept_rate == r1.first_accept_rate);
                    if (v != 1) {
                        hsd_gen_params par = params(HSD_ALGO_AR, 1, false, 0, 0, 24);
                        single(e, ps[i], &par, &ra);
                        assert_true(same_ids(&rb[i], &ra));
                        hsd_gen_result_free(&ra);
                    }
                    checked++;
                    hsd_gen_result_free(&r1);
                }
                free_all(rb, B);
            }
    printf("%s: %d batched sequences equal to their single runs (B = 1, 3, 8)\n", label, checked);
    hsd_engine_free(e);
}

static void test_every_algorithm_every_batch_size(void **state) {
    (void)state;
    const hsd_algo cross[] = {HSD_ALGO_AR,   HSD_ALGO_UNION, HSD_ALGO_TLI,
                              HSD_ALGO_SLEM, HSD_ALGO_SLRS};
    check_every_algorithm(&baby, &small, cross, 5, "target babyllama, drafter stories260K");
    const hsd_algo self[] = {HSD_ALGO_SD};
    check_every_algorithm(&small, &small2, self, 1, "stories260K drafting for itself");
}

/* A caller's model with slots but no forward_batch: one forward per sequence, same output. */
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

static void test_iface_without_batch(void **state) {
    (void)state;
    hsd_model_iface it = {sizeof(hsd_model_iface), NULL, w_vocab, w_nctx, w_forward, w_kvlen, w_trunc,
                          NULL, NULL,    w_nseq, w_select,  NULL};
    hsd_model *wt, *wd;
    it.ctx = baby.m;
    assert_int_equal(hsd_model_from_iface(&it, &wt), HSD_OK);
    it.ctx = small.m;
    assert_int_equal(hsd_model_from_iface(&it, &wd), HSD_OK);
    hsd_engine *ew, *e;
    assert_int_equal(hsd_engine_init(wt, baby.t, wd, small.t, &ew), HSD_OK);
    assert_int_equal(hsd_engine_init(baby.m, baby.t, small.m, small.t, &e), HSD_OK);
    const char *ps[5] = {prompts[1], prompts[40], "", prompts[70], "The cat"};
    hsd_gen_params p = params(HSD_ALGO_SLEM, 4, false, 0, 0, 32);
    hsd_gen_result a[5], b[5];
    hsd_gen_results_init(a, 5);
    hsd_gen_results_init(b, 5);
    batch(ew, ps, 5, &p, a);
    batch(e, ps, 5, &p, b);
    for (int i = 0; i < 5; i++) assert_true(same_ids(&a[i], &b[i]));
    free_all(a, 5), free_all(b, 5);
    hsd_engine_free(ew);
    /* no slots at all: a batch of one works, more do not */
    hsd_model_iface plain = {sizeof(hsd_model_iface), baby.m, w_vocab, w_nctx, w_forward, w_kvlen, w_trunc,
                             NULL,   NULL,    NULL,   NULL,      NULL};
    hsd_model *pm;
    assert_int_equal(hsd_model_from_iface(&plain, &pm), HSD_OK);
    assert_int_equal(hsd_model_n_seq(pm), 1);
    assert_int_equal(hsd_engine_init(pm, baby.t, NULL, NULL, &ew), HSD_OK);
    p.algo = HSD_ALGO_AR;
    assert_int_equal(hsd_engine_generate_batch(ew, ps, NULL, 1, &p, a), HSD_OK);
    hsd_gen_result r1 = HSD_GEN_RESULT_INIT;
    single(e, ps[0], &p, &r1);
    assert_true(same_ids(&a[0], &r1));
    hsd_gen_result_free(&a[0]), hsd_gen_result_free(&r1);
    assert_int_equal(hsd_engine_generate_batch(ew, ps, NULL, 2, &p, a), HSD_ERR_INVALID_ARG);
    hsd_engine_free(ew);
    hsd_engine_free(e);
    hsd_model_free(pm);
    hsd_model_free(wt);
    hsd_model_free(wd);
}

/* ONE target forward per round for the whole batch: a counting wrapper sees as many batched
 * target forwards as the longest sequence has rounds, and no single-sequence forward. The
 * prompts' prefill (causal forwards asking for no logits, lib/engine/prefill.c) comes before
 * the rounds' forwards, batched too, and is counted apart; when no sequence has candidates
 * (AR) the prefill's last chunks carry the first rows and are the first round's forward. */
typedef struct counting {
    hsd_model *inner;
    int forwards, batched, rows, prefill;
} counting;
static int32_t c_vocab(void *c) {
    return hsd_model_vocab_size(((counting *)c)->inner);
}
static int32_t c_nctx(void *c) {
    return hsd_model_n_ctx(((counting *)c)->inner);
}
static hsd_status c_forward(void *c, const int32_t *t, int32_t n, const int32_t *par,
                            const int32_t *rows, int32_t n_rows, float *logits) {
    ((counting *)c)->forwards++;
    return hsd_model_forward(((counting *)c)->inner, t, n, par, rows, n_rows, logits);
}
static int32_t c_kvlen(void *c) {
    return hsd_model_kv_len(((counting *)c)->inner);
}
static hsd_status c_trunc(void *c, int32_t len) {
    return hsd_model_kv_truncate(((counting *)c)->inner, len);
}
static int32_t c_nseq(void *c) {
    return hsd_model_n_seq(((counting *)c)->inner);
}
static hsd_status c_select(void *c, int32_t s) {
    return hsd_model_seq_select(((counting *)c)->inner, s);
}
static hsd_status c_batch(void *c, const hsd_model_batch_seq *b, int32_t n, float *logits) {
    counting *x = c;
    bool prefill = true;
    for (int32_t i = 0; i < n; i++) prefill &= b[i].n_rows == 0 && !b[i].parents;
    if (prefill) {
        x->prefill++;
        return hsd_model_forward_batch(x->inner, b, n, logits);
    }
    x->batched++;
    x->rows += n;
    return hsd_model_forward_batch(x->inner, b, n, logits);
}

static void test_one_target_forward_per_round(void **state) {
    (void)state;
    counting ct = {baby.m, 0, 0, 0, 0}, cd = {small.m, 0, 0, 0, 0};
    hsd_model_iface it = {sizeof(hsd_model_iface), &ct,  c_vocab, c_nctx, c_forward, c_kvlen, c_trunc,
                          NULL, NULL,    c_nseq, c_select,  c_batch};
    hsd_model *t, *d;
    assert_int_equal(hsd_model_from_iface(&it, &t), HSD_OK);
    it.ctx = &cd;
    assert_int_equal(hsd_model_from_iface(&it, &d), HSD_OK);
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(t, baby.t, d, small.t, &e), HSD_OK);
    const char *ps[6] = {prompts[2], prompts[33], "", prompts[64], "The cat", prompts[80]};
    const hsd_algo algos[] = {HSD_ALGO_AR, HSD_ALGO_SLEM, HSD_ALGO_TLI};
    for (size_t a = 0; a < 3; a++) {
        hsd_gen_params p = params(algos[a], 4, false, 0, 0, 40);
        hsd_gen_result r[6];
        hsd_gen_results_init(r, 6);
        ct.forwards = ct.batched = ct.rows = ct.prefill = cd.forwards = cd.batched = cd.prefill = 0;
        batch(e, ps, 6, &p, r);
        int max_rounds = 0, sum_rounds = 0;
        for (int i = 0; i < 6; i++) {
            if (r[i].n_rounds > max_rounds) max_rounds = r[i].n_rounds;
            sum_rounds += r[i].n_rounds;
        }
        printf("%s: %d sequences, %d rounds in all, %d batched target forwards (%d entries), %d "
               "batched drafter forwards; prefill: %d target and %d drafter forwards\n",
               hsd_algo_name(algos[a]), 6, sum_rounds, ct.batched, ct.rows, cd.batched,
               ct.prefill, cd.prefill);
        assert_int_equal(ct.forwards, 0);
        assert_int_equal(cd.forwards, 0);
        assert_int_equal(ct.batched, max_rounds);
        assert_int_equal(ct.rows, sum_rounds);
        /* the drafter: one batched forward per draft position, at most k per round, and at
         * most one prefill forward per round that asks for rows (its chunks' last rows serve
         * the first drafts, lib/engine/prefill.c), counted with them */
        assert_true(cd.batched <= (4 + 1) * max_rounds);
        if (algos[a] == HSD_ALGO_AR) assert_int_equal(cd.batched, 0);
        free_all(r, 6);
    }
    hsd_engine_free(e);
    hsd_model_free(t);
    hsd_model_free(d);
}

static void test_bad_arguments(void **state) {
    (void)state;
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(baby.m, baby.t, small.m, small.t, &e), HSD_OK);
    const char *ps[3] = {"Once", "The dog", "A"};
    hsd_gen_params p = params(HSD_ALGO_SLEM, 4, false, 0, 0, 8);
    hsd_gen_result r[N_SEQ + 1];
    hsd_gen_results_init(r, N_SEQ + 1);
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 0, &p, r), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, -1, &p, r), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_engine_generate_batch(e, NULL, NULL, 2, &p, r), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 2, &p, NULL), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_engine_generate_batch(NULL, ps, NULL, 2, &p, r), HSD_ERR_INVALID_ARG);
    const char *with_null[2] = {"Once", NULL};
    assert_int_equal(hsd_engine_generate_batch(e, with_null, NULL, 2, &p, r), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "prompt 1"));
    const size_t lens[2] = {4, 0}; /* a NULL prompt of length 0 is an empty prompt */
    assert_int_equal(hsd_engine_generate_batch(e, with_null, lens, 2, &p, r), HSD_OK);
    free_all(r, 2);
    /* more prompts than slots */
    const char *many[N_SEQ + 1];
    for (int i = 0; i <= N_SEQ; i++) many[i] = "Once";
    assert_int_equal(hsd_engine_generate_batch(e, many, NULL, N_SEQ + 1, &p, r),
                     HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "n_seq"));
    p.n_draft = 0;
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 2, &p, r), HSD_ERR_INVALID_ARG);
    p.n_draft = 4;
    p.algo = (hsd_algo)99;
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 2, &p, r), HSD_ERR_INVALID_ARG);
    p.algo = HSD_ALGO_TLI;
    p.n_stop = 3; /* stop NULL with n_stop > 0 (the old batch copy dereferenced it) */
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 2, &p, r), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "stop"));
    p.n_stop = 0;
    p.algo = HSD_ALGO_SD; /* different vocabularies */
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 2, &p, r), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "identical vocabularies"));
    hsd_engine_free(e);
    /* a drafter with fewer slots than the batch (the target has enough) */
    hsd_model *d2;
    hsd_model_params mp = hsd_model_default_params();
    mp.n_seq = 2;
    mp.n_threads = 1;
    assert_int_equal(hsd_model_load(hsd_test_path("models/stories260K/stories260K.bin"), &mp, &d2),
                     HSD_OK);
    assert_int_equal(hsd_engine_init(baby.m, baby.t, d2, small.t, &e), HSD_OK);
    p.algo = HSD_ALGO_TLI;
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 3, &p, r), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "draft"));
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 2, &p, r), HSD_OK);
    free_all(r, 2);
    p.algo = HSD_ALGO_AR; /* AR does not use the drafter */
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 3, &p, r), HSD_OK);
    /* no tokens asked: empty results */
    free_all(r, 3);
    p.max_new_tokens = 0;
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 3, &p, r), HSD_OK);
    for (int i = 0; i < 3; i++) assert_int_equal(r[i].n_ids, 0);
    free_all(r, 3);
    hsd_engine_free(e);
    hsd_model_free(d2);
}

/* Single-sequence generation after a batch (the prefix cache was forgotten, the slot
 * selection restored) still gives the same output as before it. */
static void test_single_after_batch(void **state) {
    (void)state;
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(baby.m, baby.t, small.m, small.t, &e), HSD_OK);
    hsd_gen_params p = params(HSD_ALGO_SLEM, 4, false, 0, 0, 24);
    hsd_gen_result before = HSD_GEN_RESULT_INIT, after = HSD_GEN_RESULT_INIT, rb[4];
    hsd_gen_results_init(rb, 4);
    single(e, prompts[5], &p, &before);
    const char *ps[4] = {prompts[6], prompts[7], prompts[5], prompts[8]};
    assert_int_equal(hsd_model_seq_select(baby.m, 0), HSD_OK);
    batch(e, ps, 4, &p, rb);
    assert_int_equal(hsd_model_seq_current(baby.m), 0);
    assert_true(same_ids(&before, &rb[2]));
    single(e, prompts[5], &p, &after);
    assert_true(same_ids(&before, &after));
    hsd_gen_result_free(&before), hsd_gen_result_free(&after), free_all(rb, 4);
    hsd_engine_free(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_single_after_batch),
        cmocka_unit_test(test_iface_without_batch),
        cmocka_unit_test(test_one_target_forward_per_round),
        cmocka_unit_test(test_greedy_batch_equals_single),
        cmocka_unit_test(test_sampling_seed_scheme),
        cmocka_unit_test(test_every_algorithm_every_batch_size),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

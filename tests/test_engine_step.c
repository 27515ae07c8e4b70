/* The running batch (hsd_batch_*: continuous batching) on the real TinyStories pair
 * (target stories260K + tok512, drafter babyllama + tok105, and the reverse), against the
 * oracle that batching must not change: hsd_engine_generate on each request alone.
 *   - 12 requests join a batch of 4 slots at different steps (two at once, one per step,
 *     then whenever a slot frees up), so sequences start mid-way through others, leave at
 *     different rounds (EOS, stop strings, budgets) and their slots are reused. They mix
 *     algorithms (AR, TLI, SLEM, union, SLRS, AUTO), k, adaptive k, greedy and seeded
 *     sampling (temp 1; temp 0.8 with top-k / top-p). Each request's ids, text, stop reason
 *     and rounds equal its single run's, and its events' pieces add up to its result;
 *   - a sequence cancelled mid-way frees its slot at once; the request that takes the slot
 *     still equals its single run;
 *   - a prompt as target ids (hsd_batch_add_ids) equals the same prompt as text;
 *   - errors: all slots busy, an id outside the vocabulary, cancelling an unknown id, more
 *     slots than the models have, bad params sizes, NULL arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

#define N_SLOTS 4

typedef hsd_test_lm lm;

static lm small, baby;
static char *prompts[128];
static int n_prompts;

static int load_lm(lm *x, const char *model, const char *tok) {
    return hsd_test_load_lm(x, model, tok, N_SLOTS);
}

static int setup(void **state) {
    (void)state;
    if (load_lm(&small, "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin") ||
        load_lm(&baby, "models/babyllama-tok105/model5000.bin",
                "models/babyllama-tok105/tok105.bin"))
        return -1;
    n_prompts = hsd_test_bench_prompts(prompts, 128, 120);
    return n_prompts >= 40 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    hsd_model_free(small.m), hsd_tokenizer_free(small.t);
    hsd_model_free(baby.m), hsd_tokenizer_free(baby.t);
    for (int i = 0; i < n_prompts; i++) free(prompts[i]);
    return 0;
}

typedef struct req {
    const char *prompt;
    hsd_gen_params p;
    const char *stop[2];
    int join_step; /* earliest step at which it is added */
    /* filled while running */
    int64_t id;
    bool added, done;
    char *text;
    size_t text_len;
    int32_t ids[1024];
    int32_t n_ids;
    hsd_gen_result res; /* a copy of the event's result (ids and text duplicated) */
} req;

static void request_params(req *r, int i) {
    static const hsd_algo algos[] = {HSD_ALGO_TLI,  HSD_ALGO_SLEM, HSD_ALGO_AR,
                                     HSD_ALGO_UNION, HSD_ALGO_SLRS, HSD_ALGO_AUTO};
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = algos[i % 6];
    p.n_draft = 2 + i % 4;
    p.adaptive_k = i % 5 == 1;
    p.k_max = 8;
    p.max_new_tokens = 20 + 7 * (i % 5);
    if (i % 3 == 1) p.temp = 1.0f, p.seed = 1000 + (uint64_t)i;
    if (i % 3 == 2) p.temp = 0.8f, p.top_k = 40, p.top_p = 0.9f, p.seed = 77 + (uint64_t)i;
    r->p = p;
    if (i % 4 == 3) {
        r->stop[0] = ".";
        r->stop[1] = " and";
        r->p.stop = r->stop;
        r->p.n_stop = 2;
    }
}

static void append(req *r, const hsd_batch_event *ev) {
    r->text = realloc(r->text, r->text_len + ev->len + 1);
    assert_non_null(r->text);
    memcpy(r->text + r->text_len, ev->text, ev->len);
    r->text_len += ev->len;
    r->text[r->text_len] = 0;
    assert_true(r->n_ids + ev->n_ids <= 1024);
    memcpy(r->ids + r->n_ids, ev->ids, (size_t)ev->n_ids * sizeof *ev->ids);
    r->n_ids += ev->n_ids;
    if (ev->done) {
        r->done = true;
        r->res = *ev->result;
        r->res.ids = malloc((size_t)(ev->result->n_ids + 1) * sizeof(int32_t));
        memcpy(r->res.ids, ev->result->ids, (size_t)ev->result->n_ids * sizeof(int32_t));
        r->res.text = malloc(ev->result->text_len + 1);
        memcpy(r->res.text, ev->result->text, ev->result->text_len + 1);
    }
}

static req *find(req *rs, int n, int64_t id) {
    for (int i = 0; i < n; i++)
        if (rs[i].added && rs[i].id == id) return &rs[i];
    fail_msg("event for unknown id %lld", (long long)id);
    return NULL;
}

/* Runs the requests through a batch of N_SLOTS, adding each at or after its join step. */
static int run_batch(hsd_engine *e, req *rs, int n, int64_t cancel_id, int cancel_step) {
    hsd_batch *b;
    hsd_batch_params bp = hsd_batch_default_params();
    bp.n_slots = N_SLOTS;
    assert_int_equal(hsd_batch_init(e, &bp, &b), HSD_OK);
    int next = 0, steps = 0, max_active = 0, joined_mid = 0;
    while (next < n || hsd_batch_n_active(b) > 0) {
        while (next < n && rs[next].join_step <= steps && hsd_batch_n_active(b) < N_SLOTS) {
            req *r = &rs[next++];
            hsd_status s = hsd_batch_add(b, r->prompt, strlen(r->prompt), &r->p, &r->id);
            if (s) fprintf(stderr, "add: %s\n", hsd_last_error());
            assert_int_equal(s, HSD_OK);
            r->added = true;
            joined_mid += hsd_batch_n_active(b) > 1;
        }
        if (hsd_batch_n_active(b) > max_active) max_active = hsd_batch_n_active(b);
        if (steps == cancel_step) {
            assert_int_equal(hsd_batch_cancel(b, cancel_id), HSD_OK);
            for (int i = 0; i < n; i++)
                if (rs[i].added && rs[i].id == cancel_id) rs[i].done = true;
            /* a second cancel: the id is no longer active */
            assert_int_equal(hsd_batch_cancel(b, cancel_id), HSD_ERR_INVALID_ARG);
        }
        const hsd_batch_event *ev;
        int32_t ne;
        hsd_status s = hsd_batch_step(b, &ev, &ne);
        if (s) fprintf(stderr, "step: %s\n", hsd_last_error());
        assert_int_equal(s, HSD_OK);
        for (int32_t j = 0; j < ne; j++)
            append(find(rs, n, HSD_BATCH_EVENT_AT(ev, j)->id), HSD_BATCH_EVENT_AT(ev, j));
        steps++;
        assert_true(steps < 5000);
    }
    hsd_batch_free(b);
    printf("  %d requests in %d steps, up to %d at once, %d joined a running batch\n", n, steps,
           max_active, joined_mid);
    assert_int_equal(max_active, N_SLOTS);
    assert_true(joined_mid >= n / 2);
    return steps;
}

static void check_against_single(hsd_engine *e, req *rs, int n, int64_t skip_id) {
    for (int i = 0; i < n; i++) {
        req *r = &rs[i];
        if (r->id == skip_id) continue;
        hsd_gen_result one = HSD_GEN_RESULT_INIT;
        hsd_engine_reset(e);
        assert_int_equal(hsd_engine_generate(e, r->prompt, strlen(r->prompt), &r->p, &one), HSD_OK);
        if (one.n_ids != r->res.n_ids ||
            memcmp(one.ids, r->res.ids, (size_t)one.n_ids * sizeof(int32_t)))
            fprintf(stderr, "request %d (%s, temp %.1f) differs:\n batch:  %s\n single: %s\n", i,
                    hsd_algo_name(r->p.algo), r->p.temp, r->res.text, one.text);
        assert_int_equal(one.n_ids, r->res.n_ids);
        assert_memory_equal(one.ids, r->res.ids, (size_t)one.n_ids * sizeof(int32_t));
        assert_string_equal(one.text, r->res.text);
        assert_int_equal(one.stop_reason, r->res.stop_reason);
        assert_int_equal(one.algo, r->res.algo);
        assert_int_equal(one.n_rounds, r->res.n_rounds);
        assert_int_equal(one.n_drafted, r->res.n_drafted);
        assert_int_equal(one.n_accepted, r->res.n_accepted);
        /* the events' pieces add up to the result */
        assert_int_equal(r->n_ids, r->res.n_ids);
        assert_memory_equal(r->ids, r->res.ids, (size_t)r->n_ids * sizeof(int32_t));
        assert_int_equal(r->text_len, r->res.text_len);
        if (r->text_len) assert_memory_equal(r->text, r->res.text, r->text_len);
        hsd_gen_result_free(&one);
    }
}

static void free_reqs(req *rs, int n) {
    for (int i = 0; i < n; i++) {
        free(rs[i].text);
        free(rs[i].res.ids);
        free(rs[i].res.text);
    }
}

static void check_pair(lm *target, lm *draft, const char *label, int offset) {
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(target->m, target->t, draft->m, draft->t, &e), HSD_OK);
    enum { N = 12 };
    req rs[N];
    memset(rs, 0, sizeof rs);
    long stops = 0, sampled = 0;
    for (int i = 0; i < N; i++) {
        rs[i].prompt = prompts[(offset + 7 * i) % n_prompts];
        request_params(&rs[i], i);
        rs[i].join_step = i < 2 ? 0 : i < 5 ? 3 * (i - 1) : 12;
        rs[i].id = -1;
    }
    printf("%s\n", label);
    run_batch(e, rs, N, -1, -1);
    check_against_single(e, rs, N, -1);
    for (int i = 0; i < N; i++) {
        stops += rs[i].res.stop_reason != HSD_STOP_MAX_TOKENS;
        sampled += rs[i].p.temp > 0;
    }
    printf("  all %d equal their single runs (%ld sampled, %ld ended before their budget)\n", N,
           sampled, stops);
    assert_true(stops > 0);
    free_reqs(rs, N);
    hsd_engine_free(e);
}

static void test_overlapping_requests_equal_single(void **state) {
    (void)state;
    check_pair(&small, &baby, "target stories260K, drafter babyllama", 0);
    check_pair(&baby, &small, "target babyllama, drafter stories260K", 3);
}

/* A cancelled sequence's slot is free at once and reused; the others are unaffected. */
static void test_cancel_frees_slot(void **state) {
    (void)state;
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(small.m, small.t, baby.m, baby.t, &e), HSD_OK);
    enum { N = 6 };
    req rs[N];
    memset(rs, 0, sizeof rs);
    for (int i = 0; i < N; i++) {
        rs[i].prompt = prompts[(11 * i + 5) % n_prompts];
        request_params(&rs[i], i);
        rs[i].p.max_new_tokens = 60;
        rs[i].p.stop_at_eos = false;
        rs[i].p.n_stop = 0;
        rs[i].join_step = 0;
        rs[i].id = -1;
    }
    /* ids are given in add order from 0: request 1 is cancelled at step 2, before it ends */
    run_batch(e, rs, N, 1, 2);
    assert_false(rs[1].res.ids != NULL); /* no final event for a cancelled sequence */
    assert_true(rs[1].n_ids > 0 && rs[1].n_ids < 60);
    check_against_single(e, rs, N, 1);
    free_reqs(rs, N);
    hsd_engine_free(e);
}

static void test_prompt_ids(void **state) {
    (void)state;
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(small.m, small.t, baby.m, baby.t, &e), HSD_OK);
    const char *prompt = prompts[2];
    int32_t *ids;
    size_t n;
    assert_int_equal(hsd_tokenizer_encode_alloc(small.t, prompt, strlen(prompt), false, &ids, &n),
                     HSD_OK);
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = HSD_ALGO_SLEM;
    p.max_new_tokens = 30;
    hsd_batch *b;
    assert_int_equal(hsd_batch_init(e, NULL, &b), HSD_OK);
    assert_int_equal(hsd_batch_n_slots(b), N_SLOTS);
    int64_t a, c;
    assert_int_equal(hsd_batch_add(b, prompt, strlen(prompt), &p, &a), HSD_OK);
    assert_int_equal(hsd_batch_add_ids(b, ids, n, &p, &c), HSD_OK);
    char out[2][4096] = {{0}};
    size_t len[2] = {0};
    int32_t n_prompt[2] = {0};
    while (hsd_batch_n_active(b)) {
        const hsd_batch_event *ev;
        int32_t ne;
        assert_int_equal(hsd_batch_step(b, &ev, &ne), HSD_OK);
        for (int32_t j = 0; j < ne; j++) {
            int w = ev[j].id == a ? 0 : 1;
            assert_true(len[w] + ev[j].len < sizeof out[w]);
            memcpy(out[w] + len[w], ev[j].text, ev[j].len);
            len[w] += ev[j].len;
            n_prompt[w] = ev[j].n_prompt;
        }
    }
    assert_true(len[0] > 0);
    assert_int_equal(len[0], len[1]);
    assert_string_equal(out[0], out[1]);
    assert_int_equal(n_prompt[0], (int32_t)n + 1); /* BOS added to the ids as to the text */
    assert_int_equal(n_prompt[1], (int32_t)n + 1);
    hsd_free(ids);
    hsd_batch_free(b);
    hsd_engine_free(e);
}

static void test_errors(void **state) {
    (void)state;
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(small.m, small.t, baby.m, baby.t, &e), HSD_OK);
    hsd_batch *b = (hsd_batch *)1;
    hsd_batch_params bp = hsd_batch_default_params();
    assert_int_equal(bp.size, sizeof bp);
    bp.n_slots = N_SLOTS + 1;
    assert_int_equal(hsd_batch_init(e, &bp, &b), HSD_ERR_INVALID_ARG);
    assert_null(b);
    assert_non_null(strstr(hsd_last_error(), "n_seq"));
    bp.n_slots = -1;
    assert_int_equal(hsd_batch_init(e, &bp, &b), HSD_ERR_INVALID_ARG);
    bp.n_slots = 2;
    bp.size = 0;
    assert_int_equal(hsd_batch_init(e, &bp, &b), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_batch_init(NULL, NULL, &b), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_batch_init(e, NULL, NULL), HSD_ERR_INVALID_ARG);
    /* an older caller's smaller params struct: only its size is read, the rest defaults */
    bp = hsd_batch_default_params();
    bp.size = sizeof(size_t);
    bp.n_slots = 3;
    assert_int_equal(hsd_batch_init(e, &bp, &b), HSD_OK);
    assert_int_equal(hsd_batch_n_slots(b), N_SLOTS);
    hsd_batch_free(b);
    bp = hsd_batch_default_params();
    bp.n_slots = 2;
    assert_int_equal(hsd_batch_init(e, &bp, &b), HSD_OK);
    int64_t id;
    hsd_gen_params p = hsd_gen_default_params();
    p.max_new_tokens = 5;
    assert_int_equal(hsd_batch_add(b, "Once", 4, &p, &id), HSD_OK);
    assert_int_equal(id, 0);
    assert_int_equal(hsd_batch_add(b, "Once", 4, &p, &id), HSD_OK);
    assert_int_equal(id, 1);
    assert_int_equal(hsd_batch_add(b, "Once", 4, &p, &id), HSD_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(hsd_batch_cancel(b, 0), HSD_OK);
    const int32_t bad[2] = {1, 100000};
    assert_int_equal(hsd_batch_add_ids(b, bad, 2, &p, &id), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "100000"));
    assert_int_equal(hsd_batch_n_active(b), 1);
    p.n_draft = 0;
    assert_int_equal(hsd_batch_add(b, "Once", 4, &p, &id), HSD_ERR_INVALID_ARG);
    p.n_draft = 4;
    assert_int_equal(hsd_batch_add(b, "a\x80", 2, &p, &id), HSD_ERR_INVALID_UTF8);
    assert_int_equal(hsd_batch_add(b, NULL, 3, &p, &id), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_batch_add(NULL, "a", 1, &p, &id), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_batch_add(b, "a", 1, &p, NULL), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_batch_add_ids(b, NULL, 2, &p, &id), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_batch_cancel(b, 42), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_batch_cancel(NULL, 1), HSD_ERR_INVALID_ARG);
    const hsd_batch_event *ev;
    int32_t ne;
    assert_int_equal(hsd_batch_step(NULL, &ev, &ne), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_batch_step(b, NULL, &ne), HSD_ERR_INVALID_ARG);
    /* max_new_tokens 0: the sequence ends at the next step with an empty result */
    p.max_new_tokens = 0;
    assert_int_equal(hsd_batch_add(b, "Once", 4, &p, &id), HSD_OK);
    bool ended = false;
    while (hsd_batch_n_active(b)) {
        assert_int_equal(hsd_batch_step(b, &ev, &ne), HSD_OK);
        for (int32_t j = 0; j < ne; j++)
            if (ev[j].id == id) {
                assert_true(ev[j].done);
                assert_int_equal(ev[j].result->n_ids, 0);
                ended = true;
            }
    }
    assert_true(ended);
    assert_int_equal(hsd_batch_n_active(NULL), 0);
    assert_int_equal(hsd_batch_n_slots(NULL), 0);
    hsd_batch_free(NULL);
    hsd_batch_free(b);
    hsd_engine_free(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlapping_requests_equal_single),
        cmocka_unit_test(test_cancel_frees_slot),
        cmocka_unit_test(test_prompt_ids),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* The ABI test (issue 20): a caller compiled against an OLDER header (tests/abi/hsd_old.h:
 * every size-prefixed struct cut after some of its fields) runs against the current
 * libhsd.so. Linked against the shared library like an outside program.
 *
 * Each old struct is placed so that it ends exactly where a PROT_NONE page begins: a library
 * that reads (or writes) one byte past the caller's `size` faults, without a sanitizer. The
 * test then checks that the fields the caller gave were used and the missing tail took the
 * documented defaults, by comparing with a call that passes the library's defaults. A size
 * of 0 is refused with a message naming the size, and a NEWER caller's longer struct (fields
 * this library does not know) is accepted, its unknown tail ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "tests/abi/hsd_old.h"

/* The older header keeps the leading fields at the same offsets (it only lacks the tail). */
#define SAME_OFFSET(old_t, new_t, f)                                                               \
    _Static_assert(offsetof(old_t, f) == offsetof(new_t, f), #old_t "." #f " moved")
SAME_OFFSET(old_model_params, hsd_model_params, backend);
SAME_OFFSET(old_gen_params, hsd_gen_params, n_draft);
SAME_OFFSET(old_gen_result, hsd_gen_result, text_len);
SAME_OFFSET(old_model_batch_seq, hsd_model_batch_seq, n);
SAME_OFFSET(old_model_iface, hsd_model_iface, free);
SAME_OFFSET(old_head_params, hsd_head_params, n_keep);
_Static_assert(sizeof(old_model_params) < sizeof(hsd_model_params), "not older");
_Static_assert(sizeof(old_gen_params) < sizeof(hsd_gen_params), "not older");
_Static_assert(sizeof(old_gen_result) < sizeof(hsd_gen_result), "not older");
_Static_assert(sizeof(old_model_batch_seq) < sizeof(hsd_model_batch_seq), "not older");
_Static_assert(sizeof(old_model_iface) < sizeof(hsd_model_iface), "not older");
_Static_assert(sizeof(old_head_params) < sizeof(hsd_head_params), "not older");

/* ---- guarded memory: n bytes that end where an inaccessible page starts ----------------- */

typedef struct guard {
    void *map;
    size_t len;
} guard;
static guard guards[64];
static int n_guards;

static void *guarded(size_t n) {
    assert_true(n % 8 == 0); /* the structs start with a size_t: sizeof is a multiple of 8 */
    size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (n + page - 1) / page * page;
    char *m = mmap(NULL, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    assert_int_equal(mprotect(m + body, page, PROT_NONE), 0);
    assert_true(n_guards < 64);
    guards[n_guards++] = (guard){m, body + page};
    char *p = m + body - n;
    memset(p, 0, n);
    return p;
}

static int free_guards(void **state) {
    (void)state;
    for (int i = 0; i < n_guards; i++) munmap(guards[i].map, guards[i].len);
    n_guards = 0;
    return 0;
}

/* ---- shared data --------------------------------------------------------------------- */

static char model_path[4096], tok_path[4096];

static bool have_models(void) {
    const char *sh = getenv("HSD_SHARED");
    if (!sh || !*sh) sh = getenv("HSD_SHARED_DEFAULT");
    if (!sh || !*sh) sh = "../shared";
    snprintf(model_path, sizeof model_path, "%s/models/stories260K/stories260K.bin", sh);
    snprintf(tok_path, sizeof tok_path, "%s/models/stories260K/tok512.bin", sh);
    struct stat st;
    if (stat(model_path, &st) || stat(tok_path, &st)) {
        fprintf(stderr, "SKIP: shared data missing: %s (set HSD_SHARED)\n", model_path);
        return false;
    }
    return true;
}

#define OK(x) assert_int_equal((x), HSD_OK)
/* a call refused for its size, with a message that says so */
#define REFUSED_SIZE(x)                                                                            \
    do {                                                                                           \
        assert_int_equal((x), HSD_ERR_INVALID_ARG);                                                \
        assert_non_null(strstr(hsd_last_error(), "size"));                                        \
    } while (0)

/* ---- model params, gen params, results ------------------------------------------------ */

static void test_model_and_gen_params(void **state) {
    (void)state;
    if (!have_models()) skip();
    /* model: n_ctx and n_threads given; n_seq, cpu_kernels, no_pack, ... missing: defaults */
    old_model_params *mp = guarded(sizeof *mp);
    mp->size = sizeof *mp;
    mp->n_ctx = 96;
    mp->n_threads = 1;
    mp->use_mmap = true;
    mp->backend = HSD_BACKEND_CPU;
    hsd_model *m;
    OK(hsd_model_load(model_path, (const hsd_model_params *)mp, &m));
    assert_int_equal(hsd_model_n_ctx(m), 96);
    assert_int_equal(hsd_model_n_seq(m), hsd_model_default_params().n_seq);
    hsd_tokenizer *t;
    OK(hsd_tokenizer_load_file(tok_path, &t));

    /* the reference: the library's defaults with the same values */
    hsd_model_params np = hsd_model_default_params();
    np.n_ctx = 96, np.n_threads = 1, np.backend = HSD_BACKEND_CPU;
    hsd_model *m2;
    OK(hsd_model_load(model_path, &np, &m2));

    /* size 0, and a NEWER caller's longer struct whose unknown tail is garbage */
    mp->size = 0;
    hsd_model *bad = NULL;
    REFUSED_SIZE(hsd_model_load(model_path, (const hsd_model_params *)mp, &bad));
    assert_null(bad);
    struct {
        hsd_model_params p;
        int64_t future[4];
    } newer;
    newer.p = np;
    newer.p.size = sizeof newer;
    memset(newer.future, 0xA5, sizeof newer.future);
    hsd_model *m3;
    OK(hsd_model_load(model_path, &newer.p, &m3));
    assert_int_equal(hsd_model_n_ctx(m3), 96);
    hsd_model_free(m3);

    /* gen params: algo, max_new_tokens, n_draft given; temp etc. missing (greedy default) */
    old_gen_params *gp = guarded(sizeof *gp);
    gp->size = sizeof *gp;
    gp->algo = HSD_ALGO_AR;
    gp->max_new_tokens = 12;
    gp->n_draft = 3;
    hsd_engine *e, *e2;
    OK(hsd_engine_init(m, t, NULL, NULL, &e));
    OK(hsd_engine_init(m2, t, NULL, NULL, &e2));
    /* an old result: ids and text only; the library must not write past it */
    old_gen_result *res = guarded(sizeof *res);
    res->size = sizeof *res;
    const char *prompt = "Once upon a time";
    OK(hsd_engine_generate(e, prompt, strlen(prompt), (const hsd_gen_params *)gp,
                           (hsd_gen_result *)res));
    assert_int_equal(res->size, sizeof *res); /* kept */
    hsd_gen_params full = hsd_gen_default_params();
    full.algo = HSD_ALGO_AR, full.max_new_tokens = 12, full.n_draft = 3;
    hsd_gen_result want = HSD_GEN_RESULT_INIT;
    OK(hsd_engine_generate(e2, prompt, strlen(prompt), &full, &want));
    assert_int_equal(res->n_ids, want.n_ids);
    assert_int_equal(want.n_ids, 12);
    assert_memory_equal(res->ids, want.ids, (size_t)want.n_ids * sizeof *want.ids);
    assert_int_equal(res->text_len, want.text_len);
    assert_memory_equal(res->text, want.text, want.text_len);
    hsd_gen_result_free((hsd_gen_result *)res); /* frees within the old size only */
    assert_null(res->ids);
    assert_null(res->text);

    /* a batch of two old results, strided by the old size */
    old_gen_result *rb = guarded(2 * sizeof *rb);
    rb[0].size = rb[1].size = sizeof *rb;
    const char *const prompts[2] = {prompt, prompt};
    OK(hsd_engine_generate_batch(e, prompts, NULL, 1, (const hsd_gen_params *)gp,
                                 (hsd_gen_result *)rb));
    assert_memory_equal(rb[0].text, want.text, want.text_len);
    assert_int_equal(rb[1].n_ids, 0); /* n_prompts 1: the second stays untouched */
    hsd_gen_result_free((hsd_gen_result *)&rb[0]);

    /* result size 0, gen params size 0 */
    old_gen_result *r0 = guarded(sizeof *r0);
    REFUSED_SIZE(hsd_engine_generate(e, prompt, strlen(prompt), (const hsd_gen_params *)gp,
                                     (hsd_gen_result *)r0));
    r0->size = sizeof *r0;
    gp->size = 0;
    REFUSED_SIZE(hsd_engine_generate(e, prompt, strlen(prompt), (const hsd_gen_params *)gp,
                                     (hsd_gen_result *)r0));
    hsd_gen_result_free(&want);
    hsd_engine_free(e);
    hsd_engine_free(e2);
    hsd_model_free(m);
    hsd_model_free(m2);
    hsd_tokenizer_free(t);
}

/* ---- batch entries, batch / proposer / head / chat params ------------------------------ */

static void test_batch_entries_and_params(void **state) {
    (void)state;
    if (!have_models()) skip();
    hsd_model_params np = hsd_model_default_params();
    np.n_threads = 1, np.n_seq = 2, np.n_ctx = 64, np.backend = HSD_BACKEND_CPU;
    hsd_model *m;
    OK(hsd_model_load(model_path, &np, &m));
    /* two old entries (no parents / rows / n_rows: chains, no logits), old stride */
    static const int32_t a[3] = {1, 400, 300}, b[2] = {1, 42};
    old_model_batch_seq *ent = guarded(2 * sizeof *ent);
    ent[0] = (old_model_batch_seq){sizeof *ent, 0, a, 3};
    ent[1] = (old_model_batch_seq){sizeof *ent, 1, b, 2};
    OK(hsd_model_forward_batch(m, (const hsd_model_batch_seq *)ent, 2, NULL));
    OK(hsd_model_seq_select(m, 0));
    assert_int_equal(hsd_model_kv_len(m), 3);
    OK(hsd_model_seq_select(m, 1));
    assert_int_equal(hsd_model_kv_len(m), 2);
    ent[1].size = 0;
    REFUSED_SIZE(hsd_model_forward_batch(m, (const hsd_model_batch_seq *)ent, 2, NULL));

    hsd_tokenizer *t;
    OK(hsd_tokenizer_load_file(tok_path, &t));
    hsd_engine *e;
    OK(hsd_engine_init(m, t, m, t, &e));
    /* batch params known only by their size: n_slots defaults to the target's slots */
    old_size_only *bp = guarded(sizeof *bp);
    bp->size = sizeof *bp;
    hsd_batch *batch;
    OK(hsd_batch_init(e, (const hsd_batch_params *)bp, &batch));
    assert_int_equal(hsd_batch_n_slots(batch), 2);
    hsd_batch_free(batch);
    bp->size = 0;
    REFUSED_SIZE(hsd_batch_init(e, (const hsd_batch_params *)bp, &batch));
    hsd_engine_free(e);

    /* proposer params: size only, so n_draft etc. default */
    old_size_only *pp = guarded(sizeof *pp);
    pp->size = sizeof *pp;
    hsd_proposer *pr;
    OK(hsd_proposer_init(m, t, t, (const hsd_proposer_params *)pp, &pr));
    assert_int_equal(hsd_proposer_n_slots(pr), 2);
    hsd_proposer_free(pr);
    pp->size = 0;
    REFUSED_SIZE(hsd_proposer_init(m, t, t, (const hsd_proposer_params *)pp, &pr));

    /* head params: TRIMMED with its ids; top_k .. n_calib missing (no calibration) */
    static const int32_t keep[4] = {1, 2, 300, 400};
    old_head_params *hp = guarded(sizeof *hp);
    *hp = (old_head_params){sizeof *hp, HSD_HEAD_TRIMMED, keep, 4};
    OK(hsd_model_set_head(m, (const hsd_head_params *)hp));
    assert_non_null(strstr(hsd_model_head_desc(m), "trimmed"));
    hp->size = 0;
    REFUSED_SIZE(hsd_model_set_head(m, (const hsd_head_params *)hp));
    hsd_model_free(m);
    hsd_tokenizer_free(t);
}

static void test_chat_params(void **state) {
    (void)state;
    hsd_chat_template *tp;
    OK(hsd_chat_template_from_string("{{ messages[0].content }}!", &tp));
    old_size_only *cp = guarded(sizeof *cp);
    cp->size = sizeof *cp;
    char *out = NULL;
    size_t len = 0;
    OK(hsd_chat_render_json(tp, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                            (const hsd_chat_params *)cp, &out, &len));
    assert_string_equal(out, "hi!");
    hsd_free(out);
    cp->size = 0;
    REFUSED_SIZE(hsd_chat_render_json(tp, "{}", (const hsd_chat_params *)cp, &out, &len));
    hsd_chat_template_free(tp);
}

/* ---- a caller's model through an older hsd_model_iface (no sequence-slot members) ------- */

typedef struct counter {
    int32_t len, freed;
} counter;
static int32_t c_vocab(void *c) {
    (void)c;
    return 5;
}
static int32_t c_nctx(void *c) {
    (void)c;
    return 32;
}
static int32_t c_len(void *c) {
    return ((counter *)c)->len;
}
static hsd_status c_trunc(void *c, int32_t len) {
    ((counter *)c)->len = len;
    return HSD_OK;
}
/* next token = token + 1 (mod 5): logit 1 there, 0 elsewhere */
static hsd_status c_forward(void *c, const int32_t *tokens, int32_t n, const int32_t *parents,
                            const int32_t *rows, int32_t n_rows, float *logits) {
    (void)parents;
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t i = rows ? rows[r] : r;
        for (int32_t v = 0; v < 5; v++) logits[r * 5 + v] = v == (tokens[i] + 1) % 5 ? 1.0f : 0.0f;
    }
    ((counter *)c)->len += n;
    return HSD_OK;
}
static void c_free(void *c) {
    ((counter *)c)->freed = 1;
}

static void test_old_model_iface(void **state) {
    (void)state;
    counter ctr = {0, 0};
    old_model_iface *it = guarded(sizeof *it);
    *it = (old_model_iface){.size = sizeof *it, .ctx = &ctr, .vocab_size = c_vocab,
                            .n_ctx = c_nctx, .forward = c_forward, .kv_len = c_len,
                            .kv_truncate = c_trunc, .free = c_free};
    hsd_model *m;
    OK(hsd_model_from_iface((const hsd_model_iface *)it, &m));
    /* n_seq, seq_select, forward_batch are not in the old iface: one slot, no batch hook */
    assert_int_equal(hsd_model_n_seq(m), 1);
    float lg[10];
    const int32_t toks[2] = {3, 4};
    OK(hsd_model_forward(m, toks, 2, NULL, NULL, 2, lg));
    assert_true(lg[4] == 1.0f && lg[5 + 0] == 1.0f && lg[0] == 0.0f);
    /* the batched forward falls back to one forward per entry */
    hsd_model_batch_seq one = {.size = sizeof one, .seq = 0, .tokens = toks, .n = 1, .n_rows = 1};
    OK(hsd_model_forward_batch(m, &one, 1, lg));
    assert_true(lg[4] == 1.0f);
    assert_int_equal(hsd_model_kv_len(m), 3);
    hsd_model_free(m);
    assert_int_equal(ctr.freed, 1);
    it->size = 0;
    REFUSED_SIZE(hsd_model_from_iface((const hsd_model_iface *)it, &m));
}

/* ---- the tools' params (include/hsd_tools.h) ------------------------------------------ */

typedef struct old_trim_params {
    size_t size;
    double alpha, min_coverage;
    int32_t dim;
    /* (no fixed_flops) */
} old_trim_params;
typedef struct old_synth_params {
    size_t size;
    const char *shape;
    /* (no type, seed) */
} old_synth_params;

static void test_tools_params(void **state) {
    (void)state;
    /* trim: fixed_flops missing, so 0: R(K) = 1 - K / V exactly */
    old_trim_params *tp = guarded(sizeof *tp);
    *tp = (old_trim_params){sizeof *tp, 0.5, 0.0, 8};
    const int64_t prefix[5] = {0, 4, 7, 9, 10};
    hsd_trim_result r;
    OK(hsd_trim_eval(prefix, 4, 10, 8, (const hsd_trim_params *)tp, 2, &r));
    assert_true(r.saving == 1.0 - 2.0 / 8.0 && r.coverage == 0.7);
    tp->size = 0;
    REFUSED_SIZE(hsd_trim_optimum(prefix, 4, 10, 8, (const hsd_trim_params *)tp, &r));

    /* synth: type and seed missing: F32, seed 1, the same weights as the defaults give */
    old_synth_params *sp = guarded(sizeof *sp);
    *sp = (old_synth_params){sizeof *sp, "tiny"};
    hsd_synth_model *a, *b;
    OK(hsd_synth_init((const hsd_synth_params *)sp, &a));
    hsd_synth_params full = hsd_synth_default_params();
    full.shape = "tiny";
    OK(hsd_synth_init(&full, &b));
    assert_int_equal(hsd_synth_weight_bytes(a), hsd_synth_weight_bytes(b));
    hsd_synth_free(a);
    hsd_synth_free(b);
    sp->size = 0;
    REFUSED_SIZE(hsd_synth_init((const hsd_synth_params *)sp, &a));

    /* ψ and injectivity params known only by their size */
    old_size_only *pp = guarded(sizeof *pp);
    pp->size = 0;
    hsd_psi_stats st;
    hsd_tokenizer *tok = NULL;
    if (have_models()) {
        OK(hsd_tokenizer_load_file(tok_path, &tok));
        hsd_token_trie *trie;
        OK(hsd_token_trie_build(tok, &trie));
        REFUSED_SIZE(hsd_psi_stats_compute(tok, trie, (const hsd_psi_params *)pp, &st));
        pp->size = sizeof *pp;
        OK(hsd_psi_stats_compute(tok, trie, (const hsd_psi_params *)pp, &st));
        hsd_psi_stats want;
        OK(hsd_psi_stats_compute(tok, trie, NULL, &want)); /* NULL: the defaults */
        assert_int_equal(st.n_tokens, want.n_tokens);
        assert_int_equal(st.n_max, want.n_max);
        hsd_psi_stats_free(&st);
        hsd_psi_stats_free(&want);
        hsd_token_trie_free(trie);

        old_size_only *ip = guarded(sizeof *ip);
        ip->size = sizeof *ip;
        char *texts[1] = {"Once upon a time"};
        size_t lens[1] = {16};
        hsd_corpus c = {texts, lens, 1};
        hsd_inj_result ir;
        memset(&ir, 0, sizeof ir);
        OK(hsd_inj_check_corpus(tok, &c, (const hsd_inj_params *)ip, &ir));
        assert_int_equal(ir.samples, 1);
        hsd_inj_result_free(&ir);
        ip->size = 0;
        memset(&ir, 0, sizeof ir);
        REFUSED_SIZE(hsd_inj_check_corpus(tok, &c, (const hsd_inj_params *)ip, &ir));
        hsd_tokenizer_free(tok);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_model_and_gen_params, free_guards),
        cmocka_unit_test_teardown(test_batch_entries_and_params, free_guards),
        cmocka_unit_test_teardown(test_chat_params, free_guards),
        cmocka_unit_test_teardown(test_old_model_iface, free_guards),
        cmocka_unit_test_teardown(test_tools_params, free_guards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

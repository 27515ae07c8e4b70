/* Shared fixture and row table of the API error tests (test_api_errors*.c): two tiny BPE
 * tokenizers with different vocabularies and toy "count up" models through hsd_model_iface,
 * built in memory; the EXPECT check; and the list of rows, one per function in include/hsd.h,
 * by concept. Each test_api_errors*.c builds its part's table from its HSD_API_ROWS_* list
 * (so a listed name without a row_<name> function does not compile, and a row function that
 * is not listed is an unused static function, an error under -Werror), and
 * test_api_errors.c's test_every_function_has_a_row checks HSD_API_ROWS_ALL against the
 * header. To cover a new function: write row_<name> in the part of its concept and add
 * X(<name>) to that part's list here. */
#ifndef HSD_TESTS_API_ERRORS_FIXTURE_H
#define HSD_TESTS_API_ERRORS_FIXTURE_H

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "lib/base/timer.h"
#include "lib/base/rng.h"
#include "hsd_tools.h"
#include "lib/base/error.h"
#include "tests/testutil.h"

/* ---- fixtures ------------------------------------------------------------------------ */

#define TOY_SPECIALS                                                                               \
    "\"added_tokens\":[{\"id\":0,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":false,"      \
    "\"rstrip\":false,\"normalized\":false,\"special\":true},{\"id\":1,\"content\":\"</s>\","      \
    "\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"                \
    "\"special\":true}],"
/* target vocabulary: 8 ids */
static const char TOK_T[] =
    "{\"version\":\"1.0\"," TOY_SPECIALS
    "\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,\"decoder\":null,"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"<s>\":0,\"</s>\":1,\"a\":2,\"b\":3,\"c\":4,\" \":5,"
    "\"ab\":6,\"abc\":7},\"merges\":[\"a b\",\"ab c\"]}}";
/* drafter vocabulary: 6 ids, a different split of the same text */
static const char TOK_D[] =
    "{\"version\":\"1.0\"," TOY_SPECIALS
    "\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,\"decoder\":null,"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"<s>\":0,\"</s>\":1,\"c\":2,\"b\":3,\"a\":4,\" \":5},"
    "\"merges\":[]}}";

/* A toy model: the next token after t is t+1 (wrapping past the specials). It keeps its cache
 * as the list of tokens it has seen, so kv_truncate/kv_keep are real operations. */
typedef struct toy {
    int32_t vocab, n_ctx, kv[64], len;
} toy;

static int32_t toy_vocab(void *c) {
    return ((toy *)c)->vocab;
}
static int32_t toy_n_ctx(void *c) {
    return ((toy *)c)->n_ctx;
}
static int32_t toy_kv_len(void *c) {
    return ((toy *)c)->len;
}
static hsd_status toy_forward(void *c, const int32_t *tokens, int32_t n, const int32_t *parents,
                              const int32_t *rows, int32_t n_rows, float *logits) {
    toy *m = c;
    (void)parents;
    for (int32_t i = 0; i < n; i++) m->kv[m->len++] = tokens[i];
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t t = tokens[rows ? rows[r] : r], next = t + 1 < m->vocab ? t + 1 : 2;
        for (int32_t v = 0; v < m->vocab; v++) logits[(size_t)r * m->vocab + v] = v == next ? 5 : 0;
    }
    return HSD_OK;
}
static hsd_status toy_truncate(void *c, int32_t len) {
    ((toy *)c)->len = len;
    return HSD_OK;
}
static hsd_status toy_keep(void *c, int32_t base, const int32_t *keep, int32_t n_keep) {
    toy *m = c;
    for (int32_t j = 0; j < n_keep; j++) m->kv[base + j] = m->kv[base + keep[j]];
    m->len = base + n_keep;
    return HSD_OK;
}

static hsd_model_iface toy_iface(toy *m, int32_t vocab) {
    memset(m, 0, sizeof *m);
    m->vocab = vocab;
    m->n_ctx = 64;
    hsd_model_iface f = {HSD_MODEL_IFACE_INIT, .ctx = m,
                         .vocab_size = toy_vocab,
                         .n_ctx = toy_n_ctx,
                         .forward = toy_forward,
                         .kv_len = toy_kv_len,
                         .kv_truncate = toy_truncate,
                         .kv_keep = toy_keep};
    return f;
}

static hsd_tokenizer *tok_t, *tok_d;
static toy toy_t, toy_d, toy_nokeep;
static hsd_model *model_t, *model_d, *model_nokeep;
static hsd_engine *eng_pair, *eng_ar;

static int setup(void **state) {
    (void)state;
    hsd_model_iface f;
    if (hsd_tokenizer_load_memory(TOK_T, strlen(TOK_T), HSD_TOKENIZER_HF_JSON, "toy-t", &tok_t) ||
        hsd_tokenizer_load_memory(TOK_D, strlen(TOK_D), HSD_TOKENIZER_AUTO, "toy-d", &tok_d))
        return fprintf(stderr, "fixture: %s\n", hsd_last_error()), -1;
    f = toy_iface(&toy_t, 8);
    if (hsd_model_from_iface(&f, &model_t)) return -1;
    f = toy_iface(&toy_d, 6);
    if (hsd_model_from_iface(&f, &model_d)) return -1;
    f = toy_iface(&toy_nokeep, 8);
    f.kv_keep = NULL;
    if (hsd_model_from_iface(&f, &model_nokeep)) return -1;
    if (hsd_engine_init(model_t, tok_t, model_d, tok_d, &eng_pair) ||
        hsd_engine_init(model_nokeep, tok_t, NULL, NULL, &eng_ar))
        return fprintf(stderr, "fixture: %s\n", hsd_last_error()), -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    hsd_engine_free(eng_pair);
    hsd_engine_free(eng_ar);
    hsd_model_free(model_t);
    hsd_model_free(model_d);
    hsd_model_free(model_nokeep);
    hsd_tokenizer_free(tok_t);
    hsd_tokenizer_free(tok_d);
    return 0;
}

/* The call must return `want` and leave a non-empty message (cleared before the call, so a
 * stale message from an earlier failure does not count). */
#define EXPECT(want, call)                                                                         \
    do {                                                                                           \
        hsd_error_clear();                                                                         \
        hsd_status got_ = (call);                                                                  \
        if (got_ != (want))                                                                        \
            fail_msg("%s returned %s, expected %s (%s)", #call, hsd_status_str(got_),              \
                     hsd_status_str(want), hsd_last_error());                                      \
        assert_true(hsd_last_error()[0] != '\0');                                                  \
    } while (0)

/* ---- the rows, by concept (one test_api_errors*.c per list) ---------------------------- */

/* test_api_errors.c: errors, library-wide functions and tokenizers. */
#define HSD_API_ROWS_BASE(X)                                                                       \
    X(hsd_last_error)                                                                              \
    X(hsd_status_str)                                                                              \
    X(hsd_struct_size)                                                                             \
    X(hsd_version)                                                                                 \
    X(hsd_log_set)                                                                                 \
    X(hsd_free)                                                                                    \
    X(hsd_tokenizer_load_file)                                                                     \
    X(hsd_tokenizer_load_memory)                                                                   \
    X(hsd_tokenizer_free)                                                                          \
    X(hsd_tokenizer_encode)                                                                        \
    X(hsd_tokenizer_encode_alloc)                                                                  \
    X(hsd_tokenizer_decode_alloc)                                                                  \
    X(hsd_tokenizer_vocab_size)                                                                    \
    X(hsd_tokenizer_id_to_token)                                                                   \
    X(hsd_tokenizer_token_to_id)                                                                   \
    X(hsd_tokenizer_token_bytes)                                                                   \
    X(hsd_tokenizer_is_special)                                                                    \
    X(hsd_tokenizer_bos_id)                                                                        \
    X(hsd_tokenizer_eos_id)                                                                        \
    X(hsd_tokenizer_unk_id)                                                                        \
    X(hsd_chat_default_params)                                                                     \
    X(hsd_chat_template_load)                                                                      \
    X(hsd_chat_template_from_string)                                                               \
    X(hsd_chat_template_free)                                                                      \
    X(hsd_chat_template_bos)                                                                       \
    X(hsd_chat_template_eos)                                                                       \
    X(hsd_chat_render_json)                                                                        \
    X(hsd_chat_eos_ids)

/* test_api_errors_model.c: models, the KV cache, sequence slots and batches. */
#define HSD_API_ROWS_MODEL(X)                                                                      \
    X(hsd_model_default_params)                                                                    \
    X(hsd_model_load)                                                                              \
    X(hsd_model_from_iface)                                                                        \
    X(hsd_model_free)                                                                              \
    X(hsd_model_vocab_size)                                                                        \
    X(hsd_model_n_ctx)                                                                             \
    X(hsd_model_n_ctx_train)                                                                       \
    X(hsd_model_desc)                                                                              \
    X(hsd_model_backend)                                                                           \
    X(hsd_backend_name)                                                                            \
    X(hsd_backend_parse)                                                                           \
    X(hsd_cpu_kernels_name)                                                                        \
    X(hsd_cpu_kernels_parse)                                                                       \
    X(hsd_cpu_kernels_active)                                                                      \
    X(hsd_cpu_kernels_features)                                                                    \
    X(hsd_model_forward)                                                                           \
    X(hsd_model_kv_len)                                                                            \
    X(hsd_model_kv_truncate)                                                                       \
    X(hsd_model_kv_keep)                                                                           \
    X(hsd_model_n_seq)                                                                             \
    X(hsd_model_seq_current)                                                                       \
    X(hsd_model_seq_select)                                                                        \
    X(hsd_model_forward_batch)                                                                     \
    X(hsd_engine_generate_batch)

/* test_api_errors_engine.c: the engine, generation results and draft heads. */
#define HSD_API_ROWS_ENGINE(X)                                                                     \
    X(hsd_algo_name)                                                                               \
    X(hsd_algo_parse)                                                                              \
    X(hsd_stop_reason_name)                                                                        \
    X(hsd_gen_default_params)                                                                      \
    X(hsd_engine_init)                                                                             \
    X(hsd_engine_free)                                                                             \
    X(hsd_engine_auto_algo)                                                                        \
    X(hsd_engine_overlap)                                                                          \
    X(hsd_engine_reset)                                                                            \
    X(hsd_engine_set_eos_ids)                                                                      \
    X(hsd_engine_generate)                                                                         \
    X(hsd_gen_result_free)                                                                         \
    X(hsd_head_default_params)                                                                     \
    X(hsd_head_kind_name)                                                                          \
    X(hsd_model_set_head)                                                                          \
    X(hsd_model_set_head_spec)                                                                     \
    X(hsd_model_head_desc)                                                                         \
    X(hsd_model_save_head)                                                                         \
    X(hsd_model_get_timing)                                                                        \
    X(hsd_model_reset_timing)                                                                      \
    X(hsd_engine_overlap_ids)                                                                      \
    X(hsd_engine_set_tli_head)                                                                     \
    X(hsd_batch_default_params)                                                                    \
    X(hsd_batch_init)                                                                              \
    X(hsd_batch_free)                                                                              \
    X(hsd_batch_add)                                                                               \
    X(hsd_batch_add_ids)                                                                           \
    X(hsd_batch_step)                                                                              \
    X(hsd_batch_cancel)                                                                            \
    X(hsd_batch_n_active)                                                                          \
    X(hsd_batch_n_slots)

/* test_api_errors_tools.c: the tools (include/hsd_tools.h). */
#define HSD_API_ROWS_TOOLS(X)                                                                      \
    X(hsd_corpus_load)                                                                             \
    X(hsd_corpus_free)                                                                             \
    X(hsd_token_trie_build)                                                                        \
    X(hsd_token_trie_free)                                                                         \
    X(hsd_token_trie_n_nodes)                                                                      \
    X(hsd_token_trie_n_tokens)                                                                     \
    X(hsd_pair_analyze)                                                                            \
    X(hsd_pair_expressible)                                                                        \
    X(hsd_pair_report_free)                                                                        \
    X(hsd_pair_recommend)                                                                          \
    X(hsd_pair_psi_summary)                                                                        \
    X(hsd_psi_default_params)                                                                      \
    X(hsd_psi_stats_compute)                                                                       \
    X(hsd_psi_stats_free)                                                                          \
    X(hsd_psi_summarize)                                                                           \
    X(hsd_psi_ids_by_length)                                                                       \
    X(hsd_psi_by_length)                                                                           \
    X(hsd_inj_cause_name)                                                                          \
    X(hsd_inj_default_params)                                                                      \
    X(hsd_inj_check_corpus)                                                                        \
    X(hsd_inj_fuzz)                                                                                \
    X(hsd_inj_result_free)                                                                         \
    X(hsd_trim_default_params)                                                                     \
    X(hsd_trim_count)                                                                              \
    X(hsd_trim_rank)                                                                               \
    X(hsd_trim_candidates)                                                                         \
    X(hsd_trim_eval)                                                                                  \
    X(hsd_trim_optimum)                                                                            \
    X(hsd_synth_shape_list)                                                                        \
    X(hsd_synth_default_params)                                                                    \
    X(hsd_synth_init)                                                                              \
    X(hsd_synth_free)                                                                              \
    X(hsd_synth_weight_bytes)                                                                      \
    X(hsd_synth_write_safetensors)                                                                 \
    X(hsd_synth_write_gguf_tok)                                                                    \
    X(hsd_synth_write_gguf_vocab)                                                                  \
    X(hsd_inflate_default_params)                                                                  \
    X(hsd_inflate_file)                                                                            \
    X(hsd_bridge_bench_default_params)                                                             \
    X(hsd_bridge_bench)

/* test_api_errors_proposer.c: draft-only proposals. */
#define HSD_API_ROWS_PROPOSER(X)                                                                   \
    X(hsd_proposer_default_params)                                                                 \
    X(hsd_proposer_init)                                                                           \
    X(hsd_proposer_free)                                                                           \
    X(hsd_proposer_n_slots)                                                                        \
    X(hsd_proposer_propose)                                                                        \
    X(hsd_proposer_forget)                                                                         \
    X(hsd_proposer_last_tree)                                                                      \
    X(hsd_proposer_get_stats)                                                                      \
    X(hsd_proposer_reset_stats)

#define HSD_API_ROWS_ALL(X)                                                                        \
    HSD_API_ROWS_BASE(X) HSD_API_ROWS_MODEL(X) HSD_API_ROWS_ENGINE(X) HSD_API_ROWS_TOOLS(X)      \
    HSD_API_ROWS_PROPOSER(X)

/* One cmocka case per row, named after the function. */
#define HSD_API_ROW_CASE(f) {#f, row_##f, NULL, NULL, NULL},

/* Runs `extra` (may be NULL) then the n rows of `rows` as one group with the shared fixture. */
static inline int hsd_api_rows_run(const char *group, const struct CMUnitTest *extra,
                                   const struct CMUnitTest *rows, size_t n) {
    struct CMUnitTest tests[64];
    size_t k = 0;
    if (n + 1 > sizeof tests / sizeof tests[0])
        return fprintf(stderr, "%s: %zu rows, raise tests[] in api_errors_fixture.h\n", group, n),
               1;
    if (extra) tests[k++] = *extra;
    for (size_t r = 0; r < n; r++) tests[k++] = rows[r];
    return _cmocka_run_group_tests(group, tests, k, setup, teardown);
}

#endif

/* `hsd generate --chat` against the oracles, for each shared family with a chat template
 * (qwen3, llama3, llama3_1, gemma3, deepseek_v3): a GGUF written by `hsd synth --tokenizer`
 * carries the tokenizer_config.json's template; the prompt generate renders must equal Python
 * Jinja2's rendering (tests/oracle/chat_ref.py) of the same conversation, and the ids fed to
 * the target must equal that text encoded by HF tokenizers 0.23.2 with add_special_tokens off
 * (what apply_chat_template(tokenize=True) does; tests/oracle/hf_encode.js). A pair whose
 * special tokens differ (target qwen3, drafter llama3) checks the drafter's ids the same way:
 * special-token strings are special ids only in a tokenizer that has them. Also: the declared
 * end-of-turn ids end generation.
 *
 * Needs Python Jinja2 (apt-get install -y python3-jinja2) and the npm tokenizers oracle
 * (scripts/install_hf_tokenizers.sh); without them it exits 77 (ctest: Skipped), saying which. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "hsd.h"
#include "tests/testutil.h"
#include "tokenize/json.h"

static char node_path[4096];

static const char *SYS = "You are terse. Answer in one line.";
/* special-token strings of several families, non-ASCII, quotes and newlines */
static const char *USER = "Hi! <|im_end|> <end_of_turn> <|eot_id|> <｜end▁of▁sentence｜> \"quoted\"\n"
                          "Grüße, 世界 🌍 — tab\there";

static char *slurp_cmd(const char *cmd) { return hsd_test_run(cmd); }

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* the ids of `text` (a file) by the HF oracle, and the id of `token` (-1 if none) */
static json_t *hf_encode(const char *tokenizer, const char *text_file, const char *token, int64_t *token_id) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "NODE_PATH='%s' node '%s' '%s' '%s' '%s'", node_path,
             hsd_test_src_path("tests/oracle/hf_encode.js"), tokenizer, text_file, token ? token : "");
    char *out = slurp_cmd(cmd);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    free(out);
    assert_non_null(j);
    json_t *ids = json_incref(json_object_get(j, "ids"));
    if (token_id) {
        json_t *t = json_object_get(json_object_get(j, "token_ids"), token ? token : "");
        *token_id = json_is_integer(t) ? json_integer_value(t) : -1;
    }
    json_decref(j);
    return ids;
}

static void expect_same_ids(const char *what, json_t *got, json_t *want) {
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
        fprintf(stderr, "%s: hsd %s\n%s: HF  %s\n", what, g, what, w);
        free(g);
        free(w);
    }
    assert_true(json_equal(got, want));
}

/* the special-token strings transformers passes to the template: the config's, None left out
 * (read with hsd's JSON reader: jansson rejects the configs' 1e30 model_max_length) */
static void add_special(json_t *ctx, const hj_val *cfg, const char *key) {
    const hj_val *v = hj_get(cfg, key);
    if (v && v->type == HJ_OBJ) v = hj_get(v, "content");
    if (v && v->type == HJ_STR) json_object_set_new(ctx, key, json_stringn(v->u.s, v->n));
}

static const char *synth(const char *tokenizer_rel) {
    static char model[8][4096];
    static int slot;
    char dir[3000], name[256];
    snprintf(name, sizeof name, "%s", tokenizer_rel + strlen("tokenizers/"));
    *strchr(name, '/') = 0;
    snprintf(dir, sizeof dir, "%s", hsd_test_tmp(name));
    char *m = model[slot++ % 8];
    snprintf(m, 4096, "%s/model.gguf", dir);
    struct stat st;
    if (stat(m, &st)) {
        char cmd[8192];
        /* qwen3's NFC normalizer has no GGUF form: its vocabulary is written without it
         * (only the template matters here) */
        snprintf(cmd, sizeof cmd, "'%s' synth --shape tiny-262k --format gguf --dtype q8_0 -o '%s' --tokenizer '%s' "
                 "--gguf-drop-normalizer",
                 hsd_test_cli(), dir, hsd_test_path(tokenizer_rel));
        free(slurp_cmd(cmd));
    }
    return m;
}

/* The GGUF carries the template; the tokenizers are the HF tokenizer.json files (the GGUF's
 * own vocabulary conversion is models/gguf_vocab.c's concern, tested elsewhere). */
static json_t *generate(const char *target, const char *target_tok, const char *draft, const char *draft_tok) {
    char cmd[16384], dr[9000] = "";
    if (draft) snprintf(dr, sizeof dr, " --draft '%s' --draft-tokenizer '%s' --algo tli", draft, draft_tok);
    char *user_file = strdup(hsd_test_tmp("user.txt"));
    write_file(user_file, USER);
    /* The synthetic model's random weights may pick an id the tokenizer cannot decode (a hole
     * in its ids), which ends generation with an error: the prompt line (--print-prompt
     * --json) comes first and is what is checked. */
    snprintf(cmd, sizeof cmd,
             "'%s' generate -m '%s' -t '%s'%s --chat --system '%s' -p \"$(cat '%s')\" --json --print-prompt -n 1 "
             "2>/dev/null | head -n 1",
             hsd_test_cli(), target, target_tok, dr, SYS, user_file);
    free(user_file);
    char *out = slurp_cmd(cmd);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    if (!j) fprintf(stderr, "generate printed: %s\n", out);
    free(out);
    assert_non_null(j);
    return j;
}

static void check_family(const char *family) {
    char rel[256], tok[4096], cfgpath[4096];
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", family);
    snprintf(tok, sizeof tok, "%s", hsd_test_path(rel));
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer_config.json", family);
    snprintf(cfgpath, sizeof cfgpath, "%s", hsd_test_path(rel));
    if (!hsd_test_require(tok)) skip();
    char fam_tok[256];
    snprintf(fam_tok, sizeof fam_tok, "tokenizers/%s/tokenizer.json", family);
    const char *model = synth(fam_tok);
    (void)family;
    json_t *r = generate(model, tok, NULL, NULL);
    /* the oracle's text: Jinja2 over the same conversation with the config's template */
    size_t cfg_len;
    char *cfg_text = hsd_test_read_file(cfgpath, &cfg_len);
    assert_non_null(cfg_text);
    hj_doc cfg_doc;
    assert_int_equal(hj_parse(cfg_text, cfg_len, cfgpath, &cfg_doc), HSD_OK);
    const hj_val *cfg = cfg_doc.root;
    json_t *ctx = json_pack("{s:[{s:s,s:s},{s:s,s:s}], s:b}", "messages", "role", "system", "content", SYS,
                            "role", "user", "content", USER, "add_generation_prompt", 1);
    add_special(ctx, cfg, "bos_token");
    add_special(ctx, cfg, "eos_token");
    char ctx_path[4096], text_path[4096];
    snprintf(ctx_path, sizeof ctx_path, "%s", hsd_test_tmp("ctx.json"));
    snprintf(text_path, sizeof text_path, "%s", hsd_test_tmp("prompt.txt"));
    assert_int_equal(json_dump_file(ctx, ctx_path, 0), 0);
    char day[32], cmd[16384];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(day, sizeof day, "%Y-%m-%d", &tm);
    snprintf(cmd, sizeof cmd, "python3 '%s' render '%s' '%s' --now %s > '%s'",
             hsd_test_src_path("tests/oracle/chat_ref.py"), cfgpath, ctx_path, day, text_path);
    free(slurp_cmd(cmd));
    size_t tl;
    char *want_text = hsd_test_read_file(text_path, &tl);
    assert_non_null(want_text);
    const char *got_text = json_string_value(json_object_get(r, "prompt"));
    assert_non_null(got_text);
    if (strcmp(got_text, want_text)) fprintf(stderr, "%s: hsd prompt:\n%s\nJinja2:\n%s\n", family, got_text, want_text);
    assert_string_equal(got_text, want_text);
    json_t *eos_j = json_object_get(ctx, "eos_token");
    int64_t eos_id = -1;
    json_t *want_ids = hf_encode(tok, text_path, json_is_string(eos_j) ? json_string_value(eos_j) : NULL, &eos_id);
    expect_same_ids(family, json_object_get(r, "prompt_ids"), want_ids);
    fprintf(stderr, "%s: prompt of %zu bytes, %zu ids: identical to Jinja2 + HF tokenizers\n", family, tl,
            json_array_size(want_ids));
    /* the config's eos_token (the end-of-turn token) is among the ids that stop generation */
    if (eos_id >= 0) {
        hsd_tokenizer *t;
        assert_int_equal(hsd_tokenizer_load_file(model, &t), HSD_OK);
        int32_t *ids;
        size_t n;
        assert_int_equal(hsd_chat_eos_ids(model, t, &ids, &n), HSD_OK);
        bool found = false;
        for (size_t i = 0; i < n; i++) found |= ids[i] == eos_id;
        if (!found) fprintf(stderr, "%s: eos_token id %lld not among the %zu stop ids\n", family, (long long)eos_id, n);
        assert_true(found);
        hsd_free(ids);
        hsd_tokenizer_free(t);
    }
    json_decref(want_ids);
    free(want_text);
    json_decref(ctx);
    hj_free(&cfg_doc);
    free(cfg_text);
    json_decref(r);
}

static void test_qwen3(void **s) { (void)s; check_family("qwen3"); }
static void test_llama3(void **s) { (void)s; check_family("llama3"); }
static void test_llama3_1(void **s) { (void)s; check_family("llama3_1"); }
static void test_gemma3(void **s) { (void)s; check_family("gemma3"); }
static void test_deepseek_v3(void **s) { (void)s; check_family("deepseek_v3"); }

/* target qwen3, drafter llama3: "<|im_start|>" is special only in the target's vocabulary */
static void test_pair_special_tokens_differ(void **state) {
    (void)state;
    const char *tq = hsd_test_path("tokenizers/qwen3/tokenizer.json"),
               *tl = hsd_test_path("tokenizers/llama3/tokenizer.json");
    if (!hsd_test_require(tq) || !hsd_test_require(tl)) skip();
    const char *mq = synth("tokenizers/qwen3/tokenizer.json");
    const char *ml = synth("tokenizers/llama3/tokenizer.json");
    json_t *r = generate(mq, tq, ml, tl);
    const char *text = json_string_value(json_object_get(r, "prompt"));
    assert_non_null(text);
    assert_non_null(strstr(text, "<|im_start|>"));
    char text_path[4096];
    snprintf(text_path, sizeof text_path, "%s", hsd_test_tmp("pair_prompt.txt"));
    write_file(text_path, text);
    json_t *want_t = hf_encode(tq, text_path, NULL, NULL), *want_d = hf_encode(tl, text_path, NULL, NULL);
    expect_same_ids("pair target (qwen3)", json_object_get(r, "prompt_ids"), want_t);
    expect_same_ids("pair drafter (llama3)", json_object_get(r, "draft_prompt_ids"), want_d);
    assert_true(json_array_size(want_d) > json_array_size(want_t)); /* plain text there */
    json_decref(want_t);
    json_decref(want_d);
    json_decref(r);
}

/* An id registered with hsd_engine_set_eos_ids ends generation where it is produced. */
static void test_eos_ids_stop_generation(void **state) {
    (void)state;
    const char *tq = hsd_test_path("tokenizers/qwen3/tokenizer.json");
    if (!hsd_test_require(tq)) skip();
    const char *m = synth("tokenizers/qwen3/tokenizer.json");
    hsd_model_params mp = hsd_model_default_params();
    mp.n_ctx = 256;
    hsd_model *model;
    hsd_tokenizer *tok;
    hsd_engine *e;
    assert_int_equal(hsd_model_load(m, &mp, &model), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(m, &tok), HSD_OK);
    assert_int_equal(hsd_engine_init(model, tok, NULL, NULL, &e), HSD_OK);
    hsd_gen_params gp = hsd_gen_default_params();
    gp.max_new_tokens = 8;
    gp.algo = HSD_ALGO_AR;
    hsd_gen_result r1 = HSD_GEN_RESULT_INIT, r2 = HSD_GEN_RESULT_INIT;
    assert_int_equal(hsd_engine_generate(e, "Once upon a time", 16, &gp, &r1), HSD_OK);
    assert_true(r1.n_ids >= 3);
    int32_t stop = r1.ids[2], first = 0;
    while (r1.ids[first] != stop) first++;
    assert_int_equal(hsd_engine_set_eos_ids(e, &stop, 1), HSD_OK);
    hsd_engine_reset(e);
    assert_int_equal(hsd_engine_generate(e, "Once upon a time", 16, &gp, &r2), HSD_OK);
    assert_int_equal(r2.n_ids, first);
    assert_int_equal(r2.stop_reason, HSD_STOP_EOS);
    assert_int_equal(hsd_engine_set_eos_ids(e, NULL, 0), HSD_OK); /* cleared */
    hsd_gen_result_free(&r1);
    hsd_gen_result_free(&r2);
    hsd_engine_free(e);
    hsd_tokenizer_free(tok);
    hsd_model_free(model);
}

static int group_setup(void **state) {
    (void)state;
    return hsd_test_tmpdir_setup("hsd_chat_generate");
}
static int group_teardown(void **state) {
    (void)state;
    return hsd_test_tmpdir_teardown();
}

int main(void) {
    const char *env = getenv("HSD_HF_TOKENIZERS");
    snprintf(node_path, sizeof node_path, "%s/node_modules",
             env && *env ? env : hsd_test_src_path(".deps/hf-tokenizers"));
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/tokenizers/package.json", node_path);
    struct stat st;
    if (stat(probe, &st)) {
        fprintf(stderr, "skipped: the HF tokenizers oracle is missing (%s): run scripts/install_hf_tokenizers.sh\n", probe);
        return 77;
    }
    if (system("python3 -c 'import jinja2' 2>/dev/null") != 0) {
        fprintf(stderr, "skipped: Python Jinja2 is missing: apt-get install -y python3-jinja2\n");
        return 77;
    }
    if (system("node --version >/dev/null 2>&1") != 0) {
        fprintf(stderr, "skipped: node is missing (scripts/bootstrap.sh --ci installs it)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_llama3_1),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_deepseek_v3),
        cmocka_unit_test(test_pair_special_tokens_differ),
        cmocka_unit_test(test_eos_ids_stop_generation),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* hsd pair: vocabulary sizes, |T∩D| and the corpus-usage ratios against an independent
 * computation straight from tokenizer.json (own byte-level / SentencePiece surface decoding)
 * and the reference token strings; expressibility; the Table 4 rule on hand-built cases. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/base/map.h"
#include "tests/testutil.h"

/* ---- independent surface decoding ---- */

/* GPT-2 bytes_to_unicode, inverted: printable Latin-1 bytes map to themselves, the other 68
 * bytes to U+0100.. in byte order. */
static int bl_byte(unsigned cp) {
    static int inv[324];
    static int init;
    if (!init) {
        for (int i = 0; i < 324; i++) inv[i] = -1;
        int n = 0;
        for (int b = 0; b < 256; b++) {
            bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            if (keep) inv[b] = b;
            else inv[256 + n++] = b;
        }
        init = 1;
    }
    return cp < 324 ? inv[cp] : -1;
}

static unsigned next_cp(const unsigned char **p) {
    const unsigned char *s = *p;
    unsigned c = s[0];
    if (c < 0x80) { *p += 1; return c; }
    if (c < 0xE0) { *p += 2; return ((c & 0x1F) << 6) | (s[1] & 0x3F); }
    if (c < 0xF0) { *p += 3; return ((c & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F); }
    *p += 4;
    return ((c & 7) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

/* Surface of a model-vocabulary string: byte-level un-escaping, or SentencePiece ▁ / <0xNN>. */
static size_t surface(const char *tok, bool byte_level, char *out) {
    size_t n = 0, len = strlen(tok);
    if (byte_level) {
        const unsigned char *p = (const unsigned char *)tok, *e = p + len;
        while (p < e) {
            int b = bl_byte(next_cp(&p));
            if (b < 0) { /* not byte-level: keep as is (never happens for these vocabularies) */
                memcpy(out, tok, len);
                return len;
            }
            out[n++] = (char)b;
        }
        return n;
    }
    unsigned v;
    if (len == 6 && sscanf(tok, "<0x%2X>", &v) == 1 && tok[5] == '>') {
        out[0] = (char)v;
        return 1;
    }
    for (size_t i = 0; i < len;) {
        if (!strncmp(tok + i, "\xE2\x96\x81", 3)) {
            out[n++] = ' ';
            i += 3;
        } else {
            out[n++] = tok[i++];
        }
    }
    return n;
}

/* One vocabulary read from tokenizer.json without the library. */
typedef struct vocab {
    hsd_strmap text, special;      /* surface -> id */
    hsd_strmap str_special;        /* token string -> is special (1) */
    hsd_strmap str_surface_len;    /* token string -> index into surf */
    char **surf;
    size_t *surf_len;
    int32_t n;                     /* distinct ids */
    bool byte_level;
} vocab;

static void vocab_put(vocab *v, const char *str, bool added, bool special) {
    char buf[1024];
    size_t n;
    if (added) {
        n = strlen(str);
        memcpy(buf, str, n);
    } else {
        n = surface(str, v->byte_level, buf);
    }
    int32_t idx = hsd_strmap_get(&v->str_surface_len, str, strlen(str));
    if (idx < 0) {
        idx = v->n++;
        v->surf = realloc(v->surf, (size_t)v->n * sizeof *v->surf);
        v->surf_len = realloc(v->surf_len, (size_t)v->n * sizeof *v->surf_len);
    } else {
        free(v->surf[idx]);
    }
    v->surf[idx] = malloc(n + 1);
    memcpy(v->surf[idx], buf, n);
    v->surf_len[idx] = n;
    hsd_strmap_put(&v->str_surface_len, str, strlen(str), idx);
    hsd_strmap_put(&v->str_special, str, strlen(str), special ? 1 : 0);
}

/* Surface sets once every entry is final (an added token may redefine a model-vocab string,
 * as "<s>" in SentencePiece vocabularies, turning it special). */
static void vocab_index(vocab *v) {
    for (size_t s = 0; s < v->str_surface_len.cap; s++) {
        const hsd_strmap_slot *sl = &v->str_surface_len.slots[s];
        if (!sl->hash) continue;
        const char *key = v->str_surface_len.arena + sl->key_off;
        bool special = hsd_strmap_get(&v->str_special, key, sl->key_len) == 1;
        if (v->surf_len[sl->val])
            hsd_strmap_put(special ? &v->special : &v->text, v->surf[sl->val], v->surf_len[sl->val],
                           sl->val);
    }
}

static void vocab_load(vocab *v, const char *fam, bool byte_level) {
    memset(v, 0, sizeof *v);
    v->byte_level = byte_level;
    hsd_strmap_init(&v->text, 1 << 16);
    hsd_strmap_init(&v->special, 64);
    hsd_strmap_init(&v->str_special, 1 << 16);
    hsd_strmap_init(&v->str_surface_len, 1 << 16);
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", fam);
    json_error_t err;
    json_t *j = json_load_file(hsd_test_path(rel), 0, &err);
    assert_non_null(j);
    json_t *vv = json_object_get(json_object_get(j, "model"), "vocab");
    const char *k;
    json_t *val;
    json_object_foreach(vv, k, val) vocab_put(v, k, false, false);
    size_t i;
    json_array_foreach(json_object_get(j, "added_tokens"), i, val) {
        vocab_put(v, json_string_value(json_object_get(val, "content")), true,
                  json_is_true(json_object_get(val, "special")));
    }
    json_decref(j);
    vocab_index(v);
}

static void vocab_free(vocab *v) {
    for (int32_t i = 0; i < v->n; i++) free(v->surf[i]);
    free(v->surf);
    free(v->surf_len);
    hsd_strmap_free(&v->text);
    hsd_strmap_free(&v->special);
    hsd_strmap_free(&v->str_special);
    hsd_strmap_free(&v->str_surface_len);
}

/* Does token string `str` of t meet d (surface sets)? */
static bool meets(const vocab *t, const char *str, const hsd_strmap *d_text,
                  const hsd_strmap *d_special) {
    int32_t idx = hsd_strmap_get(&t->str_surface_len, str, strlen(str));
    assert_true(idx >= 0);
    if (!t->surf_len[idx]) return false;
    bool sp = hsd_strmap_get(&t->str_special, str, strlen(str)) == 1;
    return hsd_strmap_get(sp ? d_special : d_text, t->surf[idx], t->surf_len[idx]) >= 0;
}

/* The distinct token strings of the reference encodings (no special tokens added). */
static void used_tokens(const char *fam, hsd_strmap *set, char ***list, size_t *n) {
    char rel[256];
    snprintf(rel, sizeof rel, "reference/%s.jsonl", fam);
    FILE *f = fopen(hsd_test_path(rel), "r");
    assert_non_null(f);
    hsd_strmap_init(set, 4096);
    *list = NULL;
    *n = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        json_error_t err;
        json_t *r = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &err);
        assert_non_null(r);
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(r, "tokens"), i, t) {
            const char *s = json_string_value(t);
            if (hsd_strmap_get(set, s, strlen(s)) >= 0) continue;
            hsd_strmap_put(set, s, strlen(s), (int32_t)*n);
            *list = realloc(*list, (*n + 1) * sizeof **list);
            (*list)[(*n)++] = strdup(s);
        }
        json_decref(r);
    }
    free(line);
    fclose(f);
}

static void check_pair(const char *tf, bool t_bl, const char *df, bool d_bl) {
    char trel[256], drel[256];
    snprintf(trel, sizeof trel, "tokenizers/%s/tokenizer.json", tf);
    snprintf(drel, sizeof drel, "tokenizers/%s/tokenizer.json", df);
    const char *corpus = hsd_test_path("corpus/corpus.jsonl");
    assert_true(hsd_test_require(hsd_test_path(trel))); /* missing data fails, never skips */
    assert_true(hsd_test_require(hsd_test_path(drel))); /* missing data fails, never skips */
    assert_true(hsd_test_require(corpus)); /* missing data fails, never skips */
    hsd_tokenizer *t = NULL, *d = NULL;
    assert_int_equal(hsd_tokenizer_load_file(hsd_test_path(trel), &t), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(hsd_test_path(drel), &d), HSD_OK);
    hsd_pair_report r;
    assert_int_equal(hsd_pair_analyze(t, d, corpus, &r), HSD_OK);

    vocab tv, dv;
    vocab_load(&tv, tf, t_bl);
    vocab_load(&dv, df, d_bl);
    int32_t inter = 0;
    /* |T∩D| over every T token string */
    for (size_t s = 0; s < tv.str_surface_len.cap; s++) {
        const hsd_strmap_slot *sl = &tv.str_surface_len.slots[s];
        if (!sl->hash) continue;
        char key[1024];
        memcpy(key, tv.str_surface_len.arena + sl->key_off, sl->key_len);
        key[sl->key_len] = 0;
        if (meets(&tv, key, &dv.text, &dv.special)) inter++;
    }
    printf("%s -> %s: |T| %d (lib %d), |D| %d (lib %d), |T∩D| %d (lib %d), ratio %.4f\n", tf, df,
           tv.n, r.t_size, dv.n, r.d_size, inter, r.intersection, r.ratio);
    assert_int_equal(r.t_size, tv.n);
    assert_int_equal(r.d_size, dv.n);
    assert_int_equal(r.intersection, inter);
    assert_true(r.ratio > 0 && r.ratio < 1);

    /* Table 10 from the reference token strings */
    hsd_strmap tset, dset;
    char **tl, **dl;
    size_t tn, dn;
    used_tokens(tf, &tset, &tl, &tn);
    used_tokens(df, &dset, &dl, &dn);
    hsd_strmap du_text, du_special;
    hsd_strmap_init(&du_text, 4096);
    hsd_strmap_init(&du_special, 16);
    for (size_t i = 0; i < dn; i++) {
        int32_t idx = hsd_strmap_get(&dv.str_surface_len, dl[i], strlen(dl[i]));
        assert_true(idx >= 0);
        bool sp = hsd_strmap_get(&dv.str_special, dl[i], strlen(dl[i])) == 1;
        if (dv.surf_len[idx])
            hsd_strmap_put(sp ? &du_special : &du_text, dv.surf[idx], dv.surf_len[idx], 1);
    }
    int32_t in_d = 0, in_du = 0;
    for (size_t i = 0; i < tn; i++) {
        in_d += meets(&tv, tl[i], &dv.text, &dv.special);
        in_du += meets(&tv, tl[i], &du_text, &du_special);
    }
    printf("  corpus: T' %zu (lib %d), D' %zu (lib %d), T'∩D %d (lib %d), T'∩D' %d (lib %d)\n", tn,
           r.t_used, dn, r.d_used, in_d, r.t_used_in_d, in_du, r.t_used_in_dused);
    assert_true(r.has_corpus);
    assert_int_equal(r.corpus_samples, 399);
    assert_int_equal(r.t_used, (int32_t)tn);
    assert_int_equal(r.d_used, (int32_t)dn);
    assert_int_equal(r.t_used_in_d, in_d);
    assert_int_equal(r.t_used_in_dused, in_du);
    assert_true(r.corpus_ratio > 0.0 && r.corpus_ratio <= 1.0);

    /* Every side has all 256 bytes as tokens (byte-level or byte fallback), so both
     * directions of expressibility must hold. Check the premise independently. */
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        assert_true(hsd_strmap_get(&dv.text, &c, 1) >= 0);
        assert_true(hsd_strmap_get(&tv.text, &c, 1) >= 0);
    }
    assert_true(r.t_in_dstar.holds);
    assert_true(r.d_in_tstar.holds);
    assert_int_equal(r.t_in_dstar.failures, 0);
    assert_true(r.t_in_dstar.checked > 0);

    for (size_t i = 0; i < tn; i++) free(tl[i]);
    for (size_t i = 0; i < dn; i++) free(dl[i]);
    free(tl);
    free(dl);
    hsd_strmap_free(&tset);
    hsd_strmap_free(&dset);
    hsd_strmap_free(&du_text);
    hsd_strmap_free(&du_special);
    vocab_free(&tv);
    vocab_free(&dv);
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(d);
}

static void test_llama3_qwen3(void **state) {
    (void)state;
    check_pair("llama3", true, "qwen3", true);
}
static void test_gemma3_llama2(void **state) {
    (void)state;
    check_pair("gemma3", false, "llama2", false);
}
static void test_qwen3_gpt2(void **state) {
    (void)state;
    check_pair("qwen3", true, "gpt2", true);
}

/* Paper Table 9 reports Llama-3.1 / Qwen2 at 109,566 shared tokens (0.85): the vocabularies
 * here are the same token sets, so the count must match the paper. */
static void test_paper_table9(void **state) {
    (void)state;
    const char *tp = hsd_test_path("tokenizers/llama3/tokenizer.json");
    const char *dp = hsd_test_path("tokenizers/qwen3/tokenizer.json");
    assert_true(hsd_test_require(tp)); /* missing data fails, never skips */
    assert_true(hsd_test_require(dp)); /* missing data fails, never skips */
    hsd_tokenizer *t = NULL, *d = NULL;
    assert_int_equal(hsd_tokenizer_load_file(tp, &t), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(dp, &d), HSD_OK);
    hsd_pair_report r;
    assert_int_equal(hsd_pair_analyze(t, d, NULL, &r), HSD_OK);
    assert_int_equal(r.intersection, 109566);
    assert_int_equal(r.t_size, 128256);
    assert_false(r.has_corpus);
    assert_int_equal(r.algo, HSD_PAIR_TLI);
    /* and a tokenizer paired with itself is the homogeneous case */
    assert_int_equal(hsd_pair_analyze(t, t, NULL, &r), HSD_OK);
    assert_true(r.identical);
    assert_int_equal(r.intersection, r.t_size);
    assert_int_equal(r.algo, HSD_PAIR_SD);
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(d);
}

/* tok512 (byte fallback) against tok105 (105 characters, no byte fallback): T → D* fails for
 * tokens holding a byte no drafter token contains; D → T* holds (tok512 has every byte). */
static void test_expressibility_counterexample(void **state) {
    (void)state;
    const char *tp = hsd_test_path("models/stories260K/tok512.bin");
    const char *dp = hsd_test_path("models/babyllama-tok105/tok105.bin");
    assert_true(hsd_test_require(tp)); /* missing data fails, never skips */
    assert_true(hsd_test_require(dp)); /* missing data fails, never skips */
    hsd_tokenizer *t = NULL, *d = NULL;
    assert_int_equal(hsd_tokenizer_load_file(tp, &t), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(dp, &d), HSD_OK);
    bool dbytes[256] = {0};
    for (int32_t id = 0; id < hsd_tokenizer_vocab_size(d); id++) {
        size_t n;
        const uint8_t *b = hsd_tokenizer_token_bytes(d, id, &n);
        if (hsd_tokenizer_is_special(d, id) || !hsd_tokenizer_id_to_token(d, id)) continue;
        for (size_t i = 0; i < n; i++) dbytes[b[i]] = true;
    }
    /* tokens with a byte outside D's bytes can never be expressed */
    int64_t must_fail = 0;
    for (int32_t id = 0; id < hsd_tokenizer_vocab_size(t); id++) {
        size_t n;
        const uint8_t *b = hsd_tokenizer_token_bytes(t, id, &n);
        if (hsd_tokenizer_is_special(t, id) || !n) continue;
        for (size_t i = 0; i < n; i++)
            if (!dbytes[b[i]]) {
                must_fail++;
                break;
            }
    }
    hsd_pair_expr e;
    assert_int_equal(hsd_pair_expressible(t, d, &e), HSD_OK);
    assert_false(e.holds);
    assert_true(must_fail > 0);
    assert_true(e.failures >= must_fail);
    assert_int_equal(e.n_examples, HSD_PAIR_MAX_EXAMPLES);
    assert_string_equal(hsd_tokenizer_id_to_token(t, e.example_ids[0]), "<0x00>");
    /* the ψ summary's DP (lib/analysis/psi_stats) and the expressibility DP agree: the target
     * tokens with no decomposition are exactly the ones T → D* cannot express */
    hsd_pair_psi psi;
    assert_int_equal(hsd_pair_psi_summary(t, d, &psi), HSD_OK);
    assert_int_equal(psi.tokens, e.checked);
    assert_int_equal(psi.none, e.failures);
    /* tok105 is character-level: a spellable token has exactly one decomposition, and the
     * lookahead is the longest target token, in characters */
    assert_true(psi.max == 1);
    assert_true(psi.n_max >= 2);
    assert_int_equal(hsd_pair_expressible(d, t, &e), HSD_OK);
    assert_true(e.holds);
    assert_int_equal(e.failures, 0);
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(d);
}

/* The Table 4 rule on hand-built facts. */
/* A report with no findings: both expressibility directions hold, no corpus. */
static void fresh(hsd_pair_report *r) {
    memset(r, 0, sizeof *r);
    r->t_in_dstar.holds = r->d_in_tstar.holds = true;
}

static void test_recommend_rule(void **state) {
    (void)state;
    hsd_pair_report r;
    fresh(&r);
    r.identical = true;
    r.ratio = 1.0;
    r.d_max_surface = 2;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_SD);

    fresh(&r);
    r.ratio = 0.74; /* Mixtral / vicuna in Table 9 */
    r.d_max_surface = 16;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_TLI);
    assert_non_null(strstr(r.reason, "overlap"));

    r.has_corpus = true; /* ... but the text never uses the shared tokens */
    r.corpus_ratio = 0.3;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_SLEM);
    r.corpus_ratio = 0.5;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_TLI);

    fresh(&r);
    r.ratio = 0.12; /* Gemma / vicuna */
    r.d_max_surface = 3; /* character-level drafter */
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_SLRS);
    r.d_max_surface = HSD_PAIR_SLRS_MAX_BYTES;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_SLRS);
    r.d_max_surface = HSD_PAIR_SLRS_MAX_BYTES + 1;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_SLEM);
    r.ratio = 0.49;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_SLEM);
    r.ratio = 0.50;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_TLI);

    assert_string_equal(r.warnings, "");
    r.t_in_dstar.holds = false;
    r.t_in_dstar.failures = 3;
    r.t_in_dstar.checked = 10;
    hsd_pair_recommend(&r);
    assert_non_null(strstr(r.warnings, "T -> D* fails for 3 of 10"));
    assert_int_equal(r.algo, HSD_PAIR_TLI); /* a warning, not a different algorithm */

    assert_string_equal(hsd_pair_algo_name(HSD_PAIR_SLRS), "SLRS");
    hsd_pair_psi psi;
    assert_int_equal(hsd_pair_psi_summary(NULL, NULL, &psi), HSD_ERR_INVALID_ARG);

    /* with the ψ summary, short drafter tokens are not enough: ψ must be cheap too */
    fresh(&r);
    r.ratio = 0.12;
    r.d_max_surface = 3;
    r.has_psi = true;
    r.psi.nodes_p75 = HSD_PAIR_SLRS_MAX_NODES;
    r.psi.n_max = 7;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_SLRS);
    assert_non_null(strstr(r.reason, "psi is cheap"));
    r.psi.nodes_p75 = HSD_PAIR_SLRS_MAX_NODES + 1;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_SLEM);
    assert_non_null(strstr(r.reason, "psi is costly"));
    r.ratio = 0.5; /* TLI still comes first */
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_PAIR_TLI);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recommend_rule),
        cmocka_unit_test(test_paper_table9),
        cmocka_unit_test(test_expressibility_counterexample),
        cmocka_unit_test(test_llama3_qwen3),
        cmocka_unit_test(test_gemma3_llama2),
        cmocka_unit_test(test_qwen3_gpt2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

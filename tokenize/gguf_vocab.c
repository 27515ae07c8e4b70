/* Tokenizer from GGUF metadata (tokenizer.ggml.*), as llama.cpp stores it:
 *   model      "llama" -> SentencePiece pieces with scores (SPM model, "▁" for spaces)
 *              "gpt2"  -> byte-level BPE with `merges` ("Ġt h"-style pairs)
 *   tokens, scores, token_type, merges, bos/eos/unknown_token_id, add_bos_token,
 *   add_eos_token, add_space_prefix, pre (pre-tokenizer regex family for gpt2).
 * Control and unknown tokens become special added tokens and user-defined tokens plain added
 * tokens, which is how the HF tokenizer.json of the same model declares them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/gguf.h"
#include "tokenize/spm.h"
#include "tokenize/tokenizer.h"

/* llama.cpp token types (llama_token_type) */
enum {
    TT_NORMAL = 1,
    TT_UNKNOWN = 2,
    TT_CONTROL = 3,
    TT_USER_DEFINED = 4,
    TT_UNUSED = 5,
    TT_BYTE = 6
};

/* llama.cpp's byte-level BPE pre-tokenizers (tokenizer.ggml.pre) that hsd reads and writes,
 * each as the HF tokenizer.json pipeline it stands for: Split(pattern, Isolated) steps in
 * order, then ByteLevel without its regex; "gpt-2" is ByteLevel(use_regex) alone.
 * ignore_merges is what llama.cpp applies for the name, whatever the source file said: a
 * writer must check that the tokenizer agrees (or that it makes no difference). The
 * patterns are HF's, as written in the tokenizer.json files; llama.cpp runs hand-adapted
 * rewrites of them, which bench/gguf_vocab.sh checks on the corpus (llama_cpp_differs says
 * where they are not equivalent). */
#define GPT2_PATTERN \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
static const hsd_gguf_pre PRES[] = {
    {"gpt-2", {"gpt-2", "default"}, 0, {NULL}, false, NULL},
    {"llama-bpe", {"llama-bpe", "llama3", "llama-v3"}, 1,
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     true, NULL},
    {"qwen2", {"qwen2", "deepseek-r1-qwen"}, 1,
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     false, NULL},
    {"deepseek-v3", {"deepseek-v3"}, 3,
     {"\\p{N}{1,3}",
      "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}"
      "\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
     false, NULL},
    {"gpt-4o", {"gpt-4o", "llama4"}, 1,
     {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+("
      "?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+["
      "\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     false,
     /* measured: bench/notes/gguf_vocab.md (12 of 399 corpus lines, all with marks) */
     "it splits combining marks (\\p{M}) off the letters they follow, as in Vietnamese, "
     "Arabic, Devanagari and Thai"},
};

const hsd_gguf_pre *hsd_gguf_pre_find(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof PRES / sizeof *PRES; i++)
        for (int a = 0; a < 3 && PRES[i].aliases[a]; a++)
            if (strlen(PRES[i].aliases[a]) == len && !memcmp(PRES[i].aliases[a], name, len))
                return &PRES[i];
    return NULL;
}

const hsd_gguf_pre *hsd_gguf_pre_at(size_t i) {
    return i < sizeof PRES / sizeof *PRES ? &PRES[i] : NULL;
}

const char *hsd_gguf_pre_gpt2_pattern(void) { return GPT2_PATTERN; }

typedef struct vocab_keys {
    const hsd_gguf_kv *model, *pre, *tokens, *scores, *types, *merges;
    const hsd_gguf_kv *bos, *eos, *unk, *add_bos, *add_eos, *add_space;
} vocab_keys;

static hsd_status opt_id(const hsd_gguf *g, const hsd_gguf_kv *kv, int32_t n_ids, int32_t *id) {
    if (!kv) return HSD_OK;
    int64_t v;
    hsd_status s = hsd_gguf_get_int(g, kv, &v);
    if (s) return s;
    /* out-of-range ids occur in real files (e.g. padding ids past the vocab): ignore them */
    *id = v >= 0 && v < n_ids ? (int32_t)v : -1;
    return HSD_OK;
}

static hsd_status opt_bool(const hsd_gguf *g, const hsd_gguf_kv *kv, bool *b) {
    return kv ? hsd_gguf_get_bool(g, kv, b) : HSD_OK;
}

static bool str_is(const char *s, size_t n, const char *lit) {
    return n == strlen(lit) && !memcmp(s, lit, n);
}

static hsd_status set_added(hsd_tokenizer *t, const int32_t *types) {
    size_t n = 0;
    for (int32_t id = 0; id < t->n_ids; id++)
        if (types[id] == TT_CONTROL || types[id] == TT_UNKNOWN || types[id] == TT_USER_DEFINED) n++;
    if (!n) return HSD_OK;
    t->added = calloc(n, sizeof *t->added);
    if (!t->added) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    for (int32_t id = 0; id < t->n_ids; id++) {
        int32_t ty = types[id];
        if (ty != TT_CONTROL && ty != TT_UNKNOWN && ty != TT_USER_DEFINED) continue;
        size_t len;
        const char *s = hsd_tok_str(t, id, &len);
        hsd_added_token *a = &t->added[t->n_added];
        a->content = malloc(len + 1);
        if (!a->content) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
        memcpy(a->content, s, len);
        a->content[len] = 0;
        a->len = len;
        a->id = id;
        a->special = ty != TT_USER_DEFINED;
        t->n_added++;
        t->flags[id] |= HSD_TOKF_ADDED | (a->special ? HSD_TOKF_SPECIAL : 0);
    }
    return hsd_added_build(t);
}

static hsd_status add_dec(hsd_tokenizer *t, hsd_dec_type type) {
    hsd_dec_step *d = realloc(t->dec, (t->n_dec + 1) * sizeof *d);
    if (!d) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    t->dec = d;
    memset(&d[t->n_dec], 0, sizeof *d);
    d[t->n_dec++].type = type;
    t->has_decoder = true;
    return HSD_OK;
}

static char *dup_n(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* SentencePiece: HF's Llama decoder chain Replace("▁", " "), ByteFallback, Fuse and, when a
 * dummy prefix is added, Strip(" ", 1, 0). */
static hsd_status build_spm(hsd_tokenizer *t, const hsd_gguf *g, const vocab_keys *k,
                            bool add_space) {
    hsd_status s = HSD_OK;
    float *scores = calloc((size_t)t->n_ids, sizeof *scores);
    if (!scores) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    if (k->scores) /* llama.cpp treats missing scores as 0 */
        for (int32_t id = 0; id < t->n_ids; id++) scores[id] = hsd_gguf_f32_at(g, k->scores, id);
    t->spm_add_dummy_prefix = add_space;
    hsd_spm_opts o = {.escape_spaces = true};
    s = hsd_spm_build(t, scores, &o);
    free(scores);
    if (s) return s;
    if ((s = add_dec(t, HSD_DEC_REPLACE))) return s;
    hsd_dec_step *d = &t->dec[t->n_dec - 1];
    d->pattern = dup_n("\xe2\x96\x81", 3);
    d->pattern_len = 3;
    d->content = dup_n(" ", 1);
    d->content_len = 1;
    if (!d->pattern || !d->content) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    if ((s = add_dec(t, HSD_DEC_BYTE_FALLBACK)) || (s = add_dec(t, HSD_DEC_FUSE))) return s;
    if (add_space) {
        if ((s = add_dec(t, HSD_DEC_STRIP))) return s;
        d = &t->dec[t->n_dec - 1];
        d->content = dup_n(" ", 1);
        d->content_len = 1;
        d->start = 1;
        d->stop = 0;
        if (!d->content) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    }
    return HSD_OK;
}

static hsd_status add_pre(hsd_tokenizer *t, hsd_pre_type type, const char *pattern,
                          const char *ctx) {
    hsd_pre_step *p = realloc(t->pre, (t->n_pre + 1) * sizeof *p);
    if (!p) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    t->pre = p;
    p = &t->pre[t->n_pre];
    memset(p, 0, sizeof *p);
    p->type = type;
    p->behavior = HSD_SPLIT_ISOLATED;
    t->n_pre++;
    if (pattern) return hsd_regex_compile(pattern, strlen(pattern), 0, ctx, &p->re);
    return HSD_OK;
}

/* Byte-level BPE: ByteLevel pre-tokenizer (GPT-2 regex, or llama-3's Split before it),
 * merges "a b" split at the first space after the first character (as llama.cpp does),
 * ByteLevel decoder. */
static hsd_status build_bpe(hsd_tokenizer *t, const hsd_gguf *g, const vocab_keys *k,
                            const char *pre, size_t pre_len) {
    hsd_status s;
    bool ignore_merges = false;
    if (!k->merges)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: GGUF: tokenizer.ggml.model is gpt2 but "
                         "tokenizer.ggml.merges is missing",
                         t->name);
    if ((s = hsd_gguf_expect_array(g, k->merges, HSD_GGUF_STRING))) return s;
    t->byte_level = true;
    const hsd_gguf_pre *pt = pre ? hsd_gguf_pre_find(pre, pre_len) : &PRES[0];
    if (!pt)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "%s: GGUF: tokenizer.ggml.pre '%.*s' is not supported (gpt-2, default, "
                         "llama-bpe, qwen2, deepseek-v3 and gpt-4o are)",
                         t->name, (int)(pre_len > 100 ? 100 : pre_len), pre);
    char ctx[64];
    snprintf(ctx, sizeof ctx, "GGUF pre-tokenizer %s", pt->name);
    for (int i = 0; i < pt->n_split; i++)
        if ((s = add_pre(t, HSD_PRE_SPLIT, pt->split[i], ctx))) return s;
    if ((s = add_pre(t, HSD_PRE_BYTELEVEL, pt->n_split ? NULL : GPT2_PATTERN, ctx))) return s;
    /* llama.cpp's rule for the name (Llama-3's tokenizer.json sets ignore_merges too): a
     * piece that is itself a token is emitted whole */
    ignore_merges = pt->ignore_merges;
    if ((s = add_dec(t, HSD_DEC_BYTELEVEL))) return s;

    size_t n = (size_t)k->merges->arr_n;
    const char **left = calloc(n ? n : 1, sizeof *left);
    const char **right = calloc(n ? n : 1, sizeof *right);
    uint32_t *ll = calloc(n ? n : 1, sizeof *ll), *rl = calloc(n ? n : 1, sizeof *rl);
    if (!left || !right || !ll || !rl) {
        s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
        goto done;
    }
    size_t off = k->merges->val_off;
    for (size_t i = 0; i < n; i++) {
        size_t at = off, len;
        const char *m;
        hsd_gguf_next_str(g, &off, &m, &len);
        const char *sp = len > 1 ? memchr(m + 1, ' ', len - 1) : NULL;
        if (!sp) {
            s = hsd_error(HSD_ERR_PARSE,
                          "%s: GGUF key 'tokenizer.ggml.merges': merge %zu at byte %zu has no "
                          "space separating its two parts",
                          t->name, i, at);
            goto done;
        }
        left[i] = m;
        ll[i] = (uint32_t)(sp - m);
        right[i] = sp + 1;
        rl[i] = (uint32_t)(len - ll[i] - 1);
    }
    hsd_bpe_opts o = {.unk_id = t->unk_id, .ignore_merges = ignore_merges};
    s = hsd_bpe_build(t, &o, n, left, ll, right, rl);
done:
    free(left);
    free(right);
    free(ll);
    free(rl);
    return s;
}

static hsd_status load(hsd_tokenizer *t, const hsd_gguf *g) {
    vocab_keys k = {
        .model = hsd_gguf_find(g, "tokenizer.ggml.model"),
        .pre = hsd_gguf_find(g, "tokenizer.ggml.pre"),
        .tokens = hsd_gguf_find(g, "tokenizer.ggml.tokens"),
        .scores = hsd_gguf_find(g, "tokenizer.ggml.scores"),
        .types = hsd_gguf_find(g, "tokenizer.ggml.token_type"),
        .merges = hsd_gguf_find(g, "tokenizer.ggml.merges"),
        .bos = hsd_gguf_find(g, "tokenizer.ggml.bos_token_id"),
        .eos = hsd_gguf_find(g, "tokenizer.ggml.eos_token_id"),
        .unk = hsd_gguf_find(g, "tokenizer.ggml.unknown_token_id"),
        .add_bos = hsd_gguf_find(g, "tokenizer.ggml.add_bos_token"),
        .add_eos = hsd_gguf_find(g, "tokenizer.ggml.add_eos_token"),
        .add_space = hsd_gguf_find(g, "tokenizer.ggml.add_space_prefix"),
    };
    hsd_status s;
    if (!k.model || !k.tokens)
        return hsd_error(HSD_ERR_PARSE, "%s: GGUF has no %s (not a model with a vocabulary?)",
                         t->name, !k.model ? "tokenizer.ggml.model" : "tokenizer.ggml.tokens");
    const char *model, *pre = NULL;
    size_t model_len, pre_len = 0;
    if ((s = hsd_gguf_get_str(g, k.model, &model, &model_len))) return s;
    if (k.pre && (s = hsd_gguf_get_str(g, k.pre, &pre, &pre_len))) return s;
    bool spm = str_is(model, model_len, "llama"), bpe = str_is(model, model_len, "gpt2");
    if (!spm && !bpe)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "%s: GGUF tokenizer.ggml.model '%.*s' is not supported (llama and "
                         "gpt2 are)",
                         t->name, (int)(model_len > 100 ? 100 : model_len), model);
    if ((s = hsd_gguf_expect_array(g, k.tokens, HSD_GGUF_STRING))) return s;
    if (k.tokens->arr_n == 0 || k.tokens->arr_n > (1u << 26))
        return hsd_error(HSD_ERR_PARSE,
                         "%s: GGUF key 'tokenizer.ggml.tokens' at byte %zu: %llu "
                         "tokens is out of range",
                         t->name, k.tokens->val_off, (unsigned long long)k.tokens->arr_n);
    int32_t n = (int32_t)k.tokens->arr_n;
    const hsd_gguf_kv *per_token[2] = {k.scores, k.types};
    const hsd_gguf_type per_type[2] = {HSD_GGUF_FLOAT32, HSD_GGUF_INT32};
    for (int i = 0; i < 2; i++) {
        const hsd_gguf_kv *kv = per_token[i];
        if (!kv) continue;
        if ((s = hsd_gguf_expect_array(g, kv, per_type[i]))) return s;
        if (kv->arr_n != (uint64_t)n)
            return hsd_error(HSD_ERR_PARSE,
                             "%s: GGUF key '%.*s' at byte %zu has %llu entries but there are %d "
                             "tokens",
                             t->name, (int)kv->key_len, kv->key, kv->val_off,
                             (unsigned long long)kv->arr_n, n);
    }

    if ((s = hsd_tok_set_size(t, n))) return s;
    int32_t *types = malloc((size_t)n * sizeof *types);
    if (!types) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    size_t off = k.tokens->val_off;
    for (int32_t id = 0; id < n && !s; id++) {
        const char *str;
        size_t len;
        hsd_gguf_next_str(g, &off, &str, &len);
        s = hsd_tok_set_token(t, id, str, len);
        types[id] = k.types ? hsd_gguf_i32_at(g, k.types, (uint64_t)id) : TT_NORMAL;
        if (types[id] == TT_BYTE) t->flags[id] |= HSD_TOKF_BYTE;
        /* an unused id (padding up to the model's rows) is no token: it never encodes, does
         * not decode and has no surface, so vocabulary overlaps do not count it */
        if (types[id] == TT_UNUSED) t->flags[id] |= HSD_TOKF_UNUSED;
    }

    /* llama.cpp's defaults when the ids are absent: SPM 0/1/2, BPE none */
    if (!s && spm) {
        t->unk_id = 0;
        t->bos_id = n > 1 ? 1 : -1;
        t->eos_id = n > 2 ? 2 : -1;
    }
    bool add_bos = spm, add_eos = false, add_space = spm;
    if (!s) s = opt_id(g, k.bos, n, &t->bos_id);
    if (!s) s = opt_id(g, k.eos, n, &t->eos_id);
    if (!s) s = opt_id(g, k.unk, n, &t->unk_id);
    if (!s) s = opt_bool(g, k.add_bos, &add_bos);
    if (!s) s = opt_bool(g, k.add_eos, &add_eos);
    if (!s) s = opt_bool(g, k.add_space, &add_space);
    if (!s) s = set_added(t, types);
    free(types);
    if (s) return s;

    if (add_bos && t->bos_id >= 0) {
        if (!(t->post_prefix = malloc(sizeof *t->post_prefix)))
            return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
        t->post_prefix[0] = t->bos_id;
        t->n_post_prefix = 1;
    }
    if (add_eos && t->eos_id >= 0) {
        if (!(t->post_suffix = malloc(sizeof *t->post_suffix)))
            return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
        t->post_suffix[0] = t->eos_id;
        t->n_post_suffix = 1;
    }
    s = spm ? build_spm(t, g, &k, add_space) : build_bpe(t, g, &k, pre, pre_len);
    if (s) return s;
    return hsd_tok_finish(t);
}

hsd_status hsd_tok_load_gguf(const char *data, size_t len, const char *name, hsd_tokenizer **out) {
    *out = NULL;
    hsd_gguf g;
    hsd_status s = hsd_gguf_open(&g, data, len, name);
    if (s) return s;
    hsd_tokenizer *t = hsd_tok_alloc(name);
    if (!t) {
        hsd_gguf_close(&g);
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", name);
    }
    s = load(t, &g);
    hsd_gguf_close(&g);
    if (s) {
        hsd_tok_destroy(t);
        return s;
    }
    *out = t;
    return HSD_OK;
}

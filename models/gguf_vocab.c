/* Tokenizer metadata for GGUF files hsd writes (see gguf_vocab.h). llama.cpp refuses a GGUF
 * without tokenizer.ggml.model and tokens, and sizes its vocabulary by the token list, which
 * must match the embedding rows: every vocabulary here has exactly the model's n_vocab
 * entries, padded with distinct unused tokens. */
#include "models/gguf_vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "models/transformer.h"
#include "lib/base/gguf.h"
#include "tokenize/gguf_export.h"
#include "tokenize/json.h"
#include "tokenize/tokenizer.h"
#include "tokenize/spm.h"

static hsd_status alloc(hsd_gguf_vocab *v, int32_t n, bool scores, const char *what) {
    memset(v, 0, sizeof *v);
    v->n = n, v->bos = v->eos = v->unk = v->eot = -1, v->add_bos = v->add_eos = v->add_space_prefix = -1;
    v->tok_off = calloc((size_t)n + 1, sizeof *v->tok_off);
    v->tok_len = calloc((size_t)n + 1, sizeof *v->tok_len);
    v->types = calloc((size_t)n + 1, sizeof *v->types);
    if (scores) v->scores = calloc((size_t)n + 1, sizeof *v->scores);
    if (!v->tok_off || !v->tok_len || !v->types || (scores && !v->scores)) {
        hsd_gguf_vocab_free(v);
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory for a vocabulary of %d tokens", what, n);
    }
    return HSD_OK;
}

static int set_tok(hsd_gguf_vocab *v, int32_t id, const char *s, size_t n, int32_t type) {
    v->tok_off[id] = v->arena.n, v->tok_len[id] = n, v->types[id] = type;
    return hsd_buf_append(&v->arena, s, n);
}

static int add_merge(hsd_gguf_vocab *v, const char *a, size_t na, const char *b, size_t nb) {
    if ((v->n_merges & (v->n_merges - 1)) == 0) { /* grow at powers of two */
        size_t cap = v->n_merges ? 2 * v->n_merges : 1024;
        size_t *o = realloc(v->merge_off, cap * sizeof *o),
               *l = o ? realloc(v->merge_len, cap * sizeof *l) : NULL;
        if (o) v->merge_off = o;
        if (!l) return -1;
        v->merge_len = l;
    }
    v->merge_off[v->n_merges] = v->arena.n;
    v->merge_len[v->n_merges++] = na + 1 + nb;
    return hsd_buf_append(&v->arena, a, na) || hsd_buf_push(&v->arena, ' ') ||
           hsd_buf_append(&v->arena, b, nb);
}

/* Ids no token claimed become distinct unused placeholders. */
static hsd_status pad(hsd_gguf_vocab *v) {
    for (int32_t id = 0; id < v->n; id++) {
        if (v->types[id]) continue;
        char s[32];
        int k = snprintf(s, sizeof s, "[PAD%d]", id);
        if (set_tok(v, id, s, (size_t)k, HSD_GGUF_TOK_UNUSED))
            return hsd_error(HSD_ERR_NOMEM, "vocabulary: out of memory");
    }
    return HSD_OK;
}

/* ---- from a GGUF: the tokenizer.ggml.* pairs are copied ---------------------------- */

static hsd_status gguf_templates(const hsd_gguf *g, hsd_gguf_vocab *v);

static hsd_status from_gguf(const char *path, const uint8_t *d, size_t size, int32_t n_vocab,
                            hsd_gguf_vocab *v) {
    hsd_gguf g;
    hsd_status s = hsd_gguf_open(&g, d, size, path);
    if (s) return s;
    const hsd_gguf_kv *model = hsd_gguf_find(&g, "tokenizer.ggml.model"),
                      *toks = hsd_gguf_find(&g, "tokenizer.ggml.tokens"),
                      *scores = hsd_gguf_find(&g, "tokenizer.ggml.scores"),
                      *types = hsd_gguf_find(&g, "tokenizer.ggml.token_type"),
                      *merges = hsd_gguf_find(&g, "tokenizer.ggml.merges"),
                      *pre = hsd_gguf_find(&g, "tokenizer.ggml.pre");
    const char *str;
    size_t len;
    if (!model || !toks) {
        s = hsd_error(HSD_ERR_PARSE, "%s: missing metadata key '%s'", path,
                      model ? "tokenizer.ggml.tokens" : "tokenizer.ggml.model");
        goto out;
    }
    if ((s = hsd_gguf_get_str(&g, model, &str, &len)) ||
        (s = hsd_gguf_expect_array(&g, toks, HSD_GGUF_STRING)) ||
        (scores && (s = hsd_gguf_expect_array(&g, scores, HSD_GGUF_FLOAT32))) ||
        (types && (s = hsd_gguf_expect_array(&g, types, HSD_GGUF_INT32))) ||
        (merges && (s = hsd_gguf_expect_array(&g, merges, HSD_GGUF_STRING))))
        goto out;
    if (toks->arr_n > (uint64_t)n_vocab || (scores && scores->arr_n < toks->arr_n) ||
        (types && types->arr_n < toks->arr_n)) {
        s = hsd_error(HSD_ERR_INVALID_ARG,
                      "%s: tokenizer has %llu tokens, the model's vocabulary %d", path,
                      (unsigned long long)toks->arr_n, n_vocab);
        goto out;
    }
    if ((s = alloc(v, n_vocab, scores != NULL, path))) goto out;
    snprintf(v->model, sizeof v->model, "%.*s", (int)(len < 15 ? len : 15), str);
    if (pre && !hsd_gguf_get_str(&g, pre, &str, &len))
        snprintf(v->pre, sizeof v->pre, "%.*s", (int)(len < 31 ? len : 31), str);
    size_t off = toks->val_off;
    for (uint64_t i = 0; i < toks->arr_n; i++) {
        hsd_gguf_next_str(&g, &off, &str, &len);
        if (scores) v->scores[i] = hsd_gguf_f32_at(&g, scores, i);
        if (set_tok(v, (int32_t)i, str, len,
                    types ? hsd_gguf_i32_at(&g, types, i) : HSD_GGUF_TOK_NORMAL))
            goto nomem;
    }
    off = merges ? merges->val_off : 0;
    for (uint64_t i = 0; merges && i < merges->arr_n; i++) {
        hsd_gguf_next_str(&g, &off, &str, &len);
        const char *sp = memchr(str, ' ', len);
        if (!sp) sp = str + len;
        if (add_merge(v, str, (size_t)(sp - str), sp + (sp < str + len),
                      len - (size_t)(sp - str) - (sp < str + len)))
            goto nomem;
    }
    static const char *ids[4] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                 "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.eot_token_id"};
    int32_t *dst[4] = {&v->bos, &v->eos, &v->unk, &v->eot};
    for (int i = 0; i < 4; i++) {
        const hsd_gguf_kv *kv = hsd_gguf_find(&g, ids[i]);
        int64_t x;
        if (kv && !hsd_gguf_get_int(&g, kv, &x) && x >= 0 && x < n_vocab) *dst[i] = (int32_t)x;
    }
    const hsd_gguf_kv *ab = hsd_gguf_find(&g, "tokenizer.ggml.add_bos_token");
    bool b;
    if (ab && !hsd_gguf_get_bool(&g, ab, &b)) v->add_bos = b;
    s = pad(v);
    if (!s) s = gguf_templates(&g, v);
    goto out;
nomem:
    s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", path);
out:
    hsd_gguf_close(&g);
    return s;
}

/* ---- from a loaded tokenizer (tokenizer.json) ------------------------------------- */

/* SentencePiece scores that make llama.cpp's merge-by-score order the BPE merge order: a
 * token built by merges scores minus the rank of the first merge that builds it, so the
 * pair a lower-ranked merge joins is joined first. Tokens no merge builds score below every
 * merge, and control / user-defined tokens 0, as SentencePiece's own files have them. */
static void spm_scores(const hsd_tokenizer *t, const int32_t *tri, size_t n_merges,
                       hsd_gguf_vocab *v) {
    for (int32_t id = 0; id < t->n_ids; id++)
        v->scores[id] = v->types[id] == HSD_GGUF_TOK_NORMAL ? -(float)n_merges - (float)id : 0.0f;
    for (size_t i = n_merges; i-- > 0;) { /* last first, so the lowest rank wins */
        int32_t c = tri[3 * i + 2];
        if (v->types[c] == HSD_GGUF_TOK_NORMAL) v->scores[c] = -(float)i;
    }
}

hsd_status hsd_gguf_vocab_from_tokenizer(const hsd_tokenizer *t, int32_t n_vocab, unsigned flags,
                                         hsd_gguf_vocab *v) {
    memset(v, 0, sizeof *v);
    v->eot = -1;
    hsd_tok_gguf g;
    hsd_status s = hsd_tok_gguf_plan(t, flags, &g);
    if (s) return s;
    int32_t n = hsd_tokenizer_vocab_size(t);
    if (n > n_vocab) {
        /* the highest id in use names the mismatch best */
        int32_t top = n - 1;
        while (top > 0 && (t->flags[top] & HSD_TOKF_UNUSED)) top--;
        if (top >= n_vocab)
            return hsd_error(HSD_ERR_INVALID_ARG,
                             "%s: token id %d is past the model's %d embedding rows (the "
                             "tokenizer has %d ids)",
                             t->name, top, n_vocab, n);
        n = top + 1;
    }
    if ((s = alloc(v, n_vocab, g.spm, t->name))) return s;
    snprintf(v->model, sizeof v->model, "%s", g.spm ? "llama" : "gpt2");
    if (!g.spm) snprintf(v->pre, sizeof v->pre, "%s", g.pre->name);
    bool spm_model = t->model.type == HSD_MODEL_SPM, escaped = true;
    const float *scores = spm_model ? hsd_spm_scores(t, &escaped) : NULL;
    hsd_buf piece = {0};
    for (int32_t id = 0; id < n; id++) {
        int32_t type = hsd_tok_gguf_token_type(t, &g, id);
        if (type == HSD_GGUF_TOK_UNUSED) continue; /* a hole: padded below */
        size_t len;
        const char *str = hsd_tok_str(t, id, &len);
        if (!escaped) { /* llama2.c's tokenizer.bin: real spaces, "\n<s>\n" for BOS */
            piece.n = 0;
            if (type == HSD_GGUF_TOK_CONTROL || type == HSD_GGUF_TOK_UNKNOWN) {
                while (len && (*str == '\n' || *str == ' ')) str++, len--;
                while (len && (str[len - 1] == '\n' || str[len - 1] == ' ')) len--;
            }
            for (size_t i = 0; i < len; i++)
                if (str[i] == ' ' ? hsd_buf_append(&piece, "\xe2\x96\x81", 3)
                                  : hsd_buf_push(&piece, str[i])) {
                    hsd_buf_free(&piece);
                    goto nomem;
                }
            str = piece.p ? piece.p : "", len = piece.n;
        }
        if (scores) v->scores[id] = scores[id];
        if (set_tok(v, id, str, len, type)) {
            hsd_buf_free(&piece);
            goto nomem;
        }
    }
    hsd_buf_free(&piece);
    int32_t *tri = NULL;
    size_t nm = 0;
    if (!spm_model && (s = hsd_bpe_merges_get(t, &tri, &nm))) goto out;
    if (spm_model) {
        /* scores copied above */
    } else if (g.spm) {
        spm_scores(t, tri, nm, v);
    } else {
        for (size_t i = 0; i < nm; i++) {
            size_t la, lb;
            const char *a = hsd_tok_str(t, tri[3 * i], &la), *b = hsd_tok_str(t, tri[3 * i + 1], &lb);
            if (add_merge(v, a, la, b, lb)) {
                free(tri);
                goto nomem;
            }
        }
    }
    free(tri);
    v->bos = g.bos < n ? g.bos : -1, v->eos = g.eos < n ? g.eos : -1;
    v->unk = g.unk < n ? g.unk : -1;
    /* llama.cpp's defaults (no EOS added; the dummy prefix for "llama") are left implicit */
    v->add_bos = g.add_bos, v->add_eos = g.add_eos ? 1 : -1;
    v->add_space_prefix = g.spm && !g.add_space_prefix ? 0 : -1;
    s = pad(v);
    goto out;
nomem:
    s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
out:
    if (s) hsd_gguf_vocab_free(v);
    return s;
}

/* ---- chat templates ---------------------------------------------------------------- */
static int add_tmpl(hsd_gguf_vocab *v, const char *name, size_t nn, const char *text, size_t tn) {
    char **names = realloc(v->tmpl_names, (size_t)(v->n_tmpl + 1) * sizeof *names);
    if (!names) return -1;
    v->tmpl_names = names;
    char **texts = realloc(v->tmpl_texts, (size_t)(v->n_tmpl + 1) * sizeof *texts);
    if (!texts) return -1;
    v->tmpl_texts = texts;
    char *t = malloc(tn + 1), *n = name ? malloc(nn + 1) : NULL;
    if (!t || (name && !n)) {
        free(t);
        free(n);
        return -1;
    }
    memcpy(t, text, tn);
    t[tn] = 0;
    if (n) {
        memcpy(n, name, nn);
        n[nn] = 0;
    }
    v->tmpl_names[v->n_tmpl] = n;
    v->tmpl_texts[v->n_tmpl++] = t;
    return 0;
}

/* tokenizer.chat_template and tokenizer.chat_template.NAME of a GGUF, copied */
static hsd_status gguf_templates(const hsd_gguf *g, hsd_gguf_vocab *v) {
    static const char key[] = "tokenizer.chat_template";
    const size_t kl = sizeof key - 1;
    for (size_t i = 0; i < g->n_kv; i++) {
        const hsd_gguf_kv *kv = &g->kv[i];
        if (kv->key_len < kl || memcmp(kv->key, key, kl) || kv->type != HSD_GGUF_STRING) continue;
        if (kv->key_len > kl && kv->key[kl] != '.') continue;
        const char *str;
        size_t len;
        if (hsd_gguf_get_str(g, kv, &str, &len)) continue;
        bool named = kv->key_len > kl;
        if (add_tmpl(v, named ? kv->key + kl + 1 : NULL, named ? kv->key_len - kl - 1 : 0, str, len))
            return hsd_error(HSD_ERR_NOMEM, "chat template copy: out of memory");
    }
    return HSD_OK;
}

/* The chat templates and the end-of-turn token of the tokenizer_config.json beside a
 * tokenizer.json (none there: nothing to add). */
static hsd_status config_templates(const char *path, hsd_gguf_vocab *v, const hsd_tokenizer *t) {
    char cfg[4096];
    const char *slash = strrchr(path, '/');
    int dl = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(cfg, sizeof cfg, "%.*stokenizer_config.json", dl, path) >= (int)sizeof cfg)
        return HSD_OK;
    hsd_file_map *m;
    if (hsd_file_map_open(cfg, false, &m)) {
        hsd_error_clear();
        return HSD_OK;
    }
    hj_doc doc;
    hsd_status s = hj_parse((const char *)m->data, m->size, cfg, &doc);
    if (s) {
        hsd_file_map_close(m);
        return s;
    }
    const hj_val *ct = hj_get(doc.root, "chat_template"), *eos = hj_get(doc.root, "eos_token");
    if (ct && ct->type == HJ_STR) {
        if (add_tmpl(v, NULL, 0, ct->u.s, ct->n)) s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", cfg);
    } else if (ct && ct->type == HJ_ARR) {
        for (uint32_t i = 0; !s && i < ct->n; i++) {
            const hj_val *name = hj_get(&ct->u.items[i], "name"), *text = hj_get(&ct->u.items[i], "template");
            if (!name || name->type != HJ_STR || !text || text->type != HJ_STR) continue;
            bool dflt = hj_is_str(name, "default");
            if (add_tmpl(v, dflt ? NULL : name->u.s, dflt ? 0 : name->n, text->u.s, text->n))
                s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", cfg);
        }
    }
    /* the config's eos_token ends a chat turn ("<|eot_id|>", "<|im_end|>") */
    if (eos && eos->type == HJ_OBJ) eos = hj_get(eos, "content");
    if (!s && eos && eos->type == HJ_STR && eos->n < 256) {
        char tok[256];
        memcpy(tok, eos->u.s, eos->n);
        tok[eos->n] = 0;
        int32_t id = hsd_tokenizer_token_to_id(t, tok);
        if (id >= 0 && id != v->eos) v->eot = id;
    }
    hj_free(&doc);
    hsd_file_map_close(m);
    return s;
}

hsd_status hsd_gguf_vocab_from_file(const char *path, int32_t n_vocab, unsigned flags,
                                    hsd_gguf_vocab *v) {
    memset(v, 0, sizeof *v);
    v->eot = -1;
    hsd_file_map *m;
    hsd_status s = hsd_file_map_open(path, true, &m);
    if (s) return s;
    const uint8_t *d = m->data;
    size_t i = 0;
    while (i < m->size && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t')) i++;
    bool gguf = m->size >= 4 && !memcmp(d, "GGUF", 4), json = i < m->size && d[i] == '{';
    /* a GGUF's own tokenizer.ggml.* keys are copied as they are: they are llama.cpp's
     * vocabulary already (even under pre-tokenizer names hsd cannot read), and its chat
     * templates come along; every other file is loaded and written from the tokenizer */
    if (gguf) s = from_gguf(path, d, m->size, n_vocab, v);
    hsd_file_map_close(m);
    if (s || gguf) return s;
    hsd_tokenizer *t;
    if ((s = hsd_tokenizer_load_file(path, &t))) return s;
    s = hsd_gguf_vocab_from_tokenizer(t, n_vocab, flags, v);
    if (!s && json) s = config_templates(path, v, t);
    hsd_tokenizer_free(t);
    if (s && v->n) hsd_gguf_vocab_free(v);
    return s;
}

hsd_status hsd_gguf_vocab_placeholder(int32_t n_vocab, hsd_gguf_vocab *v) {
    hsd_status s = alloc(v, n_vocab, true, "placeholder vocabulary");
    if (s) return s;
    snprintf(v->model, sizeof v->model, "llama");
    v->unk = 0, v->bos = n_vocab > 1 ? 1 : -1, v->eos = n_vocab > 2 ? 2 : -1, v->add_bos = 1;
    static const char *special[3] = {"<unk>", "<s>", "</s>"};
    for (int32_t id = 0; id < n_vocab; id++) {
        char buf[32];
        const char *p = buf;
        int32_t type = HSD_GGUF_TOK_NORMAL;
        int k;
        if (id < 3)
            p = special[id], k = (int)strlen(p),
            type = id ? HSD_GGUF_TOK_CONTROL : HSD_GGUF_TOK_UNKNOWN;
        else if (id < 3 + 256)
            k = snprintf(buf, sizeof buf, "<0x%02X>", id - 3), type = HSD_GGUF_TOK_BYTE;
        /* llama.cpp's vocabulary loader looks this token up for files named "phi3" */
        else if (id == 3 + 256)
            p = "<|endoftext|>", k = (int)strlen(p), type = HSD_GGUF_TOK_CONTROL;
        else
            k = snprintf(buf, sizeof buf, "\xe2\x96\x81t%d", id), v->scores[id] = -(float)id;
        if (set_tok(v, id, p, (size_t)k, type)) {
            hsd_gguf_vocab_free(v);
            return hsd_error(HSD_ERR_NOMEM, "placeholder vocabulary: out of memory");
        }
    }
    return HSD_OK;
}

void hsd_gguf_vocab_put(const hsd_gguf_vocab *v, hsd_gguf_writer *w) {
    size_t n = v->n_merges > (size_t)v->n ? v->n_merges : (size_t)v->n;
    const char **p = malloc((n ? n : 1) * sizeof *p);
    if (!p) {
        w->oom = true;
        return;
    }
    hsd_gguf_w_str(w, "tokenizer.ggml.model", v->model);
    if (v->pre[0]) hsd_gguf_w_str(w, "tokenizer.ggml.pre", v->pre);
    for (int32_t i = 0; i < v->n; i++) p[i] = v->arena.p + v->tok_off[i];
    hsd_gguf_w_arr_str(w, "tokenizer.ggml.tokens", p, v->tok_len, (size_t)v->n);
    if (v->scores) hsd_gguf_w_arr_f32(w, "tokenizer.ggml.scores", v->scores, (size_t)v->n);
    hsd_gguf_w_arr_i32(w, "tokenizer.ggml.token_type", v->types, (size_t)v->n);
    if (v->n_merges || !strcmp(v->model, "gpt2")) {
        for (size_t i = 0; i < v->n_merges; i++) p[i] = v->arena.p + v->merge_off[i];
        hsd_gguf_w_arr_str(w, "tokenizer.ggml.merges", p, v->merge_len, v->n_merges);
    }
    free(p);
    if (v->bos >= 0) hsd_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
    if (v->eos >= 0) hsd_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
    if (v->unk >= 0) hsd_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)v->unk);
    if (v->add_bos >= 0) hsd_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
    if (v->add_eos >= 0) hsd_gguf_w_bool(w, "tokenizer.ggml.add_eos_token", v->add_eos);
    if (v->add_space_prefix >= 0)
        hsd_gguf_w_bool(w, "tokenizer.ggml.add_space_prefix", v->add_space_prefix);
    if (v->eot >= 0) hsd_gguf_w_u32(w, "tokenizer.ggml.eot_token_id", (uint32_t)v->eot);
    for (int i = 0; i < v->n_tmpl; i++) {
        char key[300];
        if (v->tmpl_names[i])
            snprintf(key, sizeof key, "tokenizer.chat_template.%.256s", v->tmpl_names[i]);
        else
            snprintf(key, sizeof key, "tokenizer.chat_template");
        hsd_gguf_w_str(w, key, v->tmpl_texts[i]);
    }
}

void hsd_gguf_vocab_free(hsd_gguf_vocab *v) {
    for (int i = 0; i < v->n_tmpl; i++) {
        free(v->tmpl_names[i]);
        free(v->tmpl_texts[i]);
    }
    free(v->tmpl_names);
    free(v->tmpl_texts);
    hsd_buf_free(&v->arena);
    free(v->tok_off);
    free(v->tok_len);
    free(v->types);
    free(v->scores);
    free(v->merge_off);
    free(v->merge_len);
    memset(v, 0, sizeof *v);
}

hsd_status hsd_gguf_vocab_write_file(const hsd_gguf_vocab *v, const char *path) {
    hsd_gguf_writer w;
    hsd_gguf_w_init(&w, 32);
    /* llama.cpp's vocabulary-only files (ggml-vocab-*.gguf) name an architecture too */
    hsd_gguf_w_str(&w, "general.architecture", "llama");
    hsd_gguf_vocab_put(v, &w);
    hsd_status s = hsd_gguf_w_write(&w, path);
    hsd_gguf_w_free(&w);
    return s;
}

/* Public chat-template API (include/hsd.h): loading a template from a GGUF
 * (tokenizer.chat_template[.NAME]), a tokenizer_config.json (chat_template as a string or a
 * list of {name, template}), a tokenizer directory or tokenizer.json (its sibling
 * tokenizer_config.json) or a plain template file, and rendering a JSON context. */
#include "lib/base/error.h"
#include "lib/base/file_map.h"
#include "lib/base/gguf.h"
#include "lib/base/params.h"
#include "tokenize/chat/chat_internal.h"
#include "tokenize/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct hsd_chat_template {
    jtmpl t;
    char *bos, *eos; /* malloc'd, or NULL */
};

hsd_chat_params hsd_chat_default_params(void) {
    hsd_chat_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.now_unix = -1;
    return p;
}

#define DEFAULT_MAX_OUTPUT ((size_t)16 << 20)
#define DEFAULT_MAX_STEPS 2000000u
#define DEFAULT_MAX_DEPTH 64u
#define MAX_TEMPLATE_BYTES ((size_t)4 << 20)

/* Jinja2's defaults: every line ending becomes "\n", and one trailing newline is dropped
 * (keep_trailing_newline=False). */
static char *normalize(jarena *a, const char *src, size_t n, size_t *out_n) {
    char *d = ja_alloc(a, n + 1);
    if (!d) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '\r') {
            d[k++] = '\n';
            if (i + 1 < n && src[i + 1] == '\n') i++;
        } else d[k++] = src[i];
    }
    if (k && d[k - 1] == '\n') k--;
    d[k] = 0;
    *out_n = k;
    return d;
}

static hsd_status from_source(const char *src, size_t n, const char *origin, hsd_chat_template **out) {
    if (n > MAX_TEMPLATE_BYTES)
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "%s: chat template of %zu bytes is over the %zu-byte limit", origin, n,
                         MAX_TEMPLATE_BYTES);
    if (!ju_valid(src, n)) return hsd_error(HSD_ERR_INVALID_UTF8, "%s: chat template is not valid UTF-8", origin);
    hsd_chat_template *t = calloc(1, sizeof *t);
    if (!t) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", origin);
    t->t.ar.limit = (size_t)256 << 20;
    size_t nn;
    t->t.src = normalize(&t->t.ar, src, n, &nn);
    char err[512];
    if (!t->t.src) { hsd_chat_template_free(t); return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", origin); }
    if (jparse(&t->t, t->t.src, nn, err, sizeof err)) {
        int over = t->t.ar.over;
        hsd_chat_template_free(t);
        return hsd_error(over ? HSD_ERR_NOMEM : HSD_ERR_PARSE, "%s: chat template syntax error: %s", origin, err);
    }
    *out = t;
    return HSD_OK;
}

hsd_status hsd_chat_template_from_string(const char *source, hsd_chat_template **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_chat_template_from_string: out is NULL");
    *out = NULL;
    if (!source) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_chat_template_from_string: source is NULL");
    return from_source(source, strlen(source), "template", out);
}

void hsd_chat_template_free(hsd_chat_template *t) {
    if (!t) return;
    ja_free(&t->t.ar);
    free(t->bos);
    free(t->eos);
    free(t);
}

const char *hsd_chat_template_bos(const hsd_chat_template *t) { return t ? t->bos : NULL; }
const char *hsd_chat_template_eos(const hsd_chat_template *t) { return t ? t->eos : NULL; }

static char *dupn(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) { memcpy(d, s, n); d[n] = 0; }
    return d;
}

/* "bos_token": "<s>" or {"content": "<s>", ...} (an AddedToken) */
static char *special_str(const hj_val *v) {
    if (v && v->type == HJ_OBJ) v = hj_get(v, "content");
    if (!v || v->type != HJ_STR) return NULL;
    return dupn(v->u.s, v->n);
}

static hsd_status load_config(const char *path, const char *data, size_t len, const char *name, hsd_chat_template **out) {
    hj_doc doc;
    hsd_status s = hj_parse(data, len, path, &doc);
    if (s) return s;
    const hj_val *ct = hj_get(doc.root, "chat_template"), *src = NULL;
    const char *want = name ? name : "default";
    if (ct && ct->type == HJ_STR && !name) src = ct;
    else if (ct && ct->type == HJ_ARR) {
        for (uint32_t i = 0; i < ct->n; i++) {
            const hj_val *e = &ct->u.items[i];
            if (hj_is_str(hj_get(e, "name"), want)) src = hj_get(e, "template");
        }
    }
    if (!src || src->type != HJ_STR) {
        hj_free(&doc);
        if (ct && name) return hsd_error(HSD_ERR_INVALID_ARG, "%s: no chat template named '%s'", path, name);
        return hsd_error(HSD_ERR_UNSUPPORTED, "%s: no chat_template (a base model, or a template kept elsewhere)", path);
    }
    s = from_source(src->u.s, src->n, path, out);
    if (!s) {
        (*out)->bos = special_str(hj_get(doc.root, "bos_token"));
        (*out)->eos = special_str(hj_get(doc.root, "eos_token"));
    }
    hj_free(&doc);
    return s;
}

static char *gguf_token(const hsd_gguf *g, const char *id_key) {
    const hsd_gguf_kv *id = hsd_gguf_find(g, id_key), *toks = hsd_gguf_find(g, "tokenizer.ggml.tokens");
    int64_t v;
    if (!id || !toks || hsd_gguf_get_int(g, id, &v) || hsd_gguf_expect_array(g, toks, HSD_GGUF_STRING))
        return NULL;
    if (v < 0 || (uint64_t)v >= toks->arr_n) return NULL;
    size_t off = toks->val_off;
    const char *s = NULL;
    size_t n = 0;
    for (int64_t i = 0; i <= v; i++) hsd_gguf_next_str(g, &off, &s, &n);
    return s ? dupn(s, n) : NULL;
}

static hsd_status load_gguf(const char *path, const void *data, size_t len, const char *name, hsd_chat_template **out) {
    hsd_gguf g;
    hsd_status s = hsd_gguf_open(&g, data, len, path);
    if (s) return s;
    char key[256];
    snprintf(key, sizeof key, name ? "tokenizer.chat_template.%s" : "tokenizer.chat_template", name ? name : "");
    const hsd_gguf_kv *kv = hsd_gguf_find(&g, key);
    const char *src;
    size_t n;
    if (!kv) {
        hsd_gguf_close(&g);
        return hsd_error(name ? HSD_ERR_INVALID_ARG : HSD_ERR_UNSUPPORTED, "%s: no %s in the GGUF metadata", path, key);
    }
    if ((s = hsd_gguf_get_str(&g, kv, &src, &n))) { hsd_gguf_close(&g); return s; }
    s = from_source(src, n, path, out);
    if (!s) {
        (*out)->bos = gguf_token(&g, "tokenizer.ggml.bos_token_id");
        (*out)->eos = gguf_token(&g, "tokenizer.ggml.eos_token_id");
    }
    hsd_gguf_close(&g);
    return s;
}

static hsd_status read_file(const char *path, char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return hsd_error(HSD_ERR_IO, "%s: cannot open", path);
    jsb b = {0};
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) {
        jsb_put(&b, buf, k);
        if (b.n > ((size_t)4 << 30)) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad || b.oom) {
        jsb_free(&b);
        return hsd_error(bad ? HSD_ERR_IO : HSD_ERR_NOMEM, "%s: cannot read", path);
    }
    if (!b.p) { b.p = malloc(1); if (!b.p) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", path); b.p[0] = 0; }
    *data = b.p;
    *len = b.n;
    return HSD_OK;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

hsd_status hsd_chat_template_load(const char *path, const char *name, hsd_chat_template **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_chat_template_load: out is NULL");
    *out = NULL;
    if (!path) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_chat_template_load: path is NULL");
    char alt[4096];
    struct stat st;
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
        snprintf(alt, sizeof alt, "%s/tokenizer_config.json", path);
        path = alt;
    } else if (ends_with(path, "tokenizer.json")) {
        size_t dl = strlen(path) - strlen("tokenizer.json");
        snprintf(alt, sizeof alt, "%.*stokenizer_config.json", (int)dl, path);
        path = alt;
    }
    char *data;
    size_t len;
    hsd_status s = read_file(path, &data, &len);
    if (s) return s;
    if (len >= 4 && !memcmp(data, "GGUF", 4)) s = load_gguf(path, data, len, name, out);
    else if (ends_with(path, ".json")) s = load_config(path, data, len, name, out);
    else if (name) s = hsd_error(HSD_ERR_INVALID_ARG, "%s: a plain template file has no named variants", path);
    else s = from_source(data, len, path, out);
    free(data);
    return s;
}

hsd_status hsd_chat_render_json(const hsd_chat_template *t, const char *context_json, const hsd_chat_params *params,
                                char **out, size_t *out_len) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (!t || !context_json || !out)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_chat_render_json: template, context_json and out must not be NULL");
    hsd_chat_params p = hsd_chat_default_params();
    hsd_status pst = hsd_params_read(&p, sizeof p, params, "hsd_chat_render_json", "params",
                                     "hsd_chat_default_params()");
    if (pst) return pst;
    jarena ar = {0};
    ar.limit = (size_t)512 << 20;
    jctx x;
    memset(&x, 0, sizeof x);
    x.ar = &ar;
    x.max_output = p.max_output ? p.max_output : DEFAULT_MAX_OUTPUT;
    x.max_steps = p.max_steps ? p.max_steps : DEFAULT_MAX_STEPS;
    x.max_depth = p.max_depth ? p.max_depth : DEFAULT_MAX_DEPTH;
    x.now_unix = p.now_unix;
    /* values may outgrow the output (strings built and dropped): allow a multiple of it */
    ar.limit = x.max_output < ((size_t)96 << 20) ? x.max_output * 8 + ((size_t)64 << 20) : (size_t)1 << 30;
    char err[512];
    if (jj_from_json(&ar, context_json, strlen(context_json), &x.vars, err, sizeof err)) {
        ja_free(&ar);
        return hsd_error(HSD_ERR_PARSE, "%s", err);
    }
    x.root = ja_alloc(&ar, sizeof *x.root);
    jsb outb = {0};
    x.out = &outb;
    x.fr = x.root;
    int r = x.root ? jexec(&x, t->t.root) : jx_oom(&x);
    if (!r && (outb.oom || ar.over)) r = jx_oom(&x);
    ja_free(&ar);
    if (r) {
        jsb_free(&outb);
        return hsd_error(x.status ? x.status : HSD_ERR_INTERNAL, "%s", x.err[0] ? x.err : "template render failed");
    }
    if (!outb.p) {
        outb.p = malloc(1);
        if (!outb.p) return hsd_error(HSD_ERR_NOMEM, "out of memory");
        outb.p[0] = 0;
    }
    *out = outb.p;
    if (out_len) *out_len = outb.n;
    return HSD_OK;
}

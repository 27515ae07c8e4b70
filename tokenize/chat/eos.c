/* hsd_chat_eos_ids: the end-of-generation ids a model declares. A chat model ends its turn with
 * a token that is often not the tokenizer's EOS (<|eot_id|> next to <|end_of_text|>,
 * <end_of_turn> next to <eos>), and generation_config.json may list several; generation must
 * stop at all of them, as transformers' generate() does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hsd.h"
#include "lib/base/error.h"
#include "lib/base/file_map.h"
#include "lib/base/gguf.h"
#include "tokenize/json.h"

typedef struct idlist {
    int32_t *v;
    size_t n, cap;
    int32_t vocab;
} idlist;

static int add(idlist *l, int64_t id) {
    if (id < 0 || id >= l->vocab) return 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == (int32_t)id) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        int32_t *v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (int32_t)id;
    return 0;
}

static hsd_status from_gguf(const char *path, const hsd_file_map *m, idlist *l) {
    hsd_gguf g;
    hsd_status s = hsd_gguf_open(&g, m->data, m->size, path);
    if (s) return s;
    static const char *keys[] = {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                 "tokenizer.ggml.eom_token_id"};
    for (int i = 0; i < 3 && !s; i++) {
        const hsd_gguf_kv *kv = hsd_gguf_find(&g, keys[i]);
        int64_t id;
        if (kv && !hsd_gguf_get_int(&g, kv, &id) && add(l, id))
            s = hsd_error(HSD_ERR_NOMEM, "hsd_chat_eos_ids: out of memory");
    }
    hsd_gguf_close(&g);
    return s;
}

/* a JSON file beside the tokenizer: NULL doc->root when absent */
static hsd_status read_json(const char *dir, const char *name, hsd_file_map **m, hj_doc *doc) {
    char path[4096];
    doc->root = NULL;
    *m = NULL;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return HSD_OK;
    if (hsd_file_map_open(path, false, m)) {
        hsd_error_clear();
        *m = NULL;
        return HSD_OK;
    }
    hsd_status s = hj_parse((const char *)(*m)->data, (*m)->size, path, doc);
    if (s) {
        hsd_file_map_close(*m);
        *m = NULL;
        doc->root = NULL;
    }
    return s;
}

static hsd_status from_configs(const char *dir, const hsd_tokenizer *tok, idlist *l) {
    hsd_file_map *m;
    hj_doc doc;
    hsd_status s = read_json(dir, "tokenizer_config.json", &m, &doc);
    if (s) return s;
    if (doc.root) {
        const hj_val *eos = hj_get(doc.root, "eos_token");
        if (eos && eos->type == HJ_OBJ) eos = hj_get(eos, "content");
        if (eos && eos->type == HJ_STR && eos->n < 512) {
            char t[512];
            memcpy(t, eos->u.s, eos->n);
            t[eos->n] = 0;
            if (add(l, hsd_tokenizer_token_to_id(tok, t))) s = hsd_error(HSD_ERR_NOMEM, "out of memory");
        }
        hj_free(&doc);
        hsd_file_map_close(m);
    }
    if (s || (s = read_json(dir, "generation_config.json", &m, &doc))) return s;
    if (doc.root) {
        const hj_val *e = hj_get(doc.root, "eos_token_id");
        if (e && e->type == HJ_NUM) {
            if (add(l, hj_num_i32(e, -1))) s = hsd_error(HSD_ERR_NOMEM, "out of memory");
        } else if (e && e->type == HJ_ARR) {
            for (uint32_t i = 0; i < e->n && !s; i++)
                if (add(l, hj_num_i32(&e->u.items[i], -1))) s = hsd_error(HSD_ERR_NOMEM, "out of memory");
        }
        hj_free(&doc);
        hsd_file_map_close(m);
    }
    return s;
}

hsd_status hsd_chat_eos_ids(const char *path, const hsd_tokenizer *tok, int32_t **ids, size_t *n) {
    if (ids) *ids = NULL;
    if (n) *n = 0;
    if (!tok || !ids || !n) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_chat_eos_ids: NULL tok, ids or n");
    idlist l = {NULL, 0, 0, hsd_tokenizer_vocab_size(tok)};
    hsd_status s = HSD_OK;
    if (add(&l, hsd_tokenizer_eos_id(tok))) s = hsd_error(HSD_ERR_NOMEM, "out of memory");
    struct stat st;
    if (!s && path && !stat(path, &st)) {
        char dir[4096];
        if (S_ISDIR(st.st_mode)) {
            snprintf(dir, sizeof dir, "%s", path);
            s = from_configs(dir, tok, &l);
        } else {
            hsd_file_map *m;
            if (!hsd_file_map_open(path, true, &m)) {
                if (m->size >= 4 && !memcmp(m->data, "GGUF", 4)) s = from_gguf(path, m, &l);
                hsd_file_map_close(m);
            } else hsd_error_clear();
            const char *slash = strrchr(path, '/');
            size_t len = strlen(path);
            if (!s && len > 5 && !strcmp(path + len - 5, ".json")) {
                snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
                s = from_configs(dir, tok, &l);
            }
        }
    }
    if (s) {
        free(l.v);
        return s;
    }
    *ids = l.v;
    *n = l.n;
    return HSD_OK;
}

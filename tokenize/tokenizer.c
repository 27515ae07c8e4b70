/* Tokenizer object: construction helpers for loaders, the public encode/decode API, and
 * the encode pipeline that strings the stages together (see tokenizer.h). */
#include "tokenize/tokenizer.h"

#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/error.h"
#include "lib/base/file_map.h"
#include "lib/base/utf8.h"

int hsd_spans_push(hsd_spans *v, uint32_t off, uint32_t len, int32_t id) {
    if (v->n == v->cap) {
        size_t c = v->cap ? v->cap * 2 : 64;
        hsd_span *p = realloc(v->p, c * sizeof *p);
        if (!p) return -1;
        v->p = p;
        v->cap = c;
    }
    v->p[v->n++] = (hsd_span){off, len, id};
    return 0;
}

/* ---------------------------------------------------------------- construction ---- */

hsd_tokenizer *hsd_tok_alloc(const char *name) {
    hsd_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->name = strdup(name ? name : "<memory>");
    t->bos_id = t->eos_id = t->unk_id = -1;
    if (!t->name || hsd_strmap_init(&t->str_to_id, 1024)) {
        free(t->name);
        free(t);
        return NULL;
    }
    return t;
}

hsd_status hsd_tok_set_size(hsd_tokenizer *t, int32_t n_ids) {
    if (n_ids <= 0 || n_ids > (1 << 26))
        return hsd_error(HSD_ERR_PARSE, "%s: vocabulary size %d out of range", t->name, n_ids);
    t->n_ids = n_ids;
    t->str_off = calloc((size_t)n_ids, sizeof *t->str_off);
    t->str_len = calloc((size_t)n_ids, sizeof *t->str_len);
    t->flags = malloc((size_t)n_ids);
    hsd_strmap_free(&t->str_to_id); /* re-size for the whole vocabulary up front */
    if (hsd_strmap_init(&t->str_to_id, (size_t)n_ids)) return hsd_error(HSD_ERR_NOMEM, "oom");
    /* reserve the string arenas for ~10 bytes a token: growing them by doubling copied
     * megabytes and faulted pages twice (5-9% of a load) */
    size_t guess = (size_t)n_ids * 10 + 4096;
    t->str_arena = malloc(guess);
    t->str_to_id.arena = malloc(guess);
    if (!t->str_arena || !t->str_to_id.arena) return hsd_error(HSD_ERR_NOMEM, "oom");
    t->str_arena_cap = t->str_to_id.arena_cap = guess;
    if (!t->str_off || !t->str_len || !t->flags)
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    memset(t->flags, HSD_TOKF_UNUSED, (size_t)n_ids);
    return HSD_OK;
}

/* Arenas grow by doubling; offsets keep entries valid across reallocs. */
static int arena_append(char **arena, size_t *n, size_t *cap, const void *s, size_t len) {
    if (*n + len + 1 > *cap) {
        size_t c = *cap ? *cap : 1 << 16;
        while (c < *n + len + 1) c *= 2;
        char *p = realloc(*arena, c);
        if (!p) return -1;
        *arena = p;
        *cap = c;
    }
    if (len) memcpy(*arena + *n, s, len);
    (*arena)[*n + len] = 0; /* every entry is NUL-terminated for id_to_token */
    *n += len + 1;
    return 0;
}

hsd_status hsd_tok_set_token(hsd_tokenizer *t, int32_t id, const char *s, size_t len) {
    if (id < 0 || id >= t->n_ids)
        return hsd_error(HSD_ERR_PARSE, "%s: token id %d outside vocabulary of %d", t->name, id,
                         t->n_ids);
    size_t off = t->str_arena_n;
    if (arena_append(&t->str_arena, &t->str_arena_n, &t->str_arena_cap, s, len) ||
        hsd_strmap_put(&t->str_to_id, s, len, id))
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    t->str_off[id] = (uint32_t)off;
    t->str_len[id] = (uint32_t)len;
    t->flags[id] &= (uint8_t)~HSD_TOKF_UNUSED;
    return HSD_OK;
}

/* Surface bytes of one token: the per-token part of the decoder chain (byte-level escapes,
 * Replace, Metaspace, ByteFallback, WordPiece prefix), without context-dependent steps. */
static int surface_of(const hsd_tokenizer *t, int32_t id, hsd_buf *out) {
    size_t n;
    const char *s = hsd_tok_str(t, id, &n);
    out->n = 0;
    if (t->flags[id] & (HSD_TOKF_UNUSED)) return 0;
    if (t->flags[id] & HSD_TOKF_ADDED) return hsd_buf_append(out, s, n);
    if (t->byte_level && hsd_bytelevel_to_bytes(s, n, out) == 0) return 0;
    out->n = 0;
    if (hsd_buf_append(out, s, n)) return -1;
    for (size_t i = 0; i < t->n_dec; i++) {
        const hsd_dec_step *d = &t->dec[i];
        if (d->type == HSD_DEC_BYTE_FALLBACK && out->n == 6 && !memcmp(out->p, "<0x", 3) &&
            out->p[5] == '>') {
            unsigned v;
            if (sscanf(out->p + 3, "%2x", &v) == 1) {
                out->p[0] = (char)v;
                out->n = 1;
            }
        } else if (d->type == HSD_DEC_REPLACE || d->type == HSD_DEC_METASPACE) {
            const char *pat = d->type == HSD_DEC_REPLACE ? d->pattern : d->repl;
            size_t pl = d->type == HSD_DEC_REPLACE ? d->pattern_len : d->repl_len;
            const char *rep = d->type == HSD_DEC_REPLACE ? d->content : " ";
            size_t rl = d->type == HSD_DEC_REPLACE ? d->content_len : 1;
            if (!pl || !memmem(out->p, out->n, pat, pl)) continue;
            if (rl <= pl) { /* shrinking or same size ("▁" -> " "): in place, no allocation */
                size_t w = 0, j = 0;
                while (j < out->n) {
                    if (j + pl <= out->n && !memcmp(out->p + j, pat, pl)) {
                        memcpy(out->p + w, rep, rl);
                        w += rl;
                        j += pl;
                    } else out->p[w++] = out->p[j++];
                }
                out->n = w;
                continue;
            }
            hsd_buf tmp = {0};
            size_t j = 0;
            while (j < out->n) {
                if (j + pl <= out->n && !memcmp(out->p + j, pat, pl)) {
                    if (hsd_buf_append(&tmp, rep, rl)) return -1;
                    j += pl;
                } else if (hsd_buf_push(&tmp, out->p[j++])) return -1;
            }
            hsd_buf_free(out);
            *out = tmp;
            if (!out->p && hsd_buf_append(out, "", 0)) return -1;
        } else if (d->type == HSD_DEC_WORDPIECE && d->content_len && out->n >= d->content_len &&
                   !memcmp(out->p, d->content, d->content_len)) {
            memmove(out->p, out->p + d->content_len, out->n - d->content_len);
            out->n -= d->content_len;
        }
    }
    return 0;
}

hsd_status hsd_tok_finish(hsd_tokenizer *t) {
    t->surf_off = calloc((size_t)t->n_ids, sizeof *t->surf_off);
    t->surf_len = calloc((size_t)t->n_ids, sizeof *t->surf_len);
    if (!t->surf_off || !t->surf_len) return hsd_error(HSD_ERR_NOMEM, "out of memory");
    size_t surf_n = 0, surf_cap = 0;
    hsd_buf tmp = {0};
    for (int32_t id = 0; id < t->n_ids; id++) {
        if (surface_of(t, id, &tmp) ||
            arena_append((char **)&t->surf_arena, &surf_n, &surf_cap, tmp.p, tmp.n)) {
            hsd_buf_free(&tmp);
            return hsd_error(HSD_ERR_NOMEM, "out of memory");
        }
        t->surf_off[id] = (uint32_t)(surf_n - tmp.n - 1);
        t->surf_len[id] = (uint32_t)tmp.n;
    }
    hsd_buf_free(&tmp);
    if (!t->surf_arena && arena_append((char **)&t->surf_arena, &surf_n, &surf_cap, "", 0))
        return hsd_error(HSD_ERR_NOMEM, "out of memory");
    return HSD_OK;
}

void hsd_tok_destroy(hsd_tokenizer *t) {
    if (!t) return;
    if (t->model.free) t->model.free(t->model.impl);
    hsd_norm_steps_free(t->norm, t->n_norm);
    hsd_pre_steps_free(t->pre, t->n_pre);
    hsd_dec_steps_free(t->dec, t->n_dec);
    hsd_added_free(t);
    hsd_strmap_free(&t->str_to_id);
    free(t->post_prefix);
    free(t->post_suffix);
    free(t->str_off);
    free(t->str_len);
    free(t->str_arena);
    free(t->surf_off);
    free(t->surf_len);
    free(t->surf_arena);
    free(t->flags);
    free(t->name);
    free(t);
}

/* ---------------------------------------------------------------- scratch ---- */

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p) {
    hsd_scratch *sc = p;
    if (!sc) return;
    hsd_buf_free(&sc->a);
    hsd_buf_free(&sc->b);
    hsd_buf_free(&sc->c);
    hsd_buf_free(&sc->strs);
    free(sc->s1.p);
    free(sc->s2.p);
    free(sc->s3.p);
    free(sc->str_spans.p);
    if (sc->md) pcre2_match_data_free(sc->md);
    if (sc->model_scratch_free) sc->model_scratch_free(sc->model_scratch);
    free(sc);
}

static void scratch_key_init(void) { pthread_key_create(&scratch_key, scratch_free); }

/* One scratch per thread, reused across calls so encode does not allocate per call. */
static hsd_scratch *scratch_get(void) {
    pthread_once(&scratch_once, scratch_key_init);
    hsd_scratch *sc = pthread_getspecific(scratch_key);
    if (sc) return sc;
    sc = calloc(1, sizeof *sc);
    if (!sc) return NULL;
    sc->md = pcre2_match_data_create(1, NULL);
    if (!sc->md) {
        free(sc);
        return NULL;
    }
    pthread_setspecific(scratch_key, sc);
    return sc;
}

/* ---------------------------------------------------------------- loading ---- */

static hsd_status read_file(const char *path, char **data, size_t *len) {
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return hsd_error(HSD_ERR_IO, "%s: not a regular file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return hsd_error(HSD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return hsd_error(HSD_ERR_IO, "%s: cannot seek", path);
    }
    long n = ftell(f);
    if (n < 0) {
        fclose(f);
        return hsd_error(HSD_ERR_IO, "%s: cannot read size (is it a directory?)", path);
    }
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (!p) {
        fclose(f);
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory (%ld bytes)", path, n);
    }
    size_t got = fread(p, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) {
        free(p);
        return hsd_error(HSD_ERR_IO, "%s: short read", path);
    }
    p[n] = 0;
    *data = p;
    *len = (size_t)n;
    return HSD_OK;
}

static hsd_tokenizer_format detect_format(const char *data, size_t len) {
    size_t i = 0;
    if (len >= 4 && !memcmp(data, "GGUF", 4)) return HSD_TOKENIZER_GGUF;
    while (i < len && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t'))
        i++;
    /* '{' then whitespace or a key: a tokenizer.bin whose max_token_length is 123 also
     * starts with the byte '{', followed by NULs */
    if (i < len && data[i] == '{') {
        size_t j = i + 1;
        while (j < len && (data[j] == ' ' || data[j] == '\n' || data[j] == '\r' || data[j] == '\t'))
            j++;
        if (j >= len || data[j] == '"' || data[j] == '}') return HSD_TOKENIZER_HF_JSON;
    }
    return HSD_TOKENIZER_LLAMA2C;
}

hsd_status hsd_tokenizer_load_memory(const void *data, size_t size, hsd_tokenizer_format format,
                                     const char *name, hsd_tokenizer **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_tokenizer_load_memory: out is NULL");
    *out = NULL;
    if (!data && size) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_tokenizer_load_memory: data is NULL");
    if (!name) name = "<memory>";
    if (size == 0) return hsd_error(HSD_ERR_PARSE, "%s: empty tokenizer file", name);
    if (format == HSD_TOKENIZER_AUTO) format = detect_format(data, size);
    switch (format) {
    case HSD_TOKENIZER_HF_JSON: return hsd_tok_load_hf_json(data, size, name, out);
    case HSD_TOKENIZER_LLAMA2C: return hsd_tok_load_llama2c(data, size, name, out);
    case HSD_TOKENIZER_GGUF: return hsd_tok_load_gguf(data, size, name, out);
    default: break;
    }
    return hsd_error(HSD_ERR_INVALID_ARG, "%s: unknown tokenizer format %d", name, (int)format);
}

hsd_status hsd_tokenizer_load_file(const char *path, hsd_tokenizer **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_tokenizer_load_file: out is NULL");
    *out = NULL;
    if (!path) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_tokenizer_load_file: path is NULL");
    /* a GGUF is a whole model: map it, so only the metadata pages at its start are read */
    int fd = open(path, O_RDONLY);
    char magic[4];
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 4 &&
        pread(fd, magic, 4, 0) == 4 && !memcmp(magic, "GGUF", 4)) {
        close(fd);
        hsd_file_map *m = NULL;
        hsd_status s = hsd_file_map_open(path, true, &m);
        if (s) return s;
        s = hsd_tokenizer_load_memory(m->data, m->size, HSD_TOKENIZER_GGUF, path, out);
        hsd_file_map_close(m);
        return s;
    }
    if (fd >= 0) close(fd);
    char *data = NULL;
    size_t len = 0;
    hsd_status s = read_file(path, &data, &len);
    if (s) return s;
    s = hsd_tokenizer_load_memory(data, len, HSD_TOKENIZER_AUTO, path, out);
    free(data);
    return s;
}

void hsd_tokenizer_free(hsd_tokenizer *tok) { hsd_tok_destroy(tok); }

/* ---------------------------------------------------------------- encode ---- */

static hsd_status encode_ids(const hsd_tokenizer *t, const char *text, size_t len,
                             bool add_special, bool cont, hsd_ids *out) {
    size_t bad = hsd_utf8_valid_prefix(text, len);
    if (bad != len)
        return hsd_error(HSD_ERR_INVALID_UTF8, "%s: encode: invalid UTF-8 at byte offset %zu",
                         t->name, bad);
    if (len > UINT32_MAX / 4)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: encode: text of %zu bytes is too long",
                         t->name, len);
    hsd_scratch *sc = scratch_get();
    if (!sc) return hsd_error(HSD_ERR_NOMEM, "out of memory");
    hsd_status s = HSD_OK;
    sc->cont = cont;
    hsd_buf *b = &sc->a;
    b->n = 0;
    sc->s1.n = sc->s2.n = 0;
    if (hsd_buf_append(b, text, len) || hsd_spans_push(&sc->s1, 0, (uint32_t)len, -1))
        return hsd_error(HSD_ERR_NOMEM, "out of memory");

    if (add_special)
        for (size_t i = 0; i < t->n_post_prefix; i++)
            if (hsd_ids_push(out, t->post_prefix[i])) return hsd_error(HSD_ERR_NOMEM, "oom");

    /* 1. split on added tokens that match the raw text */
    if (t->has_raw_match && len) {
        if ((s = hsd_added_split(t, &t->raw_match, b, &sc->s1, &sc->s2))) return s;
        hsd_spans tmp = sc->s1;
        sc->s1 = sc->s2;
        sc->s2 = tmp;
        sc->s2.n = 0;
    }
    /* 2. normalize each remaining piece (HF normalizes pieces independently, so e.g.
     *    Prepend applies to every piece between added tokens) */
    if (t->n_norm) {
        for (size_t i = 0; i < sc->s1.n; i++) {
            hsd_span *sp = &sc->s1.p[i];
            if (sp->id >= 0) continue;
            sc->c.n = 0;
            if ((s = hsd_norm_apply(t, b->p + sp->off, sp->len, &sc->c, sc))) return s;
            sp = &sc->s1.p[i];
            sp->off = (uint32_t)b->n;
            sp->len = (uint32_t)sc->c.n;
            if (hsd_buf_append(b, sc->c.p, sc->c.n)) return hsd_error(HSD_ERR_NOMEM, "oom");
        }
    }
    /* 3. split on added tokens that match normalized text */
    if (t->has_norm_match) {
        if ((s = hsd_added_split(t, &t->norm_match, b, &sc->s1, &sc->s2))) return s;
        hsd_spans tmp = sc->s1;
        sc->s1 = sc->s2;
        sc->s2 = tmp;
        sc->s2.n = 0;
    }
    /* 4. pre-tokenize */
    if (t->n_pre && (s = hsd_pre_apply(t, b, &sc->s1, sc))) return s;
    /* 5. model */
    for (size_t i = 0; i < sc->s1.n; i++) {
        const hsd_span *sp = &sc->s1.p[i];
        if (sp->id >= 0) {
            if (hsd_ids_push(out, sp->id)) return hsd_error(HSD_ERR_NOMEM, "oom");
            continue;
        }
        if (!sp->len) continue;
        if ((s = t->model.tokenize(t, b->p + sp->off, sp->len, out, sc))) return s;
    }
    if (add_special)
        for (size_t i = 0; i < t->n_post_suffix; i++)
            if (hsd_ids_push(out, t->post_suffix[i])) return hsd_error(HSD_ERR_NOMEM, "oom");
    return HSD_OK;
}

hsd_status hsd_tokenizer_encode_alloc(const hsd_tokenizer *tok, const char *text, size_t len,
                                      bool add_special, int32_t **ids, size_t *n_ids) {
    if (!tok || !ids || !n_ids || (!text && len))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_tokenizer_encode_alloc: NULL argument");
    *ids = NULL;
    *n_ids = 0;
    hsd_ids v = {0};
    hsd_status s = encode_ids(tok, text ? text : "", len, add_special, false, &v);
    if (s) {
        hsd_ids_free(&v);
        return s;
    }
    if (!v.p) v.p = malloc(sizeof(int32_t));
    *ids = v.p;
    *n_ids = v.n;
    return HSD_OK;
}

hsd_status hsd_tokenizer_encode(const hsd_tokenizer *tok, const char *text, size_t len,
                                bool add_special, int32_t *ids, size_t cap, size_t *n_ids) {
    if (!tok || !n_ids || (!text && len) || (!ids && cap))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_tokenizer_encode: NULL argument");
    hsd_ids v = {0};
    hsd_status s = encode_ids(tok, text ? text : "", len, add_special, false, &v);
    if (s) {
        hsd_ids_free(&v);
        return s;
    }
    *n_ids = v.n;
    if (v.n > cap) {
        hsd_ids_free(&v);
        return hsd_error(HSD_ERR_BUFFER_TOO_SMALL,
                         "hsd_tokenizer_encode: %zu ids do not fit in a buffer of %zu", *n_ids,
                         cap);
    }
    if (v.n) memcpy(ids, v.p, v.n * sizeof *ids);
    hsd_ids_free(&v);
    return HSD_OK;
}

hsd_status hsd_tok_encode_cont(const hsd_tokenizer *t, const char *text, size_t len,
                               hsd_ids *out) {
    return encode_ids(t, text, len, false, true, out);
}

/* ---------------------------------------------------------------- decode ---- */

hsd_status hsd_tokenizer_decode_alloc(const hsd_tokenizer *t, const int32_t *ids, size_t n_ids,
                                      bool skip_special, char **text, size_t *len) {
    if (!t || !text || (!ids && n_ids))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_tokenizer_decode_alloc: NULL argument");
    *text = NULL;
    if (len) *len = 0;
    hsd_scratch *sc = scratch_get();
    if (!sc) return hsd_error(HSD_ERR_NOMEM, "out of memory");
    sc->strs.n = 0;
    sc->str_spans.n = 0;
    for (size_t i = 0; i < n_ids; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_ids || (t->flags[id] & HSD_TOKF_UNUSED))
            return hsd_error(HSD_ERR_OUT_OF_RANGE,
                             "%s: decode: id %d at index %zu is not in the vocabulary (size %d)",
                             t->name, id, i, t->n_ids);
        if (skip_special && (t->flags[id] & HSD_TOKF_SPECIAL)) continue;
        size_t n;
        const char *s = hsd_tok_str(t, id, &n);
        if (hsd_spans_push(&sc->str_spans, (uint32_t)sc->strs.n, (uint32_t)n, id) ||
            hsd_buf_append(&sc->strs, s, n))
            return hsd_error(HSD_ERR_NOMEM, "out of memory");
    }
    hsd_buf out = {0};
    hsd_status s = HSD_OK;
    if (t->has_decoder) {
        s = hsd_dec_apply(t, sc, &out);
    } else {
        for (size_t i = 0; i < sc->str_spans.n && !s; i++)
            if ((i && hsd_buf_push(&out, ' ')) ||
                hsd_buf_append(&out, sc->strs.p + sc->str_spans.p[i].off,
                               sc->str_spans.p[i].len))
                s = hsd_error(HSD_ERR_NOMEM, "out of memory");
    }
    if (!s && !out.p && hsd_buf_append(&out, "", 0)) s = hsd_error(HSD_ERR_NOMEM, "oom");
    if (s) {
        hsd_buf_free(&out);
        return s;
    }
    *text = out.p;
    if (len) *len = out.n;
    return HSD_OK;
}

/* ---------------------------------------------------------------- accessors ---- */

int32_t hsd_tokenizer_vocab_size(const hsd_tokenizer *t) { return t ? t->n_ids : 0; }

const char *hsd_tokenizer_id_to_token(const hsd_tokenizer *t, int32_t id) {
    if (!t || id < 0 || id >= t->n_ids || (t->flags[id] & HSD_TOKF_UNUSED)) return NULL;
    return t->str_arena + t->str_off[id];
}

int32_t hsd_tokenizer_token_to_id(const hsd_tokenizer *t, const char *token) {
    if (!t || !token) return -1;
    return hsd_strmap_get(&t->str_to_id, token, strlen(token));
}

const uint8_t *hsd_tokenizer_token_bytes(const hsd_tokenizer *t, int32_t id, size_t *len) {
    if (!t || id < 0 || id >= t->n_ids || !t->surf_off) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->surf_len[id];
    return t->surf_arena + t->surf_off[id];
}

bool hsd_tokenizer_is_special(const hsd_tokenizer *t, int32_t id) {
    return t && id >= 0 && id < t->n_ids && (t->flags[id] & HSD_TOKF_SPECIAL);
}

bool hsd_tok_is_byte(const hsd_tokenizer *t, int32_t id) {
    return t && id >= 0 && id < t->n_ids && (t->flags[id] & HSD_TOKF_BYTE);
}

size_t hsd_tok_n_added(const hsd_tokenizer *t) { return t ? t->n_added : 0; }

const char *hsd_tok_name(const hsd_tokenizer *t) { return t && t->name ? t->name : "?"; }

const hsd_added_token *hsd_tok_added(const hsd_tokenizer *t, size_t k) {
    return t && k < t->n_added ? &t->added[k] : NULL;
}

bool hsd_tok_has_normalizer(const hsd_tokenizer *t) { return t && t->n_norm > 0; }

bool hsd_tok_is_bare_spm(const hsd_tokenizer *t) {
    return t && t->model.type == HSD_MODEL_SPM && t->n_norm == 0 && t->n_pre == 0 &&
           !t->has_raw_match && !t->has_norm_match;
}

int32_t hsd_tokenizer_bos_id(const hsd_tokenizer *t) { return t ? t->bos_id : -1; }
int32_t hsd_tokenizer_eos_id(const hsd_tokenizer *t) { return t ? t->eos_id : -1; }
int32_t hsd_tokenizer_unk_id(const hsd_tokenizer *t) { return t ? t->unk_id : -1; }

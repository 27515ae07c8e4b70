/* safetensors reader and writer (see safetensors_io.h). */
#include "lib/base/safetensors_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/file_out.h"

hsd_status hsd_st_open(hsd_st_file *f, const char *path, const void *data, size_t size) {
    memset(f, 0, sizeof *f);
    f->path = path, f->data = data, f->size = size;
    if (size < 8)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: truncated safetensors file (%zu bytes, no header length)", path,
                         size);
    uint64_t n;
    memcpy(&n, data, 8);
    if (n > size - 8)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: safetensors header length %llu exceeds the file (%zu bytes): "
                         "truncated or not a safetensors file",
                         path, (unsigned long long)n, size);
    if (n < 2 || f->data[8] != '{')
        return hsd_error(HSD_ERR_PARSE, "%s: bad safetensors header (does not start with '{')",
                         path);
    json_error_t err;
    f->hdr = json_loadb((const char *)f->data + 8, (size_t)n, 0, &err);
    if (!f->hdr || !json_is_object(f->hdr)) {
        json_decref(f->hdr);
        f->hdr = NULL;
        return hsd_error(HSD_ERR_PARSE, "%s: safetensors header JSON: %s at byte %d", path,
                         err.text, 8 + err.position);
    }
    f->data_start = 8 + (size_t)n;
    return HSD_OK;
}

void hsd_st_close(hsd_st_file *f) {
    json_decref(f->hdr);
    f->hdr = NULL;
}

hsd_status hsd_st_find(const hsd_st_file *f, const char *name, hsd_st_tensor *t, bool *found) {
    *found = false;
    memset(t, 0, sizeof *t);
    json_t *e = json_object_get(f->hdr, name);
    if (!e) return HSD_OK;
    const char *key = json_object_iter_key(json_object_iter_at(f->hdr, name));
    const char *dtype = json_string_value(json_object_get(e, "dtype"));
    json_t *shape = json_object_get(e, "shape"), *offs = json_object_get(e, "data_offsets");
    if (!dtype || !json_is_array(shape) || json_array_size(offs) != 2 || json_array_size(shape) > 4)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: tensor '%s': header entry lacks dtype, shape or data_offsets",
                         f->path, name);
    if (!strcmp(dtype, "F32"))
        t->dtype = HSD_ST_F32, t->elem_size = 4;
    else if (!strcmp(dtype, "F16"))
        t->dtype = HSD_ST_F16, t->elem_size = 2;
    else if (!strcmp(dtype, "BF16"))
        t->dtype = HSD_ST_BF16, t->elem_size = 2;
    else
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "%s: tensor '%s' has dtype %s; supported: F32, F16, BF16", f->path, name,
                         dtype);
    uint64_t numel = 1;
    t->n_dims = (int32_t)json_array_size(shape);
    for (int32_t d = 0; d < t->n_dims; d++) {
        json_int_t v = json_integer_value(json_array_get(shape, (size_t)d));
        if (v <= 0 || v > (1ll << 32))
            return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s': bad dimension %lld", f->path, name,
                             (long long)v);
        t->shape[d] = v;
        numel *= (uint64_t)v;
    }
    json_int_t b = json_integer_value(json_array_get(offs, 0)),
               end = json_integer_value(json_array_get(offs, 1));
    if (b < 0 || end < b || numel > (1ull << 40) || (uint64_t)(end - b) != numel * t->elem_size)
        return hsd_error(
            HSD_ERR_PARSE, "%s: tensor '%s': data_offsets [%lld, %lld] do not match %llu x %s",
            f->path, name, (long long)b, (long long)end, (unsigned long long)numel, dtype);
    if ((uint64_t)end > f->size - f->data_start)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: tensor '%s' data ends at byte %llu beyond the end of the file (%zu "
                         "bytes): truncated?",
                         f->path, name, (unsigned long long)(f->data_start + (uint64_t)end),
                         f->size);
    t->name = key;
    t->data = f->data + f->data_start + b;
    t->nbytes = (size_t)(end - b);
    *found = true;
    return HSD_OK;
}

void hsd_st_names(const hsd_st_file *f, char *buf, size_t cap) {
    const char *k;
    json_t *v;
    size_t used = 0;
    buf[0] = 0;
    json_object_foreach(f->hdr, k, v) {
        if (!strcmp(k, "__metadata__") || used + strlen(k) + 3 >= cap) continue;
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", k);
    }
}

void hsd_st_w_init(hsd_st_writer *w, const char *format) {
    memset(w, 0, sizeof *w);
    w->hdr = json_object();
    if (!w->hdr ||
        json_object_set_new(w->hdr, "__metadata__", json_pack("{s:s}", "format", format)))
        w->oom = true;
}

void hsd_st_w_tensor(hsd_st_writer *w, const char *name, const char *dtype, int32_t n_dims,
                     const int64_t *shape, const void *data, size_t nbytes) {
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        const void **d = realloc(w->data, cap * sizeof *d);
        if (d) w->data = d;
        size_t *nb = d ? realloc(w->nbytes, cap * sizeof *nb) : NULL;
        if (!nb) {
            w->oom = true;
            return;
        }
        w->nbytes = nb, w->cap = cap;
    }
    json_t *sh = json_array();
    for (int32_t i = 0; sh && i < n_dims; i++)
        json_array_append_new(sh, json_integer((json_int_t)shape[i]));
    json_t *e = sh ? json_pack("{s:s, s:o, s:[I, I]}", "dtype", dtype, "shape", sh, "data_offsets",
                               (json_int_t)w->off, (json_int_t)(w->off + nbytes))
                   : NULL;
    if (!e || json_object_set_new(w->hdr, name, e)) {
        w->oom = true;
        return;
    }
    w->data[w->n] = data, w->nbytes[w->n++] = nbytes;
    w->off += nbytes;
}

hsd_status hsd_st_w_write(hsd_st_writer *w, const char *path) {
    char *text = w->oom ? NULL : json_dumps(w->hdr, JSON_COMPACT);
    if (!text) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", path);
    size_t len = strlen(text), padded = (len + 7) / 8 * 8; /* data 8-byte aligned */
    hsd_file_out out; /* whole or not at all (lib/base/file_out.h) */
    hsd_status s = hsd_file_out_open(&out, path);
    if (s) {
        free(text);
        return s;
    }
    FILE *f = out.f;
    uint64_t hl = padded;
    bool ok = fwrite(&hl, 8, 1, f) == 1 && fwrite(text, 1, len, f) == len;
    for (size_t i = len; i < padded && ok; i++) ok = fputc(' ', f) != EOF;
    for (size_t i = 0; i < w->n && ok; i++)
        ok = !w->nbytes[i] || fwrite(w->data[i], 1, w->nbytes[i], f) == w->nbytes[i];
    free(text);
    return hsd_file_out_commit(&out, ok);
}

void hsd_st_w_free(hsd_st_writer *w) {
    json_decref(w->hdr);
    free(w->data);
    free(w->nbytes);
    memset(w, 0, sizeof *w);
}

/* GGUF v3 writer (see gguf_writer.h). Layout: "GGUF", u32 version 3, u64 n_tensors, u64 n_kv,
 * the pairs (u64-length key, u32 type, value), the tensor infos (name, u32 n_dims, u64 dims
 * innermost first, u32 ggml type, u64 offset into the data section), padding to the
 * alignment, then each tensor's bytes padded to the alignment. */
#include "lib/base/gguf_writer.h"

#include <stdio.h>
#include <string.h>

#include "lib/base/error.h"

enum { T_U32 = 4, T_I32 = 5, T_F32 = 6, T_BOOL = 7, T_STR = 8, T_ARR = 9 };

static void put(hsd_gguf_writer *w, hsd_buf *b, const void *p, size_t n) {
    if (hsd_buf_append(b, p, n)) w->oom = true;
}
static void put_u32(hsd_gguf_writer *w, hsd_buf *b, uint32_t v) {
    put(w, b, &v, 4);
}
static void put_u64(hsd_gguf_writer *w, hsd_buf *b, uint64_t v) {
    put(w, b, &v, 8);
}
static void put_str(hsd_gguf_writer *w, hsd_buf *b, const char *s, size_t n) {
    put_u64(w, b, n);
    put(w, b, s, n);
}
static void key(hsd_gguf_writer *w, const char *k, uint32_t type) {
    put_str(w, &w->kv, k, strlen(k));
    put_u32(w, &w->kv, type);
    w->n_kv++;
}

void hsd_gguf_w_init(hsd_gguf_writer *w, uint32_t alignment) {
    memset(w, 0, sizeof *w);
    w->alignment = alignment && !(alignment & (alignment - 1)) ? alignment : 32;
    if (w->alignment != 32) hsd_gguf_w_u32(w, "general.alignment", w->alignment);
}

void hsd_gguf_w_free(hsd_gguf_writer *w) {
    hsd_buf_free(&w->kv);
    hsd_buf_free(&w->info);
    free(w->t);
    memset(w, 0, sizeof *w);
}

void hsd_gguf_w_str(hsd_gguf_writer *w, const char *k, const char *v) {
    key(w, k, T_STR);
    put_str(w, &w->kv, v, strlen(v));
}
void hsd_gguf_w_u32(hsd_gguf_writer *w, const char *k, uint32_t v) {
    key(w, k, T_U32);
    put_u32(w, &w->kv, v);
}
void hsd_gguf_w_i32(hsd_gguf_writer *w, const char *k, int32_t v) {
    key(w, k, T_I32);
    put(w, &w->kv, &v, 4);
}
void hsd_gguf_w_f32(hsd_gguf_writer *w, const char *k, float v) {
    key(w, k, T_F32);
    put(w, &w->kv, &v, 4);
}
void hsd_gguf_w_bool(hsd_gguf_writer *w, const char *k, bool v) {
    key(w, k, T_BOOL);
    uint8_t b = v;
    put(w, &w->kv, &b, 1);
}

void hsd_gguf_w_arr_str(hsd_gguf_writer *w, const char *k, const char *const *s, const size_t *len,
                        size_t n) {
    key(w, k, T_ARR);
    put_u32(w, &w->kv, T_STR);
    put_u64(w, &w->kv, n);
    for (size_t i = 0; i < n; i++) put_str(w, &w->kv, s[i], len ? len[i] : strlen(s[i]));
}
void hsd_gguf_w_arr_f32(hsd_gguf_writer *w, const char *k, const float *v, size_t n) {
    key(w, k, T_ARR);
    put_u32(w, &w->kv, T_F32);
    put_u64(w, &w->kv, n);
    put(w, &w->kv, v, n * 4);
}
void hsd_gguf_w_arr_i32(hsd_gguf_writer *w, const char *k, const int32_t *v, size_t n) {
    key(w, k, T_ARR);
    put_u32(w, &w->kv, T_I32);
    put_u64(w, &w->kv, n);
    put(w, &w->kv, v, n * 4);
}

void hsd_gguf_w_tensor(hsd_gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                       uint32_t type, const void *data, size_t nbytes) {
    if (w->n_tensors == w->t_cap) {
        size_t cap = w->t_cap ? 2 * w->t_cap : 64;
        hsd_gguf_w_data *t = realloc(w->t, cap * sizeof *t);
        if (!t) {
            w->oom = true;
            return;
        }
        w->t = t, w->t_cap = cap;
    }
    w->t[w->n_tensors++] = (hsd_gguf_w_data){data, nbytes};
    put_str(w, &w->info, name, strlen(name));
    put_u32(w, &w->info, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) put_u64(w, &w->info, ne[d]);
    put_u32(w, &w->info, type);
    put_u64(w, &w->info, w->data_off);
    w->data_off += (nbytes + w->alignment - 1) / w->alignment * w->alignment;
}

hsd_status hsd_gguf_w_write(hsd_gguf_writer *w, const char *path) {
    if (w->oom) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory while building the GGUF", path);
    FILE *f = fopen(path, "wb");
    if (!f) return hsd_error(HSD_ERR_IO, "%s: cannot create", path);
    bool err = false;
    uint32_t version = 3;
    uint64_t counts[2] = {w->n_tensors, w->n_kv};
    err |= fwrite("GGUF", 1, 4, f) != 4;
    err |= fwrite(&version, 4, 1, f) != 1;
    err |= fwrite(counts, 8, 2, f) != 2;
    err |= w->kv.n && fwrite(w->kv.p, 1, w->kv.n, f) != w->kv.n;
    err |= w->info.n && fwrite(w->info.p, 1, w->info.n, f) != w->info.n;
    static const uint8_t zeros[256];
    uint64_t pos = 24 + w->kv.n + w->info.n, a = w->alignment;
    for (uint64_t pad = (a - pos % a) % a; pad && !err; pad -= pad > 256 ? 256 : pad)
        err |= fwrite(zeros, 1, pad > 256 ? 256 : pad, f) != (pad > 256 ? 256 : pad);
    for (uint64_t i = 0; i < w->n_tensors && !err; i++) {
        size_t n = w->t[i].nbytes;
        err |= n && fwrite(w->t[i].data, 1, n, f) != n;
        for (uint64_t pad = (a - n % a) % a; pad && !err; pad -= pad > 256 ? 256 : pad)
            err |= fwrite(zeros, 1, pad > 256 ? 256 : pad, f) != (pad > 256 ? 256 : pad);
    }
    if (fclose(f) != 0 || err) {
        remove(path); /* a short file would read as a damaged model later */
        return hsd_error(HSD_ERR_IO, "%s: write failed", path);
    }
    return HSD_OK;
}

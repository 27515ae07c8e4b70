/* GGUF v3 writer: metadata pairs and tensor infos are collected in memory (their counts lead
 * the file), then hsd_gguf_w_write streams header, metadata, infos and the aligned tensor data.
 * Tensor data is borrowed: it must stay valid until hsd_gguf_w_write returns. Out-of-memory
 * while collecting is remembered and reported by hsd_gguf_w_write. */
#ifndef HSD_LIB_GGUF_WRITER_H
#define HSD_LIB_GGUF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/base/buf.h"

typedef struct hsd_gguf_w_data {
    const void *data;
    size_t nbytes;
} hsd_gguf_w_data;

typedef struct hsd_gguf_writer {
    hsd_buf kv, info;
    uint64_t n_kv, n_tensors, data_off;
    uint32_t alignment;
    hsd_gguf_w_data *t;
    size_t t_cap;
    bool oom;
} hsd_gguf_writer;

/* alignment: a power of two (GGUF's default is 32; another value is written as
 * general.alignment). */
void hsd_gguf_w_init(hsd_gguf_writer *w, uint32_t alignment);
void hsd_gguf_w_free(hsd_gguf_writer *w);

void hsd_gguf_w_str(hsd_gguf_writer *w, const char *key, const char *val);
void hsd_gguf_w_u32(hsd_gguf_writer *w, const char *key, uint32_t val);
void hsd_gguf_w_f32(hsd_gguf_writer *w, const char *key, float val);
void hsd_gguf_w_bool(hsd_gguf_writer *w, const char *key, bool val);
/* Arrays. Strings: len[i] bytes of s[i] (len NULL: NUL-terminated). */
void hsd_gguf_w_arr_str(hsd_gguf_writer *w, const char *key, const char *const *s,
                        const size_t *len, size_t n);
void hsd_gguf_w_arr_f32(hsd_gguf_writer *w, const char *key, const float *v, size_t n);
void hsd_gguf_w_arr_i32(hsd_gguf_writer *w, const char *key, const int32_t *v, size_t n);
/* A tensor of ggml type `type` with dims ne[0..n_dims) innermost first (ne[0] = row length). */
void hsd_gguf_w_tensor(hsd_gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                       uint32_t type, const void *data, size_t nbytes);

hsd_status hsd_gguf_w_write(hsd_gguf_writer *w, const char *path);

#endif

/* Bounded reader for the metadata section of GGUF v2/v3 files (header and key/value pairs;
 * tensor infos, which follow at kv_end, are read by the model loader). The one GGUF metadata
 * parser of hsd: the tokenizer (tokenize/gguf_vocab.c), the model loader (models/gguf.c) and
 * the writer's tokenizer copy (models/gguf_vocab.c) use it. hsd_gguf_open walks every pair once and checks every length
 * against the bytes that remain, so a truncated or garbled file fails there with
 * HSD_ERR_PARSE naming the key and byte offset; the accessors after it stay in bounds. */
#ifndef HSD_LIB_GGUF_H
#define HSD_LIB_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

typedef enum {
    HSD_GGUF_UINT8 = 0,
    HSD_GGUF_INT8 = 1,
    HSD_GGUF_UINT16 = 2,
    HSD_GGUF_INT16 = 3,
    HSD_GGUF_UINT32 = 4,
    HSD_GGUF_INT32 = 5,
    HSD_GGUF_FLOAT32 = 6,
    HSD_GGUF_BOOL = 7,
    HSD_GGUF_STRING = 8,
    HSD_GGUF_ARRAY = 9,
    HSD_GGUF_UINT64 = 10,
    HSD_GGUF_INT64 = 11,
    HSD_GGUF_FLOAT64 = 12,
    HSD_GGUF_N_TYPES
} hsd_gguf_type;

/* GGML tensor type ids as GGUF files store them (llama.cpp's ggml_type), defined once for the
 * loader (models/gguf.c) and the writer (models/gguf_write.c). Ids 4, 5 and 31..33, 36..38
 * belong to removed types; HSD_GGML_N_TYPES bounds the ids a file may name. */
typedef enum {
    HSD_GGML_F32 = 0,
    HSD_GGML_F16 = 1,
    HSD_GGML_Q4_0 = 2,
    HSD_GGML_Q4_1 = 3,
    HSD_GGML_Q5_0 = 6,
    HSD_GGML_Q5_1 = 7,
    HSD_GGML_Q8_0 = 8,
    HSD_GGML_Q8_1 = 9,
    HSD_GGML_Q2_K = 10,
    HSD_GGML_Q3_K = 11,
    HSD_GGML_Q4_K = 12,
    HSD_GGML_Q5_K = 13,
    HSD_GGML_Q6_K = 14,
    HSD_GGML_Q8_K = 15,
    HSD_GGML_BF16 = 30,
    HSD_GGML_N_TYPES = 43
} hsd_ggml_type;

/* The type's name as llama.cpp prints it ("Q4_K"), "type N (removed ...)" for a retired id,
 * "unknown" past HSD_GGML_N_TYPES. Static string. */
const char *hsd_ggml_type_name(uint32_t type);

typedef struct hsd_gguf_kv {
    const char *key; /* points into the file data; not NUL-terminated */
    size_t key_len;
    uint32_t type;
    size_t val_off;    /* byte offset of the value (for arrays: of the first element) */
    uint32_t arr_type; /* arrays only */
    uint64_t arr_n;    /* arrays only */
} hsd_gguf_kv;

typedef struct hsd_gguf {
    const unsigned char *data;
    size_t len;
    const char *name;
    uint32_t version;
    uint64_t n_tensors;
    hsd_gguf_kv *kv;
    size_t n_kv;
    size_t kv_end; /* byte offset just past the last pair */
} hsd_gguf;

hsd_status hsd_gguf_open(hsd_gguf *g, const void *data, size_t len, const char *name);
void hsd_gguf_close(hsd_gguf *g);

/* The pair named `key`, or NULL. */
const hsd_gguf_kv *hsd_gguf_find(const hsd_gguf *g, const char *key);
/* Typed getters: HSD_ERR_PARSE naming the key when the stored type does not fit. */
hsd_status hsd_gguf_get_int(const hsd_gguf *g, const hsd_gguf_kv *kv, int64_t *out);
/* Any integer or float type, as a double. */
hsd_status hsd_gguf_get_num(const hsd_gguf *g, const hsd_gguf_kv *kv, double *out);
hsd_status hsd_gguf_get_bool(const hsd_gguf *g, const hsd_gguf_kv *kv, bool *out);
hsd_status hsd_gguf_get_str(const hsd_gguf *g, const hsd_gguf_kv *kv, const char **s, size_t *n);
/* Checks that kv is an array whose elements have exactly `type`. */
hsd_status hsd_gguf_expect_array(const hsd_gguf *g, const hsd_gguf_kv *kv, hsd_gguf_type type);

/* Iterates the strings of a string array: *off starts at kv->val_off. */
void hsd_gguf_next_str(const hsd_gguf *g, size_t *off, const char **s, size_t *n);
float hsd_gguf_f32_at(const hsd_gguf *g, const hsd_gguf_kv *kv, uint64_t i);
int32_t hsd_gguf_i32_at(const hsd_gguf *g, const hsd_gguf_kv *kv, uint64_t i);

#endif

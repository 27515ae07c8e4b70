/* safetensors, the one reader and writer (model checkpoints in models/safetensors.c, draft
 * head factors in models/head_io.c). A file is a u64 little-endian header length N, N bytes
 * of JSON {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then the tensor bytes;
 * data_offsets are relative to the end of the header. */
#ifndef HSD_LIB_SAFETENSORS_IO_H
#define HSD_LIB_SAFETENSORS_IO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

typedef enum { HSD_ST_F32, HSD_ST_F16, HSD_ST_BF16 } hsd_st_dtype;

typedef struct hsd_st_file {
    const char *path; /* for messages */
    const uint8_t *data;
    size_t size, data_start;
    json_t *hdr;
} hsd_st_file;

typedef struct hsd_st_tensor {
    const char *name; /* the header's own key (lives as long as the file) */
    hsd_st_dtype dtype;
    size_t elem_size;
    int32_t n_dims;
    int64_t shape[4];
    const void *data; /* may sit at any byte offset */
    size_t nbytes;
} hsd_st_tensor;

/* Reads the header of `size` bytes at `data` (the caller keeps the bytes mapped). Errors name
 * `path`: truncated, header length beyond the file, not JSON. */
hsd_status hsd_st_open(hsd_st_file *f, const char *path, const void *data, size_t size);
void hsd_st_close(hsd_st_file *f);
/* The tensor `name`, checked: F32/F16/BF16, 1-4 positive dims, data_offsets that hold
 * exactly the shape and lie inside the file. *found = false (and HSD_OK) when absent. */
hsd_status hsd_st_find(const hsd_st_file *f, const char *name, hsd_st_tensor *t, bool *found);
/* "a, b, c": the tensor names of the file, for "no tensor X (the file has: ...)" messages. */
void hsd_st_names(const hsd_st_file *f, char *buf, size_t cap);

/* Writer: tensors are added (data borrowed until hsd_st_w_write), then written in order. */
typedef struct hsd_st_writer {
    json_t *hdr;
    uint64_t off;
    const void **data;
    size_t *nbytes, n, cap;
    bool oom;
} hsd_st_writer;

void hsd_st_w_init(hsd_st_writer *w, const char *format);
/* dtype "F32", "F16" or "BF16"; shape outermost first. */
void hsd_st_w_tensor(hsd_st_writer *w, const char *name, const char *dtype, int32_t n_dims,
                     const int64_t *shape, const void *data, size_t nbytes);
hsd_status hsd_st_w_write(hsd_st_writer *w, const char *path);
void hsd_st_w_free(hsd_st_writer *w);

#endif

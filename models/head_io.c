/* Head factors in safetensors: u64 little-endian header length N, N bytes of JSON
 * {name: {dtype, shape, data_offsets}}, then the tensor bytes. A trained SpecVocab router or
 * SlimSpec head is two tensors (names in hsd.h); anything else in the file is ignored. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "models/head.h"
#include "models/transformer.h"

void hsd_head_factor_names(hsd_head_kind kind, const char **down, const char **up) {
    if (kind == HSD_HEAD_SPECULATIVE) {
        *down = "router.w_down";
        *up = "router.w_vocab";
    } else {
        *down = "lm_head.w_down";
        *up = "lm_head.w_up";
    }
}

/* Finds `name`, checks it is a [rows, cols] F32/F16/BF16 matrix inside the file (rows < 0:
 * any, reported through *rows_out) and returns an f32 copy. */
static hsd_status read_matrix(const char *path, const hsd_file_map *map, json_t *hdr,
                              size_t data_start, const char *name, int64_t rows, int64_t cols,
                              float **out, int64_t *rows_out) {
    *out = NULL;
    json_t *t = json_object_get(hdr, name);
    if (!t) {
        char have[256] = "";
        const char *k;
        json_t *v;
        size_t used = 0;
        json_object_foreach(hdr, k, v) {
            if (!strcmp(k, "__metadata__") || used + strlen(k) + 3 >= sizeof have) continue;
            used += (size_t)snprintf(have + used, sizeof have - used, "%s%s", used ? ", " : "", k);
        }
        return hsd_error(HSD_ERR_PARSE, "%s: no tensor '%s' (the file has: %s)", path, name,
                         used ? have : "nothing");
    }
    const char *dtype = json_string_value(json_object_get(t, "dtype"));
    json_t *shape = json_object_get(t, "shape"), *offs = json_object_get(t, "data_offsets");
    if (!dtype || !json_is_array(shape) || !json_is_array(offs) || json_array_size(offs) != 2)
        return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' lacks dtype, shape or data_offsets", path,
                         name);
    hsd_dtype dt;
    size_t es;
    if (!strcmp(dtype, "F32"))
        dt = HSD_DT_F32, es = 4;
    else if (!strcmp(dtype, "F16"))
        dt = HSD_DT_F16, es = 2;
    else if (!strcmp(dtype, "BF16"))
        dt = HSD_DT_BF16, es = 2;
    else
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "%s: tensor '%s' has dtype %s; supported: F32, F16, BF16", path, name,
                         dtype);
    json_int_t r = json_integer_value(json_array_get(shape, 0)),
               c = json_integer_value(json_array_get(shape, 1));
    if (json_array_size(shape) != 2 || r <= 0 || c <= 0 || (rows >= 0 && r != rows) || c != cols)
        return hsd_error(
            HSD_ERR_PARSE, "%s: tensor '%s' has shape [%lld, %lld]%s, expected [%s%lld, %lld]",
            path, name, (long long)r, (long long)c,
            json_array_size(shape) != 2 ? " (not a matrix)" : "",
            rows >= 0 ? "" : "rank=", (long long)(rows >= 0 ? rows : r), (long long)cols);
    if (r > (1 << 26) || c > (1 << 26))
        return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' is implausibly large", path, name);
    uint64_t nbytes = (uint64_t)r * (uint64_t)c * es;
    json_int_t b = json_integer_value(json_array_get(offs, 0)),
               e = json_integer_value(json_array_get(offs, 1));
    if (b < 0 || e < b || (uint64_t)(e - b) != nbytes)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: tensor '%s': data_offsets [%lld, %lld] do not hold %lld x %lld %s",
                         path, name, (long long)b, (long long)e, (long long)r, (long long)c, dtype);
    if ((uint64_t)e > map->size - data_start)
        return hsd_error(
            HSD_ERR_PARSE,
            "%s: tensor '%s' ends at byte %llu beyond the end of the file (%zu bytes): truncated?",
            path, name, (unsigned long long)(data_start + (uint64_t)e), map->size);
    float *f = malloc((size_t)r * (size_t)c * sizeof *f);
    if (!f) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory for '%s'", path, name);
    /* copy first: the tensor may sit at any byte offset */
    const uint8_t *src = (const uint8_t *)map->data + data_start + b;
    if (dt == HSD_DT_F32) {
        memcpy(f, src, nbytes);
    } else {
        for (size_t i = 0; i < (size_t)r * (size_t)c; i++) {
            uint16_t v;
            memcpy(&v, src + 2 * i, 2);
            f[i] = dt == HSD_DT_F16 ? hsd_fp16_to_fp32(v) : hsd_bf16_to_fp32(v);
        }
    }
    for (size_t i = 0; i < (size_t)r * (size_t)c; i++)
        if (!isfinite(f[i])) {
            free(f);
            return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' has a non-finite value at element %zu",
                             path, name, i);
        }
    *out = f;
    if (rows_out) *rows_out = r;
    return HSD_OK;
}

hsd_status hsd_head_factors_load(const char *path, hsd_head_kind kind, int32_t vocab, int32_t dim,
                                 float **down, float **up, int32_t *rank) {
    *down = *up = NULL;
    *rank = 0;
    if (kind != HSD_HEAD_SPECULATIVE && kind != HSD_HEAD_LOWRANK)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: a %s head has no factors", path,
                         hsd_head_kind_name(kind));
    hsd_file_map *map;
    hsd_status s = hsd_file_map_open(path, false, &map);
    if (s) return s;
    const uint8_t *p = map->data;
    uint64_t n = 0;
    json_t *hdr = NULL;
    if (map->size < 8) {
        s = hsd_error(HSD_ERR_PARSE, "%s: truncated safetensors file (%zu bytes, no header length)",
                      path, map->size);
        goto done;
    }
    memcpy(&n, p, 8);
    if (n > map->size - 8 || n < 2 || p[8] != '{') {
        s = hsd_error(HSD_ERR_PARSE, "%s: bad safetensors header (length %llu in a %zu-byte file)",
                      path, (unsigned long long)n, map->size);
        goto done;
    }
    json_error_t err;
    hdr = json_loadb((const char *)p + 8, (size_t)n, 0, &err);
    if (!json_is_object(hdr)) {
        s = hsd_error(HSD_ERR_PARSE, "%s: safetensors header JSON: %s at byte %d", path, err.text,
                      8 + err.position);
        goto done;
    }
    const char *dn, *un;
    hsd_head_factor_names(kind, &dn, &un);
    int64_t r = 0;
    if ((s = read_matrix(path, map, hdr, 8 + (size_t)n, dn, -1, dim, down, &r))) goto done;
    if (r > dim) {
        s = hsd_error(HSD_ERR_PARSE, "%s: '%s' has rank %lld above the hidden size %d", path, dn,
                      (long long)r, dim);
        goto done;
    }
    if ((s = read_matrix(path, map, hdr, 8 + (size_t)n, un, vocab, r, up, NULL))) goto done;
    *rank = (int32_t)r;
done:
    if (s) {
        free(*down);
        free(*up);
        *down = *up = NULL;
    }
    json_decref(hdr);
    hsd_file_map_close(map);
    return s;
}

hsd_status hsd_head_factors_save(const char *path, hsd_head_kind kind, const hsd_mat *down,
                                 const hsd_mat *up) {
    const char *dn, *un;
    hsd_head_factor_names(kind, &dn, &un);
    size_t nd = (size_t)down->rows * down->cols, nu = (size_t)up->rows * up->cols;
    json_t *hdr = json_pack("{s:{s:s}, s:{s:s, s:[I, I], s:[I, I]}, s:{s:s, s:[I, I], s:[I, I]}}",
                            "__metadata__", "format", "hsd-head", dn, "dtype", "F32", "shape",
                            (json_int_t)down->rows, (json_int_t)down->cols, "data_offsets",
                            (json_int_t)0, (json_int_t)(nd * 4), un, "dtype", "F32", "shape",
                            (json_int_t)up->rows, (json_int_t)up->cols, "data_offsets",
                            (json_int_t)(nd * 4), (json_int_t)((nd + nu) * 4));
    char *text = hdr ? json_dumps(hdr, JSON_COMPACT) : NULL;
    json_decref(hdr);
    if (!text) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", path);
    size_t len = strlen(text), padded = (len + 7) / 8 * 8;
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(text);
        return hsd_error(HSD_ERR_IO, "%s: cannot create", path);
    }
    uint64_t hl = padded;
    bool ok = fwrite(&hl, 8, 1, f) == 1 && fwrite(text, 1, len, f) == len;
    for (size_t i = len; i < padded && ok; i++) ok = fputc(' ', f) != EOF;
    free(text);
    float *row = malloc((size_t)(down->cols > up->cols ? down->cols : up->cols) * sizeof *row);
    ok = ok && row;
    for (int32_t i = 0; ok && i < down->rows; i++) {
        hsd_mat_rows_f32(down, i, 1, row);
        ok = fwrite(row, 4, (size_t)down->cols, f) == (size_t)down->cols;
    }
    for (int32_t i = 0; ok && i < up->rows; i++) {
        hsd_mat_rows_f32(up, i, 1, row);
        ok = fwrite(row, 4, (size_t)up->cols, f) == (size_t)up->cols;
    }
    free(row);
    if (fclose(f) != 0 || !ok) return hsd_error(HSD_ERR_IO, "%s: write failed", path);
    return HSD_OK;
}

hsd_status hsd_head_save(const hsd_head *h, const char *path) {
    hsd_mat d, u;
    if (!h || !path || !hsd_head_factors(h, &d, &u))
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "save head: the head has no factors (only speculative and lowrank do)");
    return hsd_head_factors_save(path, hsd_head_get_kind(h), &d, &u);
}

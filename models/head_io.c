/* Head factors in safetensors (lib/base/safetensors_io.c). A trained SpecVocab router or
 * SlimSpec head is two tensors (names in hsd.h); anything else in the file is ignored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/safetensors_io.h"
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
static hsd_status read_matrix(const hsd_st_file *st, const char *name, int64_t rows, int64_t cols,
                              float **out, int64_t *rows_out) {
    *out = NULL;
    hsd_st_tensor t;
    bool found;
    hsd_status s = hsd_st_find(st, name, &t, &found);
    if (s) return s;
    if (!found) {
        char have[256];
        hsd_st_names(st, have, sizeof have);
        return hsd_error(HSD_ERR_PARSE, "%s: no tensor '%s' (the file has: %s)", st->path, name,
                         have[0] ? have : "nothing");
    }
    int64_t r = t.shape[0], c = t.n_dims > 1 ? t.shape[1] : 0;
    if (t.n_dims != 2 || (rows >= 0 && r != rows) || c != cols)
        return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' has shape [%lld, %lld]%s, expected [%s%lld, %lld]",
                         st->path, name, (long long)r, (long long)c, t.n_dims != 2 ? " (not a matrix)" : "",
                         rows >= 0 ? "" : "rank=", (long long)(rows >= 0 ? rows : r), (long long)cols);
    if (r > (1 << 26) || c > (1 << 26))
        return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' is implausibly large", st->path, name);
    size_t n = (size_t)r * (size_t)c;
    float *f = malloc(n * sizeof *f);
    if (!f) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory for '%s'", st->path, name);
    /* copy first: the tensor may sit at any byte offset */
    const uint8_t *src = t.data;
    if (t.dtype == HSD_ST_F32) {
        memcpy(f, src, n * sizeof *f);
    } else {
        for (size_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, src + 2 * i, 2);
            f[i] = t.dtype == HSD_ST_F16 ? hsd_fp16_to_fp32(v) : hsd_bf16_to_fp32(v);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(f[i])) {
            free(f);
            return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' has a non-finite value at element %zu", st->path,
                             name, i);
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
    hsd_st_file st;
    const char *dn, *un;
    hsd_head_factor_names(kind, &dn, &un);
    int64_t r = 0;
    if ((s = hsd_st_open(&st, path, map->data, map->size))) goto done;
    if ((s = read_matrix(&st, dn, -1, dim, down, &r))) goto done;
    if (r > dim) {
        s = hsd_error(HSD_ERR_PARSE, "%s: '%s' has rank %lld above the hidden size %d", path, dn,
                      (long long)r, dim);
        goto done;
    }
    if ((s = read_matrix(&st, un, vocab, r, up, NULL))) goto done;
    *rank = (int32_t)r;
done:
    if (s) {
        free(*down);
        free(*up);
        *down = *up = NULL;
    }
    hsd_st_close(&st);
    hsd_file_map_close(map);
    return s;
}

static float *f32_copy(const hsd_mat *m) {
    float *f = malloc((size_t)m->rows * m->cols * sizeof *f);
    if (f) hsd_mat_rows_f32(m, 0, m->rows, f);
    return f;
}

hsd_status hsd_head_factors_save(const char *path, hsd_head_kind kind, const hsd_mat *down,
                                 const hsd_mat *up) {
    const char *dn, *un;
    hsd_head_factor_names(kind, &dn, &un);
    float *fd = f32_copy(down), *fu = f32_copy(up);
    hsd_status s;
    if (!fd || !fu) {
        s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", path);
    } else {
        hsd_st_writer w;
        hsd_st_w_init(&w, "hsd-head");
        int64_t sd[2] = {down->rows, down->cols}, su[2] = {up->rows, up->cols};
        hsd_st_w_tensor(&w, dn, "F32", 2, sd, fd, (size_t)down->rows * down->cols * sizeof *fd);
        hsd_st_w_tensor(&w, un, "F32", 2, su, fu, (size_t)up->rows * up->cols * sizeof *fu);
        s = hsd_st_w_write(&w, path);
        hsd_st_w_free(&w);
    }
    free(fd);
    free(fu);
    return s;
}

hsd_status hsd_head_save(const hsd_head *h, const char *path) {
    hsd_mat d, u;
    if (!h || !path || !hsd_head_factors(h, &d, &u))
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "save head: the head has no factors (only speculative and lowrank do)");
    return hsd_head_factors_save(path, hsd_head_get_kind(h), &d, &u);
}

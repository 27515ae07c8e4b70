/* GGUF metadata reader (see gguf.h). Layout, little-endian:
 *   "GGUF", uint32 version, uint64 n_tensors, uint64 n_kv,
 *   n_kv × { string key, uint32 type, value },
 * where a string is uint64 length + bytes and an array is uint32 element type, uint64 count,
 * elements. v1 used 32-bit lengths and is not accepted. */
#include "lib/base/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"

/* Fixed element sizes; 0 for string and array. */
static const size_t type_size[HSD_GGUF_N_TYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static const char *type_name(uint32_t t) {
    static const char *names[HSD_GGUF_N_TYPES] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                                  "int32",  "float32", "bool",   "string", "array",
                                                  "uint64", "int64",   "float64"};
    return t < HSD_GGUF_N_TYPES ? names[t] : "invalid";
}

static uint64_t le(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | p[i];
    return v;
}

/* Keys are printed at most this long (they come from the file). */
#define KEY_SHOWN(n) ((int)((n) > 200 ? 200 : (n)))

/* Cursor that refuses to move past the end; `what` names the item for messages. */
typedef struct cursor {
    const hsd_gguf *g;
    size_t off;
    const char *key; /* key being read, for messages (NULL while reading the header) */
    size_t key_len;
} cursor;

static hsd_status short_read(const cursor *c, const char *what, uint64_t need) {
    if (c->key)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: truncated GGUF: key '%.*s': %s at byte %zu needs %llu bytes, only "
                         "%zu left (truncated or corrupt file)",
                         c->g->name, KEY_SHOWN(c->key_len), c->key, what, c->off,
                         (unsigned long long)need, c->g->len - c->off);
    return hsd_error(HSD_ERR_PARSE,
                     "%s: truncated GGUF: %s at byte %zu needs %llu bytes, only %zu left",
                     c->g->name, what, c->off, (unsigned long long)need, c->g->len - c->off);
}

static hsd_status take(cursor *c, uint64_t n, const char *what, size_t *at) {
    if (n > c->g->len - c->off) return short_read(c, what, n);
    *at = c->off;
    c->off += (size_t)n;
    return HSD_OK;
}

static hsd_status rd_uint(cursor *c, size_t n, const char *what, uint64_t *v) {
    size_t at;
    hsd_status s = take(c, n, what, &at);
    if (!s) *v = le(c->g->data + at, n);
    return s;
}

static hsd_status rd_string(cursor *c, const char *what, size_t *at, uint64_t *n) {
    hsd_status s = rd_uint(c, 8, what, n);
    if (s) return s;
    return take(c, *n, what, at);
}

/* Skips one value of type `type`, checking bounds; arrays may nest a few levels. */
static hsd_status skip_value(cursor *c, uint32_t type, int depth, uint32_t *arr_type,
                             uint64_t *arr_n) {
    size_t at;
    uint64_t n;
    if (type >= HSD_GGUF_N_TYPES)
        return hsd_error(HSD_ERR_PARSE, "%s: GGUF key '%.*s': invalid value type %u at byte %zu",
                         c->g->name, KEY_SHOWN(c->key_len), c->key, type, c->off - 4);
    if (type == HSD_GGUF_STRING) return rd_string(c, "string value", &at, &n);
    if (type != HSD_GGUF_ARRAY) return take(c, type_size[type], type_name(type), &at);

    if (depth > 4)
        return hsd_error(HSD_ERR_PARSE, "%s: GGUF key '%.*s': arrays nested too deep at byte %zu",
                         c->g->name, KEY_SHOWN(c->key_len), c->key, c->off);
    uint64_t et, count;
    hsd_status s = rd_uint(c, 4, "array element type", &et);
    if (!s) s = rd_uint(c, 8, "array length", &count);
    if (s) return s;
    if (et >= HSD_GGUF_N_TYPES)
        return hsd_error(
            HSD_ERR_PARSE, "%s: GGUF key '%.*s': invalid array element type %llu at byte %zu",
            c->g->name, KEY_SHOWN(c->key_len), c->key, (unsigned long long)et, c->off - 12);
    if (arr_type) *arr_type = (uint32_t)et;
    if (arr_n) *arr_n = count;
    size_t left = c->g->len - c->off;
    if (type_size[et]) {
        if (count > left / type_size[et])
            return hsd_error(HSD_ERR_PARSE,
                             "%s: GGUF key '%.*s': array of %llu %s elements at byte %zu does "
                             "not fit in the %zu bytes left",
                             c->g->name, KEY_SHOWN(c->key_len), c->key, (unsigned long long)count,
                             type_name((uint32_t)et), c->off, left);
        c->off += (size_t)count * type_size[et];
        return HSD_OK;
    }
    /* strings take at least 8 bytes each: reject absurd counts before walking them */
    if (count > left / 8)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: GGUF key '%.*s': array of %llu %s elements at byte %zu does not "
                         "fit in the %zu bytes left",
                         c->g->name, KEY_SHOWN(c->key_len), c->key, (unsigned long long)count,
                         type_name((uint32_t)et), c->off, left);
    for (uint64_t i = 0; i < count; i++)
        if ((s = skip_value(c, (uint32_t)et, depth + 1, NULL, NULL))) return s;
    return HSD_OK;
}

hsd_status hsd_gguf_open(hsd_gguf *g, const void *data, size_t len, const char *name) {
    memset(g, 0, sizeof *g);
    g->data = data;
    g->len = len;
    g->name = name ? name : "<memory>";
    cursor c = {g, 0, NULL, 0};
    uint64_t v;
    size_t at;
    hsd_status s = take(&c, 4, "magic", &at);
    if (s) return s;
    if (memcmp(g->data, "GGUF", 4) != 0)
        return hsd_error(HSD_ERR_PARSE, "%s: not a GGUF file: bad magic at byte 0", g->name);
    if ((s = rd_uint(&c, 4, "version", &v))) return s;
    if (v != 2 && v != 3)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: GGUF version %llu at byte 4 is not supported (need 2 or 3%s)",
                         g->name, (unsigned long long)v,
                         v > 0xFFFF ? "; big-endian files are not supported" : "");
    g->version = (uint32_t)v;
    if ((s = rd_uint(&c, 8, "tensor count", &g->n_tensors))) return s;
    uint64_t n_kv;
    if ((s = rd_uint(&c, 8, "key/value count", &n_kv))) return s;
    /* each pair takes at least 8 (key length) + 4 (type) + 1 bytes */
    if (n_kv > (len - c.off) / 13)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: truncated GGUF or corrupt header: key/value count %llu at byte 16 "
                         "cannot fit in the %zu bytes left",
                         g->name, (unsigned long long)n_kv, len - c.off);
    g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
    if (!g->kv) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", g->name);
    for (uint64_t i = 0; i < n_kv; i++) {
        hsd_gguf_kv *kv = &g->kv[i];
        uint64_t kl, type;
        size_t key_start = c.off;
        char what[48];
        snprintf(what, sizeof what, "key of pair %llu", (unsigned long long)i);
        if ((s = rd_string(&c, what, &at, &kl))) goto fail;
        kv->key = (const char *)g->data + at;
        kv->key_len = (size_t)kl;
        c.key = kv->key;
        c.key_len = kv->key_len;
        if ((s = rd_uint(&c, 4, "value type", &type))) goto fail;
        kv->type = (uint32_t)type;
        if (type == HSD_GGUF_ARRAY) {
            if ((s = skip_value(&c, kv->type, 0, &kv->arr_type, &kv->arr_n))) goto fail;
            /* elements start after the 12-byte array header */
            kv->val_off = key_start + 8 + (size_t)kl + 4 + 12;
        } else {
            kv->val_off = c.off;
            if ((s = skip_value(&c, kv->type, 0, NULL, NULL))) goto fail;
        }
        c.key = NULL;
        g->n_kv++;
    }
    g->kv_end = c.off;
    return HSD_OK;
fail:
    hsd_gguf_close(g);
    return s;
}

void hsd_gguf_close(hsd_gguf *g) {
    free(g->kv);
    g->kv = NULL;
    g->n_kv = 0;
}

const hsd_gguf_kv *hsd_gguf_find(const hsd_gguf *g, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key_len == n && !memcmp(g->kv[i].key, key, n)) return &g->kv[i];
    return NULL;
}

static hsd_status wrong_type(const hsd_gguf *g, const hsd_gguf_kv *kv, const char *want) {
    return hsd_error(HSD_ERR_PARSE, "%s: GGUF key '%.*s' at byte %zu has type %s%s%s, expected %s",
                     g->name, KEY_SHOWN(kv->key_len), kv->key, kv->val_off, type_name(kv->type),
                     kv->type == HSD_GGUF_ARRAY ? " of " : "",
                     kv->type == HSD_GGUF_ARRAY ? type_name(kv->arr_type) : "", want);
}

hsd_status hsd_gguf_get_int(const hsd_gguf *g, const hsd_gguf_kv *kv, int64_t *out) {
    const unsigned char *p = g->data + kv->val_off;
    switch (kv->type) {
    case HSD_GGUF_UINT8:
        *out = p[0];
        break;
    case HSD_GGUF_INT8:
        *out = (int8_t)p[0];
        break;
    case HSD_GGUF_UINT16:
        *out = (uint16_t)le(p, 2);
        break;
    case HSD_GGUF_INT16:
        *out = (int16_t)(uint16_t)le(p, 2);
        break;
    case HSD_GGUF_UINT32:
        *out = (uint32_t)le(p, 4);
        break;
    case HSD_GGUF_INT32:
        *out = (int32_t)(uint32_t)le(p, 4);
        break;
    case HSD_GGUF_UINT64: {
        uint64_t v = le(p, 8);
        *out = v > INT64_MAX ? -1 : (int64_t)v;
        break;
    }
    case HSD_GGUF_INT64:
        *out = (int64_t)le(p, 8);
        break;
    default:
        return wrong_type(g, kv, "an integer");
    }
    return HSD_OK;
}

hsd_status hsd_gguf_get_num(const hsd_gguf *g, const hsd_gguf_kv *kv, double *out) {
    const unsigned char *p = g->data + kv->val_off;
    if (kv->type == HSD_GGUF_FLOAT32) {
        uint32_t v = (uint32_t)le(p, 4);
        float f;
        memcpy(&f, &v, 4);
        *out = f;
        return HSD_OK;
    }
    if (kv->type == HSD_GGUF_FLOAT64) {
        uint64_t v = le(p, 8);
        memcpy(out, &v, 8);
        return HSD_OK;
    }
    if (kv->type == HSD_GGUF_BOOL) {
        *out = p[0] != 0;
        return HSD_OK;
    }
    if (kv->type == HSD_GGUF_UINT64) { /* beyond int64 stays exact enough as a double */
        *out = (double)le(p, 8);
        return HSD_OK;
    }
    int64_t i;
    hsd_status s = hsd_gguf_get_int(g, kv, &i);
    if (s == HSD_OK) *out = (double)i;
    return s == HSD_OK ? s : wrong_type(g, kv, "a number");
}

hsd_status hsd_gguf_get_bool(const hsd_gguf *g, const hsd_gguf_kv *kv, bool *out) {
    if (kv->type != HSD_GGUF_BOOL) return wrong_type(g, kv, "bool");
    *out = g->data[kv->val_off] != 0;
    return HSD_OK;
}

hsd_status hsd_gguf_get_str(const hsd_gguf *g, const hsd_gguf_kv *kv, const char **s, size_t *n) {
    if (kv->type != HSD_GGUF_STRING) return wrong_type(g, kv, "string");
    *n = (size_t)le(g->data + kv->val_off, 8);
    *s = (const char *)g->data + kv->val_off + 8;
    return HSD_OK;
}

hsd_status hsd_gguf_expect_array(const hsd_gguf *g, const hsd_gguf_kv *kv, hsd_gguf_type type) {
    if (kv->type != HSD_GGUF_ARRAY || kv->arr_type != (uint32_t)type) {
        char want[32];
        snprintf(want, sizeof want, "array of %s", type_name(type));
        return wrong_type(g, kv, want);
    }
    return HSD_OK;
}

void hsd_gguf_next_str(const hsd_gguf *g, size_t *off, const char **s, size_t *n) {
    *n = (size_t)le(g->data + *off, 8);
    *s = (const char *)g->data + *off + 8;
    *off += 8 + *n;
}

float hsd_gguf_f32_at(const hsd_gguf *g, const hsd_gguf_kv *kv, uint64_t i) {
    uint32_t v = (uint32_t)le(g->data + kv->val_off + 4 * i, 4);
    float f;
    memcpy(&f, &v, sizeof f);
    return f;
}

int32_t hsd_gguf_i32_at(const hsd_gguf *g, const hsd_gguf_kv *kv, uint64_t i) {
    return (int32_t)(uint32_t)le(g->data + kv->val_off + 4 * i, 4);
}

const char *hsd_ggml_type_name(uint32_t t) {
    static const char *names[HSD_GGML_N_TYPES] = {
        "F32", "F16", "Q4_0", "Q4_1", "type 4 (removed Q4_2)", "type 5 (removed Q4_3)", "Q5_0",
        "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS",
        "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32",
        "I64", "F64", "IQ1_M", "BF16", "type 31 (removed Q4_0_4_4)", "type 32 (removed Q4_0_4_8)",
        "type 33 (removed Q4_0_8_8)", "TQ1_0", "TQ2_0", "type 36 (removed IQ4_NL_4_4)",
        "type 37 (removed IQ4_NL_4_8)", "type 38 (removed IQ4_NL_8_8)", "MXFP4", "NVFP4", "Q1_0",
        "Q2_0"};
    return t < HSD_GGML_N_TYPES ? names[t] : "unknown";
}

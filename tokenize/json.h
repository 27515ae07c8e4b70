/* A small, fast, validating JSON reader for tokenizer.json files.
 *
 * Why not jansson: parsing llama3's 9 MB tokenizer.json takes 270 ms with jansson on the
 * reference machine, more than half of HF's whole load (the target is load <= 0.5x HF). This
 * reader builds an immutable tree in one arena; strings without escapes point into the
 * source buffer (which must outlive the tree). jansson is still used for small JSON I/O. */
#ifndef HSD_TOKENIZE_JSON_H
#define HSD_TOKENIZE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

typedef enum { HJ_NULL, HJ_FALSE, HJ_TRUE, HJ_NUM, HJ_STR, HJ_ARR, HJ_OBJ } hj_type;

typedef struct hj_val hj_val;
struct hj_val {
    uint8_t type;
    uint32_t n;   /* string bytes, array items, object members */
    size_t off;   /* byte offset in the source, for error messages */
    union {
        const char *s;
        double num;
        hj_val *items; /* arrays: n values; objects: 2n (key, value) pairs */
    } u;
};

/* A JSON number as an int32 (ids, counts): anything that is not a number holding an integer
 * in int32 range (huge, NaN, fractional, wrong type) gives `bad`. Casting such a double
 * directly is undefined behaviour (found by fuzz/fuzz_tokenizer_json). */
static inline int32_t hj_num_i32(const hj_val *v, int32_t bad) {
    if (!v || v->type != HJ_NUM || !(v->u.num >= -2147483648.0 && v->u.num <= 2147483647.0))
        return bad;
    int32_t i = (int32_t)v->u.num;
    return (double)i == v->u.num ? i : bad;
}

typedef struct hj_doc {
    hj_val *root;
    void *arena; /* opaque chain of blocks */
} hj_doc;

/* Parses `len` bytes. On error returns HSD_ERR_PARSE with "<name>: ... at byte N". */
hsd_status hj_parse(const char *src, size_t len, const char *name, hj_doc *doc);
void hj_free(hj_doc *doc);

/* Member of an object (NULL if absent or v is not an object). */
const hj_val *hj_get(const hj_val *v, const char *key);
int hj_is_str(const hj_val *v, const char *s); /* v is a string equal to s */
int hj_truthy(const hj_val *v);                 /* true; absent/null/false -> 0 */

#endif

/* llama2.c tokenizer.bin loader.
 *
 * Layout (little-endian): int32 max_token_length, then one entry per id until the end of the
 * file: float32 score, int32 length, `length` bytes. The file does not store the vocabulary
 * size (run.c takes it from the model header), so every byte must belong to an entry.
 * Ids 0/1/2 are <unk>, "\n<s>\n", "\n</s>\n" by the export convention of llama2.c's
 * tokenizer.py, and pieces are stored with real spaces instead of "▁". */
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "tokenize/spm.h"
#include "tokenize/tokenizer.h"

static int32_t rd_i32(const unsigned char *p) {
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t r;
    memcpy(&r, &v, sizeof r);
    return r;
}

static float rd_f32(const unsigned char *p) {
    uint32_t v = (uint32_t)rd_i32(p);
    float f;
    memcpy(&f, &v, sizeof f);
    return f;
}

/* Walks the entries once: counts them and checks every length against the bytes left. */
static hsd_status count_entries(const unsigned char *d, size_t len, const char *name,
                                int32_t max_len, int32_t *n_out) {
    size_t off = 4;
    int32_t n = 0;
    while (off < len) {
        if (len - off < 8)
            return hsd_error(HSD_ERR_PARSE,
                             "%s: llama2.c tokenizer: truncated entry header of token %d at "
                             "byte %zu (%zu bytes left, need 8)",
                             name, n, off, len - off);
        int32_t tl = rd_i32(d + off + 4);
        if (tl < 0 || tl > max_len)
            return hsd_error(HSD_ERR_PARSE,
                             "%s: llama2.c tokenizer: token %d length %d at byte %zu is outside "
                             "0..max_token_length (%d)",
                             name, n, tl, off + 4, max_len);
        if ((size_t)tl > len - off - 8)
            return hsd_error(HSD_ERR_PARSE,
                             "%s: llama2.c tokenizer: token %d of %d bytes at byte %zu runs past "
                             "the end of the file (%zu bytes)",
                             name, n, tl, off + 8, len);
        off += 8 + (size_t)tl;
        if (++n > (1 << 24))
            return hsd_error(HSD_ERR_PARSE, "%s: llama2.c tokenizer: more than %d tokens", name,
                             1 << 24);
    }
    *n_out = n;
    return HSD_OK;
}

/* Decoder: byte tokens become bytes, pieces are joined, and the space that the dummy prefix
 * put before the first word is dropped (run.c drops it after BOS; HF's Llama decoder ends
 * with Strip(" ", 1, 0) for the same reason). */
static hsd_status set_decoder(hsd_tokenizer *t) {
    t->dec = calloc(3, sizeof *t->dec);
    if (!t->dec) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    t->n_dec = 3;
    t->dec[0].type = HSD_DEC_BYTE_FALLBACK;
    t->dec[1].type = HSD_DEC_FUSE;
    t->dec[2].type = HSD_DEC_STRIP;
    t->dec[2].content = strdup(" ");
    t->dec[2].content_len = 1;
    t->dec[2].start = 1;
    t->dec[2].stop = 0;
    if (!t->dec[2].content) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    t->has_decoder = true;
    return HSD_OK;
}

hsd_status hsd_tok_load_llama2c(const char *data, size_t len, const char *name,
                                hsd_tokenizer **out) {
    const unsigned char *d = (const unsigned char *)data;
    *out = NULL;
    if (len < 4)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: llama2.c tokenizer: file of %zu bytes is too short for the "
                         "max_token_length header at byte 0",
                         name, len);
    int32_t max_len = rd_i32(d);
    if (max_len <= 0 || max_len > (1 << 20))
        return hsd_error(HSD_ERR_PARSE,
                         "%s: llama2.c tokenizer: max_token_length %d at byte 0 is not in "
                         "1..%d (not a tokenizer.bin?)",
                         name, max_len, 1 << 20);
    int32_t n = 0;
    hsd_status s = count_entries(d, len, name, max_len, &n);
    if (s) return s;
    if (n < 3)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: llama2.c tokenizer: %d tokens; need at least <unk>, <s>, </s>", name,
                         n);

    hsd_tokenizer *t = hsd_tok_alloc(name);
    if (!t) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", name);
    float *scores = malloc((size_t)n * sizeof *scores);
    if (!scores) {
        s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", name);
        goto fail;
    }
    if ((s = hsd_tok_set_size(t, n))) goto fail;
    size_t off = 4;
    for (int32_t id = 0; id < n; id++) {
        int32_t tl = rd_i32(d + off + 4);
        scores[id] = rd_f32(d + off);
        if ((s = hsd_tok_set_token(t, id, data + off + 8, (size_t)tl))) goto fail;
        size_t sl;
        const char *str = hsd_tok_str(t, id, &sl);
        if (hsd_spm_byte_token(str, sl) >= 0) t->flags[id] |= HSD_TOKF_BYTE;
        off += 8 + (size_t)tl;
    }
    /* <unk>, BOS and EOS are control pieces: skip_special drops them as HF does for Llama. */
    for (int32_t id = 0; id < 3; id++) t->flags[id] |= HSD_TOKF_SPECIAL;
    t->unk_id = 0;
    t->bos_id = 1;
    t->eos_id = 2;
    t->post_prefix = malloc(sizeof *t->post_prefix);
    if (!t->post_prefix) {
        s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", name);
        goto fail;
    }
    t->post_prefix[0] = 1;
    t->n_post_prefix = 1;
    t->spm_add_dummy_prefix = true;

    hsd_spm_opts o = {.escape_spaces = false};
    if ((s = hsd_spm_build(t, scores, &o)) || (s = set_decoder(t)) || (s = hsd_tok_finish(t)))
        goto fail;
    free(scores);
    *out = t;
    return HSD_OK;
fail:
    free(scores);
    hsd_tok_destroy(t);
    return s;
}

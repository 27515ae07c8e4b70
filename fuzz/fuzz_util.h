/* Shared bits of the libFuzzer harnesses (built only with `make fuzz`, clang). Harnesses treat
 * every input as hostile: loaders must return an error, never crash, leak or hit UB. */
#ifndef HSD_FUZZ_UTIL_H
#define HSD_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "hsd.h"

/* A tokenizer the harness could load must also work: encode a fixed sentence and decode it. */
static inline void hsd_fuzz_exercise(const hsd_tokenizer *t) {
    static const char text[] = "Hello, world! caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 <s> 123\n\t x";
    int32_t *ids = NULL;
    size_t n = 0;
    if (hsd_tokenizer_encode_alloc(t, text, sizeof text - 1, true, &ids, &n) == HSD_OK) {
        char *dec = NULL;
        size_t dl = 0;
        if (hsd_tokenizer_decode_alloc(t, ids, n, false, &dec, &dl) == HSD_OK) hsd_free(dec);
        if (hsd_tokenizer_decode_alloc(t, ids, n, true, &dec, &dl) == HSD_OK) hsd_free(dec);
    }
    hsd_free(ids);
    int32_t vs = hsd_tokenizer_vocab_size(t);
    for (int32_t id = 0; id < vs && id < 4096; id++) {
        size_t len;
        (void)hsd_tokenizer_token_bytes(t, id, &len);
        (void)hsd_tokenizer_id_to_token(t, id);
    }
}

/* Writes data to a per-process file (model loaders take paths). Returns its path. */
static inline const char *hsd_fuzz_write_tmp(const uint8_t *data, size_t size, const char *dir,
                                            const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    return path;
}

/* A private directory under $TMPDIR for this process. */
static inline const char *hsd_fuzz_tmpdir(void) {
    static char dir[256];
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/hsd_fuzz_%d", t && *t ? t : "/tmp", (int)getpid());
        char cmd[300];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
        if (system(cmd) != 0) abort();
    }
    return dir;
}

#endif

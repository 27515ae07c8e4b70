/* A text corpus: JSONL, one {"text": "..."} object per line (other fields ignored). Used by
 * the pair advisor (Table 10 token usage) and the injectivity checker. */
#ifndef HSD_LIB_CORPUS_H
#define HSD_LIB_CORPUS_H

#include <stddef.h>

#include "hsd.h"

typedef struct hsd_corpus {
    char **text; /* each NUL-terminated; may contain NUL bytes, so use len */
    size_t *len;
    size_t n;
} hsd_corpus;

/* Reads every line; a line that is not a JSON object with a string "text" is an error naming
 * the file and line. Blank lines are skipped. */
hsd_status hsd_corpus_load(const char *path, hsd_corpus *out);
void hsd_corpus_free(hsd_corpus *c);

#endif

/* A program outside the hsd tree: checks that the header it compiled against matches the
 * library it runs with, and that a tokenizer round trip works through the public API only. */
#include <hsd.h>
#include <stdio.h>
#include <string.h>

static const char TOK[] =
    "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\" \":3,\"ab\":4,\"abc\":5},"
    "\"merges\":[\"a b\",\"ab c\"]}}";

int main(void) {
    if (strcmp(hsd_version(), HSD_VERSION_STRING) != 0) {
        printf("version mismatch: header %s, library %s\n", HSD_VERSION_STRING, hsd_version());
        return 1;
    }
    hsd_tokenizer *t;
    int32_t ids[8];
    size_t n;
    if (hsd_tokenizer_load_memory(TOK, sizeof TOK - 1, HSD_TOKENIZER_AUTO, "inline", &t) ||
        hsd_tokenizer_encode(t, "abc ab", 6, false, ids, 8, &n)) {
        printf("error: %s\n", hsd_last_error());
        return 1;
    }
    /* BPE merges a+b, then ab+c: "abc ab" is [abc, ' ', ab] */
    int ok = n == 3 && ids[0] == 5 && ids[1] == 3 && ids[2] == 4;
    hsd_tokenizer_free(t);
    printf("hsd %s: %s\n", hsd_version(), ok ? "ok" : "WRONG IDS");
    return !ok;
}

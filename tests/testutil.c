#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

const char *hsd_test_shared(void) {
    const char *s = getenv("HSD_SHARED");
    if (s && *s) return s;
    s = getenv("HSD_SHARED_DEFAULT");
    if (s && *s) return s;
    return "../shared";
}

const char *hsd_test_path(const char *rel) {
    static char bufs[8][4096];
    static int slot;
    char *b = bufs[slot++ & 7];
    snprintf(b, 4096, "%s/%s", hsd_test_shared(), rel);
    return b;
}

int hsd_test_require(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0) return 1;
    fprintf(stderr, "SKIP: shared data missing: %s (set HSD_SHARED to the shared directory)\n",
            path);
    return 0;
}

char *hsd_test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) {
        p[n] = 0;
        if (len) *len = (size_t)n;
    }
    return p;
}

/* Replays fuzz/regressions/fuzz_bridge/ through the bridge harness (its oracles abort on a
 * broken invariant; `make asan` adds the sanitizers), plus the corpus seeds' shape. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

#define HSD_FUZZ_SHARED hsd_test_shared()
#define LLVMFuzzerInitialize bridge_init
#define LLVMFuzzerTestOneInput bridge_one
#include "fuzz/fuzz_bridge.c"

#ifndef HSD_SOURCE_DIR
#define HSD_SOURCE_DIR "."
#endif

static void test_bridge_regressions(void **state) {
    (void)state;
    assert_true(hsd_test_require(hsd_test_path("tokenizers/gemma3/tokenizer.json")));
    bridge_init(NULL, NULL);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz/regressions/fuzz_bridge", HSD_SOURCE_DIR);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = 0;
        char *data = hsd_test_read_file(path, &len);
        assert_non_null(data);
        printf("replay fuzz_bridge/%s (%zu bytes)\n", e->d_name, len);
        bridge_one((const uint8_t *)data, len);
        free(data);
        n++;
    }
    closedir(d);
    assert_true(n >= 1);
    /* every tokenizer pair on a sentence cut into 0xFF-separated drafts */
    static const char text[] = "The quick\xff brown fox\xff jumps over\xff the lazy\xff dog. caf\xc3\xa9\xff";
    uint8_t buf[sizeof text + 1];
    memcpy(buf + 1, text, sizeof text - 1);
    for (int pair = 0; pair < 16; pair++) {
        buf[0] = (uint8_t)pair;
        bridge_one(buf, sizeof text);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_bridge_regressions)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

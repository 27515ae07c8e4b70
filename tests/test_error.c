/* Error reporting: messages are thread-local, prefixed in order, statuses have names. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/map.h"
#include "tests/testutil.h"

static void test_message_and_prefix(void **state) {
    (void)state;
    assert_int_equal(hsd_error(HSD_ERR_PARSE, "field %s at byte %d", "model.vocab", 17),
                     HSD_ERR_PARSE);
    assert_string_equal(hsd_last_error(), "field model.vocab at byte 17");
    hsd_error_prefix(HSD_ERR_PARSE, "%s: ", "x.json");
    assert_string_equal(hsd_last_error(), "x.json: field model.vocab at byte 17");
    assert_string_equal(hsd_status_str(HSD_ERR_INVALID_UTF8), "HSD_ERR_INVALID_UTF8");
}

static void *other_thread(void *arg) {
    (void)arg;
    return (void *)(intptr_t)(hsd_last_error()[0] == 0);
}

static void test_thread_local(void **state) {
    (void)state;
    hsd_error(HSD_ERR_IO, "main thread failure");
    pthread_t t;
    void *ret;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, &ret);
    assert_true((intptr_t)ret == 1);
    assert_string_equal(hsd_last_error(), "main thread failure");
}

static void test_maps(void **state) {
    (void)state;
    hsd_strmap m;
    assert_int_equal(hsd_strmap_init(&m, 4), 0);
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(hsd_strmap_put(&m, key, (size_t)n, i), 0);
    }
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(hsd_strmap_get(&m, key, (size_t)n), i);
    }
    assert_int_equal(hsd_strmap_get(&m, "nope", 4), -1);
    assert_int_equal(hsd_strmap_get(&m, "", 0), -1);
    hsd_strmap_free(&m);

    hsd_u64map u;
    assert_int_equal(hsd_u64map_init(&u, 1), 0);
    for (uint64_t i = 0; i < 10000; i++) assert_int_equal(hsd_u64map_put(&u, i * 7919, i), 0);
    uint64_t v;
    for (uint64_t i = 0; i < 10000; i++) {
        assert_int_equal(hsd_u64map_get(&u, i * 7919, &v), 1);
        assert_true(v == i);
    }
    assert_int_equal(hsd_u64map_get(&u, 3, &v), 0);
    hsd_u64map_free(&u);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_and_prefix),
        cmocka_unit_test(test_thread_local),
        cmocka_unit_test(test_maps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

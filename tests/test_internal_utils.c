/* The library's internal utilities (not exported since issue 20, linked from the static
 * library): the clock, the Philox generator against Random123's known answers, and the trim
 * arithmetic against hand-computed sums. */
#include <stdint.h>

#include "hsd_tools.h"
#include "lib/analysis/trim.h"
#include "lib/base/rng.h"
#include "lib/base/timer.h"
#include "tests/testutil.h"

/* ---- clock and RNG --------------------------------------------------------------------- */

static void test_hsd_timer_ms(void **state) {
    (void)state;
    double a = hsd_timer_ms(), b = hsd_timer_ms();
    assert_true(a > 0 && b >= a); /* monotonic */
}
static void test_hsd_timer_cpu_ms(void **state) {
    (void)state;
    double a = hsd_timer_cpu_ms();
    volatile double x = 0;
    for (int i = 0; i < 1000000; i++) x += i;
    assert_true(a >= 0 && hsd_timer_cpu_ms() >= a);
}
static void test_hsd_rng_init(void **state) {
    (void)state;
    hsd_rng_init(NULL, 1, 2); /* no-op */
    hsd_rng r;
    hsd_rng_init(&r, 0, 0);
    /* Random123's known answer: philox4x32_10(ctr 0, key 0), first word */
    assert_int_equal(hsd_rng_u32(&r), 0x6627e8d5);
}
static void test_hsd_rng_u32(void **state) {
    (void)state;
    assert_int_equal(hsd_rng_u32(NULL), 0);
    hsd_rng r;
    hsd_rng_init(&r, 0, 0);
    const uint32_t want[4] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
    for (int i = 0; i < 4; i++) assert_int_equal(hsd_rng_u32(&r), want[i]);
}
static void test_hsd_rng_uniform(void **state) {
    (void)state;
    assert_true(hsd_rng_uniform(NULL) == 0.0f);
    hsd_rng r;
    hsd_rng_init(&r, 0, 0);
    /* the top 24 bits of the first word over 2^24 */
    assert_true(hsd_rng_uniform(&r) == (float)(0x6627e8d5u >> 8) / 16777216.0f);
}
static void test_hsd_rng_uniform_f64(void **state) {
    (void)state;
    assert_true(hsd_rng_uniform_f64(NULL) == 0.0);
    hsd_rng r;
    hsd_rng_init(&r, 0, 0);
    double want = (double)((uint64_t)(0x6627e8d5u >> 5) * 67108864u + (0xe169c58du >> 6)) /
                  9007199254740992.0; /* 27 + 26 bits of the first two words over 2^53 */
    assert_true(hsd_rng_uniform_f64(&r) == want);
}

static void test_hsd_trim_prefix(void **state) {
    (void)state;
    const int64_t counts[3] = {1, 5, 4};
    const int32_t order[3] = {1, 2, 0};
    int64_t prefix[4] = {-1, -1, -1, -1};
    hsd_trim_prefix(NULL, order, 3, prefix); /* no-op */
    hsd_trim_prefix(counts, order, -1, prefix);
    assert_true(prefix[0] == -1);
    hsd_trim_prefix(counts, order, 3, prefix);
    assert_true(prefix[0] == 0 && prefix[1] == 5 && prefix[2] == 9 && prefix[3] == 10);
}
static void test_hsd_trim_coverage(void **state) {
    (void)state;
    const int64_t prefix[3] = {0, 3, 5};
    assert_true(hsd_trim_coverage(NULL, 10, 1) == 0);
    assert_true(hsd_trim_coverage(prefix, 0, 1) == 0);
    assert_true(hsd_trim_coverage(prefix, 10, -1) == 0);
    assert_true(hsd_trim_coverage(prefix, 10, 1) == 0.3);
}
static void test_hsd_trim_saving(void **state) {
    (void)state;
    hsd_trim_params p = {.size = sizeof(hsd_trim_params), .alpha = 0.5, .dim = 2, .fixed_flops = 0};
    assert_true(hsd_trim_saving(NULL, 10, 5) == 0);
    assert_true(hsd_trim_saving(&p, 10, 5) == 0.5); /* 1 - 2*2*5 / (2*2*10) */
    p.dim = 0;
    assert_true(hsd_trim_saving(&p, 10, 5) == 0); /* a head of no FLOPs saves nothing */
}
int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hsd_timer_ms),
        cmocka_unit_test(test_hsd_timer_cpu_ms),
        cmocka_unit_test(test_hsd_rng_init),
        cmocka_unit_test(test_hsd_rng_u32),
        cmocka_unit_test(test_hsd_rng_uniform),
        cmocka_unit_test(test_hsd_rng_uniform_f64),
        cmocka_unit_test(test_hsd_trim_prefix),
        cmocka_unit_test(test_hsd_trim_coverage),
        cmocka_unit_test(test_hsd_trim_saving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

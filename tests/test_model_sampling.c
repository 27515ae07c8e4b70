/* Philox4x32-10 against the published known-answer vectors; sampling distributions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/rng.h"
#include "lib/engine/sample.h"
#include "verify/verify.h"
#include "tests/testutil.h"

static void test_philox_known_answers(void **state) {
    (void)state;
    /* Random123 kat_vectors: philox4x32 10 rounds */
    const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                                {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}};
    const uint32_t key[3][2] = {{0, 0}, {0xffffffff, 0xffffffff}, {0xa4093822, 0x299f31d0}};
    const uint32_t want[3][4] = {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
                                 {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
                                 {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        hsd_philox4x32_10(ctr[i], key[i], out);
        for (int j = 0; j < 4; j++) assert_int_equal(out[j], want[i][j]);
    }
}

static void test_rng_streams(void **state) {
    (void)state;
    hsd_rng a, b, c;
    hsd_rng_init(&a, 42, 0);
    hsd_rng_init(&b, 42, 0);
    hsd_rng_init(&c, 42, 1);
    int same_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint32_t x = hsd_rng_u32(&a);
        assert_int_equal(x, hsd_rng_u32(&b));
        same_c += x == hsd_rng_u32(&c);
    }
    assert_true(same_c < 3);
    /* the first block of the stream is philox(ctr = {0, 0, stream}, key = seed) */
    hsd_rng_init(&a, 0x0123456789abcdefull, 7);
    uint32_t blk[4], ctr[4] = {0, 0, 7, 0}, key[2] = {0x89abcdef, 0x01234567};
    hsd_philox4x32_10(ctr, key, blk);
    for (int j = 0; j < 4; j++) assert_int_equal(hsd_rng_u32(&a), blk[j]);
    /* uniformity: 16 bins, chi-square with 15 dof well below the 0.001 critical value 37.7 */
    int bins[16] = {0};
    hsd_rng_init(&a, 1, 0);
    const int N = 200000;
    for (int i = 0; i < N; i++) {
        float u = hsd_rng_uniform(&a);
        assert_true(u >= 0.0f && u < 1.0f);
        bins[(int)(u * 16)]++;
    }
    double chi = 0;
    for (int i = 0; i < 16; i++) chi += pow(bins[i] - N / 16.0, 2) / (N / 16.0);
    assert_true(chi < 37.7);
    double d = hsd_rng_uniform_f64(&a);
    assert_true(d >= 0.0 && d < 1.0);
}

static void test_greedy_and_temperature(void **state) {
    (void)state;
    float logits[6] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f, 2.0f};
    assert_int_equal(hsd_sample_greedy(logits, 6), 1); /* lowest index among ties */
    float probs[6];
    hsd_sampler_params g = {0.0f, 0, 1.0f};
    assert_int_equal(hsd_sample_probs(logits, 6, &g, probs), HSD_OK);
    for (int i = 0; i < 6; i++) assert_true(probs[i] == (i == 1 ? 1.0f : 0.0f));
    hsd_sampler_params t = {0.7f, 0, 1.0f};
    assert_int_equal(hsd_sample_probs(logits, 6, &t, probs), HSD_OK);
    double z = 0;
    for (int i = 0; i < 6; i++) z += exp(logits[i] / 0.7);
    for (int i = 0; i < 6; i++) assert_true(fabs(probs[i] - exp(logits[i] / 0.7) / z) < 1e-6);
}

static void test_top_k_top_p(void **state) {
    (void)state;
    /* temperature 1 over log-probs gives back the probabilities */
    const float p[6] = {0.05f, 0.30f, 0.10f, 0.25f, 0.20f, 0.10f};
    float logits[6], probs[6];
    for (int i = 0; i < 6; i++) logits[i] = logf(p[i]);
    hsd_sampler_params k = {1.0f, 2, 1.0f};
    assert_int_equal(hsd_sample_probs(logits, 6, &k, probs), HSD_OK);
    assert_true(fabsf(probs[1] - 0.30f / 0.55f) < 1e-6f && fabsf(probs[3] - 0.25f / 0.55f) < 1e-6f);
    assert_true(probs[0] == 0 && probs[2] == 0 && probs[4] == 0 && probs[5] == 0);
    /* top-p 0.7: 0.30 + 0.25 = 0.55 < 0.7, + 0.20 = 0.75 >= 0.7 -> {1, 3, 4} */
    hsd_sampler_params tp = {1.0f, 0, 0.7f};
    assert_int_equal(hsd_sample_probs(logits, 6, &tp, probs), HSD_OK);
    int nz = 0;
    for (int i = 0; i < 6; i++) nz += probs[i] > 0;
    assert_int_equal(nz, 3);
    assert_true(fabsf(probs[4] - 0.20f / 0.75f) < 1e-6f);
    /* top-k 4 keeps mass 0.85; top-p 0.6 of it: 0.30/0.85 = 0.35 < 0.6, then
     * (0.30 + 0.25)/0.85 = 0.65 >= 0.6 -> {1, 3} */
    hsd_sampler_params kp = {1.0f, 4, 0.6f};
    assert_int_equal(hsd_sample_probs(logits, 6, &kp, probs), HSD_OK);
    nz = 0;
    for (int i = 0; i < 6; i++) nz += probs[i] > 0;
    assert_int_equal(nz, 2);
    assert_true(probs[1] > 0 && probs[3] > 0);
}

static void test_sampling_frequencies(void **state) {
    (void)state;
    const float p[5] = {0.1f, 0.4f, 0.2f, 0.25f, 0.05f};
    float logits[5], probs[5];
    for (int i = 0; i < 5; i++) logits[i] = logf(p[i]);
    hsd_sampler_params sp = {1.0f, 0, 1.0f};
    hsd_rng r;
    hsd_rng_init(&r, 2026, 0);
    int cnt[5] = {0};
    const int N = 100000;
    for (int i = 0; i < N; i++) {
        int32_t t;
        assert_int_equal(hsd_sample(logits, 5, &sp, &r, probs, &t), HSD_OK);
        cnt[t]++;
    }
    double chi = 0;
    for (int i = 0; i < 5; i++) chi += pow(cnt[i] - N * p[i], 2) / (N * p[i]);
    assert_true(chi < 18.5); /* 4 dof, p = 0.001 */
    /* a zero-probability token is never drawn, even at u -> 1 */
    float q[4] = {0.5f, 0.5f, 0.0f, 0.0f};
    assert_int_equal(hsd_verify_draw(q, 4, 0.9999999999999999), 1);
    assert_int_equal(hsd_verify_draw(q, 4, 0.0), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_rng_streams),
        cmocka_unit_test(test_greedy_and_temperature),
        cmocka_unit_test(test_top_k_top_p),
        cmocka_unit_test(test_sampling_frequencies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

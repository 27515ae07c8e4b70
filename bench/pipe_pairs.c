/* Which vector instructions compete for the same execution port as the products' inner
 * instruction? A loop of 8 independent vpdpbusd (the k-quant and Q8_0 products) or 8
 * independent vfmadd231ps (attention, BF16) per iteration runs alone, then with 4 of another
 * instruction added (independent of the 8, so only the ports can slow the loop). Time per
 * base instruction: unchanged where the other instruction runs on a port of its own, 1.5x
 * where it takes the base's port (12 instructions through one port instead of 8).
 *
 * Why: a kernel's cost at 8-16 tokens is the count of instructions on its busiest port, not
 * its instruction count, and which instructions share that port differs between CPUs (on
 * Zen 4, vpmulld shares vpdpbusd's port as one instruction; on Sapphire Rapids it is two).
 * Notes: bench/notes/kquant_packed.md (session 22).
 *
 *   cc -O2 bench/pipe_pairs.c -o pipe_pairs && ./pipe_pairs [ROUNDS]
 * (x86-64 with AVX-512 VNNI and BF16; exits with a message elsewhere). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512dq,avx512vnni,avx512bf16,f16c"), noinline))

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* 8 chains of the base instruction into zmm0..7 (sources zmm30, zmm31: zero, so no value
 * grows), then 4 of the other into zmm8..11 */
#define B8(op) op " %%zmm30, %%zmm31, %%zmm0\n" op " %%zmm30, %%zmm31, %%zmm1\n" \
               op " %%zmm30, %%zmm31, %%zmm2\n" op " %%zmm30, %%zmm31, %%zmm3\n" \
               op " %%zmm30, %%zmm31, %%zmm4\n" op " %%zmm30, %%zmm31, %%zmm5\n" \
               op " %%zmm30, %%zmm31, %%zmm6\n" op " %%zmm30, %%zmm31, %%zmm7\n"
#define O4(op) op ", %%zmm8\n" op ", %%zmm9\n" op ", %%zmm10\n" op ", %%zmm11\n"
#define CLOB "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
             "xmm10", "xmm11"
#define ITERS 20000000L
#define CASE(i, body)                                                                         \
    case i:                                                                                   \
        for (long k = 0; k < ITERS; k++) __asm__ volatile(body ::: CLOB);                     \
        break

static const char *const others[] = {
    "(alone)",   "vpsrlw $4",  "vpandd",    "vpaddd",   "vcvtdq2ps", "vcvtph2ps (ymm source)",
    "vshufps",   "vpermps",    "vpmulld",   "vpdpwssd", "vmulps",    "vfmadd231ps / vpdpbusd",
    "vdpbf16ps",
};
#define N_OTHERS 13

/* ns per base instruction; base 0: vpdpbusd, 1: vfmadd231ps */
TGT static double run(int base, int other) {
    __asm__ volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n vpxord %%zmm31, %%zmm31, %%zmm31\n" ::: "xmm30", "xmm31");
    const double t0 = now_s();
#define ALL(B, X)                                                                             \
    switch (other) {                                                                          \
        CASE(0, B8(B));                                                                       \
        CASE(1, B8(B) O4("vpsrlw $4, %%zmm31"));                                              \
        CASE(2, B8(B) O4("vpandd %%zmm31, %%zmm30"));                                         \
        CASE(3, B8(B) O4("vpaddd %%zmm31, %%zmm30"));                                         \
        CASE(4, B8(B) O4("vcvtdq2ps %%zmm31"));                                               \
        CASE(5, B8(B) O4("vcvtph2ps %%ymm31"));                                               \
        CASE(6, B8(B) O4("vshufps $0x44, %%zmm31, %%zmm30"));                                 \
        CASE(7, B8(B) O4("vpermps %%zmm31, %%zmm30"));                                        \
        CASE(8, B8(B) O4("vpmulld %%zmm31, %%zmm30"));                                        \
        CASE(9, B8(B) O4("vpdpwssd %%zmm31, %%zmm30"));                                       \
        CASE(10, B8(B) O4("vmulps %%zmm31, %%zmm30"));                                        \
        CASE(11, B8(B) O4(X " %%zmm31, %%zmm30"));                                            \
        CASE(12, B8(B) O4("vdpbf16ps %%zmm31, %%zmm30"));                                     \
    }
    if (base == 0) {
        ALL("vpdpbusd", "vfmadd231ps")
    } else {
        ALL("vfmadd231ps", "vpdpbusd")
    }
    return (now_s() - t0) / (double)(ITERS * 8) * 1e9;
}

int main(int argc, char **argv) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bf16")) {
        fprintf(stderr, "pipe_pairs: this CPU lacks AVX-512 VNNI or BF16\n");
        return 1;
    }
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    printf("ns per base instruction (8 chains + 4 of the other), best of %d rounds; ratio to alone\n", rounds);
    printf("%-26s %14s %7s %14s %7s\n", "other", "vpdpbusd", "ratio", "vfmadd231ps", "ratio");
    double best[2][N_OTHERS];
    for (int i = 0; i < N_OTHERS; i++) best[0][i] = best[1][i] = 1e30;
    for (int r = 0; r < rounds; r++) /* interleaved: a busy phase of the host hits every row */
        for (int i = 0; i < N_OTHERS; i++)
            for (int b = 0; b < 2; b++) {
                const double t = run(b, i);
                if (t < best[b][i]) best[b][i] = t;
            }
    for (int i = 0; i < N_OTHERS; i++)
        printf("%-26s %11.3f ns %6.2fx %11.3f ns %6.2fx\n", others[i], best[0][i], best[0][i] / best[0][0],
               best[1][i], best[1][i] / best[1][0]);
    return 0;
}

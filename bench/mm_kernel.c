/* The Q8_0, BF16, Q4_K, Q5_K or Q6_K products alone, one thread, CPU time: the matrices of L
 * layers of the llama-3.2-1b shape (q, k, v, o 2048 wide; gate, up 8192 x 2048; down 2048 x
 * 8192; random blocks with finite scales, or bf16 values), each multiplied by n tokens per
 * "forward", for n = 1, 2, 4, 8,
 * 16. Thread CPU time rather than wall time, and the minimum over repetitions, so that a
 * shared machine's other processes distort it less (their memory traffic still does).
 *
 *   mm_kernel [q8_0|bf16|q4_k|q5_k|q6_k] [layers] [reps] [n list, e.g. 1,16,256]
 *
 * Built and run by bench/mm_kernel.sh; -DMMK_NO_PACK builds it against a library without
 * hsd_mm_pack. HSD_MATMUL=scalar|avx2|avx512|amx caps the kernel level (as the CLI does), in
 * trees that have kernels/cpu_features.h (older trees read it themselves). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/matmul.h"
#if __has_include("kernels/cpu_features.h")
#include "kernels/cpu_features.h"
#define MMK_LEVELS 1
#endif

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        hsd_dtype t;
        int block, bytes; /* elements and bytes per block */
    } types[] = {{"q8_0", HSD_DT_Q8_0, 32, 34},   {"bf16", HSD_DT_BF16, 1, 2},
                 {"q4_k", HSD_DT_Q4_K, 256, 144}, {"q5_k", HSD_DT_Q5_K, 256, 176},
                 {"q6_k", HSD_DT_Q6_K, 256, 210}};
    int ty = 0;
    while (argc > 1 && ty < 5 && strcmp(argv[1], types[ty].name)) ty++;
    if (ty == 5) {
        fprintf(stderr, "mm_kernel: unknown type %s (q8_0, bf16, q4_k, q5_k or q6_k)\n", argv[1]);
        return 2;
    }
    const int bf16 = types[ty].t == HSD_DT_BF16;
    const int blk = types[ty].block, bby = types[ty].bytes;
    int L = argc > 2 ? atoi(argv[2]) : 4, reps = argc > 3 ? atoi(argv[3]) : 9;
#ifdef MMK_LEVELS
    const char *lv = getenv("HSD_MATMUL");
    for (int i = 0; lv && i < HSD_CPU_N_LEVELS; i++)
        if (!strcmp(lv, hsd_cpu_level_name((hsd_cpu_level)i))) hsd_cpu_level_limit((hsd_cpu_level)i);
#endif
    static const int shapes[7][2] = {{2048, 2048}, {512, 2048},  {512, 2048}, {2048, 2048},
                                     {8192, 2048}, {8192, 2048}, {2048, 8192}};
    int nm = 7 * L;
    hsd_mat *m = calloc((size_t)nm, sizeof *m);
    size_t total = 0;
    srand(1);
    for (int i = 0; i < nm; i++) {
        int r = shapes[i % 7][0], c = shapes[i % 7][1];
        size_t b = (size_t)r * (c / blk) * bby;
        uint8_t *d = malloc(b);
        if (!d) return 1;
        for (size_t k = 0; k < b; k++) d[k] = (uint8_t)rand();
        if (bf16) /* finite: exponent bits 0x3c..0x3f (|w| in 2^-7 .. 2) */
            for (size_t k = 1; k < b; k += 2) d[k] = (uint8_t)((d[k] & 0x80) | 0x3c | (d[k] & 3));
        else
            for (size_t k = 0; k < b; k += bby) { /* finite fp16 scales, 2^-7 .. 2^-6 */
                uint16_t h = (uint16_t)(0x2000 | (rand() & 0x3ff)), h2 = (uint16_t)(0x2000 | (rand() & 0x3ff));
                if (types[ty].t == HSD_DT_Q6_K) {
                    memcpy(d + k + 208, &h, 2);
                } else {
                    memcpy(d + k, &h, 2);
                    if (types[ty].t != HSD_DT_Q8_0) memcpy(d + k + 2, &h2, 2); /* dmin */
                }
            }
        m[i] = (hsd_mat){.type = types[ty].t, .rows = r, .cols = c, .data = d}; /* (designated: older trees have no .packed) */
        total += b;
#ifndef MMK_NO_PACK
        if (hsd_mm_pack(&m[i])) return 1;
#endif
    }
    /* token counts: argv[4] as "1,16,256" (default 1,2,4,8,16); f(n)/f(1) needs 1 first */
    int ns[16] = {1, 2, 4, 8, 16}, nn = 5, nmax = 16;
    if (argc > 4) {
        nn = 0;
        for (char *q = argv[4]; *q && nn < 16; q += *q == ',') ns[nn++] = (int)strtol(q, &q, 10);
        for (int i = 0; i < nn; i++) nmax = ns[i] > nmax ? ns[i] : nmax;
    }
    float *x = malloc((size_t)nmax * 8192 * sizeof *x), *out = malloc((size_t)nmax * 8192 * sizeof *out);
    for (int i = 0; i < nmax * 8192; i++) x[i] = (float)(rand() % 2000 - 1000) / 1000.0f;
    hsd_mm_ws ws = {0};
    if (hsd_mm_ws_reserve(&ws, 1, nmax, 8192)) return 1;
    printf("%d layers, %.0f MB of %s rows, 1 thread, min CPU ms over %d reps, kernels %s\n", L,
           total / 1e6, types[ty].name, reps, hsd_mm_isa_name(hsd_mm_isa_default()));
    double t1 = 0;
    for (int a = 0; a < nn; a++) {
        int n = ns[a];
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            double t0 = cpu_ms();
            for (int i = 0; i < nm; i++)
                (void)hsd_mm_run(&ws, NULL, 1, out, m[i].rows, x, n, &m[i], NULL, 0);
            double t = cpu_ms() - t0;
            if (t < best) best = t;
        }
        if (n == 1) t1 = best;
        printf("n=%2d  %7.2f ms  f(n)/f(1) %.2f  %5.1f GB/s  %6.1f GMAC/s\n", n, best, best / t1,
               total / best / 1e6, (double)total / ((double)bby / blk) * n / best / 1e6);
    }
    return 0;
}

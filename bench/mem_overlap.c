/* Does this machine overlap arithmetic with a memory stream? The question behind every
 * f(n)/f(1) of the memory-bound products: a forward of n tokens reads the same weights as one
 * token and adds n times the arithmetic, so its cost is 1 + compute/memory where the two add
 * up and max(1, compute/memory) where they overlap.
 *
 * Each of T threads streams its share of a buffer larger than the caches, 256 bytes at a time
 * (four 64-byte loads), and spends K rounds of 8 independent vpdpbusd on them (a k-quant
 * product's inner step: 256 bytes of Q4_K are one 32-column sub-block of a 16-row group, which
 * takes 10 vector instructions per token, so n = 8 tokens is about K = 10). Three timings per K, interleaved, best of R rounds:
 *   stream   K = 0 over the big buffer (the loads alone);
 *   compute  the same K and the same byte count over a 1 MB buffer per thread (in L2);
 *   both     K over the big buffer.
 * overlap = (stream + compute - both) / compute: 1 where the arithmetic hides under the
 * stream, 0 where the two add up, below 0 where the arithmetic also slows the stream.
 * The big buffer sits on 2 MB pages (MADV_HUGEPAGE), as the packed weights do
 * (kernels/matmul_pack.c), unless PAGES is 4k. The software prefetch runs PF bytes ahead with
 * hint HINT; 4096 t2 is the k-quant VNNI products' (kernels/matmul_kq_avx512.c).
 *
 *   cc -O2 -pthread bench/mem_overlap.c -o mem_overlap
 *   ./mem_overlap [MB] [THREADS] [ROUNDS] [PF bytes, 0: none] [HINT t0|t1|t2|nta] [PAGES 2m|4k]
 * (bench/notes/kquant_packed.md, sessions 14 and 15, has the numbers: session 14 ran it with
 * 4 KB pages and 12 KB t0, which hid far less of the arithmetic). */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

static size_t pf_bytes = 4096;
static int pf_hint = 2; /* 0..2: t0..t2, 3: nta */

typedef struct job {
    const char *p;
    size_t len; /* bytes per pass, a multiple of 256 */
    int passes, k, pf;
    int sink;
} job;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

VNNI static void *stream(void *arg) {
    job *j = arg;
    const __m512i x = _mm512_set1_epi8(3);
    /* eight named accumulators: an array indexed in a loop of runtime length was kept in
     * memory by GCC, which made the arithmetic ten times slower than the port limit */
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    for (int pass = 0; pass < j->passes; pass++)
        for (size_t o = 0; o < j->len; o += 256) {
            const char *b = j->p + o;
            if (j->pf && pf_bytes)
                for (int l = 0; l < 4; l++) {
                    const char *q = b + pf_bytes + 64 * l;
                    if (pf_hint == 0) _mm_prefetch(q, _MM_HINT_T0);
                    else if (pf_hint == 1) _mm_prefetch(q, _MM_HINT_T1);
                    else if (pf_hint == 2) _mm_prefetch(q, _MM_HINT_T2);
                    else _mm_prefetch(q, _MM_HINT_NTA);
                }
            const __m512i w0 = _mm512_load_si512((const void *)b), w1 = _mm512_load_si512((const void *)(b + 64));
            const __m512i w2 = _mm512_load_si512((const void *)(b + 128)), w3 = _mm512_load_si512((const void *)(b + 192));
            if (j->k == 0) s0 = _mm512_xor_si512(s0, _mm512_xor_si512(_mm512_xor_si512(w0, w1), _mm512_xor_si512(w2, w3)));
            for (int r = 0; r < j->k; r++) {
                s0 = _mm512_dpbusd_epi32(s0, w0, x), s1 = _mm512_dpbusd_epi32(s1, w1, x);
                s2 = _mm512_dpbusd_epi32(s2, w2, x), s3 = _mm512_dpbusd_epi32(s3, w3, x);
                s4 = _mm512_dpbusd_epi32(s4, w0, x), s5 = _mm512_dpbusd_epi32(s5, w1, x);
                s6 = _mm512_dpbusd_epi32(s6, w2, x), s7 = _mm512_dpbusd_epi32(s7, w3, x);
            }
        }
    s0 = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3)),
                          _mm512_add_epi32(_mm512_add_epi32(s4, s5), _mm512_add_epi32(s6, s7)));
    j->sink = _mm512_reduce_add_epi32(s0);
    return NULL;
}

static double run(job *jobs, int nt) {
    pthread_t th[64];
    const double t0 = now_s();
    for (int i = 0; i < nt; i++) pthread_create(&th[i], NULL, stream, &jobs[i]);
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    return now_s() - t0;
}

int main(int argc, char **argv) {
    const size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 512;
    const int nt = argc > 2 ? atoi(argv[2]) : 2, rounds = argc > 3 ? atoi(argv[3]) : 3;
    if (!__builtin_cpu_supports("avx512vnni")) {
        printf("mem_overlap: skipped, this CPU has no AVX-512 VNNI\n");
        return 0;
    }
    static const char *hints[] = {"t0", "t1", "t2", "nta"};
    const long pf = argc > 4 ? atol(argv[4]) : 4096;
    pf_hint = -1;
    for (int h = 0; h < 4; h++)
        if (!strcmp(argc > 5 ? argv[5] : "t2", hints[h])) pf_hint = h;
    const char *pages = argc > 6 ? argv[6] : "2m";
    if (mb < 16 || nt < 1 || nt > 64 || rounds < 1 || pf < 0 || pf > (1 << 20) || pf_hint < 0 ||
        (strcmp(pages, "2m") && strcmp(pages, "4k"))) {
        fprintf(stderr, "usage: mem_overlap [MB >= 16] [THREADS 1..64] [ROUNDS >= 1] "
                        "[PF bytes 0..1048576] [HINT t0|t1|t2|nta] [PAGES 2m|4k]\n");
        return 2;
    }
    pf_bytes = (size_t)pf;
    const size_t big = mb << 20, share = big / (size_t)nt / 256 * 256, small = 1u << 20;
    /* the last thread's prefetches run up to PF (<= 1 MB) past its share: a prefetch never
     * faults, and the slack keeps those on the buffer's own pages */
    const size_t huge = 2u << 20, blen = (big + (1u << 20) + huge - 1) / huge * huge;
    char *buf = aligned_alloc(huge, blen);
    char *l2 = aligned_alloc(4096, (size_t)nt * (small + (64u << 10)));
    if (!buf || !l2) {
        fprintf(stderr, "mem_overlap: out of memory for %zu MB\n", mb);
        return 1;
    }
    if (!strcmp(pages, "2m")) (void)madvise(buf, blen, MADV_HUGEPAGE); /* before first touch */
    memset(buf, 1, blen);
    memset(l2, 1, (size_t)nt * (small + (64u << 10)));
    printf("%zu MB, %d threads, best of %d interleaved rounds; prefetch %zu bytes ahead (%s), "
           "%s pages\n", mb, nt, rounds, pf_bytes, pf_bytes ? hints[pf_hint] : "none", pages);
    printf("%3s %10s %10s %10s %10s %8s\n", "K", "stream ms", "compute ms", "both ms", "GB/s both",
           "overlap");
    static const int ks[] = {1, 2, 4, 8, 12, 16};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        const int k = ks[ki];
        double ts = 1e9, tc = 1e9, tb = 1e9;
        for (int r = 0; r < rounds; r++) {
            job js[64];
            for (int i = 0; i < nt; i++) js[i] = (job){buf + (size_t)i * share, share, 1, 0, 1, 0};
            double t = run(js, nt);
            ts = t < ts ? t : ts;
            for (int i = 0; i < nt; i++)
                js[i] = (job){l2 + (size_t)i * (small + (64u << 10)), small, (int)(share / small), k, 1, 0};
            t = run(js, nt);
            tc = t < tc ? t : tc;
            for (int i = 0; i < nt; i++) js[i] = (job){buf + (size_t)i * share, share, 1, k, 1, 0};
            t = run(js, nt);
            tb = t < tb ? t : tb;
        }
        printf("%3d %10.1f %10.1f %10.1f %10.1f %8.2f\n", k, ts * 1e3, tc * 1e3, tb * 1e3,
               (double)share * nt / tb / 1e9, (ts + tc - tb) / tc);
        fflush(stdout);
    }
    free(buf);
    free(l2);
    return 0;
}

/* Shared state and helpers of hsd_gpu_bench (bench/gpu_bench.c: helpers, benchmarks, main;
 * bench/gpu_bench_checks.c: kernel checks; bench/gpu_bench_checks_heads.c: head, sampling
 * and whole-model checks). See bench/gpu_bench.c for what the program does. */
#ifndef HSD_BENCH_GPU_BENCH_H
#define HSD_BENCH_GPU_BENCH_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsd.h"
#include "kernels/cpu_ops.h"
#include "kernels/cuda_ops.h"
#include "lib/base/rng.h"
#include "models/cuda_model.h"
#include "models/synth.h"
#include "models/transformer.h"
#include "lib/base/timer.h"

extern hsd_cuda *cu;
/* --small: the benchmarks at toy sizes, to run their code paths on the host emulation */
extern bool g_small;
extern hsd_rng rng;
extern FILE *md;
extern int n_fail, n_pass;

#define TOL_F32 1e-3
#define TOL_BF16 1e-2

void die(const char *what);
#define OK(x)                                                                                      \
    do {                                                                                           \
        if ((x) != HSD_OK) die(#x);                                                                \
    } while (0)

void mdf(const char *fmt, ...);
float urand(void);
float *rand_f32(size_t n);
void *dev(size_t bytes);
void *dev_from(const void *host, size_t bytes);
float *host_from(const void *d, size_t n);
/* max|got - want| / max|want|; inf when the reference is all zeros (a check on zeros proves
 * nothing) or anything is not finite. */
double rel_err(const float *got, const float *want, size_t n);
void report(const char *name, double err, double tol);
void report_ids(const char *name, int n_equal, int n_total);
/* A random matrix stored as `t`; the host copy is what the CPU reference reads. */
hsd_mat rand_mat(hsd_dtype t, int32_t rows, int32_t cols, void **host);

/* gpu_bench_checks.c */
void check_elementwise(void);
void check_matmul(void);
void check_invariance(void);
void check_head_norm(void);
void check_fused(void);
void check_attention(void);
/* gpu_bench_checks_heads.c */
void check_indexed_head(void);
void check_heads(void);
void check_sampling(void);
void check_model(const char *shape, hsd_dtype dt, double tol);
void check_model_batch(const char *shape, hsd_dtype dt, double tol);

#endif

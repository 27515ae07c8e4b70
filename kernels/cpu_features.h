/* The CPU's features, probed once per process, and the one kernel level every CPU kernel
 * family dispatches from (matmul, quant dots, cpu_ops, the BLAS choice).
 *
 * Levels are cumulative: AMX implies AVX-512 implies AVX2. hsd_cpu_level_active() is the best
 * level the CPU (and the OS: AVX-512 and AMX state enabled in XCR0, AMX tile data granted by
 * arch_prctl on Linux) supports, lowered by the override hsd_cpu_level_limit — the model
 * parameter hsd_model_params.cpu_kernels, which the CLI sets from HSD_MATMUL. The library
 * reads no environment. */
#ifndef HSD_KERNELS_CPU_FEATURES_H
#define HSD_KERNELS_CPU_FEATURES_H

#include <stdbool.h>

typedef enum hsd_cpu_level {
    HSD_CPU_SCALAR = 0, /* plain C */
    HSD_CPU_AVX2,       /* AVX2 + FMA + F16C */
    HSD_CPU_AVX512,     /* AVX-512 F/BW/VL/DQ + BF16 + VNNI */
    HSD_CPU_AMX,        /* the above + AMX-TILE, AMX-BF16, AMX-INT8, tile data granted */
    HSD_CPU_N_LEVELS
} hsd_cpu_level;

typedef struct hsd_cpu_features {
    bool avx2, fma, f16c;
    bool avx512;      /* F, BW, VL, DQ, with the OS saving ZMM state */
    bool avx512_bf16, avx512_vnni;
    bool amx_tile, amx_bf16, amx_int8; /* CPUID and XCR0 */
    bool amx_granted;                  /* arch_prctl(ARCH_REQ_XCOMP_PERM) succeeded */
    bool amd;                          /* vendor AuthenticAMD: kernels tuned per vendor */
    hsd_cpu_level best;                /* the best level all of the above allow */
    char desc[160];                    /* the features found, space-separated */
} hsd_cpu_features;

/* The probe, computed on first use (thread-safe; every thread computes the same value). */
const hsd_cpu_features *hsd_cpu_features_get(void);
/* The level kernels use now: min(best, limit). */
hsd_cpu_level hsd_cpu_level_active(void);
/* Caps the level (process-wide; HSD_CPU_N_LEVELS or above: no cap). Levels above the CPU's
 * best are ignored. */
void hsd_cpu_level_limit(hsd_cpu_level cap);
/* Whether the CPU runs level l. */
bool hsd_cpu_level_supported(hsd_cpu_level l);
/* "scalar", "avx2", "avx512", "amx"; "?" otherwise. */
const char *hsd_cpu_level_name(hsd_cpu_level l);

#endif

/* One CPUID/XGETBV probe for every kernel family (see cpu_features.h). CPUID is read
 * directly rather than through __builtin_cpu_supports: clang 14 (the fuzz build) knows
 * neither "f16c" nor the AMX names, and AMX also needs the OS's permission for tile data. */
#include "kernels/cpu_features.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif
#define HSD_CPU_X86 1
#endif

#ifdef HSD_CPU_X86
static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

/* Linux keeps AMX tile data (8 KB of state per thread) off until a process asks for it. */
static bool amx_request(void) {
#ifdef __linux__
    const long ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}
#endif

#ifdef HSD_AMX_EMU
#define HSD_AMX_EMULATED 1
#else
#define HSD_AMX_EMULATED 0
#endif

static void describe(hsd_cpu_features *f) {
    const struct {
        bool on;
        const char *name;
    } k[] = {{f->avx2, "avx2"},         {f->fma, "fma"},
             {f->f16c, "f16c"},         {f->avx512, "avx512"},
             {f->avx512_bf16, "avx512_bf16"}, {f->avx512_vnni, "avx512_vnni"},
             {f->amx_tile, "amx_tile"}, {f->amx_bf16, "amx_bf16"},
             {f->amx_int8, "amx_int8"}, {f->amx_granted, "amx_granted"},
             {HSD_AMX_EMULATED && f->amx_tile, "(amx_emulated)"}, {f->amd, "amd"}};
    size_t len = 0;
    f->desc[0] = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (k[i].on && len + strlen(k[i].name) + 2 < sizeof f->desc)
            len += (size_t)snprintf(f->desc + len, sizeof f->desc - len, "%s%s", len ? " " : "",
                                    k[i].name);
    if (!len) snprintf(f->desc, sizeof f->desc, "none");
}

static void probe_x86(hsd_cpu_features *f);

static void probe(hsd_cpu_features *f) {
    probe_x86(f);
    describe(f);
}

static void probe_x86(hsd_cpu_features *f) {
    *f = (hsd_cpu_features){0};
    f->best = HSD_CPU_SCALAR;
#ifdef HSD_CPU_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    f->amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163; /* "Auth" "enti" "cAMD" */
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const bool osxsave = c >> 27 & 1, avx = c >> 28 & 1;
    f->fma = c >> 12 & 1;
    f->f16c = c >> 29 & 1;
    if (!osxsave || !avx) return;
    const unsigned long long xcr0 = xgetbv0();
    const bool ymm_os = (xcr0 & 0x6) == 0x6, zmm_os = (xcr0 & 0xe6) == 0xe6,
               amx_os = (xcr0 & 0x60000) == 0x60000;
    if (!ymm_os || __get_cpuid_max(0, NULL) < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = b >> 5 & 1;
    f->avx512 = zmm_os && (b >> 16 & 1) && (b >> 17 & 1) && (b >> 30 & 1) && (b >> 31 & 1);
    f->avx512_vnni = f->avx512 && (c >> 11 & 1);
    f->amx_bf16 = amx_os && (d >> 22 & 1);
    f->amx_tile = amx_os && (d >> 24 & 1);
    f->amx_int8 = amx_os && (d >> 25 & 1);
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    (void)b1, (void)c1, (void)d1;
    f->avx512_bf16 = f->avx512 && (a1 >> 5 & 1);
    if (f->amx_tile && f->amx_bf16 && f->amx_int8) f->amx_granted = amx_request();
#ifdef HSD_AMX_EMU
    /* test builds only (kernels/matmul_amx_emu.h): AMX in C wherever the AVX-512 level runs */
    if (f->avx512 && f->avx512_vnni && f->avx512_bf16)
        f->amx_tile = f->amx_bf16 = f->amx_int8 = f->amx_granted = true;
#endif
    if (f->avx2 && f->fma && f->f16c) f->best = HSD_CPU_AVX2;
    if (f->best == HSD_CPU_AVX2 && f->avx512 && f->avx512_bf16 && f->avx512_vnni)
        f->best = HSD_CPU_AVX512;
    if (f->best == HSD_CPU_AVX512 && f->amx_tile && f->amx_bf16 && f->amx_int8 && f->amx_granted)
        f->best = HSD_CPU_AMX;
#endif
}

static hsd_cpu_features feats;
static atomic_int probed; /* 0 none, 1 running, 2 done */
static atomic_int cap = HSD_CPU_N_LEVELS;

const hsd_cpu_features *hsd_cpu_features_get(void) {
    if (atomic_load_explicit(&probed, memory_order_acquire) == 2) return &feats;
    int expect = 0;
    if (atomic_compare_exchange_strong(&probed, &expect, 1)) {
        probe(&feats);
        atomic_store_explicit(&probed, 2, memory_order_release);
    } else {
        while (atomic_load_explicit(&probed, memory_order_acquire) != 2) {
        }
    }
    return &feats;
}

hsd_cpu_level hsd_cpu_level_active(void) {
    hsd_cpu_level best = hsd_cpu_features_get()->best;
    int c = atomic_load_explicit(&cap, memory_order_relaxed);
    return c < (int)best ? (hsd_cpu_level)c : best;
}

void hsd_cpu_level_limit(hsd_cpu_level l) {
    int v = (int)l;
    if (v < 0) v = 0;
    if (v > HSD_CPU_N_LEVELS) v = HSD_CPU_N_LEVELS;
    atomic_store_explicit(&cap, v, memory_order_relaxed);
}

bool hsd_cpu_level_supported(hsd_cpu_level l) {
    return (int)l >= 0 && l <= hsd_cpu_features_get()->best;
}

const char *hsd_cpu_level_name(hsd_cpu_level l) {
    static const char *names[] = {"scalar", "avx2", "avx512", "amx"};
    return (unsigned)l < HSD_CPU_N_LEVELS ? names[l] : "?";
}

/* The AMX tile instructions matmul_amx.c uses, in plain C, for test builds only (HSD_AMX_EMU:
 * CMake compiles matmul_amx.c and cpu_features.c a second time with it, into
 * test_matmul_kernels_amx_emu; libhsd never has it).
 *
 * Why: the AMX kernels read the same packed groups as the AVX-512 kernels, and those layouts
 * change (session 23 interleaved the k-quant tails and paired the Q8_0 blocks). A machine
 * without AMX could compile the AMX kernels but never run them, so a layout change could ship
 * untested until a session drew a Sapphire Rapids. With this header every tile instruction
 * runs as its Intel SDM pseudocode says (tile shapes from the loaded configuration, rows and
 * columns past the shape zeroed on load and on every product, int32 sums wrapping, bf16
 * denormals read and written as zero), and an
 * operation the hardware refuses (#UD: tiles not configured, a shape the product cannot take,
 * one tile as two operands) traps as the hardware would, with SIGILL. The test then runs the
 * whole AMX path — addressing, tile configuration kept and restored, bit-identity with the
 * AVX-512 kernels, greedy SD = AR — on any CPU with AVX-512.
 *
 * What it cannot show: speed, and the hardware's own fp32 summation order inside tdpbf16ps
 * (emulated here as the pseudocode's order, two rounded multiply-adds per pair; the BF16 tests
 * compare within tolerance of float64 and within the path, never across paths). */
#ifndef HSD_KERNELS_MATMUL_AMX_EMU_H
#define HSD_KERNELS_MATMUL_AMX_EMU_H

#include <immintrin.h> /* first, so that the definitions below replace its tile macros */
#include <stdint.h>
#include <string.h>

#include "kernels/matmul_amx.h"

typedef struct amx_emu_state {
    int on;          /* a palette-1 configuration is loaded */
    hsd_amx_cfg cfg; /* as loaded */
    uint8_t t[8][16][64];
} amx_emu_state;
static _Thread_local amx_emu_state amx_emu;

/* An instruction the hardware refuses with #UD: the same signal (SIGILL). */
static void amx_emu_fault(void) {
    __builtin_trap();
}

static void amx_emu_ldcfg(const hsd_amx_cfg *c) {
    if (c->palette == 0) { /* palette 0: back to the init state */
        memset(&amx_emu, 0, sizeof amx_emu);
        return;
    }
    if (c->palette != 1 || c->start_row) amx_emu_fault();
    for (int i = 0; i < 16; i++) {
        /* palette 1: 8 tiles of at most 16 rows × 64 bytes, rows and colsb both set or both
         * zero; entries past tile 7 must be zero */
        const int rows = c->rows[i], colsb = c->colsb[i];
        if (i >= 8 && (rows || colsb)) amx_emu_fault();
        if (rows > 16 || colsb > 64 || (rows == 0) != (colsb == 0)) amx_emu_fault();
    }
    memset(&amx_emu, 0, sizeof amx_emu);
    amx_emu.cfg = *c;
    amx_emu.on = 1;
}
static void amx_emu_stcfg(hsd_amx_cfg *c) {
    if (amx_emu.on)
        *c = amx_emu.cfg;
    else
        memset(c, 0, sizeof *c);
}
static void amx_emu_release(void) {
    memset(&amx_emu, 0, sizeof amx_emu);
}
/* A tile an instruction names: configured with a shape. */
static void amx_emu_valid(int t) {
    if (!amx_emu.on || t < 0 || t > 7 || !amx_emu.cfg.rows[t]) amx_emu_fault();
}
static void amx_emu_zero(int t) {
    amx_emu_valid(t);
    memset(amx_emu.t[t], 0, sizeof amx_emu.t[t]);
}
static void amx_emu_loadd(int t, const void *base, long stride) {
    amx_emu_valid(t);
    const int rows = amx_emu.cfg.rows[t], colsb = amx_emu.cfg.colsb[t];
    memset(amx_emu.t[t], 0, sizeof amx_emu.t[t]);
    for (int r = 0; r < rows; r++)
        memcpy(amx_emu.t[t][r], (const uint8_t *)base + (long)r * stride, (size_t)colsb);
}
static void amx_emu_stored(int t, void *base, long stride) {
    amx_emu_valid(t);
    const int rows = amx_emu.cfg.rows[t], colsb = amx_emu.cfg.colsb[t];
    for (int r = 0; r < rows; r++)
        memcpy((uint8_t *)base + (long)r * stride, amx_emu.t[t][r], (size_t)colsb);
}
/* The shape checks every tdp* makes: C is M × N dwords, A is M × K dwords, B is K × N dwords. */
static void amx_emu_shapes(int c, int a, int b) {
    amx_emu_valid(c), amx_emu_valid(a), amx_emu_valid(b);
    const hsd_amx_cfg *g = &amx_emu.cfg;
    if (c == a || c == b || a == b) amx_emu_fault();
    if (g->colsb[a] % 4 || g->colsb[c] % 4 || g->colsb[b] % 4) amx_emu_fault();
    if (g->colsb[a] / 4 != g->rows[b] || g->colsb[c] != g->colsb[b] || g->rows[c] != g->rows[a])
        amx_emu_fault();
}
/* tdpbssd / tdpbsud / tdpbusd / tdpbuud: C[m][n] += Σ_k Σ_i A[m][4k+i]·B[k][4n+i], the bytes
 * signed or unsigned per operand, int32 sums wrapping (done in uint32). B is widened and
 * transposed to [k][i][n] first so that the inner loop runs over n (the test's run time). */
static void amx_emu_dpb(int c, int a, int b, int a_signed, int b_signed) {
    amx_emu_shapes(c, a, b);
    const hsd_amx_cfg *g = &amx_emu.cfg;
    const int M = g->rows[c], N = g->colsb[c] / 4, K = g->colsb[a] / 4;
    uint32_t bt[16][4][16] = {{{0}}}; /* columns past N stay 0 */
    for (int k = 0; k < K; k++)
        for (int i = 0; i < 4; i++)
            for (int n = 0; n < N; n++) {
                const uint8_t y = amx_emu.t[b][k][4 * n + i];
                bt[k][i][n] = (uint32_t)(b_signed ? (int32_t)(int8_t)y : (int32_t)y);
            }
    for (int m = 0; m < M; m++) {
        uint8_t *crow = amx_emu.t[c][m];
        uint32_t acc[16] = {0};
        memcpy(acc, crow, 4 * (size_t)N);
        for (int k = 0; k < K; k++)
            for (int i = 0; i < 4; i++) {
                const uint8_t x = amx_emu.t[a][m][4 * k + i];
                const uint32_t xv = (uint32_t)(a_signed ? (int32_t)(int8_t)x : (int32_t)x);
                for (int n = 0; n < 16; n++) acc[n] += xv * bt[k][i][n]; /* fixed: vectorised */
            }
        memcpy(crow, acc, 4 * (size_t)N);
        memset(crow + 4 * N, 0, (size_t)(64 - 4 * N)); /* the row past C's width: zeroed */
    }
    for (int m = M; m < 16; m++) memset(amx_emu.t[c][m], 0, 64);
}
/* tdpbf16ps reads and writes denormals as zero (of the same sign). */
static float amx_emu_ftz(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
    memcpy(&f, &u, 4);
    return f;
}
static float amx_emu_bf16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return amx_emu_ftz(f);
}
/* tdpbf16ps: per pair k, C[m][n] += A[m][2k]·B[k][2n], then += A[m][2k+1]·B[k][2n+1], each a
 * rounded multiply and a rounded add (ISO C: GCC contracts nothing into an fma), denormal
 * results flushed. */
static void amx_emu_dpbf16(int c, int a, int b) {
    amx_emu_shapes(c, a, b);
    const hsd_amx_cfg *g = &amx_emu.cfg;
    const int M = g->rows[c], N = g->colsb[c] / 4, K = g->colsb[a] / 4;
    float bt[16][2][16] = {{{0}}};
    for (int k = 0; k < K; k++)
        for (int i = 0; i < 2; i++)
            for (int n = 0; n < N; n++) bt[k][i][n] = amx_emu_bf16(amx_emu.t[b][k] + 4 * n + 2 * i);
    for (int m = 0; m < M; m++) {
        uint8_t *crow = amx_emu.t[c][m];
        float acc[16] = {0};
        memcpy(acc, crow, 4 * (size_t)N);
        for (int k = 0; k < K; k++) {
            const float x0 = amx_emu_bf16(amx_emu.t[a][m] + 4 * k),
                        x1 = amx_emu_bf16(amx_emu.t[a][m] + 4 * k + 2);
            for (int n = 0; n < 16; n++) {
                const float p0 = x0 * bt[k][0][n];
                acc[n] = amx_emu_ftz(acc[n] + p0);
                const float p1 = x1 * bt[k][1][n];
                acc[n] = amx_emu_ftz(acc[n] + p1);
            }
        }
        memcpy(crow, acc, 4 * (size_t)N);
        memset(crow + 4 * N, 0, (size_t)(64 - 4 * N));
    }
    for (int m = M; m < 16; m++) memset(amx_emu.t[c][m], 0, 64);
}

#undef _tile_loadd
#undef _tile_stream_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbsud
#undef _tile_dpbusd
#undef _tile_dpbuud
#undef _tile_dpbf16ps
#define _tile_loadd(t, base, stride) amx_emu_loadd((t), (base), (long)(stride))
#define _tile_stored(t, base, stride) amx_emu_stored((t), (base), (long)(stride))
#define _tile_zero(t) amx_emu_zero(t)
#define _tile_dpbssd(c, a, b) amx_emu_dpb((c), (a), (b), 1, 1)
#define _tile_dpbsud(c, a, b) amx_emu_dpb((c), (a), (b), 1, 0)
#define _tile_dpbusd(c, a, b) amx_emu_dpb((c), (a), (b), 0, 1)
#define _tile_dpbuud(c, a, b) amx_emu_dpb((c), (a), (b), 0, 0)
#define _tile_dpbf16ps(c, a, b) amx_emu_dpbf16((c), (a), (b))
/* _tile_release is a function in GCC's header: a function-like macro of its name replaces its
 * calls from here on. */
#define _tile_release() amx_emu_release()
#define HSD_AMX_LDTILECFG(p) amx_emu_ldcfg(p)
#define HSD_AMX_STTILECFG(p) amx_emu_stcfg(p)

#endif

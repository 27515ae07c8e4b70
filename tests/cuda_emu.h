/* Host emulation of the CUDA kernel interface (tests/cuda_emu.c). */
#ifndef HSD_TESTS_CUDA_EMU_H
#define HSD_TESTS_CUDA_EMU_H

/* Emulated device allocations not yet freed. */
extern int hsd_emu_live_allocs;

#endif

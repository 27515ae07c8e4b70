/* libFuzzer: draft-head factor files (safetensors with router.* / lm_head.* tensors) from
 * arbitrary bytes, for a fixed 16 x 8 classifier. A file that loads must give a working head. */
#include <math.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "models/head.h"

static char dir[512];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "%s", hsd_fuzz_tmpdir());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = hsd_fuzz_write_tmp(data, size, dir, "head.safetensors");
    float u[16 * 8], x[2 * 8], logits[2 * 16];
    for (int i = 0; i < 16 * 8; i++) u[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    for (int i = 0; i < 2 * 8; i++) x[i] = (float)(i % 5) - 2.0f;
    hsd_mat cls = {HSD_DT_F32, 16, 8, u, NULL};
    for (int kind = HSD_HEAD_SPECULATIVE; kind <= HSD_HEAD_LOWRANK; kind++) {
        hsd_head_params p = hsd_head_default_params();
        p.kind = (hsd_head_kind)kind;
        p.top_k = 5;
        p.factors_path = path;
        hsd_head *h = NULL;
        if (hsd_head_create(&cls, &p, NULL, 0, "fuzz", &h) != HSD_OK) continue;
        if (hsd_head_forward(h, NULL, 1, x, 2, logits) != HSD_OK) abort();
        int finite = 0;
        for (int i = 0; i < 2 * 16; i++) finite += isfinite(logits[i]) != 0;
        /* speculative: exactly top-k exact (finite) logits per row, whatever the router */
        if (kind == HSD_HEAD_SPECULATIVE && finite != 2 * 5) abort();
        hsd_head_free(h);
    }
    return 0;
}

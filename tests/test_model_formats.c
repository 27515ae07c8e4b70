/* Loader round trips (synth -> write -> load -> forward equals the in-memory model) for GGUF
 * and safetensors, and malformed files failing with errors that name the file and tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "models/synth.h"
#include "tests/testutil.h"

static int setup(void **state) {
    (void)state;
    return hsd_test_tmpdir_setup("hsd_formats");
}
static int teardown(void **state) {
    (void)state;
    return hsd_test_tmpdir_teardown();
}
static const char *tmp(const char *name) { return hsd_test_tmp(name); }

/* logits of 16 fixed tokens, all rows */
static float *run16(hsd_model *m) {
    int32_t V = hsd_model_vocab_size(m), toks[16];
    for (int i = 0; i < 16; i++) toks[i] = (i * 37 + 5) % V;
    float *lg = malloc((size_t)16 * V * sizeof(float));
    assert_int_equal(hsd_model_forward(m, toks, 10, NULL, NULL, 10, lg), HSD_OK);
    assert_int_equal(hsd_model_forward(m, toks + 10, 6, NULL, NULL, 6, lg + (size_t)10 * V), HSD_OK);
    return lg;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double mx = 0, scale = 1e-6;
    for (size_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return mx / scale;
}

static void roundtrip(const char *shape, hsd_dtype dt, bool gguf, double tol) {
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create(shape, dt, 99, &sm), HSD_OK);
    hsd_transformer *tf;
    assert_int_equal(hsd_synth_to_transformer(sm, NULL, &tf), HSD_OK);
    hsd_model_iface it = {HSD_MODEL_IFACE_INIT};
    hsd_tf_iface(tf, &it);
    hsd_model *mem, *disk;
    assert_int_equal(hsd_model_from_iface(&it, &mem), HSD_OK);
    char name[64];
    snprintf(name, sizeof name, "%s-%s.%s", shape, hsd_dtype_name(dt), gguf ? "gguf" : "st");
    const char *path = tmp(name);
    if (gguf)
        assert_int_equal(hsd_synth_write_gguf(sm, path), HSD_OK);
    else
        assert_int_equal(hsd_synth_write_safetensors(sm, path), HSD_OK);
    hsd_status s = hsd_model_load(path, NULL, &disk);
    if (s != HSD_OK) fprintf(stderr, "load: %s\n", hsd_last_error());
    assert_int_equal(s, HSD_OK);
    assert_int_equal(hsd_model_vocab_size(disk), hsd_model_vocab_size(mem));
    float *a = run16(mem), *b = run16(disk);
    double e = max_rel(b, a, (size_t)16 * hsd_model_vocab_size(mem));
    fprintf(stderr, "%-40s %s\n  loaded vs in-memory: rel err %.2g\n", name, hsd_model_desc(disk), e);
    assert_true(e <= tol);
    free(a), free(b);
    hsd_model_free(disk);
    hsd_model_free(mem);
    hsd_synth_free(sm);
}

static void test_roundtrip_safetensors(void **state) {
    (void)state;
    /* same layout and bytes: bit-identical */
    roundtrip("tiny", HSD_DT_F32, false, 0.0);
    roundtrip("tiny", HSD_DT_F16, false, 0.0);
    roundtrip("tiny-qwen2", HSD_DT_BF16, false, 0.0);
    roundtrip("tiny-qwen2", HSD_DT_F32, false, 0.0);
}

static void test_roundtrip_gguf(void **state) {
    (void)state;
    /* llama: q/k rows permuted for interleaved rope and Llama 3 scaling as rope_freqs, so
     * sums run in another order: equal to float rounding */
    roundtrip("tiny", HSD_DT_F32, true, 1e-5);
    roundtrip("tiny", HSD_DT_Q8_0, true, 1e-5);
    roundtrip("tiny", HSD_DT_BF16, true, 1e-5);
    roundtrip("tiny-qwen2", HSD_DT_F16, true, 0.0); /* qwen2 keeps HF order: identical */
    roundtrip("tiny-qwen2", HSD_DT_Q8_0, true, 0.0);
}

/* Loading from a mapping hands the source pages of packed matrices back to the kernel as they
 * are packed (models/tf_load.c, kernels/matmul_pack.h: hsd_mm_pack_release), and whatever reads
 * them later (the rows of a tied embedding, the row views of fused matrices) faults the file's
 * bytes back in: the logits equal those of the same file read into memory (use_mmap false,
 * nothing released), bit for bit. Shapes: tied (smollm), fused qkv and gate/up (phi3), and a
 * tied 262k-row embedding packed on 2 threads (8.9 MB in Q8_0, 16.8 MB in BF16). */
static void test_mapped_release_same_logits(void **state) {
    (void)state;
    static const struct {
        const char *shape;
        hsd_dtype dt;
    } cases[] = {{"tiny-smollm", HSD_DT_Q8_0}, {"tiny-phi3", HSD_DT_BF16},
                 {"tiny-262k", HSD_DT_Q8_0},   {"tiny-262k", HSD_DT_BF16}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        hsd_synth_model *sm;
        assert_int_equal(hsd_synth_create(cases[c].shape, cases[c].dt, 7, &sm), HSD_OK);
        char name[64];
        snprintf(name, sizeof name, "release-%s-%s.gguf", cases[c].shape, hsd_dtype_name(cases[c].dt));
        const char *path = tmp(name);
        assert_int_equal(hsd_synth_write_gguf(sm, path), HSD_OK);
        hsd_model_params mp = hsd_model_default_params();
        mp.n_threads = 2;
        hsd_model *mapped, *read;
        assert_int_equal(hsd_model_load(path, &mp, &mapped), HSD_OK);
        mp.use_mmap = false;
        assert_int_equal(hsd_model_load(path, &mp, &read), HSD_OK);
        float *a = run16(mapped), *b = run16(read);
        const size_t n = (size_t)16 * hsd_model_vocab_size(read);
        assert_memory_equal(a, b, n * sizeof *a);
        fprintf(stderr, "%-40s mapped (pages released) == read into memory, %zu logits\n", name, n);
        free(a), free(b);
        hsd_model_free(mapped), hsd_model_free(read);
        hsd_synth_free(sm);
        unlink(path);
    }
}

/* ---- malformed files ---------------------------------------------------------------- */

static void expect_fail(const char *path, hsd_status want, const char *n1, const char *n2) {
    hsd_model *m = (hsd_model *)0x1;
    hsd_status s = hsd_model_load(path, NULL, &m);
    fprintf(stderr, "  -> %s: %s\n", hsd_status_str(s), hsd_last_error());
    assert_int_equal(s, want);
    assert_null(m);
    if (n1) assert_non_null(strstr(hsd_last_error(), n1));
    if (n2) assert_non_null(strstr(hsd_last_error(), n2));
}

static char *slurp(const char *path, size_t *len) {
    char *p = hsd_test_read_file(path, len);
    assert_non_null(p);
    return p;
}
static void spit(const char *path, const void *p, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, len, f), len);
    fclose(f);
}
static char *find(char *hay, size_t len, const char *needle) {
    return memmem(hay, len, needle, strlen(needle));
}

static void test_gguf_errors(void **state) {
    (void)state;
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create("tiny", HSD_DT_F32, 1, &sm), HSD_OK);
    const char *good = tmp("good.gguf");
    assert_int_equal(hsd_synth_write_gguf(sm, good), HSD_OK);
    size_t len;
    char *raw = slurp(good, &len);
    const char *p;

    p = tmp("magic.gguf");
    raw[3] = 'X';
    spit(p, raw, len);
    expect_fail(p, HSD_ERR_PARSE, p, "bad magic");
    raw[3] = 'F';

    p = tmp("trunc-data.gguf");
    spit(p, raw, len * 3 / 5);
    expect_fail(p, HSD_ERR_PARSE, p, "beyond the end of the file");

    p = tmp("trunc-header.gguf");
    spit(p, raw, 300);
    expect_fail(p, HSD_ERR_PARSE, p, "truncated GGUF");
    p = tmp("trunc-infos.gguf");
    spit(p, raw, 700); /* inside the tensor infos */
    expect_fail(p, HSD_ERR_PARSE, p, "truncated GGUF: ");

    /* blk.0.attn_q.weight: name, n_dims, 2 dims, then the type -> IQ2_XXS (16), which hsd
     * has no kernels for (Q4_K etc.: tests/test_gguf_quant.c) */
    char *q = find(raw, len, "blk.0.attn_q.weight");
    assert_non_null(q);
    uint32_t type_q4k = 16, old;
    char *tp = q + strlen("blk.0.attn_q.weight") + 4 + 16;
    memcpy(&old, tp, 4);
    assert_int_equal(old, 0);
    memcpy(tp, &type_q4k, 4);
    p = tmp("q4k.gguf");
    spit(p, raw, len);
    expect_fail(p, HSD_ERR_UNSUPPORTED, "blk.0.attn_q.weight", "IQ2_XXS");
    memcpy(tp, &old, 4);

    char *arch = find(raw, len, "llama");
    memcpy(arch, "mamba", 5);
    p = tmp("arch.gguf");
    spit(p, raw, len);
    expect_fail(p, HSD_ERR_UNSUPPORTED, p, "architecture 'mamba'");
    memcpy(arch, "llama", 5);

    /* metadata says a wider FFN than the tensors have */
    sm->cfg.hidden_dim = 224;
    p = tmp("shape.gguf");
    assert_int_equal(hsd_synth_write_gguf(sm, p), HSD_OK);
    expect_fail(p, HSD_ERR_PARSE, "blk.0.ffn_gate.weight", "expected [224, 64]");
    sm->cfg.hidden_dim = 192;
    sm->cfg.n_layers = 3; /* a layer the file lacks */
    p = tmp("layers.gguf");
    assert_int_equal(hsd_synth_write_gguf(sm, p), HSD_OK);
    expect_fail(p, HSD_ERR_PARSE, "missing tensor", "layer 2");
    sm->cfg.n_layers = 2;
    free(raw);
    hsd_synth_free(sm);
}

static void test_safetensors_errors(void **state) {
    (void)state;
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create("tiny-qwen2", HSD_DT_F32, 2, &sm), HSD_OK);
    const char *dir = tmp("st");
    assert_int_equal(hsd_synth_write_safetensors(sm, dir), HSD_OK);
    char st_path[800], cfg_path[800];
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir);
    size_t len, clen;
    char *raw = slurp(st_path, &len), *cfg = slurp(cfg_path, &clen);

    spit(st_path, raw, len - 100);
    expect_fail(dir, HSD_ERR_PARSE, "model.safetensors", "beyond the end of the file");

    uint64_t huge = (uint64_t)len * 2;
    char *copy = malloc(len);
    memcpy(copy, raw, len);
    memcpy(copy, &huge, 8);
    spit(st_path, copy, len);
    expect_fail(dir, HSD_ERR_PARSE, "model.safetensors", "header length");
    memcpy(copy, raw, len);
    copy[8] = 'x';
    spit(st_path, copy, len);
    expect_fail(dir, HSD_ERR_PARSE, "model.safetensors", "header");

    /* first tensor in the header is the embedding: F32 -> I32 */
    memcpy(copy, raw, len);
    char *dt = find(copy, len, "\"F32\"");
    assert_non_null(dt);
    dt[1] = 'I';
    spit(st_path, copy, len);
    expect_fail(dir, HSD_ERR_UNSUPPORTED, "dtype I32", "model.");
    spit(st_path, raw, len);

    /* config says 4 more FFN channels than the tensors have */
    char *edited = malloc(clen + 8);
    char *ff = find(cfg, clen, "\"intermediate_size\": 192");
    assert_non_null(ff);
    memcpy(edited, cfg, clen);
    memcpy(edited + (ff - cfg), "\"intermediate_size\": 196", 24);
    spit(cfg_path, edited, clen);
    expect_fail(dir, HSD_ERR_PARSE, "model.layers.0.mlp.gate_proj.weight", "expected [196, 64]");

    memcpy(edited, cfg, clen);
    char *ar = find(edited, clen, "Qwen2ForCausalLM");
    memcpy(ar, "Gpt2ForCausalLM!", 16);
    spit(cfg_path, edited, clen);
    expect_fail(dir, HSD_ERR_UNSUPPORTED, "config.json", "Gpt2ForCausalLM!");

    spit(cfg_path, "{\"architectures\": [\"LlamaForCausalLM\"], ", 40);
    expect_fail(dir, HSD_ERR_PARSE, "config.json", "line");

    unlink(cfg_path);
    expect_fail(dir, HSD_ERR_IO, "config.json", NULL);
    spit(cfg_path, cfg, clen);

    /* Q8_0 cannot be written as safetensors */
    hsd_synth_model *q8;
    assert_int_equal(hsd_synth_create("tiny", HSD_DT_Q8_0, 3, &q8), HSD_OK);
    assert_int_equal(hsd_synth_write_safetensors(q8, tmp("q8")), HSD_ERR_UNSUPPORTED);
    hsd_synth_free(q8);
    /* unknown synth shape */
    assert_int_equal(hsd_synth_create("gpt-5", HSD_DT_F32, 3, &q8), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "gpt-5"));

    free(raw), free(cfg), free(copy), free(edited);
    hsd_synth_free(sm);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_safetensors),
        cmocka_unit_test(test_roundtrip_gguf),
        cmocka_unit_test(test_mapped_release_same_logits),
        cmocka_unit_test(test_gguf_errors),
        cmocka_unit_test(test_safetensors_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

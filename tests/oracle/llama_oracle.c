/* llama_oracle: llama.cpp (v0.5.0, through its C API) as the oracle of hsd's GGUF support.
 *
 *   llama_oracle prepare IN.gguf OUT.gguf        copy, adding what llama.cpp's loader needs and
 *                                               an hsd writer may lack (a placeholder SPM
 *                                               vocabulary of the model's size, general.file_type)
 *   llama_oracle quantize IN.gguf OUT.gguf TYPE  llama_model_quantize (TYPE: F32 F16 BF16 Q8_0
 *                                               Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K_S Q3_K_M Q4_K_S
 *                                               Q4_K_M Q5_K_S Q5_K_M Q6_K)
 *   llama_oracle logits MODEL.gguf OUT TOK...    llama_decode of the whole sequence in one batch
 *                                               with every position flagged for output; OUT gets
 *                                               the logits as float32 [n_tokens][n_vocab] (OUT
 *                                               "-": text, one line per position); prints n_vocab
 *   llama_oracle dequant MODEL.gguf TENSOR OUT   ggml's own dequantiser (type traits to_float)
 *                                               of a whole tensor, float32 rows to OUT; prints
 *                                               its type name and shape
 *   llama_oracle bench MODEL.gguf N THREADS      N single-token decodes after a 1-token prompt;
 *                                               prints "tok_per_s X"
 *   llama_oracle tokenize MODEL.gguf TEXTS       llama.cpp's tokenizer (vocabulary only loaded)
 *                                               on each text of TEXTS (llama.cpp's .inp format:
 *                                               texts each followed by
 *                                               "\n__ggml_vocab_test__\n"), special tokens
 *                                               parsed, none added: one line of ids per text
 *
 * The KV cache is kept in F32 and flash attention off, so that an F32 model's logits are
 * comparable with hsd's f32 forward to float rounding. Exit status 0 on success, 1 on error
 * (message on stderr). Built by CMake only where llama.cpp is installed
 * (scripts/install_llama_cpp.sh); LLAMA_ORACLE_LIBDIR is its lib/ directory. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "gguf.h"
#include "llama.h"

#ifndef LLAMA_ORACLE_LIBDIR
#define LLAMA_ORACLE_LIBDIR "."
#endif

static int fail(const char *msg, const char *what) {
    fprintf(stderr, "llama_oracle: %s%s%s\n", msg, what ? ": " : "", what ? what : "");
    return 1;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LLAMA_ORACLE_VERBOSE")) fputs(text, stderr);
}

/* ---- prepare --------------------------------------------------------------------- */

/* n_vocab of a GGUF: rows of token_embd.weight (ne[1]). */
static int64_t vocab_rows(struct gguf_context *g, struct ggml_context *ctx) {
    struct ggml_tensor *t = ggml_get_tensor(ctx, "token_embd.weight");
    (void)g;
    return t ? t->ne[1] : -1;
}

static int cmd_prepare(const char *in, const char *out) {
    struct ggml_context *ctx = NULL;
    struct gguf_init_params ip = {.no_alloc = false, .ctx = &ctx};
    struct gguf_context *g = gguf_init_from_file(in, ip);
    if (!g) return fail("cannot read GGUF", in);
    if (gguf_find_key(g, "general.file_type") < 0) {
        /* the type most of the matrices have: F32 (0), F16 (1), BF16 (32), Q8_0 (7) */
        struct ggml_tensor *t = ggml_get_tensor(ctx, "blk.0.attn_q.weight");
        uint32_t ft = 0;
        if (t && t->type == GGML_TYPE_F16) ft = 1;
        if (t && t->type == GGML_TYPE_BF16) ft = 32;
        if (t && t->type == GGML_TYPE_Q8_0) ft = 7;
        gguf_set_val_u32(g, "general.file_type", ft);
    }
    if (gguf_find_key(g, "tokenizer.ggml.model") < 0) {
        int64_t n = vocab_rows(g, ctx);
        if (n <= 0) return fail("no token_embd.weight to size a placeholder vocabulary", in);
        char **tok = malloc((size_t)n * sizeof *tok);
        float *scores = calloc((size_t)n, sizeof *scores);
        int32_t *types = malloc((size_t)n * sizeof *types);
        if (!tok || !scores || !types) return fail("out of memory", NULL);
        for (int64_t i = 0; i < n; i++) {
            tok[i] = malloc(24);
            snprintf(tok[i], 24, "<t%lld>", (long long)i);
            types[i] = i < 3 ? 3 /* control */ : 1 /* normal */;
        }
        gguf_set_val_str(g, "tokenizer.ggml.model", "llama");
        gguf_set_arr_str(g, "tokenizer.ggml.tokens", (const char **)tok, (size_t)n);
        gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, (size_t)n);
        gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (size_t)n);
        gguf_set_val_u32(g, "tokenizer.ggml.bos_token_id", 1);
        gguf_set_val_u32(g, "tokenizer.ggml.eos_token_id", 2);
        for (int64_t i = 0; i < n; i++) free(tok[i]);
        free(tok), free(scores), free(types);
    }
    /* tensors are re-added from the ggml context, which holds their data (the parsed
     * context's infos do not point at it) */
    struct gguf_context *w = gguf_init_empty();
    gguf_set_kv(w, g);
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++)
        gguf_add_tensor(w, ggml_get_tensor(ctx, gguf_get_tensor_name(g, i)));
    bool ok = gguf_write_to_file(w, out, false);
    gguf_free(w);
    gguf_free(g);
    ggml_free(ctx);
    return ok ? 0 : fail("cannot write", out);
}

/* ---- dequant --------------------------------------------------------------------- */

static int cmd_dequant(const char *path, const char *name, const char *out) {
    struct ggml_context *ctx = NULL;
    struct gguf_init_params ip = {.no_alloc = false, .ctx = &ctx};
    struct gguf_context *g = gguf_init_from_file(path, ip);
    if (!g) return fail("cannot read GGUF", path);
    struct ggml_tensor *t = ggml_get_tensor(ctx, name);
    const struct ggml_type_traits *tr = t ? ggml_get_type_traits(t->type) : NULL;
    int rc = 0;
    if (!t || (!tr->to_float && t->type != GGML_TYPE_F32)) {
        rc = fail(t ? "no dequantiser for the tensor's type" : "no such tensor", name);
    } else {
        int64_t n = ggml_nelements(t);
        float *v = malloc(sizeof(float) * (size_t)n);
        FILE *f = fopen(out, "wb");
        if (!v || !f)
            rc = fail("cannot create", out);
        else {
            if (t->type == GGML_TYPE_F32)
                memcpy(v, t->data, sizeof(float) * (size_t)n);
            else
                tr->to_float(t->data, v, n);
            if (fwrite(v, sizeof *v, (size_t)n, f) != (size_t)n) rc = fail("write failed", out);
            printf("%s %lld %lld\n", ggml_type_name(t->type), (long long)t->ne[1],
                   (long long)t->ne[0]);
        }
        if (f && fclose(f)) rc = fail("write failed", out);
        free(v);
    }
    gguf_free(g);
    ggml_free(ctx);
    return rc;
}

/* ---- quantize -------------------------------------------------------------------- */

static const struct {
    const char *name;
    enum llama_ftype ft;
} ftypes[] = {
    {"F32", LLAMA_FTYPE_ALL_F32},          {"F16", LLAMA_FTYPE_MOSTLY_F16},
    {"BF16", LLAMA_FTYPE_MOSTLY_BF16},     {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
    {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
    {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
    {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},     {"Q3_K_S", LLAMA_FTYPE_MOSTLY_Q3_K_S},
    {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M}, {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S},
    {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S},
    {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},
};

static int cmd_quantize(const char *in, const char *out, const char *type) {
    for (size_t i = 0; i < sizeof ftypes / sizeof ftypes[0]; i++) {
        if (strcmp(ftypes[i].name, type)) continue;
        llama_model_quantize_params p = llama_model_quantize_default_params();
        p.ftype = ftypes[i].ft;
        p.nthread = 1;
        p.pure = getenv("LLAMA_ORACLE_PURE") != NULL; /* every matrix in TYPE, no mixes */
        uint32_t rc = llama_model_quantize(in, out, &p);
        if (rc) return fail("llama_model_quantize failed", in);
        return 0;
    }
    return fail("unknown quantisation type", type);
}

/* ---- logits / bench --------------------------------------------------------------- */

static struct llama_context *open_ctx(const char *path, int n_ctx, int threads,
                                      struct llama_model **model) {
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    /* LLAMA_ORACLE_NO_REPACK=1: keep the file's layout (no runtime-repacked kernels) */
    if (getenv("LLAMA_ORACLE_NO_REPACK")) mp.use_extra_bufts = false;
    *model = llama_model_load_from_file(path, mp);
    if (!*model) return NULL;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = cp.n_ubatch = (uint32_t)n_ctx;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(*model, cp);
    if (!ctx) llama_model_free(*model);
    return ctx;
}

static int cmd_logits(const char *path, const char *out, int n, char **toks) {
    struct llama_model *model;
    int n_ctx = n < 64 ? 64 : n;
    struct llama_context *ctx = open_ctx(path, n_ctx, 2, &model);
    if (!ctx) return fail("llama.cpp cannot load", path);
    int32_t nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = atoi(toks[i]);
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = n;
    int rc = 0;
    if (llama_decode(ctx, b)) {
        rc = fail("llama_decode failed", path);
        goto done;
    }
    FILE *f = strcmp(out, "-") ? fopen(out, "wb") : stdout;
    if (!f) {
        rc = fail("cannot create", out);
        goto done;
    }
    for (int i = 0; i < n && !rc; i++) {
        const float *l = llama_get_logits_ith(ctx, i);
        if (!l) {
            rc = fail("no logits at a position", NULL);
            break;
        }
        if (f == stdout) {
            for (int32_t v = 0; v < nv; v++) printf(v ? " %.9g" : "%.9g", l[v]);
            printf("\n");
        } else if (fwrite(l, sizeof *l, (size_t)nv, f) != (size_t)nv) {
            rc = fail("write failed", out);
        }
    }
    if (f != stdout && fclose(f)) rc = fail("write failed", out);
    if (!rc && f != stdout) printf("n_vocab %d\n", nv);
done:
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    return rc;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmd_bench(const char *path, int n, int threads) {
    struct llama_model *model;
    struct llama_context *ctx = open_ctx(path, n + 8, threads, &model);
    if (!ctx) return fail("llama.cpp cannot load", path);
    int32_t nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_token tok = 1 % nv;
    int rc = 0;
    if (llama_decode(ctx, llama_batch_get_one(&tok, 1))) rc = fail("llama_decode failed", path);
    double t0 = now_s();
    for (int i = 0; i < n && !rc; i++) {
        tok = (llama_token)((i * 7919 + 3) % nv);
        if (llama_decode(ctx, llama_batch_get_one(&tok, 1))) rc = fail("llama_decode failed", path);
    }
    double dt = now_s() - t0;
    if (!rc) printf("tok_per_s %.3f (%d tokens, %d threads, %.3f s)\n", n / dt, n, threads, dt);
    llama_free(ctx);
    llama_model_free(model);
    return rc;
}

static int cmd_tokenize(const char *path, const char *texts) {
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) return fail("llama.cpp cannot load", path);
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    FILE *f = fopen(texts, "rb");
    if (!f) {
        llama_model_free(model);
        return fail("cannot read", texts);
    }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (n + 1 == cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) free(buf);
            buf = p;
        }
    }
    fclose(f);
    if (!buf) {
        llama_model_free(model);
        return fail("out of memory", NULL);
    }
    buf[n] = 0;
    static const char sep[] = "\n__ggml_vocab_test__\n";
    int rc = 0;
    int32_t tcap = 1 << 16;
    llama_token *tok = malloc((size_t)tcap * sizeof *tok);
    /* memmem, not strstr: a text may hold NUL bytes */
    for (char *p = buf, *e; tok && !rc && (e = memmem(p, (size_t)(buf + n - p), sep, sizeof sep - 1));
         p = e + sizeof sep - 1) {
        int32_t k = llama_tokenize(vocab, p, (int32_t)(e - p), tok, tcap, false, true);
        if (k < 0) {
            rc = fail("text too long to tokenize", NULL);
            break;
        }
        for (int32_t i = 0; i < k; i++) printf(i ? " %d" : "%d", tok[i]);
        printf("\n");
    }
    free(tok);
    free(buf);
    llama_model_free(model);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: llama_oracle prepare IN OUT | quantize IN OUT TYPE | logits MODEL "
                        "OUT TOK... | dequant MODEL TENSOR OUT | bench MODEL N THREADS | tokenize "
                        "MODEL TEXTS\n");
        return 2;
    }
    llama_log_set(quiet_log, NULL);
    ggml_backend_load_all_from_path(LLAMA_ORACLE_LIBDIR);
    llama_backend_init();
    int rc;
    if (!strcmp(argv[1], "prepare") && argc == 4)
        rc = cmd_prepare(argv[2], argv[3]);
    else if (!strcmp(argv[1], "quantize") && argc == 5)
        rc = cmd_quantize(argv[2], argv[3], argv[4]);
    else if (!strcmp(argv[1], "logits") && argc >= 5)
        rc = cmd_logits(argv[2], argv[3], argc - 4, argv + 4);
    else if (!strcmp(argv[1], "dequant") && argc == 5)
        rc = cmd_dequant(argv[2], argv[3], argv[4]);
    else if (!strcmp(argv[1], "bench") && argc == 5)
        rc = cmd_bench(argv[2], atoi(argv[3]), atoi(argv[4]));
    else if (!strcmp(argv[1], "tokenize") && argc == 4)
        rc = cmd_tokenize(argv[2], argv[3]);
    else
        rc = fail("bad arguments", argv[1]);
    llama_backend_free();
    return rc;
}

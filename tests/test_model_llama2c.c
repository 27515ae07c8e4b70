/* Real llama2.c checkpoints: greedy ids from BOS equal the reference outputs, logits equal a
 * float64 re-implementation written here, and malformed files fail with clear errors. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "tests/testutil.h"

static const char *model_path(const char *name) {
    return !strcmp(name, "stories260K") ? hsd_test_path("models/stories260K/stories260K.bin")
                                        : hsd_test_path("models/babyllama-tok105/model5000.bin");
}

/* ids from reference_outputs.json[name][field] */
static int32_t *ref_ids(const char *name, const char *field, size_t *n) {
    json_error_t err;
    json_t *root = json_load_file(hsd_test_path("models/reference_outputs.json"), 0, &err);
    assert_non_null(root);
    json_t *arr = json_object_get(json_object_get(root, name), field);
    assert_true(json_is_array(arr));
    *n = json_array_size(arr);
    int32_t *ids = malloc(*n * sizeof *ids);
    for (size_t i = 0; i < *n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, i));
    json_decref(root);
    return ids;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static void check_greedy(const char *name) {
    const char *path = model_path(name);
    HSD_REQUIRE_FILE(path);
    HSD_REQUIRE_FILE(hsd_test_path("models/reference_outputs.json"));
    size_t n_ref;
    int32_t *want = ref_ids(name, "greedy_ids", &n_ref);
    assert_int_equal(n_ref, 200);
    hsd_model *m;
    assert_int_equal(hsd_model_load(path, NULL, &m), HSD_OK);
    int32_t V = hsd_model_vocab_size(m);
    float *logits = malloc((size_t)V * sizeof *logits);
    int32_t tok = 1; /* BOS */
    for (size_t i = 0; i < n_ref; i++) {
        assert_int_equal(hsd_model_forward(m, &tok, 1, NULL, NULL, 1, logits), HSD_OK);
        tok = argmax(logits, V);
        if (tok != want[i]) fprintf(stderr, "%s: step %zu: got %d, want %d\n", name, i, tok, want[i]);
        assert_int_equal(tok, want[i]);
    }
    assert_int_equal(hsd_model_kv_len(m), 200);
    free(logits);
    free(want);
    hsd_model_free(m);
}

static void test_greedy_stories260K(void **state) {
    (void)state;
    check_greedy("stories260K");
}
static void test_greedy_babyllama(void **state) {
    (void)state;
    check_greedy("babyllama-tok105");
}

/* ---- float64 reference, written from the llama2.c format description ----------------- */
typedef struct ref_model {
    int dim, hidden, nl, nh, nkv, V, seq, hd;
    double *w; /* all weights widened to double */
    double *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *cls;
} ref_model;

static void ref_load(ref_model *r, const char *path) {
    size_t len;
    char *raw = hsd_test_read_file(path, &len);
    assert_non_null(raw);
    int32_t h[7];
    memcpy(h, raw, 28);
    r->dim = h[0], r->hidden = h[1], r->nl = h[2], r->nh = h[3], r->nkv = h[4];
    r->V = abs(h[5]), r->seq = h[6], r->hd = r->dim / r->nh;
    size_t nf = (len - 28) / 4;
    r->w = malloc(nf * sizeof(double));
    for (size_t i = 0; i < nf; i++) {
        float f;
        memcpy(&f, raw + 28 + 4 * i, 4);
        r->w[i] = f;
    }
    free(raw);
    size_t d = (size_t)r->dim, kv = (size_t)r->nkv * r->hd, H = (size_t)r->hidden, L = (size_t)r->nl;
    double *p = r->w;
    r->emb = p, p += (size_t)r->V * d;
    r->rms_att = p, p += L * d;
    r->wq = p, p += L * d * d;
    r->wk = p, p += L * d * kv;
    r->wv = p, p += L * d * kv;
    r->wo = p, p += L * d * d;
    r->rms_ffn = p, p += L * d;
    r->w1 = p, p += L * d * H;
    r->w2 = p, p += L * d * H;
    r->w3 = p, p += L * d * H;
    r->rms_final = p, p += d;
    p += (size_t)r->seq * r->hd;
    r->cls = h[5] > 0 ? r->emb : p;
}

static void ref_mv(double *o, const double *x, const double *w, int n, int d) {
    for (int i = 0; i < d; i++) {
        double s = 0;
        for (int j = 0; j < n; j++) s += w[(size_t)i * n + j] * x[j];
        o[i] = s;
    }
}
static void ref_rms(double *o, const double *x, const double *w, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    ss = 1.0 / sqrt(ss / n + 1e-5);
    for (int i = 0; i < n; i++) o[i] = w[i] * x[i] * ss;
}

/* Logits (V per token) after each of the T tokens, one token at a time. */
static double *ref_forward(const ref_model *r, const int32_t *toks, int T) {
    int d = r->dim, hd = r->hd, kvd = r->nkv * hd, H = r->hidden;
    double *kc = calloc((size_t)r->nl * T * kvd, sizeof(double));
    double *vc = calloc((size_t)r->nl * T * kvd, sizeof(double));
    double *x = malloc(d * sizeof(double)), *xb = malloc(d * sizeof(double)), *q = malloc(d * sizeof(double));
    double *h1 = malloc(H * sizeof(double)), *h3 = malloc(H * sizeof(double)), *att = malloc(T * sizeof(double));
    double *tmp = malloc((d > H ? d : H) * sizeof(double));
    double *out = malloc((size_t)T * r->V * sizeof(double));
    for (int pos = 0; pos < T; pos++) {
        memcpy(x, r->emb + (size_t)toks[pos] * d, d * sizeof(double));
        for (int l = 0; l < r->nl; l++) {
            double *k = kc + ((size_t)l * T + pos) * kvd, *v = vc + ((size_t)l * T + pos) * kvd;
            ref_rms(xb, x, r->rms_att + (size_t)l * d, d);
            ref_mv(q, xb, r->wq + (size_t)l * d * d, d, d);
            ref_mv(k, xb, r->wk + (size_t)l * d * kvd, d, kvd);
            ref_mv(v, xb, r->wv + (size_t)l * d * kvd, d, kvd);
            for (int i = 0; i < d; i += 2) {
                double f = 1.0 / pow(10000.0, (double)(i % hd) / hd), c = cos(pos * f), s = sin(pos * f);
                double a = q[i], b = q[i + 1];
                q[i] = a * c - b * s, q[i + 1] = a * s + b * c;
                if (i < kvd) {
                    a = k[i], b = k[i + 1];
                    k[i] = a * c - b * s, k[i + 1] = a * s + b * c;
                }
            }
            for (int h = 0; h < r->nh; h++) {
                int kh = h / (r->nh / r->nkv);
                double mx = -1e300, sum = 0;
                for (int t = 0; t <= pos; t++) {
                    double s = 0;
                    for (int i = 0; i < hd; i++) s += q[h * hd + i] * kc[((size_t)l * T + t) * kvd + kh * hd + i];
                    att[t] = s / sqrt((double)hd);
                    if (att[t] > mx) mx = att[t];
                }
                for (int t = 0; t <= pos; t++) sum += (att[t] = exp(att[t] - mx));
                for (int i = 0; i < hd; i++) {
                    double s = 0;
                    for (int t = 0; t <= pos; t++) s += att[t] / sum * vc[((size_t)l * T + t) * kvd + kh * hd + i];
                    xb[h * hd + i] = s;
                }
            }
            ref_mv(tmp, xb, r->wo + (size_t)l * d * d, d, d);
            for (int i = 0; i < d; i++) x[i] += tmp[i];
            ref_rms(xb, x, r->rms_ffn + (size_t)l * d, d);
            ref_mv(h1, xb, r->w1 + (size_t)l * d * H, d, H);
            ref_mv(h3, xb, r->w3 + (size_t)l * d * H, d, H);
            for (int i = 0; i < H; i++) h1[i] = h1[i] / (1 + exp(-h1[i])) * h3[i];
            ref_mv(tmp, h1, r->w2 + (size_t)l * d * H, H, d);
            for (int i = 0; i < d; i++) x[i] += tmp[i];
        }
        ref_rms(xb, x, r->rms_final, d);
        ref_mv(out + (size_t)pos * r->V, xb, r->cls, d, r->V);
    }
    free(kc), free(vc), free(x), free(xb), free(q), free(h1), free(h3), free(att), free(tmp);
    return out;
}

static void check_logits_vs_f64(const char *name) {
    const char *path = model_path(name);
    HSD_REQUIRE_FILE(path);
    HSD_REQUIRE_FILE(hsd_test_path("models/reference_outputs.json"));
    size_t n_story;
    int32_t *story = ref_ids(name, "story_ids", &n_story);
    int T = n_story < 48 ? (int)n_story : 48;
    ref_model r;
    ref_load(&r, path);
    double *want = ref_forward(&r, story, T);

    hsd_model *m;
    /* the fp32 forward against fp64: an F32 KV cache (the F16 default is checked against a
     * reference that rounds K/V as stored, tests/test_model_arch.c) */
    hsd_model_params p = hsd_model_default_params();
    p.kv_type = HSD_KV_F32;
    assert_int_equal(hsd_model_load(path, &p, &m), HSD_OK);
    int32_t V = hsd_model_vocab_size(m);
    assert_int_equal(V, r.V);
    float *got = malloc((size_t)T * V * sizeof(float));
    /* first half in one multi-token forward, the rest one at a time */
    int half = T / 2;
    assert_int_equal(hsd_model_forward(m, story, half, NULL, NULL, half, got), HSD_OK);
    for (int t = half; t < T; t++)
        assert_int_equal(hsd_model_forward(m, story + t, 1, NULL, NULL, 1, got + (size_t)t * V), HSD_OK);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        double scale = 0;
        for (int i = 0; i < V; i++) scale = fmax(scale, fabs(want[(size_t)t * V + i]));
        for (int i = 0; i < V; i++) {
            double e = fabs(got[(size_t)t * V + i] - want[(size_t)t * V + i]) / fmax(scale, 1e-3);
            if (e > worst) worst = e;
        }
    }
    fprintf(stderr, "%s: %d positions, max |fp32 - fp64| / max|logit| = %.3g\n", name, T, worst);
    assert_true(worst < 1e-4);
    /* the argmax must agree everywhere too */
    int ties = 0;
    for (int t = 0; t < T; t++) {
        int32_t a = argmax(got + (size_t)t * V, V), b = 0;
        for (int i = 1; i < V; i++)
            if (want[(size_t)t * V + i] > want[(size_t)t * V + b]) b = i;
        ties += a != b;
    }
    assert_int_equal(ties, 0);
    free(got), free(want), free(story), free(r.w);
    hsd_model_free(m);
}

static void test_logits_vs_f64_stories260K(void **state) {
    (void)state;
    check_logits_vs_f64("stories260K");
}
static void test_logits_vs_f64_babyllama(void **state) {
    (void)state;
    check_logits_vs_f64("babyllama-tok105");
}

/* ---- malformed files ------------------------------------------------------------------ */
static const char *write_tmp(const char *tag, const void *data, size_t len) {
    static char path[8][256];
    static int slot;
    char *p = path[slot++ & 7];
    snprintf(p, 256, "%s/hsd_test_%s_%d.bin", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tag, (int)getpid());
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    if (len) assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    return p;
}

static void expect_fail(const char *path, hsd_status want, const char *needle) {
    hsd_model *m = (hsd_model *)0x1;
    hsd_status s = hsd_model_load(path, NULL, &m);
    fprintf(stderr, "  %s -> %s: %s\n", path, hsd_status_str(s), hsd_last_error());
    assert_int_equal(s, want);
    assert_null(m);
    assert_non_null(strstr(hsd_last_error(), path));
    if (needle) assert_non_null(strstr(hsd_last_error(), needle));
}

static void test_llama2c_bad_files(void **state) {
    (void)state;
    const char *path = model_path("stories260K");
    HSD_REQUIRE_FILE(path);
    size_t len;
    char *raw = hsd_test_read_file(path, &len);
    assert_non_null(raw);
    const char *p;
    p = write_tmp("trunc", raw, len - 1000);
    expect_fail(p, HSD_ERR_PARSE, "truncated");
    unlink(p);
    p = write_tmp("hdr", raw, 20);
    expect_fail(p, HSD_ERR_PARSE, "truncated llama2.c header");
    unlink(p);
    p = write_tmp("empty", raw, 0);
    expect_fail(p, HSD_ERR_PARSE, "empty");
    unlink(p);
    char garbage[4096];
    for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (char)(i * 37 + 11);
    p = write_tmp("garbage", garbage, sizeof garbage);
    expect_fail(p, HSD_ERR_PARSE, "not a llama2.c checkpoint");
    unlink(p);
    /* n_heads 7 does not divide dim 64 */
    int32_t h7 = 7;
    memcpy(raw + 12, &h7, 4);
    p = write_tmp("heads", raw, len);
    expect_fail(p, HSD_ERR_PARSE, "n_heads");
    unlink(p);
    /* vocab_size INT32_MIN: negating it was UB (fuzz_model_llama2c; the UBSan build of this
     * test fails without the fix); it must be refused as a bad header */
    h7 = 8;
    memcpy(raw + 12, &h7, 4);
    int32_t vmin = INT32_MIN;
    memcpy(raw + 20, &vmin, 4);
    p = write_tmp("vocabmin", raw, len);
    expect_fail(p, HSD_ERR_PARSE, "vocab_size -2147483648");
    unlink(p);
    memcpy(raw, "ak42", 4);
    p = write_tmp("v1", raw, len);
    expect_fail(p, HSD_ERR_UNSUPPORTED, "ak42");
    unlink(p);
    expect_fail("/nonexistent/model.bin", HSD_ERR_IO, NULL);
    free(raw);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_stories260K),
        cmocka_unit_test(test_greedy_babyllama),
        cmocka_unit_test(test_logits_vs_f64_stories260K),
        cmocka_unit_test(test_logits_vs_f64_babyllama),
        cmocka_unit_test(test_llama2c_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

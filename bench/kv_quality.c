/* What a quantised KV cache costs in the model's output: the next-token distributions of a
 * model with each cache type against the same model with the F16 cache (the default), over
 * sequences the F16 model samples itself (temperature 1, from BOS), read back in one forward
 * with logits for every position. Per cache type: the mean and largest KL(F16 || type) in
 * nats per position, and how often the two agree on the most likely token. A trained model
 * is needed for the numbers to mean anything (a synth model's distributions are noise).
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude bench/kv_quality.c build/libhsd.so \
 *      -Wl,-rpath,build -lm -o kv_quality && ./kv_quality MODEL [SEQS] [LEN]
 *
 * (bench/notes/attention.md has the numbers). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hsd.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double urand(void) { /* uniform in [0, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* log-softmax of n logits into out (double) */
static void log_softmax(const float *x, int32_t n, double *out) {
    double mx = -INFINITY, z = 0;
    for (int32_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (int32_t i = 0; i < n; i++) z += exp(x[i] - mx);
    for (int32_t i = 0; i < n; i++) out[i] = x[i] - mx - log(z);
}

static int argmax(const float *x, int32_t n) {
    int b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static hsd_model *load(const char *path, hsd_kv_type kv, bool no_rot, int32_t ctx) {
    hsd_model_params p = hsd_model_default_params();
    /* the CPU backend: the CUDA one has no Q8_0 / Q4_0 kernels and keeps F16 for them */
    p.kv_type = kv, p.kv_no_rotate = no_rot, p.n_ctx = ctx, p.backend = HSD_BACKEND_CPU;
    hsd_model *m = NULL;
    if (hsd_model_load(path, &p, &m) != HSD_OK) fprintf(stderr, "kv_quality: %s\n", hsd_last_error());
    return m;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: kv_quality MODEL [SEQS 8] [LEN 255]\n");
        return 2;
    }
    const int seqs = argc > 2 ? atoi(argv[2]) : 8;
    int32_t len = argc > 3 ? atoi(argv[3]) : 255;
    hsd_model *ref = load(argv[1], HSD_KV_F16, false, len + 1);
    if (!ref) return 1;
    if (len > hsd_model_n_ctx(ref) - 1) len = hsd_model_n_ctx(ref) - 1;
    const int32_t V = hsd_model_vocab_size(ref);
    printf("model: %s\n%d sequences of %d tokens sampled by the F16-cache model (T = 1, from BOS 1)\n",
           hsd_model_desc(ref), seqs, len);
    int32_t *tok = malloc((size_t)seqs * (len + 1) * sizeof *tok);
    float *lg = malloc((size_t)len * V * sizeof *lg), *lr = malloc((size_t)seqs * len * V * sizeof *lr);
    double *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    if (!tok || !lg || !lr || !a || !b) return 1;
    for (int s = 0; s < seqs; s++) { /* sampled one token at a time */
        int32_t *t = tok + (size_t)s * (len + 1);
        t[0] = 1;
        hsd_model_kv_truncate(ref, 0);
        for (int32_t i = 0; i < len; i++) {
            if (hsd_model_forward(ref, t + i, 1, NULL, NULL, 1, lg) != HSD_OK) return 1;
            log_softmax(lg, V, a);
            double u = urand(), c = 0;
            int32_t k = 0;
            for (; k < V - 1; k++)
                if ((c += exp(a[k])) > u) break;
            t[i + 1] = k;
        }
        /* the reference's own logits, read back as the others are: one forward of the whole
         * sequence */
        hsd_model_kv_truncate(ref, 0);
        if (hsd_model_forward(ref, t, len, NULL, NULL, len, lr + (size_t)s * len * V) != HSD_OK) return 1;
    }
    hsd_model_free(ref);
    static const struct {
        const char *name;
        hsd_kv_type kv;
        bool no_rot;
    } cfg[] = {{"f32", HSD_KV_F32, false},       {"q8_0", HSD_KV_Q8_0, false},
               {"q8_0 no rotation", HSD_KV_Q8_0, true}, {"q4_0", HSD_KV_Q4_0, false},
               {"q4_0 no rotation", HSD_KV_Q4_0, true}};
    printf("%-18s %14s %14s %12s\n", "cache", "mean KL nats", "max KL nats", "top-1 same");
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        hsd_model *m = load(argv[1], cfg[c].kv, cfg[c].no_rot, len + 1);
        if (!m) return 1;
        double kl_sum = 0, kl_max = 0;
        long same = 0;
        for (int s = 0; s < seqs; s++) {
            hsd_model_kv_truncate(m, 0);
            if (hsd_model_forward(m, tok + (size_t)s * (len + 1), len, NULL, NULL, len, lg) != HSD_OK) return 1;
            for (int32_t i = 0; i < len; i++) {
                const float *r = lr + ((size_t)s * len + i) * V, *x = lg + (size_t)i * V;
                log_softmax(r, V, a), log_softmax(x, V, b);
                double kl = 0;
                for (int32_t k = 0; k < V; k++) kl += exp(a[k]) * (a[k] - b[k]);
                kl_sum += kl, kl_max = kl > kl_max ? kl : kl_max;
                same += argmax(r, V) == argmax(x, V);
            }
        }
        printf("%-18s %14.3e %14.3e %11.2f%%\n", cfg[c].name, kl_sum / ((double)seqs * len), kl_max,
               100.0 * (double)same / ((double)seqs * len));
        fflush(stdout);
        hsd_model_free(m);
    }
    free(tok), free(lg), free(lr), free(a), free(b);
    return 0;
}

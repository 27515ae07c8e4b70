/* hsd bench generate: one direction of the pair (target <- drafter): models wrapped to count
 * their forwards, tokenizers, and the engines (the pair, and the target drafting for itself
 * for SD). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_generate.h"
#include "cli/cli.h"
#include "hsd.h"

static int32_t c_vocab(void *c) {
    return hsd_model_vocab_size(((hsd_bench_counted *)c)->inner);
}
static int32_t c_nctx(void *c) {
    return hsd_model_n_ctx(((hsd_bench_counted *)c)->inner);
}
static int32_t c_kvlen(void *c) {
    return hsd_model_kv_len(((hsd_bench_counted *)c)->inner);
}
static hsd_status c_trunc(void *c, int32_t len) {
    return hsd_model_kv_truncate(((hsd_bench_counted *)c)->inner, len);
}
static hsd_status c_keep(void *c, int32_t base, const int32_t *keep, int32_t n) {
    return hsd_model_kv_keep(((hsd_bench_counted *)c)->inner, base, keep, n);
}
static hsd_status c_forward(void *c, const int32_t *t, int32_t n, const int32_t *par,
                            const int32_t *rows, int32_t n_rows, float *logits) {
    ((hsd_bench_counted *)c)->n_fwd++;
    return hsd_model_forward(((hsd_bench_counted *)c)->inner, t, n, par, rows, n_rows, logits);
}

static int32_t c_nseq(void *c) {
    return hsd_model_n_seq(((hsd_bench_counted *)c)->inner);
}
static hsd_status c_select(void *c, int32_t seq) {
    return hsd_model_seq_select(((hsd_bench_counted *)c)->inner, seq);
}
static hsd_status c_forward_batch(void *c, const hsd_model_batch_seq *seqs, int32_t n,
                                  float *logits) {
    ((hsd_bench_counted *)c)->n_fwd++;
    return hsd_model_forward_batch(((hsd_bench_counted *)c)->inner, seqs, n, logits);
}

static hsd_model *wrap(hsd_bench_counted *c) {
    hsd_model_iface it = {sizeof(hsd_model_iface), c,      c_vocab, c_nctx, c_forward, c_kvlen,        c_trunc,
                          c_keep, NULL,    c_nseq, c_select,  c_forward_batch};
    hsd_model *m = NULL;
    return hsd_model_from_iface(&it, &m) ? NULL : m;
}

static const char *stem(const char *path, char *buf, size_t cap) {
    const char *b = strrchr(path, '/');
    snprintf(buf, cap, "%s", b ? b + 1 : path);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf) *dot = 0;
    return buf;
}

int hsd_bench_dir_open(hsd_bench_dir *d, const char *tm, const char *tt, const char *dm,
                       const char *dt, int32_t threads, int need_self, int32_t n_seq) {
    hsd_model_params mp = hsd_cli_model_params();
    mp.n_threads = threads;
    mp.n_seq = n_seq;
    char a[64], b[64];
    snprintf(d->name, sizeof d->name, "%s<-%s", stem(tm, a, sizeof a), stem(dm, b, sizeof b));
    if (hsd_tokenizer_load_file(tt, &d->tt) || hsd_tokenizer_load_file(dt, &d->dt) ||
        hsd_model_load(tm, &mp, &d->t_raw) || hsd_model_load(dm, &mp, &d->d_raw) ||
        (need_self && hsd_model_load(tm, &mp, &d->s_raw))) {
        fprintf(stderr, "hsd bench generate: %s\n", hsd_cli_error("bench generate"));
        return 1;
    }
    d->ct.inner = d->t_raw;
    d->cd.inner = d->d_raw;
    d->cs.inner = d->s_raw;
    if (!(d->t = wrap(&d->ct)) || !(d->d = wrap(&d->cd)) || (need_self && !(d->s = wrap(&d->cs))) ||
        hsd_engine_init(d->t, d->tt, d->d, d->dt, &d->pair) ||
        (need_self && hsd_engine_init(d->t, d->tt, d->s, d->tt, &d->self))) {
        fprintf(stderr, "hsd bench generate: %s\n", hsd_cli_error("bench generate"));
        return 1;
    }
    return 0;
}

void hsd_bench_dir_close(hsd_bench_dir *d) {
    hsd_engine_free(d->pair);
    hsd_engine_free(d->self);
    hsd_model_free(d->t);
    hsd_model_free(d->d);
    hsd_model_free(d->s);
    hsd_model_free(d->t_raw);
    hsd_model_free(d->d_raw);
    hsd_model_free(d->s_raw);
    hsd_tokenizer_free(d->tt);
    hsd_tokenizer_free(d->dt);
}

int32_t hsd_bench_typical_ctx(const hsd_tokenizer *tok, const hsd_bench_prompts *sets, int n_sets,
                              int32_t n_gen) {
    double sum = 0;
    int cnt = 0;
    for (int s = 0; s < n_sets; s++)
        for (int i = 0; i < sets[s].n; i++) {
            size_t n = 0;
            int32_t *ids = NULL;
            if (!hsd_tokenizer_encode_alloc(tok, sets[s].p[i], strlen(sets[s].p[i]), false, &ids,
                                            &n)) {
                sum += (double)n + (hsd_tokenizer_bos_id(tok) >= 0);
                cnt++;
            }
            hsd_free(ids);
        }
    return (int32_t)(cnt ? sum / cnt : 16) + n_gen / 2;
}

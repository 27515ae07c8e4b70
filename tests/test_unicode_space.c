/* Every Unicode scalar value U+0000..U+10FFFF (surrogates excluded) through hsd's
 * normalizers and pre-tokenizers, and round-tripped through every shared family, compared
 * with HF tokenizers 0.23.2. The expected results are tests/unicode/ref/ (written by
 * tests/unicode/gen.js with the pinned node package; tests/unicode/regen.sh re-makes them;
 * the format is described at the top of gen.js). Each code point is run alone and in the
 * contexts of tests/unicode/components.json. Every difference is counted and the first ones
 * of each component are printed as (component, code point, context, hsd, HF). */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hsd.h"
#include "lib/base/buf.h"
#include "lib/base/utf8.h"
#include "tests/testutil.h"
#include "tokenize/tokenizer.h"

#define N_SCALAR (0x110000u - 0x800u)
#define N_BLOCKS (0x110000u >> 10)
#define MAX_CTX 8
#define PRINT_MAX 12 /* differences printed per component */

/* template ops: a code point below 0x110000, or one of these */
enum { OP_X = 0x200000, OP_A, OP_H, OP_PIECE, OP_CTX, OP_NONE, OP_EMPTY };

typedef struct {
    uint32_t *ops; /* all templates, each context ended by OP_CTX */
    size_t n_ops, cap_ops;
    uint32_t *ctx_off; /* [template * n_ctx + k]: start of context k in ops */
    size_t n_tmpl, cap_tmpl;
    uint32_t *tid; /* per scalar index: template id */
    uint32_t block_hash[N_BLOCKS];
    bool has_blocks;
    int n_ctx;
} ref_file;

static uint32_t index_of(uint32_t cp) {
    return cp < 0xD800 ? cp : cp - 0x800;
}

static int push_op(ref_file *r, uint32_t op) {
    if (r->n_ops == r->cap_ops) {
        r->cap_ops = r->cap_ops ? r->cap_ops * 2 : 4096;
        uint32_t *p = realloc(r->ops, r->cap_ops * sizeof *p);
        if (!p) return -1;
        r->ops = p;
    }
    r->ops[r->n_ops++] = op;
    return 0;
}

/* Parses one template ("X ; 61 X | 20 ; ~ ...") into ops; returns 0 or -1. */
static int parse_template(ref_file *r, char *s) {
    if (r->n_tmpl == r->cap_tmpl) {
        r->cap_tmpl = r->cap_tmpl ? r->cap_tmpl * 2 : 256;
        uint32_t *p = realloc(r->ctx_off, r->cap_tmpl * MAX_CTX * sizeof *p);
        if (!p) return -1;
        r->ctx_off = p;
    }
    int k = 0;
    r->ctx_off[r->n_tmpl * MAX_CTX] = (uint32_t)r->n_ops;
    for (char *tok = strtok(s, " \n"); tok; tok = strtok(NULL, " \n")) {
        uint32_t op;
        if (!strcmp(tok, ";")) {
            if (push_op(r, OP_CTX) || ++k >= MAX_CTX) return -1;
            r->ctx_off[r->n_tmpl * MAX_CTX + (size_t)k] = (uint32_t)r->n_ops;
            continue;
        }
        if (!strcmp(tok, "|"))
            op = OP_PIECE;
        else if (!strcmp(tok, "~"))
            op = OP_NONE;
        else if (!strcmp(tok, "^"))
            op = OP_EMPTY;
        else if (!strcmp(tok, "X"))
            op = OP_X;
        else if (!strcmp(tok, "A"))
            op = OP_A;
        else if (!strcmp(tok, "H"))
            op = OP_H;
        else {
            char *end;
            unsigned long v = strtoul(tok, &end, 16);
            if (*end || v >= 0x110000) return -1;
            op = (uint32_t)v;
        }
        if (push_op(r, op)) return -1;
    }
    if (push_op(r, OP_CTX)) return -1;
    if (r->n_ctx && k + 1 != r->n_ctx) return -1;
    r->n_ctx = k + 1;
    r->n_tmpl++;
    return 0;
}

static void ref_free(ref_file *r) {
    free(r->ops);
    free(r->ctx_off);
    free(r->tid);
}

/* Loads tests/unicode/ref/<name>.txt; fails the test on a malformed file. */
static void ref_load(const char *name, ref_file *r) {
    memset(r, 0, sizeof *r);
    char rel[256], pbuf[4096];
    snprintf(rel, sizeof rel, "tests/unicode/ref/%s.txt", name);
    const char *path = hsd_test_src_path(rel), *dir = getenv("HSD_UNICODE_REF");
    if (dir) { /* a freshly generated reference (tests/unicode/regen.sh <dir>) */
        snprintf(pbuf, sizeof pbuf, "%s/%s.txt", dir, name);
        path = pbuf;
    }
    FILE *f = fopen(path, "r");
    if (!f) fprintf(stderr, "missing reference %s (tests/unicode/regen.sh writes it)\n", path);
    assert_non_null(f);
    r->tid = malloc(N_SCALAR * sizeof *r->tid);
    assert_non_null(r->tid);
    char *line = NULL;
    size_t cap = 0, idx = 0;
    ssize_t n;
    int lineno = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (line[0] == '#') continue;
        int ok = 1;
        if (line[0] == 'B') {
            unsigned blk, h;
            ok = sscanf(line, "B %x %x", &blk, &h) == 2 && blk < N_BLOCKS;
            if (ok) r->block_hash[blk] = h, r->has_blocks = true;
        } else {
            char *sp = strchr(line, ' ');
            unsigned long cnt = strtoul(line, NULL, 16);
            uint32_t id;
            ok = sp && cnt && idx + cnt <= N_SCALAR;
            if (ok && sp[1] == '=') {
                id = (uint32_t)r->n_tmpl;
                ok = parse_template(r, sp + 2) == 0;
            } else if (ok) {
                id = (uint32_t)strtoul(sp + 1, NULL, 10);
                ok = id < r->n_tmpl;
            }
            for (unsigned long i = 0; ok && i < cnt; i++) r->tid[idx++] = id;
        }
        if (!ok) fprintf(stderr, "%s:%d: malformed line\n", path, lineno);
        assert_true(ok);
    }
    free(line);
    fclose(f);
    if (idx != N_SCALAR) fprintf(stderr, "%s: covers %zu of %u scalars\n", path, idx, N_SCALAR);
    assert_int_equal(idx, N_SCALAR);
}

/* ---- one job: a component or a family, run by several threads over blocks ---- */

typedef struct job {
    const char *name;
    const ref_file *ref;
    hsd_tokenizer *tok;
    bool is_norm, is_rt, byte_level;
    int n_ctx;
    char ctx[MAX_CTX][16]; /* context text, '%' standing for the code point */
    atomic_uint next_block;
    atomic_long diffs;
    atomic_int printed;
    pthread_mutex_t print_lock;
} job;

/* HSD_UNICODE_ONLY=name,name runs only those components / rt_<family> (while debugging). */
static bool selected(const char *name) {
    const char *only = getenv("HSD_UNICODE_ONLY");
    if (!only || !*only) return true;
    size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)); p += n)
        if ((p == only || p[-1] == ',') && (p[n] == ',' || !p[n])) return true;
    return false;
}

static int push_utf8(hsd_buf *b, uint32_t cp) {
    return hsd_buf_push_cp(b, cp);
}

static int push_x(const job *j, hsd_buf *b, uint32_t cp) {
    if (!j->byte_level) return push_utf8(b, cp);
    char u[4];
    int n = hsd_utf8_encode(cp, u);
    for (int i = 0; i < n; i++)
        if (push_utf8(b, hsd_bytelevel_cp[(unsigned char)u[i]])) return -1;
    return 0;
}

/* Expected canonical result of context k: normalizer output, or each piece followed by 0xFF. */
static void expand(const job *j, uint32_t tid, int k, uint32_t cp, const hsd_buf *alone,
                   hsd_buf *out) {
    out->n = 0;
    const uint32_t *op = j->ref->ops + j->ref->ctx_off[tid * MAX_CTX + (uint32_t)k];
    if (op[0] == OP_NONE) {
        hsd_buf_append(out, "", 0);
        return;
    }
    for (; *op != OP_CTX; op++) {
        switch (*op) {
        case OP_X:
            push_x(j, out, cp);
            break;
        case OP_A:
            hsd_buf_append(out, alone->p, alone->n);
            break;
        case OP_H: {
            uint32_t s = cp - 0xAC00;
            push_utf8(out, 0x1100 + s / 588);
            push_utf8(out, 0x1161 + (s % 588) / 28);
            if (s % 28) push_utf8(out, 0x11A7 + s % 28);
            break;
        }
        case OP_PIECE:
            hsd_buf_push(out, (char)0xFF);
            break;
        case OP_EMPTY:
            break;
        default:
            push_utf8(out, *op);
        }
    }
    if (!j->is_norm && !j->is_rt) hsd_buf_push(out, (char)0xFF);
}

/* hsd's canonical result for `in` (same shape as expand). */
static hsd_status run_hsd(const job *j, hsd_scratch *sc, const char *in, size_t n, hsd_buf *pb,
                          hsd_spans *pieces, hsd_buf *out) {
    out->n = 0;
    sc->cont = false;
    if (j->is_norm) {
        hsd_status s = hsd_norm_apply(j->tok, in, n, out, sc);
        hsd_buf_append(out, "", 0);
        return s;
    }
    pb->n = 0;
    pieces->n = 0;
    if (hsd_buf_append(pb, in, n) || hsd_spans_push(pieces, 0, (uint32_t)n, -1))
        return HSD_ERR_NOMEM;
    hsd_status s = hsd_pre_apply(j->tok, pb, pieces, sc);
    for (size_t i = 0; !s && i < pieces->n; i++) {
        const unsigned char *p = (const unsigned char *)pb->p + pieces->p[i].off;
        if (j->byte_level)
            for (uint32_t q = 0; q < pieces->p[i].len; q++) push_utf8(out, hsd_bytelevel_cp[p[q]]);
        else
            hsd_buf_append(out, p, pieces->p[i].len);
        hsd_buf_push(out, (char)0xFF);
    }
    hsd_buf_append(out, "", 0);
    return s;
}

/* Canonical form as readable text: code points in hex, pieces separated by '|'. */
static void show(const hsd_buf *b, char *dst, size_t cap) {
    size_t w = 0;
    dst[0] = 0;
    for (size_t i = 0; i < b->n && w + 12 < cap;) {
        unsigned char c = (unsigned char)b->p[i];
        if (c == 0xFF) {
            w += (size_t)snprintf(dst + w, cap - w, "| ");
            i++;
            continue;
        }
        int k;
        uint32_t cp = hsd_utf8_decode((const unsigned char *)b->p + i, &k);
        w += (size_t)snprintf(dst + w, cap - w, "%X ", cp);
        i += (size_t)k;
    }
    if (!b->n) snprintf(dst, cap, "(nothing)");
}

static void report(job *j, uint32_t cp, int k, const hsd_buf *got, const hsd_buf *want) {
    atomic_fetch_add(&j->diffs, 1);
    const char *pm = getenv("HSD_UNICODE_PRINT"); /* more lines while debugging */
    if (atomic_fetch_add(&j->printed, 1) >= (pm ? atoi(pm) : PRINT_MAX)) return;
    char a[512], b[512];
    show(got, a, sizeof a);
    show(want, b, sizeof b);
    pthread_mutex_lock(&j->print_lock);
    if (j->is_rt)
        fprintf(stderr, "  %s U+%04X decode(encode(c)): hsd [%s] HF [%s]\n", j->name, cp, a, b);
    else
        fprintf(stderr, "  %s U+%04X context \"%s\": hsd [%s] HF [%s]\n", j->name, cp, j->ctx[k], a,
                b);
    pthread_mutex_unlock(&j->print_lock);
}

static uint32_t fnv(uint32_t h, uint32_t v) {
    for (int k = 0; k < 4; k++) {
        h ^= (v >> (8 * k)) & 0xFF;
        h *= 0x01000193u;
    }
    return h;
}

static void *worker(void *arg) {
    job *j = arg;
    hsd_scratch *sc = calloc(1, sizeof *sc);
    if (!sc) return NULL;
    sc->md = hsd_scratch_md_new();
    hsd_buf in = {0}, got = {0}, want = {0}, alone = {0}, pb = {0};
    hsd_spans pieces = {0};
    unsigned blk;
    while ((blk = atomic_fetch_add(&j->next_block, 1)) < N_BLOCKS) {
        uint32_t h = 0x811C9DC5u;
        for (uint32_t cp = blk << 10; cp < (blk + 1) << 10; cp++) {
            if (cp >= 0xD800 && cp <= 0xDFFF) continue;
            uint32_t tid = j->ref->tid[index_of(cp)];
            char u[4];
            int un = hsd_utf8_encode(cp, u);
            if (j->is_rt) {
                int32_t ids[64];
                size_t nid = 0;
                char *dec = NULL;
                size_t dl = 0;
                got.n = 0;
                if (hsd_tokenizer_encode(j->tok, u, (size_t)un, false, ids, 64, &nid) == HSD_OK &&
                    hsd_tokenizer_decode_alloc(j->tok, ids, nid, false, &dec, &dl) == HSD_OK)
                    hsd_buf_append(&got, dec, dl);
                else
                    nid = 0, hsd_buf_append(&got, "<error>", 7);
                hsd_free(dec);
                for (size_t i = 0; i < nid; i++) h = fnv(h, (uint32_t)ids[i]);
                h = fnv(h, 0xFFFFFFFFu);
                expand(j, tid, 0, cp, NULL, &want);
                if (got.n != want.n || memcmp(got.p, want.p, got.n)) report(j, cp, 0, &got, &want);
                continue;
            }
            for (int k = 0; k < j->n_ctx; k++) {
                in.n = 0;
                for (const char *q = j->ctx[k]; *q; q++)
                    if (*q == '%')
                        hsd_buf_append(&in, u, (size_t)un);
                    else
                        hsd_buf_push(&in, *q);
                if (run_hsd(j, sc, in.p, in.n, &pb, &pieces, &got) != HSD_OK) {
                    got.n = 0;
                    hsd_buf_append(&got, "<error>", 7);
                }
                expand(j, tid, k, cp, &alone, &want);
                if (k == 0) {
                    alone.n = 0;
                    hsd_buf_append(&alone, want.p, want.n);
                }
                if (got.n != want.n || memcmp(got.p, want.p, got.n)) report(j, cp, k, &got, &want);
            }
        }
        bool surrogates = blk == (0xD800 >> 10) || blk == (0xDC00 >> 10); /* no scalars */
        if (j->is_rt && !surrogates && h != j->ref->block_hash[blk]) {
            atomic_fetch_add(&j->diffs, 1);
            pthread_mutex_lock(&j->print_lock);
            fprintf(stderr, "  %s block U+%04X..U+%04X: the ids of encode(c) differ from HF's\n",
                    j->name, blk << 10, ((blk + 1) << 10) - 1);
            pthread_mutex_unlock(&j->print_lock);
        }
    }
    hsd_buf_free(&in), hsd_buf_free(&got), hsd_buf_free(&want), hsd_buf_free(&alone);
    hsd_buf_free(&pb);
    free(pieces.p);
    hsd_buf_free(&sc->a), hsd_buf_free(&sc->b), hsd_buf_free(&sc->c);
    free(sc->s1.p), free(sc->s2.p), free(sc->s3.p);
    hsd_scratch_md_free(sc->md);
    free(sc);
    return NULL;
}

static int n_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

static long run_job(job *j) {
    atomic_init(&j->next_block, 0);
    atomic_init(&j->diffs, 0);
    atomic_init(&j->printed, 0);
    pthread_mutex_init(&j->print_lock, NULL);
    int nt = n_threads();
    pthread_t th[16];
    for (int i = 0; i < nt; i++) assert_int_equal(pthread_create(&th[i], NULL, worker, j), 0);
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    pthread_mutex_destroy(&j->print_lock);
    return atomic_load(&j->diffs);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool spec_has_byte_level(json_t *spec) {
    if (!spec) return false;
    if (json_is_string(json_object_get(spec, "type")) &&
        !strcmp(json_string_value(json_object_get(spec, "type")), "ByteLevel"))
        return true;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "pretokenizers"), i,
                       v) if (spec_has_byte_level(v)) return true;
    return false;
}

/* A tokenizer.json holding only this normalizer or pre-tokenizer (and a one-token model). */
static hsd_status load_component(const char *kind, json_t *spec, hsd_tokenizer **tok) {
    json_t *root =
        json_pack("{s:s, s:[], s:n, s:n, s:n, s:n, s:{s:s, s:s, s:s, s:i, s:{s:i}}}", "version",
                  "1.0", "added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder",
                  "model", "type", "WordPiece", "unk_token", "[UNK]", "continuing_subword_prefix",
                  "##", "max_input_chars_per_word", 100, "vocab", "[UNK]", 0);
    json_object_set(root, kind, spec);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    hsd_status s = hsd_tokenizer_load_memory(text, strlen(text), HSD_TOKENIZER_HF_JSON, kind, tok);
    free(text);
    return s;
}

static void test_components(void **state) {
    (void)state;
    json_error_t jerr;
    json_t *conf = json_load_file(hsd_test_src_path("tests/unicode/components.json"), 0, &jerr);
    assert_non_null(conf);
    json_t *ctxs = json_object_get(conf, "contexts");
    long total = 0;
    int failed_loads = 0;
    double t_all = now_s();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(conf, "components"), i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *kind = json_string_value(json_object_get(c, "kind"));
        json_t *spec = json_object_get(c, "spec");
        if (!selected(name)) continue;
        job *j = calloc(1, sizeof *j);
        assert_non_null(j);
        j->name = name;
        j->is_norm = !strcmp(kind, "normalizer");
        j->byte_level = !j->is_norm && spec_has_byte_level(spec);
        j->n_ctx = (int)json_array_size(ctxs);
        assert_true(j->n_ctx <= MAX_CTX);
        for (int k = 0; k < j->n_ctx; k++) {
            const char *s = json_string_value(json_array_get(ctxs, (size_t)k));
            assert_true(s && strchr(s, '%') && strlen(s) < sizeof j->ctx[k]);
            snprintf(j->ctx[k], sizeof j->ctx[k], "%s", s);
        }
        if (load_component(kind, spec, &j->tok) != HSD_OK) {
            fprintf(stderr, "%-30s hsd cannot load it: %s\n", name, hsd_last_error());
            failed_loads++;
            free(j);
            continue;
        }
        ref_file ref;
        ref_load(name, &ref);
        assert_int_equal(ref.n_ctx, j->n_ctx);
        j->ref = &ref;
        double t0 = now_s();
        long d = run_job(j);
        fprintf(stderr, "%-30s %8ld differences  (%u code points x %d contexts, %.1f s)\n", name, d,
                N_SCALAR, j->n_ctx, now_s() - t0);
        total += d;
        ref_free(&ref);
        hsd_tokenizer_free(j->tok);
        free(j);
    }
    fprintf(stderr, "components: %ld differences, %d not loadable, %.1f s\n", total, failed_loads,
            now_s() - t_all);
    json_decref(conf);
    assert_int_equal(failed_loads, 0);
    assert_int_equal(total, 0);
}

/* The inputs of gen.js's LONG_INPUTS: runs far longer than any context above, which once
 * exhausted PCRE2's JIT stack in widened patterns. */
static void long_input(int k, hsd_buf *b) {
    b->n = 0;
    static const uint32_t run_cp[] = {'a', 0x11F04, 0x11F04, '1', ' ', 0x1C89};
    if (k == 2) hsd_buf_push(b, ' ');
    for (int i = 0; i < 30000; i++) hsd_buf_push_cp(b, run_cp[k]);
    if (k == 2) hsd_buf_push(b, '!');
    if (k == 4) hsd_buf_push(b, 'x');
}

/* tests/unicode/ref/long.txt: "<component> <input> <piece lengths in code points...>" */
static void test_long_runs(void **state) {
    (void)state;
    json_error_t jerr;
    json_t *conf = json_load_file(hsd_test_src_path("tests/unicode/components.json"), 0, &jerr);
    assert_non_null(conf);
    FILE *f = fopen(hsd_test_src_path("tests/unicode/ref/long.txt"), "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    int checked = 0, diffs = 0;
    hsd_scratch *sc = calloc(1, sizeof *sc);
    assert_non_null(sc);
    sc->md = hsd_scratch_md_new();
    hsd_buf in = {0}, pb = {0};
    hsd_spans pieces = {0};
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#') continue;
        char name[64];
        int k, off;
        assert_int_equal(sscanf(line, "%63s %d%n", name, &k, &off), 2);
        assert_true(k >= 0 && k < 6);
        json_t *spec = NULL, *c;
        size_t i;
        json_array_foreach(json_object_get(conf, "components"), i,
                           c) if (!strcmp(json_string_value(json_object_get(c, "name")), name))
            spec = json_object_get(c, "spec");
        assert_non_null(spec);
        hsd_tokenizer *tok = NULL;
        assert_int_equal(load_component("pre_tokenizer", spec, &tok), HSD_OK);
        long_input(k, &in);
        pb.n = 0;
        pieces.n = 0;
        hsd_buf_append(&pb, in.p, in.n);
        hsd_spans_push(&pieces, 0, (uint32_t)in.n, -1);
        sc->cont = false;
        assert_int_equal(hsd_pre_apply(tok, &pb, &pieces, sc), HSD_OK);
        char *p = line + off;
        int bad = 0;
        for (size_t q = 0; q < pieces.n && !bad; q++) {
            long want = strtol(p, &p, 10);
            long got = 0;
            for (uint32_t b = 0; b < pieces.p[q].len; b++)
                got += ((unsigned char)pb.p[pieces.p[q].off + b] & 0xC0) != 0x80;
            bad = want != got;
        }
        while (*p == ' ') p++;
        if (bad || (*p && *p != '\n')) {
            diffs++;
            fprintf(stderr, "  %s long input %d: hsd's pieces differ from HF's (%zu pieces)\n",
                    name, k, pieces.n);
        }
        checked++;
        hsd_tokenizer_free(tok);
    }
    fprintf(stderr, "long runs: %d checked, %d differ\n", checked, diffs);
    free(line);
    fclose(f);
    hsd_buf_free(&in), hsd_buf_free(&pb), free(pieces.p);
    hsd_buf_free(&sc->a), hsd_buf_free(&sc->b), hsd_buf_free(&sc->c);
    free(sc->s1.p), free(sc->s2.p), free(sc->s3.p);
    hsd_scratch_md_free(sc->md);
    free(sc);
    json_decref(conf);
    assert_true(checked > 0);
    assert_int_equal(diffs, 0);
}

static const char *families[] = {"claude",
                                 "deepseek_v3",
                                 "gemma3",
                                 "gpt2",
                                 "gpt4o",
                                 "gptoss",
                                 "llama2",
                                 "llama3",
                                 "llama3_1",
                                 "mistral",
                                 "qwen3",
                                 "synthetic_unigram",
                                 "synthetic_wordpiece"};

static void test_round_trip(void **state) {
    (void)state;
    long total = 0;
    double t_all = now_s();
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", families[f]);
        char sel[64];
        snprintf(sel, sizeof sel, "rt_%s", families[f]);
        if (!selected(sel)) continue;
        const char *path = hsd_test_path(rel);
        HSD_REQUIRE_FILE(path);
        job *j = calloc(1, sizeof *j);
        assert_non_null(j);
        char name[64];
        snprintf(name, sizeof name, "rt_%s", families[f]);
        j->name = name;
        j->is_rt = true;
        j->n_ctx = 1;
        assert_int_equal(hsd_tokenizer_load_file(path, &j->tok), HSD_OK);
        ref_file ref;
        ref_load(name, &ref);
        assert_true(ref.has_blocks);
        j->ref = &ref;
        double t0 = now_s();
        long d = run_job(j);
        fprintf(stderr, "%-30s %8ld differences  (%.1f s)\n", name, d, now_s() - t0);
        total += d;
        ref_free(&ref);
        hsd_tokenizer_free(j->tok);
        free(j);
    }
    fprintf(stderr, "round trip: %ld differences, %.1f s\n", total, now_s() - t_all);
    assert_int_equal(total, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_components),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_long_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

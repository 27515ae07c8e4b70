/* String-level rejection sampling (Alg 3) on toy vocabularies:
 *   - toy vocabularies with known distributions (the paper's 'a'/'aa' and
 *     'hello_'/'world'/'wo'/'rld'/'hello_world' examples): toy llama2.c tokenizers and Markov
 *     models through hsd_model_from_iface; the engine's first and first-two emitted tokens
 *     follow the target's exact law (chi-square, 20k samples, p > 1e-3) for every lookahead
 *     rule and for trees cut by top-k and a node budget; a deliberately wrong psi fails the
 *     same statistic (negative control); psi sums to the proposal mass;
 * The determination rule and the real TinyStories pair are in test_slrs_real.c. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/engine/first_token.h"
#include "lib/base/rng.h"
#include "lib/engine/sample.h"
#include "lib/engine/slrs_tree.h"
#include "lib/base/utf8.h"
#include "tests/testutil.h"
#include "tokenize/tokenizer.h"
#include "verify/slrs.h"

/* ------------------------------------------------------------ toy tokenizers ---- */

/* A llama2.c tokenizer.bin in memory: <unk>, BOS, EOS, then `pieces` with their scores
 * (score-driven BPE: a piece is built by merging two pieces, higher score first). */
static hsd_tokenizer *toy_tokenizer(const char *const *pieces, const float *scores, int n) {
    size_t cap = 4 + (size_t)(n + 3) * 64, off = 4;
    unsigned char *d = calloc(1, cap);
    const char *base[3] = {"<unk>", "\n<s>\n", "\n</s>\n"};
    int32_t maxlen = 0;
    for (int i = 0; i < n + 3; i++) {
        const char *s = i < 3 ? base[i] : pieces[i - 3];
        float sc = i < 3 ? 0.0f : scores[i - 3];
        int32_t len = (int32_t)strlen(s);
        if (len > maxlen) maxlen = len;
        memcpy(d + off, &sc, 4);
        memcpy(d + off + 4, &len, 4);
        memcpy(d + off + 8, s, (size_t)len);
        off += 8 + (size_t)len;
    }
    memcpy(d, &maxlen, 4);
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_memory(d, off, HSD_TOKENIZER_LLAMA2C, "toy", &t), HSD_OK);
    free(d);
    return t;
}

/* ------------------------------------------------------------ toy Markov models ---- */

/* The next-token law depends on the last token only: logp[prev * V + next]. Tree forwards
 * need nothing else: a row's last token is the row's own token. */
typedef struct toy_lm {
    int32_t V, kv, n_ctx;
    float *logp;
} toy_lm;

static int32_t toy_vocab(void *c) {
    return ((toy_lm *)c)->V;
}
static int32_t toy_ctx(void *c) {
    return ((toy_lm *)c)->n_ctx;
}
static int32_t toy_kv_len(void *c) {
    return ((toy_lm *)c)->kv;
}
static hsd_status toy_truncate(void *c, int32_t len) {
    toy_lm *m = c;
    if (len < 0 || len > m->kv) return HSD_ERR_INVALID_ARG;
    m->kv = len;
    return HSD_OK;
}
static hsd_status toy_forward(void *c, const int32_t *tok, int32_t n, const int32_t *parents,
                              const int32_t *rows, int32_t n_rows, float *logits) {
    toy_lm *m = c;
    (void)parents;
    if (m->kv + n > m->n_ctx) return HSD_ERR_INVALID_ARG;
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t i = rows ? rows[r] : r;
        assert_true(i >= 0 && i < n && tok[i] >= 0 && tok[i] < m->V);
        memcpy(logits + (size_t)r * m->V, m->logp + (size_t)tok[i] * m->V,
               (size_t)m->V * sizeof(float));
    }
    m->kv += n;
    return HSD_OK;
}
static void toy_free(void *c) {
    toy_lm *m = c;
    free(m->logp);
    free(m);
}

/* weights(prev, next) >= 0 over the model's ids; rows are normalised into log-probs */
typedef double (*weight_fn)(const hsd_tokenizer *tok, int32_t prev, int32_t next);

static hsd_model *toy_model_ctx(const hsd_tokenizer *tok, weight_fn w, int32_t n_ctx) {
    toy_lm *m = calloc(1, sizeof *m);
    m->V = hsd_tokenizer_vocab_size(tok);
    m->n_ctx = n_ctx;
    m->logp = malloc((size_t)m->V * m->V * sizeof *m->logp);
    for (int32_t a = 0; a < m->V; a++) {
        double tot = 0;
        for (int32_t b = 0; b < m->V; b++) tot += w(tok, a, b);
        for (int32_t b = 0; b < m->V; b++) {
            double x = w(tok, a, b);
            m->logp[(size_t)a * m->V + b] = x > 0 ? (float)log(x / tot) : -1e30f;
        }
    }
    hsd_model_iface it = {HSD_MODEL_IFACE_INIT, .ctx = m,
                          .vocab_size = toy_vocab,
                          .n_ctx = toy_ctx,
                          .forward = toy_forward,
                          .kv_len = toy_kv_len,
                          .kv_truncate = toy_truncate,
                          .free = toy_free};
    hsd_model *out = NULL;
    assert_int_equal(hsd_model_from_iface(&it, &out), HSD_OK);
    return out;
}

static hsd_model *toy_model(const hsd_tokenizer *tok, weight_fn w) {
    return toy_model_ctx(tok, w, 4096);
}

/* exact law of the next token after `prev` */
static double toy_p(weight_fn w, const hsd_tokenizer *tok, int32_t prev, int32_t next) {
    double tot = 0;
    for (int32_t b = 0; b < hsd_tokenizer_vocab_size(tok); b++) tot += w(tok, prev, b);
    return w(tok, prev, next) / tot;
}

static int32_t id_of(const hsd_tokenizer *t, const char *s) {
    int32_t id = hsd_tokenizer_token_to_id(t, s);
    assert_true(id >= 0);
    return id;
}

/* weights from a (string, weight) table, modulated by the previous id so that deeper tree
 * nodes and the second token see different laws */
typedef struct {
    const char *s;
    double w;
} sw;

static double table_weight(const hsd_tokenizer *tok, int32_t prev, int32_t next, const sw *tab) {
    const char *s = hsd_tokenizer_id_to_token(tok, next);
    for (int i = 0; s && tab[i].s; i++)
        if (!strcmp(tab[i].s, s)) return tab[i].w * (1 + (prev * 7 + next * 3) % 4);
    return 0;
}

/* The paper's block-verification example: T = {a, b}, D = {a, b, aa}. */
static const sw AB_T[] = {{"a", 3}, {"b", 2}, {"\n</s>\n", 0.5}, {" ", 0.2}, {NULL, 0}};
static const sw AB_D[] = {{"a", 2}, {"aa", 3}, {"b", 1.5}, {"\n</s>\n", 0.4}, {NULL, 0}};
static double ab_t(const hsd_tokenizer *t, int32_t a, int32_t b) {
    return table_weight(t, a, b, AB_T);
}
static double ab_d(const hsd_tokenizer *t, int32_t a, int32_t b) {
    return table_weight(t, a, b, AB_D);
}

/* The paper's 'hello_world' example: D = {hello_, world, wo, rld}, T = D ∪ {hello_world}. The
 * toy vocabularies also hold the characters and the pieces BPE builds them from. */
static const char *HW_PIECES[] = {" ",  "h",   "e",    "l",     "o",    "_",     "w",
                                  "r",  "d",   "he",   "hel",   "hell", "hello", "hello_",
                                  "wo", "wor", "worl", "world", "rl",   "rld",   "hello_world"};
static const float HW_SCORES[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 9, 8, 7, 6, 10, 9, 8, 7, 5, 4, 3};
static const sw HW_T[] = {{"hello_world", 3}, {"hello_", 2},     {"world", 1.5},
                          {"wo", 1},          {"rld", 1},        {"he", 0.5},
                          {"d", 0.3},         {"\n</s>\n", 0.4}, {NULL, 0}};
static const sw HW_D[] = {{"hello_", 3}, {"world", 2},      {"wo", 1.5},
                          {"rld", 1},    {"\n</s>\n", 0.3}, {NULL, 0}};
static double hw_t(const hsd_tokenizer *t, int32_t a, int32_t b) {
    return table_weight(t, a, b, HW_T);
}
static double hw_d(const hsd_tokenizer *t, int32_t a, int32_t b) {
    return table_weight(t, a, b, HW_D);
}

typedef struct toy_pair {
    hsd_tokenizer *tt, *dt;
    weight_fn wt, wd;
} toy_pair;

static toy_pair make_ab(void) {
    const char *tp[] = {" ", "a", "b"}, *dp[] = {" ", "a", "b", "aa"};
    const float ts[] = {0, 0, 0}, ds[] = {0, 0, 0, 1};
    return (toy_pair){toy_tokenizer(tp, ts, 3), toy_tokenizer(dp, ds, 4), ab_t, ab_d};
}

static toy_pair make_hw(void) {
    return (toy_pair){toy_tokenizer(HW_PIECES, HW_SCORES, 21),
                      toy_tokenizer(HW_PIECES, HW_SCORES, 20), hw_t, hw_d};
}

static void free_pair(toy_pair *p) {
    hsd_tokenizer_free(p->tt);
    hsd_tokenizer_free(p->dt);
}

static void test_toy_tokenizers(void **state) {
    (void)state;
    toy_pair hw = make_hw();
    int32_t ids[8];
    size_t n;
    /* T("hello_" ⊕ "wo" ⊕ "rld") = (hello_world): the target builds the long token */
    assert_int_equal(hsd_tokenizer_encode(hw.tt, "hello_world", 11, false, ids, 8, &n), HSD_OK);
    assert_int_equal(n, 2); /* dummy-prefix space + hello_world */
    assert_int_equal(ids[1], id_of(hw.tt, "hello_world"));
    assert_int_equal(hsd_tokenizer_encode(hw.dt, "hello_world", 11, false, ids, 8, &n), HSD_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[1], id_of(hw.dt, "hello_"));
    assert_int_equal(ids[2], id_of(hw.dt, "world"));
    /* cuts: none inside hello_world (every pair is in a reachable token), one before the next
     * word */
    hsd_first_token ft;
    assert_int_equal(hsd_first_token_init(&ft, hw.tt), HSD_OK);
    assert_true(ft.has_rule);
    assert_int_equal(hsd_first_token_cut(&ft, "hello_world", 11, NULL), 0);
    assert_int_equal(hsd_first_token_cut(&ft, "hello_worldhello_", 17, NULL), 11);
    assert_int_equal(hsd_first_token_cut(&ft, "wowo", 4, NULL), 2);
    hsd_first_token_free(&ft);
    free_pair(&hw);
}

/* ------------------------------------------------------------ engine on toy pairs ---- */

typedef struct slrs_cfg {
    int k, top_k, nodes, rule;
    float top_p;
    const char *label;
    int target_ctx; /* 0: roomy; else the target's KV capacity (cuts the candidate list) */
    bool single;    /* one drafter forward for the whole tree (vocabulary-chosen shape) */
} slrs_cfg;

/* 20k generations of n_new (1 or 2) tokens; chi-square of the outcomes against the target's
 * exact law. Returns the p-value. */
static double engine_chi2(toy_pair *tp, const char *prompt, const slrs_cfg *c, int n_new,
                          double *tree_nodes) {
    hsd_model *mt = toy_model_ctx(tp->tt, tp->wt, c->target_ctx ? c->target_ctx : 4096);
    hsd_model *md = toy_model(tp->dt, tp->wd);
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(mt, tp->tt, md, tp->dt, &e), HSD_OK);
    int32_t V = hsd_tokenizer_vocab_size(tp->tt), eos = hsd_tokenizer_eos_id(tp->tt);
    int cells = V * V;
    long *obs = calloc((size_t)cells, sizeof *obs);
    double *law = calloc((size_t)cells, sizeof *law);
    /* the target's context ends with the prompt's last token */
    int32_t *pids;
    size_t np;
    assert_int_equal(hsd_tokenizer_encode_alloc(tp->tt, prompt, strlen(prompt), false, &pids, &np),
                     HSD_OK);
    int32_t last = pids[np - 1];
    hsd_free(pids);
    for (int32_t a = 0; a < V; a++) {
        double pa = toy_p(tp->wt, tp->tt, last, a);
        if (pa <= 0) continue;
        if (n_new == 1 || a == eos)
            law[a * V + (n_new == 1 ? 0 : eos)] += pa;
        else
            for (int32_t b = 0; b < V; b++) law[a * V + b] += pa * toy_p(tp->wt, tp->tt, a, b);
    }
    const long N = 20000;
    double nodes = 0;
    for (long s = 0; s < N; s++) {
        hsd_gen_params p = hsd_gen_default_params();
        p.algo = HSD_ALGO_SLRS;
        p.temp = 1.0f;
        p.seed = 77 + (uint64_t)s;
        p.max_new_tokens = n_new;
        p.n_draft = c->k;
        p.slrs_top_k = c->top_k;
        p.slrs_top_p = c->top_p;
        p.slrs_max_nodes = c->nodes;
        p.slrs_lookahead = c->rule;
        p.slrs_single_forward = c->single;
        hsd_gen_result r = HSD_GEN_RESULT_INIT;
        hsd_status st = hsd_engine_generate(e, prompt, strlen(prompt), &p, &r);
        if (st) fprintf(stderr, "%s\n", hsd_last_error());
        assert_int_equal(st, HSD_OK);
        if (c->single) assert_true(r.slrs->tree_forwards <= 2.0); /* the root feed + one tree forward */
        int32_t a = r.n_ids > 0 ? r.ids[0] : eos;
        int32_t b = n_new == 1 ? 0 : r.n_ids > 1 ? r.ids[1] : eos;
        obs[a * V + b]++;
        nodes += r.slrs->tree_nodes;
        hsd_gen_result_free(&r);
    }
    int df;
    double chi2 = hsd_test_chi2(obs, law, cells, N, &df), pv = hsd_test_chi2_pvalue(chi2, df);
    printf("  %-34s %d token(s): chi2 %7.1f, df %3d, p = %.4f, %.1f tree nodes/round\n", c->label,
           n_new, chi2, df, pv, nodes / N);
    if (tree_nodes) *tree_nodes = nodes / N;
    free(obs);
    free(law);
    hsd_engine_free(e);
    hsd_model_free(mt);
    hsd_model_free(md);
    return pv;
}

static const slrs_cfg CFGS[] = {
    {6, 0, 64, 0, 1.0f, "full proposal, stop when determined", 0, false},
    {3, 0, 64, 1, 1.0f, "full proposal, fixed n = 3", 0, false},
    {8, 0, 64, 2, 1.0f, "full proposal, n_max", 0, false},
    {5, 2, 3, 0, 1.0f, "top-2, budget 3 nodes", 0, false},
    {4, 3, 64, 0, 0.7f, "top-3 then top-p 0.7", 0, false},
    {6, 0, 64, 0, 1.0f, "one forward, stop when determined", 0, true},
    {5, 2, 4, 1, 1.0f, "one forward, top-2, 4 nodes, fixed n", 0, true},
};

static void test_toy_ab_lossless(void **state) {
    (void)state;
    toy_pair ab = make_ab();
    printf("T = {a, b}, D = {a, b, aa}:\n");
    for (size_t i = 0; i < sizeof CFGS / sizeof *CFGS; i++)
        for (int n = 1; n <= 2; n++) assert_true(engine_chi2(&ab, "ab", &CFGS[i], n, NULL) > 1e-3);
    /* the target's context leaves room for 2 candidates in the first round while fixed-depth
     * leaves carry up to 5: the position after the cut is drawn from p itself */
    const slrs_cfg capped = {3, 0, 64, 1, 1.0f, "fixed n = 3, 2 candidates of room", 7, false};
    assert_true(engine_chi2(&ab, "ab", &capped, 2, NULL) > 1e-3);
    free_pair(&ab);
}

static void test_toy_hello_world_lossless(void **state) {
    (void)state;
    toy_pair hw = make_hw();
    printf("D = {hello_, world, wo, rld}, T = D + {hello_world}:\n");
    double nodes_full = 0, nodes_cut = 0;
    for (size_t i = 0; i < sizeof CFGS / sizeof *CFGS; i++)
        for (int n = 1; n <= 2; n++)
            assert_true(engine_chi2(&hw, "hello_", &CFGS[i], n,
                                    i == 0   ? &nodes_full
                                    : i == 3 ? &nodes_cut
                                             : NULL) > 1e-3);
    /* the budget really cut the tree (so the truncated proposal was exercised) */
    assert_true(nodes_cut < nodes_full);
    free_pair(&hw);
}

/* ------------------------------------------------------------ tree and psi directly ---- */

/* The sparse proposal: both selection paths (insertion for small k, heap sort for large k)
 * keep the same entries in the same order (probability, then id), and top-p keeps the
 * smallest prefix reaching p. */
static void test_sparsify(void **state) {
    (void)state;
    enum { V = 300 };
    float q[V], w1[V], w2[V];
    int32_t t1[V], t2[V];
    hsd_rng r;
    hsd_rng_init(&r, 3, 0);
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < V; i++)
            q[i] = (float)(hsd_rng_u32(&r) % 17) / 17.0f; /* many ties, zeros */
        int32_t n1 = hsd_slrs_sparsify(q, V, 20, 1.0f, t1, w1);
        int32_t n2 = hsd_slrs_sparsify(q, V, 0, 1.0f, t2, w2);
        assert_int_equal(n1, 20);
        assert_true(n2 > 200); /* every positive entry */
        for (int j = 0; j < n2; j++) {
            assert_true(q[t2[j]] > 0 && w2[j] == q[t2[j]]);
            if (j) assert_true(w2[j - 1] > w2[j] || (w2[j - 1] == w2[j] && t2[j - 1] < t2[j]));
            if (j < n1) assert_int_equal(t1[j], t2[j]);
        }
        double total = 0, acc = 0;
        for (int i = 0; i < V; i++) total += q[i];
        int32_t n3 = hsd_slrs_sparsify(q, V, 0, 0.5f, t2, w2);
        for (int j = 0; j < n3; j++) acc += w2[j];
        assert_true(acc >= 0.5 * total && acc - w2[n3 - 1] < 0.5 * total);
    }
}

/* Builds the full tree for the hello_world pair from the toy drafter's table (no model). */
static void build_hw_tree(hsd_slrs_tree *tr, toy_pair *hw, hsd_first_token *ft, int rule, int k) {
    assert_int_equal(hsd_slrs_tree_reset(tr, hw->dt, ft, (hsd_slrs_rule)rule, k, 1000), HSD_OK);
    int32_t VD = hsd_tokenizer_vocab_size(hw->dt);
    int32_t *toks = malloc((size_t)VD * sizeof *toks);
    float *w = malloc((size_t)VD * sizeof *w);
    int32_t root_prev = id_of(hw->dt, "hello_");
    for (int32_t i = 0; i < tr->n_nodes; i++) {
        if (tr->nodes[i].state != HSD_SLRS_FRONTIER) continue;
        int32_t prev = i == 0 ? root_prev : tr->nodes[i].tok, n = 0;
        for (int32_t b = 0; b < VD; b++)
            if (hw_d(hw->dt, prev, b) > 0) toks[n] = b, w[n++] = (float)hw_d(hw->dt, prev, b);
        assert_int_equal(hsd_slrs_tree_expand(tr, i, toks, w, n), HSD_OK);
    }
    assert_int_equal(hsd_slrs_tree_close(tr), HSD_OK);
    free(toks);
    free(w);
}

static void test_psi_sums_to_proposal_mass(void **state) {
    (void)state;
    toy_pair hw = make_hw();
    hsd_first_token ft;
    assert_int_equal(hsd_first_token_init(&ft, hw.tt), HSD_OK);
    int32_t VT = hsd_tokenizer_vocab_size(hw.tt);
    float *psi = malloc((size_t)VT * sizeof *psi);
    for (int rule = 0; rule < 3; rule++) {
        hsd_slrs_tree tr = {0};
        build_hw_tree(&tr, &hw, &ft, rule, rule == 1 ? 2 : 6);
        double none, sum = 0, leaves = 0;
        assert_int_equal(hsd_slrs_tree_psi(&tr, NULL, 0, psi, VT, &none), HSD_OK);
        for (int32_t t = 0; t < VT; t++) sum += psi[t];
        for (int32_t i = 0; i < tr.n_nodes; i++)
            if (tr.nodes[i].state == HSD_SLRS_LEAF) leaves += tr.nodes[i].prob;
        assert_true(fabs(leaves - 1) < 1e-9); /* the leaves carry the whole proposal */
        assert_true(fabs(sum + none - 1) < 1e-5);
        if (rule == 0) {
            /* stop-when-determined with enough depth: every branch determined, nothing lost
             * to "none" except drafter EOS (mapped to the target's EOS, a real token) */
            assert_true(none < 1e-9);
            assert_true(fabs(sum - 1) < 1e-5);
            /* 'hello_world' is reachable only through hello_ ⊕ world and hello_ ⊕ wo ⊕ rld */
            int32_t hwid = id_of(hw.tt, "hello_world");
            assert_true(psi[hwid] > 0);
            /* and hello_ as a first token needs hello_ then a non-'w' continuation */
            assert_true(psi[id_of(hw.tt, "hello_")] > 0);
        }
        /* conditional psi of position 1 given position 0 also sums to 1 with "none" */
        int32_t leaf = 0;
        for (int32_t i = 0; i < tr.n_nodes; i++)
            if (tr.nodes[i].state == HSD_SLRS_LEAF && tr.nodes[i].n_cand > 0) leaf = i;
        int32_t c0 = tr.cands.p[tr.nodes[leaf].cand_off];
        assert_int_equal(hsd_slrs_tree_psi(&tr, &c0, 1, psi, VT, &none), HSD_OK);
        sum = 0;
        for (int32_t t = 0; t < VT; t++) sum += psi[t];
        assert_true(fabs(sum + none - 1) < 1e-5);
        hsd_slrs_tree_free(&tr);
    }
    free(psi);
    hsd_first_token_free(&ft);
    free_pair(&hw);
}

/* Alg 3 by itself on the hello_world tree: the exact psi gives the target's law; a psi that
 * ignores how draft tokens compose (the law of the first draft token's own bytes) does not. */
static void test_verify_negative_control(void **state) {
    (void)state;
    toy_pair hw = make_hw();
    hsd_first_token ft;
    assert_int_equal(hsd_first_token_init(&ft, hw.tt), HSD_OK);
    hsd_slrs_tree tr = {0};
    build_hw_tree(&tr, &hw, &ft, 0, 6);
    int32_t VT = hsd_tokenizer_vocab_size(hw.tt), prev = id_of(hw.tt, "hello_");
    float *p = malloc((size_t)VT * sizeof *p), *psi = malloc((size_t)VT * sizeof *psi),
          *wrong = calloc((size_t)VT, sizeof *wrong),
          *scratch = malloc((size_t)VT * sizeof *scratch);
    double *law = malloc((size_t)VT * sizeof *law);
    for (int32_t t = 0; t < VT; t++) law[t] = p[t] = (float)toy_p(hw_t, hw.tt, prev, t);
    assert_int_equal(hsd_slrs_tree_psi(&tr, NULL, 0, psi, VT, NULL), HSD_OK);
    /* wrong psi: each root child's q on the target token with the same bytes */
    const hsd_slrs_node *root = &tr.nodes[0];
    for (int32_t c = 0; c < root->n_child; c++) {
        const hsd_slrs_node *ch = &tr.nodes[root->child0 + c];
        const char *s = hsd_tokenizer_id_to_token(hw.dt, ch->tok);
        int32_t t = hsd_tokenizer_token_to_id(hw.tt, s);
        if (t >= 0) wrong[t] += (float)ch->q;
    }
    const long N = 20000;
    long *obs = calloc((size_t)VT, sizeof *obs), *obs_wrong = calloc((size_t)VT, sizeof *obs_wrong);
    hsd_rng rd, rv;
    hsd_rng_init(&rd, 5, 1);
    hsd_rng_init(&rv, 5, 2);
    for (long s = 0; s < N; s++) {
        int32_t leaf = hsd_slrs_tree_sample(&tr, &rd);
        const hsd_slrs_node *lf = &tr.nodes[leaf];
        int32_t t = lf->n_cand ? tr.cands.p[lf->cand_off] : -1;
        bool ok;
        obs[hsd_verify_slrs(p, psi, VT, t, false, &rv, scratch, &ok)]++;
        obs_wrong[hsd_verify_slrs(p, wrong, VT, t, false, &rv, scratch, &ok)]++;
    }
    int df, dfw;
    double chi = hsd_test_chi2(obs, law, VT, N, &df), pv = hsd_test_chi2_pvalue(chi, df);
    double chiw = hsd_test_chi2(obs_wrong, law, VT, N, &dfw), pvw = hsd_test_chi2_pvalue(chiw, dfw);
    printf("exact psi: p = %.4f (df %d); psi ignoring composition: p = %.3g (df %d)\n", pv, df, pvw,
           dfw);
    assert_true(pv > 1e-3);
    assert_true(pvw < 1e-3);
    /* Thm 3.1 on this example: SLRS accepts at least what exact matching accepts */
    double em, a = hsd_verify_slrs_expected(p, psi, VT, &em);
    printf("expected acceptance: SLRS %.4f, exact matching %.4f\n", a, em);
    assert_true(a >= em);
    free(p), free(psi), free(wrong), free(scratch), free(law), free(obs), free(obs_wrong);
    hsd_slrs_tree_free(&tr);
    hsd_first_token_free(&ft);
    free_pair(&hw);
}

static void test_api(void **state) {
    (void)state;
    assert_string_equal(hsd_algo_name(HSD_ALGO_SLRS), "slrs");
    assert_int_equal(hsd_algo_parse("slrs"), HSD_ALGO_SLRS);
    assert_int_equal(hsd_algo_parse("auto"), HSD_ALGO_AUTO);
    toy_pair ab = make_ab();
    hsd_model *mt = toy_model(ab.tt, ab.wt);
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(mt, ab.tt, NULL, NULL, &e), HSD_OK);
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = HSD_ALGO_SLRS;
    hsd_gen_result r = HSD_GEN_RESULT_INIT;
    assert_int_equal(hsd_engine_generate(e, "a", 1, &p, &r), HSD_ERR_INVALID_ARG); /* no drafter */
    hsd_engine_free(e);
    hsd_model *md = toy_model(ab.dt, ab.wd);
    assert_int_equal(hsd_engine_init(mt, ab.tt, md, ab.dt, &e), HSD_OK);
    p.slrs_lookahead = 7;
    assert_int_equal(hsd_engine_generate(e, "a", 1, &p, &r), HSD_ERR_INVALID_ARG);
    /* greedy on the toy pair equals AR */
    p = hsd_gen_default_params();
    p.max_new_tokens = 12;
    p.stop_at_eos = false;
    p.algo = HSD_ALGO_AR;
    hsd_gen_result ar = HSD_GEN_RESULT_INIT;
    assert_int_equal(hsd_engine_generate(e, "ab", 2, &p, &ar), HSD_OK);
    p.algo = HSD_ALGO_SLRS;
    assert_int_equal(hsd_engine_generate(e, "ab", 2, &p, &r), HSD_OK);
    assert_int_equal(ar.n_ids, r.n_ids);
    assert_memory_equal(ar.ids, r.ids, (size_t)ar.n_ids * sizeof(int32_t));
    hsd_gen_result_free(&ar), hsd_gen_result_free(&r);
    hsd_engine_free(e);
    hsd_model_free(mt), hsd_model_free(md);
    free_pair(&ab);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_toy_tokenizers),
        cmocka_unit_test(test_sparsify),
        cmocka_unit_test(test_psi_sums_to_proposal_mass),
        cmocka_unit_test(test_verify_negative_control),
        cmocka_unit_test(test_toy_ab_lossless),
        cmocka_unit_test(test_toy_hello_world_lossless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Shared helpers for the cmocka tests: locating ../shared and reading files. */
#ifndef HSD_TESTUTIL_H
#define HSD_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hsd.h"

/* Directory of the shared data: $HSD_SHARED, else the build's default (../shared). */
const char *hsd_test_shared(void);
/* Full path of a file under the shared directory (static buffer, rotated over 8 slots). */
const char *hsd_test_path(const char *rel);
/* Returns 1 if `path` exists; otherwise prints why the caller is skipping and returns 0. */
int hsd_test_require(const char *path);
/* Reads a whole file (NUL-terminated); NULL if unreadable. Caller frees. */
char *hsd_test_read_file(const char *path, size_t *len);

/* Path of a file in the source tree ($HSD_SOURCE_DIR/rel). */
const char *hsd_test_src_path(const char *rel);
/* Upper tail P(X >= chi2) of the chi-square distribution with df degrees of freedom. */
double hsd_test_chi2_pvalue(double chi2, int df);
/* Pearson chi-square of observed counts against expected probabilities over n cells, pooling
 * cells whose expected count is below 5 into one; *df receives the degrees of freedom. */
double hsd_test_chi2(const long *observed, const double *prob, int n, long total, int *df);

/* The text of `p` from its last `clip` characters, moved forward to a word start (malloc'd). */
char *hsd_test_clip_prompt(const char *p, size_t clip);
/* Reads the "prompt" fields of bench/prompts/{summarization,code,long_context}.jsonl, each
 * clipped to its last `clip` characters at a word start (the character-level babyllama's
 * context is 256), into out[0..cap); returns the count. A missing file is reported on
 * stderr. The caller frees each prompt. */
int hsd_test_bench_prompts(char **out, int cap, size_t clip);

/* A model and its tokenizer from the shared data. */
typedef struct hsd_test_lm {
    hsd_model *m;
    hsd_tokenizer *t;
} hsd_test_lm;
/* Loads both (1 thread, n_seq sequence slots); -1 with the reason printed when a file is
 * missing or does not load. */
int hsd_test_load_lm(hsd_test_lm *x, const char *model, const char *tok, int32_t n_seq);

/* The hsd CLI under test ($HSD_CLI, else ./hsd). */
const char *hsd_test_cli(void);
/* Runs a shell command, asserts exit status 0, returns its stdout (caller frees). */
char *hsd_test_run(const char *cmd);

/* Names of the functions declared in include/hsd.h (comments and preprocessor lines left
 * out), in header order, without duplicates. Returns the count; *names is a malloc'd array of
 * malloc'd strings (free with hsd_test_free_names). Used by the API tests so that a function
 * added to the header without a test row or an export fails a test. */
size_t hsd_test_header_functions(char ***names);
void hsd_test_free_names(char **names, size_t n);

/* Skips the current cmocka test with a printed reason when a shared file is missing. */
#define HSD_REQUIRE_FILE(p)                                                                        \
    do {                                                                                           \
        if (!hsd_test_require(p)) {                                                                \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* A per-test-file temporary directory under $TMPDIR (default /tmp): create it in a cmocka
 * group setup, remove it (recursively) in the teardown; hsd_test_tmp names a file in it (four
 * rotating buffers, so up to four names can be live at once). */
int hsd_test_tmpdir_setup(const char *prefix);
int hsd_test_tmpdir_teardown(void);
const char *hsd_test_tmp(const char *name);

/* The exact law of the first generated token (the oracle of the chi-squared tests): softmax
 * at temperature 1 of the model's logits after BOS + the prompt, in float64 (law[V]). */
void hsd_test_first_token_law(hsd_model *m, const hsd_tokenizer *t, const char *prompt,
                              double *law);

#endif

/* The hsd CLI's command lines (issue 14): every subcommand rejects an unknown flag and a bad
 * value with exit status 2 and a message naming the flag, instead of ignoring it; --help
 * exits 0 with the usage on stdout; `hsd help-flags` lists every subcommand. The list of
 * subcommands here is written out by hand (the oracle), so a subcommand that drops out of
 * the registry fails too. Needs only the binary ($HSD_CLI), no models. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil.h"

static const char *const subcommands[] = {
    "tokenize",       "detokenize",    "generate",       "synth",
    "pair",           "psi-stats",     "injectivity",    "trim",
    "bench tokenize", "bench forward", "bench generate", "bench bridge",
    "bench head",     "bench heads",   "inflate",        "bench bandwidth",
};
#define N_SUB ((int)(sizeof subcommands / sizeof subcommands[0]))

/* Runs `hsd ARGS`; returns the exit status, *err gets stderr (caller frees), *out stdout. */
static int run_cli(const char *args, char **out, char **err) {
    char errpath[] = "/tmp/hsd_cli_flags_XXXXXX";
    int fd = mkstemp(errpath);
    assert_true(fd >= 0);
    close(fd);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>%s", hsd_test_cli(), args, errpath);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    assert_non_null(buf);
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (n + 1 == cap) assert_non_null(buf = realloc(buf, cap *= 2));
    }
    buf[n] = 0;
    int st = pclose(p);
    *out = buf;
    *err = hsd_test_read_file(errpath, NULL);
    assert_non_null(*err);
    unlink(errpath);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `hsd SUB ARGS` exits 2 and says `want` (the flag) on stderr. */
static void expect_rejected(const char *sub, const char *args, const char *want) {
    char line[512], *out, *err;
    snprintf(line, sizeof line, "%s %s", sub, args);
    int rc = run_cli(line, &out, &err);
    if (rc != 2 || !strstr(err, want))
        fprintf(stderr, "hsd %s: exit %d, stderr: %s(wanted exit 2 naming %s)\n", line, rc, err,
                want);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, want));
    free(out), free(err);
}

static void test_unknown_flag_every_subcommand(void **state) {
    (void)state;
    for (int i = 0; i < N_SUB; i++) {
        expect_rejected(subcommands[i], "--no-such-flag", "--no-such-flag");
        /* also with an attached value, and the single-dash form */
        expect_rejected(subcommands[i], "--no-such-flag=3", "--no-such-flag");
        expect_rejected(subcommands[i], "-Z", "-Z");
    }
}

static void test_help_every_subcommand(void **state) {
    (void)state;
    for (int i = 0; i < N_SUB; i++) {
        char line[256], want[256], *out, *err;
        snprintf(line, sizeof line, "%s --help", subcommands[i]);
        snprintf(want, sizeof want, "usage: hsd %s ", subcommands[i]);
        assert_int_equal(run_cli(line, &out, &err), 0);
        if (!strstr(out, want)) fprintf(stderr, "hsd %s printed: %s\n", line, out);
        assert_non_null(strstr(out, want));
        free(out), free(err);
    }
}

static void test_bad_values(void **state) {
    (void)state;
    expect_rejected("generate", "-m M -t T -p x -n abc", "-n");
    expect_rejected("generate", "-m M -t T -p x -n 0", "-n");  /* below 1 */
    expect_rejected("generate", "-m M -t T -p x -k 64", "-k"); /* 1..63 */
    expect_rejected("generate", "-m M -t T -p x --temp warm", "--temp");
    expect_rejected("generate", "-m M -t T -p x --algo fastest", "--algo");
    expect_rejected("generate", "-m M -t T -p x --seed -3", "--seed");
    expect_rejected("generate", "-m M -t T -p x --lookahead far", "--lookahead");
    expect_rejected("generate", "-m M -t T -p x --backend tpu", "--backend");
    expect_rejected("generate", "-m M -t T -p", "-p"); /* value missing */
    expect_rejected("generate", "-m M -t T -p x --json=1", "--json");
    expect_rejected("synth", "--shape tiny --format gguf -o /nonexistent --dtype q3", "--dtype");
    expect_rejected("bench forward", "--model M --n 1,x", "--n");
    expect_rejected("bench forward", "--model M --batch 65", "--batch");
    expect_rejected("bench generate",
                    "--target a --target-tokenizer b --draft c "
                    "--draft-tokenizer d --algos ar,nope",
                    "--algos");
    expect_rejected("bench generate",
                    "--target a --target-tokenizer b --draft c "
                    "--draft-tokenizer d --temps 0,hot",
                    "--temps");
    expect_rejected("trim", "-t T --corpus C --alpha 2 --min-coverage 0.5 --hidden-dim 8",
                    "--alpha");
    expect_rejected("psi-stats", "-T a -D b --shortest 0", "--shortest");
    expect_rejected("injectivity", "-t a --fuzz soon", "--fuzz");
    expect_rejected("detokenize", "-t T 1 two 3", "two");
    expect_rejected("tokenize", "-t T one two", "two"); /* one TEXT only */
    /* required options missing: exit 2, naming them */
    expect_rejected("generate", "-p x", "--target");
    expect_rejected("bench heads", "--target a", "--draft");
}

static void test_unknown_commands(void **state) {
    (void)state;
    char *out, *err;
    assert_int_equal(run_cli("frobnicate", &out, &err), 2);
    assert_non_null(strstr(err, "frobnicate"));
    free(out), free(err);
    assert_int_equal(run_cli("bench frobnicate", &out, &err), 2);
    assert_non_null(strstr(err, "frobnicate"));
    free(out), free(err);
}

/* help-flags: one "COMMAND<TAB>FLAG" line per flag, every subcommand present. */
static void test_help_flags_lists_every_subcommand(void **state) {
    (void)state;
    char *out, *err;
    assert_int_equal(run_cli("help-flags", &out, &err), 0);
    for (int i = 0; i < N_SUB; i++) {
        char want[128];
        snprintf(want, sizeof want, "%s\t-", subcommands[i]);
        if (!strstr(out, want)) fprintf(stderr, "help-flags lacks %s\n", subcommands[i]);
        assert_non_null(strstr(out, want));
    }
    assert_non_null(strstr(out, "generate\t--target\tstring\n"));
    assert_non_null(strstr(out, "generate\t--model\tstring\n")); /* aliases are listed too */
    assert_non_null(strstr(out, "generate\t-n\tint\n"));
    assert_non_null(strstr(out, "generate\t--json\tflag\n"));
    free(out), free(err);
}

/* Every value-taking flag of every subcommand, from help-flags: given last without its value
 * it is an error naming it; every numeric one given a word instead of a number, too; a flag
 * that takes no value given one ("--json=1"), too. */
static void test_every_flag_checks_its_value(void **state) {
    (void)state;
    char *list, *err;
    assert_int_equal(run_cli("help-flags", &list, &err), 0);
    free(err);
    int checked = 0;
    for (char *save = NULL, *line = strtok_r(list, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *flag = strchr(line, '\t'), *type = flag ? strchr(flag + 1, '\t') : NULL;
        assert_non_null(type);
        *flag++ = 0, *type++ = 0;
        char args[256];
        if (!strcmp(type, "flag")) {
            if (flag[1] != '-') continue; /* "-x=1" is not a form the parser reads */
            snprintf(args, sizeof args, "%s=1", flag);
            expect_rejected(line, args, flag);
        } else {
            expect_rejected(line, flag, flag); /* value missing */
            if (strcmp(type, "string") && strcmp(type, "list")) {
                snprintf(args, sizeof args, "%s notanumber", flag);
                expect_rejected(line, args, flag);
            }
        }
        checked++;
    }
    assert_true(checked > 50);
    free(list);
}

/* A text option given twice is an error naming both values (it used to keep the last one
 * silently: `-p a -p b` generated from "b"); several prompts go through --batch-file. */
static void test_string_option_twice(void **state) {
    (void)state;
    expect_rejected("generate", "-m x -t y -p first -p second", "given twice ('first', then 'second')");
    expect_rejected("generate", "-m x -t y --prompt=a -p b", "--batch-file");
    expect_rejected("synth", "--shape tiny --shape small --format gguf -o /nonexistent", "--shape given twice");
}

/* No error line repeats its command: "hsd synth: synth: ..." read as two failures. */
static void test_no_doubled_prefix(void **state) {
    (void)state;
    char *out, *err;
    int rc = run_cli("synth --shape no-such-shape --format gguf -o /nonexistent/x", &out, &err);
    assert_int_equal(rc, 1);
    printf("%s", err);
    assert_non_null(strstr(err, "hsd synth: "));
    assert_non_null(strstr(err, "no-such-shape"));
    assert_null(strstr(err, "synth: synth:"));
    free(out), free(err);
    rc = run_cli("trim -t /nonexistent/tok.json --corpus /nonexistent/c --alpha 0.5 --min-coverage 0 "
                 "--hidden-dim 8",
                 &out, &err);
    assert_int_not_equal(rc, 0);
    assert_null(strstr(err, "trim: trim:"));
    free(out), free(err);
}

/* A failed synth leaves nothing behind: not the output directory it made, not a partial file. */
static void test_failed_synth_leaves_nothing(void **state) {
    (void)state;
    char dir[] = "/tmp/hsd_synth_fail_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char args[1024], sub[600], *out, *err;
    /* safetensors cannot hold Q8_0: refused before anything is written */
    snprintf(sub, sizeof sub, "%s/st", dir);
    snprintf(args, sizeof args, "synth --shape tiny --format safetensors --dtype q8_0 -o %s", sub);
    assert_int_equal(run_cli(args, &out, &err), 1);
    assert_non_null(strstr(err, "Q8_0"));
    assert_int_not_equal(access(sub, F_OK), 0);
    free(out), free(err);
    /* a tokenizer whose pipeline GGUF cannot hold (qwen3's NFC normalizer): refused */
    const char *qwen = hsd_test_path("tokenizers/qwen3/tokenizer.json");
    if (hsd_test_require(qwen)) {
        snprintf(sub, sizeof sub, "%s/gguf", dir);
        snprintf(args, sizeof args, "synth --shape tiny --format gguf -o %s --tokenizer %s", sub, qwen);
        assert_int_equal(run_cli(args, &out, &err), 1);
        printf("%s", err);
        assert_non_null(strstr(err, "cannot hold normalizer NFC"));
        assert_int_not_equal(access(sub, F_OK), 0); /* the directory it made is gone */
        free(out), free(err);
        /* into a directory that exists: it stays, and holds no file */
        snprintf(args, sizeof args, "synth --shape tiny --format gguf -o %s --tokenizer %s", dir, qwen);
        assert_int_equal(run_cli(args, &out, &err), 1);
        snprintf(sub, sizeof sub, "%s/model.gguf", dir);
        assert_int_not_equal(access(sub, F_OK), 0);
        snprintf(sub, sizeof sub, "%s/model.gguf.partial", dir);
        assert_int_not_equal(access(sub, F_OK), 0);
        free(out), free(err);
    }
    assert_int_equal(rmdir(dir), 0); /* empty: nothing was left in it */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_flag_every_subcommand),
        cmocka_unit_test(test_help_every_subcommand),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_unknown_commands),
        cmocka_unit_test(test_help_flags_lists_every_subcommand),
        cmocka_unit_test(test_every_flag_checks_its_value),
        cmocka_unit_test(test_string_option_twice),
        cmocka_unit_test(test_no_doubled_prefix),
        cmocka_unit_test(test_failed_synth_leaves_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

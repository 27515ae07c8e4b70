#!/bin/sh
# Runs one program of examples/ on the real TinyStories pair and checks what it prints.
#   example_run.sh pair|custom_model EXECUTABLE
# Exit 77 (ctest: skipped) with the reason when the shared models are missing.
set -u
name=$1
exe=$2
M=${HSD_SHARED:-${HSD_SHARED_DEFAULT:-../shared}}/models
for f in "$M/babyllama-tok105/model5000.bin" "$M/babyllama-tok105/tok105.bin" \
    "$M/stories260K/stories260K.bin" "$M/stories260K/tok512.bin"; do
    [ -f "$f" ] || { echo "SKIP: shared data missing: $f (set HSD_SHARED)"; exit 77; }
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }
case $name in
pair)
    # target babyllama (tok105), drafter stories260K (tok512): different tokenizers
    "$exe" "$M/babyllama-tok105/model5000.bin" "$M/babyllama-tok105/tok105.bin" \
        "$M/stories260K/stories260K.bin" "$M/stories260K/tok512.bin" "Once upon a time" \
        >"$out" 2>&1 || fail "exit status $?"
    grep -q '^target vocab 105, drafter vocab 512, [1-9][0-9]* tokens in common$' "$out" ||
        fail "vocabulary line"
    grep -Eq '^algorithm: (tli|slem|union) \(' "$out" || fail "AUTO must pick a cross-vocabulary algorithm"
    grep -Eq '^(tli|slem|union): Once upon a time.{20,}' "$out" || fail "generated text"
    grep -q '^ar: identical$' "$out" || fail "greedy output differs from AR"
    ;;
custom_model)
    # target: the example's bigram model over tok512; drafter babyllama (tok105)
    "$exe" "$M/stories260K/tok512.bin" "$M/babyllama-tok105/model5000.bin" \
        "$M/babyllama-tok105/tok105.bin" >"$out" 2>&1 || fail "exit status $?"
    # the bigrams of "Once upon a time, Tom found his big red ball." (no token repeats) spell
    # the rest of the sentence from "Once upon", with every algorithm
    for a in ar union tli slem; do
        line=$(grep "^$a " "$out") || fail "no $a line"
        case $line in
        "$a"*"\"Once upon\" -> \"a time, Tom found his big red ball.\"  [accepted "*) ;;
        *) fail "$a: unexpected text: $line" ;;
        esac
    done
    grep -q 'caller-provided model' "$out" || fail "target is not the caller's model"
    ;;
*) echo "unknown example $name"; exit 2 ;;
esac
cat "$out"

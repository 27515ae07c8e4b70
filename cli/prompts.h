/* The CLI's input text files: prompt files (bench/prompts/ files, --batch-file) and
 * corpora (calibration, trim). One reader each, shared by every subcommand. */
#ifndef HSD_CLI_PROMPTS_H
#define HSD_CLI_PROMPTS_H

#include <stddef.h>

/* The last ~clip bytes of p, moved forward to the next word start (after a space), so a
 * short-context model (babyllama: 256 tokens, character-level) fits prompt and output;
 * clip 0 keeps the whole text. Returns a malloc'd copy (NULL when out of memory). */
char *hsd_cli_clip_words(const char *p, size_t clip);

/* Reads prompts, one per line: a JSON object line gives its "prompt" field (or "text" when
 * it has none; an object with neither is skipped), any other non-empty line is the prompt
 * itself. At most max prompts (max <= 0: all), each clipped by hsd_cli_clip_words(clip).
 * *out is a malloc'd array of malloc'd strings (free with hsd_cli_free_prompts). Returns the
 * count, or -1 after printing "hsd WHO: PATH: why" when the file cannot be read. */
int hsd_cli_read_prompts(const char *who, const char *path, int max, size_t clip, char ***out);
/* The same, keeping only JSON lines whose "kind" is in the comma-separated list `kinds`. */
int hsd_cli_read_prompts_of(const char *who, const char *path, const char *kinds, int max,
                            size_t clip, char ***out);
void hsd_cli_free_prompts(char **p, int n);

/* Loads a corpus: JSONL {"text"} when the first non-blank byte is '{', else the whole file
 * as one text. Returns 1 (after printing why) on error. */
int hsd_cli_load_corpus(const char *path, char ***texts, size_t **lens, size_t *n);
void hsd_cli_free_corpus(char **texts, size_t *lens, size_t n);

#endif

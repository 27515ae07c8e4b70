/* `hsd generate --chat`: the prompt rendered with the target's chat template, and the model's
 * end-of-turn ids as extra EOS. */
#ifndef HSD_CLI_CHAT_PROMPT_H
#define HSD_CLI_CHAT_PROMPT_H

#include <stddef.h>

#include "hsd.h"

/* The conversation (messages_file: a JSON list of messages or an object with "messages" and
 * more variables such as "tools"; then a system message `system` first if the conversation has
 * none; then `user` as the last user turn), rendered with add_generation_prompt by the
 * template of the target model (a GGUF's tokenizer.chat_template) or else of its tokenizer
 * (tokenizer_config.json beside it). Returns the text (free()) or NULL after printing
 * "hsd WHO: why" on stderr. */
char *hsd_cli_chat_prompt(const char *who, const char *target, const char *target_tok,
                          const char *messages_file, const char *system, const char *user);
/* Registers every EOS id the target model and its tokenizer declare with the engine. Returns 0,
 * or 1 after printing the error. */
int hsd_cli_chat_eos(const char *who, hsd_engine *e, const hsd_tokenizer *tt, const char *target,
                     const char *target_tok);

#endif

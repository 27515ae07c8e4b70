/* Output files that appear whole or not at all: written beside the target ("PATH.partial")
 * and renamed over it once complete, so a failed write leaves neither a partial file nor a
 * damaged older one (the GGUF and safetensors writers; inflate has its own temporary). */
#ifndef HSD_LIB_FILE_OUT_H
#define HSD_LIB_FILE_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "hsd.h"

typedef struct hsd_file_out {
    FILE *f;
    const char *path;
    char tmp[4096];
} hsd_file_out;

/* Opens PATH.partial for writing; an error names PATH. */
hsd_status hsd_file_out_open(hsd_file_out *o, const char *path);
/* Closes it and, when `ok` (every write succeeded) and the close does too, renames it to PATH;
 * otherwise removes it and says the write failed. */
hsd_status hsd_file_out_commit(hsd_file_out *o, bool ok);

#endif

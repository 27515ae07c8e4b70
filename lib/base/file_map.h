/* A model or data file mapped read-only (or read into memory when mmap is off or fails): the
 * one way the loaders (GGUF, safetensors, llama2.c, heads, GGUF vocabularies) get at file
 * bytes, so large weights stay in the page cache instead of being copied. */
#ifndef HSD_LIB_BASE_FILE_MAP_H
#define HSD_LIB_BASE_FILE_MAP_H

#include <stdbool.h>
#include <stddef.h>

#include "hsd.h"

/* Maps a model file (or reads it into memory when use_mmap is false or mmap fails);
 * release with hsd_file_map_close. */
typedef struct hsd_file_map {
    void *data;
    size_t size;
    bool mapped;
} hsd_file_map;
hsd_status hsd_file_map_open(const char *path, bool use_mmap, hsd_file_map **out);
void hsd_file_map_close(void *map);

#endif

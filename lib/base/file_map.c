#include "lib/base/file_map.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/error.h"

hsd_status hsd_file_map_open(const char *path, bool use_mmap, hsd_file_map **out) {
    *out = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return hsd_error(HSD_ERR_IO, "%s: cannot open", path);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return hsd_error(HSD_ERR_IO, "%s: not a regular file", path);
    }
    hsd_file_map *m = calloc(1, sizeof *m);
    if (!m) {
        close(fd);
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", path);
    }
    m->size = (size_t)st.st_size;
    if (m->size == 0) {
        close(fd);
        free(m);
        return hsd_error(HSD_ERR_PARSE, "%s: empty file", path);
    }
    if (use_mmap) {
        void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            m->data = p;
            m->mapped = true;
        }
    }
    if (!m->data) {
        m->data = malloc(m->size);
        size_t got = 0;
        while (m->data && got < m->size) {
            ssize_t r = pread(fd, (char *)m->data + got, m->size - got, (off_t)got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (!m->data || got != m->size) {
            close(fd);
            free(m->data);
            free(m);
            return hsd_error(HSD_ERR_IO, "%s: read failed", path);
        }
    }
    close(fd);
    *out = m;
    return HSD_OK;
}

void hsd_file_map_close(void *p) {
    hsd_file_map *m = p;
    if (!m) return;
    if (m->mapped)
        munmap(m->data, m->size);
    else
        free(m->data);
    free(m);
}

/* See file_out.h. */
#include "lib/base/file_out.h"

#include "lib/base/error.h"

hsd_status hsd_file_out_open(hsd_file_out *o, const char *path) {
    o->f = NULL;
    o->path = path;
    if (snprintf(o->tmp, sizeof o->tmp, "%s.partial", path) >= (int)sizeof o->tmp)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: path too long", path);
    if (!(o->f = fopen(o->tmp, "wb"))) return hsd_error(HSD_ERR_IO, "%s: cannot create", path);
    return HSD_OK;
}

hsd_status hsd_file_out_commit(hsd_file_out *o, bool ok) {
    ok = fclose(o->f) == 0 && ok;
    o->f = NULL;
    if (ok && rename(o->tmp, o->path) == 0) return HSD_OK;
    remove(o->tmp);
    return hsd_error(HSD_ERR_IO, ok ? "%s: cannot replace it with the written file"
                                    : "%s: write failed",
                     o->path);
}

/* The one piece of global state the library has: an optional log callback. It is set once
 * by the application (typically before any other call); reads and writes are atomic so a
 * late hsd_log_set never tears a pointer pair that another thread is reading. */
#include "lib/base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

typedef struct log_sink {
    hsd_log_fn fn;
    void *user;
} log_sink;

static _Atomic(log_sink *) g_sink;
static log_sink g_slots[2];
static atomic_int g_slot;

void hsd_log_set(hsd_log_fn fn, void *user) {
    /* alternate between two slots so a reader of the old one is not overwritten mid-read
     * by the very next call */
    int s = atomic_fetch_add(&g_slot, 1) & 1;
    g_slots[s].fn = fn;
    g_slots[s].user = user;
    atomic_store(&g_sink, fn ? &g_slots[s] : NULL);
}

void hsd_log(hsd_log_level level, const char *fmt, ...) {
    log_sink *s = atomic_load(&g_sink);
    if (!s || !s->fn) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->fn(level, msg, s->user);
}

/* The HTTP side of hsd serve (libmicrohttpd, one thread per connection). */
#ifndef HSD_SERVER_HTTP_H
#define HSD_SERVER_HTTP_H

#include <stdatomic.h>
#include <stdint.h>

#include "server/sched.h"
#include "server/server.h"

typedef struct srv_server {
    srv_sched sched;
    hsd_engine *e;
    const hsd_tokenizer *tt;
    srv_chat *chat;
    srv_defaults def;
    const char *api_key, *cors;
    size_t max_body;
    char model_name[256];
    char target_desc[300], draft_desc[300];
    int32_t n_ctx;
    int64_t created;
    atomic_int ready;          /* models loaded and the scheduler running */
    atomic_int streams;        /* streams still writing (shutdown waits for their last event) */
    atomic_long next_id;
    atomic_ulong seed_counter; /* seeds for requests that name none */
    void *daemon;              /* struct MHD_Daemon * */
} srv_server;

/* Starts listening on host:port (IPv4 address or "localhost"); 0, or -1 with msg filled. */
int srv_http_start(srv_server *sv, const char *host, int port, char *msg, size_t cap);
void srv_http_stop(srv_server *sv);

#endif

/* control-plane/http.h — the control plane's HTTP front: libmicrohttpd with its own
 * polling thread, request bodies capped at 1 MiB, bearer-token checks before
 * anything else, routing to the broker and operator handlers. */
#ifndef FELIX_CP_HTTP_H
#define FELIX_CP_HTTP_H

#include <stddef.h>

#include "auth.h"
#include "state.h"

#define CP_MAX_BODY (1024 * 1024)

/* One request as the handlers see it. query() looks up a query argument. */
typedef struct cp_request {
  const char *method;
  const char *url; /* path only */
  const char *body;
  size_t body_len;
  const char *(*query)(void *ctx, const char *key);
  void *query_ctx;
} cp_request;

typedef struct cp_reply {
  int status;
  char *body; /* malloc'd JSON, or NULL for "{}" */
} cp_reply;

/* Sets an error reply {"error", "hint"[, "reregister": true]}. */
void cp_reply_error(cp_reply *rep, int status, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void cp_reply_outcome(cp_reply *rep, const cp_outcome *o);

/* Checks the token, routes, and runs the handler under cp->mu. authorization
 * is the Authorization header or NULL. The caller frees rep->body. */
void cp_http_dispatch(cp_state *cp, const cp_tokens *tokens, const cp_request *req, const char *authorization,
                      cp_reply *rep);

typedef struct cp_server cp_server;

/* Binds addr ("host:port", "[v6]:port") and serves until cp_http_stop. */
felix_status cp_http_start(cp_state *cp, const cp_tokens *tokens, const char *addr, cp_server **out, felix_err *err);
void cp_http_stop(cp_server *srv);

/* Splits "host:port"; false if malformed. */
int cp_split_addr(const char *addr, char *host, size_t hostcap, char *port, size_t portcap);

#endif

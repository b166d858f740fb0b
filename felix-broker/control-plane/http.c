/* control-plane/http.c — HTTP serving, authentication and routing (control-plane/http.h).
 * Invariants: a request whose token is missing or wrong is answered 401
 * before any handler runs, so it changes nothing; every handler runs under
 * cp->mu, so the store and the in-memory leases see one request at a time;
 * a body over CP_MAX_BODY is refused (413) without being parsed. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "felix/logfmt.h"
#include "felix/lease.h"

struct cp_server {
  struct MHD_Daemon *daemon;
  cp_state *cp;
  const cp_tokens *tokens;
  int fd;
};

/* Per-connection upload state. */
typedef struct upload {
  char *buf;
  size_t len, cap;
  int too_large;
} upload;

void cp_reply_error(cp_reply *rep, int status, const char *hint, const char *fmt, ...) {
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "error", msg);
  if (hint && *hint) cJSON_AddStringToObject(o, "hint", hint);
  free(rep->body);
  rep->status = status;
  rep->body = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
}

void cp_reply_outcome(cp_reply *rep, const cp_outcome *o) {
  cp_reply_error(rep, o->status, o->hint, "%s", o->error);
  if (!o->reregister) return;
  cJSON *j = cJSON_Parse(rep->body);
  cJSON_AddBoolToObject(j, "reregister", 1);
  free(rep->body);
  rep->body = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
}

/* Splits the path into segments (in place in copy); returns the count. */
static int split_path(char *copy, char **seg, int max) {
  int n = 0;
  for (char *save = NULL, *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
    if (n == max) return max + 1;
    seg[n++] = t;
  }
  return n;
}

static void route(cp_state *cp, const cp_request *req, cp_reply *rep) {
  char copy[2048];
  char *seg[8];
  if (strlen(req->url) >= sizeof copy) {
    cp_reply_error(rep, 404, NULL, "no such endpoint");
    return;
  }
  snprintf(copy, sizeof copy, "%s", req->url);
  int n = split_path(copy, seg, 7);
  if (n < 2 || n > 7 || strcmp(seg[0], "v1") != 0) {
    cp_reply_error(rep, 404, "the API lives under /v1 (docs/control-plane-api.md)", "no such endpoint: %s %s",
                   req->method, req->url);
    return;
  }
  if (!strcmp(seg[1], "broker")) cp_api_broker(cp, req, seg + 2, n - 2, rep);
  else cp_api_operator(cp, req, seg + 1, n - 1, rep);
}

void cp_http_dispatch(cp_state *cp, const cp_tokens *tokens, const cp_request *req, const char *authorization,
                      cp_reply *rep) {
  rep->status = 200;
  rep->body = NULL;
  if (!cp_auth_check(tokens, req->url, authorization)) {
    cp_reply_error(rep, 401, cp_auth_wants_broker(req->url) ? "send the broker token" : "send the admin token",
                   "missing or invalid bearer token");
    return;
  }
  pthread_mutex_lock(&cp->mu);
  cp_state_tick(cp, felix_monotonic_ms());
  route(cp, req, rep);
  pthread_mutex_unlock(&cp->mu);
}

static const char *mhd_query(void *ctx, const char *key) {
  return MHD_lookup_connection_value((struct MHD_Connection *)ctx, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result send_reply(struct MHD_Connection *c, const cp_reply *rep) {
  const char *body = rep->body ? rep->body : "{}";
  size_t len = strlen(body);
  char *copy = malloc(len + 2);
  if (!copy) return MHD_NO;
  memcpy(copy, body, len);
  copy[len++] = '\n';
  struct MHD_Response *r = MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)rep->status, r);
  MHD_destroy_response(r);
  return ret;
}

/* GET /metrics needs no token (like a broker's): Prometheus scrapes it. */
static enum MHD_Result send_metrics(cp_state *cp, struct MHD_Connection *c) {
  pthread_mutex_lock(&cp->mu);
  cp_state_tick(cp, felix_monotonic_ms());
  char *text = cp_metrics_text(cp);
  pthread_mutex_unlock(&cp->mu);
  if (!text) return MHD_NO;
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

static bool upload_append(upload *u, const char *data, size_t n) {
  if (u->too_large || u->len + n > CP_MAX_BODY) {
    u->too_large = 1;
    return true;
  }
  if (u->len + n + 1 > u->cap) {
    size_t ncap = (u->len + n + 1) * 2;
    char *p = realloc(u->buf, ncap);
    if (!p) return false;
    u->buf = p;
    u->cap = ncap;
  }
  memcpy(u->buf + u->len, data, n);
  u->len += n;
  u->buf[u->len] = '\0';
  return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *data, size_t *data_size, void **con_cls) {
  (void)version;
  cp_server *srv = cls;
  upload *u = *con_cls;
  if (!u) {
    u = calloc(1, sizeof *u);
    if (!u) return MHD_NO;
    *con_cls = u;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > CP_MAX_BODY) u->too_large = 1;
    return MHD_YES;
  }
  if (*data_size > 0) {
    if (!upload_append(u, data, *data_size)) return MHD_NO;
    *data_size = 0;
    return MHD_YES;
  }
  if (!strcmp(url, "/metrics") && !strcmp(method, "GET")) return send_metrics(srv->cp, c);
  cp_reply rep = {0};
  if (u->too_large) {
    cp_reply_error(&rep, 413, "send at most 1 MiB", "request body larger than %d bytes", CP_MAX_BODY);
  } else {
    cp_request req = {.method = method, .url = url, .body = u->buf ? u->buf : "", .body_len = u->len,
                      .query = mhd_query, .query_ctx = c};
    cp_http_dispatch(srv->cp, srv->tokens, &req,
                     MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), &rep);
  }
  enum MHD_Result ret = send_reply(c, &rep);
  free(rep.body);
  return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  upload *u = *con_cls;
  if (u) free(u->buf);
  free(u);
  *con_cls = NULL;
}

int cp_split_addr(const char *addr, char *host, size_t hostcap, char *port, size_t portcap) {
  const char *colon = strrchr(addr, ':');
  if (!colon || colon == addr || !colon[1]) return 0;
  const char *h = addr;
  size_t hl = (size_t)(colon - addr);
  if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
    h++;
    hl -= 2;
  }
  if (hl == 0 || hl >= hostcap || strlen(colon + 1) >= portcap) return 0;
  for (const char *p = colon + 1; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  if (atoi(colon + 1) > 65535) return 0;
  memcpy(host, h, hl);
  host[hl] = '\0';
  snprintf(port, portcap, "%s", colon + 1);
  return 1;
}

static felix_status bind_listen(const char *addr, int *fd_out, felix_err *err) {
  char host[256], port[16];
  if (!cp_split_addr(addr, host, sizeof host, port, sizeof port))
    return felix_fail(err, FELIX_E_INVAL, "--listen %s is not HOST:PORT", addr);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
  int rc = getaddrinfo(host, port, &hints, &ai);
  if (rc) return felix_fail(err, FELIX_E_INVAL, "--listen %s: %s", addr, gai_strerror(rc));
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
    int e = errno;
    if (fd >= 0) close(fd);
    freeaddrinfo(ai);
    return felix_fail_errno(err, FELIX_E_IO, e, "cannot listen on %s", addr);
  }
  freeaddrinfo(ai);
  *fd_out = fd;
  return FELIX_OK;
}

felix_status cp_http_start(cp_state *cp, const cp_tokens *tokens, const char *addr, cp_server **out, felix_err *err) {
  cp_server *srv = calloc(1, sizeof *srv);
  if (!srv) return felix_fail(err, FELIX_E_IO, "out of memory");
  srv->cp = cp;
  srv->tokens = tokens;
  if (bind_listen(addr, &srv->fd, err)) {
    free(srv);
    return err->status;
  }
  srv->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, srv,
                                 MHD_OPTION_LISTEN_SOCKET, srv->fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_CONNECTION_LIMIT,
                                 (unsigned)1000, MHD_OPTION_END);
  if (!srv->daemon) {
    close(srv->fd);
    free(srv);
    return felix_fail(err, FELIX_E_IO, "cannot start the HTTP server on %s", addr);
  }
  *out = srv;
  return FELIX_OK;
}

void cp_http_stop(cp_server *srv) {
  if (!srv) return;
  MHD_stop_daemon(srv->daemon); /* closes the listening socket too */
  free(srv);
}

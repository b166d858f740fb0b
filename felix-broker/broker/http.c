/* broker/http.c — /live, /ready and /metrics on --http (libmicrohttpd).
 *
 * The HTTP thread never touches shards: the loop renders the metrics text
 * every half second into a snapshot guarded by stats_mu. */
#include <inttypes.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "felix/cli.h"
#include "felix/logfmt.h"

static enum MHD_Result answer(struct MHD_Connection *mc, unsigned code, const char *type, const char *body) {
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result rc = MHD_queue_response(mc, code, r);
  MHD_destroy_response(r);
  return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state) {
  broker *b = cls;
  (void)version; (void)upload; (void)upload_size; (void)state;
  if (strcmp(method, "GET")) return answer(mc, 405, "text/plain", "method not allowed\n");
  if (!strcmp(url, "/live")) return answer(mc, 200, "text/plain", "live\n");
  pthread_mutex_lock(&b->stats_mu);
  bool ready = b->ready;
  char *text = strdup(b->metrics_text ? b->metrics_text : "");
  pthread_mutex_unlock(&b->stats_mu);
  enum MHD_Result rc;
  if (!strcmp(url, "/ready")) rc = answer(mc, ready ? 200 : 503, "text/plain", ready ? "ready\n" : "not ready\n");
  else if (!strcmp(url, "/metrics")) rc = answer(mc, 200, "text/plain; version=0.0.4", text ? text : "");
  else rc = answer(mc, 404, "text/plain", "not found: try /live, /ready or /metrics\n");
  free(text);
  return rc;
}

int broker_http_start(broker *b) {
  pthread_mutex_init(&b->stats_mu, NULL);
  struct sockaddr_storage sa; /* parse_args checked it: an IPv4 address and port */
  if (broker_parse_addr(b->cfg.http, &sa) != 0 || sa.ss_family != AF_INET) {
    felix_log_event("error", "--http must be an IPv4 address and port", "http", b->cfg.http, NULL);
    return -1;
  }
  b->httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, b,
                              MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
  if (!b->httpd) {
    felix_log_event("error", "cannot serve HTTP", "http", b->cfg.http, NULL);
    return -1;
  }
  return 0;
}

void broker_http_stop(broker *b) {
  if (b->httpd) MHD_stop_daemon(b->httpd);
  b->httpd = NULL;
}

static void add(char **out, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add(char **out, size_t *len, size_t *cap, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (*len + (size_t)n + 1 > *cap) {
    size_t nc = *cap ? *cap * 2 : 4096;
    while (nc < *len + (size_t)n + 1) nc *= 2;
    char *np = realloc(*out, nc);
    if (!np) return;
    *out = np;
    *cap = nc;
  }
  memcpy(*out + *len, line, (size_t)n + 1);
  *len += (size_t)n;
}

void broker_update_metrics(broker *b) {
  char *t = NULL;
  size_t len = 0, cap = 0;
  add(&t, &len, &cap, "# TYPE felix_appends_total counter\nfelix_appends_total %" PRIu64 "\n", b->appends_total);
  add(&t, &len, &cap, "# TYPE felix_append_errors_total counter\nfelix_append_errors_total %" PRIu64 "\n", b->append_errors);
  add(&t, &len, &cap, "# TYPE felix_ready gauge\nfelix_ready %d\n", b->ready ? 1 : 0);
  add(&t, &len, &cap, "# HELP felix_build_info The version of felix-broker, as --version prints it.\n"
                      "# TYPE felix_build_info gauge\nfelix_build_info{version=\"%s\"} 1\n", FELIX_VERSION);
  add(&t, &len, &cap, "# TYPE felix_log_end_offset gauge\n# TYPE felix_hwm gauge\n# TYPE felix_unsynced_bytes gauge\n"
                      "# TYPE felix_syncs_total counter\n# TYPE felix_sync_seconds_total counter\n"
                      "# TYPE felix_sync_batch_appends gauge\n# TYPE felix_leading gauge\n");
  for (shard *s = b->shards; s; s = s->next) {
    if (!s->log) continue;
    felix_log_stats st;
    felix_log_get_stats(s->log, &st);
    char lbl[400];
    snprintf(lbl, sizeof lbl, "stream=\"%s\",shard=\"%u\"", s->stream, s->index);
    add(&t, &len, &cap, "felix_log_end_offset{%s} %" PRIu64 "\n", lbl, st.end_offset);
    add(&t, &len, &cap, "felix_hwm{%s} %" PRIu64 "\n", lbl, s->hwm);
    add(&t, &len, &cap, "felix_leading{%s} %d\n", lbl, s->leading ? 1 : 0);
    add(&t, &len, &cap, "felix_unsynced_bytes{%s} %" PRIu64 "\n", lbl, st.unsynced_bytes);
    add(&t, &len, &cap, "felix_syncs_total{%s} %" PRIu64 "\n", lbl, st.syncs);
    add(&t, &len, &cap, "felix_sync_seconds_total{%s} %.6f\n", lbl, (double)st.sync_nanos / 1e9);
    add(&t, &len, &cap, "felix_sync_batch_appends{%s} %.2f\n", lbl, st.syncs ? (double)st.append_seq / (double)st.syncs : 0.0);
  }
  pthread_mutex_lock(&b->stats_mu);
  free(b->metrics_text);
  b->metrics_text = t;
  pthread_mutex_unlock(&b->stats_mu);
}

/* broker/http.c — /live, /ready and /metrics on --http (libmicrohttpd).
 *
 * The HTTP thread never touches shards: the loop renders the metrics text
 * (metrics.c) every half second into a snapshot guarded by stats_mu, and the
 * watchdog (watchdog.c) the families a hang on the loop must not freeze. */
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
  char *loop_text = strdup(b->metrics_text ? b->metrics_text : "");
  pthread_mutex_unlock(&b->stats_mu);
  char *watch_text = watch_metrics_text(b), *text = NULL;
  if (loop_text && watch_text && asprintf(&text, "%s%s", loop_text, watch_text) < 0) text = NULL;
  free(loop_text), free(watch_text);
  enum MHD_Result rc;
  if (!strcmp(url, "/ready")) rc = answer(mc, ready ? 200 : 503, "text/plain", ready ? "ready\n" : "not ready\n");
  else if (!strcmp(url, "/metrics") && !text) rc = answer(mc, 503, "text/plain", "out of memory\n"); /* never a 200 with less */
  else if (!strcmp(url, "/metrics")) rc = answer(mc, 200, "text/plain; version=0.0.4", text);
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

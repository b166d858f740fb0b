/* control-plane/api.h — the endpoint handlers, called by cp_http_dispatch with cp->mu
 * held and the token already checked. Each fills rep (status + JSON body).
 * path[] are the URL's segments after "/v1". */
#ifndef FELIX_CP_API_H
#define FELIX_CP_API_H

#include "http.h"

/* control-plane/broker_api.c: /v1/broker/... */
void cp_api_broker(cp_state *cp, const cp_request *req, char **path, int npath, cp_reply *rep);
/* control-plane/operator_api.c: /v1/cluster, /v1/brokers, /v1/streams, /v1/shards */
void cp_api_operator(cp_state *cp, const cp_request *req, char **path, int npath, cp_reply *rep);
/* operator_api.c: how many of the shard's replicas are caught up, and the
 * largest lag (records below max_hwm) of any of them. */
int cp_caught_up_replicas(const cp_shard_row *sh, uint64_t *max_lag);
/* control-plane/metrics_api.c: GET /metrics (no token), the Prometheus text;
 * NULL when out of memory. Caller holds cp->mu. */
char *cp_metrics_text(cp_state *cp);
/* control-plane/abandon_api.c: POST /v1/shards/{stream}/{shard}/abandon */
void cp_api_abandon(cp_state *cp, const cp_request *req, const char *stream, const char *shard, cp_reply *rep);

#endif

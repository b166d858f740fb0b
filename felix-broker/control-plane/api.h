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
/* control-plane/abandon_api.c: POST /v1/shards/{stream}/{shard}/abandon */
void cp_api_abandon(cp_state *cp, const cp_request *req, const char *stream, const char *shard, cp_reply *rep);

#endif

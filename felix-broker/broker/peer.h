/* broker/peer.h — what the two sides of replication share (peer_lead.c, peer_follow.c). */
#ifndef FELIX_BROKER_PEER_H
#define FELIX_BROKER_PEER_H

#include "broker.h"
#include "felix/wire_peer.h"

/* The copy's generations lines with from <= start < below (the newest
 * FELIX_PEER_MAX_GENS). */
void peer_fill_gens(const shard *s, uint64_t from, uint64_t below, felix_generation *out, uint32_t *n);
/* Cuts records at and after `to` durably, then rewrites generations. */
int peer_truncate(broker *b, shard *s, uint64_t to);
/* Adds lines starting at or after first, durably, before their records. */
int peer_merge_gens(broker *b, shard *s, uint64_t first, const felix_generation *g, uint32_t n);
felix_status peer_append_records(shard *s, uint64_t first, const felix_wire_record *recs, uint32_t n,
                                 felix_appended *a, felix_err *err);

#endif

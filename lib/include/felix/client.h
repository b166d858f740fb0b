/* client.h — blocking client of the data protocol (docs/wire.md), used by
 * felixctl and the benchmarks.
 *
 * felix_client: one TCP connection, one request at a time.
 * felix_session: a bootstrap address plus connections by address; it follows
 * NOT_LEADER redirects (at most 5 hops, asking metadata when the address is
 * unknown); a fetch is retried once on a broken connection, a publish never
 * (its reply may have been lost after the broker appended it). */
#ifndef FELIX_CLIENT_H
#define FELIX_CLIENT_H

#include <stdint.h>

#include "felix/log.h"
#include "felix/wire.h"

typedef struct felix_client felix_client;

/* address is "host:port". FELIX_E_UNREACHABLE when the connection fails. */
felix_status felix_client_connect(const char *address, int timeout_ms, felix_client **out, felix_err *err);
void felix_client_close(felix_client *c);
const char *felix_client_address(const felix_client *c);

/* These return FELIX_OK when a reply arrived (whatever its status; check
 * out->status), an error when the connection failed or the reply was bad. */
felix_status felix_client_publish(felix_client *c, const char *stream, uint32_t shard, uint8_t acks,
                                  const felix_record_in *recs, size_t n, felix_publish_reply *out, felix_err *err);
felix_status felix_client_fetch(felix_client *c, const felix_fetch_req *req, felix_fetch_reply *out, felix_err *err);
felix_status felix_client_metadata(felix_client *c, const char *stream, felix_metadata_reply *out, felix_err *err);

typedef struct felix_session felix_session;

felix_session *felix_session_new(const char *bootstrap_address, int timeout_ms);
void felix_session_free(felix_session *s);

/* Publishes to the shard's leader. Non-OK reply statuses become errors:
 * FELIX_E_UNAVAILABLE (not leader after 5 hops, unavailable),
 * FELIX_E_NOTFOUND (unknown shard), FELIX_E_INVAL (invalid / too large),
 * FELIX_E_IO (storage error); err->msg carries the broker's message. */
felix_status felix_session_publish(felix_session *s, const char *stream, uint32_t shard, uint8_t acks,
                                   const felix_record_in *recs, size_t n, uint64_t *first_offset, felix_err *err);
/* Fetches from the shard's leader; out must be freed with felix_fetch_reply_free;
 * its payloads point into the session's buffer and stay valid until the next call.
 * OFFSET_OUT_OF_RANGE becomes FELIX_E_INVAL. */
felix_status felix_session_fetch(felix_session *s, const felix_fetch_req *req, felix_fetch_reply *out, felix_err *err);

#endif

/* wire_peer.h — frames between brokers for replication (docs/wire.md,
 * DESIGN.md §4.3, §4.7). Pure encoding and decoding, like wire.h.
 *
 * One peer connection carries one shard from its leader (or leader-elect) to
 * one replica. It opens with HELLO — the handshake and the promise in one:
 * the leader process names itself and the generation; the replica takes the
 * promise (durably) or refuses naming its own generation, and answers with
 * its broker, storage id, incarnation, copy id and what it holds, so the
 * leader measures its cursor on every new connection. APPEND ships records
 * of the leader's log, each answered once the replica holds them. */
#ifndef FELIX_WIRE_PEER_H
#define FELIX_WIRE_PEER_H

#include "felix/ballot.h"
#include "felix/wire.h"

enum felix_peer_type {
  FELIX_WIRE_PEER_HELLO = 0x0010,
  FELIX_WIRE_PEER_APPEND = 0x0011,
  FELIX_WIRE_PEER_READ = 0x0012, /* a leader-elect fetching what it lacks from the copy its fence adopts */
};

enum felix_peer_status {
  FELIX_PS_OK = 0,
  FELIX_PS_REFUSED = 1,     /* a promise for a higher generation, or another leader for this one */
  FELIX_PS_UNKNOWN_SHARD = 2,
  FELIX_PS_NOT_HANDSHAKEN = 3, /* APPEND on a connection whose HELLO was not accepted */
  FELIX_PS_OUT_OF_ORDER = 4,   /* APPEND not at the replica's log end */
  FELIX_PS_STORAGE = 5,
};

#define FELIX_PEER_MAX_GENS 4096 /* one line per generation: past this a peer is copied again from the start */
#define FELIX_PEER_NO_TRUNCATE UINT64_MAX

typedef struct felix_peer_hello {
  char leader[128], leader_storage_id[FELIX_COPY_ID_HEX + 1], leader_incarnation[128];
  char leader_copy_id[FELIX_COPY_ID_HEX + 1];
  char stream[128], stream_uuid[FELIX_UUID_LEN + 1];
  uint32_t shard;
  uint64_t generation;
  /* A fence's promise request: the control-plane instance whose assignment
   * it carries (§4.8). Empty when a serving leader re-connects. */
  char cp_instance[64];
} felix_peer_hello;

typedef struct felix_peer_hello_reply {
  uint16_t status;
  char message[512];
  char broker[128], storage_id[FELIX_COPY_ID_HEX + 1], incarnation[128];
  char copy_id[FELIX_COPY_ID_HEX + 1];
  uint64_t generation; /* the replica's ballot generation after the answer */
  uint64_t log_start, log_end, held_end;
  uint32_t ngens;
  felix_generation gens[FELIX_PEER_MAX_GENS]; /* its generations lines below log_end (newest kept) */
} felix_peer_hello_reply;

typedef struct felix_peer_append {
  char stream[128];
  uint32_t shard;
  uint64_t generation;
  uint64_t truncate_to; /* FELIX_PEER_NO_TRUNCATE, or cut here first (divergence) */
  uint64_t leader_hwm;
  uint32_t ngens;       /* the leader's lines starting at or after first_offset */
  felix_generation gens[FELIX_PEER_MAX_GENS];
  uint64_t first_offset;
  uint32_t count;
  felix_wire_record *records; /* malloc'd; payloads point into the frame */
} felix_peer_append;

typedef struct felix_peer_append_reply {
  uint16_t status;
  char message[512];
  uint64_t generation; /* the replica's ballot generation */
  uint64_t held_end, log_end;
} felix_peer_append_reply;

typedef struct felix_peer_read {
  char stream[128];
  uint32_t shard;
  uint64_t generation; /* the fence's generation: the source must have promised it to the reader */
  uint64_t from;
  uint32_t max_records;
} felix_peer_read;

/* The reply: status, message, the source's copy id and held end, then
 * records from `from` with the source's generations lines starting at or
 * after it, in an APPEND body (generation = the source's ballot). */
typedef struct felix_peer_read_reply {
  uint16_t status;
  char message[512];
  char copy_id[FELIX_COPY_ID_HEX + 1];
  uint64_t held_end;
  felix_peer_append body;
} felix_peer_read_reply;

void felix_peer_read_encode(felix_buf *b, uint32_t corr, const felix_peer_read *r);
felix_status felix_peer_read_decode(const uint8_t *body, size_t len, felix_peer_read *out, felix_err *err);
void felix_peer_read_reply_encode(felix_buf *b, uint32_t corr, const felix_peer_read_reply *r);
felix_status felix_peer_read_reply_decode(const uint8_t *body, size_t len, felix_peer_read_reply *out, felix_err *err);

void felix_peer_hello_encode(felix_buf *b, uint32_t corr, const felix_peer_hello *h);
void felix_peer_hello_reply_encode(felix_buf *b, uint32_t corr, const felix_peer_hello_reply *r);
/* records[i].offset is ignored: offsets run from first_offset. */
void felix_peer_append_encode(felix_buf *b, uint32_t corr, const felix_peer_append *a);
void felix_peer_append_reply_encode(felix_buf *b, uint32_t corr, const felix_peer_append_reply *r);

felix_status felix_peer_hello_decode(const uint8_t *body, size_t len, felix_peer_hello *out, felix_err *err);
felix_status felix_peer_hello_reply_decode(const uint8_t *body, size_t len, felix_peer_hello_reply *out, felix_err *err);
felix_status felix_peer_append_decode(const uint8_t *body, size_t len, felix_peer_append *out, felix_err *err);
felix_status felix_peer_append_reply_decode(const uint8_t *body, size_t len, felix_peer_append_reply *out,
                                            felix_err *err);
void felix_peer_append_free(felix_peer_append *a);

#endif

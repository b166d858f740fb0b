/* control-plane/state.h — the control plane's engine: leases, inventories and every
 * decision, over the store (DESIGN.md §4.1, §4.5, §4.6, §4.8).
 *
 * The HTTP layer parses and validates JSON, takes cp->mu, calls one of these
 * functions, builds its reply from the store, and releases the lock; tests
 * call the same functions directly. Invariants: every change of generation,
 * pin, placement or incarnation is committed before the function returns (so
 * before any reply); leases and inventories live only in memory and are
 * rebuilt after a start (one fresh lease per known broker, a bounded wait for
 * inventories before any failover decision). */
#ifndef FELIX_CP_STATE_H
#define FELIX_CP_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "felix/lease.h"

#define CP_TICK_MS 100
#define CP_DEFAULT_LEASE_MS 5000
#define CP_HEARTBEAT_MS 1000
#define CP_MAX_GENS 64 /* generations kept per inventory entry (newest) */

typedef struct cp_inv_entry {
  char stream[CP_ID_MAX];
  char stream_uuid[40];
  int shard;
  char copy_id[CP_HEX_MAX];
  int64_t log_start, log_end, last_generation, ballot_generation;
  char ballot_leader[CP_ID_MAX];
  bool gone;                 /* the copy's directory was deleted under the broker: it holds nothing */
  bool refused;              /* the broker refused the copy (a failed write or sync of its files, a corrupt
                                log): it serves nothing until it is reopened; cp_inventory_find skips it */
  /* The control-plane instance the broker had heard from when it built this
   * inventory: only an inventory built for this instance counts in the
   * start-up wait (§4.8, the model's Finding 6). */
  char cp_instance[64];
  int shards, replicas;      /* the copy's stream file (0 when it has none): for stream adopt */
  char acks[8];
  int ngens;                 /* the copy's generations file: (generation, start offset) */
  int64_t gens[CP_MAX_GENS][2];
} cp_inv_entry;

/* Generation of the copy's record at `offset`, from its generations list;
 * falls back to last_generation when the broker sent no list. */
int64_t cp_inv_generation_at(const cp_inv_entry *e, int64_t offset);

/* What the control plane knows of a broker only while it runs. */
#define CP_MAX_PREDECESSORS 8 /* replaced processes remembered per broker id (the oldest goes first) */

typedef struct cp_live {
  char id[CP_ID_MAX];
  uint64_t renewed_ms;  /* lease clock time of the last renewal */
  bool was_alive;       /* at the previous tick: lapses are noticed once */
  bool draining;        /* its heartbeat says it is draining: hand its shards off (§4.9) */
  /* Processes this id replaced from another directory or boot while their
   * leases may run (review 5, item 6): each incarnation with the lease clock
   * time of its last renewal. A shard pinned to one waits for its lease. */
  struct cp_predecessor {
    char incarnation[CP_INC_MAX];
    uint64_t renewed_ms;
  } predecessors[CP_MAX_PREDECESSORS];
  int npredecessors;
  cp_inv_entry *inv;
  size_t ninv;
  /* inv is in memory but the store refused what it implies (a gone copy, a
   * stranger, a generation promised): applied again at each heartbeat until
   * it is taken, as the broker sends an inventory only when it changes */
  bool inv_unapplied, inv_unapplied_at_start;
} cp_live;

/* What the control plane remembers of a shard only while it runs: the fence
 * of its current generation, watched on the lease clock (§4.6: a fence not
 * complete within a lease is a trigger, and that leader-elect is passed over
 * for a while), the pinned leader's last no-quorum report, and whether the
 * start-up wait for its inventories is over (§4.8). A restart starts afresh. */
typedef struct cp_shard_mem {
  char stream_uuid[40];
  int shard;
  int64_t generation;
  uint64_t since_ms;
  bool fired;
  char passed_over[CP_ID_MAX];
  uint64_t passed_until_ms;
  int64_t no_quorum_generation, no_quorum_ms; /* the pinned leader's last report of it */
  int64_t log_bytes; /* of that report (-1: it sent none); shown, never decided on */
  /* Review 5, item 6: a trigger that does not prove the pinned leader dead
   * (no quorum) first stops renewing its per-shard lease (replies say
   * renew_lease false); the failover waits until the last lease it was
   * granted has passed, so no two processes acknowledge `leader` publishes
   * at once. */
  int64_t unrenewed_generation; /* whose leader's lease is no longer renewed (0: none) */
  uint64_t unrenewed_until_ms;  /* lease clock: no failover before this */
  char unrenewed_why[200];
  /* §4.8: a shard the store held at this start waits for inventories built
   * for this instance: `named` are its slots' copy ids as stored then (a copy
   * the store knew existed when any backup was taken, so its ballot holds
   * every promise it made since). A shard made in this instance has no wait. */
  bool at_start;
  char named[FELIX_MAX_REPLICAS][CP_HEX_MAX];
  bool inventories_in; /* the wait is over (latched until the next start) */
} cp_shard_mem;

typedef struct cp_state {
  bool open; /* between cp_state_open and cp_state_close */
  /* a decision the store refused (a generation, a state), or a read it
   * failed (the shards to evaluate, a leader to judge): the next tick
   * evaluates every shard again, whatever fired it (a lease lapse is seen
   * once; found by helper-29) */
  bool decision_refused;
  /* events of the transaction now open, logged once it commits: a decision
   * the store refused never logs one (helper-29) */
  cp_event *pending_events;
  size_t npending, cap_pending;
  pthread_mutex_t mu;
  cp_store *store;
  char instance_id[33];
  uint64_t lease_ms, heartbeat_ms;
  felix_lease_clock clock;
  int64_t started_at; /* unix seconds */
  /* The start-up grace: no failover before it is over — the longest lease
   * this database ever ran with (leaders' per-shard leases granted under it
   * may still run, §4.2), and brokers that run have sent inventories. */
  uint64_t grace_ms;
  bool grace_over;
  cp_live *live;
  size_t nlive, caplive;
  cp_shard_mem *watches;
  size_t nwatch, capwatch;
  size_t *watch_order; /* indexes into watches, sorted by (stream uuid, shard): cp_shard_mem_get bsearches */
} cp_state;

/* The HTTP status and error sentence of an operation that did not succeed. */
typedef struct cp_outcome {
  int status; /* 200 / 201 on success */
  bool reregister;
  char error[1024];
  char hint[256];
} cp_outcome;

/* Opens the store and starts leases: instance_id NULL makes a random one.
 * On failure nothing stays open (cp_state_close is then a no-op). */
felix_status cp_state_open(cp_state *cp, const char *db_path, const char *instance_id, uint64_t lease_ms,
                           uint64_t real_now_ms, felix_err *err);
void cp_state_close(cp_state *cp);

/* Advances the lease clock; notices lapses and the end of the start-up wait,
 * and re-evaluates the shards when either happened. Caller holds mu. */
void cp_state_tick(cp_state *cp, uint64_t real_now_ms);

bool cp_broker_alive(cp_state *cp, const char *id);
/* The process `incarnation` of broker id, replaced from another directory or
 * boot, may still hold per-shard leases: its shards wait (review 5, item 6). */
bool cp_predecessor_may_hold_lease(cp_state *cp, const char *id, const char *incarnation);
/* Remembers the replaced process `incarnation`, last renewed at renewed_ms. */
void cp_note_predecessor(cp_live *l, const char *incarnation, uint64_t renewed_ms);
/* Alive and not draining: may take a role. */
bool cp_broker_may_lead(cp_state *cp, const char *id);
bool cp_broker_draining(cp_state *cp, const char *id);
/* A heartbeat's "draining": true. Re-evaluates the shards it leads. Caller holds mu. */
void cp_note_draining(cp_state *cp, const char *broker);
uint64_t cp_broker_lease_age(cp_state *cp, const char *id);
/* §4.8, the model's Finding 6: after a start (or a restored database) a
 * shard the store held waits until a majority of its slots have sent an
 * inventory built for this instance under the copy id the store named for
 * the slot at the start (a new copy — wiped, replaced, made anew — carries no
 * promise and does not count). A shard the store held at generation 0 waits
 * for an inventory of this instance from every slot, since its copies may
 * be new. Not bounded in time — ending it early could miss a generation that
 * a majority promised; a shard that cannot end it is for the operator
 * (placement abandon --above-generation, after the first lease). */
bool cp_shard_waiting(cp_state *cp, const cp_shard_row *sh);
/* While it waits: the brokers of the slots that have not answered (out has
 * room for nslots); their number, 0 when it does not wait. */
int cp_shard_waiting_for(cp_state *cp, const cp_shard_row *sh, char out[][CP_ID_MAX]);
/* True while some shard waits and a lease has not yet passed since the start. */
bool cp_waiting_for_inventories(cp_state *cp);
/* The control plane may not trust what it stores of the shard: it waits for
 * inventories, or a copy promised a generation above the stored one. Then it
 * accepts no report of the shard and hands out no ballot for it (§4.8). */
bool cp_shard_unsure(cp_state *cp, const cp_shard_row *sh);
/* False once the control plane stopped renewing the pinned leader's per-shard
 * lease before moving the shard (review 5, item 6). */
bool cp_leader_lease_renewed(cp_state *cp, const cp_shard_row *sh);
/* The size of the leader's log as its last accepted report of the current
 * generation gave it; -1 when none did since this start (shown only). */
int64_t cp_shard_log_bytes(cp_state *cp, const cp_shard_row *sh);
/* The inventory entry of broker for (stream_uuid, shard), or NULL (also when
 * the broker refused that copy: it holds nothing it may serve). */
const cp_inv_entry *cp_inventory_find(cp_state *cp, const char *broker, const char *stream_uuid, int shard);
/* The broker's inventory has an entry for (stream_uuid, shard), refused or gone ones included. */
bool cp_inventory_lists(cp_state *cp, const char *broker, const char *stream_uuid, int shard);
/* A registration's inventory (storage id unchanged) that lacks a copy a slot
 * names: its directory was deleted while the broker was down (§3.2). */
void cp_forget_missing_copies(cp_state *cp, const cp_broker_row *b);
/* The broker's inventory says it refused copy copy_id of (stream_uuid, shard). */
bool cp_copy_refused(cp_state *cp, const char *broker, const char *stream_uuid, int shard, const char *copy_id);

typedef struct cp_register_req {
  const char *broker_id, *storage_id, *boot_id, *fsync_mode, *address, *http_address;
  const char *previous_storage_id; /* the id this directory rotated away from ("" if none) */
  bool rotated;
  bool has_inventory; /* the registration carried an inventory (an empty one still says "nothing") */
  int64_t unread_copies; /* shard directories the broker refused before it could read their ballots */
  const cp_inv_entry *inv;
  size_t ninv;
} cp_register_req;

/* 200 with the new incarnation, or 409 for a live duplicate storage id. */
void cp_register(cp_state *cp, const cp_register_req *r, char incarnation[CP_INC_MAX], cp_outcome *out);
/* 200, or 409 with reregister when the incarnation is not the current one.
 * inv NULL: no inventory in this heartbeat. */
void cp_heartbeat(cp_state *cp, const char *broker, const char *incarnation, const cp_inv_entry *inv, size_t ninv,
                  cp_outcome *out);
/* The incarnation check alone (GET assignments). */
void cp_check_incarnation(cp_state *cp, const char *broker, const char *incarnation, cp_outcome *out);

typedef struct cp_report_follower {
  const char *broker, *copy_id;
  bool connected;
  int64_t held, h0;
} cp_report_follower;

typedef struct cp_report_shard {
  const char *stream;
  const char *stream_uuid; /* NULL or "": not sent (then only the name identifies the shard) */
  int shard;
  int64_t generation;
  const char *copy_id;
  int64_t log_start, log_end, last_generation, generation_start, hwm;
  bool has_hwm_generation;
  int64_t hwm_generation;
  int64_t no_quorum_ms; /* how long written records have waited for a majority */
  int64_t log_bytes;    /* the size of the leader's segments; -1: not sent */
  cp_report_follower followers[FELIX_MAX_REPLICAS];
  size_t nfollowers;
} cp_report_shard;

typedef struct cp_report_rejection {
  char stream[CP_ID_MAX];
  int shard;
  char reason[200];
} cp_report_rejection;

/* Judges each shard; rejected[] has room for nshards. Returns the number accepted. */
int cp_report(cp_state *cp, const char *broker, const char *incarnation, int64_t seq, const cp_report_shard *shards,
              size_t nshards, cp_report_rejection *rejected, size_t *nrejected, cp_outcome *out);

/* 201 with *created filled; 409 exists; 422 replicas > 1 or too few alive. */
void cp_stream_create(cp_state *cp, const char *name, int shards, int replicas, const char *acks,
                      cp_stream_row *created, cp_outcome *out);
void cp_stream_delete(cp_state *cp, const char *name, cp_stream_row *deleted, cp_outcome *out);

/* Re-evaluates every shard: generation 1 after inventories, failovers. */
void cp_reevaluate_all(cp_state *cp);
/* Evaluates one shard of a live stream, named as a report names it. */
void cp_evaluate_named(cp_state *cp, const char *stream, int shard);

#endif

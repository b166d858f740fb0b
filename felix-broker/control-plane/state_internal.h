/* control-plane/state_internal.h — helpers shared by the engine's files (control-plane/state.c,
 * control-plane/decide.c, control-plane/registry.c, control-plane/streams.c); not for the HTTP layer. */
#ifndef FELIX_CP_STATE_INTERNAL_H
#define FELIX_CP_STATE_INTERNAL_H

#include "state.h"

cp_live *cp_live_get(cp_state *cp, const char *id, bool create);
/* Replaces the broker's inventory and marks it seen since this start. */
void cp_live_set_inventory(cp_live *l, const cp_inv_entry *inv, size_t ninv);
void cp_live_renew(cp_state *cp, cp_live *l);

/* Adds a history event (inside the caller's transaction) and logs it. */
felix_status cp_event_add(cp_state *cp, const char *kind, const cp_shard_row *sh, const char *broker,
                          int64_t generation, felix_err *err, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

void cp_outcome_ok(cp_outcome *o, int status);
void cp_outcome_fail(cp_outcome *o, int status, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void cp_outcome_store_error(cp_outcome *o, const felix_err *err);

/* Decides one shard (control-plane/decide.c): generation 1 once its copies exist, a
 * failover when its leader is lost. Commits whatever it decides. */
void cp_evaluate_shard(cp_state *cp, cp_shard_row *sh);
/* The fence watch of a shard (created when asked), or NULL. */
cp_shard_mem *cp_shard_mem_get(cp_state *cp, const char *stream_uuid, int shard, bool create);
/* The store held the shard when this instance started (it may have pins
 * an earlier instance granted). */
bool cp_shard_held_at_start(cp_state *cp, const cp_shard_row *sh);
/* Forgets what memory holds of a deleted stream's shards. */
void cp_shard_mem_forget(cp_state *cp, const char *stream_uuid);
/* Starts watching the fence of sh's (new) generation. */
void cp_fence_watch_start(cp_state *cp, const cp_shard_row *sh);
/* True when some watched fence has outlived a lease and not yet fired. */
bool cp_fence_watch_due(cp_state *cp);
/* True while broker is passed over for this shard after its fence timed out. */
bool cp_passed_over(cp_state *cp, const cp_shard_row *sh, const char *broker);
/* Records copies an inventory lists for slots that have none (control-plane/decide.c). */
/* at_start: the inventory a process sent with its registration, taken before
 * it answered any peer — the only one that can show lost writes, since a
 * heartbeat's inventory may be older than a measurement it crosses. When the
 * store refused the registration's, the next inventory is checked in its
 * place: a measurement it crossed may make a caught-up copy a stranger (it
 * is copied again), never a short copy trusted (cp_heartbeat). */
/* false when the store refused it (logged; nothing of it recorded) */
bool cp_apply_inventory(cp_state *cp, const cp_broker_row *b, const cp_inv_entry *inv, size_t ninv, bool at_start);

#endif

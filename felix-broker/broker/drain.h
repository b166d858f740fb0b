/* broker/drain.h — the broker's way of stopping (drain.c): the drain state
 * machine of DESIGN.md §3.3 and §4.9, and fail-closed on a failed sync
 * (§3.2). The only interface the rest of the broker uses to stop. */
#ifndef FELIX_BROKER_DRAIN_H
#define FELIX_BROKER_DRAIN_H

#include <stdbool.h>

#include "broker.h"

void broker_begin_drain(broker *b, const char *why);
/* Draining: once no replicated shard is led here any more, go on with the drain. */
void broker_handoff_check(broker *b);
/* Draining: tells the control plane once every record the shards it leads
 * wrote is committed. */
void broker_drain_announce(broker *b);
/* Finishes a drain once its flush is done and no on_commit batch is pending. */
void broker_drain_continue(broker *b);
/* A failed sync: remove the boot token (an unlink needs no space), stop
 * acknowledging, exit 1 without writing state=stopped (§3.2). */
void broker_fail_closed(broker *b, const char *why) __attribute__((noreturn));

/* Whether the loop applies what the control plane sends: not once draining,
 * except while handing off (it learns its shards moved on). */
bool broker_drain_takes_assignments(const broker *b);

#endif

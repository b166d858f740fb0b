/* lease.h — the control plane's lease clock (DESIGN.md §4.1).
 *
 * Leases decide only *when* to fail over, so they run on a clock that counts
 * time only while the control plane itself keeps processing: each advance
 * moves it by the real time elapsed since the previous advance, but never by
 * more than max_step_ms. A SIGSTOP, a long GC-like pause or a commit that
 * blocks for seconds therefore costs at most one step, and never expires a
 * lease that brokers were renewing meanwhile. Pure functions, no globals. */
#ifndef FELIX_LEASE_H
#define FELIX_LEASE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct felix_lease_clock {
  uint64_t now_ms;       /* the clock's own time; starts at 0 */
  uint64_t last_real_ms; /* the real (monotonic) time of the previous advance */
  uint64_t max_step_ms;  /* the most one advance may add (e.g. 2 ticks) */
} felix_lease_clock;

void felix_lease_clock_init(felix_lease_clock *c, uint64_t real_now_ms, uint64_t max_step_ms);

/* Moves the clock to real_now_ms (capped at max_step_ms); returns its time.
 * A real clock that went backwards adds nothing. */
uint64_t felix_lease_clock_advance(felix_lease_clock *c, uint64_t real_now_ms);

/* A lease renewed at renewed_ms (clock time) is valid while younger than lease_ms. */
bool felix_lease_alive(uint64_t renewed_ms, uint64_t now_ms, uint64_t lease_ms);
uint64_t felix_lease_age(uint64_t renewed_ms, uint64_t now_ms);

/* CLOCK_MONOTONIC in milliseconds: what callers feed to advance(). */
uint64_t felix_monotonic_ms(void);

/* CLOCK_BOOTTIME in milliseconds: it keeps counting while the process is
 * stopped or the machine suspends, so a leader's lease measured on it can
 * only end early, never late (§4.2). */
uint64_t felix_boottime_ms(void);

/* §4.2: a leader's per-shard lease, for `leader` acknowledgements. A
 * heartbeat reply that confirms the leader's pin renews it, counted from the
 * heartbeat's send time (sent_ms, CLOCK_BOOTTIME) — before the control plane
 * renewed the broker's lease on receipt — minus a margin for clock rates:
 * it ends before the control plane could declare the broker's lease lapsed. */
uint64_t felix_shard_lease_until(uint64_t sent_ms, uint64_t lease_ms);
/* The margin: a fifth of the lease, at least 300 ms (the control plane's
 * clock may notice a lapse up to two 100 ms ticks early). */
uint64_t felix_shard_lease_margin(uint64_t lease_ms);

#endif

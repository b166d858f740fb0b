/* decide/lease.c — the paused-clock lease rule (see lease.h). Invariant: now_ms never
 * decreases and grows by at most max_step_ms per advance. */
#include "felix/lease.h"

#include <assert.h>
#include <time.h>

void felix_lease_clock_init(felix_lease_clock *c, uint64_t real_now_ms, uint64_t max_step_ms) {
  c->now_ms = 0;
  c->last_real_ms = real_now_ms;
  c->max_step_ms = max_step_ms;
}

uint64_t felix_lease_clock_advance(felix_lease_clock *c, uint64_t real_now_ms) {
  uint64_t before = c->now_ms;
  if (real_now_ms > c->last_real_ms) {
    uint64_t step = real_now_ms - c->last_real_ms;
    /* A gap longer than a step means we were not running: count one step only. */
    if (step > c->max_step_ms) step = c->max_step_ms;
    c->now_ms += step;
  }
  c->last_real_ms = real_now_ms;
  assert(c->now_ms >= before && c->now_ms - before <= c->max_step_ms);
  (void)before;
  return c->now_ms;
}

bool felix_lease_alive(uint64_t renewed_ms, uint64_t now_ms, uint64_t lease_ms) {
  return felix_lease_age(renewed_ms, now_ms) < lease_ms;
}

uint64_t felix_lease_age(uint64_t renewed_ms, uint64_t now_ms) {
  return now_ms > renewed_ms ? now_ms - renewed_ms : 0;
}

uint64_t felix_monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t felix_boottime_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t felix_shard_lease_margin(uint64_t lease_ms) {
  /* The control plane may see a lapse up to two ticks (2 x 100 ms) early:
   * renewals are stamped with its last tick, and one advance adds up to
   * two ticks. Clock rates take the fifth. */
  uint64_t m = lease_ms / 5;
  return m < 300 ? 300 : m;
}

uint64_t felix_shard_lease_until(uint64_t sent_ms, uint64_t lease_ms) {
  uint64_t m = felix_shard_lease_margin(lease_ms);
  uint64_t until = lease_ms > m ? sent_ms + lease_ms - m : 0; /* a lease shorter than its margin is never valid */
  assert(until == 0 || until - sent_ms < lease_ms); /* ends before the control plane's lease of sent_ms */
  return until;
}

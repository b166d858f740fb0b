/* replication.h — the pure rules a replicated shard lives by (DESIGN.md
 * §3.4, §4.2–§4.7): rank, "matches", the HWM by the Raft commit rule, the
 * acknowledgement policies, where a divergent follower truncates, how the
 * control plane trusts a measurement, and how the promotion fence counts.
 *
 * No I/O: plain facts in, a verdict (and, where it refuses, a reason) out.
 * The broker and the control plane gather the facts and act on the verdict;
 * the model in docs/formal/ mirrors each function (docs/formal/README.md names
 * the action each one implements). */
#ifndef FELIX_REPLICATION_H
#define FELIX_REPLICATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/ballot.h"
#include "felix/placement.h"

/* A copy's rank over what it holds (§3.4): generation of its last held
 * record, then how many records it holds. */
typedef struct felix_rank {
  int64_t generation;
  int64_t log_end;
} felix_rank;

/* <0, 0, >0 as a ranks below, equal to, above b. */
int felix_rank_cmp(felix_rank a, felix_rank b);

/* The generation of the record at `offset` by a generations list (the last
 * line whose start offset is at or below it), 0 when none is. */
uint64_t felix_generation_at(const felix_generations *g, uint64_t offset);

/* §3.4: the copy holds n records and its record n-1 is of generation g
 * (n = 0 matches anything). */
bool felix_copy_matches(const felix_generations *g, uint64_t held, uint64_t n, uint64_t generation);

/* Where a follower whose log ends at follower_end must cut so that what
 * stays is a prefix of the leader's log (§4.3): the end of the last stretch
 * of offsets both lists assign to the same generation. Within one generation
 * every copy holds the same record at the same offset (one leader per
 * generation), so equal generations mean equal records. */
uint64_t felix_divergence_point(const felix_generations *leader, uint64_t leader_end, const felix_generations *follower,
                                uint64_t follower_end);

/* What the leader knows of one follower in its own generation. */
typedef struct felix_follower_hold {
  bool counted;  /* a live connection measured in this generation */
  bool trusted;  /* its copy id is the one the control plane names (not a stranger): acks = all wait for these */
  uint64_t held; /* confirmed held end; confirmations of other generations never move it */
} felix_follower_hold;

typedef struct felix_hwm_input {
  int replicas;              /* R, the leader included */
  bool leader_counts;        /* the ballot still names this process at this generation */
  uint64_t leader_held;      /* what the leader's own copy holds (§3.2) */
  uint64_t generation_start; /* offset of this generation's start record */
  uint64_t hwm;              /* the current HWM, never lowered */
  const felix_follower_hold *followers;
  size_t nfollowers;
} felix_hwm_input;

/* Rule 3: the largest n held by a majority of R with the leader among them
 * (rule 2) and whose record n-1 is of the leader's generation (n beyond the
 * generation-start record); never below in->hwm. */
uint64_t felix_hwm_compute(const felix_hwm_input *in);

enum felix_ack_policy { FELIX_ACK_QUORUM = 1, FELIX_ACK_LEADER = 2, FELIX_ACK_ALL = 3 };

/* Parses "quorum" | "leader" | "all"; 0 for anything else. */
int felix_ack_policy_parse(const char *s);
const char *felix_ack_policy_name(int policy);

typedef struct felix_ack_input {
  int policy;
  uint64_t end;            /* the batch holds offsets below end */
  uint64_t hwm;            /* felix_hwm_compute's answer */
  uint64_t confirmed;      /* the largest end a majority of R held in this generation (sticky) */
  bool leader_counts;
  uint64_t leader_held;
  bool lease_valid;        /* the per-shard lease, confirmed by a heartbeat reply (leader acks only) */
  int trusted_replicas;    /* replicas that are not strangers, the leader included (acks = all) */
  const felix_follower_hold *followers;
  size_t nfollowers;
} felix_ack_input;

/* §4.1/§4.2: quorum = committed (hwm >= end); all = committed and every
 * trusted replica holds it; leader = the leader holds it within its lease
 * (or, without a valid lease, once it is committed). Committed means twice
 * over: the HWM covers it and a majority of R, the leader among it, has held
 * it in this generation (`confirmed`, felix_hwm_compute kept from the
 * generation start): an HWM that outran what a majority confirmed
 * acknowledges nothing (review 5, item 3).
 * The leader always holds what it acknowledges (rule 2). */
bool felix_ack_ready(const felix_ack_input *in);

/* Rule 1 and the model's Finding 4 (twin-refence-served-generation): a
 * process fences a generation only above every generation it has led
 * (led_generation, 0 for none): a control plane restored from a backup may
 * pin it to one it already served, whose committed records it would hide. */
bool felix_may_fence(uint64_t generation, uint64_t led_generation);

/* ---- control plane: trusting a measurement (§4.5, rule 5) ---- */

typedef struct felix_slot_trust {
  const char *copy_id; /* the slot's current copy id ("" = none) */
  bool stranger;
  int64_t confirmed;   /* newest trusted measurement */
  int64_t floor;
} felix_slot_trust;

typedef struct felix_follower_measure {
  const char *copy_id; /* copy id of the live connection's handshake */
  bool connected;
  int64_t held;        /* what the leader measured it holding in its generation */
  int64_t h0;          /* the leader's log end when it first saw this copy id (Finding 1) */
} felix_follower_measure;

typedef struct felix_measure_verdict {
  bool changed;   /* anything below differs from the slot */
  bool stranger;
  int64_t confirmed, floor;
  bool caught_up; /* the measurement reached the report's HWM */
  char why[240];  /* what changed, for the history ("" = nothing worth saying) */
} felix_measure_verdict;

/* One follower of an accepted report. Only an Active leader measures; a
 * measurement counts only for the copy id the slot names; a stranger is
 * trusted once measured at or above h0; a copy measured below its floor
 * becomes a stranger; the floor is the highest HWM it was measured caught up
 * to. */
void felix_judge_measurement(const felix_slot_trust *slot, const felix_follower_measure *m, bool active,
                             int64_t report_hwm, felix_measure_verdict *out);

/* ---- the promotion fence (§4.7) ---- */

typedef struct felix_fence_slot {
  const char *broker;
  const char *named_copy_id; /* the assignment's copy for this replica; NULL or "" = none: never counts */
  int64_t floor;
  bool answered;             /* it took the promise */
  const char *answer_copy_id; /* the copy id of the handshake the answer came over */
  felix_rank rank;            /* in the answer, over what it holds */
  bool self;                  /* the leader-elect's own copy: preferred among equal ranks (nothing to fetch) */
} felix_fence_slot;

typedef struct felix_fence_verdict {
  int counted;
  int majority;   /* needed */
  bool complete;  /* a majority counted */
  int adopt;      /* slot index of the highest-ranked counted copy, -1 when incomplete */
  int64_t at_risk; /* incomplete: max_hwm minus the longest answering copy (never negative) */
  char why[FELIX_MAX_REPLICAS][160]; /* per slot: "" when counted, else why not */
  char detail[1200];
} felix_fence_verdict;

/* Counts the answers of a fence over R = n replicas (the leader-elect's own
 * slot among them, answered by its own promise). An answer counts only when
 * its connection's copy id equals the named one and its rank reaches the
 * floor. */
void felix_fence_count(const felix_fence_slot *slots, size_t n, int64_t max_hwm, felix_fence_verdict *out);

/* ---- a replica asked for a promise (§3.4, §4.8) ---- */

typedef enum felix_promise_verdict {
  FELIX_PROMISE_HELD = 0,      /* the ballot already names this process at this generation */
  FELIX_PROMISE_TAKE = 1,      /* a higher generation: promise it (durably) */
  FELIX_PROMISE_LOWER = 2,     /* refused: the copy promised this or a higher generation to another */
  FELIX_PROMISE_OLD_CP = 3,    /* refused: a fence of an assignment by another control-plane instance */
} felix_promise_verdict;

typedef struct felix_promise_ask {
  uint64_t generation;
  const char *leader, *leader_copy_id, *leader_incarnation;
  /* The control-plane instance whose assignment a fence carries; NULL or ""
   * when a serving leader re-connects (its generation is already promised). */
  const char *cp_instance;
} felix_promise_ask;

/* The model's Finding 6: once a copy has seen (and so will report its
 * ballot to) control-plane instance `my_cp_instance`, it refuses a fence
 * whose assignment another instance made: no inventory wait can see a
 * promise made after the inventory. */
felix_promise_verdict felix_promise_judge(const felix_ballot *ballot, const felix_promise_ask *ask,
                                          const char *my_cp_instance);

#endif

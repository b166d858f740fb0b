/* placement.h — the control plane's pure decisions (DESIGN.md §4.1, §4.5, §4.6).
 *
 * Where a new shard's replicas go, which replica leads generation 1, whether
 * a lost leader's shard may move and to which copy, and whether a leader's
 * report is accepted. Every function here is pure: plain facts in, a verdict
 * with a human reason out, so each rule is unit-tested on its own and the
 * store only ever commits what a verdict said. */
#ifndef FELIX_PLACEMENT_H
#define FELIX_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/error.h"

#define FELIX_MAX_REPLICAS 7
/* The largest generation: 2^53 - 1, the largest integer every JSON reader on
 * the way (the broker's, felixctl's, a script's) keeps exactly; the checked
 * readers refuse more. A shard whose copies reached it has no next one
 * (felix_next_generation): the control plane says so and issues nothing,
 * never a generation the broker cannot read (helper-30, helper-31). */
#define FELIX_GENERATION_MAX INT64_C(9007199254740991)

typedef struct felix_place_broker {
  const char *id;
  bool alive;
  int load;        /* replicas placed on it (all streams) */
  int leaderships; /* shards it leads or is about to lead */
} felix_place_broker;

/* Chooses r distinct alive brokers, fewest load first, ties by id, writes
 * their indexes to out[0..r) and adds one to each one's load (so placing the
 * shards of a stream one after another spreads them). Fewer than r alive:
 * FELIX_E_REFUSED, "need 3 live brokers for 3 replicas, 2 are alive (b1, b2)". */
felix_status felix_place_shard(felix_place_broker *b, size_t n, int r, size_t *out, felix_err *err);

/* Among cands[0..ncands) (indexes into b), the one with the fewest
 * leaderships, ties by id. Returns an index into b. ncands > 0. */
size_t felix_pick_first_leader(const felix_place_broker *b, const size_t *cands, size_t ncands);

/* One replica of a shard as the failover rule sees it. */
typedef struct felix_copy_view {
  const char *broker;
  bool alive;              /* its broker's lease is valid */
  bool draining;           /* its broker is draining: it takes no new role */
  bool passed_over;        /* its fence did not complete within a lease: passed over for a while */
  bool refused;            /* its broker refused this copy until it is reopened (a storage error) */
  const char *slot_copy_id; /* the copy id the slot records; NULL/"" = none (forgotten) */
  bool stranger;           /* the slot's copy joined under a new identity, never measured */
  bool has_inventory;      /* the broker's inventory lists this shard */
  const char *inv_copy_id;
  int64_t log_end;
  int64_t last_generation; /* generation of the copy's last record (its rank) */
  int64_t point_generation; /* generation of its record at max_hwm - 1 (0 when it holds fewer) */
  bool measured;           /* the slot's copy has a trusted measurement (an Active leader's report) */
  int64_t confirmed;       /* what that measurement saw it hold */
} felix_copy_view;

typedef struct felix_failover_verdict {
  int chosen;                                    /* index of the copy to lead, -1 = none */
  char reason[FELIX_MAX_REPLICAS][160];          /* per copy: "" when eligible, else why not */
  char detail[1200];                             /* one sentence for the history */
} felix_failover_verdict;

/* The eligibility rule of §4.6: a copy is eligible when its broker is alive,
 * its copy id is the slot's (not a stranger; an inventory naming another copy
 * id excludes it), and either it is caught up — its trusted measurement
 * reached max_hwm — or its own inventory matches the point (max_hwm,
 * hwm_generation) of §3.4: it holds at least max_hwm records and (when
 * max_hwm > 0) its record max_hwm - 1 is of hwm_generation, the generation
 * the leader reported for that record. Picks the eligible copy of highest
 * rank (last generation, log end; a copy without inventory ranks by its
 * measurement). Returns out->chosen. */
int felix_decide_failover(const felix_copy_view *copies, size_t n, int64_t max_hwm,
                          int64_t hwm_generation, felix_failover_verdict *out);

/* ---- placement abandon (§4.9) ---- */

typedef struct felix_abandon_copy {
  const char *broker, *copy_id;
  bool live;                /* lease valid and its inventory lists the shard */
  int64_t log_end, last_generation;
  int64_t leaves_at;        /* where its history certainly leaves the last leader's: the start of its first
                               generation above max_hwm_generation, or -1 when it has none */
  int64_t generation_before; /* generation of its record just below min(leaves_at or log_end, max_hwm) (0: none) */
  int64_t proven;           /* its floor when its copy id is the slot's and not a stranger, else 0 */
} felix_abandon_copy;

typedef struct felix_abandon_verdict {
  int chosen;                          /* -1: no live copy */
  int64_t kept[FELIX_MAX_REPLICAS];    /* per copy: committed records it keeps (an estimate) */
  int64_t at_risk;                     /* of the chosen copy: max_hwm - kept, never negative */
  char digest[17];                     /* of context, every live copy and its rank: a dry run's answer must still hold */
} felix_abandon_verdict;

/* Picks the live copy with the fewest committed records at risk, whatever
 * its ids; ties by rank, then broker id. What a copy keeps of the committed
 * history: up to min(log_end, max_hwm) cut at leaves_at when its record
 * there is of max_hwm_generation (a copy holding records of a generation
 * holds that generation's leader's history below them); otherwise only what
 * it was proven to hold (its floor), since where an older generation ended
 * on the committed history is not known here. */
int felix_choose_abandon(const felix_abandon_copy *c, size_t n, int64_t max_hwm, int64_t max_hwm_generation,
                         const char *context, felix_abandon_verdict *out);

/* The next generation: one above anything stored or seen. */
/* max(stored, seen) + 1, or 0 when that would pass FELIX_GENERATION_MAX:
 * the shard's generations are spent. */
int64_t felix_next_generation(int64_t stored, int64_t seen);

/* The pin of the shard's current generation. */
typedef struct felix_pin {
  int64_t generation;
  const char *broker, *copy_id, *incarnation; /* NULL broker: nothing pinned (generation 0) */
} felix_pin;

typedef struct felix_shard_report {
  const char *broker, *copy_id, *incarnation;
  int64_t generation, hwm, generation_start, last_generation;
  int64_t log_end;         /* what the leader's copy holds: its HWM is never beyond it (rule 2) */
  bool has_hwm_generation; /* the leader sent hwm_generation */
  int64_t hwm_generation;  /* generation of the leader's record hwm - 1 */
} felix_shard_report;

typedef struct felix_report_verdict {
  bool accepted;
  bool active;               /* the report's HWM is past its generation start */
  int64_t max_hwm;           /* the shard's max HWM after this report (never lower) */
  int64_t max_hwm_generation;
  char reason[200];          /* why it was rejected */
} felix_report_verdict;

/* §4.5: accepted only from the pinned leader (broker, copy id, incarnation)
 * of the current generation, and only when its HWM is within its own log
 * (rule 2; review 5, item 3); a report whose HWM is below the max HWM changes
 * nothing (rejected with that reason). The per-incarnation sequence check is
 * the caller's, once per request (felix_report_seq_fresh). */
void felix_judge_report(const felix_pin *pin, int64_t max_hwm, int64_t max_hwm_generation,
                        const felix_shard_report *r, felix_report_verdict *out);

bool felix_report_seq_fresh(bool have_last, int64_t last_seq, int64_t seq);

#endif

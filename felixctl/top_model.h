/* top_model.h — what `felixctl top` shows, without the terminal: one
 * snapshot of the cluster fetched from the control plane, the order and
 * filter of its shards, and every line of text the view draws. cmd_top.c
 * draws these lines with ncurses; tests/unit/test_felixctl_top.c checks them. */
#ifndef FELIXCTL_TOP_MODEL_H
#define FELIXCTL_TOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "felixctl.h"

#define TOP_EVENTS 50
/* The view's refresh, and the shortest interval a rate is measured over: a
 * refresh sooner (Enter fetches at once) keeps the rates it had. */
#define TOP_REFRESH_MS 1000

typedef struct top_snapshot {
  cJSON *cluster; /* GET /v1/cluster */
  cJSON *brokers; /* GET /v1/brokers */
  cJSON *shards;  /* GET /v1/shards */
  cJSON *events;  /* GET /v1/events?limit=TOP_EVENTS */
  cJSON *history; /* GET /v1/shards/S/N/history of the open shard, or NULL */
  double fetched_ms;  /* monotonic time of the fetch (rates) */
  long fetched_at;    /* wall clock of the fetch, unix seconds (the header's time) */
  /* The baseline the next rates are measured from when it is not this
   * snapshot itself (NULL): a copy of the shards of the last snapshot whose
   * rates were measured, kept by one that came too soon to measure its own. */
  cJSON *base_shards;
  double base_ms;
} top_snapshot;

/* The shard orders of the `s` key: how urgent (NoCaughtUpReplica, Fencing,
 * the rest), name, HWM, records per second, bytes per second, largest lag. */
typedef enum top_sort {
  TOP_SORT_URGENCY,
  TOP_SORT_NAME,
  TOP_SORT_HWM,
  TOP_SORT_RATE,
  TOP_SORT_BYTES,
  TOP_SORT_LAG,
  TOP_SORT_N
} top_sort;
const char *top_sort_name(top_sort k);

/* Fetches a snapshot (and the history of `open_shard` "STREAM/N" when not
 * NULL). 0, or an exit code with the reason in err (nothing printed). */
int top_fetch(const ctl_opts *o, const char *open_shard, top_snapshot *out, char *err, size_t cap);
void top_snapshot_free(top_snapshot *s);

/* Records per second of every shard of cur, from its HWM's change since the
 * baseline (prev, or the baseline prev kept; prev NULL: no rate yet): each
 * shard object gets "records_per_second", and "bytes_per_second" from its
 * leader's log_bytes when both samples have it. A rate compares two samples
 * of one stream instance only: the same leader_copy_id, at the same or a
 * higher generation; otherwise (no leader, the copy replaced, the stream
 * recreated) it is unknown and the shard gets none. When cur came less than
 * TOP_REFRESH_MS after the baseline, it keeps prev's rates (of the same
 * instance) and the baseline instead. */
void top_add_rates(top_snapshot *cur, const top_snapshot *prev);

/* The shards to show, in the order `sort` (ties by stream and shard; by
 * urgency first NoCaughtUpReplica, then Fencing, then the rest; by HWM, rate
 * and lag the largest first, an unknown rate after every known one); only
 * those whose "STREAM/N" or line contains `filter` (when not empty). Returns
 * how many were put in out (at most cap). */
size_t top_shard_order(const cJSON *shards, const char *filter, top_sort sort, const cJSON **out, size_t cap);

/* 0 for NoCaughtUpReplica, 1 for Fencing, 2 otherwise: how urgent a shard is. */
int top_shard_urgency(const cJSON *shard);
/* "STREAM/N" of a SHARD object. */
const char *top_shard_name(const cJSON *shard, char *buf, size_t cap);

/* The lines of the view, each fitting `width` columns (cut, never wrapped). */
/* The control plane, the snapshot's time of day, brokers and shards. */
void top_header_line(const ctl_opts *o, const top_snapshot *s, char *out, size_t cap, int width);
/* The key line at the bottom, naming the shards' order. */
void top_status_line(const char *filter, top_sort sort, char *out, size_t cap, int width);
void top_broker_heading(char *out, size_t cap, int width);
/* LEASE-AGE in 9 columns ("412 ms", "41.2 s", "1.4 d"); REC/S and B/S: the
 * records and bytes per second of the shards it leads (shards: the
 * snapshot's). */
void top_broker_line(const cJSON *broker, const cJSON *shards, char *out, size_t cap, int width);
void top_shard_heading(char *out, size_t cap, int width);
/* SHARD in 13 columns (a long stream name cut and marked '~': "transacti~/12"),
 * REC/S in 6 ("12.3k", "1.2M"; "-" unknown), B/S in 8, then per follower
 * "BROKER -LAG" and a '!' when the storage id it was measured under differs
 * from its broker's registered one: whole followers while they fit `width`,
 * then " +N" for the N left out. */
void top_shard_line(const cJSON *shard, char *out, size_t cap, int width);
void top_event_line(const cJSON *event, char *out, size_t cap, int width);
/* The open shard: its summary and one line per replica. */
void top_detail_line(const cJSON *shard, char *out, size_t cap, int width);
void top_replica_heading(char *out, size_t cap, int width);
void top_replica_line(const cJSON *shard, const cJSON *replica, char *out, size_t cap, int width);

#endif

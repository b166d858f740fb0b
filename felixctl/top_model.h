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

typedef struct top_snapshot {
  cJSON *cluster; /* GET /v1/cluster */
  cJSON *brokers; /* GET /v1/brokers */
  cJSON *shards;  /* GET /v1/shards */
  cJSON *events;  /* GET /v1/events?limit=TOP_EVENTS */
  cJSON *history; /* GET /v1/shards/S/N/history of the open shard, or NULL */
} top_snapshot;

/* Fetches a snapshot (and the history of `open_shard` "STREAM/N" when not
 * NULL). 0, or an exit code with the reason in err (nothing printed). */
int top_fetch(const ctl_opts *o, const char *open_shard, top_snapshot *out, char *err, size_t cap);
void top_snapshot_free(top_snapshot *s);

/* The shards to show: NoCaughtUpReplica first, then Fencing, then the rest,
 * each by stream and shard; only those whose line contains `filter` (when
 * not empty). Returns how many were put in out (at most cap). */
size_t top_shard_order(const cJSON *shards, const char *filter, const cJSON **out, size_t cap);

/* 0 for NoCaughtUpReplica, 1 for Fencing, 2 otherwise: how urgent a shard is. */
int top_shard_urgency(const cJSON *shard);
/* "STREAM/N" of a SHARD object. */
const char *top_shard_name(const cJSON *shard, char *buf, size_t cap);

/* The lines of the view, each fitting `width` columns (cut, never wrapped). */
void top_header_line(const ctl_opts *o, const top_snapshot *s, char *out, size_t cap, int width);
void top_broker_heading(char *out, size_t cap, int width);
void top_broker_line(const cJSON *broker, char *out, size_t cap, int width);
void top_shard_heading(char *out, size_t cap, int width);
/* Per follower: "BROKER CONFIRMED/-LAG" and a '!' when the storage id it was
 * measured under differs from its broker's registered one. */
void top_shard_line(const cJSON *shard, char *out, size_t cap, int width);
void top_event_line(const cJSON *event, char *out, size_t cap, int width);
/* The open shard: its summary and one line per replica. */
void top_detail_line(const cJSON *shard, char *out, size_t cap, int width);
void top_replica_heading(char *out, size_t cap, int width);
void top_replica_line(const cJSON *shard, const cJSON *replica, char *out, size_t cap, int width);

#endif

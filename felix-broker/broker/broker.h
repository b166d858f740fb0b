/* broker.h — state of a running broker (felix-broker run).
 *
 * Threads: the libuv loop owns every shard and connection; the control-plane
 * thread (broker/cp_client.c) talks HTTP with libcurl and hands results to the loop
 * through a mailbox and a uv_async; the HTTP thread (libmicrohttpd) serves
 * /live /ready /metrics from a snapshot under a mutex. Slow waits (on_commit
 * syncs, the drain flush) run on libuv's thread pool. */
#ifndef FELIX_BROKER_H
#define FELIX_BROKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "felix/ballot.h"
#include "felix/streammeta.h"
#include "felix/datadir.h"
#include "felix/log.h"
#include "felix/metrics.h"
#include "felix/wire.h"

typedef struct broker_config {
  const char *id;
  const char *data_dir;
  const char *listen;
  const char *http;
  const char *control_plane;
  const char *token_file;
  const char *log_level; /* --log-level (NULL: FELIX_LOG_LEVEL, else info) */
  felix_log_config log;
  uint32_t drain_timeout_ms;
  uint32_t test_slow_drain_ms; /* FELIX_TEST_SLOW_DRAIN_MS: tests only, logged */
} broker_config;

typedef struct fetch_wait fetch_wait;
typedef struct conn conn;
typedef struct peer_link peer_link;
typedef struct pending_ack pending_ack;

/* One replica of a shard as the control plane's assignment names it. */
typedef struct member {
  char broker[128];
  char address[128];
  char named_copy_id[FELIX_COPY_ID_HEX + 1]; /* the copy a fence may count; "" = none (stranger, never measured) */
  int64_t floor;
} member;

#define BROKER_MAX_MEMBERS 7

/* One shard copy on this broker. */
typedef struct shard {
  char stream[128];
  uint32_t index;
  char dir_name[300];
  char path[4600];
  int dirfd;
  felix_log *log;
  felix_ballot ballot;
  felix_generations gens;
  bool refused;          /* failed recovery: reported, never served */
  bool gone;             /* refused because its directory was deleted: the control plane makes a new copy */
  char refused_why[512];
  /* leadership: valid only while the ballot names this process at `generation` */
  bool leading;
  uint64_t generation_start; /* offset of this generation's start record */
  uint64_t hwm;
  uint64_t confirmed_end;    /* leader: the largest end a majority held in this generation */
  uint64_t pending_held;     /* on_commit appends waiting for a sync */
  fetch_wait *waiters;       /* parked long-poll fetches */
  /* replication (peer_lead.c, peer_follow.c) */
  int replicas;              /* R from the assignment (1 until one arrives) */
  int ack_policy;            /* the stream's: FELIX_ACK_* */
  member members[BROKER_MAX_MEMBERS];
  int nmembers;
  /* The generation of the assignment that named members, floors, cp_max_hwm
   * and abandon_fence: a fence counts only against its own generation's
   * (review 5, item 7). */
  uint64_t members_generation;
  peer_link *links;          /* leader or leader-elect: one per other member */
  bool fencing;              /* leader-elect: promised, counting answers */
  uint64_t led_generation;   /* the last generation this process led: never fenced again */
  peer_link *adopting;       /* the one copy this fence fetches from, or NULL */
  uint64_t log_epoch;        /* bumped by every change to the log other than the leader's appends */
  int64_t cp_max_hwm;        /* the control plane's maximum HWM: a new leader starts from it */
  bool abandon_fence;        /* the generation placement abandon issued: adopt our own copy only */
  int64_t abandon_keeps;     /* this process led the copy an abandon kept: no cut below it (review 5, item 7) */
  uint64_t abandon_keeps_generation; /* the abandon's generation it was taken at, once */
  char fence_cp_instance[64]; /* the control-plane instance whose assignment this fence carries (§4.8) */
  uint64_t lease_until_ms;    /* §4.2 per-shard lease (CLOCK_BOOTTIME) for leader acks; 0: none */
  felix_stream_meta meta;     /* the copy's `stream` file (has_meta: it has one) */
  bool has_meta;
  uint64_t stalled_since_ms; /* loop time since which written records wait for a majority (0: none) */
  uint64_t stall_logged_since; /* the stalled_since_ms whose stall was logged (one line a stall) */
  pending_ack *acks;         /* producers waiting for their batch to commit */
  struct shard *next;
} shard;

typedef struct leader_entry {
  char stream[128];
  uint32_t shard;
  uint64_t generation;
  char state[32];
  char leader[128];
  char address[128];
} leader_entry;

/* What the control-plane thread hands to the loop. */
typedef struct cp_mailbox {
  pthread_mutex_t mu;
  char *assignments_json; /* newest body with assignments/leaders, or NULL */
  uint64_t assignments_sent_ms; /* CLOCK_BOOTTIME send time of the request it answered */
  char incarnation[128];
  bool registered;
  bool unauthorized; /* registration answered 401: the token is not the broker token */
  /* loop -> cp thread */
  char *inventory_json;   /* newest inventory (array), owned */
  bool inventory_dirty;
  char *report_json;      /* newest report shards (array), owned */
  bool report_dirty;
  bool stop;
  bool draining;          /* heartbeats say so: the control plane hands our shards off */
  uint64_t heartbeat_ms;  /* the cadence the control plane's last applied reply named; 0: not yet */
  uint64_t heartbeat_ok_ms; /* CLOCK_BOOTTIME of the last heartbeat or registration it accepted; 0: none */
  pthread_cond_t cv;
} cp_mailbox;

/* broker/watchdog.c: a thread that reads what a hang on the loop hides. */
typedef struct watch_copy {
  felix_log *log;
  char shard[300];          /* the copy's directory name, as the log lines name it */
  char labels[400];         /* its metric labels */
  felix_fsync_mode mode;
  uint64_t stalled_ns;      /* the start of the sync logged as stalled; 0: none */
  const char *stalled_what; /* what that sync was */
  uint64_t watching_ns;     /* the start of the sync the last pass saw running; 0: none */
  uint64_t watched_ms;      /* how long this thread has watched it run */
} watch_copy;

typedef struct broker_watch {
  pthread_mutex_t mu; /* guards all below but loop_ticks */
  pthread_cond_t cv;
  pthread_t thread;
  bool running, stopping;
  watch_copy *copies; /* every open copy's log */
  size_t n, cap;
  char *text;                /* felix_loop_stall_seconds and felix_sync_in_flight_seconds, for /metrics */
  atomic_uint_fast64_t loop_ticks; /* the loop's ticks so far (on_metrics_timer) */
  uint64_t seen_ticks;       /* loop_ticks as the last pass saw it */
  uint64_t quiet_ms;         /* watched time since loop_ticks last changed */
  bool loop_logged;          /* this quiet stretch was logged */
} broker_watch;

typedef struct broker {
  broker_config cfg;
  uv_loop_t *loop;
  int dirfd;
  felix_dir_lock lock;
  felix_storage_id sid;
  char boot_id[FELIX_BOOT_ID_MAX + 1];
  char boot_source[8];
  bool rotated;
  /* A sync or write of some copy has failed (set by lib/'s on_storage_error,
   * from any thread): the token is gone and state=stopped is never written. */
  atomic_bool storage_failed;
  atomic_bool token_created; /* this run's boot token exists (write_running) */
  char rotate_reason[256];
  char previous_sid[33]; /* the storage id this start rotated away from ("" if none): said at registration */
  int unread_copies;     /* shard directories refused at start before their ballots were read */
  shard *shards;
  leader_entry *leaders;
  size_t nleaders;
  uv_tcp_t server;
  int listen_fd; /* the data port, bound at start and listened on once registered; -1 once libuv owns it */
  uv_async_t cp_async;
  uv_signal_t sigterm, sigint;
  uv_timer_t report_timer;
  cp_mailbox mb;
  pthread_t cp_thread;
  bool serving, draining, stopping;
  bool peer_refusing; /* draining, hand-off over: peer appends are refused */
  struct {            /* drain.c's own state: nothing else reads it */
    bool handing_off; /* waiting for the shards it leads to get a new leader (§4.9) */
    bool announced;   /* the control plane was told it drains (once all it wrote committed) */
    bool flushed, flush_ok, finished;
    uint64_t appends_before;
  } drain;
  int exit_code;
  char incarnation[128];
  /* The control-plane instance the loop last heard from: the inventory says
   * it, and a fence of another instance's assignment is refused (§4.8). */
  char cp_instance[64];
  struct MHD_Daemon *httpd;
  pthread_mutex_t stats_mu;
  char *metrics_text;      /* snapshot served by /metrics */
  bool ready;
  uint64_t appends_total, append_errors;
  uint64_t bytes_in, bytes_out;      /* the data port's connections (net.c) */
  felix_histogram publish_latency;   /* PUBLISH arrival to answer (net.c) */
  bool inventory_stale; /* a follower's log grew: re-send the inventory at the next tick */
  bool inventory_due, report_due; /* changed in this loop iteration: sent by publish_prepare */
  uv_prepare_t publish_prepare;
  broker_watch watch;
} broker;

/* broker/watchdog.c */
void watch_init(broker_watch *w);
int watch_start(broker *b);
void watch_stop(broker *b);
void watch_add(broker *b, const shard *s);         /* once its log is open */
void watch_remove(broker *b, const felix_log *log); /* before its log closes */
void watch_loop_ticked(broker *b);
char *watch_metrics_text(broker *b); /* malloc'd (NULL: out of memory) */

/* broker/startup.c */
int broker_lock_data_dir(broker *b);  /* creates the directory if need be and takes its lock: nothing else */
int broker_start_storage(broker *b);  /* (locked) recover, identity, run-state, token */
int broker_open_shards(broker *b);
void broker_open_shards_one(broker *b, const char *dir_name); /* prepends to b->shards */
shard *broker_find_shard(broker *b, const char *stream, uint32_t index);
shard *broker_find_shard_uuid(broker *b, const char *uuid, uint32_t index);

/* broker/shard.c */
int shard_create_copy(broker *b, const char *stream, uint32_t index, const char *uuid);
void shard_apply_assignment(broker *b, shard *s, uint64_t generation, const char *leader, const char *leader_copy,
                            const char *leader_inc, const char *leader_addr);
/* Closes the copy's log (its final sync) and files; FELIX_E_SYNC when that sync failed. */
felix_status shard_close(broker *b, shard *s);
/* Refuses this copy alone (its directory was deleted): stops leading it,
 * drops it from the inventory; the rest of the broker goes on (§3.2). */
void shard_refuse(broker *b, shard *s, const char *why);
/* A cut to `to` would drop records the abandon that kept this copy kept
 * (said in the log): refuse it. */
bool shard_cut_below_kept(const shard *s, uint64_t to);
/* Removes leftovers of a crash: .new-* (half-made copies) and .deleting-* directories. */
int broker_remove_leftovers(broker *b); /* -1 when an interrupted restore cannot be settled */
void shard_delete(broker *b, shard *s);
uint64_t shard_last_generation(const shard *s, uint64_t log_end);
void shard_set_hwm(broker *b, shard *s, uint64_t hwm);

void shard_stop_leading(broker *b, shard *s, const char *why);
void shard_become_leader(broker *b, shard *s, uint64_t generation);
/* Syncs the copy's log on libuv's thread pool, then calls `then` on the loop
 * with the generation the copy's ballot had when it was asked and the sync's
 * status (a failed sync has already failed the broker closed, a deleted
 * directory refused the copy). Under a relaxed fsync mode `then` runs at
 * once with FELIX_OK. Used for the syncs of a fence (the records it adopted,
 * the start record), so that a slow disk under one copy does not stop the
 * loop, which serves every shard (t5010 saw a whole broker stop in an
 * on_commit fence). Other syncs still run on the loop: opening a copy, a
 * drain's final flush. */
typedef void (*shard_synced_fn)(broker *b, shard *s, uint64_t generation, felix_status st, const char *why);
void shard_sync_then(broker *b, shard *s, shard_synced_fn then);
/* Each writes one identity file durably; on failure the copy is failed
 * closed (shard_fail_closed) and the caller puts memory back as on disk. */
int shard_write_ballot(broker *b, shard *s);
/* Writes the generations file durably (rule: before any record of a new line). */
int shard_write_generations(broker *b, shard *s);
void shard_fail_closed(broker *b, shard *s, const char *file, const char *why);

/* broker/peer_lead.c, peer_follow.c — replication between copies (DESIGN.md §4.2–§4.4, §4.7) */
void peer_start_fence(broker *b, shard *s);   /* the ballot names this process at a new generation */
void peer_links_stop(broker *b, shard *s);    /* closes every link of the shard */
void peer_members_changed(broker *b, shard *s); /* new member list while leading or fencing */
void peer_pump(broker *b, shard *s);          /* ships what the leader wrote; re-checks the HWM and acks */
void peer_add_pending_ack(broker *b, shard *s, conn *c, uint32_t corr, int policy, const felix_appended *a);
void peer_fail_pending_acks(broker *b, shard *s, const char *why);
void peer_check_acks(broker *b, shard *s);     /* answers the pending acknowledgements now due */
/* A fifth of the default control-plane lease (5 s), half the campaign's
 * (2 s): the line comes before the control plane acts on a stall. */
#define PEER_STALL_LOG_MS 1000
/* A sync of a copy's log that has not returned after this long is logged
 * (a hung disk: under periodic, acknowledged records wait in the page cache) */
#define SYNC_STALL_LOG_MS 2000
#define LOOP_STALL_LOG_MS 2000
void peer_log_stall(broker *b, shard *s);      /* one warn line a stall longer than PEER_STALL_LOG_MS */
void peer_handle_frame(broker *b, conn *c, uint16_t type, uint32_t corr, const uint8_t *body, size_t len);
/* The report's "followers" for a led shard (cJSON array). */
struct cJSON;
struct cJSON *peer_followers_json(const shard *s);
/* The followers of a shard this process leads or fences, for /metrics;
 * held is valid only while connected. Returns how many (at most max). */
typedef struct peer_follower {
  const char *broker;
  bool connected;
  uint64_t held;
} peer_follower;
int peer_followers(const shard *s, peer_follower *out, int max);

/* broker/cp_client.c */
int broker_cp_start(broker *b);
void broker_cp_stop(broker *b);
/* Both mark what changed; broker_publish_due sends it at the end of the loop
 * iteration (the newest state, once). */
void broker_publish_inventory(broker *b);
void broker_publish_report(broker *b);
void broker_publish_due(broker *b);
void broker_on_cp_async(uv_async_t *h);

/* broker/net.c */
int broker_net_reserve(broker *b); /* binds --listen at start */
int broker_net_listen(broker *b);  /* listens on it once registered */
void broker_net_close(broker *b);
void conn_reply(conn *c, felix_buf *frame); /* takes the frame; resumes the connection */
/* What a peer connection's accepted HELLO bound it to (follower side). */
typedef struct peer_binding {
  bool bound;
  char stream_uuid[FELIX_UUID_LEN + 1];
  uint32_t shard;
  uint64_t generation;
  char leader[128], leader_copy_id[FELIX_COPY_ID_HEX + 1], leader_incarnation[128];
} peer_binding;
peer_binding *conn_peer(conn *c);
/* Closes the peer connections bound to a copy that is gone: its leader
 * handshakes again at once and measures what replaced it. */
void broker_net_close_peers(broker *b, const char *stream_uuid, uint32_t index);
/* Outbound connections to peers (the leader side). */
int broker_parse_addr(const char *addr, struct sockaddr_storage *ss);

/* broker/data.c */
void broker_handle_frame(broker *b, conn *c, uint16_t type, uint32_t corr, const uint8_t *body, size_t len);
void broker_wake_fetches(broker *b, shard *s);
void broker_fail_fetches(broker *b, shard *s);
const leader_entry *broker_leader_of(const broker *b, const char *stream, uint32_t index);

/* broker/http.c */
int broker_http_start(broker *b);
void broker_http_stop(broker *b);
void broker_update_metrics(broker *b);

/* broker/assign.c */
/* sent_ms: CLOCK_BOOTTIME send time of the heartbeat or registration it
 * answers (renews the per-shard leases of the pins it confirms). */
void broker_apply_cp(broker *b, const char *json, uint64_t sent_ms);
/* Ends every per-shard lease (a new control-plane instance, a new incarnation). */
void broker_drop_shard_leases(broker *b);

#endif

/* felixctl.h — what felixctl's files share: the parsed command line, the
 * command table entry, error reporting, the control-plane client, table
 * output and the pure parsing helpers.
 *
 * Every command is a `ctl_command` defined in its cmd_*.c file and listed in
 * main.c's table; main.c parses the whole command line once (global and
 * command flags may come in any order around the command words), checks the
 * flags against the command, and calls run(). A run function returns the
 * process exit code (DESIGN.md §5) and has printed any error itself. */
#ifndef FELIXCTL_H
#define FELIXCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "felix/error.h"
#include "felix/cli.h" /* FELIX_VERSION */
#include "felix/exitcode.h"

#define CTL_DEFAULT_CONTROL_PLANE "http://127.0.0.1:7070"
#define CTL_DEFAULT_TIMEOUT_MS 5000
#define CTL_DEFAULT_WAIT_MS 10000 /* produce, consume: how long a shard may be without a leader */
#define CTL_MAX_ARGS 4

/* wide: a table with more columns where a command has them */
typedef enum ctl_format { CTL_TABLE, CTL_WIDE, CTL_JSON, CTL_YAML } ctl_format;
#define CTL_DOCUMENT(o) ((o)->format == CTL_JSON || (o)->format == CTL_YAML) /* the answer as a document */

/* Command flags, as bits: a command lists those it accepts and requires. */
enum {
  CTL_F_SHARDS = 1u << 0,
  CTL_F_REPLICAS = 1u << 1,
  CTL_F_ACKS = 1u << 2,
  CTL_F_YES = 1u << 3,
  CTL_F_STATE = 1u << 4,
  CTL_F_SHARD = 1u << 5,
  CTL_F_FROM = 1u << 6,
  CTL_F_COUNT = 1u << 7,
  CTL_F_FOLLOW = 1u << 8,
  CTL_F_DRY_RUN = 1u << 9,
  CTL_F_EXPECT_GENERATION = 1u << 10,
  CTL_F_EXPECT_COPY = 1u << 11,
  CTL_F_EXPECT_DIGEST = 1u << 12,
  CTL_F_UUID = 1u << 13,
  CTL_F_ABOVE_GENERATION = 1u << 14,
  CTL_F_WAIT = 1u << 15,
  CTL_F_WATCH = 1u << 16,
};

typedef struct ctl_opts {
  const char *control_plane; /* normalised: scheme present, no trailing '/' */
  const char *token_file;    /* NULL when neither flag nor env gave one */
  ctl_format format;
  int timeout_ms;
  const char *args[CTL_MAX_ARGS]; /* positional arguments after the command words */
  int nargs;
  unsigned given; /* CTL_F_* seen on the command line */
  uint32_t shards, replicas, shard;
  const char *acks;  /* "quorum" | "leader" | "all" when given */
  const char *state; /* a shard state name when given */
  uint64_t from, count;
  bool yes, follow, dry_run;
  uint64_t expect_generation, above_generation;
  const char *expect_copy, *expect_digest;
  const char *uuid; /* stream adopt --uuid */
  uint64_t wait_ms;  /* --wait: how long to wait for a shard's leader */
  bool watch;        /* --watch: run again every 2 s (watch.c) */
  const char *context; /* the context the settings came from, NULL for none */
  const char *control_plane_flag, *token_file_flag; /* as given on the line, else NULL */
  /* where control_plane and token_file came from, for hints: "--control-plane",
   * "FELIX_CONTROL_PLANE", "context 'prod' of FILE", "the default" */
  const char *control_plane_from, *token_file_from;
} ctl_opts;

typedef struct ctl_command {
  const char *group; /* first command word */
  const char *verb;  /* second command word, NULL for one-word commands */
  int nargs;         /* exact number of positional arguments */
  unsigned flags;    /* CTL_F_* accepted */
  unsigned required; /* CTL_F_* that must be given */
  const char *usage; /* after "usage: felixctl " */
  const char *summary;
  const char *help; /* printed after the usage line by --help */
  int (*run)(const ctl_opts *o);
} ctl_command;

extern const ctl_command ctl_cmd_cluster_status;
extern const ctl_command ctl_cmd_broker_list, ctl_cmd_broker_describe;
extern const ctl_command ctl_cmd_stream_create, ctl_cmd_stream_list, ctl_cmd_stream_describe,
    ctl_cmd_stream_delete, ctl_cmd_stream_adopt;
extern const ctl_command ctl_cmd_shard_list, ctl_cmd_shard_describe;
extern const ctl_command ctl_cmd_placement_history, ctl_cmd_placement_abandon;
extern const ctl_command ctl_cmd_produce, ctl_cmd_consume, ctl_cmd_top;
extern const ctl_command ctl_cmd_completion, ctl_cmd_version;
extern const ctl_command ctl_cmd_config_get_contexts, ctl_cmd_config_use_context, ctl_cmd_config_set_context;

/* main.c: errors. Prints "felixctl: error: ..." (and "felixctl: hint: ..."
 * when hint is not NULL) to stderr; returns code so callers can
 * `return ctl_error(...)`. */
int ctl_error(int code, const char *hint, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* While buf is set, ctl_error writes "error (hint)" there instead of stderr
 * (felixctl top owns the terminal); NULL restores stderr. */
void ctl_error_capture(char *buf, size_t cap);

/* http.c: one request to the control plane with the admin token.
 * Returns 0 when it answered 2xx with JSON (out filled: free with
 * ctl_reply_free); otherwise the error and hint are printed and the exit
 * code is returned (5 unreachable, 1 on 401/5xx, 2 on 400, 3 on 404, 4 on
 * 409/422). path starts with "/v1/" and has its components escaped. */
typedef struct ctl_reply {
  long status;
  char *body; /* NUL-terminated */
  size_t len;
  cJSON *json;
} ctl_reply;

int ctl_http(const ctl_opts *o, const char *method, const char *path, const char *body, ctl_reply *out);
/* watch.c: in a --watch child, ctl_http hands each answer here (kept
 * without its ages), and in the child's replay takes them back in order
 * instead of asking the control plane: what the replay prints is what the
 * watch compares. Outside a --watch child: nothing kept, no replay. */
void ctl_watch_note_reply(const cJSON *json);
bool ctl_watch_replaying(void);
int ctl_watch_replay_next(ctl_reply *out);
void ctl_reply_free(ctl_reply *r);
void ctl_http_global_init(void);
void ctl_http_global_cleanup(void);

/* output.c */
typedef struct ctl_table ctl_table;
ctl_table *ctl_table_new(int ncols, const char *const *headers);
void ctl_table_row(ctl_table *t, const char *const *cells);
void ctl_table_print(ctl_table *t); /* to stdout; frees t */
/* The text of obj[key] for a table cell: strings as they are, integers
 * without exponent, booleans yes/no, null or missing "-". */
/* A JSON number as text: an exact integer as digits, a fraction %.15g, 2^53 or beyond %.17g. */
const char *ctl_number_text(const cJSON *v, char buf[64]);
const char *ctl_field(const cJSON *obj, const char *key, char buf[64]);
/* Prints the JSON array `rows` as a table: one row per object, one column
 * per key (ctl_field), under the given headers. n <= CTL_MAX_COLUMNS. */
#define CTL_MAX_COLUMNS 16
void ctl_print_rows(const cJSON *rows, const char *const *headers, const char *const *keys, int n);
/* Key-value lines of describe views ("Name:        orders"). */
void ctl_kv(const char *key, const char *value);
/* The control plane's answer as it sent it, on one line. */
void ctl_print_body(const ctl_reply *r);
/* yaml.c: -o yaml, the JSON answer as YAML (libyaml); ctl_print_reply picks json or yaml. */
int ctl_print_yaml(const cJSON *v);
void ctl_print_reply(const ctl_opts *o, const ctl_reply *r);
/* s as a JSON string literal (quotes and escapes included). */
void ctl_json_string(FILE *f, const char *s);

/* cmd_broker.c: a table of control-plane EVENT objects (broker describe,
 * placement history). */
void ctl_print_events(const cJSON *events);
/* cmd_shard.c: the brokers of a SHARD object's replicas, comma separated. */
const char *ctl_replica_brokers(const cJSON *shard, char *buf, size_t cap);
/* "/v1/shards/STREAM/SHARD" + suffix, escaped; exit 2 if it does not fit. */
int ctl_shard_path(const char *stream, uint32_t shard, const char *suffix, char *path, size_t cap);
/* The STREAM/SHARD argument, with a usage error naming it. */
int ctl_shard_arg(const char *arg, char *stream, size_t cap, uint32_t *shard);

/* parse.c: pure helpers (unit-tested in tests/unit/test_felixctl_parse.c). */
bool ctl_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* "10" (seconds), "10s", "500ms" or "2m", at most an hour, into milliseconds. */
bool ctl_parse_duration_ms(const char *s, uint64_t *out);
/* "STREAM/SHARD": splits at the last '/'. stream gets a copy (cap bytes). */
bool ctl_parse_stream_shard(const char *s, char *stream, size_t cap, uint32_t *shard);
/* Percent-encodes everything but RFC 3986 unreserved characters; returns
 * false when out (cap bytes) is too small. */
bool ctl_url_escape(const char *s, char *out, size_t cap);
/* "127.0.0.1:7070/" -> "http://127.0.0.1:7070"; NULL for other schemes.
 * The result is malloc'd. */
char *ctl_normalise_url(const char *url);
/* The acks policy's wire value (felix_acks), or -1 for an unknown name. */
int ctl_acks_value(const char *name);
bool ctl_is_shard_state(const char *name);

/* config.c: the contexts file (felixctl(1), CONTEXTS). */
#define CTL_MAX_CONTEXTS 32
#define CTL_CONTEXT_NAME_MAX 64
typedef struct ctl_context {
  char name[CTL_CONTEXT_NAME_MAX];
  char control_plane[512]; /* normalised (ctl_normalise_url) */
  char token_file[1024];   /* "" when the context names none */
} ctl_context;
typedef struct ctl_config {
  char path[1024]; /* "" when there is no place for one (no HOME) */
  bool exists;
  char current[CTL_CONTEXT_NAME_MAX]; /* "" when none is current */
  ctl_context ctx[CTL_MAX_CONTEXTS];
  int n;
} ctl_config;
bool ctl_context_name_ok(const char *s);
ctl_context *ctl_config_find(ctl_config *c, const char *name);
/* Parses text (modified) into c; 0, or the bad line's number with err
 * set to "line N: why". */
int ctl_config_parse(char *text, ctl_config *c, char *err, size_t cap);
char *ctl_config_format(const ctl_config *c); /* malloc'd */
/* $FELIX_CONFIG, $XDG_CONFIG_HOME/felix/config or ~/.config/felix/config. */
bool ctl_config_path(char *out, size_t cap);
/* Loads the file (absent: no contexts). -1, or an exit code after the
 * error naming the file and line. */
int ctl_config_load(ctl_config *c);
int ctl_config_save(const ctl_config *c); /* -1 or an exit code */

/* watch.c: --watch; runs c until SIGINT or SIGTERM, exit 0. */
int ctl_watch(const struct ctl_command *c, const ctl_opts *o);

/* dataplane.c: what produce and consume share. */
/* The number of shards of stream (GET /v1/streams/NAME). */
int ctl_stream_shard_count(const ctl_opts *o, const char *stream, uint32_t *n);
/* The address of the shard's leader (GET /v1/shards/S/N), waiting up to
 * o->wait_ms while it has none; exit 1 with a hint when it still has none,
 * at once at NoCaughtUpReplica (waiting cannot help there). */
int ctl_shard_leader(const ctl_opts *o, const char *stream, uint32_t shard, char *addr, size_t cap);
/* Prints the failure of a felix_session_* call on STREAM/SHARD led at
 * address and returns its exit code. */
int ctl_data_error(const felix_err *err, const char *verb, const char *stream, uint32_t shard,
                   const char *address);

#endif

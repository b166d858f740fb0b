/* cmd_identity.c — storage-id and run-state, and the next-start verdict that
 * the summary screen shows too. */
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "felix/fileutil.h"
#include "felix/jsonnum.h"
#include "inspect.h"

static felix_status open_datadir(const char *path, int *fd, felix_err *err) {
  felix_status st = felix_open_dir(AT_FDCWD, path, fd, err);
  if (st == FELIX_E_NOTFOUND) felix_fail(err, st, "data directory %s does not exist", path);
  return st;
}

/* The files a broker makes at its start (felix-storage(5)); a directory with
 * none of them is not a data directory, and one missing some is said so. The
 * lock file is not among them: it holds nothing, a copy of a directory
 * (rsync, a restore point's files) rightly leaves it behind. */
static const char *const made_at_start[] = {"storage-id", "run-state", "shards/"};

static felix_status check_felix_files(int fd, const char *datadir, next_start *ns, felix_err *err) {
  size_t found = 0, n = sizeof made_at_start / sizeof made_at_start[0];
  for (size_t i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(made_at_start[i], "/"), made_at_start[i]);
    if (faccessat(fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) found++;
    else snprintf(ns->missing + strlen(ns->missing), sizeof ns->missing - strlen(ns->missing), "%s%s",
                  ns->missing[0] ? ", " : "", made_at_start[i]);
  }
  if (found == 0)
    return felix_fail(err, FELIX_E_NOTFOUND, "%s is not a Felix data directory: it has no storage-id, run-state or shards/", datadir);
  return FELIX_OK;
}

static void decide(const next_start *ns, const char *current_boot, bool token, felix_last_run last_run,
                   felix_identity_verdict *v) {
  felix_identity_facts f = {
      .storage_id_created = !ns->have_storage_id,
      .last_run = last_run,
      .last_mode = ns->rs.fsync_mode,
      .last_boot_known = ns->run_state_present && ns->rs.has_boot_id,
      .last_boot_id = ns->rs.boot_id,
      .current_boot_id = current_boot,
      .boot_token_present = token,
  };
  felix_identity_decide(&f, NULL, NULL, v); /* offline: no sync */
  if (!ns->have_storage_id)
    snprintf(v->reason, sizeof v->reason, "no storage-id file: the next start creates a new storage id");
}

/* The NSpid fields of /proc/PID/status (this namespace's pid first, the
 * process's own last); n is how many there are, 0 when unreadable. */
static int nspids(const char *status_path, long *last) {
  FILE *f = fopen(status_path, "r");
  if (!f) return 0;
  char line[256];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "NSpid:", 6)) continue;
    char *p = line + 6, *end;
    for (long v = strtol(p, &end, 10); end != p; v = strtol(p, &end, 10)) {
      *last = v;
      n++;
      p = end;
    }
  }
  fclose(f);
  return n;
}

/* pid's pid in its own (innermost) pid namespace; pid when unknown. */
static pid_t own_pid(pid_t pid) {
  char path[64];
  long last = 0;
  snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
  return nspids(path, &last) > 0 ? (pid_t)last : pid;
}

/* Whether this process runs in a child pid namespace (a container): the
 * kernel's initial pid namespace has a fixed inode number (PROC_PID_INIT_INO
 * in linux/proc_ns.h, not exported to user space). A /proc mounted for the
 * namespace shows one NSpid only, and NS_GET_PARENT never reaches above the
 * caller's own namespace: neither can tell. */
#define INITIAL_PID_NS_INO 0xEFFFFFFCu
static bool in_child_pid_namespace(void) {
  struct stat sb;
  return stat("/proc/self/ns/pid", &sb) == 0 && sb.st_ino != INITIAL_PID_NS_INO;
}

/* While a broker runs: a start after its death finds state=running. With the
 * machine up it is the run's own boot (its token decides); with the machine
 * down it is a later boot, whose id no run has recorded. */
static void decide_if_it_dies(next_start *ns) {
  bool token = ns->have_storage_id && ns->rs.has_boot_id && felix_boot_token_present(&ns->sid, ns->rs.boot_id);
  decide(ns, ns->rs.has_boot_id ? ns->rs.boot_id : NULL, token, FELIX_LAST_RUN_CRASHED, &ns->if_dies_up);
  decide(ns, "(a later boot)", false, FELIX_LAST_RUN_CRASHED, &ns->if_dies_down);
}

felix_status inspect_next_start(const char *datadir, next_start *ns, felix_err *err) {
  memset(ns, 0, sizeof *ns);
  int fd;
  felix_status st = open_datadir(datadir, &fd, err);
  if (st) return st;
  st = check_felix_files(fd, datadir, ns, err);
  if (!st) {
    felix_status sid = felix_storage_id_load(fd, datadir, &ns->sid, err);
    ns->have_storage_id = sid == FELIX_OK;
    if (sid != FELIX_E_NOTFOUND) st = sid;
  }
  if (!st) st = felix_run_state_read(fd, datadir, &ns->rs, &ns->run_state_present, err);
  if (!st) ns->holder = felix_dir_lock_holder(fd);
  close(fd);
  if (st) return st;
  felix_err berr;
  ns->boot_known = felix_boot_id_read(ns->current_boot, ns->boot_source, &berr) == FELIX_OK;
  ns->last_run = felix_last_run_of(&ns->rs, ns->run_state_present);
  if (ns->have_storage_id && ns->boot_known) felix_boot_token_path(&ns->sid, ns->current_boot, ns->token_path, sizeof ns->token_path);
  ns->token_present = ns->token_path[0] && felix_boot_token_present(&ns->sid, ns->current_boot);
  /* The pid alone may be reused (a broker is pid 1 in every container): the
   * run is this one only when it also ran on this boot. */
  bool this_boot = !ns->boot_known || (ns->rs.has_boot_id && !strcmp(ns->rs.boot_id, ns->current_boot));
  /* A broker in a container is pid 1 there and another pid here: run-state
   * has the one it saw, /proc/locks the one this namespace sees. */
  ns->holder_own_pid = ns->holder ? own_pid(ns->holder) : 0;
  if (ns->holder_own_pid == ns->holder) ns->holder_own_pid = 0;
  bool names_holder = ns->rs.pid == ns->holder || (ns->holder_own_pid && ns->rs.pid == ns->holder_own_pid);
  bool says_running = ns->run_state_present && ns->rs.state == FELIX_RUN_RUNNING && this_boot;
  ns->running = ns->holder > 0 && says_running && names_holder;
  /* /proc/locks lists only the locks of processes this pid namespace holds */
  ns->unseen_run = !ns->holder && says_running && in_child_pid_namespace();
  decide(ns, ns->boot_known ? ns->current_boot : NULL, ns->token_present, ns->last_run, &ns->verdict);
  if (ns->running) decide_if_it_dies(ns);
  return FELIX_OK;
}

static cJSON *verdict_json(const felix_identity_verdict *v) {
  cJSON *n = cJSON_CreateObject();
  cJSON_AddBoolToObject(n, "rotate", v->rotate);
  cJSON_AddStringToObject(n, "reason", v->reason);
  cJSON_AddBoolToObject(n, "needs_sync", v->needs_sync);
  return n;
}

/* A string field of a run, null when run-state does not record it. */
static cJSON *run_text(const next_start *ns, bool recorded, const char *v) {
  return ns->run_state_present && recorded ? cJSON_CreateString(v) : cJSON_CreateNull();
}

static void add_missing_json(const next_start *ns, cJSON *o) {
  cJSON *arr = cJSON_AddArrayToObject(o, "missing");
  for (size_t i = 0; i < sizeof made_at_start / sizeof made_at_start[0]; i++)
    if (strstr(ns->missing, made_at_start[i])) cJSON_AddItemToArray(arr, cJSON_CreateString(made_at_start[i]));
}

/* run-state's since= (RFC 3339 to the second, as written) in the form of
 * every time in JSON, with microseconds; the text as it is when it is not
 * that form (the text view names what is wrong with it). */
static cJSON *since_json(const next_start *ns) {
  if (!ns->run_state_present) return cJSON_CreateNull();
  const char *v = ns->rs.since;
  struct tm tm = {0};
  char *end = strptime(v, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (!end || *end) return cJSON_CreateString(v);
  char t[FELIX_RFC3339_US_LEN];
  felix_format_rfc3339_us(t, (int64_t)timegm(&tm) * 1000000);
  return cJSON_CreateString(t);
}

cJSON *inspect_next_start_json(const next_start *ns) {
  const felix_run_state *rs = &ns->rs;
  bool ran = rs->state != FELIX_RUN_RESTORED; /* a restored directory names no run */
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "storage_id", ns->have_storage_id ? cJSON_CreateString(ns->sid.hex) : cJSON_CreateNull());
  cJSON_AddStringToObject(o, "last_run", ns->running      ? "running"
                                         : ns->unseen_run ? "unknown"
                                                          : felix_last_run_name(ns->last_run));
  cJSON_AddItemToObject(o, "fsync_mode", run_text(ns, ran, felix_fsync_mode_name(rs->fsync_mode)));
  cJSON_AddItemToObject(o, "boot_id", run_text(ns, rs->has_boot_id, rs->boot_id));
  cJSON_AddItemToObject(o, "boot_id_source", run_text(ns, rs->has_boot_id, rs->boot_id_source[0] ? rs->boot_id_source : "kernel"));
  cJSON_AddItemToObject(o, "pid", ns->run_state_present && ran ? cJSON_CreateNumber((double)rs->pid) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "changed_at", since_json(ns)); /* run-state since=: when last_run took its state */
  cJSON_AddItemToObject(o, "broker_id", run_text(ns, rs->broker_id[0], rs->broker_id));
  cJSON_AddItemToObject(o, "restored_from", run_text(ns, rs->restored_from[0], rs->restored_from));
  cJSON_AddItemToObject(o, "restored_by", run_text(ns, rs->restored_by[0], rs->restored_by));
  cJSON_AddItemToObject(o, "current_boot_id", ns->boot_known ? cJSON_CreateString(ns->current_boot) : cJSON_CreateNull());
  cJSON_AddBoolToObject(o, "boot_token_present", ns->token_present);
  cJSON_AddItemToObject(o, "boot_token_path", ns->token_path[0] ? cJSON_CreateString(ns->token_path) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "locked_by_pid", ns->holder ? cJSON_CreateNumber(ns->holder) : cJSON_CreateNull());
  add_missing_json(ns, o);
  cJSON_AddItemToObject(o, "next_start", ns->running ? cJSON_CreateNull() : verdict_json(&ns->verdict));
  if (ns->running) {
    cJSON *d = cJSON_AddObjectToObject(o, "if_it_dies_now");
    cJSON_AddItemToObject(d, "machine_up", verdict_json(&ns->if_dies_up));
    cJSON_AddItemToObject(d, "machine_down", verdict_json(&ns->if_dies_down));
  } else {
    cJSON_AddNullToObject(o, "if_it_dies_now");
  }
  return o;
}

static const char *boot_of_run(const felix_run_state *rs, char *out, size_t cap) {
  if (!rs->has_boot_id) return "unrecorded";
  snprintf(out, cap, "%s from %s", rs->boot_id, rs->boot_id_source[0] ? rs->boot_id_source : "kernel");
  return out;
}

static void print_last_run(const next_start *ns) {
  const felix_run_state *rs = &ns->rs;
  char boot[FELIX_BOOT_ID_MAX + 16];
  if (!ns->run_state_present)
    printf("last run:     unrecorded (no run-state file)\n");
  else if (ns->running && ns->holder_own_pid)
    printf("last run:     running now (pid %lld in its pid namespace, %ld here; since %s, fsync_mode=%s, boot %s)\n",
           (long long)rs->pid, (long)ns->holder, rs->since, felix_fsync_mode_name(rs->fsync_mode),
           boot_of_run(rs, boot, sizeof boot));
  else if (ns->running)
    printf("last run:     running now (pid %lld, since %s, fsync_mode=%s, boot %s)\n", (long long)rs->pid, rs->since,
           felix_fsync_mode_name(rs->fsync_mode), boot_of_run(rs, boot, sizeof boot));
  else if (ns->unseen_run)
    printf("last run:     unknown: run-state says running (pid %lld, since %s, boot %s),\n"
           "              and no process this pid namespace sees holds the lock: it crashed, or it runs\n"
           "              in another pid namespace (this container's host, another container);\n"
           "              felix-inspect there can tell\n",
           (long long)rs->pid, rs->since, boot_of_run(rs, boot, sizeof boot));
  else if (rs->state == FELIX_RUN_RESTORED)
    printf("last run:     none since the restore (state=restored)\n");
  else
    printf("last run:     %s (state=%s, fsync_mode=%s, boot %s, pid %lld, since %s)\n", felix_last_run_name(ns->last_run),
           felix_run_phase_name(rs->state), felix_fsync_mode_name(rs->fsync_mode), boot_of_run(rs, boot, sizeof boot),
           (long long)rs->pid, rs->since);
  if (ns->holder && !ns->running)
    printf("in use:       pid %ld holds the directory lock, but run-state names no run of it (a restore, or a start before it wrote run-state)\n",
           (long)ns->holder);
  if (ns->run_state_present && rs->broker_id[0]) printf("broker:       %s\n", rs->broker_id);
  if (ns->run_state_present && rs->restored_from[0])
    printf("restored:     from %s at %s%s%s: every copy is new to the control plane\n", rs->restored_from, rs->since,
           rs->restored_by[0] ? " by " : "", rs->restored_by);
}

static void print_boot(const next_start *ns) {
  const felix_run_state *rs = &ns->rs;
  bool same = ns->boot_known && ns->run_state_present && rs->has_boot_id && !strcmp(rs->boot_id, ns->current_boot);
  printf("this boot:    %s%s, ", ns->boot_known ? ns->current_boot : "(unknown)", same ? " (same boot as the last run)" : "");
  if (!ns->token_path[0])
    printf("boot token: none to look for (%s)\n", ns->have_storage_id ? "the boot id is unknown" : "no storage id yet");
  else if (ns->token_present)
    printf("boot token present (%s)\n", ns->token_path);
  else
    printf("boot token absent: no %s (runtime directory %s; if the broker uses another, set FELIX_RUNTIME_DIR to it)\n",
           ns->token_path, felix_runtime_dir());
}

static void print_verdict(const char *label, const felix_identity_verdict *v) {
  printf("%s%s the storage id — %s\n", label, v->rotate ? "ROTATE" : "keep", v->reason);
}

void inspect_next_start_print(const next_start *ns) {
  printf("storage id:   %s\n", ns->have_storage_id ? ns->sid.hex : "(none: created at next start)");
  if (ns->missing[0]) printf("missing:      %s (a broker's start creates each; felix-storage(5))\n", ns->missing);
  print_last_run(ns);
  print_boot(ns);
  if (!ns->running) {
    print_verdict(ns->unseen_run ? "if crashed:   " : "next start:   ", &ns->verdict);
    return;
  }
  print_verdict("if it dies:   with the machine up: ", &ns->if_dies_up);
  print_verdict("              with the machine down: ", &ns->if_dies_down);
}

int cmd_storage_id(const inspect_opts *o) {
  int fd;
  felix_err err;
  felix_storage_id sid;
  felix_status st = open_datadir(o->args[0], &fd, &err);
  if (st) return inspect_fail(&err, NULL);
  st = felix_storage_id_load(fd, o->args[0], &sid, &err);
  close(fd);
  if (st == FELIX_E_NOTFOUND)
    return inspect_error(FELIX_EXIT_NOT_FOUND, "a broker creates it at its first start", "%s has no storage-id file", o->args[0]);
  if (st) return inspect_fail(&err, NULL);
  if (o->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "storage_id", sid.hex);
    inspect_print_json(j);
  } else {
    printf("%s\n", sid.hex);
  }
  return FELIX_EXIT_OK;
}

const char *next_start_hint(const felix_err *err) {
  if (err->status == FELIX_E_NOTFOUND && strstr(err->msg, "is not a Felix data directory"))
    return "give the directory a broker runs on (its --data-dir or FELIX_DATA_DIR)";
  return NULL;
}

int cmd_run_state(const inspect_opts *o) {
  next_start ns;
  felix_err err;
  felix_status st = inspect_next_start(o->args[0], &ns, &err);
  if (st) return inspect_fail(&err, next_start_hint(&err));
  if (o->json) inspect_print_json(inspect_next_start_json(&ns));
  else inspect_next_start_print(&ns);
  return FELIX_EXIT_OK;
}

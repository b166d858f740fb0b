/* cmd_identity.c — storage-id and run-state, and the next-start verdict that
 * the summary screen shows too. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "felix/fileutil.h"
#include "inspect.h"

static felix_status open_datadir(const char *path, int *fd, felix_err *err) {
  felix_status st = felix_open_dir(AT_FDCWD, path, fd, err);
  if (st == FELIX_E_NOTFOUND) felix_fail(err, st, "data directory %s does not exist", path);
  return st;
}

felix_status inspect_next_start(const char *datadir, next_start *ns, felix_err *err) {
  memset(ns, 0, sizeof *ns);
  int fd;
  felix_status st = open_datadir(datadir, &fd, err);
  if (st) return st;
  st = felix_storage_id_load(fd, datadir, &ns->sid, err);
  ns->have_storage_id = st == FELIX_OK;
  if (st == FELIX_E_NOTFOUND) st = FELIX_OK;
  if (!st) st = felix_run_state_read(fd, datadir, &ns->rs, &ns->run_state_present, err);
  close(fd);
  if (st) return st;
  felix_err berr;
  ns->boot_known = felix_boot_id_read(ns->current_boot, ns->boot_source, &berr) == FELIX_OK;
  ns->last_run = felix_last_run_of(&ns->rs, ns->run_state_present);
  ns->token_present = ns->have_storage_id && ns->boot_known && felix_boot_token_present(&ns->sid, ns->current_boot);
  felix_identity_facts f = {
      .storage_id_created = !ns->have_storage_id,
      .last_run = ns->last_run,
      .last_mode = ns->rs.fsync_mode,
      .last_boot_known = ns->run_state_present && ns->rs.has_boot_id,
      .last_boot_id = ns->rs.boot_id,
      .current_boot_id = ns->boot_known ? ns->current_boot : NULL,
      .boot_token_present = ns->token_present,
  };
  felix_identity_decide(&f, NULL, NULL, &ns->verdict); /* offline: no sync */
  if (!ns->have_storage_id)
    snprintf(ns->verdict.reason, sizeof ns->verdict.reason, "no storage-id file: the next start creates a new storage id");
  return FELIX_OK;
}

cJSON *inspect_next_start_json(const next_start *ns) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "storage_id", ns->have_storage_id ? cJSON_CreateString(ns->sid.hex) : cJSON_CreateNull());
  cJSON_AddStringToObject(o, "last_run", felix_last_run_name(ns->last_run));
  cJSON_AddItemToObject(o, "fsync_mode", ns->run_state_present ? cJSON_CreateString(felix_fsync_mode_name(ns->rs.fsync_mode)) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "boot_id", ns->run_state_present && ns->rs.has_boot_id ? cJSON_CreateString(ns->rs.boot_id) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "boot_id_source", ns->run_state_present && ns->rs.has_boot_id ? cJSON_CreateString(ns->rs.boot_id_source[0] ? ns->rs.boot_id_source : "kernel") : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "pid", ns->run_state_present ? cJSON_CreateNumber((double)ns->rs.pid) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "since", ns->run_state_present ? cJSON_CreateString(ns->rs.since) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "broker_id", ns->run_state_present && ns->rs.broker_id[0] ? cJSON_CreateString(ns->rs.broker_id) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "restored_from", ns->run_state_present && ns->rs.restored_from[0] ? cJSON_CreateString(ns->rs.restored_from) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "current_boot_id", ns->boot_known ? cJSON_CreateString(ns->current_boot) : cJSON_CreateNull());
  cJSON_AddBoolToObject(o, "boot_token_present", ns->token_present);
  cJSON *n = cJSON_AddObjectToObject(o, "next_start");
  cJSON_AddBoolToObject(n, "rotate", ns->verdict.rotate);
  cJSON_AddStringToObject(n, "reason", ns->verdict.reason);
  cJSON_AddBoolToObject(n, "needs_sync", ns->verdict.needs_sync);
  return o;
}

void inspect_next_start_print(const next_start *ns) {
  printf("storage id:   %s\n", ns->have_storage_id ? ns->sid.hex : "(none: created at next start)");
  if (ns->run_state_present)
    printf("last run:     %s (state=%s, fsync_mode=%s, boot %s%s%s, pid %lld, since %s)\n",
           felix_last_run_name(ns->last_run), ns->rs.state == FELIX_RUN_RUNNING ? "running" : "stopped",
           felix_fsync_mode_name(ns->rs.fsync_mode), ns->rs.has_boot_id ? ns->rs.boot_id : "unrecorded",
           ns->rs.has_boot_id ? " from " : "", ns->rs.has_boot_id ? (ns->rs.boot_id_source[0] ? ns->rs.boot_id_source : "kernel") : "",
           (long long)ns->rs.pid, ns->rs.since);
  else
    printf("last run:     unrecorded (no run-state file)\n");
  if (ns->run_state_present && ns->rs.broker_id[0]) printf("broker:       %s\n", ns->rs.broker_id);
  if (ns->run_state_present && ns->rs.restored_from[0])
    printf("restored:     from %s at %s: every copy is new to the control plane\n", ns->rs.restored_from, ns->rs.since);
  printf("this boot:    %s%s, boot token %s\n", ns->boot_known ? ns->current_boot : "(unknown)",
         ns->boot_known && ns->run_state_present && ns->rs.has_boot_id && !strcmp(ns->rs.boot_id, ns->current_boot) ? " (same boot as the last run)" : "",
         ns->token_present ? "present" : "absent");
  printf("next start:   %s the storage id — %s\n", ns->verdict.rotate ? "ROTATE" : "keep", ns->verdict.reason);
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

int cmd_run_state(const inspect_opts *o) {
  next_start ns;
  felix_err err;
  felix_status st = inspect_next_start(o->args[0], &ns, &err);
  if (st) return inspect_fail(&err, NULL);
  if (o->json) inspect_print_json(inspect_next_start_json(&ns));
  else inspect_next_start_print(&ns);
  return FELIX_EXIT_OK;
}

/* main.c — felix-broker: dispatch to the control plane or the broker. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "felix/cli.h"
#include "felix/exitcode.h"
#include "programs.h"

static void usage(FILE *f) {
  fputs("usage: felix-broker control-plane --listen ADDR --db FILE [--lease-ms N]\n"
        "                                  [--admin-token-file F] [--broker-token-file F]\n"
        "                                  [--log-level LEVEL]\n"
        "       felix-broker run --id ID --data-dir DIR --listen ADDR --http ADDR\n"
        "                        --control-plane URL [--fsync-mode none|periodic|on_commit]\n"
        "                        [--fsync-interval-ms N] [--token-file F] [--log-level LEVEL]\n"
        "       felix-broker restore-point create|list|verify|restore|prune ...\n"
        "       felix-broker version | --help | --version\n\n"
        "  control-plane  run the control plane: HTTP/JSON API on ADDR, state in the SQLite FILE\n"
        "  run            run a broker: serve the data protocol on ADDR for the shards placed on it\n"
        "  restore-point  make, list, verify, restore and prune backups of a data directory's shard logs\n"
        "  version        print the version (as --version)\n\n"
        "Each subcommand takes --help. See felix-broker(8).\n",
        f);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return FELIX_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(stdout);
    return FELIX_EXIT_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("felix-broker %s\n", FELIX_VERSION);
    return FELIX_EXIT_OK;
  }
  /* Every role writes to sockets whose other end may be gone (a killed
   * leader, a producer that hung up): that must be an EPIPE error to handle,
   * never a signal that kills the process. */
  signal(SIGPIPE, SIG_IGN);
  if (!strcmp(cmd, "control-plane")) return cp_main(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return broker_main(argc - 1, argv + 1);
  if (!strcmp(cmd, "restore-point")) return rp_main(argc - 1, argv + 1);
  fprintf(stderr, "felix-broker: error: unknown command '%s'\nfelix-broker: hint: felix-broker --help lists the commands\n", cmd);
  return FELIX_EXIT_USAGE;
}

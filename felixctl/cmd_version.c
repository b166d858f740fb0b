/* cmd_version.c — `felixctl version` (also `felixctl --version`). Talks to
 * nothing, so it works without a control plane or token. */
#include <stdio.h>

#include "felixctl.h"

static int version(const ctl_opts *o) {
  if (o->format == CTL_JSON) printf("{\"version\":\"%s\"}\n", FELIX_VERSION);
  else if (o->format == CTL_YAML) printf("version: %s\n", FELIX_VERSION);
  else printf("felixctl %s\n", FELIX_VERSION);
  return FELIX_EXIT_OK;
}

const ctl_command ctl_cmd_version = {
    .group = "version",
    .usage = "version",
    .summary = "print the version",
    .help = "\n"
            "Prints \"felixctl VERSION\"; with -o json, {\"version\": \"VERSION\"}.\n",
    .run = version,
};

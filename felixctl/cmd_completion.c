/* cmd_completion.c — `felixctl completion bash|zsh|fish`: prints the shell
 * completion script. The scripts of completions/ are embedded at build time
 * (scripts/embed.sh), so an installed felixctl always completes its own
 * commands with exactly what packagers install.
 *
 * They complete commands, subcommands, every flag and the fixed values
 * (-o table|json, --acks, --state, the shells); stream names are not
 * completed, which would need a token and a round trip per keystroke. */
#include <stdio.h>
#include <string.h>

#include "felixctl.h"

#include "felixctl_completions.h" /* bash_script, zsh_script, fish_script: made from completions/ */

static int completion(const ctl_opts *o) {
  const char *shell = o->args[0];
  if (!strcmp(shell, "bash")) fputs(bash_script, stdout);
  else if (!strcmp(shell, "zsh")) fputs(zsh_script, stdout);
  else if (!strcmp(shell, "fish")) fputs(fish_script, stdout);
  else
    return ctl_error(FELIX_EXIT_USAGE, "felixctl completion bash|zsh|fish", "no completion for shell '%s'", shell);
  return FELIX_EXIT_OK;
}

const ctl_command ctl_cmd_completion = {
    .group = "completion",
    .nargs = 1,
    .usage = "completion bash|zsh|fish",
    .summary = "print a shell completion script",
    .help = "\n"
            "Prints the completion script for the shell on stdout; -o is ignored.\n"
            "  bash:  eval \"$(felixctl completion bash)\"   (in ~/.bashrc)\n"
            "  zsh:   felixctl completion zsh > \"${fpath[1]}/_felixctl\"\n"
            "  fish:  felixctl completion fish > ~/.config/fish/completions/felixctl.fish\n",
    .run = completion,
};

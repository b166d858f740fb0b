/* watch.c — --watch on cluster status, broker list and shard list: the
 * command again every 2 s, each time in a child process whose output is
 * compared with the last one. On a terminal the screen is redrawn under a
 * line with the time; in a pipe an output is printed only when it changed
 * (as kubectl -w), after a line with the time in table mode, alone with -o
 * json (one JSON document per line). A failed request is printed and the
 * watch goes on: the control plane may be restarting. SIGINT or SIGTERM
 * ends it with exit 0. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "felix/fileutil.h"
#include "felixctl.h"

#define WATCH_INTERVAL_MS 2000

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = sig; }

/* All of fd into a malloc'd string. */
static char *read_all(int fd) {
  size_t n = 0, cap = 4096;
  char *buf = malloc(cap);
  for (ssize_t k; buf; n += (size_t)k) {
    if (n + 1024 > cap && !(buf = realloc(buf, cap *= 2))) break;
    k = read(fd, buf + n, cap - n - 1);
    if (k < 0 && errno == EINTR) k = 0;
    else if (k <= 0) break;
  }
  if (buf) buf[n] = '\0';
  return buf;
}

/* Runs the command once in a child; its stdout into *out, its stderr into *err. */
static void run_once(const ctl_command *c, const ctl_opts *o, char **out, char **err) {
  int po[2], pe[2];
  *out = *err = NULL;
  if (pipe(po) != 0 || pipe(pe) != 0) return;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(po[1], STDOUT_FILENO);
    dup2(pe[1], STDERR_FILENO);
    close(po[0]), close(pe[0]), close(po[1]), close(pe[1]);
    int rc = c->run(o);
    fflush(stdout);
    _exit(rc);
  }
  close(po[1]), close(pe[1]);
  if (pid > 0) {
    *out = read_all(po[0]); /* stdout first: a command's stderr is a line or two, never a full pipe */
    *err = read_all(pe[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
  }
  close(po[0]), close(pe[0]);
}

static void show(const ctl_command *c, const ctl_opts *o, const char *out, const char *err, bool tty) {
  char now[40];
  felix_format_rfc3339(now, time(NULL));
  if (tty)
    printf("\033[H\033[2JEvery %.1fs: felixctl %s%s%s   %s\n\n", WATCH_INTERVAL_MS / 1000.0, c->group, c->verb ? " " : "",
           c->verb ? c->verb : "", now);
  else if (o->format == CTL_YAML)
    fputs("---\n", stdout); /* a stream of YAML documents */
  else if (o->format != CTL_JSON)
    printf("# %s\n", now);
  fputs(out, stdout);
  fflush(stdout);
  fputs(err, stderr);
}

int ctl_watch(const ctl_command *c, const ctl_opts *o) {
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  bool tty = isatty(STDOUT_FILENO);
  char *last = NULL;
  while (!stop) {
    char *out, *err;
    run_once(c, o, &out, &err);
    if (!out || !err) {
      free(out), free(err), free(last);
      return ctl_error(FELIX_EXIT_FAILURE, NULL, "--watch: cannot run the command: %s", strerror(errno));
    }
    size_t n = strlen(out) + strlen(err) + 1;
    char *both = malloc(n + 1);
    if (both) snprintf(both, n + 1, "%s\x1f%s", out, err);
    if (tty || !last || !both || strcmp(both, last)) show(c, o, out, err, tty);
    free(out), free(err), free(last);
    last = both;
    struct timespec t = {WATCH_INTERVAL_MS / 1000, (WATCH_INTERVAL_MS % 1000) * 1000000L};
    while (!stop && nanosleep(&t, &t) != 0 && errno == EINTR) {}
  }
  free(last);
  return FELIX_EXIT_OK;
}

/* watch.c — --watch on cluster status, broker list and shard list: the
 * command again every 2 s, each time in a child process whose output is
 * compared with the last one. On a terminal the screen is redrawn under a
 * line with the time; in a pipe an output is printed only when it changed
 * (as kubectl -w), after a line with the time in table mode, alone with -o
 * json (one JSON document per line). A failed request is printed and the
 * watch goes on: the control plane may be restarting. SIGINT or SIGTERM
 * ends it with exit 0. What is compared is what the command prints without
 * the ages in its answers (keys ending in _age_ms: a lease age differs on
 * every refresh), and its errors: the child runs the command, then runs it
 * again on the answers it got, ages removed, into a third pipe (a replay:
 * no request). A broker list whose brokers did not change is not printed
 * again because a second passed; a field the table does not show that
 * changed does not print the same table again (found by helper-27). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

enum { WATCH_OFF, WATCH_RECORD, WATCH_REPLAY };
#define WATCH_MAX_ANSWERS 16 /* a command's requests per run (cluster status makes three) */
static int watch_mode;
static cJSON *answers[WATCH_MAX_ANSWERS];
static int nanswers, replayed;

/* Without the members whose name ends in _age_ms, at any depth. */
static void drop_ages(cJSON *j) {
  for (cJSON *x = j ? j->child : NULL, *next; x; x = next) {
    next = x->next;
    size_t n = x->string ? strlen(x->string) : 0;
    if (n > 7 && !strcmp(x->string + n - 7, "_age_ms")) cJSON_Delete(cJSON_DetachItemViaPointer(j, x));
    else drop_ages(x);
  }
}

void ctl_watch_note_reply(const cJSON *json) {
  if (watch_mode != WATCH_RECORD || nanswers == WATCH_MAX_ANSWERS) return;
  cJSON *copy = cJSON_Duplicate(json, true);
  drop_ages(copy);
  answers[nanswers++] = copy; /* NULL (out of memory): the replay fails, and its empty key is a change at worst */
}

bool ctl_watch_replaying(void) { return watch_mode == WATCH_REPLAY; }

int ctl_watch_replay_next(ctl_reply *out) {
  memset(out, 0, sizeof *out);
  if (replayed >= nanswers || !answers[replayed]) return FELIX_EXIT_FAILURE; /* its stderr goes nowhere */
  out->status = 200;
  out->json = answers[replayed];
  answers[replayed++] = NULL; /* the caller's now: ctl_reply_free frees it */
  out->body = cJSON_PrintUnformatted(out->json); /* -o json prints the body (NULL: prints nothing, a change at worst) */
  out->len = out->body ? strlen(out->body) : 0;
  return 0;
}

typedef struct grown {
  char *buf;
  size_t n, cap;
  bool failed;
} grown;

/* Reads what is there on fd into g; false at its end (or an error). */
static bool read_some(int fd, grown *g) {
  if (g->n + 1024 > g->cap) {
    char *b = realloc(g->buf, g->cap = g->cap ? 2 * g->cap : 4096);
    if (!b) return g->failed = true, false;
    g->buf = b;
  }
  ssize_t k = read(fd, g->buf + g->n, g->cap - g->n - 1);
  if (k < 0 && errno == EINTR) return true;
  if (k <= 0) return false;
  g->n += (size_t)k;
  return true;
}

/* Every fd to its end, at once (one that fills its pipe cannot block the
 * child while another is read); out[i] malloc'd, NULL when it failed. */
static void read_all(int *fds, int nfds, char **out) {
  struct pollfd p[3];
  grown g[3] = {{0}};
  int open = nfds;
  for (int i = 0; i < nfds; i++) p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
  while (open > 0) {
    if (poll(p, (nfds_t)nfds, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < nfds; i++)
      if (p[i].fd >= 0 && p[i].revents && !read_some(p[i].fd, &g[i])) p[i].fd = -1, open--;
  }
  for (int i = 0; i < nfds; i++) {
    if (!g[i].failed && !g[i].buf) g[i].buf = malloc(1);
    if (g[i].failed || !g[i].buf) free(g[i].buf), g[i].buf = NULL;
    else g[i].buf[g[i].n] = '\0';
    out[i] = g[i].buf;
  }
}

/* Runs the command once in a child: its stdout, its stderr and what it
 * prints again on its answers without their ages into out[0..2]. */
static void run_once(const ctl_command *c, const ctl_opts *o, char **out) {
  int p[3][2], mine[3];
  out[0] = out[1] = out[2] = NULL;
  if (pipe(p[0]) != 0) return;
  if (pipe(p[1]) != 0) return close(p[0][0]), close(p[0][1]), (void)0;
  if (pipe(p[2]) != 0) return close(p[0][0]), close(p[0][1]), close(p[1][0]), close(p[1][1]), (void)0;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[0][1], STDOUT_FILENO);
    dup2(p[1][1], STDERR_FILENO);
    for (int i = 0; i < 3; i++) close(p[i][0]);
    close(p[0][1]), close(p[1][1]);
    watch_mode = WATCH_RECORD;
    int rc = c->run(o);
    fflush(stdout);
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    dup2(p[2][1], STDOUT_FILENO);
    if (devnull >= 0) dup2(devnull, STDERR_FILENO); /* its errors were the first run's */
    watch_mode = WATCH_REPLAY;
    c->run(o);
    fflush(stdout);
    _exit(rc);
  }
  for (int i = 0; i < 3; i++) close(p[i][1]), mine[i] = p[i][0];
  if (pid > 0) {
    read_all(mine, 3, out);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
  }
  for (int i = 0; i < 3; i++) close(mine[i]);
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
    char *got[3];
    run_once(c, o, got);
    char *out = got[0], *err = got[1], *key = got[2];
    if (!out || !err || !key) {
      free(out), free(err), free(key), free(last);
      return ctl_error(FELIX_EXIT_FAILURE, NULL, "--watch: cannot run the command: %s", strerror(errno));
    }
    /* no answer (the control plane is down): its error is what changes */
    size_t n = strlen(key) + strlen(err) + 1;
    char *both = malloc(n + 1);
    if (both) snprintf(both, n + 1, "%s\x1f%s", key, err);
    if (tty || !last || !both || strcmp(both, last)) show(c, o, out, err, tty);
    free(out), free(err), free(key), free(last);
    last = both;
    struct timespec t = {WATCH_INTERVAL_MS / 1000, (WATCH_INTERVAL_MS % 1000) * 1000000L};
    while (!stop && nanosleep(&t, &t) != 0 && errno == EINTR) {}
  }
  free(last);
  return FELIX_EXIT_OK;
}

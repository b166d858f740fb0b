/* cmd_top.c — `felixctl top`: a live ncurses view of the cluster, refreshed
 * every second from the control plane (the lines come from top_model.c).
 *
 * Keys: q quit, / filter, arrows (and j/k) to select a shard, Enter to open
 * it, Esc or Backspace back, ? help. SIGINT and SIGTERM end the view like q:
 * the handlers only set a flag, and the loop restores the terminal (endwin)
 * before it returns, so the shell is never left in raw mode. When the
 * control plane cannot be reached the last snapshot stays on screen under a
 * line that says so, and it keeps retrying every second. */
#include <curses.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "top_model.h"

#define TOP_MAX_SHARDS 4096

enum { PAIR_STUCK = 1, PAIR_FENCING, PAIR_ALERT, PAIR_TITLE };

typedef struct top_view {
  const ctl_opts *o;
  top_snapshot snap;
  bool have_snap;
  char error[1024];
  char filter[128];
  bool editing_filter;
  char edit[128];
  bool help, colors;
  char open[300]; /* "STREAM/N" of the open shard, "" in the main view */
  int selected, scroll;
  const cJSON *order[TOP_MAX_SHARDS];
  size_t norder;
  top_sort sort;
} top_view;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void refresh_data(top_view *v) {
  top_snapshot s;
  char err[1024];
  if (top_fetch(v->o, v->open[0] ? v->open : NULL, &s, err, sizeof err) == 0) {
    top_add_rates(&s, v->have_snap ? &v->snap : NULL);
    top_snapshot_free(&v->snap);
    v->snap = s;
    v->have_snap = true;
    v->error[0] = '\0';
  } else {
    snprintf(v->error, sizeof v->error, "%s", err);
  }
  v->norder = v->have_snap ? top_shard_order(v->snap.shards, v->filter, v->sort, v->order, TOP_MAX_SHARDS) : 0;
  if (v->selected >= (int)v->norder) v->selected = v->norder ? (int)v->norder - 1 : 0;
}

/* One line at row y; attr is A_NORMAL, A_BOLD, a colour pair... */
static void put(int y, const char *text, attr_t attr) {
  if (y < 0 || y >= LINES) return;
  move(y, 0);
  clrtoeol();
  attron(attr);
  addnstr(text, COLS);
  attroff(attr);
}

static attr_t urgency_attr(const top_view *v, const cJSON *shard) {
  int u = top_shard_urgency(shard);
  if (u == 2) return A_NORMAL;
  if (v->colors) return COLOR_PAIR(u == 0 ? PAIR_STUCK : PAIR_FENCING) | A_BOLD;
  return u == 0 ? A_BOLD | A_UNDERLINE : A_BOLD; /* no colours: still stands out */
}

static attr_t alert_attr(const top_view *v) { return v->colors ? COLOR_PAIR(PAIR_ALERT) | A_BOLD : A_REVERSE; }

static int draw_brokers(const top_view *v, int y, int max_rows) {
  char line[1024];
  top_broker_heading(line, sizeof line, COLS);
  put(y++, line, A_BOLD);
  int rows = 0;
  const cJSON *b;
  cJSON_ArrayForEach(b, v->snap.brokers) {
    if (rows == max_rows) break;
    top_broker_line(b, v->snap.shards, line, sizeof line, COLS);
    put(y++, line, cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(b, "alive")) ? alert_attr(v) : A_NORMAL);
    rows++;
  }
  return y;
}

static int draw_shards(top_view *v, int y, int rows) {
  char line[1024];
  top_shard_heading(line, sizeof line, COLS);
  put(y++, line, A_BOLD);
  if (rows < 1) return y;
  if (v->selected < v->scroll) v->scroll = v->selected;
  if (v->selected >= v->scroll + rows) v->scroll = v->selected - rows + 1;
  for (int i = 0; i < rows; i++) {
    size_t k = (size_t)(v->scroll + i);
    if (k >= v->norder) {
      put(y++, k == 0 ? (v->filter[0] ? "  (no shard matches the filter)" : "  (no shards)") : "", A_NORMAL);
      continue;
    }
    top_shard_line(v->order[k], line, sizeof line, COLS);
    put(y++, line, urgency_attr(v, v->order[k]) | ((int)k == v->selected ? A_REVERSE : A_NORMAL));
  }
  return y;
}

static void draw_events(const top_view *v, const cJSON *events, int y, int rows) {
  char line[1024];
  put(y++, v->open[0] ? "HISTORY OF THE SHARD (newest last)" : "EVENTS (newest last)", A_BOLD);
  int n = cJSON_GetArraySize(events), first = n > rows ? n - rows : 0;
  for (int i = 0; i < rows; i++) {
    const cJSON *e = first + i < n ? cJSON_GetArrayItem(events, first + i) : NULL;
    if (e) top_event_line(e, line, sizeof line, COLS);
    put(y++, e ? line : "", A_NORMAL);
  }
}

static const cJSON *open_shard(const top_view *v) {
  const cJSON *s;
  char name[300];
  cJSON_ArrayForEach(s, v->snap.shards) if (!strcmp(top_shard_name(s, name, sizeof name), v->open)) return s;
  return NULL;
}

static int draw_detail(const top_view *v, int y) {
  char line[1024];
  const cJSON *s = open_shard(v), *r;
  if (!s) {
    put(y++, "the shard is gone (deleted?): Esc goes back", alert_attr(v));
    return y;
  }
  top_detail_line(s, line, sizeof line, COLS);
  put(y++, line, urgency_attr(v, s));
  top_replica_heading(line, sizeof line, COLS);
  put(y++, line, A_BOLD);
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(s, "replicas")) {
    top_replica_line(s, r, line, sizeof line, COLS);
    put(y++, line, A_NORMAL);
  }
  return y;
}

static void draw_help(void) {
  static const char *lines[] = {
      "felixctl top: keys",
      "",
      "  q            quit (also Ctrl-C)",
      "  /            filter the shards: STREAM/N or any text of their line",
      "               (Enter applies, Esc cancels, empty clears)",
      "  s            sort the shards: urgency, name, hwm, rate, bytes, lag",
      "  Up Down j k  select a shard",
      "  Enter        open the selected shard: replicas, cursors, history",
      "  Esc Bksp     back to the cluster view",
      "  ?            this help (any key closes it)",
      "",
      "NoCaughtUpReplica and Fencing shards come first and stand out.",
      "FOLLOWERS: broker -lag; ! the copy was measured under a storage id its",
      "broker no longer has (it lost its data: a stranger); +N: N more followers.",
      "REC/S, B/S: per second over at least a second; - unknown (before a",
      "second refresh, or across another leader copy). SHARD: a long stream",
      "name is cut and marked ~ (transacti~/12).",
  };
  int n = (int)(sizeof lines / sizeof lines[0]);
  for (int i = 0; i < n && i + 2 < LINES; i++) put(i + 2, lines[i], i == 0 ? A_BOLD : A_NORMAL);
}

static void draw_status(const top_view *v) {
  char line[512];
  if (v->editing_filter) snprintf(line, sizeof line, "filter: %s_", v->edit);
  else top_status_line(v->filter, v->sort, line, sizeof line, COLS);
  put(LINES - 1, line, A_REVERSE);
}

static void draw(top_view *v) {
  erase();
  char line[1024];
  int y = 0;
  if (v->have_snap) top_header_line(v->o, &v->snap, line, sizeof line, COLS);
  else snprintf(line, sizeof line, "felix top  %s", v->o->control_plane);
  put(y++, line, v->colors ? COLOR_PAIR(PAIR_TITLE) | A_BOLD : A_BOLD);
  if (v->error[0]) {
    snprintf(line, sizeof line, "control plane unreachable, retrying every second: %.900s", v->error);
    put(y++, line, alert_attr(v));
  }
  if (v->help) draw_help();
  else if (!v->have_snap) put(y + 1, "waiting for the control plane...", A_NORMAL);
  else if (v->open[0]) {
    int below = draw_detail(v, y + 1) + 1;
    draw_events(v, v->snap.history, below, LINES - 2 - below);
  } else {
    int events = LINES >= 24 ? 5 : LINES >= 16 ? 3 : 0, brokers = (LINES - 8 - events) / 3;
    y = draw_brokers(v, y, brokers < 1 ? 1 : brokers);
    int shard_rows = LINES - 1 - y - 1 - (events ? events + 1 : 0);
    y = draw_shards(v, y, shard_rows);
    if (events) draw_events(v, v->snap.events, y, events);
  }
  draw_status(v);
  refresh();
}

/* A key while the filter is edited. */
static void filter_key(top_view *v, int ch) {
  size_t n = strlen(v->edit);
  if (ch == 27) v->editing_filter = false;
  else if (ch == '\n' || ch == KEY_ENTER) {
    snprintf(v->filter, sizeof v->filter, "%s", v->edit);
    v->editing_filter = false;
    v->selected = v->scroll = 0;
    v->norder = top_shard_order(v->snap.shards, v->filter, v->sort, v->order, TOP_MAX_SHARDS);
  } else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n > 0) v->edit[n - 1] = '\0';
  else if (ch >= 32 && ch < 127 && n + 1 < sizeof v->edit) v->edit[n] = (char)ch, v->edit[n + 1] = '\0';
}

/* Returns false to quit. */
static bool key(top_view *v, int ch) {
  if (v->editing_filter) return filter_key(v, ch), true;
  if (v->help) return (v->help = false), ch != 'q';
  switch (ch) {
  case 'q': case 'Q': return false;
  case '?': v->help = true; break;
  case '/': v->editing_filter = true, snprintf(v->edit, sizeof v->edit, "%s", v->filter); break;
  case 's':
    v->sort = (top_sort)((v->sort + 1) % TOP_SORT_N);
    v->selected = v->scroll = 0;
    v->norder = v->have_snap ? top_shard_order(v->snap.shards, v->filter, v->sort, v->order, TOP_MAX_SHARDS) : 0;
    break;
  case KEY_UP: case 'k': if (v->selected > 0) v->selected--; break;
  case KEY_DOWN: case 'j': if (v->selected + 1 < (int)v->norder) v->selected++; break;
  case '\n': case KEY_ENTER:
    if (!v->open[0] && (size_t)v->selected < v->norder) {
      top_shard_name(v->order[v->selected], v->open, sizeof v->open);
      refresh_data(v);
    }
    break;
  case 27: case KEY_BACKSPACE: case 127: case 8: v->open[0] = '\0'; break;
  default: break;
  }
  return true;
}

static void setup_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static void setup_colors(top_view *v) {
  v->colors = has_colors() && start_color() == OK;
  if (!v->colors) return;
  use_default_colors();
  init_pair(PAIR_STUCK, COLOR_RED, -1);
  init_pair(PAIR_FENCING, COLOR_YELLOW, -1);
  init_pair(PAIR_ALERT, COLOR_WHITE, COLOR_RED);
  init_pair(PAIR_TITLE, COLOR_CYAN, -1);
}

static int run_view(top_view *v) {
  double next = 0;
  while (!stop_requested) {
    if (now_ms() >= next) {
      refresh_data(v);
      next = now_ms() + TOP_REFRESH_MS;
    }
    draw(v);
    int ch = getch();
    if (ch != ERR && !key(v, ch)) break;
  }
  return FELIX_EXIT_OK;
}

static int top(const ctl_opts *o) {
  if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
    return ctl_error(FELIX_EXIT_USAGE, "in scripts use felixctl -o json cluster status, shard list or broker list",
                     "felixctl top needs a terminal (stdin and stdout)");
  if (o->format == CTL_JSON)
    return ctl_error(FELIX_EXIT_USAGE, "use -o json with cluster status, shard list or broker list", "felixctl top has no JSON form");
  setup_signals();
  const char *term = getenv("TERM");
  SCREEN *scr = newterm(term && *term ? term : "dumb", stdout, stdin);
  if (!scr) return ctl_error(FELIX_EXIT_FAILURE, "set TERM to your terminal's type", "cannot use the terminal TERM=%s", term ? term : "");
  static top_view v; /* large: off the stack */
  memset(&v, 0, sizeof v);
  ctl_opts quick = *o;
  if (quick.timeout_ms > 2000) quick.timeout_ms = 2000; /* a refresh may not freeze the keys for long */
  v.o = &quick;
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  set_escdelay(50);
  timeout(100);
  setup_colors(&v);
  int rc = run_view(&v);
  endwin();
  delscreen(scr);
  top_snapshot_free(&v.snap);
  return rc;
}

const ctl_command ctl_cmd_top = {
    .group = "top",
    .usage = "top",
    .summary = "live view of brokers, shards and events",
    .help = "\n"
            "A full-screen view of the cluster, refreshed every second from the control\n"
            "plane: the brokers (id, storage id, incarnation, alive, fsync mode, lease\n"
            "age, records and bytes per second of the shards it leads), the shards\n"
            "(generation, leader, state, HWM, REC/S from the HWM's change, B/S from the\n"
            "leader's log size) with each follower's lag, marked ! where the storage id\n"
            "the copy was measured under differs from its broker's registered one, and\n"
            "the latest events. NoCaughtUpReplica and Fencing shards come first and\n"
            "stand out. Enter shows a shard's replicas with their confirmed offsets.\n"
            "\n"
            "Rates are measured over at least a second: a refresh sooner (Enter fetches\n"
            "at once) keeps the rates shown. A rate compares two samples of the same\n"
            "leader copy at the same or a higher generation; before a second refresh,\n"
            "or across a new leader copy or a recreated stream, it is unknown: \"-\",\n"
            "sorted after every known rate. REC/S takes 6 columns (12.3k, 1.2M), B/S 8\n"
            "(1.5 KiB), LEASE-AGE 9 (41.2 s). A stream name too long for the SHARD\n"
            "column is cut and marked ~, its shard number kept (transacti~/12);\n"
            "followers that do not fit the width are counted, \" +N\", never cut.\n"
            "\n"
            "The header shows the time of the snapshot and the shards' order.\n"
            "\n"
            "Keys: q quit, / filter shards (by STREAM/N, such as orders/3, or any text\n"
            "of their line), s sort shards (urgency, name, hwm, rate, bytes, lag: the\n"
            "largest first), arrows select, Enter open a shard (its replicas and\n"
            "history), Esc back, ? help. Ctrl-C quits too; the terminal is restored\n"
            "either way (exit 0). Works in 80x24 and without colours.\n"
            "When the control plane cannot be reached it says so and keeps retrying.\n"
            "Needs a terminal: scripts use -o json with cluster status or shard list.\n",
    .run = top,
};

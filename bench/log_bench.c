/* log_bench.c — figures for the disk log (DESIGN.md §3.2, §6: a benchmark
 * prints figures, it is never a timed test).
 *
 * Usage: log_bench [DIR]   (DIR defaults to $TMPDIR, else /tmp)
 *
 * Owns one temporary directory under DIR, removed at exit. In it, it first
 * measures the disk itself — sequential buffered write bandwidth and
 * fdatasync latency — so that the log's figures can be read against what the
 * same filesystem gives, then appends to a fresh log for every cell of
 * fsync mode × batch size × threads × payload size. Each cell runs for a
 * bounded time or a bounded volume, whichever ends first, and the whole run
 * stays within a fixed time budget. A closing summary evaluates the two
 * targets of the issue; it is a report, so the exit status is 0 either way
 * (non-zero only when the log itself fails). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "felix/log.h"

#define CELL_SECONDS 1.5
#define CELL_BYTES (256ull << 20) /* volume cap: keeps none/periodic off the disk's limits */
#define CELLS_BUDGET_SECONDS 70.0 /* the cells' share of the ~90 s run */
#define RAW_BLOCK 4096
#define FSYNC_SAMPLES 200
#define MAX_THREADS 16

static const felix_fsync_mode MODES[] = {FELIX_FSYNC_NONE, FELIX_FSYNC_PERIODIC, FELIX_FSYNC_ON_COMMIT};
static const unsigned BATCHES[] = {1, 16};
static const unsigned THREADS[] = {1, 16};
static const uint32_t PAYLOADS[] = {128, 4096};
#define NCELLS 24

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *detail) {
  fprintf(stderr, "log_bench: error: %s: %s\n", what, detail);
  exit(1);
}

/* ---- the disk itself ---------------------------------------------------- */

static int open_scratch(const char *root, const char *name, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", root, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) die(path, strerror(errno));
  return fd;
}

static void write_block(int fd, const uint8_t *block, const char *path) {
  if (write(fd, block, RAW_BLOCK) != RAW_BLOCK) die(path, errno ? strerror(errno) : "short write");
}

/* Buffered sequential writes, never synced: the page-cache ceiling that
 * `none` and `periodic` appends are measured against. Same caps as a cell. */
static double raw_write_mbps(const char *root, const uint8_t *block) {
  char path[4200];
  int fd = open_scratch(root, "raw-write", path, sizeof path);
  uint64_t bytes = 0;
  double t0 = now_s(), t = t0;
  while (t - t0 < CELL_SECONDS && bytes < CELL_BYTES) {
    for (int i = 0; i < 64; i++) write_block(fd, block, path); /* amortise the clock */
    bytes += 64 * RAW_BLOCK;
    t = now_s();
  }
  close(fd);
  unlink(path);
  return (double)bytes / (t - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* fdatasync after each appended 4 KiB block: what one group commit costs. */
static void fsync_latency_us(const char *root, const uint8_t *block, double *p50, double *p99) {
  char path[4200];
  double lat[FSYNC_SAMPLES];
  int fd = open_scratch(root, "fsync-latency", path, sizeof path);
  for (int i = 0; i < FSYNC_SAMPLES; i++) {
    write_block(fd, block, path);
    double t = now_s();
    if (fdatasync(fd) != 0) die(path, strerror(errno));
    lat[i] = (now_s() - t) * 1e6;
  }
  close(fd);
  unlink(path);
  qsort(lat, FSYNC_SAMPLES, sizeof lat[0], cmp_double);
  *p50 = lat[FSYNC_SAMPLES / 2];
  *p99 = lat[FSYNC_SAMPLES * 99 / 100];
}

/* ---- one cell ----------------------------------------------------------- */

typedef struct cell {
  felix_fsync_mode mode;
  unsigned batch, threads;
  uint32_t payload;
} cell;

typedef struct cell_result {
  double secs;
  uint64_t appends; /* records */
  uint64_t log_syncs;   /* felix_log_get_stats().syncs: group commits and timer flushes */
  uint64_t fdatasyncs;  /* every data sync the log asked for, seals included */
} cell_result;

typedef struct run {
  felix_log *log;
  const cell *c;
  const uint8_t *payload;
  double deadline;
  uint64_t budget;           /* records this cell may write */
  _Atomic uint64_t claimed;  /* records handed to workers so far */
  _Atomic uint64_t appended;
  _Atomic uint64_t syncs;    /* counted by count_sync */
  _Atomic int failed;
  pthread_barrier_t start;
} run;

/* The log's sync primitive, counted: seal syncs bypass the `syncs` stat. */
static int count_sync(int fd, void *ctx) {
  run *r = ctx;
  atomic_fetch_add(&r->syncs, 1);
  return fdatasync(fd) == 0 ? 0 : errno;
}

static void report_failure(run *r, const felix_err *err) {
  if (atomic_exchange(&r->failed, 1) == 0) fprintf(stderr, "log_bench: error: %s\n", err->msg);
}

static void *worker(void *arg) {
  run *r = arg;
  felix_record_in recs[16];
  for (unsigned i = 0; i < r->c->batch; i++) recs[i] = (felix_record_in){r->payload, r->c->payload, 0};
  pthread_barrier_wait(&r->start);
  while (!atomic_load(&r->failed) && now_s() < r->deadline) {
    if (atomic_fetch_add(&r->claimed, r->c->batch) >= r->budget) break;
    felix_appended a;
    felix_err err;
    felix_status st = felix_log_append_batch(r->log, recs, r->c->batch, &a, &err);
    if (!st) st = felix_log_wait_held(r->log, &a, &err);
    if (st) {
      report_failure(r, &err);
      break;
    }
    atomic_fetch_add(&r->appended, r->c->batch);
  }
  return NULL;
}

static felix_log *open_fresh_log(const char *dir, run *r, felix_fsync_mode mode) {
  felix_log_config cfg;
  felix_err err;
  if (felix_log_config_from_env(&cfg, &err)) die("configuration", err.msg);
  cfg.fsync_mode = mode;
  cfg.sync_fn = count_sync;
  cfg.sync_ctx = r;
  felix_log *log;
  if (felix_log_open(dir, "bench", &cfg, true, &log, NULL, &err)) die(dir, err.msg);
  return log;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

static void remove_tree(const char *path) {
  if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
    fprintf(stderr, "log_bench: warning: could not remove %s: %s\n", path, strerror(errno));
}

static void spawn_and_join(run *r) {
  pthread_t tids[MAX_THREADS];
  unsigned n = r->c->threads;
  pthread_barrier_init(&r->start, NULL, n);
  for (unsigned i = 0; i < n; i++)
    if (pthread_create(&tids[i], NULL, worker, r) != 0) die("pthread_create", strerror(errno));
  for (unsigned i = 0; i < n; i++) pthread_join(tids[i], NULL);
  pthread_barrier_destroy(&r->start);
}

static cell_result run_cell(const char *root, const cell *c, const uint8_t *payload, double secs) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/log", root);
  run *r = calloc(1, sizeof *r);
  if (!r) die("run", "out of memory");
  *r = (run){.c = c, .payload = payload, .budget = CELL_BYTES / c->payload};
  r->log = open_fresh_log(dir, r, c->mode);
  atomic_store(&r->syncs, 0); /* the open's own sync is not the workload's */
  felix_log_stats before, after;
  felix_log_get_stats(r->log, &before);
  double t0 = now_s();
  r->deadline = t0 + secs;
  spawn_and_join(r);
  cell_result res = {.secs = now_s() - t0, .appends = atomic_load(&r->appended)};
  felix_log_get_stats(r->log, &after);
  res.log_syncs = after.syncs - before.syncs;
  res.fdatasyncs = atomic_load(&r->syncs);
  felix_err err;
  if (felix_log_close(r->log, &err)) die("close", err.msg);
  if (atomic_load(&r->failed)) exit(1); /* the worker printed why */
  free(r);
  remove_tree(dir);
  return res;
}

/* ---- reporting ---------------------------------------------------------- */

static double mbps(const cell *c, const cell_result *r) {
  return (double)r->appends * c->payload / r->secs / 1e6;
}

static void print_ratio(char *out, size_t cap, uint64_t appends, uint64_t syncs) {
  if (syncs) snprintf(out, cap, "%.1f", (double)appends / (double)syncs);
  else snprintf(out, cap, "-");
}

static void print_header(void) {
  printf("%-10s %5s %7s %7s %12s %9s %7s %10s %13s\n", "mode", "batch", "threads", "payload", "appends/s",
         "MB/s", "syncs", "fdatasyncs", "appends/fsync");
}

static void print_row(const cell *c, const cell_result *r) {
  char ratio[32];
  print_ratio(ratio, sizeof ratio, r->appends, r->fdatasyncs);
  printf("%-10s %5u %7u %7" PRIu32 " %12.0f %9.1f %7" PRIu64 " %10" PRIu64 " %13s\n", felix_fsync_mode_name(c->mode),
         c->batch, c->threads, c->payload, (double)r->appends / r->secs, mbps(c, r), r->log_syncs, r->fdatasyncs, ratio);
  fflush(stdout);
}

static const char *fs_name(const char *path) {
  struct statfs sf;
  if (statfs(path, &sf) != 0) return "unknown";
  switch ((unsigned long)sf.f_type) {
  case 0xEF53: return "ext4";
  case 0x58465342: return "xfs";
  case 0x9123683E: return "btrfs";
  case 0x01021994: return "tmpfs (fsync is free: figures say nothing about a disk)";
  case 0x794c7630: return "overlayfs";
  case 0x2FC12FC1: return "zfs";
  }
  return "other";
}

static int find_cell(const cell *cells, felix_fsync_mode m, unsigned batch, unsigned threads, uint32_t payload) {
  for (int i = 0; i < NCELLS; i++)
    if (cells[i].mode == m && cells[i].batch == batch && cells[i].threads == threads && cells[i].payload == payload)
      return i;
  return -1;
}

static void summarize(const cell *cells, const cell_result *res, double raw_mbps) {
  printf("\nsummary (targets of the issue; a report, not an assertion):\n");
  int p = find_cell(cells, FELIX_FSYNC_PERIODIC, 16, 1, 4096);
  double share = mbps(&cells[p], &res[p]) / raw_mbps;
  printf("  periodic, 4 KiB payload, batch 16, 1 thread: %.1f MB/s = %.0f%% of raw buffered writes "
         "(%.1f MB/s); target >= 50%%: %s\n",
         mbps(&cells[p], &res[p]), share * 100, raw_mbps, share >= 0.5 ? "PASS" : "MISS");
  for (size_t i = 0; i < sizeof PAYLOADS / sizeof PAYLOADS[0]; i++) {
    int o = find_cell(cells, FELIX_FSYNC_ON_COMMIT, 1, 16, PAYLOADS[i]);
    const cell_result *r = &res[o];
    double ratio = r->fdatasyncs ? (double)r->appends / (double)r->fdatasyncs : 0;
    printf("  on_commit, %" PRIu32 " B payload, batch 1, 16 threads: %" PRIu64 " appends / %" PRIu64
           " fdatasyncs = %.1f appends per fsync (log syncs %" PRIu64 "); target >= 8: %s\n",
           PAYLOADS[i], r->appends, r->fdatasyncs, ratio, r->log_syncs, ratio >= 8 ? "PASS" : "MISS");
  }
}

/* ---- main --------------------------------------------------------------- */

static void fill_pseudo_random(uint8_t *p, size_t n) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = (uint8_t)x;
  }
}

static void make_cells(cell *cells) {
  int k = 0;
  for (size_t m = 0; m < 3; m++)
    for (size_t b = 0; b < 2; b++)
      for (size_t t = 0; t < 2; t++)
        for (size_t p = 0; p < 2; p++) cells[k++] = (cell){MODES[m], BATCHES[b], THREADS[t], PAYLOADS[p]};
}

static void run_cells(const char *root, const cell *cells, cell_result *res, const uint8_t *payload) {
  double begin = now_s();
  print_header();
  for (int i = 0; i < NCELLS; i++) {
    /* Slow disks (seal syncs, close syncs) must not stretch the whole run. */
    double left = (CELLS_BUDGET_SECONDS - (now_s() - begin)) / (NCELLS - i);
    double secs = left < CELL_SECONDS ? (left > 0.2 ? left : 0.2) : CELL_SECONDS;
    res[i] = run_cell(root, &cells[i], payload, secs);
    print_row(&cells[i], &res[i]);
  }
}

/* The one temporary directory; a global only so that every exit path,
 * die() included, removes it. */
static char bench_root[4096];

static void remove_bench_root(void) {
  if (bench_root[0]) remove_tree(bench_root);
}

int main(int argc, char **argv) {
  const char *base = argc > 1 ? argv[1] : getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  char root[4096];
  snprintf(root, sizeof root, "%s/felix-bench-XXXXXX", base);
  if (!mkdtemp(root)) die(root, strerror(errno));
  snprintf(bench_root, sizeof bench_root, "%s", root);
  atexit(remove_bench_root);
  uint8_t *payload = malloc(4096);
  if (!payload) die("payload", "out of memory");
  fill_pseudo_random(payload, 4096);

  printf("felix log_bench: %s (%s); each cell %.1f s or %llu MiB, whichever first\n", root, fs_name(root),
         CELL_SECONDS, CELL_BYTES >> 20);
  double raw = raw_write_mbps(root, payload), p50, p99;
  fsync_latency_us(root, payload, &p50, &p99);
  printf("raw buffered sequential write, 4 KiB blocks, no fsync: %.1f MB/s\n", raw);
  printf("fdatasync after a 4 KiB append (%d samples): p50 %.0f us, p99 %.0f us\n\n", FSYNC_SAMPLES, p50, p99);

  cell cells[NCELLS];
  cell_result res[NCELLS];
  make_cells(cells);
  run_cells(root, cells, res, payload);
  summarize(cells, res, raw);
  printf("\nMB/s counts payload bytes (1 MB = 10^6 B); syncs = felix_log_get_stats().syncs (group commits and\n"
         "timer flushes); fdatasyncs = every data sync the log made, seal syncs included; appends/fsync uses\n"
         "fdatasyncs. Directory fsyncs of segment creation are not counted.\n");
  free(payload);
  return 0;
}

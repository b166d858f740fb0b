/* broker_bench.c — single-copy produce figures through the real broker on
 * loopback (issue 3, "Benchmark"), read next to log_bench's storage figures.
 *
 * Usage: broker_bench ADDRESS STREAM SHARD LABEL
 *
 * ADDRESS is the shard leader's data address (host:port), STREAM/SHARD a shard
 * with one replica that it leads, LABEL what the table's mode column shows
 * (bench/run-broker-bench.sh passes the broker's fsync mode). For every cell
 * of batch size × payload size × connections it publishes batches with
 * felix_client_publish (acks: the stream's policy) from one pthread per
 * connection — the broker answers one request at a time per connection, so
 * connections are the concurrency — and times every publish with
 * CLOCK_MONOTONIC. Each cell runs for a bounded time, a bounded number of
 * batches or a bounded volume, whichever ends first.
 *
 * A failed publish (connection error or a non-OK reply status) is counted and
 * shown in the table, its latency left out of the percentiles; the first few
 * reasons go to stderr. The exit status is 1 when any publish failed, so a
 * broken data path never passes for a slow one. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "felix/client.h"

#define CELL_SECONDS 2.0
#define CELL_MAX_BATCHES 200000u          /* also the size of the latency array */
#define CELL_MAX_BYTES (256ull << 20)     /* payload volume cap per cell */
#define CLIENT_TIMEOUT_MS 10000
#define MAX_CONNS 8
#define MAX_BATCH 64
#define MAX_REPORTED_FAILURES 5           /* per cell, on stderr */

static const unsigned BATCHES[] = {1, 64};
static const uint32_t PAYLOADS[] = {128, 4096};
static const unsigned CONNS[] = {1, 8};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *detail) {
  fprintf(stderr, "broker_bench: error: %s: %s\n", what, detail);
  exit(1);
}

typedef struct cell {
  unsigned batch, conns;
  uint32_t payload;
} cell;

typedef struct cell_result {
  double secs;
  uint64_t records;    /* acknowledged */
  uint64_t publishes;  /* acknowledged batches */
  uint64_t failed;     /* publishes that did not come back OK */
  double p50_us, p99_us;
} cell_result;

typedef struct run {
  const char *stream;
  uint32_t shard;
  const cell *c;
  const uint8_t *payload;
  double deadline;
  uint64_t max_batches;
  _Atomic uint64_t claimed;   /* batch slots handed out; index into lat */
  _Atomic uint64_t failed;
  _Atomic int reported;
  double *lat;                /* per claimed slot: latency in us, or -1 (failed / not run) */
  felix_client *clients[MAX_CONNS];
  pthread_barrier_t start;
} run;

typedef struct worker_arg {
  run *r;
  unsigned idx;
  bool broken; /* the warm-up publish lost the connection */
} worker_arg;

static void report_failure(run *r, const char *why) {
  atomic_fetch_add(&r->failed, 1);
  if (atomic_fetch_add(&r->reported, 1) < MAX_REPORTED_FAILURES)
    fprintf(stderr, "broker_bench: publish failed (batch %u, %" PRIu32 " B, %u conns): %s\n", r->c->batch,
            r->c->payload, r->c->conns, why);
}

typedef enum outcome { PUB_OK, PUB_REFUSED, PUB_BROKEN } outcome;

/* One publish: PUB_OK when the reply came back OK for the whole batch,
 * PUB_REFUSED for any other reply, PUB_BROKEN when the connection failed
 * (the client is unusable afterwards). */
static outcome publish_once(run *r, felix_client *cl, const felix_record_in *recs) {
  felix_publish_reply rep;
  felix_err err = {0};
  felix_status st =
      felix_client_publish(cl, r->stream, r->shard, FELIX_ACKS_DEFAULT, recs, r->c->batch, &rep, &err);
  if (st) {
    report_failure(r, err.msg);
    return PUB_BROKEN;
  }
  if (rep.status != FELIX_WS_OK) {
    char why[700];
    snprintf(why, sizeof why, "%s: %s", felix_wire_status_name(rep.status), rep.message);
    report_failure(r, why);
    return PUB_REFUSED;
  }
  if (rep.count != r->c->batch) {
    char why[128];
    snprintf(why, sizeof why, "reply counts %" PRIu32 " records, sent %u", rep.count, r->c->batch);
    report_failure(r, why);
    return PUB_REFUSED;
  }
  return PUB_OK;
}

static void *worker(void *arg) {
  worker_arg *wa = arg;
  run *r = wa->r;
  felix_client *cl = r->clients[wa->idx];
  felix_record_in recs[MAX_BATCH];
  for (unsigned i = 0; i < r->c->batch; i++) recs[i] = (felix_record_in){r->payload, r->c->payload, 0};
  pthread_barrier_wait(&r->start);
  /* A connection that broke (during warm-up or here) publishes no more: its
   * failure is already counted. A refused batch does not stop it. */
  bool broken = wa->broken;
  while (!broken && now_s() < r->deadline) {
    uint64_t slot = atomic_fetch_add(&r->claimed, 1);
    if (slot >= r->max_batches) break;
    double t = now_s();
    outcome o = publish_once(r, cl, recs);
    r->lat[slot] = o == PUB_OK ? (now_s() - t) * 1e6 : -1;
    broken = o == PUB_BROKEN;
  }
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double percentile(const double *sorted, uint64_t n, double q) {
  if (!n) return 0;
  uint64_t rank = (uint64_t)(q * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return sorted[rank - 1];
}

static cell_result run_cell(const char *address, const char *stream, uint32_t shard, const cell *c,
                            const uint8_t *payload, double *lat) {
  run *r = calloc(1, sizeof *r);
  if (!r) die("run", "out of memory");
  uint64_t by_volume = CELL_MAX_BYTES / ((uint64_t)c->batch * c->payload);
  *r = (run){.stream = stream, .shard = shard, .c = c, .payload = payload, .lat = lat,
             .max_batches = by_volume < CELL_MAX_BATCHES ? by_volume : CELL_MAX_BATCHES};
  for (uint64_t i = 0; i < r->max_batches; i++) lat[i] = -1;

  /* Connections are opened, and each sends one untimed warm-up batch, before
   * the clock starts; a failed warm-up counts as a failed publish. */
  felix_record_in warm[MAX_BATCH];
  worker_arg args[MAX_CONNS];
  for (unsigned i = 0; i < c->batch; i++) warm[i] = (felix_record_in){payload, c->payload, 0};
  for (unsigned i = 0; i < c->conns; i++) {
    felix_err err = {0};
    if (felix_client_connect(address, CLIENT_TIMEOUT_MS, &r->clients[i], &err)) die(address, err.msg);
    args[i] = (worker_arg){r, i, publish_once(r, r->clients[i], warm) == PUB_BROKEN};
  }

  pthread_t tids[MAX_CONNS];
  pthread_barrier_init(&r->start, NULL, c->conns + 1);
  for (unsigned i = 0; i < c->conns; i++) {
    int rc = pthread_create(&tids[i], NULL, worker, &args[i]);
    if (rc != 0) die("pthread_create", strerror(rc));
  }
  double t0 = now_s();
  r->deadline = t0 + CELL_SECONDS;
  pthread_barrier_wait(&r->start);
  for (unsigned i = 0; i < c->conns; i++) pthread_join(tids[i], NULL);
  double secs = now_s() - t0;
  pthread_barrier_destroy(&r->start);
  for (unsigned i = 0; i < c->conns; i++) felix_client_close(r->clients[i]);

  /* Compact the successful latencies in place and sort them. */
  uint64_t slots = atomic_load(&r->claimed);
  if (slots > r->max_batches) slots = r->max_batches;
  uint64_t ok = 0;
  for (uint64_t i = 0; i < slots; i++)
    if (lat[i] >= 0) lat[ok++] = lat[i];
  qsort(lat, ok, sizeof lat[0], cmp_double);
  cell_result res = {.secs = secs, .publishes = ok, .records = ok * c->batch, .failed = atomic_load(&r->failed),
                     .p50_us = percentile(lat, ok, 0.50), .p99_us = percentile(lat, ok, 0.99)};
  free(r);
  return res;
}

static void print_header(void) {
  printf("%-16s %5s %5s %7s %11s %9s %9s %9s %9s %6s\n", "mode", "batch", "conns", "payload", "records/s", "MB/s",
         "p50_us", "p99_us", "publishes", "failed");
}

static void print_row(const char *label, const cell *c, const cell_result *r) {
  printf("%-16s %5u %5u %7" PRIu32 " %11.0f %9.1f %9.0f %9.0f %9" PRIu64 " %6" PRIu64 "\n", label, c->batch, c->conns,
         c->payload, (double)r->records / r->secs, (double)r->records * c->payload / r->secs / 1e6, r->p50_us,
         r->p99_us, r->publishes, r->failed);
  fflush(stdout);
}

static void fill_pseudo_random(uint8_t *p, size_t n) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = (uint8_t)x;
  }
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: broker_bench ADDRESS STREAM SHARD LABEL\n");
    return 2;
  }
  const char *address = argv[1], *stream = argv[2], *label = argv[4];
  char *end;
  errno = 0;
  unsigned long shard = strtoul(argv[3], &end, 10);
  if (errno || *end || end == argv[3] || shard > UINT32_MAX) die("shard", "not a number");

  uint8_t *payload = malloc(4096);
  double *lat = malloc(CELL_MAX_BATCHES * sizeof *lat);
  if (!payload || !lat) die("buffers", "out of memory");
  fill_pseudo_random(payload, 4096);

  printf("felix broker_bench: leader %s, shard %s/%lu, %s; each cell %.1f s, %u batches or %llu MiB, "
         "whichever first\n",
         address, stream, shard, label, CELL_SECONDS, CELL_MAX_BATCHES, CELL_MAX_BYTES >> 20);
  print_header();
  uint64_t failed = 0;
  for (size_t b = 0; b < sizeof BATCHES / sizeof BATCHES[0]; b++)
    for (size_t p = 0; p < sizeof PAYLOADS / sizeof PAYLOADS[0]; p++)
      for (size_t k = 0; k < sizeof CONNS / sizeof CONNS[0]; k++) {
        cell c = {BATCHES[b], CONNS[k], PAYLOADS[p]};
        cell_result res = run_cell(address, stream, (uint32_t)shard, &c, payload, lat);
        print_row(label, &c, &res);
        failed += res.failed;
      }
  free(lat);
  free(payload);
  if (failed) {
    fprintf(stderr, "broker_bench: %" PRIu64 " publishes failed (see above)\n", failed);
    return 1;
  }
  return 0;
}

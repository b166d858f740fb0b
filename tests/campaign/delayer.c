/* delayer — delay, jitter and reordering of real packets, for the campaign
 * on a kernel without tc netem (docs/campaign.md "The network").
 *
 *   delayer QUEUE DELAY_MS JITTER_MS REORDER_PCT SEED
 *
 * Takes the packets an iptables NFQUEUE rule sends to QUEUE (net.sh's
 * net_delay puts one on a node's input) and gives each its verdict (accept)
 * after DELAY_MS ± a uniform JITTER_MS, as netem's `delay D J` does; a
 * packet of REORDER_PCT % goes at once, ahead of those held (netem's
 * `reorder`). Jitter larger than the gap between two packets reorders them
 * too. The queue is fail-open (a full queue accepts) and the rule bypasses
 * it when no delayer listens, so stopping the delayer never drops what was
 * sent. On SIGTERM or SIGINT every held packet is accepted and it exits 0.
 * Nothing is ever held longer than DELAY_MS + JITTER_MS (at most 10 s).
 */
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h> /* NF_ACCEPT; after arpa/inet.h, whose in_addr it would clash with */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_HELD 65536

struct held {
  uint64_t due_us;
  uint32_t id;
};

static struct held heap[MAX_HELD]; /* a min-heap by due time */
static int nheld;
static volatile sig_atomic_t stopping;
static struct nfq_q_handle *qh;
static uint64_t delay_us, jitter_us;
static unsigned reorder_pct;
static uint64_t rng_state;

static uint64_t now_us(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static uint64_t next_random(void) /* splitmix64: seeded, so a run is replayable in intent */
{
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void heap_push(uint64_t due, uint32_t id)
{
  int i = nheld++;
  while (i > 0 && heap[(i - 1) / 2].due_us > due) {
    heap[i] = heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  heap[i] = (struct held){due, id};
}

static struct held heap_pop(void)
{
  struct held top = heap[0], last = heap[--nheld];
  int i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= nheld) break;
    if (c + 1 < nheld && heap[c + 1].due_us < heap[c].due_us) c++;
    if (heap[c].due_us >= last.due_us) break;
    heap[i] = heap[c];
    i = c;
  }
  if (nheld > 0) heap[i] = last;
  return top;
}

static void accept_packet(uint32_t id)
{
  nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
}

static int on_packet(struct nfq_q_handle *q, struct nfgenmsg *m, struct nfq_data *d, void *data)
{
  (void)q, (void)m, (void)data;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(d);
  if (!ph) return 0;
  uint32_t id = ntohl(ph->packet_id);
  if (nheld == MAX_HELD || next_random() % 100 < reorder_pct) {
    accept_packet(id); /* ahead of every packet held */
    return 0;
  }
  uint64_t d_us = delay_us;
  if (jitter_us) d_us = delay_us - jitter_us + next_random() % (2 * jitter_us + 1);
  heap_push(now_us() + d_us, id);
  return 0;
}

static void release_due(uint64_t now)
{
  while (nheld > 0 && heap[0].due_us <= now) accept_packet(heap_pop().id);
}

static void on_signal(int s)
{
  (void)s;
  stopping = 1;
}

static int parse(const char *s, const char *what, long lo, long hi, long *out)
{
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < lo || v > hi) {
    fprintf(stderr, "delayer: %s '%s' is not a number from %ld to %ld\n", what, s, lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

int main(int argc, char **argv)
{
  long queue, dms, jms, pct, seed;
  if (argc != 6) {
    fprintf(stderr, "usage: delayer QUEUE DELAY_MS JITTER_MS REORDER_PCT SEED\n");
    return 2;
  }
  if (parse(argv[1], "QUEUE", 0, 65535, &queue) || parse(argv[2], "DELAY_MS", 0, 5000, &dms) ||
      parse(argv[3], "JITTER_MS", 0, 5000, &jms) || parse(argv[4], "REORDER_PCT", 0, 100, &pct) ||
      parse(argv[5], "SEED", 0, 2147483647, &seed))
    return 2;
  if (jms > dms) {
    fprintf(stderr, "delayer: JITTER_MS %ld is more than DELAY_MS %ld\n", jms, dms);
    return 2;
  }
  delay_us = (uint64_t)dms * 1000u, jitter_us = (uint64_t)jms * 1000u, reorder_pct = (unsigned)pct;
  rng_state = (uint64_t)seed;
  struct nfq_handle *h = nfq_open();
  if (!h) { perror("delayer: nfq_open"); return 1; }
  qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
  if (!qh) { perror("delayer: nfq_create_queue"); return 1; }
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) { perror("delayer: nfq_set_mode"); return 1; }
  nfq_set_queue_maxlen(qh, MAX_HELD);
  nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN);
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  int fd = nfq_fd(h);
  char buf[65536];
  printf("delayer: queue %ld, delay %ld ms ± %ld ms, %ld %% ahead\n", queue, dms, jms, pct);
  fflush(stdout);
  while (!stopping) {
    uint64_t now = now_us();
    release_due(now);
    int wait_ms = nheld ? (int)((heap[0].due_us - now + 999) / 1000) : 1000;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, wait_ms) > 0) {
      ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) nfq_handle_packet(h, buf, (int)n);
    }
  }
  while (nheld > 0) accept_packet(heap_pop().id);
  nfq_destroy_queue(qh);
  nfq_close(h);
  return 0;
}

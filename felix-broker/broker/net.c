/* broker/net.c — the data protocol's TCP server on the libuv loop.
 *
 * One request is in flight per connection: frames that arrive meanwhile stay
 * buffered until the reply is written, so replies keep request order. A
 * connection is freed only when it is closed and no reply is still owed
 * (refs), because on_commit replies complete later on the thread pool. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker.h"
#include "felix/logfmt.h"

struct conn {
  uv_tcp_t tcp;
  broker *b;
  uint8_t *buf;
  size_t len, cap;
  bool busy, closing, dispatching;
  int refs;
  uint16_t request_type; /* of the request being answered (busy) */
  uint64_t request_ns;   /* its arrival (uv_hrtime) */
  peer_binding peer;
  struct conn *next;
};

peer_binding *conn_peer(conn *c) { return &c->peer; }

static conn *all_conns;

static void conn_unref(conn *c) {
  if (--c->refs > 0) return;
  for (conn **p = &all_conns; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  free(c->buf);
  free(c);
}

static void on_closed(uv_handle_t *h) { conn_unref(h->data); }

static void conn_close(conn *c) {
  if (c->closing) return;
  c->closing = true;
  uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void process_frames(conn *c) {
  c->dispatching = true;
  while (!c->busy && !c->closing) {
    uint32_t flen, corr;
    uint16_t type;
    bool bad;
    if (!felix_frame_peek(c->buf, c->len, &flen, &type, &corr, &bad)) break;
    bool known = type == FELIX_WIRE_PUBLISH || type == FELIX_WIRE_FETCH || type == FELIX_WIRE_METADATA ||
                 (type >= 0x0010 && type <= 0x0012);
    if (bad || !known) {
      char t[16];
      snprintf(t, sizeof t, "0x%04x", type);
      felix_log_event("warn", "closing a connection that sent a bad frame", "type", t, NULL);
      conn_close(c);
      break;
    }
    size_t total = 4 + (size_t)flen;
    if (c->len < total) break;
    c->busy = true;
    c->refs++; /* the owed reply */
    c->request_type = type;
    c->request_ns = uv_hrtime();
    broker_handle_frame(c->b, c, type, corr, c->buf + FELIX_WIRE_HEADER, total - FELIX_WIRE_HEADER);
    memmove(c->buf, c->buf + total, c->len - total);
    c->len -= total;
  }
  c->dispatching = false;
}

typedef struct write_req {
  uv_write_t req;
  felix_buf frame;
} write_req;

static void on_written(uv_write_t *req, int status) {
  write_req *w = (write_req *)req;
  (void)status;
  felix_buf_free(&w->frame);
  free(w);
}

void conn_reply(conn *c, felix_buf *frame) {
  if (c->request_type == FELIX_WIRE_PUBLISH)
    felix_histogram_observe(&c->b->publish_latency, (double)(uv_hrtime() - c->request_ns) / 1e9);
  if (!c->closing && !frame->oom) {
    c->b->bytes_out += frame->len;
    write_req *w = calloc(1, sizeof *w);
    if (w) {
      w->frame = *frame;
      *frame = (felix_buf){0};
      uv_buf_t ub = uv_buf_init((char *)w->frame.data, (unsigned)w->frame.len);
      if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &ub, 1, on_written) != 0) {
        felix_buf_free(&w->frame);
        free(w);
        conn_close(c);
      }
    }
  }
  felix_buf_free(frame);
  c->busy = false;
  bool live = !c->closing;
  conn_unref(c);
  if (live && !c->dispatching) process_frames(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out) {
  conn *c = h->data;
  if (c->cap - c->len < suggested) {
    size_t nc = c->cap ? c->cap : 65536;
    while (nc - c->len < suggested) nc *= 2;
    uint8_t *nb = realloc(c->buf, nc);
    if (!nb) {
      *out = uv_buf_init(NULL, 0);
      return;
    }
    c->buf = nb;
    c->cap = nc;
  }
  *out = uv_buf_init((char *)c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  conn *c = s->data;
  (void)buf;
  if (n < 0) {
    conn_close(c);
    return;
  }
  c->len += (size_t)n;
  c->b->bytes_in += (uint64_t)n;
  if (!c->dispatching) process_frames(c);
}

static void on_connection(uv_stream_t *server, int status) {
  broker *b = server->data;
  if (status < 0) return;
  conn *c = calloc(1, sizeof *c);
  if (!c) return;
  c->b = b;
  c->refs = 1;
  uv_tcp_init(b->loop, &c->tcp);
  c->tcp.data = c;
  c->next = all_conns;
  all_conns = c;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 || b->stopping) {
    conn_close(c);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

int broker_parse_addr(const char *addr, struct sockaddr_storage *ss) {
  char host[128];
  const char *colon = strrchr(addr, ':');
  if (!colon || (size_t)(colon - addr) >= sizeof host) return -1;
  memcpy(host, addr, (size_t)(colon - addr));
  host[colon - addr] = '\0';
  int port = atoi(colon + 1);
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0) return 0;
  return uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss);
}

/* Connections wait in the backlog until the registration: every leader of
 * every replicated shard links to each follower at once, so 128 was too few
 * at 1,024 shards (found by the review); the kernel caps it at somaxconn. */
#define DATA_BACKLOG 4096

/* Review 5, item 8: the data port is taken at start, before the data
 * directory is touched, so a port another process holds fails the start
 * with run-state and the boot token as they were. It listens at once (a
 * socket only bound would let another SO_REUSEADDR socket take the port,
 * found by the review); connections wait in the backlog and are served once
 * registered (broker_net_listen), as Kafka's acceptor does. libuv reports a
 * taken port only at uv_listen, so this is a plain socket libuv adopts. */
int broker_net_reserve(broker *b) {
  struct sockaddr_storage ss;
  if (broker_parse_addr(b->cfg.listen, &ss) != 0) {
    felix_log_event("error", "--listen is not an IP address and port", "listen", b->cfg.listen, NULL);
    return -1;
  }
  int one = 1, fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  socklen_t len = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, DATA_BACKLOG) != 0) {
    felix_log_event("error", "cannot listen", "listen", b->cfg.listen, "reason", strerror(errno), NULL);
    if (fd >= 0) close(fd);
    return -1;
  }
  b->listen_fd = fd;
  return 0;
}

int broker_net_listen(broker *b) {
  if (b->listen_fd < 0) return -1; /* taken at start; gone if an earlier attempt failed */
  uv_tcp_init(b->loop, &b->server);
  b->server.data = b;
  int rc = uv_tcp_open(&b->server, b->listen_fd);
  if (!rc) b->listen_fd = -1; /* libuv owns it now */
  if (!rc) rc = uv_listen((uv_stream_t *)&b->server, DATA_BACKLOG, on_connection);
  if (rc) {
    felix_log_event("error", "cannot listen", "listen", b->cfg.listen, "reason", uv_strerror(rc), NULL);
    uv_close((uv_handle_t *)&b->server, NULL); /* it owns the socket if uv_tcp_open took it */
    return -1;
  }
  felix_log_event("info", "serving the data protocol", "listen", b->cfg.listen, NULL);
  return 0;
}

void broker_net_close_peers(broker *b, const char *stream_uuid, uint32_t index) {
  (void)b;
  for (conn *c = all_conns; c; c = c->next)
    if (c->peer.bound && c->peer.shard == index && !strcmp(c->peer.stream_uuid, stream_uuid)) conn_close(c);
}

void broker_net_close(broker *b) {
  if (uv_is_active((uv_handle_t *)&b->server) && !uv_is_closing((uv_handle_t *)&b->server))
    uv_close((uv_handle_t *)&b->server, NULL);
  for (conn *c = all_conns; c; c = c->next) conn_close(c);
}

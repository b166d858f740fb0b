/* client/client.c — blocking client of the data protocol (docs/wire.md).
 *
 * One request at a time per connection; replies are matched by correlation
 * id. The session layer follows NOT_LEADER redirects and reconnects once on a
 * broken connection, never more, so a caller always gets an answer in bounded
 * time. */
#include "felix/client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "felix/bytes.h"

struct felix_client {
  int fd;
  int timeout_ms;
  uint32_t next_corr;
  char address[128];
  uint8_t *frame; /* last reply frame (body pointers refer into it) */
};

static felix_status split_address(const char *address, char *host, size_t hcap, char *port, size_t pcap, felix_err *err) {
  const char *colon = strrchr(address, ':');
  if (!colon || colon == address || !colon[1] || (size_t)(colon - address) >= hcap || strlen(colon + 1) >= pcap)
    return felix_fail(err, FELIX_E_INVAL, "address '%s' is not host:port", address);
  memcpy(host, address, (size_t)(colon - address));
  host[colon - address] = '\0';
  snprintf(port, pcap, "%s", colon + 1);
  return FELIX_OK;
}

static void set_timeouts(int fd, int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

felix_status felix_client_connect(const char *address, int timeout_ms, felix_client **out, felix_err *err) {
  char host[128], port[16];
  felix_status st = split_address(address, host, sizeof host, port, sizeof port, err);
  if (st) return st;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
  int gai = getaddrinfo(host, port, &hints, &res);
  if (gai) return felix_fail(err, FELIX_E_UNREACHABLE, "cannot resolve %s: %s", address, gai_strerror(gai));
  int fd = -1, last = 0;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    set_timeouts(fd, timeout_ms);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      last = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return felix_fail_errno(err, FELIX_E_UNREACHABLE, last, "cannot connect to broker at %s", address);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  felix_client *c = calloc(1, sizeof *c);
  if (!c) {
    close(fd);
    return felix_fail(err, FELIX_E_IO, "out of memory");
  }
  c->fd = fd;
  c->timeout_ms = timeout_ms;
  c->next_corr = 1;
  snprintf(c->address, sizeof c->address, "%s", address);
  *out = c;
  return FELIX_OK;
}

void felix_client_close(felix_client *c) {
  if (!c) return;
  close(c->fd);
  free(c->frame);
  free(c);
}

const char *felix_client_address(const felix_client *c) { return c->address; }

static felix_status io_fail(felix_client *c, int e, const char *what, felix_err *err) {
  if (e == EAGAIN || e == EWOULDBLOCK)
    return felix_fail(err, FELIX_E_UNREACHABLE, "broker at %s did not answer within %d ms (%s)", c->address, c->timeout_ms, what);
  if (e == 0) return felix_fail(err, FELIX_E_UNREACHABLE, "broker at %s closed the connection (%s)", c->address, what);
  return felix_fail_errno(err, FELIX_E_UNREACHABLE, e, "broker at %s: %s", c->address, what);
}

static felix_status send_all(felix_client *c, const uint8_t *p, size_t n, felix_err *err) {
  while (n) {
    ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return io_fail(c, errno, "send", err);
    p += w;
    n -= (size_t)w;
  }
  return FELIX_OK;
}

static felix_status recv_all(felix_client *c, uint8_t *p, size_t n, felix_err *err) {
  while (n) {
    ssize_t r = recv(c->fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return io_fail(c, r == 0 ? 0 : errno, "receive", err);
    p += r;
    n -= (size_t)r;
  }
  return FELIX_OK;
}

/* Sends the frame in b, waits for the reply of `type`; sets body and len. */
static felix_status roundtrip(felix_client *c, felix_buf *b, uint16_t type, uint32_t corr, int extra_wait_ms,
                              const uint8_t **body, size_t *len, felix_err *err) {
  if (b->oom) return felix_fail(err, FELIX_E_IO, "out of memory encoding a request");
  set_timeouts(c->fd, c->timeout_ms + extra_wait_ms);
  felix_status st = send_all(c, b->data, b->len, err);
  uint8_t hdr[FELIX_WIRE_HEADER];
  if (!st) st = recv_all(c, hdr, sizeof hdr, err);
  if (st) return st;
  uint32_t flen, rcorr;
  uint16_t rtype;
  bool bad;
  felix_frame_peek(hdr, sizeof hdr, &flen, &rtype, &rcorr, &bad);
  if (bad || rtype != (type | FELIX_WIRE_REPLY) || rcorr != corr)
    return felix_fail(err, FELIX_E_IO, "broker at %s sent an unexpected frame (type 0x%04x, correlation %u, length %u)",
                      c->address, rtype, rcorr, flen);
  size_t blen = flen - (FELIX_WIRE_HEADER - 4);
  free(c->frame);
  c->frame = malloc(blen ? blen : 1);
  if (!c->frame) return felix_fail(err, FELIX_E_IO, "out of memory");
  st = recv_all(c, c->frame, blen, err);
  *body = c->frame;
  *len = blen;
  return st;
}

felix_status felix_client_publish(felix_client *c, const char *stream, uint32_t shard, uint8_t acks,
                                  const felix_record_in *recs, size_t n, felix_publish_reply *out, felix_err *err) {
  felix_wire_record *wr = calloc(n ? n : 1, sizeof *wr);
  if (!wr) return felix_fail(err, FELIX_E_IO, "out of memory");
  for (size_t i = 0; i < n; i++) wr[i] = (felix_wire_record){0, recs[i].timestamp_micros, recs[i].payload, recs[i].len};
  felix_publish_req req = {.shard = shard, .acks = acks, .count = (uint32_t)n, .records = wr};
  snprintf(req.stream, sizeof req.stream, "%s", stream);
  felix_buf b = {0};
  uint32_t corr = c->next_corr++;
  felix_wire_publish_req_encode(&b, corr, &req);
  free(wr);
  const uint8_t *body;
  size_t len;
  felix_status st = roundtrip(c, &b, FELIX_WIRE_PUBLISH, corr, 0, &body, &len, err);
  felix_buf_free(&b);
  if (!st) st = felix_wire_publish_reply_decode(body, len, out, err);
  return st;
}

felix_status felix_client_fetch(felix_client *c, const felix_fetch_req *req, felix_fetch_reply *out, felix_err *err) {
  felix_buf b = {0};
  uint32_t corr = c->next_corr++;
  felix_wire_fetch_req_encode(&b, corr, req);
  const uint8_t *body;
  size_t len;
  felix_status st = roundtrip(c, &b, FELIX_WIRE_FETCH, corr, (int)req->wait_ms, &body, &len, err);
  felix_buf_free(&b);
  if (!st) st = felix_wire_fetch_reply_decode(body, len, out, err);
  return st;
}

felix_status felix_client_metadata(felix_client *c, const char *stream, felix_metadata_reply *out, felix_err *err) {
  felix_buf b = {0};
  uint32_t corr = c->next_corr++;
  felix_wire_metadata_req_encode(&b, corr, stream);
  const uint8_t *body;
  size_t len;
  felix_status st = roundtrip(c, &b, FELIX_WIRE_METADATA, corr, 0, &body, &len, err);
  felix_buf_free(&b);
  if (!st) st = felix_wire_metadata_reply_decode(body, len, out, err);
  return st;
}

/* ---- session: redirects and one reconnect ---- */

struct felix_session {
  char bootstrap[128];
  char current[128];
  int timeout_ms;
  felix_client *conn;
};

felix_session *felix_session_new(const char *bootstrap_address, int timeout_ms) {
  felix_session *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  snprintf(s->bootstrap, sizeof s->bootstrap, "%s", bootstrap_address);
  snprintf(s->current, sizeof s->current, "%s", bootstrap_address);
  s->timeout_ms = timeout_ms;
  return s;
}

void felix_session_free(felix_session *s) {
  if (!s) return;
  felix_client_close(s->conn);
  free(s);
}

static felix_status session_conn(felix_session *s, felix_err *err) {
  if (s->conn && strcmp(felix_client_address(s->conn), s->current) == 0) return FELIX_OK;
  felix_client_close(s->conn);
  s->conn = NULL;
  return felix_client_connect(s->current, s->timeout_ms, &s->conn, err);
}

/* Asks metadata (at the bootstrap) for the shard's leader address. */
static felix_status session_lookup(felix_session *s, const char *stream, uint32_t shard, felix_err *err) {
  snprintf(s->current, sizeof s->current, "%s", s->bootstrap);
  felix_status st = session_conn(s, err);
  felix_metadata_reply md;
  if (!st) st = felix_client_metadata(s->conn, stream, &md, err);
  if (st) return st;
  bool found = false;
  for (uint32_t i = 0; i < md.count && !found; i++)
    if (!strcmp(md.entries[i].stream, stream) && md.entries[i].shard == shard && md.entries[i].address[0]) {
      snprintf(s->current, sizeof s->current, "%s", md.entries[i].address);
      found = true;
    }
  felix_metadata_reply_free(&md);
  if (!found) return felix_fail(err, FELIX_E_UNAVAILABLE, "no leader is known for %s/%u", stream, shard);
  return FELIX_OK;
}

static felix_status status_error(uint16_t status, const char *message, const char *stream, uint32_t shard, felix_err *err) {
  felix_status code = status == FELIX_WS_UNKNOWN_SHARD ? FELIX_E_NOTFOUND
                      : status == FELIX_WS_INVALID_REQUEST || status == FELIX_WS_TOO_LARGE || status == FELIX_WS_OFFSET_OUT_OF_RANGE ? FELIX_E_INVAL
                      : status == FELIX_WS_STORAGE_ERROR ? FELIX_E_IO
                                                         : FELIX_E_UNAVAILABLE;
  return felix_fail(err, code, "%s/%u: %s: %s", stream, shard, felix_wire_status_name(status), message);
}

typedef felix_status (*session_op)(felix_session *s, void *ctx, uint16_t *status, char *message, size_t mcap,
                                   char *leader, size_t lcap, felix_err *err);

/* Runs op against the current leader, following redirects. A broken
 * connection is retried once only for reads (retry_io): a publish whose reply
 * was lost may have been appended, and sending it again would duplicate it. */
static felix_status session_run(felix_session *s, const char *stream, uint32_t shard, session_op op, void *ctx,
                                bool retry_io, felix_err *err) {
  bool reconnected = !retry_io;
  for (int hop = 0; hop < 6; hop++) {
    felix_status st = session_conn(s, err);
    uint16_t status = 0;
    char message[512] = "", leader[128] = "";
    if (!st) st = op(s, ctx, &status, message, sizeof message, leader, sizeof leader, err);
    if (st == FELIX_E_UNREACHABLE && !reconnected) {
      reconnected = true;
      felix_client_close(s->conn);
      s->conn = NULL;
      continue;
    }
    if (st) return st;
    if (status != FELIX_WS_NOT_LEADER) return status == FELIX_WS_OK ? FELIX_OK : status_error(status, message, stream, shard, err);
    if (leader[0] && strcmp(leader, s->current) != 0) {
      snprintf(s->current, sizeof s->current, "%s", leader);
    } else if ((st = session_lookup(s, stream, shard, err)) != FELIX_OK) {
      return st;
    }
  }
  return felix_fail(err, FELIX_E_UNAVAILABLE, "%s/%u: still not at the leader after 5 redirects (last tried %s)", stream, shard, s->current);
}

typedef struct publish_ctx {
  const char *stream;
  uint32_t shard;
  uint8_t acks;
  const felix_record_in *recs;
  size_t n;
  felix_publish_reply reply;
} publish_ctx;

static felix_status publish_op(felix_session *s, void *ctx, uint16_t *status, char *message, size_t mcap, char *leader,
                               size_t lcap, felix_err *err) {
  publish_ctx *p = ctx;
  felix_status st = felix_client_publish(s->conn, p->stream, p->shard, p->acks, p->recs, p->n, &p->reply, err);
  if (st) return st;
  *status = p->reply.status;
  snprintf(message, mcap, "%s", p->reply.message);
  snprintf(leader, lcap, "%s", p->reply.leader_address);
  return FELIX_OK;
}

felix_status felix_session_publish(felix_session *s, const char *stream, uint32_t shard, uint8_t acks,
                                   const felix_record_in *recs, size_t n, uint64_t *first_offset, felix_err *err) {
  publish_ctx p = {stream, shard, acks, recs, n, {0}};
  felix_status st = session_run(s, stream, shard, publish_op, &p, false, err);
  if (!st && first_offset) *first_offset = p.reply.first_offset;
  return st;
}

typedef struct fetch_ctx {
  const felix_fetch_req *req;
  felix_fetch_reply *out;
} fetch_ctx;

static felix_status fetch_op(felix_session *s, void *ctx, uint16_t *status, char *message, size_t mcap, char *leader,
                             size_t lcap, felix_err *err) {
  fetch_ctx *f = ctx;
  felix_fetch_reply_free(f->out);
  felix_status st = felix_client_fetch(s->conn, f->req, f->out, err);
  if (st) return st;
  *status = f->out->status;
  snprintf(message, mcap, "%s", f->out->message);
  snprintf(leader, lcap, "%s", f->out->leader_address);
  return FELIX_OK;
}

felix_status felix_session_fetch(felix_session *s, const felix_fetch_req *req, felix_fetch_reply *out, felix_err *err) {
  memset(out, 0, sizeof *out);
  fetch_ctx f = {req, out};
  felix_status st = session_run(s, req->stream, req->shard, fetch_op, &f, true, err);
  if (st) felix_fetch_reply_free(out);
  return st;
}

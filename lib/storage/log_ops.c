/* storage/log_ops.c — append, wait-until-held, sync, truncate and read of a log. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "felix/bytes.h"
#include "felix/fileutil.h"
#include "log_internal.h"


felix_status log_sticky_error(felix_log *log, felix_err *err) {
  if (log->dir_gone)
    return felix_fail(err, FELIX_E_GONE, "shard %s: directory %s was deleted: this copy is refused", log->shard, log->path);
  return felix_fail_errno(err, FELIX_E_SYNC, log->sync_error,
                          "shard %s: refusing: an earlier sync or write failed; reopen the log", log->shard);
}

typedef struct wbuf {
  uint8_t *p;
  size_t len, cap;
} wbuf;

static bool wbuf_put(wbuf *b, const void *data, size_t n) {
  if (b->len + n > b->cap) {
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + n) nc *= 2;
    uint8_t *np = realloc(b->p, nc);
    if (!np) return false;
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
  return true;
}

/* Writes the buffered records to the active segment. A failed write is
 * sticky like a failed sync: the file may now hold part of a batch. */
static felix_status flush_wbuf(felix_log *log, wbuf *b, felix_err *err) {
  log_seg *s = log_active(log);
  size_t done = 0;
  while (done < b->len) {
    ssize_t n = pwrite(s->fd, b->p + done, b->len - done, (off_t)(s->size + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      log_storage_failed(log, e);
      return felix_fail_errno(err, FELIX_E_IO, e, "shard %s: write segment %020" PRIu64 ".log at byte %" PRIu64,
                              log->shard, s->base, s->size + done);
    }
    done += (size_t)n;
  }
  s->size += b->len;
  log->bytes_total += b->len;
  b->len = 0;
  log_seg_mark_flushed(s);
  return FELIX_OK;
}

static void write_index_entry(log_seg *s, uint64_t offset, uint64_t position) {
  uint8_t e[FELIX_IDX_ENTRY_LEN];
  felix_idx_entry_encode(e, offset, position);
  /* The index is derived: a failed write only costs a rebuild at next open. */
  if (s->idx_fd >= 0)
    (void)!pwrite(s->idx_fd, e, sizeof e, (off_t)(FELIX_IDX_HEADER_LEN + (s->n_entries - 1) * FELIX_IDX_ENTRY_LEN));
}

/* Seals the active segment (sync it: "flush on seal") and starts a new one. */
static felix_status roll(felix_log *log, felix_err *err) {
  log_seg *s = log_active(log);
  int rc = log_sync_fd(log, s->fd, "segment seal");
  if (rc) {
    log_storage_failed(log, rc);
    return felix_fail_errno(err, FELIX_E_SYNC, rc, "shard %s: sync sealed segment %020" PRIu64 ".log", log->shard, s->base);
  }
  /* the sealed segment's index is trusted at the next open: make it durable too */
  if (s->idx_fd >= 0) (void)log_sync_index(log, s->idx_fd, "segment seal"), close(s->idx_fd);
  s->idx_fd = -1;
  felix_status st = log_seg_create(log, s->next_offset, err);
  if (st) log_storage_failed(log, err && err->sys_errno ? err->sys_errno : EIO);
  else log_seg_mark_flushed(log_active(log));
  return st;
}

static felix_status append_locked(felix_log *log, const felix_record_in *recs, size_t n, wbuf *b,
                                  felix_appended *out, felix_err *err) {
  out->first_offset = log_active(log)->next_offset;
  for (size_t i = 0; i < n; i++) {
    uint64_t size = FELIX_REC_HEADER_LEN + (uint64_t)recs[i].len;
    log_seg *s = log_active(log);
    if (s->next_offset > s->base && s->size + b->len + size > log->cfg.segment_bytes) {
      felix_status st = flush_wbuf(log, b, err);
      if (!st) st = roll(log, err);
      if (st) return st;
      s = log_active(log);
    }
    uint64_t pos = s->size + b->len, off = s->next_offset;
    uint8_t hdr[FELIX_REC_HEADER_LEN];
    uint64_t ts = recs[i].timestamp_micros ? recs[i].timestamp_micros : felix_now_micros();
    felix_record_header_encode(hdr, off, ts, recs[i].payload, recs[i].len);
    if (!wbuf_put(b, hdr, sizeof hdr) || !wbuf_put(b, recs[i].payload, recs[i].len))
      return felix_fail(err, FELIX_E_IO, "out of memory");
    if (felix_idx_wants_entry(pos, s->last_entry_pos, log->cfg.index_spacing_bytes)) {
      if (log_seg_add_entry(s, off, pos)) return felix_fail(err, FELIX_E_IO, "out of memory");
      write_index_entry(s, off, pos);
    }
    s->next_offset++;
  }
  felix_status st = flush_wbuf(log, b, err);
  out->last_offset = log_active(log)->next_offset - 1;
  return st;
}

felix_status felix_log_append_batch(felix_log *log, const felix_record_in *recs, size_t n,
                                    felix_appended *out, felix_err *err) {
  if (n == 0) return felix_fail(err, FELIX_E_INVAL, "shard %s: empty batch", log->shard);
  for (size_t i = 0; i < n; i++)
    if (recs[i].len > FELIX_MAX_PAYLOAD)
      return felix_fail(err, FELIX_E_INVAL, "shard %s: record %zu of the batch is %u bytes, over the %u-byte limit",
                        log->shard, i, recs[i].len, FELIX_MAX_PAYLOAD);
  pthread_mutex_lock(&log->mu);
  felix_status st;
  if (!log->sync_error && log_dir_gone(log)) log->sync_error = ENOENT, log->dir_gone = true; /* never ack into an unlinked file */
  if (log->sync_error || log->closing) {
    st = log->closing ? felix_fail(err, FELIX_E_CLOSED, "shard %s: log is closing", log->shard) : log_sticky_error(log, err);
  } else {
    wbuf b = {0};
    uint64_t end_before = log_active(log)->next_offset, seq_before = log->append_seq;
    log_seg_mark_flushed(log_active(log));
    st = append_locked(log, recs, n, &b, out, err);
    free(b.p);
    if (st) { /* nothing unwritten may look written: back to the last write, and refuse from now on */
      log_seg *s = log_active(log);
      s->next_offset = s->flushed_next_offset;
      s->n_entries = s->flushed_entries;
      s->last_entry_pos = s->flushed_last_entry_pos;
      log_storage_failed(log, err && err->sys_errno ? err->sys_errno : EIO);
      if (log->dir_gone) st = log_sticky_error(log, err); /* the roll or write met a deleted directory */
    }
    /* The log end only moves forward here, even when the append fails. */
    assert(log_active(log)->next_offset >= end_before);
    /* Success: n offsets from the old end, each one more than the last. */
    assert(st || (out->first_offset == end_before && out->last_offset - out->first_offset + 1 == n &&
                  log_active(log)->next_offset == out->last_offset + 1));
    out->seq = ++log->append_seq;
    out->trunc_epoch = log->ntrunc;
    /* Strictly increasing, and no completed sync vouches for it yet. */
    assert(out->seq > seq_before && log->synced_seq < out->seq);
    (void)end_before, (void)seq_before;
  }
  log_assert_positions(log);
  pthread_mutex_unlock(&log->mu);
  return st;
}

static bool was_truncated(const felix_log *log, const felix_appended *a) {
  for (size_t e = a->trunc_epoch; e < log->ntrunc; e++)
    if (log->trunc_points[e] <= a->last_offset) return true;
  return false;
}

felix_status felix_log_wait_held(felix_log *log, const felix_appended *a, felix_err *err) {
  pthread_mutex_lock(&log->mu);
  assert(a->seq <= log->append_seq && a->trunc_epoch <= log->ntrunc); /* a batch of this log */
  felix_status st = FELIX_OK;
  for (;;) {
    if (was_truncated(log, a)) {
      st = felix_fail(err, FELIX_E_TRUNCATED, "shard %s: offsets %" PRIu64 "..%" PRIu64 " were truncated before they were held",
                      log->shard, a->first_offset, a->last_offset);
      break;
    }
    if (log->sync_error) {
      st = log_sticky_error(log, err);
      break;
    }
    if (felix_fsync_mode_relaxed(log->cfg.fsync_mode) || log->synced_seq >= a->seq) break;
    if (log->closing && !log->sync_in_flight) {
      st = felix_fail(err, FELIX_E_CLOSED, "shard %s: log closed before the append was synced", log->shard);
      break;
    }
    if (log->sync_in_flight)
      pthread_cond_wait(&log->cv, &log->mu);
    else
      log_sync_round(log);
  }
  pthread_mutex_unlock(&log->mu);
  return st;
}

felix_status felix_log_append(felix_log *log, const void *payload, uint32_t len, uint64_t *offset,
                              felix_err *err) {
  felix_record_in r = {payload, len, 0};
  felix_appended a;
  felix_status st = felix_log_append_batch(log, &r, 1, &a, err);
  if (!st) st = felix_log_wait_held(log, &a, err);
  if (!st && offset) *offset = a.first_offset;
  return st;
}

felix_status felix_log_sync(felix_log *log, felix_err *err) {
  pthread_mutex_lock(&log->mu);
  uint64_t target = log->append_seq;
  while (!log->sync_error && log->synced_seq < target) {
    if (log->sync_in_flight)
      pthread_cond_wait(&log->cv, &log->mu);
    else
      log_sync_round(log);
  }
  felix_status st = log->sync_error ? log_sticky_error(log, err) : FELIX_OK;
  pthread_mutex_unlock(&log->mu);
  return st;
}

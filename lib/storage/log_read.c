/* storage/log_read.c — reading ranges and truncating a log.
 *
 * Reads verify every record's checksum and never trust the index beyond
 * using it as a starting hint: a hint that does not land on the expected
 * record falls back to the segment's first record. */
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

static size_t find_segment(const felix_log *log, uint64_t offset) {
  size_t lo = 0, hi = log->nsegs; /* last segment with base <= offset */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (log->segs[mid].base <= offset) lo = mid; else hi = mid;
  }
  return lo;
}

static felix_status read_exact(felix_log *log, const log_seg *s, void *buf, size_t n, uint64_t pos,
                               felix_err *err) {
  ssize_t got = pread(s->fd, buf, n, (off_t)pos);
  if (got == (ssize_t)n) return FELIX_OK;
  if (got < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: read segment %020" PRIu64 ".log at byte %" PRIu64, log->shard, s->base, pos);
  return felix_fail(err, FELIX_E_CORRUPT, "shard %s: segment %s/%020" PRIu64 ".log: byte %" PRIu64 ": short read",
                    log->shard, log->path, s->base, pos);
}

/* Finds the byte position of `offset` in segment s (offset < s->next_offset). */
static felix_status locate(felix_log *log, const log_seg *s, uint64_t offset, uint64_t *pos, felix_err *err) {
  assert(s->base <= offset && offset < s->next_offset);
  uint64_t p = FELIX_SEG_HEADER_LEN, at = s->base;
  size_t lo = 0, hi = s->n_entries;
  while (lo < hi) { /* last entry with entry.offset <= offset */
    size_t mid = (lo + hi) / 2;
    if (s->entries[mid].offset <= offset) lo = mid + 1; else hi = mid;
  }
  uint8_t hdr[FELIX_REC_HEADER_LEN];
  if (lo > 0) {
    felix_idx_entry e = s->entries[lo - 1];
    felix_status st = read_exact(log, s, hdr, sizeof hdr, e.position, err);
    if (st) return st;
    if (felix_get_u64(hdr + 4) == e.offset) p = e.position, at = e.offset;
  }
  while (at < offset) {
    felix_status st = read_exact(log, s, hdr, sizeof hdr, p, err);
    if (st) return st;
    if (felix_get_u64(hdr + 4) != at)
      return felix_fail(err, FELIX_E_CORRUPT, "shard %s: segment %s/%020" PRIu64 ".log: byte %" PRIu64 ": offset_out_of_order: expected offset %" PRIu64,
                        log->shard, log->path, s->base, p, at);
    p += FELIX_REC_HEADER_LEN + felix_get_u32(hdr);
    at++;
  }
  *pos = p;
  return FELIX_OK;
}

typedef struct rbuilder {
  felix_record_batch *b;
  size_t cap_recs, buf_len, buf_cap;
  size_t *payload_at; /* buffer offsets, turned into pointers at the end */
} rbuilder;

static felix_status read_one(felix_log *log, const log_seg *s, uint64_t pos, uint64_t expect,
                             rbuilder *rb, uint64_t *next_pos, felix_err *err) {
  uint8_t hdr[FELIX_REC_HEADER_LEN];
  felix_status st = read_exact(log, s, hdr, sizeof hdr, pos, err);
  if (st) return st;
  uint32_t len = felix_get_u32(hdr);
  if (len > FELIX_MAX_PAYLOAD || pos + FELIX_REC_HEADER_LEN + len > s->size || felix_get_u64(hdr + 4) != expect)
    return felix_fail(err, FELIX_E_CORRUPT, "shard %s: segment %s/%020" PRIu64 ".log: byte %" PRIu64 ": bad record header (expected offset %" PRIu64 ")",
                      log->shard, log->path, s->base, pos, expect);
  if (rb->buf_len + len > rb->buf_cap || !rb->b->buf) {
    size_t nc = rb->buf_cap ? rb->buf_cap : 4096;
    while (nc < rb->buf_len + len) nc *= 2;
    uint8_t *nb = realloc(rb->b->buf, nc);
    if (!nb) return felix_fail(err, FELIX_E_IO, "out of memory");
    rb->b->buf = nb;
    rb->buf_cap = nc;
  }
  if (rb->b->count == rb->cap_recs) {
    size_t nc = rb->cap_recs ? rb->cap_recs * 2 : 64;
    felix_record *nr = realloc(rb->b->records, nc * sizeof *nr);
    size_t *na = nr ? realloc(rb->payload_at, nc * sizeof *na) : NULL;
    if (nr) rb->b->records = nr;
    if (!nr || !na) return felix_fail(err, FELIX_E_IO, "out of memory");
    rb->payload_at = na;
    rb->cap_recs = nc;
  }
  uint8_t *dst = rb->b->buf + rb->buf_len;
  if (len && (st = read_exact(log, s, dst, len, pos + FELIX_REC_HEADER_LEN, err))) return st;
  if (felix_record_checksum(hdr, dst, len) != felix_get_u32(hdr + 20))
    return felix_fail(err, FELIX_E_CORRUPT, "shard %s: segment %s/%020" PRIu64 ".log: byte %" PRIu64 ": bad_checksum: record %" PRIu64 " fails its checksum",
                      log->shard, log->path, s->base, pos, expect);
  rb->payload_at[rb->b->count] = rb->buf_len;
  rb->b->records[rb->b->count++] = (felix_record){expect, felix_get_u64(hdr + 12), pos, len, NULL};
  rb->buf_len += len;
  *next_pos = pos + FELIX_REC_HEADER_LEN + len;
  return FELIX_OK;
}

felix_status felix_log_read(felix_log *log, uint64_t from, size_t max_records, size_t max_bytes,
                            felix_record_batch *out, felix_err *err) {
  memset(out, 0, sizeof *out);
  rbuilder rb = {.b = out};
  pthread_mutex_lock(&log->mu);
  felix_status st = FELIX_OK;
  uint64_t start = log->segs[0].base, end = log_active(log)->next_offset;
  if (from < start || from > end)
    st = felix_fail(err, FELIX_E_INVAL, "shard %s: offset %" PRIu64 " is outside the log [%" PRIu64 ", %" PRIu64 ")",
                    log->shard, from, start, end);
  uint64_t at = from, pos = 0;
  for (size_t si = st ? log->nsegs : find_segment(log, from); si < log->nsegs && !st; si++) {
    const log_seg *s = &log->segs[si];
    if (at >= s->next_offset) continue;
    st = locate(log, s, at, &pos, err);
    while (!st && at < s->next_offset && out->count < max_records) {
      if (out->count > 0 && rb.buf_len >= max_bytes) break;
      st = read_one(log, s, pos, at, &rb, &pos, err);
      if (!st) at++;
    }
    if (out->count >= max_records || (out->count > 0 && rb.buf_len >= max_bytes)) break;
  }
  pthread_mutex_unlock(&log->mu);
  for (size_t i = 0; i < out->count; i++) out->records[i].payload = out->buf + rb.payload_at[i];
  free(rb.payload_at);
  if (st) felix_record_batch_free(out);
  return st;
}

void felix_record_batch_free(felix_record_batch *b) {
  free(b->records);
  free(b->buf);
  memset(b, 0, sizeof *b);
}

/* Drops segments wholly at or above `offset` (never the first), newest first,
 * so a crash midway leaves a prefix and never a gap. */
static felix_status drop_segments_from(felix_log *log, uint64_t offset, bool *dropped, felix_err *err) {
  while (log->nsegs > 1 && log_active(log)->base >= offset) {
    log_seg *s = log_active(log);
    char name[32], iname[32];
    felix_seg_format_name(name, s->base, ".log");
    felix_seg_format_name(iname, s->base, ".index");
    if (unlinkat(log->dirfd, name, 0) != 0 && errno != ENOENT)
      return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: delete %s/%s", log->shard, log->path, name);
    unlinkat(log->dirfd, iname, 0);
    log_seg_close(s);
    log->nsegs--;
    *dropped = true;
    /* each unlink durable before the next step, so a power cut midway leaves
     * a prefix of the segments, never a gap */
    int rc = log_sync_dir(log, "truncate");
    if (rc) return felix_fail_errno(err, FELIX_E_SYNC, rc, "shard %s: fsync directory %s", log->shard, log->path);
  }
  return FELIX_OK;
}

static felix_status cut_active(felix_log *log, uint64_t offset, felix_err *err) {
  log_seg *s = log_active(log);
  uint64_t pos = FELIX_SEG_HEADER_LEN;
  felix_status st = FELIX_OK;
  /* drop_segments_from left the segment the cut falls in active */
  assert(s->base <= offset && offset <= s->next_offset);
  if (offset > s->base) {
    st = offset < s->next_offset ? locate(log, s, offset, &pos, err) : FELIX_OK;
    if (offset >= s->next_offset) pos = s->size;
  }
  if (!st) st = log_seg_unshare(log, s, pos, err);
  if (st) return st;
  int rc = ftruncate(s->fd, (off_t)pos) == 0 ? log_sync_fd(log, s->fd, "truncate") : errno;
  if (rc) {
    log_storage_failed(log, rc);
    return felix_fail_errno(err, FELIX_E_SYNC, rc, "shard %s: truncate %s/%020" PRIu64 ".log at byte %" PRIu64, log->shard, log->path, s->base, pos);
  }
  s->size = pos;
  s->next_offset = offset;
  while (s->n_entries > 0 && s->entries[s->n_entries - 1].offset >= offset) s->n_entries--;
  s->last_entry_pos = s->n_entries ? s->entries[s->n_entries - 1].position : 0;
  if (s->idx_fd < 0) {
    char iname[32];
    felix_seg_format_name(iname, s->base, ".index");
    s->idx_fd = openat(log->dirfd, iname, O_RDWR | O_CLOEXEC);
  }
  if (s->idx_fd >= 0 && ftruncate(s->idx_fd, (off_t)(FELIX_IDX_HEADER_LEN + s->n_entries * FELIX_IDX_ENTRY_LEN)) == 0)
    (void)log_sync_index(log, s->idx_fd, "truncate"); /* no stale entry past the cut may survive a power cut */
  return FELIX_OK;
}

static felix_status record_truncation(felix_log *log, uint64_t offset, felix_err *err) {
  if (log->ntrunc == log->cap_trunc) {
    size_t nc = log->cap_trunc ? log->cap_trunc * 2 : 8;
    uint64_t *np = realloc(log->trunc_points, nc * sizeof *np);
    if (!np) return felix_fail(err, FELIX_E_IO, "out of memory");
    log->trunc_points = np;
    log->cap_trunc = nc;
  }
  log->trunc_points[log->ntrunc++] = offset;
  if (offset < log->trunc_floor_during_sync) log->trunc_floor_during_sync = offset;
  if (offset < log->synced_end) log->synced_end = offset;
  return FELIX_OK;
}

felix_status felix_log_truncate(felix_log *log, uint64_t offset, felix_err *err) {
  pthread_mutex_lock(&log->mu);
  felix_status st = FELIX_OK;
  uint64_t start = log->segs[0].base, end = log_active(log)->next_offset;
  bool dropped = false;
  if (log->sync_error && log->dir_gone) {
    st = log_sticky_error(log, err);
  } else if (log->sync_error) {
    st = felix_fail_errno(err, FELIX_E_SYNC, log->sync_error, "shard %s: refusing to truncate after a failed sync", log->shard);
  } else if (offset < start || offset > end) {
    st = felix_fail(err, FELIX_E_INVAL, "shard %s: cannot truncate to %" PRIu64 ": log holds [%" PRIu64 ", %" PRIu64 ")",
                    log->shard, offset, start, end);
  } else if (offset < end) {
    /* Record first: pending work covering the cut fails even if a step below does. */
    st = record_truncation(log, offset, err);
    if (!st) st = drop_segments_from(log, offset, &dropped, err);
    if (!st) st = cut_active(log, offset, err);
    if (st) log_storage_failed(log, err && err->sys_errno ? err->sys_errno : EIO);
    if (st && log->dir_gone) st = log_sticky_error(log, err); /* a cut that met a deleted directory */
    (void)dropped;
    /* the end moves back only here, to the cut; nothing past it counts as synced */
    assert(st || (log_active(log)->next_offset == offset && log->synced_end <= offset));
    pthread_cond_broadcast(&log->cv);
  }
  log_assert_positions(log);
  pthread_mutex_unlock(&log->mu);
  return st;
}

void felix_log_get_stats(felix_log *log, felix_log_stats *o) {
  pthread_mutex_lock(&log->mu);
  memset(o, 0, sizeof *o);
  o->start_offset = log->segs[0].base;
  o->end_offset = log_active(log)->next_offset;
  o->synced_end = log->synced_end;
  o->held_end = felix_fsync_mode_relaxed(log->cfg.fsync_mode) ? o->end_offset : log->synced_end;
  o->append_seq = log->append_seq;
  o->synced_seq = log->synced_seq;
  o->syncs = log->syncs;
  o->sync_nanos = log->sync_nanos;
  o->segments = log->nsegs;
  for (size_t i = 0; i < log->nsegs; i++) o->bytes += log->segs[i].size;
  o->unsynced_bytes = log->bytes_total - log->bytes_synced;
  o->sync_error = log->sync_error;
  o->dir_gone = log->dir_gone;
  log_assert_positions(log);
  pthread_mutex_unlock(&log->mu);
}

"""traffic.py — the campaign's producers and consumers, speaking the data
protocol (docs/wire.md) directly, so that every acknowledgement is recorded
with its offset and content, and every fetch reply with its HWM.

Producers follow a seeded pattern of trickles, bursts and idle stretches;
a record's content names its stream, shard, producer and sequence, so it
is unique and is never sent twice (a publish that failed or timed out is
"unknown": it may or may not be written, and is never retried).
Consumers follow each shard from offset 0 (long polls), and note any offset
served with two contents and any HWM lower than one already seen.
"""
import os
import random
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from wire import Reader, frame, recv_exact, s16  # noqa: E402

PUBLISH, FETCH = 0x0001, 0x0002
OK, NOT_LEADER, UNAVAILABLE, OUT_OF_RANGE = 0, 1, 5, 4


class Conn:
    """One connection to one broker; any error closes it."""

    def __init__(self, addr, timeout):
        host, port = addr.rsplit(":", 1)
        self.addr = addr
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.corr = 0

    def call(self, t, body):
        self.corr += 1
        self.sock.sendall(frame(t, self.corr, body))
        length, _rtype, corr = struct.unpack(">IHI", recv_exact(self.sock, 10))
        if corr != self.corr:
            raise EOFError("correlation %d, expected %d" % (corr, self.corr))
        return Reader(recv_exact(self.sock, length - 6))

    def close(self):
        self.sock.close()


class Client:
    """Finds a shard's leader (the control plane, then NOT_LEADER hints) and
    keeps one connection to it."""

    def __init__(self, cp, stream, shard, timeout):
        self.cp, self.stream, self.shard, self.timeout = cp, stream, shard, timeout
        self.conn, self.hint = None, None

    def leader(self):
        if self.conn:
            return self.conn
        addr = self.hint
        self.hint = None
        if not addr:
            d = self.cp.get("/v1/shards/%s/%d" % (self.stream, self.shard))
            addr = d and d.get("leader_address")
        if not addr:
            return None
        try:
            self.conn = Conn(addr, self.timeout)
        except OSError:
            return None
        return self.conn

    def drop(self, hint=None):
        if self.conn:
            self.conn.close()
        self.conn, self.hint = None, hint or None


def sleep_until(stop, t):
    while not stop.is_set() and time.monotonic() < t:
        stop.wait(min(0.2, max(0, t - time.monotonic())))


class Producer(threading.Thread):
    """Publishes to one shard until `stop`; self.log holds one entry per
    publish: (t_sent, t_done, outcome, first_offset, [contents], leader)."""

    def __init__(self, cp, stream, shard, acks, seed, t0, stop):
        super().__init__(daemon=True)
        self.client = Client(cp, stream, shard, timeout=12)
        self.stream, self.shard, self.acks = stream, shard, acks
        self.rng, self.t0, self.stop, self.seq = random.Random(seed), t0, stop, 0
        self.log = []

    def contents(self, n):
        out = []
        for _ in range(n):
            self.seq += 1
            out.append("%s/%d/%d" % (self.stream, self.shard, self.seq))
        return out

    def publish(self, recs):
        t = time.monotonic() - self.t0
        c = self.client.leader()
        if c is None:
            self.log.append((t, t, "no-leader", None, recs, None))
            return False
        body = s16(self.stream) + struct.pack(">IBI", self.shard, 0, len(recs))
        body += b"".join(struct.pack(">QI", 0, len(r)) + r.encode() for r in recs)
        try:
            r = c.call(PUBLISH, body)
            st, _msg, leader, first, count = r.take(">H"), r.str(), r.str(), r.take(">Q"), r.take(">I")
        except (OSError, EOFError, struct.error) as e:
            self.client.drop()
            self.log.append((t, time.monotonic() - self.t0, "unknown:" + type(e).__name__, None, recs, c.addr))
            return False
        done = time.monotonic() - self.t0
        if st == OK and count == len(recs):
            self.log.append((t, done, "ok", first, recs, c.addr))
            return True
        self.log.append((t, done, "status:%d" % st, None, recs, c.addr))
        self.client.drop(leader if st == NOT_LEADER else None)
        return False

    def run(self):
        while not self.stop.is_set():
            phase = self.rng.choices(["trickle", "burst", "idle"], [5, 2, 2])[0]
            end = time.monotonic() + self.rng.uniform(1.5, 5)
            if phase == "idle":
                sleep_until(self.stop, end)
                continue
            while not self.stop.is_set() and time.monotonic() < end:
                n = self.rng.randint(5, 40) if phase == "burst" else 1
                ok = self.publish(self.contents(n))
                if phase == "trickle" or not ok:
                    self.stop.wait(self.rng.uniform(0.05, 0.4) if ok else 0.2)


class Consumer(threading.Thread):
    """Follows one shard from offset 0 until `stop` (then reads on to the
    HWM it last saw). self.seen: offset -> content; self.events: anomalies
    seen on the way (two contents at an offset, an HWM stepping back, an
    offset out of range)."""

    def __init__(self, cp, stream, shard, t0, stop):
        super().__init__(daemon=True)
        self.client = Client(cp, stream, shard, timeout=5)
        self.stream, self.shard, self.t0, self.stop = stream, shard, t0, stop
        self.seen, self.events, self.next, self.max_hwm, self.hwm_log = {}, [], 0, 0, []

    def fetch_once(self):
        c = self.client.leader()
        if c is None:
            return False
        body = s16(self.stream) + struct.pack(">IQIII", self.shard, self.next, 500, 1 << 20, 500)
        try:
            r = c.call(FETCH, body)
            st, _msg, leader = r.take(">H"), r.str(), r.str()
            _start, hwm, nxt, count = r.take(">Q"), r.take(">Q"), r.take(">Q"), r.take(">I")
            recs = [(r.take(">Q"), r.take(">Q"), r.bytes().decode()) for _ in range(count)]
        except (OSError, EOFError, struct.error, UnicodeDecodeError):
            self.client.drop()
            return False
        now = time.monotonic() - self.t0
        if st != OK:
            if st == OUT_OF_RANGE:
                self.events.append((now, "out_of_range", "fetch at %d answered OFFSET_OUT_OF_RANGE by %s" % (self.next, c.addr)))
            self.client.drop(leader if st == NOT_LEADER else None)
            return False
        self.note(now, c.addr, hwm, nxt, recs)
        return True

    def note(self, now, addr, hwm, nxt, recs):
        if hwm < self.max_hwm:
            self.events.append((now, "hwm_back", "%s answered HWM %d after %d was seen" % (addr, hwm, self.max_hwm)))
        self.max_hwm = max(self.max_hwm, hwm)
        self.hwm_log.append((now, hwm))
        for off, _ts, content in recs:
            old = self.seen.get(off)
            if old is not None and old != content:
                self.events.append((now, "two_contents", "offset %d served as %r, then as %r by %s" % (off, old, content, addr)))
            self.seen[off] = content
        self.next = max(self.next, nxt)

    def run(self):
        while not self.stop.is_set():
            if not self.fetch_once():
                self.stop.wait(0.2)

    def read_to(self, hwm, deadline):
        """After the run: read on until `hwm` (or the deadline)."""
        while self.next < hwm and time.monotonic() < deadline:
            if not self.fetch_once():
                time.sleep(0.2)
        return self.next >= hwm


def read_all(cp, stream, shard, deadline):
    """Every committed record of a shard now, offset -> content (None if it
    could not be read before the deadline). Reads up to the highest of the
    control plane's maximum HWM and the leader's HWM: a new leader's HWM may
    start below what its predecessor showed (docs/wire.md), and a read that
    stopped there would take records for lost."""
    c = Consumer(cp, stream, shard, 0, threading.Event())
    while time.monotonic() < deadline:
        d = cp.get("/v1/shards/%s/%d" % (stream, shard)) or {}
        if c.fetch_once():
            want = max(c.hwm_log[-1][1], d.get("max_hwm") or 0)
            if c.read_to(want, deadline):
                return c.seen, want
        time.sleep(0.2)
    return None, None

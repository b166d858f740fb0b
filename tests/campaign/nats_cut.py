"""nats_cut.py — a power cut for a program the fault library cannot see
(PEER=nats: a Go program makes its system calls itself, so LD_PRELOAD
records none of them). docs/campaign.md "The NATS power cut".

The server runs under strace, which reports only its sync calls (seccomp
filtered: the others run at full speed) and the file or directory each
named. When a sync returns, the file is copied aside (the shadow): that is
what the sync made durable. strace holds the syncing thread for 50 ms
after the call returns (its line comes first) while the copy is taken; a
write by another thread in those 50 ms would be kept too: the emulation
errs towards keeping data. A scanner notes when each name first appeared and
when it went.

A cut (seeded, as Felix's `powercut --seed`), modelled on ext4 (data=ordered,
delayed allocation), the file system under both peers here:
- names: a sync commits the journal, and the journal commits on its own
  every 5 s; so every name change before max(the last sync, the cut minus a
  seeded 0-5 s) survives, and later ones are undone (a new file goes, a
  removed one comes back as of its last sync, a file renamed over a synced
  one gives way to it again). A name's time is when the scanner (every
  0.2 s) first saw its inode under it;
- a synced file (the same inode) comes back as of its last sync, plus a
  seeded whole-page part of what was appended since; rewritten since, the
  first k of its new pages reached the disk over the old bytes (k seeded);
- a never-synced file whose name survives keeps a seeded whole-page prefix
  (writeback may have reached any part of it).
Not modelled: a never-synced file removed after the journal's reach point
does not come back (its bytes were never copied), which can only cost NATS
a file its own rules never made durable.
After the cut the shadow is the whole directory: what survived is durable.
"""
import os
import random
import re
import shutil
import threading
import time

PAGE = 4096
HOLD_US = 50000
OK = re.compile(r"= 0(?: \(DELAYED\))?\s*$")
SYNCS = "fsync,fdatasync,sync_file_range,syncfs"
CALL = re.compile(r"^(\d+)\s+(fsync|fdatasync|sync_file_range|syncfs)\(\d+<([^>]*)>(.*)$")
RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>.*= (-?\d+)(?: \(DELAYED\))?\s*$")


class SyncTracer:
    """The syncs of one server's data directory ROOT, kept in SHADOW."""

    def __init__(self, root, shadow, log):
        # strace names files by their real path
        self.root, self.shadow, self.log = os.path.realpath(root), shadow, log
        self.files = os.path.join(shadow, "files")
        self.dirsynced = {}  # rel dir -> names it held at its last sync
        self.born, self.gone = {}, {}  # rel path -> (inode, when it appeared) / when it went
        self.synced_ino = {}  # rel path -> the inode its shadow copy was taken from
        self.last_sync = 0.0
        self.syncs = 0  # syncs seen, reported with each cut
        self.pending = {}
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.threads = []
        self.starts = 0
        os.makedirs(self.files, exist_ok=True)

    def wrap(self, argv):
        self.starts += 1
        self.fifo = os.path.join(self.shadow, "strace.%d.fifo" % self.starts)
        os.mkfifo(self.fifo)
        # each sync's thread is held 50 ms after it returns, while the
        # follower copies what it covered (the line comes before the delay)
        return ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=" + SYNCS, "-e", "signal=none", "-y",
                "--inject=%s:delay_exit=%d" % (SYNCS, HOLD_US), "-o", self.fifo, "--"] + argv

    def follow(self):
        self.stop_ev.clear()
        self.threads = [threading.Thread(target=self.read_trace, args=(self.fifo,), daemon=True),
                        threading.Thread(target=self.scan_loop, daemon=True)]
        for t in self.threads:
            t.start()

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(10)
        self.threads = []

    def rel(self, path):
        if path != self.root and not path.startswith(self.root + "/"):
            return None
        return os.path.relpath(path, self.root)

    # --- what the server syncs ---
    def read_trace(self, fifo):
        with open(fifo, errors="replace") as f:  # returns when strace exits
            for line in f:
                m = CALL.match(line)
                if m:
                    pid, call, path, rest = m.groups()
                    path = unescape(path)
                    if "<unfinished" in rest:
                        self.pending[pid] = path
                    elif OK.search(rest):
                        self.synced(call, path)
                    continue
                m = RESUMED.match(line)
                if m and m.group(1) in self.pending:
                    path = self.pending.pop(m.group(1))
                    if m.group(3) == "0":
                        self.synced(m.group(2), path)

    def synced(self, call, path):
        with self.lock:
            self.last_sync = time.time()
            self.syncs += 1
            if call == "syncfs":
                self.snapshot_all()
                return
            r = self.rel(path)
            if r is None:
                return
            if os.path.isdir(path):
                try:
                    self.dirsynced[r] = set(os.listdir(path))
                except OSError:
                    pass
                return
            self.copy_in(r)

    def copy_in(self, r):
        dst = os.path.join(self.files, r)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        try:
            with open(os.path.join(self.root, r), "rb") as src:
                ino = os.fstat(src.fileno()).st_ino
                with open(dst + ".tmp", "wb") as out:
                    shutil.copyfileobj(src, out)
            os.replace(dst + ".tmp", dst)
            self.synced_ino[r] = ino
        except OSError:
            pass  # gone between the sync and the copy: its removal came after

    def snapshot_all(self):
        shutil.rmtree(self.files, ignore_errors=True)
        os.makedirs(self.files)
        self.dirsynced, self.synced_ino = {}, {}
        for d, _dirs, names in os.walk(self.root):
            r = os.path.relpath(d, self.root)
            self.dirsynced[r] = set(os.listdir(d))
            for n in names:
                self.copy_in(os.path.normpath(os.path.join(r, n)))

    # --- when names come and go ---
    def scan_loop(self):
        while not self.stop_ev.wait(0.2):
            self.scan()

    def scan(self):
        """Notes each name's inode and when it first showed it (a name
        renamed over or made again is a new birth), and when a name went."""
        now, seen = time.time(), {}
        for d, _dirs, names in os.walk(self.root):
            for n in names:
                try:
                    seen[os.path.normpath(os.path.relpath(os.path.join(d, n), self.root))] = os.lstat(os.path.join(d, n)).st_ino
                except OSError:
                    pass
        with self.lock:
            for r, ino in seen.items():
                if r not in self.born or self.born[r][0] != ino:
                    self.born[r] = (ino, now)
                    self.gone.pop(r, None)
            for r in list(self.born):
                if r not in seen:
                    del self.born[r]
                    self.gone.setdefault(r, now)

    # --- the cut ---
    def forget(self):
        """A wiped directory: nothing of it is left to come back."""
        shutil.rmtree(self.files, ignore_errors=True)
        os.makedirs(self.files)
        self.dirsynced, self.born, self.gone, self.synced_ino = {}, {}, {}, {}

    def cut(self, seed):
        rng = random.Random(seed)
        self.scan()
        now = time.time()
        reach = max(self.last_sync, now - rng.uniform(0, 5))
        kept = cut_files = dropped = revived = 0
        for r, (ino, born) in sorted(self.born.items()):
            p, s = os.path.join(self.root, r), os.path.join(self.files, r)
            name_reached = born <= reach or os.path.basename(r) in self.dirsynced.get(os.path.dirname(r) or ".", ())
            if os.path.exists(s) and self.synced_ino.get(r) == ino:
                write(p, merge(read(s), read(p), rng))  # the file its last sync covered
                cut_files += 1
            elif name_reached:  # never synced (or a replacement of a synced file) and its name durable
                cur = read(p)
                write(p, cur[:rng.randint(0, pages(cur)) * PAGE])
                kept += 1
            elif os.path.exists(s):  # a replacement whose rename did not reach the journal: the old file is back
                write(p, read(s))
                revived += 1
            else:
                os.unlink(p)
                dropped += 1
        for r, when in sorted(self.gone.items()):
            s = os.path.join(self.files, r)
            if when > reach and os.path.exists(s):  # its removal did not reach the journal
                os.makedirs(os.path.dirname(os.path.join(self.root, r)), exist_ok=True)
                shutil.copyfile(s, os.path.join(self.root, r))
                revived += 1
        self.snapshot_all()
        self.scan()
        self.born = {r: (ino, 0.0) for r, (ino, _t) in self.born.items()}
        self.gone = {}
        return ("%d syncs seen; %d synced files cut back, %d never-synced files kept (a prefix), %d dropped, %d removed files back; "
                "names reached %.1f s before the cut" % (self.syncs, cut_files, kept, dropped, revived, now - reach))


def pages(b):
    return (len(b) + PAGE - 1) // PAGE


def merge(base, cur, rng):
    """A synced file after a cut: its synced bytes and a whole-page part of
    an append since; or, rewritten since, the first k of its new pages
    reached the disk over the old bytes (k seeded, up to all of them)."""
    if cur.startswith(base):
        tail = cur[len(base):]
        return base + tail[:rng.randint(0, pages(tail)) * PAGE]
    k = rng.randint(0, pages(cur))
    return cur if k == pages(cur) else cur[:k * PAGE] + base[k * PAGE:]


def unescape(path):
    """strace -y writes a path's non-printable and special bytes as \\ooo."""
    raw = re.sub(r"\\([0-7]{1,3})", lambda m: chr(int(m.group(1), 8)), path)
    return raw.encode("latin-1", "replace").decode("utf-8", "surrogateescape")


def read(p):
    try:
        with open(p, "rb") as f:
            return f.read()
    except OSError:
        return b""


def write(p, data):
    with open(p, "wb") as f:
        f.write(data)

"""test_nats_cut.py — the NATS power cut's rules (nats_cut.py), on a real
traced process and on made-up directories: python3 -m unittest
test_nats_cut (t5020 runs it)."""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nats_cut  # noqa: E402
from nats_cut import PAGE  # noqa: E402

# writes a file, syncs it, appends three pages, does not sync them
WRITER = """
import os, sys
d = sys.argv[1]
f = os.open(os.path.join(d, "seg"), os.O_CREAT | os.O_WRONLY, 0o644)
os.write(f, b"S" * %d)
os.fsync(f)
os.write(f, b"T" * %d)
print("done", flush=True)
sys.stdin.readline()
""" % (PAGE + 10, 3 * PAGE)


class Traced(unittest.TestCase):
    """A real process under strace: its sync is seen, and the cut keeps
    exactly the synced bytes plus a whole-page part of the rest."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.root = os.path.join(self.tmp, "data")
        os.makedirs(self.root)
        self.t = nats_cut.SyncTracer(self.root, os.path.join(self.tmp, "shadow"), lambda m: None)
        argv = self.t.wrap([sys.executable, "-c", WRITER, self.root])
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.t.follow()
        self.assertEqual(self.p.stdout.readline().strip(), "done")
        deadline = time.monotonic() + 10
        while self.t.syncs == 0 and time.monotonic() < deadline:
            time.sleep(0.05)

    def tearDown(self):
        self.p.kill()
        self.p.wait()
        self.p.stdin.close()
        self.p.stdout.close()
        self.t.stop()
        shutil.rmtree(self.tmp)

    def test_sync_seen_and_cut_to_it(self):
        self.assertEqual(self.t.syncs, 1)
        self.p.kill()
        self.p.wait()
        self.t.stop()
        saved = os.path.join(self.tmp, "saved")
        shutil.copytree(self.tmp + "/data", saved + "/data")
        shutil.copytree(self.t.files, saved + "/files")
        state = (dict(self.t.born), self.t.last_sync)
        data = nats_cut.read(os.path.join(self.root, "seg"))
        lengths = set()
        for seed in range(12):  # each seed cuts the same history
            for d, src in ((self.root, "data"), (self.t.files, "files")):
                shutil.rmtree(d)
                shutil.copytree(os.path.join(saved, src), d)
            self.t.born, self.t.last_sync = dict(state[0]), state[1]
            self.t.cut(seed)
            got = nats_cut.read(os.path.join(self.root, "seg"))
            self.assertTrue(got.startswith(b"S" * (PAGE + 10)), "synced bytes lost (seed %d)" % seed)
            self.assertEqual((len(got) - PAGE - 10) % PAGE, 0, "not whole pages of the tail (seed %d)" % seed)
            self.assertTrue(data.startswith(got))
            lengths.add(len(got))
        self.assertIn(PAGE + 10, lengths, "no seed lost the whole unsynced tail")
        self.assertGreater(len(lengths), 1, "every seed cut the same")


class Rules(unittest.TestCase):
    """The cut on a directory whose history is given by hand."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.root = os.path.join(self.tmp, "data")
        os.makedirs(os.path.join(self.root, "d"))
        self.t = nats_cut.SyncTracer(self.root, os.path.join(self.tmp, "shadow"), lambda m: None)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def put(self, rel, data, born):
        nats_cut.write(os.path.join(self.root, rel), data)
        self.t.born[rel] = (os.stat(os.path.join(self.root, rel)).st_ino, born)

    def synced(self, rel, data):
        """rel was synced holding data (its shadow copy, from its inode)."""
        self.put(rel, data, time.time() - 60)
        self.t.copy_in(rel)

    def test_a_new_name_after_the_reach_goes(self):
        now = time.time()
        self.put("d/old", b"x" * 10, now - 60)  # older than any reach point: its name survives
        self.put("d/new", b"y" * 10, now + 60)  # after every reach point: never durable
        self.t.cut(1)
        self.assertTrue(os.path.exists(os.path.join(self.root, "d/old")))
        self.assertFalse(os.path.exists(os.path.join(self.root, "d/new")))

    def test_a_sync_reaches_every_earlier_name(self):
        now = time.time()
        self.put("d/new", b"y" * 10, now - 0.01)
        self.t.last_sync = now  # any sync commits the journal, with every name before it
        self.t.cut(1)
        self.assertTrue(os.path.exists(os.path.join(self.root, "d/new")))

    def test_a_synced_directory_keeps_its_names(self):
        self.put("d/new", b"y", time.time() + 60)
        self.t.dirsynced["d"] = {"new"}
        self.t.cut(1)
        self.assertTrue(os.path.exists(os.path.join(self.root, "d/new")))

    def test_a_removal_after_the_reach_is_undone(self):
        os.makedirs(os.path.join(self.t.files, "d"))
        nats_cut.write(os.path.join(self.t.files, "d/gone"), b"kept")
        self.t.gone["d/gone"] = time.time() + 60
        self.t.cut(1)
        self.assertEqual(nats_cut.read(os.path.join(self.root, "d/gone")), b"kept")

    def test_a_rewrite_reaches_the_disk_page_by_page_from_the_front(self):
        base, cur = b"A" * (3 * PAGE), b"B" * (2 * PAGE)
        seen = set()
        for seed in range(20):
            got = nats_cut.merge(base, cur, random.Random(seed))
            self.assertIn(got, (b"A" * 3 * PAGE, b"B" * PAGE + b"A" * 2 * PAGE, b"B" * 2 * PAGE))
            seen.add(got)
        self.assertEqual(len(seen), 3, "not every reach of the rewrite is drawn")

    def test_a_file_renamed_over_after_its_sync(self):
        now = time.time()
        self.synced("d/meta", b"old")
        tmp = os.path.join(self.root, "d/meta.tmp")
        nats_cut.write(tmp, b"new")
        os.replace(tmp, os.path.join(self.root, "d/meta"))  # a new inode under the synced name
        self.t.born["d/meta"] = (os.stat(os.path.join(self.root, "d/meta")).st_ino, now + 60)  # after every reach
        self.t.cut(1)
        self.assertEqual(nats_cut.read(os.path.join(self.root, "d/meta")), b"old", "the rename was undone: the synced file is back")
        nats_cut.write(tmp, b"new")
        os.replace(tmp, os.path.join(self.root, "d/meta"))
        self.t.born["d/meta"] = (os.stat(os.path.join(self.root, "d/meta")).st_ino, now - 60)  # before any reach
        self.t.cut(1)
        self.assertIn(nats_cut.read(os.path.join(self.root, "d/meta")), (b"", b"new"),
                      "the rename reached the journal: the new file (never synced: a prefix) stands, never mixed with the old")

    def test_strace_escapes_are_read(self):
        self.assertEqual(nats_cut.unescape(r"/x/\303\251t\303\251\76y"), "/x/\u00e9t\u00e9>y")

    def test_the_shadow_is_the_cut_result(self):
        self.put("d/old", b"x" * 10, time.time() - 60)
        self.t.cut(3)
        self.assertEqual(nats_cut.read(os.path.join(self.t.files, "d/old")),
                         nats_cut.read(os.path.join(self.root, "d/old")))


if __name__ == "__main__":
    unittest.main()

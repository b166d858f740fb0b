"""natspeer.py — the campaign's peer (PEER=nats, docs/campaign.md): a NATS
JetStream cluster (Debian nats-server 2.9.10) in the same namespaces, under
the same schedule, with the same producers, consumers and checks as Felix.

It offers what run.py and inject.py use of felix.Felix (processes, network,
shard states, traffic), so one run serves both. Each of the run's shards is
one R=N stream (a raft group, as a Felix shard is one replica set), named
STREAM_SHARD; NATS has one acknowledgement (after its raft quorum stored the
message), so every stream counts as `quorum`.

What cannot be done to NATS is not done, and the run says so
(`not_applicable`): there is no control plane process (its meta leader is
one of the servers), and a Go program makes its system calls itself, so the
fault library (LD_PRELOAD) cannot slow, fail or fill its disk.

A power cut is emulated (nats_cut.py): every server runs under strace,
which reports its syncs; what a sync covered is copied aside when it
returns, and a cut puts each file back to that, with a seeded part of
what came after, by the rules of Felix's own seeded cut.
"""
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.request

import nats_cut
from felix import Cluster
from traffic import Consumer, Producer

NOT_APPLICABLE = {"cpkill": "NATS has no control-plane process", "cppause": "NATS has no control-plane process",
                  "cpcut": "NATS has no control-plane process",
                  "slowdisk": "the fault library cannot reach a Go program's system calls",
                  "syncerr": "the fault library cannot reach a Go program's system calls",
                  "fulldisk": "the fault library cannot reach a Go program's system calls"}


def http_json(url, timeout):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


class Nats(Cluster):
    def __init__(self, run_dir, net_id, net_dir, nodes, brokers, lease_ms, build, log):
        super().__init__(run_dir, net_id, net_dir, nodes, brokers, lease_ms, build, log)
        # its failure timers' longest (raft.go: a leader without a quorum
        # steps down after 10 s; elections time out in 4-9 s) plays Felix's
        # lease in the settling waits and the fault windows
        self.lease_s = 10.0
        self.client_bin = os.path.join(build, "tools", "nats-client")
        self.servers = ",".join("nats://%s:4222" % nodes[b] for b in brokers)
        self.tracers, self.streams = {}, []
        self.gen, self.agreed = {}, {}  # stream -> leader changes seen, last agreed leader

    # --- processes: nats-server under strace ---
    def config(self, b):
        a = self.nodes[b]
        routes = ", ".join("nats://%s:6222" % self.nodes[o] for o in self.brokers if o != b)
        text = ("server_name: %s\nlisten: %s:4222\nhttp: %s:8222\n"
                "jetstream { store_dir: \"%s\" }\n"
                "cluster { name: campaign, listen: %s:6222, routes: [%s] }\n") % (b, a, a, self.path(b), a, routes)
        p = self.path(b + ".conf")
        open(p, "w").write(text)
        return p

    def start_broker(self, b):
        os.makedirs(self.path(b), exist_ok=True)
        tracer = self.tracers.get(b) or nats_cut.SyncTracer(self.path(b), self.path("shadow." + b), self.log)
        self.tracers[b] = tracer
        self.spawn(b, b, tracer.wrap(["nats-server", "-c", self.config(b)]), os.environ)
        tracer.follow()

    def pid(self, name):
        """A signal goes to nats-server, strace's child."""
        p = self.procs.get(name)
        if p is None or p.poll() is not None:
            return None
        try:
            kids = open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()
        except OSError:
            return None
        return int(kids[0]) if kids else None

    def start(self, name):
        if name in self.brokers and not self.running(name):
            self.start_broker(name)

    def power_cut(self, b, seed):
        self.kill(b)
        self.tracers[b].stop()
        report = self.tracers[b].cut(seed)
        open(self.path("powercut.log"), "a").write("%s (seed %d): %s\n" % (b, seed, report))
        return True

    def wipe(self, b):
        self.kill(b)
        self.tracers[b].stop()
        shutil.rmtree(self.path(b), ignore_errors=True)
        self.tracers[b].forget()

    def switch(self, _name, _on):
        pass  # the fault library's switches; the faults that set them are not applied to NATS

    def stop_all(self):
        super().stop_all()
        for t in self.tracers.values():
            t.stop()

    def up(self, streams):
        for b in self.brokers:
            self.start_broker(b)
        if not self.wait("every server answering", lambda: self.alive() == len(self.brokers), 40):
            return False
        for s in streams:
            for k in range(s["shards"]):
                name = "%s_%d" % (s["name"], k)
                ok = self.wait("stream %s created" % name, lambda: subprocess.run(
                    [self.client_bin, "create", self.servers, name, "%s.%d" % (s["name"], k), str(s["replicas"])],
                    capture_output=True, timeout=30).returncode == 0, 40)
                if not ok:
                    return False
                self.streams.append((s["name"], k, s["replicas"]))
        return self.wait("every stream led", self.all_active, 40)

    def views(self):
        """Each answering server's jsz: server -> {stream: (leader, last_seq)}."""
        out = {}
        for b in self.brokers:
            j = http_json("http://%s:8222/jsz?accounts=true&streams=true" % self.nodes[b], 0.4)
            if j is None:
                continue
            v = {}
            for acc in j.get("account_details") or []:
                for sd in acc.get("stream_detail") or []:
                    v[sd["name"]] = ((sd.get("cluster") or {}).get("leader") or "", sd["state"]["last_seq"])
            out[b] = v
        return out

    def alive(self):
        return sum(1 for b in self.brokers if http_json("http://%s:8222/varz" % self.nodes[b], 0.4) is not None)

    def shards(self, timeout=2):
        """A stream is Active when its leader answers, names itself, and a
        majority of its replicas name it; its generation counts the changes
        of that agreed leader (nats-server 2.9 does not show its raft term)."""
        views = self.views()
        out = []
        for stream, k, reps in self.streams:
            name = "%s_%d" % (stream, k)
            named = [v[name][0] for v in views.values() if name in v]
            lead = max(set(named), key=named.count) if named else ""
            own = views.get(lead, {}).get(name)
            agreed = bool(lead) and own is not None and own[0] == lead and named.count(lead) >= reps // 2 + 1
            if agreed and self.agreed.get(name) != lead:
                self.gen[name] = self.gen.get(name, 0) + 1
                self.agreed[name] = lead
            out.append({"stream": stream, "shard": k, "state": "Active" if agreed else "NoLeader",
                        "generation": self.gen.get(name, 0), "leader": lead if agreed else None,
                        "hwm": own[1] + 1 if agreed else 0, "detail": "" if agreed else "no agreed leader (%s)" % named})
        return out

    def leader_of(self, shard):
        stream, n = shard.split("/")
        for x in self.shards():
            if x["stream"] == stream and x["shard"] == int(n):
                return x["leader"]
        return None

    def applies(self, f):
        return not_applicable(f) is None

    def acks(self, _policy):
        return "quorum"  # JetStream acknowledges once its raft quorum stored a message

    def events(self):
        return []  # nats-server keeps no event log a monitor could read

    # --- traffic ---
    def producer(self, stream, shard, _acks, seed, t0, stop):
        return NatsProducer(self, stream, shard, seed, t0, stop)

    def consumer(self, stream, shard, t0, stop):
        return NatsConsumer(self, stream, shard, t0, stop)

    def read_all(self, stream, shard, deadline):
        c = NatsConsumer(self, stream, shard, 0, threading.Event())
        while time.monotonic() < deadline:
            if c.fetch_once() and c.read_to(c.hwm_log[-1][1], deadline):
                c.client.close()
                return c.seen, c.hwm_log[-1][1]
            time.sleep(0.2)
        c.client.close()
        return None, None


class Helper:
    """One nats-client process driven over its pipes; a reply that does not
    come within the timeout kills it (the next call starts another)."""

    def __init__(self, argv, timeout):
        self.argv, self.timeout, self.p = argv, timeout, None

    def ask(self, line, until):
        """Sends one line, returns the reply lines up to (and with) the first
        for which until(line) is true; None on a timeout or a dead helper,
        which is then killed: a late reply must never answer the next
        question (helper-15)."""
        p = self.p
        if p is None or p.poll() is not None:
            p = self.p = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, text=True, bufsize=1)
        timer = threading.Timer(self.timeout, self.close)  # a read blocked past the timeout ends with the kill
        timer.start()
        try:
            p.stdin.write(line + "\n")
            p.stdin.flush()
            out, end = [], time.monotonic() + self.timeout
            while time.monotonic() < end:
                got = p.stdout.readline()
                if not got:
                    break
                out.append(got.rstrip("\n"))
                if until(out[-1]):
                    return out
        except (OSError, ValueError):
            pass
        finally:
            timer.cancel()
        self.close()
        return None

    def close(self):
        p, self.p = self.p, None
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()


class NatsProducer(Producer):
    """Felix's producer pattern; a batch (one Felix PUBLISH of several
    records) is published asynchronously, every record in flight at once,
    each acknowledged with its own stream sequence."""

    def __init__(self, nats, stream, shard, seed, t0, stop):
        super().__init__(None, stream, shard, "quorum", seed, t0, stop)
        self.client = Helper([nats.client_bin, "publish", nats.servers, "%s.%d" % (stream, shard), "10000"], 15)

    def publish(self, recs):
        t = time.monotonic() - self.t0
        reply = self.client.ask("B %d\n%s" % (len(recs), "\n".join(recs)), lambda line: line == "end")
        done = time.monotonic() - self.t0
        outcome = {}
        for line in reply or []:
            w = line.split(" ", 2)
            if w[0] == "ok" and len(w) == 3:
                outcome[w[2]] = int(w[1])
            elif w[0] == "err" and len(w) == 3:
                outcome[w[1]] = "unknown:" + w[2]
        for r in recs:
            o = outcome.get(r, "unknown:" + ("no reply" if reply else "timeout"))
            if isinstance(o, int):
                self.log.append((t, done, "ok", o, [r], "nats"))
            else:
                self.log.append((t, done, o, None, [r], "nats"))
        return all(isinstance(outcome.get(r), int) for r in recs)


class NatsConsumer(Consumer):
    """Follows one stream from sequence 1, up to 5000 records a read (an
    ordered consumer from the next sequence, which NATS places on one of
    the stream's replicas and which delivers from that replica's store, as
    any NATS consumer does); its HWM is the stream's last sequence + 1 (as
    a Felix HWM is the next offset)."""

    def __init__(self, nats, stream, shard, t0, stop):
        super().__init__(None, stream, shard, t0, stop)
        self.client = Helper([nats.client_bin, "read", nats.servers, "%s_%d" % (stream, shard), "%s.%d" % (stream, shard), "5000"], 30)
        self.next = 1

    def fetch_once(self):
        reply = self.client.ask("%d 5000" % self.next, lambda line: line.startswith(("end ", "err ")))
        if not reply or not reply[-1].startswith("end ") or not reply[0].startswith("hwm "):
            return False
        if reply[0].split()[3] == "-":
            return False  # no leader: each replica answered its own last sequence (helper-15)
        hwm = int(reply[0].split()[1]) + 1
        nxt = int(reply[-1].split()[1]) + 1  # read through that sequence
        recs = []
        for line in reply[1:-1]:
            w = line.split(" ", 2)
            if w[0] == "msg":
                recs.append((int(w[1]), 0, w[2] if len(w) > 2 else ""))
        now = time.monotonic() - self.t0
        self.note(now, "nats", hwm, nxt, recs)
        if not recs and self.next >= hwm:
            self.stop.wait(0.2)  # caught up: Felix's fetch would long-poll
        return True


def not_applicable(f):
    """Why NATS cannot be given fault f, or None."""
    if f["kind"] == "oneway" and f["param"] == "cp":
        return "NATS has no control-plane process (a broker that stops hearing it)"
    return NOT_APPLICABLE.get(f["kind"])


def applicability(faults):
    """The schedule's faults NATS cannot be given, with why."""
    return [{"fault": i, "kind": f["kind"], "why": not_applicable(f)} for i, f in enumerate(faults) if not_applicable(f)]


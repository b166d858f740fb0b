"""run.py — one campaign run, inside the clients' namespace: the cluster up,
traffic and the schedule's faults for the run's duration, a final heal, the
checks; writes result.json into the run's directory.

    python3 run.py SPEC.json      (campaign.py writes the spec and calls it)
"""
import calendar
import collections
import json
import os
import re
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
from felix import REPO, Felix  # noqa: E402
from inject import Injector  # noqa: E402
from natspeer import Nats, applicability  # noqa: E402


class Monitor(threading.Thread):
    """Polls the control plane: shard states (a change timeline on the run's
    clock) every 250 ms, and its events every second."""

    def __init__(self, felix, t0):
        super().__init__(daemon=True)
        self.f, self.t0, self.stop = felix, t0, threading.Event()
        self.timeline, self.last, self.events, self.event_ids, self.stuck = [], {}, [], set(), []
        self.wall0 = time.time() - (time.monotonic() - t0)

    def poll_shards(self):
        s = self.f.shards(timeout=1)
        now = time.monotonic() - self.t0
        for x in s or []:
            key = "%s/%d" % (x["stream"], x["shard"])
            v = (x["state"], x["generation"], x.get("leader"))
            if self.last.get(key) != v:
                self.last[key] = v
                self.timeline.append((round(now, 2), key) + v)
                if x["state"] == "NoCaughtUpReplica":  # listed with its cause
                    self.stuck.append((round(now, 2), key, x.get("detail", "")))

    def poll_events(self):
        for e in self.f.events():
            if e["event_id"] in self.event_ids:
                continue
            self.event_ids.add(e["event_id"])
            t = calendar.timegm(time.strptime(e["occurred_at"][:19], "%Y-%m-%dT%H:%M:%S")) - self.wall0
            self.events.append((round(t, 1), e["kind"], e.get("message", "")))

    def run(self):
        k = 0
        while not self.stop.is_set():
            self.poll_shards()
            if k % 4 == 0:
                self.poll_events()
            k += 1
            self.stop.wait(0.25)


def broken_invariants(run_dir):
    """Failed asserts and sanitizer reports in any process's log."""
    pat = open(os.path.join(REPO, "tests", "broken-invariants.ere")).read().split("\n")
    rx = re.compile("|".join("(?:%s)" % p for p in pat if p.strip()))
    hits = []
    for name in sorted(os.listdir(run_dir)):
        if name.endswith(".log"):
            for line in open(os.path.join(run_dir, name), errors="replace"):
                if rx.search(line):
                    hits.append("%s: %s" % (name, line.strip()[:300]))
    return hits


STALL = 'msg="no quorum: written records wait for a majority"'


def stalls(run_dir):
    """The leaders' no-quorum lines (a stall past a second): kept from every
    run, passing ones too, so a stall outside any fault can be studied."""
    out = []
    for name in sorted(os.listdir(run_dir)):
        if name.endswith(".log") and name[:1] == "b":
            out += ["%s: %s" % (name, line.strip()[:600]) for line in open(os.path.join(run_dir, name), errors="replace")
                    if STALL in line]
    return out


def settle(felix, brokers, lease_s, log):
    """After the final heal: every broker alive and every shard Active for
    two leases in a row (a fault's last effects come up to a lease after
    it: a shard still Active at the heal may fail over after it), or the
    shards that are not (with the control plane's detail)."""
    felix.wait("every broker alive", lambda: felix.alive() == len(brokers), 60)
    felix.wait("every shard Active for two leases", felix.all_active, 60, hold=2 * lease_s)
    stuck = []
    for x in felix.shards() or []:
        if x["state"] != "Active":
            stuck.append({"shard": "%s/%d" % (x["stream"], x["shard"]), "state": x["state"], "detail": x.get("detail", "")})
    log("settled: %s" % (", ".join("%s %s" % (x["shard"], x["state"]) for x in stuck) or "every shard Active"))
    return stuck


def abandon_if_agreed(felix, stuck, log):
    """For each shard left at NoCaughtUpReplica: when fewer than a majority
    of its copies are trusted (alive, not strangers), no fence can complete
    without an operator, and the checker agrees: it abandons as an operator
    would (a dry run, then the act with its expectations) and records the
    stated risk, to be compared with the loss it caused. Otherwise the shard
    stays stuck: a violation."""
    done = []
    for x in stuck:
        if x["state"] != "NoCaughtUpReplica":
            continue
        stream, n = x["shard"].split("/")
        d = felix.api.get("/v1/shards/%s/%s" % (stream, n)) or {}
        reps = d.get("replicas", [])
        trusted = [r["broker"] for r in reps if r.get("alive") and not r.get("stranger")]
        if len(trusted) >= len(reps) // 2 + 1:
            log("no abandon of %s: %d of %d copies are trusted (%s)" % (x["shard"], len(trusted), len(reps), trusted))
            continue
        path = "/v1/shards/%s/%s/abandon" % (stream, n)
        dry = felix.api.request("POST", path, {"dry_run": True}, timeout=10) or {}
        if "http_status" in dry or "chosen" not in dry:
            log("abandon of %s: dry run refused: %s" % (x["shard"], dry))
            continue
        act = felix.api.request("POST", path, {"expect_generation": dry["generation"], "expect_copy": dry["chosen"]["expect_copy"],
                                               "expect_digest": dry["digest"]}, timeout=10) or {}
        log("abandon of %s (trusted copies %s): stated risk %s of max HWM %s, chosen %s: %s" % (
            x["shard"], trusted, dry.get("records_at_risk"), dry.get("max_hwm"), dry["chosen"].get("broker"), act))
        if "http_status" not in act:
            done.append({"shard": x["shard"], "stated_risk": dry.get("records_at_risk"), "max_hwm": dry.get("max_hwm"),
                         "chosen": dry["chosen"].get("broker"), "trusted": trusted})
    return done


def read_deadline(n):
    """A read of n records may take 20 s plus 2 ms a record: a long run must
    not look unreadable (a NATS read by sequence took 0.8 ms a record before
    its reads went through an ordered consumer; the allowance stays)."""
    return time.monotonic() + 20 + 0.002 * n


def final_reads(felix, streams, counts):
    final = {}
    for s in streams:
        for k in range(s["shards"]):
            recs, _hwm = felix.read_all(s["name"], k, read_deadline(counts.get((s["name"], k), 0)))
            final[(s["name"], k)] = recs
    return final


def main(spec_path):
    spec = json.load(open(spec_path))
    os.environ.setdefault("NET_DELAYER", os.path.join(spec["build"], "tools", "delayer"))
    sch, run_dir = spec["schedule"], spec["run_dir"]
    logf = open(os.path.join(run_dir, "campaign.log"), "a")
    t_start = time.monotonic()

    def log(msg):
        logf.write("%7.1f %s\n" % (time.monotonic() - t_start, msg))
        logf.flush()

    peer = Nats if spec.get("peer") == "nats" else Felix
    felix = peer(run_dir, spec["net_id"], spec["net_dir"], spec["nodes"], sch["brokers"], spec["lease_ms"], spec["build"], log)
    result = {"seed": sch["seed"], "violations": [], "faults": sch["faults"], "peer": spec.get("peer", "felix")}
    if peer is Nats:
        result["not_applicable"] = applicability(sch["faults"])
    try:
        if not felix.up(sch["streams"]):
            result["violations"].append(("setup", "the cluster did not come up (campaign.log)"))
            return result
        play(felix, sch, spec, log, result)
    except Exception:  # a harness defect fails the run: it never passes unchecked (helper-15)
        result["violations"].append(("harness", "the run raised: %s" % traceback.format_exc().strip()[-1500:]))
    finally:
        felix.stop_all()
        result["violations"] += [("broken_invariant", h) for h in broken_invariants(run_dir)]
        result["stalls"] = stalls(run_dir)
        if "figures" in result:  # judged: the run reached its checks
            quiet = check.quiet_stalls(result["stalls"], result["t0_wall"], result["faults"], felix.lease_s, result["t_faults_end"])
            result["quiet_stalls"] = quiet
            result["figures"]["quiet_stalls"] = len(quiet)
        json.dump(result, open(os.path.join(run_dir, "result.json"), "w"), indent=1)
        log("done: %d violations" % len(result["violations"]))
    return result


def play(felix, sch, spec, log, result):
    t0 = time.monotonic()
    result["t0_wall"] = time.time()  # the brokers' log lines carry wall-clock times
    stop = threading.Event()
    mon = Monitor(felix, t0)
    mon.start()
    prods, cons = [], []
    for i, s in enumerate(sch["streams"]):
        for k in range(s["shards"]):
            prods.append(felix.producer(s["name"], k, s["acks"], sch["seed"] * 100 + i * 10 + k, t0, stop))
            cons.append(felix.consumer(s["name"], k, t0, stop))
    for x in prods + cons:
        x.start()
    inj = Injector(felix, sch, t0, log)
    inj.start()
    faults_end = max([f["end"] for f in sch["faults"]] + [0])
    while time.monotonic() - t0 < sch["duration"]:
        time.sleep(0.2)
    if not inj.done.wait(max(0.1, faults_end - (time.monotonic() - t0) + 60)):
        result["violations"].append(("harness", "the schedule did not finish a minute after its last fault's end"))
    t_end = time.monotonic() - t0
    result["t_faults_end"] = t_end
    stop.set()
    for p in prods:
        p.join(30)
    log("final heal at %.1f s" % (time.monotonic() - t0))
    inj.final_heal()
    result["violations"] += [("harness", e) for e in inj.errors]
    result["stuck"] = settle(felix, sch["brokers"], felix.lease_s, log)
    result["abandons"] = abandon_if_agreed(felix, result["stuck"], log) if isinstance(felix, Felix) else []
    if result["abandons"]:
        result["stuck"] = settle(felix, sch["brokers"], felix.lease_s, log)
    hwms = {(x["stream"], x["shard"]): x["hwm"] for x in felix.shards() or []}
    acked = check.acked_records(prods)
    for c in cons:
        c.join(10)
        c.read_to(hwms.get((c.stream, c.shard), 0), read_deadline(hwms.get((c.stream, c.shard), 0) - c.next))
    final = final_reads(felix, sch["streams"], {k: len(v) for k, v in acked.items()})
    mon.poll_shards()
    mon.poll_events()
    mon.stop.set()
    judge(sch, felix, prods, acked, cons, mon, final, t_end, result)


def judge(sch, felix, prods, acked, cons, mon, final, t_end, result):
    v = result["violations"]
    fig = {"acked_quorum": 0, "acked_leader": 0, "lost_quorum": 0, "lost_leader": 0, "false_failovers": 0}
    acks_of = {s["name"]: felix.acks(s["acks"]) for s in sch["streams"]}
    lease_s = felix.lease_s
    applied = [f for f in sch["faults"] if felix.applies(f)]  # PEER=nats: what it could be given
    abandoned = {a["shard"]: a for a in result.get("abandons", [])}
    check.check_acked(acked, final, acks_of, check.fault_windows(applied, lease_s), v, fig, abandoned)
    check.check_unique({k: r for k, r in final.items() if r is not None}, v)
    check.check_consumers(cons, final, v, abandoned)
    # the harness itself: a run whose traffic never flowed proves nothing
    for p in prods:
        if not any(e[2] == "ok" for e in p.log):
            v.append(("harness", "%s/%d: no publish was acknowledged in the whole run" % (p.stream, p.shard)))
    for c in cons:
        if not c.seen:
            v.append(("harness", "%s/%d: the consumer was served no record in the whole run" % (c.stream, c.shard)))
    for s in result.get("stuck", []):
        v.append(("stuck", "%s is %s after the final heal: %s" % (s["shard"], s["state"], s["detail"])))
    check.check_false_failovers(mon.timeline, mon.events, applied, lease_s, t_end, v, fig)
    shards = ["%s/%d" % (s["name"], k) for s in sch["streams"] for k in range(s["shards"])]
    result["availability"] = check.availability(mon.timeline, sch["faults"], shards)
    result["outages"] = check.outages(mon.timeline, sch["faults"], shards, lease_s)
    result["producer_availability"] = check.producer_availability(prods, sch["faults"])
    result["figures"] = fig
    result["throughput"] = throughput(prods, t_end)
    result["timeline"] = mon.timeline
    result["no_caught_up_replica"] = mon.stuck
    result["events"] = mon.events
    result["publishes"] = {"%s/%d" % (p.stream, p.shard): dict(collections.Counter(e[2] for e in p.log)) for p in prods}


def throughput(prods, t_end):
    """Acknowledged records per second of the run."""
    per = [0] * (int(t_end) + 1)
    for p in prods:
        for _ts, td, outcome, _f, recs, _l in p.log:
            if outcome == "ok" and int(td) < len(per):
                per[int(td)] += len(recs)
    return per


if __name__ == "__main__":
    r = main(sys.argv[1])
    sys.exit(1 if r["violations"] else 0)

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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
from felix import REPO, Felix  # noqa: E402
from inject import Injector  # noqa: E402
from traffic import Consumer, Producer, read_all  # noqa: E402


class Monitor(threading.Thread):
    """Polls the control plane: shard states (a change timeline on the run's
    clock) every 250 ms, and its events every second."""

    def __init__(self, felix, t0):
        super().__init__(daemon=True)
        self.f, self.t0, self.stop = felix, t0, threading.Event()
        self.timeline, self.last, self.events, self.event_ids = [], {}, [], set()
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

    def poll_events(self):
        for e in self.f.api.get("/v1/events?limit=200", timeout=1) or []:
            if e["id"] in self.event_ids:
                continue
            self.event_ids.add(e["id"])
            t = calendar.timegm(time.strptime(e["ts"], "%Y-%m-%dT%H:%M:%SZ")) - self.wall0
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


def settle(felix, brokers, log):
    """After the final heal: every broker alive and every shard Active, or
    the shards that are not (with the control plane's detail)."""
    felix.wait("every broker alive", lambda: felix.alive() == len(brokers), 60)
    felix.wait("every shard Active", felix.all_active, 60)
    stuck = []
    for x in felix.shards() or []:
        if x["state"] != "Active":
            stuck.append({"shard": "%s/%d" % (x["stream"], x["shard"]), "state": x["state"], "detail": x.get("detail", "")})
    return stuck


def final_reads(felix, streams):
    final = {}
    for s in streams:
        for k in range(s["shards"]):
            recs, _hwm = read_all(felix.api, s["name"], k, time.monotonic() + 20)
            final[(s["name"], k)] = recs
    return final


def main(spec_path):
    spec = json.load(open(spec_path))
    sch, run_dir = spec["schedule"], spec["run_dir"]
    logf = open(os.path.join(run_dir, "campaign.log"), "a")
    t_start = time.monotonic()

    def log(msg):
        logf.write("%7.1f %s\n" % (time.monotonic() - t_start, msg))
        logf.flush()

    felix = Felix(run_dir, spec["net_id"], spec["net_dir"], spec["nodes"], sch["brokers"], spec["lease_ms"], spec["build"], log)
    result = {"seed": sch["seed"], "violations": [], "faults": sch["faults"]}
    try:
        if not felix.up(sch["streams"]):
            result["violations"].append(("setup", "the cluster did not come up (campaign.log)"))
            return result
        play(felix, sch, spec, log, result)
    finally:
        felix.stop_all()
        result["violations"] += [("broken_invariant", h) for h in broken_invariants(run_dir)]
        json.dump(result, open(os.path.join(run_dir, "result.json"), "w"), indent=1)
        log("done: %d violations" % len(result["violations"]))
    return result


def play(felix, sch, spec, log, result):
    t0 = time.monotonic()
    stop = threading.Event()
    mon = Monitor(felix, t0)
    mon.start()
    prods, cons = [], []
    for i, s in enumerate(sch["streams"]):
        for k in range(s["shards"]):
            prods.append(Producer(felix.api, s["name"], k, s["acks"], sch["seed"] * 100 + i * 10 + k, t0, stop))
            cons.append(Consumer(felix.api, s["name"], k, t0, stop))
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
    stop.set()
    for p in prods:
        p.join(30)
    log("final heal at %.1f s" % (time.monotonic() - t0))
    inj.final_heal()
    result["violations"] += [("harness", e) for e in inj.errors]
    result["stuck"] = settle(felix, sch["brokers"], log)
    hwms = {(x["stream"], x["shard"]): x["hwm"] for x in felix.shards() or []}
    for c in cons:
        c.join(10)
        c.read_to(hwms.get((c.stream, c.shard), 0), time.monotonic() + 20)
    final = final_reads(felix, sch["streams"])
    mon.poll_shards()
    mon.poll_events()
    mon.stop.set()
    judge(sch, spec, prods, cons, mon, final, t_end, result)


def judge(sch, spec, prods, cons, mon, final, t_end, result):
    v = result["violations"]
    fig = {"acked_quorum": 0, "acked_leader": 0, "lost_quorum": 0, "lost_leader": 0, "false_failovers": 0}
    acks_of = {s["name"]: s["acks"] for s in sch["streams"]}
    acked = check.acked_records(prods)
    lease_s = spec["lease_ms"] / 1000.0
    check.check_acked(acked, final, acks_of, check.fault_windows(sch["faults"], lease_s), v, fig)
    check.check_unique({k: r for k, r in final.items() if r is not None}, v)
    check.check_consumers(cons, final, v)
    # the harness itself: a run whose traffic never flowed proves nothing
    for p in prods:
        if not any(e[2] == "ok" for e in p.log):
            v.append(("harness", "%s/%d: no publish was acknowledged in the whole run" % (p.stream, p.shard)))
    for c in cons:
        if not c.seen:
            v.append(("harness", "%s/%d: the consumer was served no record in the whole run" % (c.stream, c.shard)))
    for s in result.get("stuck", []):
        v.append(("stuck", "%s is %s after the final heal: %s" % (s["shard"], s["state"], s["detail"])))
    check.check_false_failovers(mon.timeline, mon.events, sch["faults"], lease_s, t_end, v, fig)
    shards = ["%s/%d" % (s["name"], k) for s in sch["streams"] for k in range(s["shards"])]
    result["availability"] = check.availability(mon.timeline, sch["faults"], shards)
    result["figures"] = fig
    result["throughput"] = throughput(prods, t_end)
    result["timeline"] = mon.timeline
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

#!/usr/bin/env python3
"""campaign.py — the fault campaign (docs/campaign.md): N seeded runs, each a
cluster in network namespaces under a random fault schedule, checked
against what was promised. `make campaign` calls it.

    campaign.py [--runs N] [--seed S] [--duration SECONDS] [--faults K,K...]
                [--out DIR] [--keep] [--lease-ms MS] [--tally FILE] [--print-schedule]
                [--stop-on-failure] [--harsh] [--peer felix|nats] [--build DIR]

Run i uses seed S+i; the schedule depends on (seed, duration, faults) alone,
so `--runs 1 --seed S+i` with the same duration and faults replays it.
`--peer nats` plays the same schedules against NATS JetStream (natspeer.py).
Exit 0: every run passed every check; 1: a violation (the first one of each
failed run is printed, with its seed, schedule and replay command; its
directory is kept); 2: bad arguments.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report  # noqa: E402
import schedule  # noqa: E402
from felix import REPO, sh_net  # noqa: E402


def parse(argv):
    ap = argparse.ArgumentParser(prog="campaign.py", description="seeded fault campaign over a Felix cluster in network namespaces")
    ap.add_argument("--runs", type=int, default=20, help="number of runs (default 20)")
    ap.add_argument("--seed", type=int, default=None, help="first run's seed (default: from the clock, printed)")
    ap.add_argument("--duration", type=float, default=24, help="seconds of traffic and faults per run (default 24)")
    ap.add_argument("--faults", default=",".join(schedule.DEFAULT_KINDS), help="fault kinds to draw from, comma-separated (default: all)")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "campaign"), help="where runs and the report go (default build/campaign)")
    ap.add_argument("--keep", action="store_true", help="keep every run's directory, not only failed ones")
    ap.add_argument("--lease-ms", type=int, default=2000, help="the control plane's lease (default 2000)")
    ap.add_argument("--build", default=os.environ.get("FELIX_BUILD", os.path.join(REPO, "build")), help="build directory (default FELIX_BUILD or build)")
    ap.add_argument("--tally", default=None, help="append one line per campaign to this file")
    ap.add_argument("--print-schedule", action="store_true", help="print the schedules and exit (no cluster)")
    ap.add_argument("--stop-on-failure", action="store_true", help="stop after the first failed run")
    ap.add_argument("--harsh", action="store_true", help="let two faults that take a copy's identity overlap (shards may then need the checker's abandon)")
    ap.add_argument("--peer", choices=["felix", "nats"], default="felix", help="the system under test (default felix; nats: NATS JetStream, the same schedules)")
    a = ap.parse_args(argv)
    kinds = [k for k in a.faults.split(",") if k]
    bad = [k for k in kinds if k not in schedule.KINDS]
    if bad or not kinds:
        ap.error("--faults: unknown kind %r (kinds: %s)" % (",".join(bad) or a.faults, ", ".join(schedule.DEFAULT_KINDS)))
    if a.runs < 1 or a.runs > 10000:
        ap.error("--runs: %d is not between 1 and 10000" % a.runs)
    if a.duration < 5 or a.duration > 3600:
        ap.error("--duration: %g is not between 5 and 3600 seconds" % a.duration)
    a.kinds = kinds
    if a.seed is None:
        a.seed = int(time.time()) % 1000000
    return a


def replay_command(a, seed):
    cmd = "make campaign RUNS=1 SEED=%d DURATION=%g FAULTS=%s" % (seed, a.duration, ",".join(a.kinds))
    return cmd + (" HARSH=1" if a.harsh else "") + (" PEER=nats" if a.peer == "nats" else "")


def one_run(a, i, seed):
    sch = schedule.generate(seed, a.duration, a.kinds, harsh=a.harsh)
    print(schedule.text(sch), flush=True)
    run_dir = os.path.join(a.out, "run-%d" % seed)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    net_id = "k%x" % ((os.getpid() * 131 + i) % 0xfffff)
    nodes = ["cp", "cl"] + sch["brokers"]
    started = time.monotonic()
    try:
        if sh_net(net_id, "net_up", *nodes, net_dir=run_dir) != 0:
            return sch, run_dir, {"violations": [["harness", "net_up failed"]], "net_id": net_id}, 0
        addrs = dict(line.split() for line in open(os.path.join(run_dir, "fx%s.nodes" % net_id)))
        spec = {"schedule": sch, "run_dir": run_dir, "net_id": net_id, "net_dir": run_dir, "nodes": addrs,
                "lease_ms": a.lease_ms, "build": os.path.abspath(a.build), "peer": a.peer}
        json.dump(spec, open(os.path.join(run_dir, "spec.json"), "w"), indent=1)
        limit = a.duration + 300
        try:
            subprocess.run(["ip", "netns", "exec", "fx%s-cl" % net_id, sys.executable, os.path.join(HERE, "run.py"),
                            os.path.join(run_dir, "spec.json")], timeout=limit)
        except subprocess.TimeoutExpired:
            return sch, run_dir, {"violations": [["harness", "the run took over %d s" % limit]], "net_id": net_id}, time.monotonic() - started
        try:
            res = json.load(open(os.path.join(run_dir, "result.json")))
        except (OSError, ValueError) as e:
            res = {"violations": [["harness", "no result.json: %s" % e]]}
    finally:
        sh_net(net_id, "net_down", net_dir=run_dir)
    res["net_id"] = net_id
    return sch, run_dir, res, time.monotonic() - started


def keep_stalls(out, seed, res):
    """Every leader stall of the campaign, with the run's campaign.log times,
    in OUT/stalls.log (a passing run's directory is removed)."""
    if res.get("stalls"):
        with open(os.path.join(out, "stalls.log"), "a") as f:
            f.write("seed %d, started %s UTC:\n%s\n" % (seed, time.strftime("%H:%M:%S", time.gmtime(res.get("t0_wall", 0))),
                                                     schedule.text(res["schedule"])))
            f.write("".join("  %s\n" % line for line in res["stalls"]))


def main(argv):
    a = parse(argv)
    if a.print_schedule:
        for i in range(a.runs):
            print(schedule.text(schedule.generate(a.seed + i, a.duration, a.kinds, harsh=a.harsh)))
        return 0
    if os.geteuid() != 0:
        print("campaign.py: network namespaces need root", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    os.makedirs(a.out, exist_ok=True)
    if a.peer == "nats" and not (shutil.which("nats-server") and os.path.exists(os.path.join(a.build, "tools", "nats-client"))):
        print("campaign.py: --peer nats needs nats-server and %s/tools/nats-client (make campaign PEER=nats installs and builds them)"
              % a.build, file=sys.stderr)
        return 2
    print("campaign: %s, %d runs from seed %d, %g s each, faults %s" % (a.peer, a.runs, a.seed, a.duration, ",".join(a.kinds)), flush=True)
    runs = []
    for i in range(a.runs):
        seed = a.seed + i
        sch, run_dir, res, took = one_run(a, i, seed)
        res["schedule"], res["took"] = sch, took
        net = "network fx%s" % res.get("net_id", "?")
        runs.append(res)
        keep_stalls(a.out, seed, res)
        v = res.get("violations", [])
        fig = res.get("figures", {})
        if v:
            print("run %d/%d seed %d: FAILED (%d violations, %.0f s, %s); first: %s: %s\n  replay: %s\n  kept: %s"
                  % (i + 1, a.runs, seed, len(v), took, net, v[0][0], v[0][1], replay_command(a, seed), run_dir), flush=True)
            if a.stop_on_failure:
                break
        else:
            print("run %d/%d seed %d: ok (%.0f s, %s): %d quorum and %d leader records acknowledged, %d leader-acked lost, %d leader stalls with no fault"
                  % (i + 1, a.runs, seed, took, net, fig.get("acked_quorum", 0), fig.get("acked_leader", 0), fig.get("lost_leader", 0),
                     fig.get("quiet_stalls", 0)), flush=True)
            if not a.keep:
                shutil.rmtree(run_dir, ignore_errors=True)
    text = report.write(runs, a, os.path.join(a.out, "campaign-report.md"))
    print(text)
    if a.tally:
        report.tally(runs, a, a.tally)
    return 1 if any(r.get("violations") for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

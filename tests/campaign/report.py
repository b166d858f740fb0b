"""report.py — the campaign's table, campaign-report.md, a plot of
availability and throughput over time with the faults marked (gnuplot),
and the tally line."""
import collections
import datetime
import os
import shutil
import subprocess

import check


def figures(runs):
    tot = collections.Counter()
    kinds = collections.Counter()
    avail = collections.defaultdict(list)
    never = collections.Counter()
    pavail, pnever = collections.defaultdict(list), collections.Counter()
    outage = collections.defaultdict(list)
    for r in runs:
        for k, v in r.get("figures", {}).items():
            tot[k] += v
        skip = {x["fault"] for x in r.get("not_applicable", [])}  # PEER=nats: faults it cannot be given
        for i, f in enumerate(r["schedule"]["faults"]):
            if i in skip:
                tot["not_applicable"] += 1
                continue
            kinds[f["kind"]] += 1
        for i, (kind, secs) in enumerate(r.get("outages", [])):
            if i not in skip:
                outage[kind].append(secs)
        for i, (kind, secs) in enumerate(r.get("producer_availability", [])):
            if i not in skip:
                (pavail[kind].append(secs) if secs is not None else pnever.update([kind]))
        for i, (kind, secs) in enumerate(r.get("availability", [])):
            if i in skip:
                continue
            if secs is None:
                never[kind] += 1
            else:
                avail[kind].append(secs)
    return tot, kinds, avail, never, pavail, pnever, outage


def fmt(x):
    return "-" if x is None else "%.1f" % x


def table(runs, a, peer="felix"):
    tot, kinds, avail, never, pavail, pnever, outage = figures(runs)
    failed = [r for r in runs if r.get("violations")]
    lines = [
        "| peer | runs | failed | faults | acknowledged (quorum / leader) | lost (quorum / leader) | unreadable | false failovers (fault-free s checked) | leader stalls with no fault | abandons: stated risk / acknowledged lost |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| %s | %d | %d | %d | %d / %d | %d / %d | %d | %d (%d s) | %d | %d: %d / %d |" % (
            peer, len(runs), len(failed), sum(kinds.values()), tot["acked_quorum"], tot["acked_leader"],
            tot["lost_quorum"], tot["lost_leader"], tot["unreadable"], tot["false_failovers"], tot["fault_free_s"],
            tot["quiet_stalls"],
            sum(len(r.get("abandons", [])) for r in runs), tot["abandoned_risk"], tot["abandoned_lost"]),
        "",
        "Availability, seconds: from a fault's end until every shard is `Active`; the longest stretch with a shard",
        "not `Active` from its start to two leases and a second after its end; and as the producers saw it, from",
        "the first publish sent after the end to the first acknowledged one (the slowest shard).",
        "",
        "| fault | count | to Active p50 | p99 | max | not Active by the run's end | longest outage p50 | p99 | max | producers p50 | p99 | max | not acknowledged again by the run's end |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in sorted(kinds):
        xs, ps, os_ = avail.get(kind, []), pavail.get(kind, []), outage.get(kind, [])
        lines.append("| %s | %d | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %d |" % (
            kind, kinds[kind], fmt(check.percentile(xs, 50)), fmt(check.percentile(xs, 99)),
            fmt(max(xs) if xs else None), never[kind], fmt(check.percentile(os_, 50)), fmt(check.percentile(os_, 99)),
            fmt(max(os_) if os_ else None), fmt(check.percentile(ps, 50)), fmt(check.percentile(ps, 99)),
            fmt(max(ps) if ps else None), pnever[kind]))
    return "\n".join(lines)


def write(runs, a, path):
    seeds = [r["seed"] if "seed" in r else r["schedule"]["seed"] for r in runs]
    head = "# Campaign report: %s\n\n%s; %d runs, seeds %d..%d, %g s each, faults %s\n\n" % (
        getattr(a, "peer", "felix"), datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), len(runs), min(seeds), max(seeds),
        a.duration, ",".join(a.kinds))
    body = table(runs, a, getattr(a, "peer", "felix"))
    na = collections.Counter((x["kind"], x["why"]) for r in runs for x in r.get("not_applicable", []))
    if na:
        body += "\n\nNot applied to %s (%d of the schedules' faults, counted nowhere above):\n\n" % (getattr(a, "peer", "felix"), sum(na.values()))
        body += "\n".join("- %s × %d: %s" % (k, n, why) for (k, why), n in sorted(na.items()))
    fails = []
    for r in runs:
        for kind, text in r.get("violations", [])[:5]:
            fails.append("- seed %d: **%s** %s" % (r["schedule"]["seed"], kind, text))
    ncr = ["- seed %d, %.1f s: %s: %s" % (r["schedule"]["seed"], t, shard, detail)
           for r in runs for t, shard, detail in r.get("no_caught_up_replica", [])]
    quiet = ["- seed %d, began at %.1f s: %s" % (r["schedule"]["seed"], t, line)
             for r in runs for t, line in r.get("quiet_stalls", [])]
    plot = plot_runs(runs, os.path.join(os.path.dirname(path), "campaign-plot.png"))
    with open(path, "w") as out:
        out.write(head + body + "\n\n")
        out.write("## Violations\n\n" + ("\n".join(fails) if fails else "None.") + "\n\n")
        out.write("## Every NoCaughtUpReplica, with the control plane's cause\n\n" + ("\n".join(ncr) if ncr else "None.") + "\n\n")
        out.write("## Leader stalls in a stretch with no fault\n\n" + ("\n".join(quiet) if quiet else "None.") + "\n\n")
        out.write("## Plot\n\n" + plot + "\n")
    return body


def plot_runs(runs, png):
    """One panel per run (up to 6): acknowledged records per second, shards
    Active, faults as shaded spans."""
    if not shutil.which("gnuplot"):
        return "No plot: gnuplot is not installed (`make deps` installs gnuplot-nox)."
    d = os.path.dirname(png)
    shown = runs[:6]
    script = ["set terminal png size 1000,%d" % (220 * len(shown)), "set output '%s'" % png,
              "set multiplot layout %d,1" % len(shown), "set key off", "set y2tics", "set ytics nomirror", "set y2range [0:5]", "set yrange [0:*]"]
    for n, r in enumerate(shown):
        tp = os.path.join(d, "plot-%d.tp" % n)
        with open(tp, "w") as f:
            for t, v in enumerate(r.get("throughput", [])):
                f.write("%d %d\n" % (t, v))
        act = os.path.join(d, "plot-%d.act" % n)
        with open(act, "w") as f:
            state = {}
            for t, shard, st, _g, _l in r.get("timeline", []):
                state[shard] = st
                f.write("%s %d\n" % (t, sum(1 for s in state.values() if s == "Active")))
        script.append("unset object")
        for k, flt in enumerate(r["schedule"]["faults"]):
            script.append("set object %d rect from %s, graph 0 to %s, graph 1 fc rgb '#ffcccc' fs solid 0.5 noborder behind" % (
                k + 1, flt.get("actual_start", flt["start"]), flt.get("actual_end", flt["end"])))
        script.append("set title 'seed %d: records/s (line), shards Active (steps, right axis); faults shaded'" % r["schedule"]["seed"])
        script.append("plot '%s' using 1:2 with lines, '%s' using 1:2 axes x1y2 with steps" % (tp, act))
    script.append("unset multiplot")
    p = subprocess.run(["gnuplot"], input="\n".join(script), text=True, capture_output=True)
    if p.returncode != 0:
        return "No plot: gnuplot failed: %s" % p.stderr.strip()[:300]
    return "![availability and throughput](%s)" % os.path.basename(png)


def tally(runs, a, path):
    tot, kinds = figures(runs)[:2]
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    seeds = [r["schedule"]["seed"] for r in runs]
    with open(path, "a") as f:
        f.write("%s\t%s\t%d\t%d..%d\t%d\t%d\t%d\t%d\t%d\t%s\n" % (
            datetime.datetime.utcnow().strftime("%Y-%m-%d"), commit, len(runs), min(seeds), max(seeds),
            sum(1 for r in runs if r.get("violations")), tot["acked_quorum"], tot["lost_quorum"],
            tot["false_failovers"], sum(kinds.values()), ",".join("%s:%d" % kv for kv in sorted(kinds.items()))))

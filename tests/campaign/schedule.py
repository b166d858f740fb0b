"""schedule.py — a run's topology and fault schedule, from its seed alone.

The same (seed, duration, kinds) always gives the same schedule: Python's
random.Random with an integer seed is stable across versions, and nothing
else is read. A schedule names its targets by role where the role is what
matters ("the leader of q3/0"); the run resolves a role when the fault
starts and logs what it resolved to.
"""
import random

# kind: (what a person reads, shortest and longest duration in seconds,
# weight). Partitions that leave a leader reachable by its clients but not
# by its followers weigh most: they are where acknowledgements are lost
# (Jepsen's nemeses are mostly partitions for the same reason).
KINDS = {
    "kill": ("kill -9 {t}; restarted at the end", 1, 6, 3),
    "powercut": ("power cut of {t}'s machine (seeded cut {p}); boots again at the end", 1, 5, 3),
    "pause": ("SIGSTOP {t}; SIGCONT at the end", 1, 6, 3),
    "isolate": ("{t} cut off from every other node", 2, 7, 2),
    "leader-isolate": ("{t} cut off from the other brokers (it still reaches the control plane and clients)", 3, 7, 4),
    "oneway": ("{t} stops hearing {p} (one-way partition)", 2, 6, 2),
    "partial": ("{t} and {p} lose each other (both reach the rest)", 2, 6, 2),
    "loss": ("{t} drops {p} % of what it receives", 2, 6, 1),
    "rate": ("{t} sends at most {p}", 2, 6, 1),
    "delay": ("{t} receives every packet {p}", 2, 7, 2),
    "slowdisk": ("{t}'s syncs hang until the end", 1, 5, 1),
    "syncerr": ("{t}'s syncs fail with EIO (it fails closed); restarted at the end", 1, 4, 1),
    "fulldisk": ("{t}'s disk is full (ENOSPC); restarted at the end if it stopped", 1, 4, 1),
    "wipe": ("kill -9 {t} and delete its data directory; starts empty at the end", 1, 4, 2),
    "cpkill": ("kill -9 the control plane; restarted at the end", 1, 5, 1),
    "cppause": ("SIGSTOP the control plane; SIGCONT at the end", 1, 5, 1),
    "cpcut": ("the control plane cut off from every broker", 1, 5, 1),
    "drain": ("SIGTERM {t} (a drain); started again at the end", 1, 4, 1),
}
# faults that can take a copy's identity (a new storage id: a power cut, a
# wiped directory, a broker that failed closed on a disk error): never two at
# once, or two copies of a shard may be strangers with no Active leader left
# to measure them, which waits for an operator's abandon (the checker does
# one when it agrees no trustworthy majority is left: run.py)
IDENTITY = {"powercut", "wipe", "syncerr", "fulldisk"}
CP_KINDS = {"cpkill", "cppause", "cpcut"}
DEFAULT_KINDS = sorted(KINDS)
# what make check samples: kill, power cut, pause and a partition
CI_KINDS = ["kill", "powercut", "pause", "leader-isolate", "isolate"]


def topology(rng):
    """The run's brokers and streams: 3 or 5 brokers; R=3 quorum and leader
    streams, and with 5 brokers an R=5 quorum stream."""
    brokers = rng.choice([3, 5])
    streams = [
        {"name": "q3", "shards": 2, "replicas": 3, "acks": "quorum"},
        {"name": "l3", "shards": 1, "replicas": 3, "acks": "leader"},
    ]
    if brokers == 5:
        streams.append({"name": "q5", "shards": 1, "replicas": 5, "acks": "quorum"})
    return ["b%d" % i for i in range(1, brokers + 1)], streams


def shard_names(streams):
    return ["%s/%d" % (s["name"], k) for s in streams for k in range(s["shards"])]


def pick_target(rng, kind, brokers, shards):
    """The fault's target and parameter, a role where the role matters."""
    b = rng.choice(brokers)
    if kind in ("leader-isolate",):
        return "leader:" + rng.choice(shards), None
    if kind in ("kill", "pause", "powercut", "isolate", "drain", "wipe", "slowdisk", "syncerr", "fulldisk"):
        # half the time the leader of a shard, the rest a broker by name
        t = "leader:" + rng.choice(shards) if rng.random() < 0.5 else b
        return t, (rng.randrange(1, 1 << 30) if kind == "powercut" else None)
    if kind in ("oneway", "partial"):
        other = rng.choice([x for x in brokers + ["cp"] if x != b] if kind == "oneway" else [x for x in brokers if x != b])
        return b, other
    if kind == "loss":
        return b, rng.choice([20, 40, 60])
    if kind == "rate":
        return b, rng.choice(["256kbit", "1mbit"])
    if kind == "delay":  # [ms, ± jitter ms, % reordered ahead, the delayer's seed]
        t = "leader:" + rng.choice(shards) if rng.random() < 0.5 else b
        return t, list(rng.choice([(20, 5, 0), (100, 20, 0), (200, 50, 10), (400, 100, 25)])) + [rng.randrange(1, 1 << 30)]
    return "cp", None


def pick_kind(rng, kinds):
    return rng.choices(kinds, [KINDS[k][3] for k in kinds])[0]


def generate(seed, duration, kinds, warmup=4.0, heal=(6.0, 10.0), harsh=False):
    """A list of faults {start, end, kind, target, param} over [0, duration):
    one fault at a time, sometimes a second one overlapping it, each followed
    by a clean healing period (so stretches with no fault exist, where a
    failover would be a false one)."""
    rng = random.Random(seed)
    brokers, streams = topology(rng)
    shards = shard_names(streams)
    faults, t = [], warmup
    while t < duration - 2:
        kind = pick_kind(rng, kinds)
        lo, hi = KINDS[kind][1:3]
        d = round(rng.uniform(lo, hi), 1)
        target, param = pick_target(rng, kind, brokers, shards)
        faults.append({"start": round(t, 1), "end": round(t + d, 1), "kind": kind, "target": target, "param": param})
        second = [k for k in kinds if (harsh or not (k in IDENTITY and kind in IDENTITY)) and not (k in CP_KINDS and kind in CP_KINDS)]
        if rng.random() < 0.25 and second:  # a second fault overlapping the first
            k2 = pick_kind(rng, second)
            lo2, hi2 = KINDS[k2][1:3]
            s2 = round(t + rng.uniform(0, d), 1)
            t2, p2 = pick_target(rng, k2, brokers, shards)
            faults.append({"start": s2, "end": round(s2 + rng.uniform(lo2, hi2), 1), "kind": k2, "target": t2, "param": p2})
        t = max(f["end"] for f in faults) + rng.uniform(*heal)
    return {"seed": seed, "duration": duration, "brokers": brokers, "streams": streams, "faults": faults, "harsh": harsh}


def param_text(f):
    p = f["param"]
    if f["kind"] == "delay":
        return "%d ms ± %d ms late, %d %% of them at once (reordered ahead)" % tuple(p[:3])
    return p


def describe(f):
    text = KINDS[f["kind"]][0].format(t=target_text(f["target"]), p=param_text(f))
    return "%6.1f s – %6.1f s  %-14s %s" % (f["start"], f["end"], f["kind"], text)


def target_text(t):
    return "the leader of " + t[7:] if t.startswith("leader:") else ("the control plane" if t == "cp" else t)


def text(s):
    lines = ["seed %d%s: %d brokers; streams %s; %d s" % (
        s["seed"], " (harsh)" if s.get("harsh") else "", len(s["brokers"]),
        ", ".join("%s (%d shards, R=%d, acks=%s)" % (x["name"], x["shards"], x["replicas"], x["acks"]) for x in s["streams"]),
        s["duration"])]
    lines += ["  " + describe(f) for f in s["faults"]] or ["  (no fault)"]
    return "\n".join(lines)

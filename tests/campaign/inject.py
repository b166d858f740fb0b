"""inject.py — plays a schedule's faults on a Felix cluster, on time, and
heals each at its end. A process is started again only when the last fault
that keeps it down ends; a pause is lifted when the last pause ends."""
import signal
import threading
import time

DOWN_KINDS = {"kill", "powercut", "wipe", "syncerr", "fulldisk", "drain", "cpkill"}


class Injector(threading.Thread):
    def __init__(self, felix, schedule, t0, log):
        super().__init__(daemon=True)
        self.f, self.faults, self.t0, self.log = felix, schedule["faults"], t0, log
        self.brokers = schedule["brokers"]
        self.down, self.paused, self.delayed = {}, {}, {}  # process -> count of faults holding it
        self.resolved = {}  # fault index -> the process it hit
        self.done = threading.Event()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.errors = []

    def at(self, t):
        while not self.stop.is_set():
            left = self.t0 + t - time.monotonic()
            if left <= 0:
                return True
            self.stop.wait(min(left, 0.5))
        return False

    def run(self):
        events = sorted([(f["start"], 0, i) for i, f in enumerate(self.faults)] +
                        [(f["end"], 1, i) for i, f in enumerate(self.faults)])
        for t, is_end, i in events:
            if not self.at(t):
                break
            with self.lock:
                try:
                    (self.heal if is_end else self.inject)(i)
                except Exception as e:  # a harness defect: reported, the run goes on
                    self.errors.append("fault %d %s: %r" % (i, "heal" if is_end else "inject", e))
                    self.log(self.errors[-1])
        self.done.set()

    def resolve(self, target):
        if target.startswith("leader:"):
            return self.f.leader_of(target[7:]) or self.brokers[0]
        return target

    def inject(self, i):
        f = self.faults[i]
        k, p = f["kind"], f["param"]
        if not self.f.applies(f):  # PEER=nats: listed in the report, neither done nor healed
            self.log("fault %d not applied: %s" % (i, k))
            return
        who = self.resolve(f["target"])
        self.resolved[i] = who
        f["actual_start"] = round(time.monotonic() - self.t0, 2)
        self.log("fault %d starts: %s on %s" % (i, k, who))
        self.tag = "f%d" % i  # the fault's network rules carry its tag
        getattr(self, "do_" + k.replace("-", "_"))(who, p)

    def heal(self, i):
        f = self.faults[i]
        who = self.resolved.get(i)
        if who is None:
            return
        k = f["kind"]
        self.log("fault %d ends: %s on %s" % (i, k, who))
        if k in ("isolate", "leader-isolate", "oneway", "partial", "cpcut", "loss"):
            self.f.net("net_untag", "f%d" % i)
        elif k == "rate":
            self.f.net("net_exec", who, "tc", "qdisc", "del", "dev", "eth0", "root")
        elif k == "slowdisk":
            self.f.switch("slow." + who, False)
        elif k == "delay":
            self.delayed[who] -= 1
            if self.delayed[who] == 0:
                self.f.net("net_undelay", who)
        elif k in ("pause", "cppause"):
            self.paused[who] -= 1
            if self.paused[who] == 0:
                self.f.signal(who, signal.SIGCONT)
        if k in ("syncerr", "fulldisk"):
            self.f.switch(("syncerr." if k == "syncerr" else "full.") + who, False)
        if k in DOWN_KINDS:
            self.down[who] -= 1
            if k == "drain" and self.f.running(who):
                self.f.wait("the drain of " + who, lambda: not self.f.running(who), 30)
            if self.down[who] == 0 and not self.f.running(who):
                self.f.start(who)
        f["actual_end"] = round(time.monotonic() - self.t0, 2)

    def hold_down(self, who):
        self.down[who] = self.down.get(who, 0) + 1

    def do_kill(self, who, _p):
        self.hold_down(who)
        self.f.kill(who)

    do_cpkill = do_kill

    def do_powercut(self, who, seed):
        self.hold_down(who)
        if not self.f.power_cut(who, seed):
            self.log("power cut of %s FAILED (powercut.log)" % who)
            self.f.cut_failed = True

    def do_wipe(self, who, _p):
        self.hold_down(who)
        self.f.wipe(who)

    def do_pause(self, who, _p):
        self.paused[who] = self.paused.get(who, 0) + 1
        self.f.signal(who, signal.SIGSTOP)

    do_cppause = do_pause

    def do_drain(self, who, _p):
        self.hold_down(who)
        self.f.signal(who, signal.SIGTERM)

    def do_syncerr(self, who, _p):
        self.hold_down(who)
        self.f.switch("syncerr." + who, True)

    def do_fulldisk(self, who, _p):
        self.hold_down(who)
        self.f.switch("full." + who, True)

    def do_slowdisk(self, who, _p):
        self.f.switch("slow." + who, True)

    def do_isolate(self, who, _p):
        for n in self.f.nodes:
            if n != who:
                self.f.net("net_cut", who, n, tag=self.tag)

    def do_leader_isolate(self, who, _p):
        for b in self.brokers:
            if b != who:
                self.f.net("net_cut", who, b, tag=self.tag)

    def do_oneway(self, who, other):
        self.f.net("net_drop", other, who, tag=self.tag)

    def do_partial(self, who, other):
        self.f.net("net_cut", who, other, tag=self.tag)

    def do_cpcut(self, _who, _p):
        for b in self.brokers:
            self.f.net("net_cut", "cp", b, tag=self.tag)

    def do_loss(self, who, pct):
        self.f.net("net_loss", who, str(pct), tag=self.tag)

    def do_delay(self, who, p):
        self.delayed[who] = self.delayed.get(who, 0) + 1  # a second delay replaces the first's
        self.f.net("net_delay", who, *[str(x) for x in p])

    def do_rate(self, who, rate):
        self.f.net("net_rate", who, rate, tag=self.tag)

    def final_heal(self):
        """Everything back: rules gone, switches off, pauses lifted, every
        process running."""
        self.stop.set()
        with self.lock:
            self.f.net("net_heal")
            for n in self.f.nodes:
                self.f.net("net_clear", n)
            for b in self.brokers:
                for s in ("slow.", "syncerr.", "full."):
                    self.f.switch(s + b, False)
            for name in list(self.f.procs):
                self.f.signal(name, signal.SIGCONT)
            for name in ["cp"] + self.brokers:
                if name in self.f.procs and not self.f.running(name):
                    self.f.wait("%s to exit" % name, lambda: not self.f.running(name), 30)
                self.f.start(name)

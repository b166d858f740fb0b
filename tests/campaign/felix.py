"""felix.py — a Felix cluster across the run's network namespaces, and the
fault injectors that act on it (docs/campaign.md).

Runs inside the clients' namespace (campaign.py re-executes itself there);
every process is started with `ip netns exec` in its node's namespace, so
net_down (net.sh) finds and kills it even if this process dies. Brokers run
under the sync recorder (tests/faults/) so a power cut can be taken.
"""
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

from traffic import Consumer, Producer, read_all

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def sh_net(net_id, fn, *args, tag=None, net_dir=None):
    """Calls a net.sh function: sh_net(id, "net_cut", "b1", "b2"); returns
    its exit code (its output goes to the caller's stderr)."""
    env = dict(os.environ, **({"NET_TAG": tag} if tag else {}), **({"NET_DIR": net_dir} if net_dir else {}))
    cmd = 'source "%s/net.sh" && "$@"' % HERE
    return subprocess.run(["bash", "-c", cmd, "net.sh", fn, net_id] + list(args), env=env).returncode


class ControlPlaneAPI:
    def __init__(self, url, token_file):
        self.url, self.token_file, self.token = url, token_file, None

    def request(self, method, path, body=None, timeout=2):
        if self.token is None:
            try:
                self.token = open(self.token_file).read().strip()
            except OSError:
                return None
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": "Bearer " + self.token,
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                return {"http_status": e.code, **json.loads(e.read() or b"{}")}
            except ValueError:
                return {"http_status": e.code}
        except (OSError, ValueError):
            return None

    def get(self, path, timeout=2):
        r = self.request("GET", path, timeout=timeout)
        return None if isinstance(r, dict) and "http_status" in r else r


class Cluster:
    """What every system under test shares: its run directory, the run's
    network (net.sh), its processes by name, and waiting for a condition.
    Felix below and natspeer.Nats build on it."""

    def __init__(self, run_dir, net_id, net_dir, nodes, brokers, lease_ms, build, log):
        self.dir, self.net_id, self.net_dir, self.nodes, self.brokers = run_dir, net_id, net_dir, nodes, brokers
        self.lease_ms, self.build, self.log = lease_ms, build, log
        self.lease_s = lease_ms / 1000.0  # a fault's effects come up to a lease after it
        self.procs = {}  # name -> Popen
        self.cut_failed = False

    def net(self, fn, *args, tag=None):
        rc = sh_net(self.net_id, fn, *args, tag=tag, net_dir=self.net_dir)
        if rc and fn != "net_exec":
            self.log("%s %s failed (exit %d)" % (fn, " ".join(args), rc))
        return rc

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def running(self, name):
        p = self.procs.get(name)
        return p is not None and p.poll() is None

    def spawn(self, name, node, argv, env):
        out = open(self.path(name + ".log"), "a")
        out.write("# campaign: started at %.1f\n" % time.time())
        out.flush()
        self.procs[name] = subprocess.Popen(["ip", "netns", "exec", "fx%s-%s" % (self.net_id, node)] + argv,
                                            env=env, stdout=out, stderr=out, start_new_session=True)
        out.close()

    def pid(self, name):
        """The process a signal for NAME goes to (None: not running)."""
        p = self.procs.get(name)
        return p.pid if p is not None and p.poll() is None else None

    def signal(self, name, sig):
        pid = self.pid(name)
        if pid is None:
            return False
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return False
        return True

    def kill(self, name):
        if self.signal(name, signal.SIGKILL):
            self.procs[name].wait(30)

    def stop_all(self):
        for name in list(self.procs):
            self.signal(name, signal.SIGCONT)
            self.kill(name)

    def all_active(self):
        s = self.shards()
        return bool(s) and all(x["state"] == "Active" for x in s)

    def wait(self, what, cond, seconds, hold=0.0):
        """Waits until cond() is true (for `hold` seconds in a row)."""
        end = time.monotonic() + seconds
        since = None
        while time.monotonic() < end:
            if cond():
                since = since or time.monotonic()
                if time.monotonic() - since >= hold:
                    return True
            else:
                since = None
            time.sleep(0.2)
        self.log("timed out after %d s waiting for %s" % (seconds, what))
        return False


class Felix(Cluster):
    """The cluster: the control plane on node cp, brokers b1..bN on theirs."""

    def __init__(self, run_dir, net_id, net_dir, nodes, brokers, lease_ms, build, log):
        super().__init__(run_dir, net_id, net_dir, nodes, brokers, lease_ms, build, log)
        self.broker_bin = os.path.join(build, "felix-broker-san")
        self.cp_db = os.path.join(run_dir, "cp", "cp.db")
        self.cp_url = "http://%s:9500" % nodes["cp"]
        self.api = ControlPlaneAPI(self.cp_url, self.cp_db + ".admin-token")
        self.env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0",
                        UBSAN_OPTIONS="print_stacktrace=1")

    def start_cp(self):
        os.makedirs(self.path("cp"), exist_ok=True)
        self.spawn("cp", "cp", [self.broker_bin, "control-plane", "--listen", self.nodes["cp"] + ":9500",
                                "--db", self.cp_db, "--lease-ms", str(self.lease_ms)], self.env)

    def start_broker(self, b):
        for f, v in (("boot_id." + b, "boot-%d-%s" % (os.getpid(), b)), ("ledger." + b, "")):
            if not os.path.exists(self.path(f)):
                open(self.path(f), "w").write(v + ("\n" if v else ""))
        faults = os.path.join(self.build, "faults")
        env = dict(self.env, FELIX_BOOT_ID_FILE=self.path("boot_id." + b), FELIX_RUNTIME_DIR=self.path("runtime." + b),
                   FELIX_FAULTS_LEDGER=self.path("ledger." + b), FELIX_FAULTS_ROOT=self.path(b),
                   FELIX_FAULTS_SLOW_SYNC_IF=self.path("slow." + b), FELIX_FAULTS_SLOW_SYNC_MS="60000",
                   FELIX_FAULTS_FAIL_SYNC_IF=self.path("syncerr." + b), FELIX_FAULTS_ENOSPC_IF=self.path("full." + b),
                   FELIX_FAULTS_ENOSPC_MIN="100", LD_PRELOAD=os.path.join(faults, "libfelix_faults.so"))
        a = self.nodes[b]
        self.spawn(b, b, [self.broker_bin, "run", "--id", b, "--data-dir", self.path(b), "--listen", a + ":9000",
                          "--http", a + ":9100", "--control-plane", self.cp_url,
                          "--token-file", self.cp_db + ".broker-token"], env)

    def up(self, streams):
        self.start_cp()
        if not self.wait("the control plane", lambda: self.api.get("/v1/cluster") is not None, 20):
            return False
        for b in self.brokers:
            self.start_broker(b)
        if not self.wait("every broker alive", lambda: self.alive() == len(self.brokers), 40):
            return False
        for s in streams:
            r = self.api.request("POST", "/v1/streams", {"name": s["name"], "shard_count": s["shards"], "replication_factor": s["replicas"], "acks": s["acks"]}, timeout=10)
            if not r or "http_status" in r:
                self.log("stream create %s failed: %s" % (s["name"], r))
                return False
        return self.wait("every shard Active", self.all_active, 40)

    def alive(self):
        bs = self.api.get("/v1/brokers") or []
        return len([b for b in bs if b.get("alive")])

    def shards(self, timeout=2):
        return self.api.get("/v1/shards", timeout=timeout)

    def leader_of(self, shard):
        stream, n = shard.split("/")
        d = self.api.get("/v1/shards/%s/%s" % (stream, n)) or {}
        return d.get("leader")

    def applies(self, _fault):
        return True  # every fault kind is made for Felix

    def acks(self, policy):
        return policy

    def events(self):
        return self.api.get("/v1/events?limit=200", timeout=1) or []

    # --- traffic (natspeer.Nats offers the same) ---
    def producer(self, stream, shard, acks, seed, t0, stop):
        return Producer(self.api, stream, shard, acks, seed, t0, stop)

    def consumer(self, stream, shard, t0, stop):
        return Consumer(self.api, stream, shard, t0, stop)

    def read_all(self, stream, shard, deadline):
        return read_all(self.api, stream, shard, deadline)

    # --- process faults ---
    def start(self, name):
        if not self.running(name):
            self.start_cp() if name == "cp" else self.start_broker(name)

    def power_cut(self, b, seed):
        """SIGKILL, cut the data directory to what was durable (a seeded cut),
        a new boot id, an empty runtime directory (a reboot clears /run)."""
        self.kill(b)
        r = subprocess.run(["sh", os.path.join(REPO, "tests", "faults", "cut-power.sh"), self.path("ledger." + b),
                            self.path(b), "--boot-id-file", self.path("boot_id." + b), "--seed", str(seed)],
                           env=dict(os.environ, FELIX_BUILD=self.build), capture_output=True, text=True)
        open(self.path("powercut.log"), "a").write(r.stderr)
        shutil.rmtree(self.path("runtime." + b), ignore_errors=True)
        return r.returncode == 0

    def wipe(self, b):
        self.kill(b)
        shutil.rmtree(self.path(b), ignore_errors=True)
        open(self.path("ledger." + b), "w").close()

    def switch(self, name, on):
        p = self.path(name)
        if on:
            open(p, "w").close()
        elif os.path.exists(p):
            os.unlink(p)

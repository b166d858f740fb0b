"""fake_cp.py PORT — a stand-in control plane for felixctl --watch tests: GET
/v1/brokers and /v1/shards answer fixed lists in which, on every request, a
broker's lease_age_ms and a shard's detail (a field the table leaves out,
-o wide shows) change. Nothing else changes. Stops on SIGTERM."""
import http.server
import itertools
import json
import signal
import sys

calls = itertools.count()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_GET(self):
        n = next(calls)
        if self.path.startswith("/v1/brokers"):
            body = [{"id": "b1", "alive": True, "address": "127.0.0.1:1", "storage_id": "s1", "incarnation": "i1",
                     "fsync_mode": "periodic", "lease_age_ms": 100 + n}]
        elif self.path.startswith("/v1/shards"):
            body = [{"stream": "s", "shard": 0, "state": "Active", "generation": 1, "leader": "b1",
                     "leader_address": "127.0.0.1:1", "hwm": 5, "max_hwm": 5, "leader_copy_id": "c1",
                     "detail": "answer %d" % n, "replicas": []}]
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()

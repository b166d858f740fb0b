#!/usr/bin/env python3
"""wire.py — a minimal independent client of the data protocol (docs/wire.md)
for the bats tests: it checks the broker against the document, not against
lib/wire/data.c. Usage:
  wire.py publish ADDR STREAM SHARD PAYLOAD...   -> "status=N leader=ADDR first=N count=N"
  wire.py publish-acks ADDR STREAM SHARD ACKS PAYLOAD...  (ACKS 1 quorum, 2 leader, 3 all)
                                                 -> the same, or "closed"
  wire.py fetch ADDR STREAM SHARD OFFSET         -> "status=N leader=ADDR hwm=N next=N count=N"
  wire.py metadata ADDR                          -> one "stream shard generation state leader address" line each
  wire.py raw ADDR TYPE HEXBODY                  -> "closed" or "reply type=0xNNNN status=N"
"""
import socket, struct, sys

def frame(t, corr, body):
    return struct.pack(">IHI", 6 + len(body), t, corr) + body

def s16(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b

def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return out

def roundtrip(addr, t, body):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(frame(t, 7, body))
        try:
            hdr = recv_exact(sock, 10)
        except (EOFError, ConnectionResetError):
            return None, None
        length, rtype, corr = struct.unpack(">IHI", hdr)
        assert corr == 7, corr
        return rtype, recv_exact(sock, length - 6)

class Reader:
    def __init__(self, b): self.b, self.p = b, 0
    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p); self.p += struct.calcsize(fmt); return v[0]
    def str(self):
        n = self.take(">H"); v = self.b[self.p:self.p + n].decode(); self.p += n; return v
    def bytes(self):
        n = self.take(">I"); v = self.b[self.p:self.p + n]; self.p += n; return v

def main(argv):
    cmd, addr = argv[1], argv[2]
    if cmd in ("publish", "publish-acks"):
        acks, payloads = (int(argv[5]), argv[6:]) if cmd == "publish-acks" else (0, argv[5:])
        recs = b"".join(struct.pack(">Q", 0) + struct.pack(">I", len(p.encode())) + p.encode() for p in payloads)
        body = s16(argv[3]) + struct.pack(">IBI", int(argv[4]), acks, len(payloads)) + recs
        t, rb = roundtrip(addr, 0x0001, body)
        if t is None:
            print("closed")
            return
        r = Reader(rb); st = r.take(">H"); msg = r.str(); leader = r.str(); first = r.take(">Q"); count = r.take(">I")
        print("status=%d leader=%s first=%d count=%d" % (st, leader, first, count))
    elif cmd == "fetch":
        body = s16(argv[3]) + struct.pack(">IQIII", int(argv[4]), int(argv[5]), 100, 1 << 20, 0)
        t, rb = roundtrip(addr, 0x0002, body)
        r = Reader(rb); st = r.take(">H"); msg = r.str(); leader = r.str()
        start, hwm, nxt, count = r.take(">Q"), r.take(">Q"), r.take(">Q"), r.take(">I")
        print("status=%d leader=%s hwm=%d next=%d count=%d" % (st, leader, hwm, nxt, count))
    elif cmd == "metadata":
        t, rb = roundtrip(addr, 0x0003, s16(""))
        r = Reader(rb); st = r.take(">H"); r.str(); n = r.take(">I")
        for _ in range(n):
            print(r.str(), r.take(">I"), r.take(">Q"), r.str(), r.str(), r.str())
    elif cmd == "raw":
        t, rb = roundtrip(addr, int(argv[3], 0), bytes.fromhex(argv[4]))
        print("closed" if t is None else "reply type=0x%04x status=%d" % (t, struct.unpack_from(">H", rb)[0]))

if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""A scripted HTTP/2 client for glint's tests: well-behaved conversations
and the known attacks, written frame by frame (an attack is made of frames
a correct library refuses to send). Field blocks are encoded and decoded
with the `hpack` package that the Python `h2` package brings.

usage: h2client.py PORT MODE [ARGS...]   (127.0.0.1, cleartext prior knowledge)

Each mode prints `key=value` lines on stdout with what it saw, and exits 0;
the Rust test decides what is right. Every socket read has a time-out, and
every mode bounds its own run time.

modes:
  order BIG SMALL N       one connection: GET BIG, then N x GET SMALL;
                          the order in which the streams ended
  hpack_bomb N            a 4000-byte field into the dynamic table, then N
                          requests referencing it 4000 times each
  continuation N          HEADERS without END_HEADERS, then up to N empty
                          and N full CONTINUATION frames
  rapid_reset N           N x (HEADERS, RST_STREAM)
  made_you_reset N        N x (HEADERS, then a WINDOW_UPDATE of 0 on it,
                          which makes the server reset the stream)
  ping_flood N            N PINGs, reading nothing
  settings_flood N        N SETTINGS frames, reading nothing
  stall PATH N SECS       N streams for PATH with a 0 window; for SECS s
                          read what comes (never opening a window)
  max_stream_id PATH      a request on stream 2^31-1, then one more
  no_ack SECS             the preface, but never ACK the server's SETTINGS
  idle SECS               the preface and ACK, then nothing: how long
                          until GOAWAY / close
  goaway PATH SECS        GET PATH; report frames until the connection
                          closes (a graceful shutdown sends GOAWAY)
  post PATH SIZE          POST SIZE bytes (content-length) as windows
                          allow; status, body md5, and how it ended
  turns N PATH SECS INFLIGHT
                          N clients at once, each keeping INFLIGHT requests
                          for PATH open on its connection for SECS s; a
                          request past a GOAWAY's last stream, reset, or on
                          a closed connection is asked again on a new one.
                          Per client: answers, connections, GOAWAYs and the
                          longest wait of a request from its first sending
                          (one unanswered at the end counts its wait so far)
  reset_after PATH DELAY HOLD
                          GET PATH; after DELAY s, RST_STREAM(CANCEL) on
                          it; the connection stays open HOLD s more
  whole CELL...           each CELL (METHOD:PATH:SIZE:length|stream) on a
                          connection of its own, all at once: the body
                          sent as windows allow (with a content-length or
                          without) while the answer is read to its
                          END_STREAM; per cell its status, length, md5 and
                          how it ended
"""
import hashlib
import socket
import struct
import sys
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST, SETTINGS, PUSH, PING, GOAWAY, WINDOW, CONT = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
CODES = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR",
         4: "SETTINGS_TIMEOUT", 5: "STREAM_CLOSED", 7: "REFUSED_STREAM", 8: "CANCEL",
         9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def settings(pairs=()):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


class Client:
    def __init__(self, port, window=65535, conn_window=None, ack=True, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder(max_header_list_size=1 << 20)
        self.dec.max_allowed_table_size = 65536
        self.buf = b""
        self.ack = ack
        self.closed = False
        self.goaway = None
        pairs = [(4, window)] if window != 65535 else []
        self.send(PREFACE + settings(pairs))
        if conn_window:
            self.send(frame(WINDOW, 0, 0, struct.pack(">I", conn_window - 65535)))

    def send(self, b):
        try:
            self.sock.sendall(b)
            return True
        except OSError:
            # The server may have closed (or reset) after its last frames:
            # those are still to be read, so only a read says it is closed.
            return False

    def request(self, stream, path, method="GET", end=True, extra=()):
        fields = [(":method", method), (":scheme", "http"), (":authority", "127.0.0.1"), (":path", path)]
        fields += list(extra)
        block = self.enc.encode(fields)
        return frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), stream, block)

    def frames(self, deadline):
        """Yields (kind, flags, stream, payload) until the deadline or close."""
        while time.time() < deadline and not self.closed:
            while len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + n:
                    break
                kind, flags = self.buf[3], self.buf[4]
                stream = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
                payload = self.buf[9:9 + n]
                self.buf = self.buf[9 + n:]
                if kind == SETTINGS and not flags & ACK and self.ack:
                    self.send(frame(SETTINGS, ACK, 0))
                if kind == PING and not flags & ACK:
                    self.send(frame(PING, ACK, 0, payload))
                if kind == GOAWAY:
                    last, code = struct.unpack(">II", payload[:8])
                    self.goaway = {"last": last & 0x7FFFFFFF, "code": CODES.get(code, code)}
                yield kind, flags, stream, payload
            try:
                self.sock.settimeout(max(0.01, min(1.0, deadline - time.time())))
                d = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            except OSError:
                self.closed = True
                return
            if not d:
                self.closed = True
                return
            self.buf += d

    def headers(self, payload, flags):
        if flags & 0x8:
            pad = payload[0]
            payload = payload[1:len(payload) - pad]
        if flags & 0x20:
            payload = payload[5:]
        return dict((k.decode() if isinstance(k, bytes) else k, v.decode() if isinstance(v, bytes) else v)
                    for k, v in self.dec.decode(payload))

    def window(self, stream, n):
        self.send(frame(WINDOW, 0, stream, struct.pack(">I", n)) + frame(WINDOW, 0, 0, struct.pack(">I", n)))


def out(d):
    """One `key=value` line per fact (nested keys joined with dots, lists
    with commas), easy to read from the Rust side without a JSON parser."""
    def flat(prefix, v):
        if isinstance(v, dict):
            for k, x in v.items():
                yield from flat("%s.%s" % (prefix, k) if prefix else str(k), x)
        elif isinstance(v, list):
            yield prefix, ",".join(str(x) for x in v)
        elif isinstance(v, bool):
            yield prefix, "true" if v else "false"
        elif v is None:
            yield prefix, "none"
        else:
            yield prefix, str(v)
    for k, v in flat("", d):
        print("%s=%s" % (k, v))
    sys.exit(0)


def order(port, big, small, n):
    c = Client(port, window=1 << 20, conn_window=1 << 24)
    reqs = c.request(1, big)
    for i in range(n):
        reqs += c.request(3 + 2 * i, small)
    c.send(reqs)
    ended, sizes, status = [], {}, {}
    t0 = time.time()
    for kind, flags, stream, payload in c.frames(time.time() + 30):
        if kind == HEADERS:
            status[stream] = c.headers(payload, flags).get(":status")
        if kind == DATA:
            sizes[stream] = sizes.get(stream, 0) + len(payload)
            if payload:
                c.window(stream, len(payload))
        if kind in (DATA, HEADERS) and flags & END_STREAM:
            ended.append(stream)
            if len(ended) == n + 1:
                break
    out({"ended": ended, "sizes": sizes, "status": status, "secs": time.time() - t0})


def hpack_bomb(port, n):
    c = Client(port)
    big = "a" * 4000
    # Literal with incremental indexing, new name: enters the dynamic table as index 62.
    first = hpack.Encoder().encode([(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/index.html")])
    name, value = b"x-bomb", big.encode()
    def hint(v, prefix, first_byte):
        # RFC 7541 §5.1 integer with a `prefix`-bit prefix.
        maxv = (1 << prefix) - 1
        if v < maxv:
            return bytes([first_byte | v])
        b = bytearray([first_byte | maxv])
        v -= maxv
        while v >= 128:
            b.append((v & 0x7F) | 0x80)
            v >>= 7
        b.append(v)
        return bytes(b)
    lit = b"\x40" + hint(len(name), 7, 0) + name + hint(len(value), 7, 0) + value
    c.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, first + lit))
    refs = b"\xbe" * 4000  # indexed field 62, 4000 times: 16 MB decoded
    statuses = {}
    sent = 0
    for i in range(n):
        block = first + refs
        # Split in 16 KiB frames with CONTINUATION.
        sid = 3 + 2 * i
        parts = [block[j:j + 16000] for j in range(0, len(block), 16000)]
        b = frame(HEADERS, END_STREAM | (END_HEADERS if len(parts) == 1 else 0), sid, parts[0])
        for k, p in enumerate(parts[1:]):
            b += frame(CONT, END_HEADERS if k == len(parts) - 2 else 0, sid, p)
        if not c.send(b):
            break
        sent += 1
    ended = 0
    for kind, flags, stream, payload in c.frames(time.time() + 10):
        if kind == HEADERS:
            try:
                st = c.headers(payload, flags).get(":status")
            except Exception as e:  # the dynamic table may be out of step after a reset
                st = "undecodable"
            statuses[st] = statuses.get(st, 0) + 1
        if kind in (DATA, HEADERS) and flags & END_STREAM:
            ended += 1
            if ended >= sent + 1:
                break
    out({"sent": sent, "statuses": statuses, "goaway": c.goaway, "closed": c.closed})


def continuation(port, n):
    c = Client(port)
    first = c.enc.encode([(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/")])
    c.send(frame(HEADERS, END_STREAM, 1, first))
    sent = 0
    for i in range(n):
        if not c.send(frame(CONT, 0, 1, b"") + frame(CONT, 0, 1, b"\x00\x01a\x01b" * 2000)):
            break
        sent += 2
    for _ in c.frames(time.time() + 5):
        pass
    out({"sent": sent, "goaway": c.goaway, "closed": c.closed})


def rapid_reset(port, n):
    c = Client(port)
    sent = 0
    for i in range(n):
        sid = 1 + 2 * i
        if not c.send(c.request(sid, "/index.html") + frame(RST, 0, sid, struct.pack(">I", 8))):
            break
        sent += 1
    answered = 0
    for kind, flags, stream, payload in c.frames(time.time() + 5):
        if kind == HEADERS:
            answered += 1
    out({"sent": sent, "answered": answered, "goaway": c.goaway, "closed": c.closed})


def made_you_reset(port, n):
    c = Client(port)
    sent = 0
    for i in range(n):
        sid = 1 + 2 * i
        # A request left open, then a WINDOW_UPDATE of 0 on it: a stream
        # error (RFC 9113 §6.9) the server answers with RST_STREAM.
        b = c.request(sid, "/index.html", end=False) + frame(WINDOW, 0, sid, struct.pack(">I", 0))
        if not c.send(b):
            break
        sent += 1
    resets = 0
    for kind, flags, stream, payload in c.frames(time.time() + 5):
        if kind == RST:
            resets += 1
    out({"sent": sent, "resets": resets, "goaway": c.goaway, "closed": c.closed})


def flood(port, n, what):
    c = Client(port, timeout=2.0)
    sent = 0
    one = frame(PING, 0, 0, b"12345678") if what == "ping" else settings([(3, 100)])
    chunk = one * 1000
    t0 = time.time()
    # Never read: the server's acks pile up in its output and the socket.
    c.sock.settimeout(2.0)
    while sent < n and time.time() - t0 < 20:
        try:
            c.sock.sendall(chunk)
        except (socket.timeout, OSError):
            break
        sent += 1000
    # Now read what came, to see how it ended.
    for _ in c.frames(time.time() + 5):
        pass
    out({"sent": sent, "goaway": c.goaway, "closed": c.closed, "secs": time.time() - t0})


def stall(port, path, n, secs):
    c = Client(port, window=0)
    reqs = b"".join(c.request(1 + 2 * i, path) for i in range(n))
    c.send(reqs)
    heads, data, resets = 0, 0, 0
    for kind, flags, stream, payload in c.frames(time.time() + secs):
        if kind == HEADERS:
            heads += 1
        if kind == DATA:
            data += len(payload)
        if kind == RST:
            resets += 1
    out({"heads": heads, "data": data, "resets": resets, "goaway": c.goaway, "closed": c.closed})


def max_stream_id(port, path):
    c = Client(port)
    top = 0x7FFFFFFF
    c.send(c.request(top, path))
    status = None
    for kind, flags, stream, payload in c.frames(time.time() + 5):
        if kind == HEADERS and stream == top:
            status = c.headers(payload, flags).get(":status")
        if c.goaway and status:
            break
    # No stream id is left: anything more is the client's error.
    c.send(c.request(1, path))
    for _ in c.frames(time.time() + 3):
        pass
    out({"status": status, "goaway": c.goaway, "closed": c.closed})


def no_ack(port, secs):
    c = Client(port, ack=False)
    t0 = time.time()
    for _ in c.frames(time.time() + secs):
        if c.closed:
            break
    out({"goaway": c.goaway, "closed": c.closed, "secs": round(time.time() - t0, 1)})


def idle(port, secs):
    c = Client(port)
    t0 = time.time()
    when = None
    for kind, *_ in c.frames(time.time() + secs):
        if kind == GOAWAY and when is None:
            when = round(time.time() - t0, 1)
    out({"goaway": c.goaway, "goaway_after": when, "closed": c.closed, "secs": round(time.time() - t0, 1)})


def goaway(port, path, secs):
    c = Client(port, window=1 << 20, conn_window=1 << 24)
    c.send(c.request(1, path))
    status, size, ended, goaway_before_end = None, 0, False, False
    print("sent", flush=True, file=sys.stderr)
    for kind, flags, stream, payload in c.frames(time.time() + secs):
        if kind == HEADERS:
            status = c.headers(payload, flags).get(":status")
        if kind == DATA:
            size += len(payload)
            if payload:
                c.window(stream, len(payload))
        if kind == GOAWAY and not ended:
            goaway_before_end = True
        if kind in (DATA, HEADERS) and flags & END_STREAM:
            ended = True
    out({"status": status, "size": size, "ended": ended, "goaway": c.goaway,
         "goaway_before_end": goaway_before_end, "closed": c.closed})


def post(port, path, size):
    c = Client(port, window=1 << 20, conn_window=1 << 24)
    c.send(c.request(1, path, method="POST", end=False, extra=[("content-length", str(size))]))
    # The server's windows for what we send: 65535 until its SETTINGS say more.
    send_conn, send_stream = 65535, 65535
    sent, status, body, ended, reset = 0, None, hashlib.md5(), False, None
    chunk = bytes(range(256)) * 64
    deadline = time.time() + 30
    while time.time() < deadline and not c.closed and not ended:
        while sent < size and min(send_conn, send_stream) > 0:
            n = min(send_conn, send_stream, 16384, size - sent)
            c.send(frame(DATA, END_STREAM if sent + n == size else 0, 1, chunk[:n]))
            sent += n
            send_conn -= n
            send_stream -= n
        for kind, flags, stream, payload in c.frames(time.time() + 0.05):
            if kind == WINDOW:
                inc = struct.unpack(">I", payload)[0]
                if stream == 0:
                    send_conn += inc
                else:
                    send_stream += inc
            if kind == SETTINGS and not flags & ACK:
                for i in range(0, len(payload), 6):
                    k, v = struct.unpack(">HI", payload[i:i + 6])
                    if k == 4:
                        send_stream += v - 65535
            if kind == HEADERS:
                h = c.headers(payload, flags)
                status = h.get(":status", status) if not h.get(":status", "").startswith("1") else status
            if kind == DATA:
                body.update(payload)
                if payload:
                    c.window(stream, len(payload))
            if kind == RST:
                reset = CODES.get(struct.unpack(">I", payload)[0])
            if kind in (DATA, HEADERS) and flags & END_STREAM and status:
                ended = True
                break
    out({"status": status, "md5": body.hexdigest(), "sent": sent, "ended": ended, "reset": reset})


def whole_one(port, method, path, size, framing):
    """One cell of `whole`: the answer read whole while the body goes out."""
    c = Client(port, window=1 << 20, conn_window=1 << 24)
    extra = [("content-length", str(size))] if size and framing == "length" else []
    c.send(c.request(1, path, method=method, end=size == 0, extra=extra))
    send_conn, send_stream = 65535, 65535
    sent, status, body, length, ended, reset = 0, None, hashlib.md5(), 0, False, None
    chunk = b"u" * 16384
    t0 = time.time()
    deadline = t0 + 8
    while time.time() < deadline and not c.closed and not ended:
        while sent < size and min(send_conn, send_stream) > 0 and reset is None:
            n = min(send_conn, send_stream, 16384, size - sent)
            if not c.send(frame(DATA, END_STREAM if sent + n == size else 0, 1, chunk[:n])):
                break
            sent += n
            send_conn -= n
            send_stream -= n
        for kind, flags, stream, payload in c.frames(time.time() + 0.05):
            if kind == WINDOW:
                inc = struct.unpack(">I", payload)[0]
                if stream == 0:
                    send_conn += inc
                else:
                    send_stream += inc
            if kind == SETTINGS and not flags & ACK:
                for i in range(0, len(payload), 6):
                    k, v = struct.unpack(">HI", payload[i:i + 6])
                    if k == 4:
                        send_stream += v - 65535
            if kind == HEADERS and stream == 1:
                h = c.headers(payload, flags)
                if not h.get(":status", "1").startswith("1"):
                    status = h[":status"]
            if kind == DATA and stream == 1:
                body.update(payload)
                length += len(payload)
                if payload:
                    c.window(stream, len(payload))
            if kind == RST and stream == 1:
                reset = CODES.get(struct.unpack(">I", payload)[0])
            if kind in (DATA, HEADERS) and stream == 1 and flags & END_STREAM and status:
                ended = True
                break
            if reset is not None and not ended:
                break
            if kind == WINDOW and sent < size and min(send_conn, send_stream) > 0:
                break  # room again: send before reading on
        if reset is not None and not ended:
            break
    c.sock.close()
    return {"status": status, "len": length, "md5": body.hexdigest(), "ended": ended,
            "reset": reset, "sent": sent, "goaway": c.goaway, "secs": round(time.time() - t0, 2)}


def whole(port, cells):
    import threading
    results = [None] * len(cells)

    def run(i, cell):
        method, path, size, framing = cell.split(":")
        results[i] = whole_one(port, method, path, int(size), framing)
    threads = [threading.Thread(target=run, args=(i, cell)) for i, cell in enumerate(cells)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    out({"cell": {str(i): r or {"status": None} for i, r in enumerate(results)}})


def reset_after(port, path, delay, hold):
    c = Client(port)
    c.send(c.request(1, path))
    got = []
    for kind, flags, stream, payload in c.frames(time.time() + delay):
        got.append(kind)
    c.send(frame(RST, 0, 1, struct.pack(">I", 8)))
    print("reset=1", flush=True)
    for kind, flags, stream, payload in c.frames(time.time() + hold):
        got.append(kind)
    out({"answered": HEADERS in got, "closed": c.closed})


def turns_one(port, path, end, inflight):
    answered = conns = goaways = 0
    longest = 0.0
    pending = []  # first-sent times of requests to ask (again)
    while time.time() < end:
        try:
            c = Client(port, timeout=2.0)
        except OSError:
            time.sleep(0.05)
            continue
        conns += 1
        sid, opened, unacked = 1, {}, 0

        def fill():
            nonlocal sid
            reqs = b""
            while len(opened) < inflight and c.goaway is None and time.time() < end:
                opened[sid] = pending.pop(0) if pending else time.time()
                reqs += c.request(sid, path)
                sid += 2
            if reqs:
                c.send(reqs)

        fill()
        for kind, flags, stream, payload in c.frames(end):
            if kind == DATA and payload:
                # The connection's window only: a stream's may be closed.
                unacked += len(payload)
                if unacked >= 16384:
                    c.send(frame(WINDOW, 0, 0, struct.pack(">I", unacked)))
                    unacked = 0
            if kind in (DATA, HEADERS) and flags & END_STREAM and stream in opened:
                longest = max(longest, time.time() - opened.pop(stream))
                answered += 1
            if kind == RST and stream in opened:
                pending.append(opened.pop(stream))
            if kind == GOAWAY:
                goaways += 1
                for s in [s for s in opened if s > c.goaway["last"]]:
                    pending.append(opened.pop(s))
            if c.goaway is None:
                fill()
            elif not opened:
                break
        pending.extend(opened.values())
        c.sock.close()
    now = time.time()
    for t in pending:
        longest = max(longest, now - t)
    return {"answered": answered, "conns": conns, "goaways": goaways,
            "longest_ms": int(longest * 1000)}


def turns(port, n, path, secs, inflight):
    import threading
    end = time.time() + secs
    got = [None] * n

    def run(i):
        got[i] = turns_one(port, path, end, inflight)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(secs + 30)
    out({"clients": n, "client": {str(i): g for i, g in enumerate(got) if g}})


def main():
    port, mode, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    modes = {
        "order": lambda: order(port, args[0], args[1], int(args[2])),
        "hpack_bomb": lambda: hpack_bomb(port, int(args[0])),
        "continuation": lambda: continuation(port, int(args[0])),
        "rapid_reset": lambda: rapid_reset(port, int(args[0])),
        "made_you_reset": lambda: made_you_reset(port, int(args[0])),
        "ping_flood": lambda: flood(port, int(args[0]), "ping"),
        "settings_flood": lambda: flood(port, int(args[0]), "settings"),
        "stall": lambda: stall(port, args[0], int(args[1]), float(args[2])),
        "max_stream_id": lambda: max_stream_id(port, args[0]),
        "no_ack": lambda: no_ack(port, float(args[0])),
        "idle": lambda: idle(port, float(args[0])),
        "goaway": lambda: goaway(port, args[0], float(args[1])),
        "post": lambda: post(port, args[0], int(args[1])),
        "whole": lambda: whole(port, args),
        "turns": lambda: turns(port, int(args[0]), args[1], float(args[2]), int(args[3])),
        "reset_after": lambda: reset_after(port, args[0], float(args[1]), float(args[2])),
    }
    modes[mode]()


if __name__ == "__main__":
    main()

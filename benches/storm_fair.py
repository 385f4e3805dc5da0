#!/usr/bin/env python3
"""Who is served in a keep-alive storm (the fairness wrk cannot show).

CLIENTS clients for SECS seconds, as `wrk -c CLIENTS` does: each sends
`GET PATH` over keep-alive, the next as soon as an answer is complete, and
connects again when the server answers `Connection: close` or closes. wrk
counts an answer later than its --timeout as an error but never a client
that is not served at all; this counts both. Prints one line:

    fair: S of C clients served, N answers, L late (> 2 s), E errors, slowest T s

    storm_fair.py PORT [CLIENTS] [SECS] [PATH]

Python standard library only (one thread, `selectors`); 127.0.0.1 only.
"""

import errno
import selectors
import socket
import sys
import time

LATE = 2.0


class Client:
    __slots__ = ("sock", "buf", "sent_at", "served", "connecting")

    def __init__(self):
        self.sock = None
        self.buf = b""
        self.sent_at = None
        self.served = 0
        self.connecting = False


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    secs = float(sys.argv[3]) if len(sys.argv) > 3 else 8
    path = sys.argv[4] if len(sys.argv) > 4 else "/index.html"
    request = f"GET {path} HTTP/1.1\r\nHost: storm\r\n\r\n".encode()
    sel = selectors.DefaultSelector()
    clients = [Client() for _ in range(n)]
    stats = {"answers": 0, "late": 0, "errors": 0, "slowest": 0.0}

    def connect(c):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = s.connect_ex(("127.0.0.1", port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            stats["errors"] += 1
            return
        c.sock, c.buf, c.sent_at, c.connecting = s, b"", None, True
        sel.register(s, selectors.EVENT_WRITE, c)

    def drop(c):
        sel.unregister(c.sock)
        c.sock.close()
        c.sock = None

    def send(c):
        c.sock.send(request)
        c.sent_at = time.monotonic()
        sel.modify(c.sock, selectors.EVENT_READ, c)

    for c in clients:
        connect(c)
    end = time.monotonic() + secs
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.1):
            c = key.data
            try:
                if c.connecting:
                    err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        raise OSError(err, "connect")
                    c.connecting = False
                    send(c)
                    continue
                chunk = c.sock.recv(65536)
            except OSError:
                stats["errors"] += 1
                drop(c)
                connect(c)
                continue
            if not chunk:
                # Closed with no answer pending is a close, with one an error.
                stats["errors"] += 1
                drop(c)
                connect(c)
                continue
            c.buf += chunk
            head_end = c.buf.find(b"\r\n\r\n")
            if head_end < 0:
                continue
            head = c.buf[:head_end].decode("latin-1").lower()
            length = 0
            close = False
            for line in head.split("\r\n")[1:]:
                k, _, v = line.partition(":")
                if k.strip() == "content-length":
                    length = int(v)
                elif k.strip() == "connection" and "close" in v:
                    close = True
            if len(c.buf) < head_end + 4 + length:
                continue
            took = time.monotonic() - c.sent_at
            stats["answers"] += 1
            stats["late"] += took > LATE
            stats["slowest"] = max(stats["slowest"], took)
            c.served += 1
            c.buf = c.buf[head_end + 4 + length:]
            if close:
                drop(c)
                connect(c)
            else:
                try:
                    send(c)
                except OSError:
                    stats["errors"] += 1
                    drop(c)
                    connect(c)
    served = sum(1 for c in clients if c.served)
    print(f"fair: {served} of {n} clients served, {stats['answers']} answers, "
          f"{stats['late']} late (> {LATE:.0f} s), {stats['errors']} errors, "
          f"slowest {stats['slowest']:.2f} s")
    for c in clients:
        if c.sock is not None:
            c.sock.close()


if __name__ == "__main__":
    main()

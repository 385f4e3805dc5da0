#!/usr/bin/env python3
"""Byte-verified stress client (the middle step of benches/storm.sh).

THREADS threads for SECS seconds: each opens a connection, sends 1-8 GET
requests on it (whole files and ranges, HTTP/1.0 now and then, the last one
with `Connection: close`), and checks every status, Content-Length,
Content-Range and body byte against the files in DOCROOT. Prints one line,
`stress: C connections, N requests, M MiB, E errors`, and exits 1 on any error.

    storm_stress.py PORT DOCROOT [THREADS] [SECS]

Python standard library only; 127.0.0.1 only; every read has a 30 s time-out.
"""

import os
import random
import socket
import sys
import threading
import time


def read_response(sock, buf):
    """One response from `sock` (bytes already read in `buf`): (status,
    headers, body, rest). Content-Length framed, as static files are."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(262144)
        if not chunk:
            raise IOError("closed before the head")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "-1"))
    if n < 0:
        raise IOError(f"status {status} without Content-Length")
    parts = [rest]
    have = len(rest)
    while have < n:
        chunk = sock.recv(min(1 << 20, max(n - have, 65536)))
        if not chunk:
            raise IOError(f"closed after {have} of {n} body bytes")
        parts.append(chunk)
        have += len(chunk)
    data = b"".join(parts)
    return status, headers, data[:n], data[n:]


def pick(rng, size):
    """A Range header value (or None) and the (start, end) it must yield."""
    k = rng.randrange(5)
    if size == 0 or k < 2:
        return None, None
    if k == 2:
        a = rng.randrange(size)
        b = a + rng.randrange(size - a)
        return f"bytes={a}-{b}", (a, b)
    if k == 3:
        n = 1 + rng.randrange(min(size, 70000))
        return f"bytes=-{n}", (size - n, size - 1)
    a = rng.randrange(size)
    return f"bytes={a}-", (a, size - 1)


def worker(t, port, files, deadline, totals, lock):
    rng = random.Random(0x5EED + t)
    names = list(files)
    done = nbytes = errors = conns = 0
    while time.monotonic() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
        except OSError as e:
            sys.stderr.write(f"thread {t}: connect: {e}\n")
            errors += 1
            continue
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conns += 1
        buf = b""
        n = 1 + rng.randrange(8)
        http10 = rng.randrange(5) == 0
        try:
            for i in range(n):
                name = rng.choice(names)
                # The 7 MB file whole is the costly case: take it less often.
                if len(files[name]) > 1 << 20 and rng.randrange(4):
                    name = rng.choice(names)
                content = files[name]
                rng_hdr, want = pick(rng, len(content))
                last = i + 1 == n
                req = f"GET /{name} HTTP/1.{0 if http10 else 1}\r\nHost: stress\r\n"
                if rng_hdr:
                    req += f"Range: {rng_hdr}\r\n"
                if http10 and not last:
                    req += "Connection: keep-alive\r\n"
                elif not http10 and last:
                    req += "Connection: close\r\n"
                s.sendall((req + "\r\n").encode())
                status, headers, body, buf = read_response(s, buf)
                # A server may answer a Range with the whole file (RFC 9110
                # 14.2: lighttpd does for files of a few bytes).
                if want is None or status == 200:
                    ok = status == 200 and body == content
                else:
                    a, b = want
                    ok = (status == 206 and body == content[a:b + 1]
                          and headers.get("content-range") == f"bytes {a}-{b}/{len(content)}")
                if not ok:
                    sys.stderr.write(f"thread {t}: GET /{name} {rng_hdr}: status {status}, "
                                     f"{len(body)} bytes: wrong\n")
                    errors += 1
                    break
                done += 1
                nbytes += len(body)
        except (OSError, ValueError, IndexError) as e:
            sys.stderr.write(f"thread {t}: {e}\n")
            errors += 1
        finally:
            s.close()
    with lock:
        totals[0] += done
        totals[1] += nbytes
        totals[2] += errors
        totals[3] += conns


def main():
    port = int(sys.argv[1])
    root = sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 15
    files = {}
    for name in sorted(os.listdir(root)):
        if name.startswith("s-"):
            with open(os.path.join(root, name), "rb") as f:
                files[name] = f.read()
    if not files:
        sys.exit("storm_stress.py: no s-* files in " + root)
    totals = [0, 0, 0, 0]
    lock = threading.Lock()
    deadline = time.monotonic() + secs
    ts = [threading.Thread(target=worker, args=(t, port, files, deadline, totals, lock))
          for t in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    print(f"stress: {totals[3]} connections, {totals[0]} requests, {totals[1] >> 20} MiB, "
          f"{totals[2]} errors")
    sys.exit(1 if totals[2] else 0)


if __name__ == "__main__":
    main()

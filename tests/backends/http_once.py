"""An HTTP/1.1 backend that answers the first request on each connection
(keeping it open) and closes the connection when a second request comes,
without answering: a backend's idle time-out meeting the next request.
Prints "ready PORT"; each request line it reads goes to argv[1] if given."""
import socket
import sys
import threading

LOG = sys.argv[1] if len(sys.argv) > 1 else None


def read_request(f):
    line = f.readline()
    if not line:
        return None
    length = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":", 1)[1])
    f.read(length)
    return line.decode().strip()


def serve(conn):
    f = conn.makefile("rb")
    first = read_request(f)
    if first is None:
        return conn.close()
    if LOG:
        with open(LOG, "a") as log:
            log.write(first + "\n")
    target = " ".join(first.split()[:2])
    body = f"answered {target}".encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    second = read_request(f)
    if second and LOG:
        with open(LOG, "a") as log:
            log.write(second + " (dropped)\n")
    conn.close()


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print("ready", s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()

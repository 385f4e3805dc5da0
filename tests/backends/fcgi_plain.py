"""A FastCGI responder on the standard library alone, for glint's keep-conn
tests: it honours FCGI_KEEP_CONN (serves further requests on a connection
when asked) but knows no management record, so FCGI_GET_VALUES goes
unanswered in one of three ways.

usage: fcgi_plain.py PATH MODE   -> listens on a unix socket, prints "ready"

  MODE close    closes the connection on any record it does not expect
       ignore   skips such records and reads on (never answers GET_VALUES)
       garbage  answers such records with bytes that are no FastCGI record

Every answer is one line:
  conn=C served=S open=O most=M
C numbers the connections in the order they were accepted, S counts the
requests served on this one, O the connections open now, M the most that
were ever open at once. `?sleep=SECONDS` waits before answering.
"""
import socketserver
import struct
import sys
import threading
import time

BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT = 1, 3, 4, 5, 6
KEEP_CONN = 1

lock = threading.Lock()
accepted = 0
open_now = 0
most_open = 0


class Closed(Exception):
    pass


def pairs(data):
    """The name-value pairs of a PARAMS stream."""
    out, at = {}, 0

    def length():
        nonlocal at
        n = data[at]
        if n < 128:
            at += 1
            return n
        n = struct.unpack(">I", data[at:at + 4])[0] & 0x7FFFFFFF
        at += 4
        return n

    while at < len(data):
        n, m = length(), length()
        out[data[at:at + n].decode("latin-1")] = data[at + n:at + n + m].decode("latin-1")
        at += n + m
    return out


class Handler(socketserver.BaseRequestHandler):
    def read(self, n):
        buf = b""
        while len(buf) < n:
            got = self.request.recv(n - len(buf))
            if not got:
                raise Closed
            buf += got
        return buf

    def record(self):
        """The next record a request may have; others as MODE says."""
        while True:
            _, kind, rid, clen, pad = struct.unpack(">BBHHBx", self.read(8))
            body = self.read(clen + pad)[:clen]
            if kind in (BEGIN_REQUEST, PARAMS, STDIN):
                return kind, rid, body
            if MODE == "close":
                raise Closed
            if MODE == "garbage":
                self.request.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")

    def send(self, kind, rid, data):
        self.request.sendall(struct.pack(">BBHHBx", 1, kind, rid, len(data), 0) + data)

    def handle(self):
        global accepted, open_now, most_open
        with lock:
            accepted += 1
            me = accepted
            open_now += 1
            most_open = max(most_open, open_now)
        try:
            self.serve(me)
        except Closed:
            pass
        finally:
            with lock:
                open_now -= 1

    def serve(self, me):
        served = 0
        while True:
            kind, rid, body = self.record()
            if kind != BEGIN_REQUEST:
                continue
            flags = body[2]
            params, stdin_open = b"", True
            while stdin_open:
                kind, _, body = self.record()
                if kind == PARAMS:
                    params += body
                elif kind == STDIN and not body:
                    stdin_open = False
            env = pairs(params)
            query = env.get("QUERY_STRING", "")
            if query.startswith("sleep="):
                time.sleep(float(query[6:]))
            served += 1
            with lock:
                line = "conn=%d served=%d open=%d most=%d\n" % (me, served, open_now, most_open)
            text = line.encode()
            head = b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(text)
            self.send(STDOUT, rid, head + text)
            self.send(STDOUT, rid, b"")
            self.send(END_REQUEST, rid, struct.pack(">IB3x", 0, 0))
            if not flags & KEEP_CONN:
                return


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


MODE = sys.argv[2]
server = Server(sys.argv[1], Handler)
print("ready", flush=True)
server.serve_forever()

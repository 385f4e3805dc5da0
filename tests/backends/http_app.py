"""An HTTP/1.1 application server for the proxy tests (Python's own
http.server, threaded). Prints "ready PORT" once it listens.

  /echo...       the request as it arrived: method, target, headers, body
  /conn          the client port of this connection (which connection was reused)
  /chunked       a chunked answer in three pieces
  /close         an answer without a length, ended by closing (HTTP/1.0 style)
  /sse?n=N&ms=M  N server-sent events, M ms apart, each sent on its own
  /big?mb=N      N MiB of a repeated pattern, written in 64 KiB pieces
  /slow?s=S      the answer after S seconds
  /name          this server's name (argv[2]), for balancing
  /status?code=C an answer with that status and a short body

argv: [port] [name] [keep-alive seconds]
"""
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

NAME = sys.argv[2] if len(sys.argv) > 2 else "app"
KEEP = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Like gunicorn's keepalive: an idle kept connection is closed after this.
    timeout = KEEP

    def log_message(self, *args):
        pass

    def end_headers(self):
        # Which backend answered, on every answer (balancing tests).
        self.send_header("X-Backend", NAME)
        super().end_headers()

    def q(self, key, default):
        v = parse_qs(urlsplit(self.path).query).get(key)
        return v[0] if v else default

    def body(self):
        n = self.headers.get("Content-Length")
        if n is not None:
            return self.rfile.read(int(n))
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def send(self, code, body, ctype="text/plain", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        path = urlsplit(self.path).path
        if path.startswith("/echo"):
            body = self.body()
            lines = [f"method={self.command}", f"target={self.path}"]
            for k, v in self.headers.items():
                lines.append(f"h:{k.lower()}={v}")
            lines.append(f"body-length={len(body)}")
            out = ("\n".join(lines) + "\n").encode() + b"body=" + body
            return self.send(200, out)
        if path == "/conn":
            return self.send(200, str(self.client_address[1]).encode())
        if path == "/name":
            return self.send(200, NAME.encode())
        if path == "/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (b"one,", b"two,", b"three"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return
        if path == "/close":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"until the end")
            self.close_connection = True
            return
        if path == "/sse":
            n = int(self.q("n", "3"))
            ms = int(self.q("ms", "200"))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            for i in range(n):
                ev = f"data: {i} {time.time():.6f}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
                time.sleep(ms / 1000)
            self.wfile.write(b"0\r\n\r\n")
            return
        if path == "/big":
            mb = int(self.q("mb", "1"))
            piece = bytes(range(256)) * 256
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(mb * 16 * len(piece)))
            self.end_headers()
            for _ in range(mb * 16):
                self.wfile.write(piece)
            return
        if path == "/slow":
            time.sleep(float(self.q("s", "1")))
            return self.send(200, b"slow")
        if path == "/status":
            code = int(self.q("code", "200"))
            return self.send(code, b"status %d" % code)
        return self.send(404, b"not here")

    do_HEAD = do_GET
    do_POST = do_GET
    do_PUT = do_GET
    do_DELETE = do_GET


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
srv = Server(("127.0.0.1", port), Handler)
print("ready", srv.server_address[1], flush=True)
srv.serve_forever()

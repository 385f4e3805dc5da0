"""An SCGI application on the scgi package (the stack of seed 000), for glint's tests.

usage: scgi_app.py tcp [--mute]         -> listens on 127.0.0.1, a free port
       scgi_app.py unix PATH [--mute]   -> listens on a unix socket
Prints "ready PORT-or-PATH" once listening. Most paths echo the environment
as NAME=value lines; /redirect?TARGET answers a bare "Location: TARGET",
/redirect-302?TARGET the same with "Status: 302", /loop redirects to itself,
/text?N streams N bytes of numbered text lines ("line 00000000 of a streamed
answer\n", ...) in 16 KiB pieces with ETag "gw1" (for compression).
With --mute it reads each request whole and closes the connection without
answering (a backend that breaks before answering). SCGI_APP_LOG names a
file that gets one line per request (see below).

Each request is logged as "start PATH" when it arrives and "PATH BYTES"
once its body was read. The body is read in pieces and hashed as it comes
(BODY-LEN, BODY-MD5), so a test can send hundreds of megabytes.
"""
import hashlib
import os
import socket
import sys
import time

from scgi import scgi_server


# Which listener this process is (its port or socket path), for the balancing tests.
WHERE = ""
MUTE = "--mute" in sys.argv


def read_body(input, bodysize, pause=0.0):
    """Reads up to bodysize bytes in 64 KiB pieces (fewer if the peer
    closes first), sleeping `pause` seconds after each piece."""
    md5 = hashlib.md5()
    n = 0
    while n < bodysize:
        piece = input.read(min(65536, bodysize - n))
        if not piece:
            break
        md5.update(piece)
        n += len(piece)
        if pause:
            time.sleep(pause)
    return n, md5.hexdigest()


def log(line):
    """Which requests reached the application, and how much of their
    bodies, for the tests."""
    if os.environ.get("SCGI_APP_LOG"):
        with open(os.environ["SCGI_APP_LOG"], "a") as f:
            f.write(line + "\n")


class Handler(scgi_server.SCGIHandler):
    def produce(self, env, bodysize, input, output):
        path = env.get("PATH_INFO", "")
        query = env.get("QUERY_STRING", "")
        log("start " + path)
        if path == "/early":
            # Refuses the upload without reading it, as an application
            # checking a quota would, and closes.
            output.write(b"Status: 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nearly")
            return
        if path == "/early-redirect":
            # A local redirect before reading the body it was sent.
            output.write(("Location: %s\r\n\r\n" % query).encode())
            return
        if path == "/noread":
            # Takes nothing for a while: glint must stop at its window.
            time.sleep(float(query or "3"))
        pause = float(query or "0.01") if path == "/slowread" else 0.0
        got, md5 = read_body(input, bodysize, pause)
        log("%s %d" % (path, got))
        if MUTE or got < bodysize:
            # Muted, or the client left mid-body: no answer.
            return
        if path == "/die":
            # Promise 100 bytes, send 7, die: the client must be able to tell.
            output.write(b"Status: 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\npartial")
            output.flush()
            os._exit(1)
        if path == "/xsend":
            # Let the web server send a file: X-Sendfile with its path.
            target = env.get("QUERY_STRING", "")
            output.write(("Status: 200 OK\r\nContent-Type: text/plain\r\nX-Sendfile: %s\r\n\r\nignored body" % target).encode())
            return
        if path == "/xsend-late":
            # The X-Sendfile head now, the body 0.3 s later.
            target = env.get("QUERY_STRING", "")
            output.write(("Status: 200 OK\r\nX-Sendfile: %s\r\n\r\n" % target).encode())
            output.flush()
            time.sleep(0.3)
            output.write(b"late body")
            return
        if path == "/redirect":
            # A local redirect (RFC 3875 6.2.2): a path in Location, no Status, no body.
            output.write(("Location: %s\r\n\r\n" % env.get("QUERY_STRING", "/")).encode())
            return
        if path == "/redirect-302":
            # The same Location with a Status: a redirect for the client.
            output.write(("Status: 302 Found\r\nLocation: %s\r\n\r\n" % env.get("QUERY_STRING", "/")).encode())
            return
        if path == "/loop":
            # A local redirect to itself, for ever.
            output.write(b"Location: /app/loop\r\n\r\n")
            return
        if path in ("/chunked", "/chunked-cut"):
            # The body chunk-encoded by the application itself, as Quixote does;
            # none for HEAD; /chunked-cut stops before the last chunk.
            output.write(b"Status: 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
            if env.get("REQUEST_METHOD") != "HEAD":
                output.write(b"5\r\nhello\r\n")
                if path == "/chunked":
                    output.write(b"6\r\n world\r\n0\r\n\r\n")
            return
        if path == "/text":
            n = int(query or "1000000")
            output.write(b"Status: 200 OK\r\nContent-Type: text/plain\r\nETag: \"gw1\"\r\n\r\n")
            if env.get("REQUEST_METHOD") == "HEAD":
                return
            text = bytearray()
            i = 0
            while len(text) < n:
                text += b"line %08d of a streamed answer\n" % i
                i += 1
            for at in range(0, n, 16384):
                output.write(bytes(text[at : min(n, at + 16384)]))
                output.flush()
            return
        if path == "/slow":
            time.sleep(float(env.get("QUERY_STRING") or "3"))
        if path == "/big":
            n = int(env.get("QUERY_STRING") or "1000000")
            output.write(b"Status: 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
            chunk = bytes(range(256)) * 256
            while n > 0:
                output.write(chunk[: min(n, len(chunk))])
                n -= len(chunk)
            return
        lines = ["%s=%s" % (k, env[k]) for k in sorted(env)]
        lines.append("BACKEND=%s" % WHERE)
        lines.append("BODY-LEN=%d" % got)
        lines.append("BODY-MD5=%s" % md5)
        out = ("\n".join(lines) + "\n").encode()
        output.write(b"Status: 200 OK\r\nContent-Type: text/plain\r\nX-Backend: scgi\r\n\r\n" + out)


def main():
    if sys.argv[1] == "tcp":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        where = str(s.getsockname()[1])
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(sys.argv[2])
        where = sys.argv[2]
    s.listen(64)
    global WHERE
    WHERE = where
    print("ready", where, flush=True)
    scgi_server.SCGIServer(Handler, max_children=4).serve_on_socket(s)


main()

"""A WSGI application served over FastCGI by flup (the stack of seed 002), for glint's tests.

usage: fcgi_app.py PATH   -> listens on a unix socket
"""
import hashlib
import sys
import time

from flup.server.fcgi import WSGIServer


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path == "/stream":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return (("line %d\n" % i).encode() for i in range(1000))
    if path == "/missing":
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no such thing\n"]
    if path == "/slow":
        time.sleep(float(environ.get("QUERY_STRING") or "3"))
    n = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(n) if n else b""
    keys = sorted(k for k in environ if k.isupper())
    lines = ["%s=%s" % (k, environ[k]) for k in keys]
    lines.append("BODY-LEN=%d" % len(body))
    lines.append("BODY-MD5=%s" % hashlib.md5(body).hexdigest())
    out = ("\n".join(lines) + "\n").encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(out)))])
    return [out]


WSGIServer(app, bindAddress=sys.argv[1]).run()

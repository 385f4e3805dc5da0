"""The WSGI application of glint's gateway tests, shared by two servers:
flup over FastCGI (fcgi_app.py, seed 002's stack) and uWSGI over its own
protocol (`uwsgi --wsgi-file wsgi_app.py`). Standard library only: uWSGI
runs it on Debian's python3, not on the interpreter that has flup.

  /stream      1000 lines from a generator, no Content-Length
  /big?N       N bytes (the 0..255 pattern), streamed, no Content-Length
  /missing     404 from the application
  /slow?S      sleeps S seconds, then the dump below
  /status?N    status N with a body of its own, an X-Backend header and,
               for 401, a WWW-Authenticate challenge
  anything     the CGI variables, the body's length and MD5, with Content-Length
"""
import hashlib
import time


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path == "/stream":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return (("line %d\n" % i).encode() for i in range(1000))
    if path == "/big":
        n = int(environ.get("QUERY_STRING") or "1000000")
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return _pattern(n)
    if path == "/missing":
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no such thing\n"]
    if path == "/status":
        code = int(environ.get("QUERY_STRING") or "500")
        headers = [("Content-Type", "text/plain"), ("X-Backend", "yes")]
        if code == 401:
            headers.append(("WWW-Authenticate", 'Basic realm="app"'))
        body = ("status %d from the app\n" % code).encode()
        headers.append(("Content-Length", str(len(body))))
        start_response("%d Whatever" % code, headers)
        return [body]
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


def _pattern(n):
    chunk = bytes(range(256)) * 256
    while n > 0:
        yield chunk[: min(n, len(chunk))]
        n -= len(chunk)


# uWSGI looks for `application` by default.
application = app

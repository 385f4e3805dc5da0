"""A FastCGI authorizer (the Authorizer role, FastCGI spec 6.3) on flup, for glint's tests.

usage: fcgi_authorizer.py PATH   -> listens on a unix socket

It takes the Authorizer role only: a request sent in another role gets
FCGI_UNKNOWN_ROLE from flup. It allows requests with "X-Token: good" (200,
with Variable- headers, a header and a body the server must drop), refuses
paths containing /forbidden with 403 and everything else with 401. A
refusal's body ends with what the authorizer saw of the request.
"""
import sys

from flup.server.fcgi import WSGIServer
from flup.server.fcgi_base import FCGI_AUTHORIZER


def app(environ, start_response):
    path = environ.get("REQUEST_URI", "").split("?")[0]
    if "/forbidden" not in path and environ.get("HTTP_X_TOKEN") == "good":
        start_response(
            "200 OK",
            [
                ("Variable-AUTH_USER", "alice"),
                ("Variable-auth-method", "token"),
                ("X-Leak", "authorizer header"),
                ("Content-Type", "text/plain"),
            ],
        )
        return [b"authorizer body, never shown\n"]
    if "/forbidden" in path:
        status, text = "403 Forbidden", "forbidden by the authorizer\n"
    else:
        status, text = "401 Unauthorized", "denied by the authorizer\n"
    # flup puts SCRIPT_NAME = "" in when the server sent none.
    for k in ("REQUEST_METHOD", "REQUEST_URI", "SCRIPT_NAME", "SCRIPT_FILENAME"):
        text += "%s=%s\n" % (k, environ.get(k, "(none)"))
    text += "CONTENT_LENGTH=%s\n" % environ.get("CONTENT_LENGTH", "(none)")
    out = text.encode()
    start_response(
        status,
        [
            ("Content-Type", "text/plain"),
            ("WWW-Authenticate", 'Token realm="glint-test"'),
            ("Content-Length", str(len(out))),
        ],
    )
    return [out]


WSGIServer(app, bindAddress=sys.argv[1], roles=(FCGI_AUTHORIZER,)).run()

"""A WSGI application under waitress (a production WSGI server): answers
"METHOD PATH BODY". Prints "ready PORT"."""
import socket

from waitress.server import create_server


def app(environ, start_response):
    n = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(n).decode()
    out = f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']} {body}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(out)))])
    return [out]


server = create_server(app, host="127.0.0.1", port=0, threads=4)
print("ready", server.effective_port, flush=True)
server.run()

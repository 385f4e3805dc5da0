"""The WSGI application of wsgi_app.py served over FastCGI by flup (the
stack of seed 002), for glint's tests. Each request's environment also
names the FastCGI connection it came on: FCGI_CONN, the socket's inode.

usage: fcgi_app.py PATH   -> listens on a unix socket
"""
import os
import sys

from flup.server.fcgi import WSGIServer

from wsgi_app import app


class Server(WSGIServer):
    def handler(self, req):
        req.params["FCGI_CONN"] = str(os.fstat(req._conn._sock.fileno()).st_ino)
        return WSGIServer.handler(self, req)


Server(app, bindAddress=sys.argv[1]).run()

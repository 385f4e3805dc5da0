"""The WSGI application of wsgi_app.py served over FastCGI by flup (the
stack of seed 002), for glint's tests.

usage: fcgi_app.py PATH   -> listens on a unix socket
"""
import sys

from flup.server.fcgi import WSGIServer

from wsgi_app import app

WSGIServer(app, bindAddress=sys.argv[1]).run()

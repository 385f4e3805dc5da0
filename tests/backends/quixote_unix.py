"""Quixote's demo (quixote.demo.create_publisher) over SCGI on a unix
socket, as seed 000's runscgi.py --socketfile served it: quixote's own
`python3 -m quixote.server.scgi_server` listens on TCP only. Same handler
and server classes, another listening socket.

usage: quixote_unix.py PATH SCRIPT_NAME
Prints "ready PATH" once listening.
"""
import socket
import sys

from scgi import scgi_server
from quixote.demo import create_publisher
from quixote.server.scgi_server import QuixoteHandler


def main():
    path, script_name = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(64)
    print("ready", path, flush=True)

    def handler(parent_fd):
        return QuixoteHandler(parent_fd, create_publisher, script_name)

    scgi_server.SCGIServer(handler, max_children=5).serve_on_socket(s)


main()

"""KaTeX's render server starts reliably on a busy machine.

sphinxcontrib-katex 0.9.11 pre-renders the maths through one Node.js process
(``katex-server.js``) that listens on a Unix socket. Its
``KaTeXServer.start_server_process`` waits until the socket file exists and
then connects once. Node creates the file when it binds the socket and only
then starts listening, so a connect that lands between the two is refused:
on a machine busy with other work this happened to 9 of 100 starts (measured
with two busy processes on two cores), and one such refusal ended a CI build
of the site (``ConnectionRefusedError`` while writing ``causal_mask``).

The start below is the library's own, except that a refused connection is
tried again, within the library's start-up timeout, as its network-socket
start (used on Windows) already does. ``tests/test_katex_start.py`` starts it
against a server that binds first and listens later.
"""

from __future__ import annotations

import socket
import time
from subprocess import PIPE, Popen

from sphinxcontrib import katex

RETRY_S = 0.001


def start_server_process(cls, rundir, timeout):
    """Start the render server and connect once it listens."""
    socket_path = rundir / "katex.sock"
    process = Popen(cls.build_command(socket=socket_path), stdin=PIPE, stdout=PIPE, cwd=rundir)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if socket_path.is_socket():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(max(deadline - time.monotonic(), RETRY_S))
                sock.connect(str(socket_path))
            except ConnectionRefusedError:
                sock.close()  # bound but not yet listening
            except socket.timeout:
                sock.close()
                break
            else:
                sock.settimeout(None)
                return process, sock
        time.sleep(RETRY_S)
    process.kill()
    raise cls.timeout_error(timeout)


def setup(app):
    katex.KaTeXServer.start_server_process = classmethod(start_server_process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

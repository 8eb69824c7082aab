"""The site's maths server starts even when it listens late (_ext/pyxis_katex.py).

Node binds the KaTeX server's Unix socket (the file appears) a moment before
it listens; sphinxcontrib-katex connects as soon as the file appears, and a
busy machine's CI build was refused there. A stand-in server that binds, waits
0.3 s and only then listens makes that moment long enough to hit every time:
the library's own start is refused, the site's start connects."""

import importlib.util
import sys
import tempfile
from pathlib import Path

import pytest

katex = pytest.importorskip("sphinxcontrib.katex")

EXT = Path(__file__).resolve().parent.parent / "_ext" / "pyxis_katex.py"

LATE_LISTENER = """
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
time.sleep(0.3)
s.listen(1)
s.settimeout(5)  # gone by itself, connected to or not
try:
    conn, _ = s.accept()
    conn.recv(1)
except OSError:
    pass
"""


def _site_start():
    spec = importlib.util.spec_from_file_location("pyxis_katex", EXT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.start_server_process


class LateServer(katex.KaTeXServer):
    """The library's server class, whose process binds first and listens later."""

    @classmethod
    def build_command(cls, socket=None, port=None):
        return [sys.executable, "-c", LATE_LISTENER, str(socket)]


def _start(start, timeout=10.0):
    rundir = Path(tempfile.mkdtemp(prefix="pyxis_katex_test"))
    return start(LateServer, rundir, timeout)


def test_library_start_is_refused_while_the_server_binds_but_does_not_listen():
    with pytest.raises(ConnectionRefusedError):
        _start(katex.KaTeXServer.start_server_process.__func__)


def test_site_start_connects_once_the_server_listens():
    process, sock = _start(_site_start())
    try:
        assert sock.gettimeout() is None  # blocking, as the library's renderer reads it
        assert sock.getpeername()  # connected to the socket file
    finally:
        sock.close()
        process.kill()
        process.wait()


def test_site_start_gives_up_at_the_timeout_with_the_library_error():
    with pytest.raises(katex.KaTeXError, match="did not came up after 0.1 seconds"):
        _start(_site_start(), timeout=0.1)

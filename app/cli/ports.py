"""Whether ``contextsynth serve`` can have its address, asked before uvicorn starts.

uvicorn reports a taken port as ``[Errno 98] ... address already in use`` in a log line,
after the app has been imported; a new user then has to know that ``--port`` or
CONTEXTSYNTH_PORT is the way out.
"""

from __future__ import annotations

import errno
import socket


def in_use(host: str, port: int) -> bool:
    """True when another socket listens on ``host:port``. Bound as uvicorn binds
    (SO_REUSEADDR), so a port left in TIME_WAIT by a server that just stopped counts as
    free, as it is for uvicorn. An address that does not resolve is left to uvicorn."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError):
        return False
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def in_use_hint(host: str, port: int) -> str:
    """One line: what is wrong and the two ways to choose another port."""
    other = port + 1 if port < 65535 else port - 1
    return (f"contextsynth serve: port {port} on {host} is already in use (another "
            f"contextsynth serve?). Stop what listens there, or choose another port: "
            f"--port {other} or CONTEXTSYNTH_PORT={other} (scripts/serve.sh takes either).")

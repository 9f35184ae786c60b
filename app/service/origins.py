"""Which browser origins may call ``/mcp``.

MCP's streamable HTTP transport asks a server to refuse a request whose ``Origin`` is
present and not allowed (403): without the check, a web page the user opens can drive
a service on their machine or network (DNS rebinding makes any name point at it). A
request without ``Origin`` is not a browser's cross-origin call and passes. Allowed
besides: a page on this machine (localhost, 127.0.0.1, [::1], any port, as local MCP
inspectors and IDEs serve theirs), and the origins the operator lists in
``mcp_allowed_origins``. A page on the service's own host is not allowed by that alone:
a rebound name is the service's own host, as the browser sees it.
"""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import urlsplit

from app.engine.errors import ContextsynthError

# Hosts as ``urlsplit`` reads them (lower case, an IPv6 address without its brackets).
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_SCHEMES = frozenset({"http", "https"})


class OriginNotAllowed(ContextsynthError):
    slug = "origin-not-allowed"
    title = "The request's Origin may not call this endpoint"


def _parts(origin: str) -> tuple[str, str, int | None] | None:
    """scheme, host and port of an origin (``scheme://host[:port]``, nothing more), or
    None when it is not one."""
    try:
        split = urlsplit(origin.strip())
        port = split.port
    except ValueError:  # a port that is no number, an unclosed IPv6 bracket
        return None
    host = split.hostname
    if (split.scheme.lower() not in _SCHEMES or not host or split.username is not None
            or split.password is not None or split.path not in ("", "/")
            or split.query or split.fragment):
        return None
    return split.scheme.lower(), host, port


def normalized(origin: str) -> str:
    """An origin as this module compares it (ValueError when it is not one): scheme and
    host in lower case, no trailing slash."""
    parts = _parts(origin)
    if parts is None:
        raise ValueError(f"{origin!r} is not an origin: write scheme://host[:port], as a "
                         "browser sends it (for example https://app.example.com).")
    scheme, host, port = parts
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + (f":{port}" if port is not None else "")


def check_origin(origin: str | None, allowed: Collection[str]) -> None:
    """Raise ``OriginNotAllowed`` unless ``origin`` (the header; None when absent) may
    call; ``allowed``: the operator's origins, normalized."""
    if origin is None:
        return
    parts = _parts(origin)
    if parts is not None and (parts[1] in _LOOPBACK or normalized(origin) in allowed):
        return
    raise OriginNotAllowed(
        f"requests from the web origin {origin[:200]!r} may not call this endpoint. An "
        "operator who serves a trusted web client from it adds the origin to "
        "CONTEXTSYNTH_MCP_ALLOWED_ORIGINS; other clients send no Origin header.")

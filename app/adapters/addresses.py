"""Which network addresses a webhook may reach: public ones only, unless the operator
allows private ones.

A guard that compares host names as text is easy to walk around: ``127.1``,
``2130706433``, ``0x7f000001`` and ``0177.0.0.1`` are all the loopback address to
the system's resolver, ``[::ffff:127.0.0.1]`` is too, and a public name can resolve to
a private address (or start to, after the check). So a host is read the way the
resolver reads it, every address a name resolves to is checked, and names are
resolved again at each delivery, not once at start-up.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# A resolver: a host name and a port to the addresses they reach.
Resolve = Callable[[str, int], Awaitable[Sequence[str]]]


class PrivateAddress(ValueError):
    """The URL reaches an address inside the operator's network."""


def literal(host: str) -> Address | None:
    """The address a host written as a number means, in any spelling the resolver
    accepts (dotted with fewer parts, one decimal integer, hex, octal, IPv6), else None
    for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    try:
        # inet_aton is the resolver's own reading of IPv4 numbers, shortened forms and
        # hex and octal parts included; it refuses names.
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def is_inside(address: Address) -> bool:
    """Loopback, private, link-local, shared, reserved, unspecified or multicast: any
    address that is not a public unicast one. An IPv4 address inside IPv6 is read as
    IPv4."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
        if inner is not None:
            address = inner
    return not address.is_global or address.is_multicast


def check_url(url: str, *, allow_private: bool) -> None:
    """At start-up: the URL is absolute http(s), and unless private addresses are allowed,
    its host is neither a number inside the network nor a name for the local host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"webhook URL {url!r} must be an absolute http(s) URL")
    if allow_private:
        return
    host = parts.hostname
    found = literal(host)
    inside = is_inside(found) if found is not None else \
        host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost")
    if inside:
        raise PrivateAddress(f"webhook URL {url!r} points at a private address; set "
                             "CONTEXTSYNTH_WEBHOOKS_ALLOW_PRIVATE=true to allow it")


async def system_resolve(host: str, port: int) -> Sequence[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port,
                                                         type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def check_resolved(url: str, resolve: Resolve) -> None:
    """At delivery: every address the URL's host resolves to now is public. A name that
    resolves to nothing is left to the HTTP client, which reports it as unreachable."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if literal(host) is not None:
        return  # a number: check_url read it at start-up
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = await resolve(host, port)
    except OSError:
        return
    for text in found:
        address = literal(text.partition("%")[0])  # an IPv6 scope id is not part of it
        if address is None or is_inside(address):
            raise PrivateAddress(f"{host} resolves to {text}, a private address")

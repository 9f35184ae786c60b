"""Which network addresses a webhook may reach: public ones only, unless the operator
allows private ones.

A guard that compares host names as text is easy to walk around: ``127.1``,
``2130706433``, ``0x7f000001`` and ``0177.0.0.1`` are all the loopback address to
the system's resolver, ``[::ffff:127.0.0.1]``, ``[::127.0.0.1]`` and
``[64:ff9b::127.0.0.1]`` carry it inside IPv6, the HTTP client folds Unicode digits
(``\U0001fbf127.0.0.1``) into ASCII ones before it connects, and a public name can
resolve to a private address (or start to, after the check). So a host is read the
way the HTTP client reads it, then the way the resolver reads that; every address a
name resolves to is checked; a name that resolves to nothing is refused; and the
connection goes to the addresses that were checked, by a resolver of the client's own
that does the one lookup (no second lookup that a rebinding name could answer
differently). Names are resolved again at each delivery, not once at start-up.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# A resolver: a host name and a port to the addresses they reach.
Resolve = Callable[[str, int], Awaitable[Sequence[str]]]


# NAT64 prefixes (RFC 6052, RFC 8215): the last 32 bits are an IPv4 address that a
# translator on the path reaches on the sender's behalf.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
# IPv4-compatible addresses (deprecated, RFC 4291 2.5.5.1): ::a.b.c.d.
_COMPATIBLE = ipaddress.IPv6Network("::/96")


class PrivateAddress(ValueError):
    """The URL reaches an address inside the operator's network."""


class RefusedHost(OSError):
    """Raised inside the HTTP client's connector, which reports resolver failures only
    when they are OSErrors: the host is refused (inside, or it does not resolve)."""


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
        if address in _NAT64_LOCAL:
            return True  # a translator of the operator's own network
        inner = address.ipv4_mapped or address.sixtofour or _embedded(address)
        if inner is not None:
            address = inner
    return not address.is_global or address.is_multicast


def _embedded(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address in _NAT64 or (address in _COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def client_host(url: str) -> str | None:
    """The host as the HTTP client will connect to it: IDNA-encoded, with Unicode digits
    and full-width dots folded to ASCII, brackets of an IPv6 literal removed."""
    try:
        return URL(url).raw_host
    except (ValueError, UnicodeError):
        return None


def check_url(url: str, *, allow_private: bool) -> None:
    """At start-up: the URL is absolute http(s), and unless private addresses are allowed,
    its host is neither a number inside the network nor a name for the local host."""
    parts = urlsplit(url)
    host = client_host(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or not host:
        raise ValueError(f"webhook URL {url!r} must be an absolute http(s) URL")
    if allow_private:
        return
    if is_inside_host(host):
        raise PrivateAddress(f"webhook URL {url!r} points at a private address; set "
                             "CONTEXTSYNTH_WEBHOOKS_ALLOW_PRIVATE=true to allow it")


def is_inside_host(host: str) -> bool:
    """A host (as the client reads it) that is an inside address written as a number,
    or a name for the local host."""
    found = literal(host)
    if found is not None:
        return is_inside(found)
    name = host.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


async def system_resolve(host: str, port: int) -> Sequence[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port,
                                                         type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class GuardedResolver(AbstractResolver):
    """The webhook client's resolver: one lookup per connection, every address it gives
    checked, and only checked addresses handed to the connector. A name that resolves to
    nothing is refused rather than left to another resolver."""

    def __init__(self, resolve: Resolve,
                 inside: Callable[[Address], bool] = is_inside) -> None:
        self._resolve = resolve
        self._inside = inside  # passed in by tests that must reach a loopback receiver

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        if is_inside_host(host) and literal(host) is None:
            raise RefusedHost(f"{host} names the local host")
        try:
            found = await self._resolve(host, port)
        except OSError as exc:
            raise RefusedHost(f"{host} does not resolve ({exc})") from exc
        if not found:
            raise RefusedHost(f"{host} does not resolve")
        results: list[ResolveResult] = []
        for text in found:
            address = literal(text.partition("%")[0])  # an IPv6 scope id is not part of it
            if address is None or self._inside(address):
                raise RefusedHost(f"{host} resolves to {text}, a private address")
            results.append(ResolveResult(
                hostname=host, host=str(address), port=port,
                family=socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                proto=0, flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV))
        return results

    async def close(self) -> None:
        return None


def delivery_connector(resolve: Resolve | None) -> aiohttp.TCPConnector:
    """The connector webhook deliveries use: with a resolver, only public addresses are
    reached (no cache of lookups: each connection checks where the name points now)."""
    if resolve is None:
        return aiohttp.TCPConnector(limit=0)
    return aiohttp.TCPConnector(limit=0, resolver=GuardedResolver(resolve),
                                use_dns_cache=False)


def refused_literal(url: str) -> str | None:
    """At delivery, for a host written as a number (which the client connects to without
    a lookup): why it is refused, or None."""
    host = client_host(url)
    if host is None:
        return f"{url!r} has no host the client can read"
    found = literal(host)
    if found is not None and is_inside(found):
        return f"{host} is a private address"
    return None

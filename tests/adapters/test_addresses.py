"""Webhooks reach public addresses only, however the address is spelled or resolved."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Sequence

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from app.adapters.addresses import (
    Address,
    GuardedResolver,
    PrivateAddress,
    check_url,
    is_inside,
    system_resolve,
)
from app.adapters.events import Deliverer, Subscription, WebhookConfig
from app.adapters.metrics import Metrics
from app.adapters.outbox import Entry, MemoryOutbox
from tests.support.receiver import SECRET, Receiver

pytestmark = pytest.mark.anyio

INSIDE = ["http://127.0.0.1:9/x", "http://127.1/x", "http://2130706433/x",
          "http://0x7f000001/x", "http://0177.0.0.1/x", "http://10.1.2.3/x",
          "http://169.254.169.254/latest", "http://[::1]/x", "http://[::ffff:127.0.0.1]/x",
          "http://[::ffff:a9fe:a9fe]/x", "http://[fd00::1]/x", "http://0.0.0.0/x",
          "http://100.64.0.1/x", "http://localhost/x", "http://api.localhost./x",
          "http://LOCALHOST/x", "http://192.168.1.1:8080/hook",
          # Unicode digits the HTTP client folds to ASCII before it connects.
          "http://\U0001fbf127.0.0.1:9/hook", "http://12\U0001fbf7.0.0.1/x",
          "http://\U0001ccf127.0.0.1/x", "http://\U0001fbf1\U0001fbf69.254.169.254/latest",
          "http://\uff11\uff12\uff17\uff0e0\uff0e0\uff0e1/x",
          # IPv4 inside IPv6: compatible, NAT64 and local-use NAT64.
          "http://[::127.0.0.1]/x", "http://[64:ff9b::127.0.0.1]/x",
          "http://[64:ff9b::a9fe:a9fe]/x", "http://[64:ff9b:1::808:808]/x"]


@pytest.mark.parametrize("url", INSIDE)
def test_every_spelling_of_an_inside_address_is_refused(url):
    with pytest.raises(PrivateAddress, match="private address"):
        check_url(url, allow_private=False)
    check_url(url, allow_private=True)  # the operator may allow them


@pytest.mark.parametrize("url", ["https://hooks.example.com/x", "http://8.8.8.8/x",
                                 "http://[2001:4860:4860::8888]/x", "https://1.1.1.1:8443/"])
def test_public_addresses_and_names_pass(url):
    check_url(url, allow_private=False)


@pytest.mark.parametrize("url", ["ftp://example.com/x", "/relative", "http:///x"])
def test_a_url_must_be_absolute_http(url):
    with pytest.raises(ValueError, match="absolute http"):
        check_url(url, allow_private=False)


def _deliverer(outbox: MemoryOutbox, url: str) -> Deliverer:
    subscription = Subscription(WebhookConfig(url=url, secret=SECRET))
    return Deliverer([subscription], outbox, Metrics(CollectorRegistry()), public_only=True)


def _resolver(answers: dict[str, list[str]]) -> Callable[[str, int], Awaitable[Sequence[str]]]:
    calls: list[str] = []

    async def resolve(host: str, port: int) -> Sequence[str]:
        calls.append(host)
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return answers[host]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


ENTRY = Entry('{"id":"msg_1"}', "msg_1", "context.synthesized", 0)


async def _attempt(url: str, resolve: Callable[[str, int], Awaitable[Sequence[str]]],
                   inside: Callable[[Address], bool] = is_inside) -> tuple[bool, MemoryOutbox]:
    outbox = MemoryOutbox()
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(resolve, inside),
                                     use_dns_cache=False)
    async with aiohttp.ClientSession(connector=connector) as http:
        return await _deliverer(outbox, url).deliver(http, ENTRY), outbox


async def test_a_name_that_resolves_inside_is_not_posted_to_at_delivery():
    with Receiver() as receiver:
        # The name the endpoint is reached by; what it resolves to is the resolver's say.
        url = receiver.url.replace("127.0.0.1", "hooks.example.test")
        finished, outbox = await _attempt(url, _resolver(
            {"hooks.example.test": ["93.184.216.34", "127.0.0.1"]}))
        assert not finished and receiver.attempts == 0
        assert await outbox.depth() == 1  # kept for a retry, as any failed attempt


async def test_the_connection_goes_to_the_address_that_was_checked():
    # The system's resolver knows no such name: the receiver is reached only through the
    # address the guard looked up and passed, with no second lookup.
    with Receiver() as receiver:
        url = receiver.url.replace("127.0.0.1", "hooks.example.test")
        resolve = _resolver({"hooks.example.test": ["127.0.0.1"]})
        finished, _ = await _attempt(url, resolve, inside=lambda address: False)
        assert finished
        assert receiver.attempts == 1 and receiver.headers[0]["webhook-id"] == "msg_1"
        assert resolve.calls == ["hooks.example.test"]  # type: ignore[attr-defined]


async def test_a_name_that_does_not_resolve_is_refused_not_left_to_the_client():
    with Receiver() as receiver:
        url = receiver.url.replace("127.0.0.1", "hooks.example.test")
        finished, outbox = await _attempt(url, _resolver({}))
        assert not finished and receiver.attempts == 0 and await outbox.depth() == 1


@pytest.mark.parametrize("spelling", ["\U0001fbf127.0.0.1", "12\U0001fbf7.0.0.1",
                                      "\U0001ccf127.0.0.1", "[::ffff:127.0.0.1]",
                                      "127.1", "2130706433"])
async def test_a_spelled_out_loopback_address_is_never_posted_to(spelling):
    # What the start-up check would refuse is refused at delivery too, with the system's
    # own resolver, whatever the configuration let through.
    with Receiver() as receiver:
        url = receiver.url.replace("127.0.0.1", spelling)
        finished, outbox = await _attempt(url, system_resolve)
        assert not finished and receiver.attempts == 0 and await outbox.depth() == 1


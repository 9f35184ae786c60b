"""Webhooks reach public addresses only, however the address is spelled or resolved."""

from __future__ import annotations

from collections.abc import Sequence

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from app.adapters.addresses import PrivateAddress, check_url
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
          "http://LOCALHOST/x", "http://192.168.1.1:8080/hook"]


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


def _deliverer(resolved: dict[str, list[str]], outbox: MemoryOutbox, url: str) -> Deliverer:
    async def resolve(host: str, port: int) -> Sequence[str]:
        return resolved[host]

    subscription = Subscription(WebhookConfig(url=url, secret=SECRET))
    return Deliverer([subscription], outbox, Metrics(CollectorRegistry()), resolve=resolve)


async def test_a_name_that_resolves_inside_is_not_posted_to_at_delivery():
    outbox = MemoryOutbox()
    entry = Entry('{"id":"msg_1"}', "msg_1", "context.synthesized", 0)
    with Receiver() as receiver:
        # The name the endpoint is reached by; what it resolves to is the resolver's say.
        url = receiver.url.replace("127.0.0.1", "localhost")
        rebound = _deliverer({"localhost": ["93.184.216.34", "10.0.0.5"]}, outbox, url)
        async with aiohttp.ClientSession() as http:
            assert not await rebound.deliver(http, entry)
            assert receiver.attempts == 0
            assert await outbox.depth() == 1  # kept for a retry, as any failed attempt
            public = _deliverer({"localhost": ["93.184.216.34"]}, outbox, url)
            assert await public.deliver(http, entry)
    assert receiver.attempts == 1 and receiver.headers[0]["webhook-id"] == "msg_1"


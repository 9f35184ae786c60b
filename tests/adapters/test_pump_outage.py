"""An outbox outage is logged once, however many requests were waiting on it when it
failed, and once again for the next outage after it came back; after an outage, a
request's event is in the outbox before the request answers."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from app.adapters.events import Backlog, Deliverer, Subscription, WebhookConfig
from app.adapters.metrics import Metrics
from app.adapters.outbox import Entry
from app.adapters.pump import Pump

pytestmark = pytest.mark.anyio


class GatedOutbox:
    """Holds every put until the test opens the gate; then fails them all, or takes them."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.waiting = 0
        self.down = True
        self.losses = 0
        self.taken: list[Entry] = []

    async def put(self, entry: Entry) -> bool:
        self.waiting += 1
        await self.gate.wait()
        if self.down:
            raise ConnectionError("outbox down")
        self.taken.append(entry)
        return True

    async def depth(self) -> int:
        return len(self.taken)


def _entry(n: int) -> Entry:
    return Entry("{}", f"evt_{n}", "context.synthesized", 0)


def _pump(outbox: Any, *, shared: bool, put_timeout_s: float) -> Pump:
    """A pump with one subscription over ``outbox``."""
    metrics = Metrics(CollectorRegistry())
    deliverer = Deliverer([Subscription(WebhookConfig(url="https://hooks.example.com/x",
                                                      secret="s" * 32))], outbox, metrics)
    return Pump(Backlog(1000, metrics), outbox, deliverer, metrics, subscriptions=1, width=1,
                pause_s=0.05, shared=shared, journal_entries=100,
                put_timeout_s=put_timeout_s)


async def test_an_outage_is_logged_once_not_once_per_waiting_request(caplog):
    outbox = GatedOutbox()
    pump = _pump(outbox, shared=False, put_timeout_s=60)
    caplog.set_level(logging.WARNING, logger="app.adapters.pump")

    def said(text: str) -> int:
        return sum(text in r.getMessage() for r in caplog.records)

    waiting = [asyncio.create_task(pump.accept(_entry(n))) for n in range(15)]
    while outbox.waiting < 15:  # every request is waiting on the outbox
        await asyncio.sleep(0)
    outbox.gate.set()  # and the outbox fails them all
    await asyncio.gather(*waiting)
    assert len(pump.backlog) == 15
    assert said("could not write events") == 1
    outbox.down = False
    assert await pump.flush() and len(outbox.taken) == 15
    assert said("writing events to the outbox again") == 1
    # The next outage is a new one: said once more.
    outbox.down, outbox.gate = True, asyncio.Event()
    outbox.gate.set()
    await asyncio.gather(*(pump.accept(_entry(n)) for n in range(15, 20)))
    assert said("could not write events") == 2


class FlakyTakeOutbox:
    """Takes fail while ``down``; puts always succeed, recorded as they land."""

    def __init__(self) -> None:
        self.down = False
        self.losses = 0
        self.put_ids: list[str] = []

    async def put(self, entry: Entry) -> bool:
        self.put_ids.append(entry.event_id)
        return True

    async def take(self, wait_s: float) -> list[Entry]:
        if self.down:
            raise ConnectionError("read timed out")
        return []

    async def depth(self) -> int:
        return 0


async def test_after_an_outage_a_new_event_does_not_wait_in_memory_behind_rewritten_ones():
    # A read that timed out is an outage: what was written just before it is written
    # again through the backlog. A request answering meanwhile must not leave its event
    # in memory behind those, where a killed process would lose it.
    outbox = FlakyTakeOutbox()
    pump = _pump(outbox, shared=True, put_timeout_s=1)
    for n in range(3):
        await pump.accept(_entry(n))
    outbox.down = True
    with pytest.raises(ConnectionError):
        await pump.dispatch(0)
    pump._outage()  # what the dispatch loop does with the error
    outbox.down = False
    await pump.dispatch(0)
    assert len(pump.backlog) == 3  # the three, to be written again
    await pump.accept(_entry(3))
    assert outbox.put_ids[-1] == "evt_3"  # in the outbox as the request answers
    assert await pump.flush() and outbox.put_ids[4:] == ["evt_0", "evt_1", "evt_2"]

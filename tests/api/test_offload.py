"""Large requests run the engine in a worker thread so the event loop keeps serving."""

import threading
from importlib.metadata import EntryPoint

import httpx
import pytest
from prometheus_client import CollectorRegistry

from app.adapters.plugins import GROUP
from app.main import create_app
from app.settings import Settings
from tests.support import plugin
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("offload_chars", "off_loop"), [(0, True), (10_000_000, False)])
async def test_engine_runs_off_the_event_loop_above_the_threshold(
        encoder, offload_chars, off_loop):
    recorder = plugin.RECORDER
    recorder.threads.clear()
    app = create_app(Settings(offload_chars=offload_chars), registry=CollectorRegistry(),
                     encoder=encoder, discover=lambda: [
                         EntryPoint("records-thread", "tests.support.plugin:RECORDER",
                                    GROUP)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        r = await c.post("/synthesize", json={"messages": coding_run(6), "reasoning": {
            "synthesis": "custom", "synthesis_strategy": "records-thread"}})
    assert r.status_code == 200, r.text
    loop_thread = threading.current_thread().name
    assert (recorder.threads[0] != loop_thread) is off_loop


def test_memory_and_reflection_jobs_are_measured_by_what_they_read(encoder):
    from app.engine.jobs.recall.answer import Memory
    from app.engine.jobs.recall.plan import RecallJob, RecallRequest
    from app.engine.jobs.reflect.plan import ReflectJob, ReflectJobRequest
    from app.engine.jobs.reflect.reflector import Call, PastIteration, Reflector
    from app.engine.reading.outcomes import Outcomes
    from app.engine.transcript.tokens import TokenCounter

    big = "x" * 2_000_000  # one memory, one output: each past the threshold alone
    recall = RecallRequest("Which seat?", (Memory("m1", big), Memory("m2", "aisle")))
    assert RecallJob(TokenCounter(encoder)).size(recall) == 11 + 2_000_000 + 5
    call = Call("bash", "ls", big)
    reflect = ReflectJobRequest("fix", (call,), (PastIteration("stuck", (call,)),))
    assert ReflectJob(Reflector(Outcomes())).size(reflect) == 3 + 2 * (4 + 2 + 2_000_000)

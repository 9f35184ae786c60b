"""The test suite's own guard: an in-process async test that would hang fails instead,
with the stack of what it waited on."""

import asyncio

import pytest

from tests.conftest import ASYNC_TEST_DEADLINE_S
from tests.support.deadline import deadline

pytestmark = pytest.mark.anyio


async def test_a_hang_fails_with_the_stack_of_what_it_waited_on(capsys):
    async def stuck_on_a_dead_peer() -> None:
        await asyncio.Event().wait()

    with pytest.raises(AssertionError, match=r"not done within 0\.2 s"):
        async with deadline(0.2):
            await stuck_on_a_dead_peer()
    assert "stuck_on_a_dead_peer" in capsys.readouterr().err


async def test_every_async_test_runs_under_the_deadline(request):
    # Collection wrapped this very test in the guard.
    assert request.node.obj.__wrapped__ is not request.node.obj
    assert asyncio.current_task().cancelling() == 0  # armed, not fired
    assert 60 <= ASYNC_TEST_DEADLINE_S <= 600

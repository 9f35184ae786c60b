from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import tiktoken
from fastapi import FastAPI
from hypothesis import settings
from prometheus_client import CollectorRegistry

from app.adapters.tokenizer import load_encoding, pretokenizer
from app.engine.compaction.strategies import builtin_strategies
from app.engine.jobs.synthesize.synthesizer import Synthesizer
from app.engine.transcript.formats import build_formats
from app.engine.transcript.tokens import TokenCounter
from app.main import create_app
from app.settings import Settings
from tests.support.deadline import deadline

ROOT = Path(__file__).resolve().parents[1]

# Property tests assert behaviour, not speed: on a shared machine a per-example
# deadline only makes them flaky.
settings.register_profile("contextsynth", deadline=None)
settings.load_profile("contextsynth")


# Tests by what they run, as cosmicpython splits them (``scripts/test.sh --fast`` runs
# the unit tests while working; CI runs all):
# - e2e: the service as a process, its image, its packages or a client generated from
#   its contract, over loopback;
# - integration: the app in process with its adapters (Redis, sockets, threads), or the
#   whole corpus replayed;
# - unit: the rest: the engine, adapters and services alone, fakes passed in.
E2E = ("tests/integration/", "tests/agents/", "tests/test_deploy.py", "tests/test_build.py",
       "tests/test_install.py",
       "tests/test_readme.py", "tests/test_generated_client.py", "tests/test_contract.py",
       "tests/cli/test_bench_http.py", "tests/cli/test_cli.py", "tests/cli/test_wrap.py",
       "tests/evaluation/test_cli_eval.py", "tests/clients/test_python_client.py",
       "tests/clients/test_typescript_client.py")
# Tests that run an installed coding agent (or LiteLLM's proxy) as a program, through the
# service.
PROGRAMS = (*(f"tests/agents/test_{name}.py" for name in (
    "aider", "claude_code", "codex", "gemini_cli", "litellm_chain", "mini_swe_agent",
    "qwen_code")), "tests/cli/test_wrap.py")
# What scripts/test.sh runs in a second pytest beside the rest, so that the two cores
# finish together (alone, the coding agents' tests left the second core idle for the last
# seven minutes of the suite): the tests that mostly wait on another program (the coding
# agents, pip building the image's wheel, serve.sh on a fresh clone, node, a Redis
# Cluster, the service as a process), and the corpus-wide quality floors, the longest
# test that runs in process.
BESIDE = (*PROGRAMS, "tests/test_install.py", "tests/test_readme.py",
          "tests/clients/", "tests/cli/test_bench_http.py",
          "tests/integration/test_redis_cluster.py", "tests/integration/test_webhook_faults.py",
          "tests/evaluation/test_quality_floors.py")
INTEGRATION = ("tests/api/", "tests/service/test_proxy", "tests/adapters/test_events.py",
               "tests/adapters/test_cache.py", "tests/adapters/test_addresses.py",
               "tests/adapters/test_ratelimit.py",
               "tests/evaluation/test_quality_floors.py",
               "tests/engine/test_real_transcripts.py", "tests/test_openapi.py",
               "tests/cli/test_wire.py")
# A test that asks for one of these runs the whole app, whatever its folder.
_APP_FIXTURES = frozenset({"client", "make_app"})


def _kind(item: pytest.Item) -> str:
    path = str(Path(item.path).relative_to(ROOT))
    if path.startswith(E2E):
        return "e2e"
    if path.startswith(INTEGRATION) or _APP_FIXTURES & set(getattr(item, "fixturenames", ())):
        return "integration"
    return "unit"


# An async test awaits the app in-process, where nothing times out: past this it fails
# with every task's stack instead of holding the run (pytest-timeout, later, would only
# show the event loop waiting).
ASYNC_TEST_DEADLINE_S = 300.0


def _bounded(test: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(test)
    async def bounded(*args: Any, **kwargs: Any) -> Any:
        async with deadline(ASYNC_TEST_DEADLINE_S):
            return await test(*args, **kwargs)

    return bounded


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(_kind(item))
        if item.nodeid.startswith(PROGRAMS):
            item.add_marker("programs")
        if item.nodeid.startswith(BESIDE):
            item.add_marker("beside")
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            item.obj = _bounded(item.obj)


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to test stale compiled modules: an extension shadows its source, so an
    edit to an engine module would otherwise go untested until the next build."""
    config.addinivalue_line("markers", "unit: the engine, adapters or services alone")
    config.addinivalue_line("markers", "integration: the app in process with its adapters, "
                            "or the whole corpus")
    config.addinivalue_line("markers", "e2e: the service as a process, image or package")
    config.addinivalue_line("markers", "programs: a coding agent run through the service")
    config.addinivalue_line("markers", "beside: run by scripts/test.sh beside the rest")
    stale = [str(source.relative_to(ROOT)) for built in (ROOT / "app").rglob("*.so")
             if (source := built.parent / (built.name.split(".")[0] + ".py")).exists()
             and source.stat().st_mtime > built.stat().st_mtime]
    if stale:
        raise pytest.UsageError(
            f"compiled modules are older than their sources ({', '.join(stale)}): run "
            "`bash scripts/test.sh`, which rebuilds them, or `source scripts/setup.sh`.")


@pytest.fixture(scope="session")
def encoder() -> tiktoken.Encoding:
    return load_encoding("cl100k_base")


@pytest.fixture
def synthesizer(encoder: tiktoken.Encoding) -> Synthesizer:
    counter = TokenCounter(encoder, pretokenizer=pretokenizer(encoder))
    return Synthesizer(counter, builtin_strategies())


@pytest.fixture(scope="session")
def formats() -> dict[str, Any]:
    return build_formats()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def make_app(encoder: tiktoken.Encoding) -> Callable[..., FastAPI]:
    def make(**settings: Any) -> FastAPI:
        return create_app(Settings(**settings), registry=CollectorRegistry(), encoder=encoder,
                          discover=lambda: [], environ={})
    return make


@pytest.fixture
async def client(make_app: Callable[..., FastAPI]) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(make_app()) as c:
        yield c


@asynccontextmanager
async def serve(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client with the app's lifespan run, as a server would."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            yield c

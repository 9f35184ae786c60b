from importlib.metadata import EntryPoint

import httpx
import pytest
from prometheus_client import CollectorRegistry

from app.adapters.plugins import GROUP, load_strategies
from app.engine.compaction.strategies import builtin_strategies
from app.main import create_app
from app.settings import Settings
from tests.support.build import coding_run


def entry(name: str, target: str) -> EntryPoint:
    return EntryPoint(name=name, value=target, group=GROUP)


def test_entry_points_add_strategies_but_cannot_replace_builtins():
    found = load_strategies(builtin_strategies(), lambda: [
        entry("keep-last", "tests.support.plugin:KeepLastTurns"),
        entry("fast", "tests.support.plugin:DropsUsers"),
    ])
    assert set(found) == {"fast", "fast-rebuild", "observation-mask", "keep-last"}
    assert type(found["fast"]).__name__ == "FastStrategy"


def test_objects_without_compact_are_skipped():
    found = load_strategies({}, lambda: [entry("bad", "json:dumps")])
    assert found == {}


@pytest.mark.anyio
async def test_plugin_strategy_served_over_http(encoder):
    app = create_app(Settings(), registry=CollectorRegistry(), encoder=encoder,
                     discover=lambda: [entry("keep-last", "tests.support.plugin:KeepLastTurns"),
                                       entry("drops-users", "tests.support.plugin:DropsUsers")])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        ok = await c.post("/synthesize", json={"messages": coding_run(5), "reasoning": {
            "synthesis": "custom", "synthesis_strategy": "keep-last"}})
        bad = await c.post("/synthesize", json={"messages": coding_run(5), "reasoning": {
            "synthesis": "custom", "synthesis_strategy": "drops-users"}})
    assert ok.status_code == 200 and ok.json()["messages"][3]["content"] == "[elided]"
    assert bad.status_code == 500
    assert bad.json()["type"].endswith("strategy-failed")
    assert "drops-users" in bad.json()["detail"]

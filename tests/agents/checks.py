"""What every program's end-to-end test does after its run, in one place."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agents.harness import Service
from tests.agents.plan import CHANGELOG_LINE, suite_passes
from tests.agents.player import ScriptedPlayer
from tests.agents.textplayer import TextPlayer
from tests.agents.upstream import ScriptedUpstream

Check = Callable[[dict[str, Any]], list[str]]
CONVERSATION = ("compacted", "unchanged")


def log_of(service: Service) -> str:
    """One line a request the program sent: route, status, what the proxy did."""
    return "\n".join(
        f"{a.method} {a.path} {a.status} {a.compaction or '-'} "
        f"{a.headers.get('x-contextsynth-tokens-before', '')}->"
        f"{a.headers.get('x-contextsynth-tokens-after', '')} "
        f"{a.headers.get('x-contextsynth-reason', '')}" for a in service.answered)


def assert_the_run_went_as_scripted(repo: Path, player: ScriptedPlayer | TextPlayer,
                                     upstream: ScriptedUpstream, service: Service,
                                     routes: tuple[str, ...], valid: Check) -> None:
    """The task is done, the program did every step, the expand tool was called and
    answered inside the proxy, nothing the program sent was refused, every conversation
    request was compacted or left as it was (never failed), and the upstream got only
    bodies its provider would take."""
    log = log_of(service)
    assert not upstream.failures, upstream.failures[0].error
    assert player.script.mismatches == [], player.script.mismatches
    assert player.script.done, f"stopped at step {player.script.at}\n{log}"
    assert suite_passes(repo)
    assert CHANGELOG_LINE in (repo / "CHANGELOG.md").read_text()
    # The expand tool: offered once something was cut, called once, answered by the
    # proxy with the text it had cut (the program never saw the call).
    assert player.script.expanded is not None, f"the expand tool was never offered\n{log}"
    assert "rule_" in player.script.expansion or "def " in player.script.expansion, \
        player.script.expansion[:500]
    refused = [a for a in service.answered if a.status >= 400 and a.path != "/"]
    assert not refused, log
    conversations = [a for a in service.answered if a.path in routes]
    assert conversations and all(a.compaction in CONVERSATION for a in conversations), log
    assert any(a.compaction == "compacted" for a in conversations), log
    problems = {i: found for i, call in enumerate(upstream.calls)
                if (found := valid(call.body))}
    assert not problems, problems


# A run takes seconds; past this the program is stuck (waiting on something the script
# never sends), and the failure shows how far it got.
RUN_TIMEOUT_S = 120


def run_program(command: list[str], cwd: Path, env: dict[str, str],
                player: ScriptedPlayer | TextPlayer,
                service: Service) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as stuck:
        raise AssertionError(
            f"{' '.join(command[:6])} still running after {RUN_TIMEOUT_S} s, at step "
            f"{player.script.at} (waiting for {player.script.pending})\n{log_of(service)}\n"
            f"{stuck.stdout!r}\n{stuck.stderr!r}") from None
    print(f"{' '.join(command[:6])} ran {time.monotonic() - started:.1f} s\n"
          f"{log_of(service)}")
    assert done.returncode == 0, done.stdout + done.stderr
    return done


FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCRATCH_SHOWN = "/work"  # the test's scratch folder (the repository's parent), as shown


def record_session(name: str, service: Service, route: str, repo: Path,
                   keep: Callable[[dict[str, Any]], bool] = lambda body: True) -> None:
    """With RECORD_AGENT_FIXTURES=1, keep the program's last request on ``route`` (its
    whole session, as it sent it) as ``fixtures/NAME.json``, for the engine's reading
    tests (tests/agents/test_reading.py); the scratch folder's path made stable.
    ``keep``: which requests on the route are the session's (not a side request's)."""
    if not os.environ.get("RECORD_AGENT_FIXTURES"):
        return
    last = [a.body for a in service.answered if a.path == route and keep(a.body)][-1]
    text = json.dumps(last, indent=1, ensure_ascii=False).replace(str(repo.parent), SCRATCH_SHOWN)
    FIXTURES.mkdir(exist_ok=True)
    (FIXTURES / f"{name}.json").write_text(text + "\n")

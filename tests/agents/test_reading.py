"""The programs' own request shapes, read by the engine as it reads the corpus's runs.

Each fixture is the last request a program sent in its scripted session
(``tests/agents/fixtures``, recorded by its end-to-end test with
RECORD_AGENT_FIXTURES=1; scripted, so not in the corpus): Claude Code's Messages
request (system blocks, system messages among the turns, thinking with signatures,
``Read``/``Bash``/``Edit``/``Write`` calls) and Codex's Responses request (developer
messages, ``exec_command`` calls, free-form ``apply_patch`` calls). ``fast`` must read
them as it reads a corpus run: the phase, the ledger (files read and changed, commands),
which results failed, and notes that keep what changed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.engine.compaction.ledger import build_ledger
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions
from app.engine.reading.calls import CallSummaries
from app.engine.reading.outcomes import Outcomes
from app.engine.reading.phases import Phase
from app.engine.transcript.model import Transcript, call_results
from tests.agents.checks import FIXTURES
from tests.agents.plan import TEST_COMMAND

# fixture -> its wire format, and the repository's path as its calls spell it
SESSIONS = {"claude-code": ("anthropic", "/work/repo/"), "codex": ("responses", "")}


def _session(name: str, formats: dict[str, Any]) -> tuple[dict[str, Any], Transcript]:
    wire, _ = SESSIONS[name]
    body = json.loads((FIXTURES / f"{name}.json").read_text())
    return body, formats[wire].parse(body)


def _test_runs(transcript: Transcript) -> list[int]:
    """The indexes of the results of the test suite's runs, in order."""
    commands = {c.id: c.arguments for m in transcript.messages for c in m.tool_calls}
    return [i for i, m in enumerate(transcript.messages) if m.role == "tool"
            and "unittest discover" in commands.get(m.tool_call_id or "", "")]


@pytest.mark.parametrize("name", SESSIONS)
def test_a_programs_session_renders_back_as_it_came(name, formats):
    body, transcript = _session(name, formats)
    wire, _ = SESSIONS[name]
    rendered = formats[wire].render(transcript)
    assert {k: body[k] for k in rendered} == rendered


@pytest.mark.parametrize("name", SESSIONS)
def test_fast_reads_the_phase_the_work_is_in(name, formats, synthesizer):
    _, transcript = _session(name, formats)
    first_failure = _test_runs(transcript)[0]
    # The suite failed, nothing is changed yet: still gathering.
    before = Transcript(transcript.messages[:first_failure + 1], transcript.format)
    assert synthesizer.run(before, SynthesisOptions()).phase is Phase.GATHER
    # Fixed, and the suite ran after the fix: verifying.
    assert synthesizer.run(transcript, SynthesisOptions()).phase is Phase.VERIFY


@pytest.mark.parametrize("name", SESSIONS)
def test_fast_reads_the_ledger_and_the_failures(name, formats):
    _, transcript = _session(name, formats)
    _, root = SESSIONS[name]
    ledger = build_ledger(call_results(transcript.messages), CallSummaries(), Outcomes())
    assert {f"{root}shop/pricing.py", f"{root}CHANGELOG.md"} <= set(ledger.files_written)
    assert f"{root}tests/test_pricing.py" in ledger.files_read
    assert TEST_COMMAND in ledger.commands
    # The suite's runs: failed, failed again after the wrong fix, then passed (twice).
    outcomes = Outcomes()
    failed = [outcomes.of(transcript.messages[i]).error for i in _test_runs(transcript)]
    assert failed == [True, True, False, False]


@pytest.mark.parametrize("name", SESSIONS)
def test_fast_notes_keep_what_changed(name, formats, synthesizer):
    wire, root = SESSIONS[name]
    _, transcript = _session(name, formats)
    result = synthesizer.run(transcript, SynthesisOptions())
    assert result.compacted and result.tokens_after < result.tokens_before * 0.7
    notes = json.dumps(formats[wire].render(result.transcript))
    assert f"files changed: {root}shop/pricing.py, {root}CHANGELOG.md" in notes

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
from app.engine.compaction.lifting import lift
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions
from app.engine.reading.calls import CallSummaries
from app.engine.reading.outcomes import Outcomes
from app.engine.reading.phases import Phase
from app.engine.transcript.model import Message, Transcript, call_results
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


# Gemini CLI's and Qwen Code's sessions: calls of their own tools (read_file,
# run_shell_command, replace or edit, write_file, grep_search), read as the others'.
TOOL_SESSIONS = {"gemini-cli": "gemini", "qwen-code": "openai"}
# mini-swe-agent's (text-based mode) and Aider's: actions in the text, read by lifting.
TEXT_SESSIONS = ("mini-swe-agent", "aider")
ROOT = "/work/repo/"


def _read(name: str, formats: dict[str, Any]) -> tuple[Transcript, list[Message]]:
    """A session, and its messages as the engine reads them (text actions lifted)."""
    wire = TOOL_SESSIONS.get(name, "openai")
    transcript = formats[wire].parse(json.loads((FIXTURES / f"{name}.json").read_text()))
    return transcript, list(lift(transcript.messages).messages)


def _runs(messages: list[Message]) -> list[bool]:
    """Whether each run of the test suite failed, in order."""
    commands = {c.id: c.arguments for m in messages for c in m.tool_calls}
    outcomes = Outcomes()
    return [outcomes.of(m).error for m in messages if m.role == "tool"
            and "unittest discover" in commands.get(m.tool_call_id or "", "")]


@pytest.mark.parametrize("name", [*TOOL_SESSIONS, *TEXT_SESSIONS])
def test_more_programs_sessions_render_back_as_they_came(name, formats):
    wire = TOOL_SESSIONS.get(name, "openai")
    body = json.loads((FIXTURES / f"{name}.json").read_text())
    rendered = formats[wire].render(formats[wire].parse(body))
    assert {k: body[k] for k in rendered} == rendered


@pytest.mark.parametrize("name", TOOL_SESSIONS)
def test_fast_reads_gemini_cli_and_qwen_code_as_the_corpus(name, formats, synthesizer):
    transcript, messages = _read(name, formats)
    ledger = build_ledger(call_results(messages), CallSummaries(), Outcomes())
    assert {f"{ROOT}shop/pricing.py", f"{ROOT}CHANGELOG.md"} == set(ledger.files_written)
    assert f"{ROOT}tests/test_pricing.py" in ledger.files_read
    assert any(TEST_COMMAND in c for c in ledger.commands)
    # Qwen Code's results end "Error: (none)" when there was none: no failure.
    assert _runs(messages) == [True, True, False, False]
    result = synthesizer.run(transcript, SynthesisOptions())
    assert result.phase is Phase.VERIFY
    assert result.compacted and result.tokens_after < result.tokens_before * 0.7
    notes = json.dumps(formats[TOOL_SESSIONS[name]].render(result.transcript))
    assert f"files changed: {ROOT}shop/pricing.py, {ROOT}CHANGELOG.md" in notes


def test_fast_reads_mini_swe_agents_fenced_commands(formats, synthesizer):
    transcript, messages = _read("mini-swe-agent", formats)
    calls = [c for m in messages for c in m.tool_calls]
    # Version 2 fences its command as mswea_bash_command: a shell command, as bash was.
    assert len(calls) == 30 and {c.name for c in calls} == {"bash"}
    ledger = build_ledger(call_results(messages), CallSummaries(), Outcomes())
    assert {"shop/pricing.py", "tests/test_pricing.py", "CHANGELOG.md"} <= set(ledger.files_read)
    assert "CHANGELOG.md" in ledger.files_written  # cat > CHANGELOG.md; a script's is not
    assert any(TEST_COMMAND in c for c in ledger.commands)
    # Its return code decides, as in every mini-swe-agent run: the suite's failures were
    # piped through tail, which exited 0.
    assert _runs(messages) == [False, False, False, False]
    result = synthesizer.run(transcript, SynthesisOptions())
    assert result.phase is Phase.VERIFY
    assert result.compacted and result.tokens_after < result.tokens_before * 0.5


def test_fast_reads_aiders_blocks_and_its_command_output(formats, synthesizer):
    transcript, messages = _read("aider", formats)
    names = [c.name for m in messages for c in m.tool_calls]
    # bash blocks answered by "Output from ..." or "I ran this command:", and edit blocks.
    assert names.count("edit") == 3 and names.count("bash") >= 20
    ledger = build_ledger(call_results(messages), CallSummaries(), Outcomes())
    assert set(ledger.files_written) == {"shop/pricing.py", "CHANGELOG.md"}
    assert "cat ./shop/catalog.py" in ledger.commands
    assert _runs(messages) == [True, True, False, False]
    result = synthesizer.run(transcript, SynthesisOptions())
    assert result.compacted and result.tokens_after < result.tokens_before * 0.7
    notes = json.dumps(formats["openai"].render(result.transcript))
    assert "files changed: shop/pricing.py" in notes

"""The 31 shared agent runs, in OpenAI form and converted to Anthropic."""

import json
import os
from pathlib import Path

import pytest

from app.corpus import families, runs
from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import Tier
from app.engine.jobs.synthesize.budget import Budget
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.reading.phases import PhaseOptions
from app.engine.transcript.tokens import TokenCounter
from tests.support.corpus import load, load_named, transcript_files
from tests.support.invariants import check_openai
from tests.support.wire import CASES

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
GOLDEN_FILES = ["tau-airline-gpt4o-task000-trial3.jsonl", "sweagent-ctf-crypto-eps.jsonl",
                "minisweagent-ds-chat-dev-pydicom__pydicom-901.jsonl"]


@pytest.fixture(scope="module")
def engine(encoder):
    return Synthesizer(TokenCounter(encoder), builtin_strategies())


SHAPES = {run.path.name: families()[run.family]["shape"] for run in runs()}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("path", transcript_files(), ids=lambda p: p.stem[:48])
def test_every_transcript_compacts_validly(engine, formats, path, case):
    messages = load(path)
    name, convert, check = CASES[case]
    payload = convert(messages)
    wire = formats[name]
    for tier in Tier:
        result = engine.run(wire.parse(payload), SynthesisOptions(tier=tier))
        check(payload, wire.render(result.transcript))
        if not result.compacted:
            # A short run may close no block and cut no result: a block closes when its
            # note pays for the closing, and the user's words are never cut (an Aider
            # session's user writes most of it). The agent's own work stays small then.
            lifted = engine.prepare(wire.parse(payload), SynthesisOptions(tier=tier)).lifted
            work = engine.tokens([m for m in lifted.messages if m.role in ("assistant", "tool")])
            assert work < 15_000, f"{case}/{tier}: nothing compacted of {work} tokens of work"
            continue
        assert result.tokens_after < result.tokens_before
    mid = engine.run(wire.parse(payload), SynthesisOptions(tier=Tier.MID))
    reduction = 1 - mid.tokens_after / mid.tokens_before
    # Long coding runs must shrink a lot; short runs still shrink. The turns after the
    # last closed block grow until the next block closes, so one step's reduction swings
    # by a block's worth: 62% at worst for a long run, 80% or more on its other steps
    # (the eval pools them). Trading recall back for reduction would be the regression.
    # A short run may close no block at all: it comes back as it was, without the nudge.
    # Held for the coding agents that call tools; other shapes are held per family by the
    # eval's floors (tests/evaluation), where one step's swing does not decide.
    if len(messages) >= 80 and SHAPES[path.name] == "coding, tool calls":
        assert reduction >= 0.6, f"{case}: {reduction:.0%}"


@pytest.mark.parametrize("path", transcript_files()[::5], ids=lambda p: p.stem[:48])
def test_observation_mask_on_real_transcripts(engine, formats, path):
    messages = load(path)
    result = engine.run(formats["openai"].parse({"messages": messages}),
                        SynthesisOptions(mode=Mode.CUSTOM, strategy="observation-mask"))
    out = formats["openai"].render(result.transcript)["messages"]
    check_openai(messages, out)
    # A run with no tool output old enough to hide (a chat, a short run) comes back as it
    # was; anything the mask does shrinks it.
    assert result.tokens_after < result.tokens_before or (
        not result.compacted and out == messages)


def _snapshot(engine, formats, messages):
    result = engine.run(formats["openai"].parse({"messages": messages}), SynthesisOptions())
    return {
        "messages": formats["openai"].render(result.transcript)["messages"],
        "phase": result.phase.value,
        "tokens": [result.tokens_before, result.tokens_after],
        "spans": [[s.handle, s.kind, s.first, s.last, s.messages] for s in result.receipt.spans],
        "lost": {k: sorted(getattr(result.receipt.lost, k))
                 for k in ("paths", "identifiers", "numbers", "errors")},
    }


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_golden_output(engine, formats, name):
    path = next(p for p in transcript_files() if p.name == name)
    snapshot = _snapshot(engine, formats, load(path))
    golden = GOLDEN / f"{path.stem}.json"
    if os.environ.get("UPDATE_GOLDEN") or not golden.exists():
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n")
        if not os.environ.get("UPDATE_GOLDEN"):
            pytest.fail(f"wrote missing golden file {golden.name}; review and commit it")
    assert snapshot == json.loads(golden.read_text())


def _outcome(engine, formats, messages, options=None):
    result = engine.run(formats["openai"].parse({"messages": messages}),
                        options or SynthesisOptions())
    return (formats["openai"].render(result.transcript)["messages"], result.tokens_before,
            result.tokens_after, result.receipt.spans, result.receipt.lost)


@pytest.mark.parametrize("path", transcript_files()[::7], ids=lambda p: p.stem[:48])
def test_an_agent_loop_through_warm_caches_gets_what_a_cold_engine_gives(encoder, formats,
                                                                          path):
    """Every cache is keyed by content: an agent resending its growing transcript must
    get exactly what a fresh engine computes for the same request."""
    messages = load(path)
    starts = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    warm = Synthesizer(TokenCounter(encoder), builtin_strategies())
    for stop in [*starts[-8:], len(messages)]:
        step = messages[:stop]
        cold = Synthesizer(TokenCounter(encoder), builtin_strategies())
        assert _outcome(warm, formats, step) == _outcome(cold, formats, step), stop


@pytest.mark.parametrize("name", ["openhands-codeact-astropy__astropy-14598",
                                  "minisweagent-ds-chat-test-1-100-django__django-12708"])
def test_a_budgeted_loop_through_warm_caches_gets_what_a_cold_engine_gives(encoder, formats,
                                                                            name):
    """With a budget the turns after the digest are compacted as a part of the run, and
    a part has made fewer calls before its recent turns than the run: the recent turns
    one part trimmed (whether trimming paid rests on those calls) are not another's. The
    warm engine had sent these runs' calls with other cuts than a cold one."""
    messages = load_named(name)
    options = SynthesisOptions(budget=Budget(8000))
    starts = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    warm = Synthesizer(TokenCounter(encoder), builtin_strategies())
    for stop in [*starts[-10:], len(messages)]:
        step = messages[:stop]
        cold = Synthesizer(TokenCounter(encoder), builtin_strategies())
        assert _outcome(warm, formats, step, options) == \
            _outcome(cold, formats, step, options), stop


@pytest.mark.parametrize("path", transcript_files(), ids=lambda p: p.stem[:48])
def test_the_engine_writes_only_ascii_of_its_own(engine, formats, path):
    # Notes quote the input (texts, and the code in calls' arguments), so a non-ASCII
    # character in them must come from it.
    transcript = formats["openai"].parse({"messages": load(path)})
    quoted = {c for m in transcript.messages for p in m.parts for c in p.text if ord(c) > 127}
    quoted |= {c for m in transcript.messages for call in m.tool_calls
               for c in json.dumps(json.loads(call.arguments), ensure_ascii=False)
               if ord(c) > 127}
    # A required tool that never ran: the nudge names it, so the engine writes it too
    # wherever the compaction pays for it.
    options = SynthesisOptions(phase=PhaseOptions(required_tools=("never_called_tool",)))
    result = engine.run(transcript, options)
    written = [p.text for m in result.transcript.messages if not m.authored for p in m.parts]
    assert {c for text in written for c in text if ord(c) > 127} <= quoted

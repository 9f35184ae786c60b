"""Tool results pair with the right call when providers reuse call ids.

The rule, in every format and job: a result answers the nearest earlier call
with its id that has no result yet. The generated runs reuse three ids for
every call, and each call has a name of its own (``tool7``) that its result
repeats (``result T7 from tool7``), so a line that shows a call beside
another call's result is caught wherever a job writes one.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.corpus import CORPUS_DIR, load
from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import Tier
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.history.compressor import HistoryCompressor, HistoryOptions
from app.engine.jobs.rescue import prompt as rescue
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.transcript.model import call_results, calls_by_result
from app.engine.transcript.tokens import TokenCounter
from tests.support.wire import CASES

_IDS = ["call_a", "call_b", "call_c"]
_FILLER = "".join(f"row {i}: nothing to see here, just padding text\n" for i in range(12))


@st.composite
def reused_id_run(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Look everything up."},
    ]
    serial = 0
    for _ in range(draw(st.integers(3, 12))):
        ids = draw(st.lists(st.sampled_from(_IDS), min_size=1, max_size=2, unique=True))
        calls, results = [], []
        for call_id in ids:
            serial += 1
            name = f"tool{serial}"
            calls.append({"id": call_id, "type": "function", "function": {
                "name": name, "arguments": json.dumps({"ref": f"T{serial}"})}})
            failed = draw(st.booleans())
            results.append({"role": "tool", "tool_call_id": call_id, "content":
                            f"{'Error: ' if failed else ''}result T{serial} from {name}\n"
                            + _FILLER})
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += results
        if draw(st.integers(0, 3)) == 0:
            messages.append({"role": "user", "content": "Keep going."})
    return messages


def _mismatches(text: str) -> list[str]:
    """Lines that mention a result next to a call other than the one it answers."""
    bad = []
    for line in text.splitlines():
        if "result T" not in line:
            continue
        numbers = set(re.findall(r"\btool(\d+)\b", line)) | set(re.findall(r"\bT(\d+)\b", line))
        if len(numbers) != 1:
            bad.append(line)
    return bad


def _texts(messages: Any) -> str:
    return "\n".join(m.text for m in messages)


@pytest.fixture(scope="module")
def caches() -> EngineCaches:
    return EngineCaches()


@pytest.fixture(scope="module")
def synth(encoder, caches) -> Synthesizer:
    return Synthesizer(TokenCounter(encoder), builtin_strategies(), caches)


@pytest.fixture(scope="module")
def history(encoder, caches) -> HistoryCompressor:
    return HistoryCompressor(TokenCounter(encoder), caches)


_SETTINGS = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                            HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(messages=reused_id_run())
def test_every_format_pairs_each_result_with_its_own_call(formats, messages):
    for case in ("openai", "anthropic", "gemini-ids", "responses"):
        name, convert, _ = CASES[case]
        parsed = formats[name].parse(convert(messages)).messages
        pairs = call_results(parsed)
        assert len(pairs) == sum(len(m.get("tool_calls", [])) for m in messages)
        for call, result in pairs:
            assert result is not None and f"from {call.name}\n" in result.text, case
        by_result = calls_by_result(parsed)
        for call, result in pairs:
            assert by_result[id(result)] is call


@_SETTINGS
@given(messages=reused_id_run())
def test_every_job_writes_each_result_beside_its_own_call(synth, history, formats, messages):
    transcript = formats["openai"].parse({"messages": messages})
    written = []
    for tier in (Tier.LOCAL, Tier.MID):
        for mode, strategy in ((Mode.FAST, None), (Mode.CUSTOM, "observation-mask")):
            options = SynthesisOptions(mode=mode, tier=tier, strategy=strategy)
            prepared = synth.prepare(transcript, options)
            written.append(_texts(synth.compact(prepared).transcript.messages))
            written.extend(prepared.signals.recent_errors)
        deep = synth.plan_deep(prepared)
        if deep is not None:
            written.append(deep.prompt[1].content)  # deep synthesis's evidence
    context = synth.prepare(transcript, SynthesisOptions()).context
    for budget in (100_000, 3_000):  # in full, and with the oldest calls folded into notes
        plan = rescue.plan(transcript.messages, context, "What did you find?", budget, None)
        written.append(plan.prompt[1].content)
    plan = history.plan(transcript, HistoryOptions(trigger_messages=1, keep_last_n=2))
    if plan.fired:
        written.append(plan.prompt[1].content)  # deep /compress-history's evidence
        summary = history.fast_summary(plan)
        written.append(summary)
        grown = history.finish(plan, summary).transcript
        again = history.plan(grown, HistoryOptions(trigger_messages=1, keep_last_n=1))
        if again.fired:
            written.append(history.fast_summary(again))
    for text in written:
        assert _mismatches(text) == []


def test_tau_task002_history_pairs_the_lookup_with_its_own_result(history, formats):
    """The user lookup and a later calculate call share an id in this real run."""
    messages = load(CORPUS_DIR / "tau-airline-gpt4o-task002-trial1.jsonl")
    plan = history.plan(formats["openai"].parse({"messages": messages}), HistoryOptions())
    summary = history.fast_summary(plan)
    assert 'get_user_details(user_id="omar_davis_3817") ->\n    email=omar.davis7857' in summary
    assert "    name: first_name=Omar, last_name=Davis" in summary
    assert ') -> 23553.0' in next(line for line in summary.splitlines()
                                  if line.startswith("- calculate("))
    assert "get_user_details" not in plan.prompt[1].content.split("23553.0")[0].splitlines()[-1]

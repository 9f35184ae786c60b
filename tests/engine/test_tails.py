"""The recent turns the last call trimmed are carried on from, never passed off as a
different request's."""

import copy

import pytest

from app.engine.compaction.base import Span
from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tails import Tails, Trimmed
from app.engine.compaction.tiers import TIER_BUDGETS, Tier
from app.engine.footprint import footprint
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.transcript.formats import build_formats
from app.engine.transcript.model import Message, Part
from app.engine.transcript.tokens import TokenCounter
from tests.support.build import coding_run
from tests.support.convert import to_anthropic


@pytest.fixture
def formats():
    return build_formats()


def _run(engine, wire, payload):
    result = engine.run(wire.parse(payload), SynthesisOptions())
    return wire.render(result.transcript), result


def test_a_loop_carries_on_from_the_last_call_and_gets_what_a_cold_engine_gives(
        encoder, formats):
    wire = formats["anthropic"]
    loop = Synthesizer(TokenCounter(encoder), builtin_strategies())
    messages = coding_run(40, output_chars=900)
    for k in range(30, len(messages) + 1, 2):
        payload = to_anthropic(messages[:k])
        warm, warm_result = _run(loop, wire, payload)
        cold, cold_result = _run(Synthesizer(TokenCounter(encoder), builtin_strategies()),
                                 wire, payload)
        assert warm == cold
        assert warm_result.receipt.spans == cold_result.receipt.spans


def test_a_message_that_changed_outside_its_text_is_trimmed_again(encoder, formats):
    """Anthropic agents move their cache_control mark from call to call: the text is
    the same, the wire block is not, and the answer must carry the new mark."""
    wire = formats["anthropic"]
    loop = Synthesizer(TokenCounter(encoder), builtin_strategies())
    payload = to_anthropic(coding_run(30, output_chars=1500))
    _run(loop, wire, payload)
    moved = copy.deepcopy(payload)
    # The result before the newest: recent, and cut, so its trimmed form is the engine's.
    block = moved["messages"][-3]["content"][0]
    assert block["type"] == "tool_result"
    block["cache_control"] = {"type": "ephemeral"}
    warm, _ = _run(loop, wire, moved)
    cold, _ = _run(Synthesizer(TokenCounter(encoder), builtin_strategies()), wire, moved)
    assert warm == cold
    sent = next(b for m in warm["messages"] for b in m["content"]
                if isinstance(b, dict) and b.get("tool_use_id") == block["tool_use_id"])
    assert "[contextsynth cut" in str(sent) and sent["cache_control"] == {"type": "ephemeral"}


def test_one_entry_per_loop_in_progress_and_a_bound_in_bytes():
    entry = _trimmed(100).size
    tails = Tails(max_bytes=entry * 5 // 2)
    for n in range(5):
        tails.put(_key("loop", n), _trimmed(100), replaces=_key("loop", n - 1) if n else None)
    assert len(tails) == 1  # each step replaced the step before it
    for n in range(3):
        tails.put(_key("other", n), _trimmed(100), replaces=None)
    assert len(tails) == 2 and tails.usage.held == 2 * entry  # two entries of two and a half
    assert tails.get(_key("loop", 4), _sources(100)) is None  # the oldest went first
    assert tails.get(_key("other", 2), _sources(100)) is not None
    # Another message at the same place (same text, other wire form) is not a hit.
    other = _sources(100)
    other[0].raw = {"role": "user", "content": "x" * 100, "cache_control": {}}
    assert tails.get(_key("other", 2), other) is None
    # Nor one whose raw differs only in a number, or in a field of a part or a call.
    for changed in ({"role": "user", "content": "x" * 100, "n": 2**61},
                    {"role": "user", "content": "x" * 100, "n": 1 + 2**61 + 2**61 - 1}):
        first, second = _sources(100), _sources(100)
        first[0].raw = {"role": "user", "content": "x" * 100, "n": 1}
        second[0].raw = changed
        tails.put(_key("numbers", 0), Trimmed(tuple(first), [], (), [], frozenset()), None)
        assert tails.get(_key("numbers", 0), first) is not None
        assert tails.get(_key("numbers", 0), second) is None
    # The same raw with its keys in another order is the same message.
    reordered = _sources(100)
    reordered[0].raw = {"content": "x" * 100, "role": "user"}
    assert tails.get(_key("other", 2), reordered) is not None


def test_an_entry_keeps_what_the_trimming_wrote_not_the_turns_it_came_from():
    # The turns as sent are 20 KB of text with their wire dicts; the entry holds the
    # trimmed message, the span and places: what the next call replays them with.
    def parsed() -> list[Message]:
        return [Message("user", (Part("text", "task"),),
                        raw={"role": "user", "content": "task"}, index=0),
                Message("tool", (Part("text", "y" * 20_000),), tool_call_id="t1",
                        raw={"role": "tool", "tool_call_id": "t1", "content": "y" * 20_000},
                        index=1)]

    sources = parsed()
    cut = Message("tool", (Part("text", "y" * 100 + " [cut]"),), tool_call_id="t1",
                  raw=sources[1].raw, index=1)
    span = Span("h1", "truncated", 1, 1, 1, ("bash",), (sources[1],))
    trimmed = Trimmed(tuple(sources), [sources[0], cut], (span,), [sources[1]], frozenset())
    assert trimmed.size < 2_000 < footprint(sources)
    # The next call's messages: equal to these, other objects, as a new request parses.
    again = parsed()
    out, spans, dropped = trimmed.replayed(again)
    assert out[0] is again[0] and dropped == [again[1]] and dropped[0] is again[1]
    assert out[1].text == cut.text and out[1].raw is again[1].raw
    assert spans[0].handle == "h1" and spans[0].originals[0] is again[1]


def _key(name, n):
    return (TIER_BUDGETS[Tier.MID], 0, n, ((name,),))


def _sources(chars):
    return [Message("user", (Part("text", "x" * chars),), raw={"role": "user",
                                                               "content": "x" * chars})]


def _trimmed(chars):
    return Trimmed(tuple(_sources(chars)), [], (), [], frozenset())

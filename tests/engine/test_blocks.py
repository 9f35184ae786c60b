"""The ``fast`` strategy's closed blocks: the output only grows at its end between block
closings, and what it declares stable stays the same bytes on every later call."""

import itertools
import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from app.engine.compaction.fast import MOST_SIZES, aged_blocks, closed_blocks
from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import TIER_BUDGETS, Tier
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.transcript.tokens import TokenCounter
from tests.support.build import coding_run, tool_turn
from tests.support.generate import openai_transcript


@pytest.fixture(scope="module")
def engine(encoder):
    return Synthesizer(TokenCounter(encoder), builtin_strategies())


def steps(messages):
    """The calls an agent makes: before each assistant message, and after the last one."""
    return [i for i, m in enumerate(messages) if m["role"] == "assistant" and i > 0] + \
        [len(messages)]


def call(engine, formats, messages, tier):
    wire = formats["openai"]
    transcript = wire.parse({"messages": messages})
    result = engine.run(transcript, SynthesisOptions(tier=tier))
    prepared = engine.prepare(transcript, SynthesisOptions(tier=tier))
    closed = len(engine.strategies["fast"].blocks(prepared.lifted.messages,
                                                  prepared.context)[0])
    return wire.render(result.transcript)["messages"], result, closed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(messages=openai_transcript(max_turns=40))
def test_later_calls_send_the_declared_prefix_again(engine, formats, messages):
    for tier in (Tier.LOCAL, Tier.MID):
        calls = [call(engine, formats, messages[:k], tier) for k in steps(messages)]
        for (out, result, closed), (later, _, later_closed) in itertools.combinations(calls, 2):
            assert later[:result.stable] == out[:result.stable]
            if closed == later_closed:  # within one block: all but the newest turn
                assert later[:result.steady] == out[:result.steady]
            assert result.stable <= result.steady <= len(out)


def test_between_closings_a_call_only_appends(engine, formats):
    messages = coding_run(40)
    outputs = [call(engine, formats, messages[:k], Tier.MID) for k in steps(messages)[-12:]]
    closings = sum(a[2] != b[2] for a, b in itertools.pairwise(outputs))
    assert closings >= 1  # the test spans a closing, and the steps on either side of it
    for (out, result, closed), (later, _, later_closed) in itertools.pairwise(outputs):
        if closed == later_closed:
            assert later[:result.steady] == out[:result.steady]
            # what the previous call sent is there again, but its newest turn and the nudge
            assert result.steady >= len(out) - 3


def test_a_closed_blocks_note_changes_once_when_it_ages(engine, formats):
    messages = coding_run(100)
    notes = [call(engine, formats, messages[:k], Tier.MID)[0][2] for k in steps(messages)[20:]]
    assert notes[0]["content"].startswith("[contextsynth] Earlier work, compacted:")
    changes = [i for i, (a, b) in enumerate(itertools.pairwise(notes)) if a != b]
    assert len(changes) == 1  # the same bytes call after call, but for the one ageing
    aged = notes[-1]["content"]
    assert "left out" in aged and len(aged) < len(notes[0]["content"]) / 3


@pytest.mark.parametrize(("full", "batch"), [(1, 3), (2, 1), (4, 2), (2, 5)])
def test_blocks_age_in_batches_and_never_take_their_whole_form_again(full, batch):
    aged = [aged_blocks(n, full, batch) for n in range(40)]
    assert all(a <= b for a, b in itertools.pairwise(aged))  # an aged note stays aged
    assert all(a % batch == 0 and a <= max(n - full, 0) for n, a in enumerate(aged))
    assert all(n - a < full + batch for n, a in enumerate(aged) if n >= full)
    # the notes change with ageing only every ``batch`` closings
    assert sum(a != b for a, b in itertools.pairwise(aged)) == (39 - full) // batch
    assert aged_blocks(30, 0, 3) == 0  # no full blocks set: notes never age


def test_aged_notes_change_once_every_few_closings(engine, formats):
    """Each ageing rewrites the output from the aged note on, which a provider's cache
    then misses: mid ages two blocks at a time, so most closings only append a note."""
    messages = coding_run(220)
    calls = [call(engine, formats, messages[:k], Tier.MID) for k in steps(messages)]
    notes = [[m["content"] for m in out if str(m["content"]).startswith(
        ("[contextsynth] Earlier", "[contextsynth] More earlier"))] for out, _, _ in calls]
    closings = sum(len(b) > len(a) for a, b in itertools.pairwise(notes))
    rewrites = sum(a != b[:len(a)] for a, b in itertools.pairwise(notes))
    assert closings >= 9
    assert 1 <= rewrites <= closings // 2


def test_the_ledger_follows_the_notes_and_the_newest_turn_stays_whole(engine, formats):
    messages = coding_run(30, output_chars=3000)
    messages[2:2] = tool_turn("w", "write_file", {"path": "src/parser.py",
                                                  "content": "def parse(text):\n    return 1\n"},
                              "File written.")
    messages += tool_turn("last", "bash", {"command": "pytest -q"}, "F" * 5000)
    out, _, closed = call(engine, formats, messages, Tier.MID)
    assert closed == 31 // TIER_BUDGETS[Tier.MID].block_turns  # 32 turns, one after
    ledger = next(i for i, m in enumerate(out) if m["content"] and str(m["content"])
                  .startswith("[contextsynth] Artifacts so far:"))
    assert all(str(m["content"]).startswith("[contextsynth] ") for m in out[2:ledger])
    assert "- files created: src/parser.py" in out[ledger]["content"]  # not read before
    assert "files read" not in out[ledger]["content"]  # the notes' lines name those
    assert out[ledger + 1]["role"] == "assistant"  # the turns after the block follow
    assert out[-2]["content"] == "F" * 5000  # the newest result is never cut


@pytest.mark.parametrize(("closing_turns", "closing_tokens", "closed"), [
    (1, 0, 2),  # mid's: a block closes once a turn follows it
    (-1, -1, 1),  # the recent window's: 2 turns and 1,900 tokens must follow
    (9, 0, 1),
])
def test_a_block_closes_once_the_tiers_closing_turns_and_tokens_follow_it(
        encoder, formats, closing_turns, closing_tokens, closed):
    budget = replace(TIER_BUDGETS[Tier.MID], block_turns=11, closing_turns=closing_turns,
                     closing_tokens=closing_tokens)
    assert budget.closing == ((closing_turns, closing_tokens) if closing_turns >= 0
                              else (budget.full_turns, budget.window_tokens))
    messages = formats["openai"].parse({"messages": coding_run(23, output_chars=600)}).messages
    context = EngineCaches().context(messages, Tier.MID, TokenCounter(encoder).messages)
    context = replace(context, budget=budget)
    blocks, tail, _ = closed_blocks(messages, context)
    assert len(blocks) == closed
    assert sum(len(b) for b in blocks) + len(tail) == len(context.segments.turns)


def _support_chat(turns: int) -> list[dict]:
    """A support agent's run: lookups of a few hundred tokens between short customer
    messages."""
    messages: list[dict] = [{"role": "system", "content": "You are an airline agent."},
                            {"role": "user", "content": "I want to change my flight."}]
    for n in range(turns):
        record = {"id": f"R{n:04d}", "status": "ok", "passengers": [
            {"name": f"Passenger {p}", "seat": f"{p + 10}C", "bags": p % 3,
             "notes": "prefers an aisle seat near the front of the cabin"} for p in range(6)]}
        messages += tool_turn(f"c{n}", "get_reservation", {"id": f"R{n:04d}"},
                              json.dumps(record))
        messages += [{"role": "assistant", "content": f"Reservation R{n:04d} is fine."},
                     {"role": "user", "content": "Check the next one, please."}]
    return messages


def _blocks(engine, formats, messages, budget):
    prepared = engine.prepare(formats["openai"].parse({"messages": messages}),
                              SynthesisOptions(tier=Tier.MID))
    context = replace(prepared.context, budget=budget)
    return engine.strategies["fast"].blocks(prepared.lifted.messages, context)[0]


def test_a_block_whose_note_cannot_pay_for_its_closing_stays_open(engine, formats):
    # A note saves a few hundred tokens a call, and the closing sends the note and the
    # turn after it again at full price: eight lookups into a run, that cannot pay yet.
    messages = _support_chat(8)
    mid = TIER_BUDGETS[Tier.MID]
    assert mid.closing_payback
    assert len(_blocks(engine, formats, messages, replace(mid, closing_payback=0.0))) >= 1
    assert _blocks(engine, formats, messages, mid) == []


def test_a_run_that_goes_on_closes_its_grown_first_block_then_closes_as_before(
        engine, formats):
    # The same kind of run, longer: a saving is weighed against the calls made so far, so
    # the first block closes once it has grown, and the later ones at about the tier's size.
    size = TIER_BUDGETS[Tier.MID].block_turns
    blocks = _blocks(engine, formats, _support_chat(30), TIER_BUDGETS[Tier.MID])
    assert len(blocks) >= 3
    assert len(blocks[0]) > 2 * size
    assert all(len(b) <= size + 1 for b in blocks[2:])


def test_a_call_carries_on_from_the_blocks_its_last_call_closed(encoder, formats):
    """A closed block stays closed, with the same turns, as the run grows: each call of a
    loop takes the blocks the last one closed and weighs only the turns after them, and
    closes the blocks a cold call on the whole run closes."""
    messages = _support_chat(30)
    wire = formats["openai"]
    warm = Synthesizer(TokenCounter(encoder), builtin_strategies())
    closings = warm.strategies["fast"].usage()["closings"]
    for stop in steps(messages)[-6:]:
        warm.run(wire.parse({"messages": messages[:stop]}), SynthesisOptions())
    assert closings.hits >= 5
    cold = Synthesizer(TokenCounter(encoder), builtin_strategies())
    mid = TIER_BUDGETS[Tier.MID]
    found = _blocks(warm, formats, messages, mid)
    assert len(found) >= 3
    assert found == _blocks(cold, formats, messages, mid)
    # A call that shares no start with the last one weighs its run anew.
    other = _support_chat(12)
    assert _blocks(warm, formats, other, mid) == _blocks(cold, formats, other, mid)


def test_notes_that_save_nothing_close_a_block_only_at_its_longest(engine, formats):
    # Lookups of a line each: a note is as long as what it replaces. Such a block grows
    # to MOST_SIZES blocks' worth of turns (each call weighs a bounded number of ends).
    def lookups(n):
        return [m if m["role"] != "tool" else {**m, "content": '{"status": "ok"}'}
                for m in _support_chat(n)]

    mid = TIER_BUDGETS[Tier.MID]
    longest = MOST_SIZES * mid.block_turns
    assert _blocks(engine, formats, lookups(25), mid) == []  # 50 turns
    assert _blocks(engine, formats, lookups(25), replace(mid, closing_payback=0.0))
    assert [len(b) for b in _blocks(engine, formats, lookups(60), mid)] == [longest, longest]


def test_large_results_close_blocks_at_the_tiers_size_as_before(engine, formats):
    messages = coding_run(30, output_chars=3000)
    mid = TIER_BUDGETS[Tier.MID]
    paying = _blocks(engine, formats, messages, mid)
    always = _blocks(engine, formats, messages, replace(mid, closing_payback=0.0))
    assert paying == always
    assert all(len(b) == mid.block_turns for b in paying)


def _edit(path: str, lines: int = 1) -> str:
    new = "\n".join('ok ok ok {"k": [1, 2]} {"k": [1, 2]}' for _ in range(lines)) \
        if lines > 1 else "x = 2"
    return f"\n\n{path}\n```python\n<<<<<<< SEARCH\nx = 1\n=======\n{new}\n>>>>>>> REPLACE\n```"


def test_a_block_ending_in_an_edit_block_is_sent_with_its_own_note(engine, formats):
    """An agent that edits in its text: each edit block reads as a call with a result
    made for it, which has no place on the wire. A block weighed a turn at a time ends
    in such a result at several lengths, and each length's note is its own: the block
    once went out with a shorter one's, its last turns (a command the user typed among
    them) gone without a trace. (Found by the text-action property test.)"""
    def run(n: int) -> dict:
        return {"role": "assistant",
                "content": f"Run this:\n\n```bash\npytest -q tests/t{n}.py\n```"}

    def edits(numbers: range, lines: int = 1) -> list[dict]:
        return [{"role": "assistant", "content": _edit(f"src/m{n}.py", lines)} for n in numbers]

    done = {"role": "assistant", "content": "Done."}
    typed = {"role": "user", "content": "/run pytest -q"}
    messages = [{"role": "system", "content": "Act as an expert developer. Use edit blocks."},
                {"role": "user", "content": "Fix the parser."},
                run(0), *edits(range(1, 8)), run(8), done, *edits(range(10, 16)), run(16),
                done, done, typed, *edits(range(20, 21), lines=34), run(21)]
    for tier in Tier:
        out, result, _ = call(engine, formats, messages, tier)
        assert typed in out, tier
        # Every message is on the wire, or behind a handle the receipt names.
        behind = {i for s in result.receipt.spans for i in range(s.first, s.last + 1)}
        shown = {json.dumps(m, sort_keys=True) for m in out}
        assert all(json.dumps(m, sort_keys=True) in shown or i in behind
                   for i, m in enumerate(messages)), tier

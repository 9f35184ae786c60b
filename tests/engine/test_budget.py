"""A token budget: the output never has more tokens than the caller allows, and what must
stay past it is said plainly."""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.adapters.tokenizer import pretokenizer
from app.engine.compaction.base import Compaction
from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import Tier
from app.engine.errors import BudgetTooSmall
from app.engine.jobs.synthesize.budget import (
    ANCHOR_SHARE,
    TARGET_SHARE,
    Budget,
    Olders,
    anchor_points,
    condensed,
    cut_points,
    first_fitting,
    first_fitting_near,
    grid,
    stride_start,
)
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.prompts import DIGEST_FAILURES, DIGEST_NAMES, MARKER
from app.engine.transcript.tokens import TokenCounter
from tests.support.build import coding_run, tool_turn


def _failures_listed(digest: str) -> list[str]:
    """Every line of the digest's lists of failures, in order (a digest in two parts has
    a list in each)."""
    out: list[str] = []
    for block in digest.split(DIGEST_FAILURES)[1:]:
        for line in block.splitlines()[1:]:
            if not line.startswith("  "):
                break
            out.append(line.strip())
    return out


def _condensed(digest: str) -> list[int]:
    """How many turns each part of a digest took."""
    return [int(n) for n in re.findall(r"\[contextsynth\] (?:Digest of|Then) (\d+)", digest)]


def _failing_run(turns: int, kinds: int,
                 text: Callable[[int], str] | None = None) -> list[dict]:
    """A run whose every tenth command fails with one of ``kinds`` errors (the rest print
    150 lines); ``text``: the agent's words before the ``i``th call."""
    messages = coding_run(0)
    for i in range(turns):
        output = (f"Traceback (most recent call last):\n  File \"src/m{i}.py\", line 4\n"
                  f"ValueError: m{i % kinds} rejects the input" if i % 10 == 3
                  else "\n".join(f"v_{i}_{k} = f({k})" for k in range(150)))
        messages += tool_turn(f"c{i}", "bash", {"command": f"python src/m{i}.py"}, output,
                              text=text(i) if text else None)
    return messages


def _session(turns: int, output_chars: int, user_every: int) -> list[dict]:
    messages = coding_run(0)
    for i in range(turns):
        messages += tool_turn(f"c{i}", "bash", {"command": f"cat src/m{i}.py"},
                              "\n".join(f"v_{i}_{k} = f({k})" for k in
                                        range(output_chars // 12)))
        if user_every and i % user_every == user_every - 1:
            messages.append({"role": "user", "content": f"Also keep m{i}.py's API stable."})
    return messages


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                  HealthCheck.too_slow], deadline=None)
@given(turns=st.integers(1, 160), output_chars=st.integers(50, 6000),
       user_every=st.integers(0, 40), budget=st.integers(300, 1_000_000),
       tier=st.sampled_from(list(Tier)))
def test_the_output_never_passes_the_budget(synthesizer, formats, turns, output_chars,
                                            user_every, budget, tier):
    messages = _session(turns, output_chars, user_every)
    wire = formats["openai"]
    try:
        result = synthesizer.run(wire.parse({"messages": messages}),
                                 SynthesisOptions(tier=tier, budget=Budget(budget)))
    except BudgetTooSmall:
        # Only what must stay may be too large: the head and the newest user message.
        head = synthesizer.tokens(wire.parse({"messages": messages[:2]}).messages)
        assert head > budget or turns == 0
        return
    out = wire.render(result.transcript)["messages"]
    assert result.tokens_after <= budget
    assert synthesizer.tokens(wire.parse({"messages": out}).messages) <= budget
    # Valid for the provider: every call answered, the head kept.
    assert out[:2] == messages[:2]
    pending: set[str] = set()
    for m in out:
        if m["role"] == "assistant":
            assert not pending
            pending = {c["id"] for c in m.get("tool_calls") or []}
        elif m["role"] == "tool":
            pending.discard(m["tool_call_id"])
    assert not pending


def test_under_a_cap_fast_works_as_without_one(synthesizer, formats):
    # The cap the service sets from a model's window only bounds what fast sends.
    wire = formats["openai"]
    messages = coding_run(30)
    plain = synthesizer.run(wire.parse({"messages": messages}), SynthesisOptions())
    capped = synthesizer.run(wire.parse({"messages": messages}), SynthesisOptions(
        budget=Budget(plain.tokens_after + 1000, fill=False)))
    assert wire.render(capped.transcript) == wire.render(plain.transcript)


def test_a_bigger_budget_keeps_more_of_the_recent_turns_whole(synthesizer, formats):
    wire = formats["openai"]
    messages = coding_run(60, output_chars=2000)
    whole = []
    for tokens in (4_000, 16_000, 64_000):
        result = synthesizer.run(wire.parse({"messages": messages}),
                                 SynthesisOptions(budget=Budget(tokens), steer=False))
        out = wire.render(result.transcript)["messages"]
        assert result.tokens_after <= tokens
        whole.append(sum(1 for m in out if m in messages[2:]))
    assert whole[0] < whole[1] < whole[2]


def test_past_the_budget_the_oldest_turns_condense_into_a_digest(synthesizer, formats):
    wire = formats["openai"]
    messages = _session(120, 3000, 25)
    plain = synthesizer.run(wire.parse({"messages": messages}), SynthesisOptions())
    budget = plain.tokens_after // 2
    result = synthesizer.run(wire.parse({"messages": messages}),
                             SynthesisOptions(budget=Budget(budget)))
    out = wire.render(result.transcript)["messages"]
    assert result.tokens_after <= budget
    digest = out[2]["content"]
    assert digest.startswith("[contextsynth] Digest of")
    said = [m["content"] for m in messages if m["role"] == "user"][1:]
    quoted = [text for text in said if f"the user said: {text}" in digest]
    assert quoted and set(quoted) < set(said)
    assert any(s.handle in digest for s in result.receipt.spans)
    # The newest call is there, answered.
    assert messages[-2] in out and out[-1]["role"] == "tool"


def test_the_users_newest_request_stays_whole_after_the_digest(synthesizer, formats):
    """In a long session the user's newest message is the request the agent works on
    now: condensed with the turns before it, it stays whole, right after the digest,
    and the digest quotes only the newest few of the user's earlier messages."""
    wire = formats["openai"]
    messages = _session(40, 3000, 0)
    for n in range(6):  # six more requests, each followed by work
        messages.append({"role": "user", "content": f"Request {n}: now port m{n}.py to the "
                         "new API, keeping every public name; " + "details. " * 150})
        messages += _session(20, 3000, 0)[2:]
    newest = [m for m in messages if m["role"] == "user"][-1]
    assert newest["content"].startswith("Request 5")
    result = synthesizer.run(wire.parse({"messages": messages}),
                             SynthesisOptions(budget=Budget(8_000), steer=False))
    out = wire.render(result.transcript)["messages"]
    assert result.tokens_after <= 8_000
    assert out[2]["content"].startswith("[contextsynth] Digest of")
    assert out[3] == newest
    digest = out[2]["content"]
    assert "Request 5" not in digest  # whole after it, not quoted in it
    assert [n for n in range(5) if f"Request {n}:" in digest] == [2, 3, 4]
    assert "2 earlier messages are behind the digest's handle" in digest


def test_the_digest_lists_what_failed_in_the_turns_it_took_newest_first(synthesizer,
                                                                       formats):
    """The failures the agent ruled out stay readable once their turns are condensed: each
    distinct failure line once, newest first, within a tenth of the budget."""
    wire = formats["openai"]
    messages = _failing_run(80, 20)
    result = synthesizer.run(wire.parse({"messages": messages}),
                             SynthesisOptions(budget=Budget(8_000), steer=False))
    out = wire.render(result.transcript)["messages"]
    assert result.tokens_after <= 8_000
    digest = out[2]["content"]
    assert DIGEST_FAILURES in digest
    listed = _failures_listed(digest)
    failed = [f"ValueError: m{i % 20} rejects the input" if i % 10 == 3 else None
              for i in range(sum(_condensed(digest)))]
    # Distinct, newest first: in a digest of two parts, the older part's, then those of
    # the newer part that the older did not list.
    expected: list[str] = []
    start = 0
    for took in _condensed(digest):
        part = [line for line in failed[start : start + took] if line is not None]
        expected += [line for line in dict.fromkeys(reversed(part)) if line not in expected]
        start += took
    assert [line for line in listed if line.startswith("ValueError")] == expected
    assert len(digest) < 8_000 * 4 // 2


def test_the_digest_lists_what_still_fails_before_what_was_fixed(synthesizer, formats):
    """A long session's checker reports after every edit, each cleared by the next edit of
    the file, had filled the digest's list and left out a build that still fails; the
    same error at other line numbers is one line."""
    wire = formats["openai"]
    messages = coding_run(0)
    messages += tool_turn("b0", "bash", {"command": "npm run build"},
                          "compiling...\nerror: script \"build\" exited with code 1")
    for i in range(60):
        path = f"src/view{i % 12}.ts"
        report = (f"Edit applied.\nERROR [{40 + i}:{7 + i % 5}] Cannot find name "
                  f"'helper{i % 12}'.")
        messages += tool_turn(f"e{i}", "edit", {"path": path, "old": "a", "new": "b"}, report)
        messages += tool_turn(f"f{i}", "edit", {"path": path, "old": "b", "new": "c"},
                              "Edit applied.")
        messages += tool_turn(f"r{i}", "bash", {"command": f"cat {path}"},
                              "\n".join(f"const v{i}_{k} = {k};" for k in range(120)))
    result = synthesizer.run(wire.parse({"messages": messages}),
                             SynthesisOptions(budget=Budget(4_000), steer=False))
    assert result.tokens_after <= 4_000
    digest = wire.render(result.transcript)["messages"][2]["content"]
    listed = _failures_listed(digest)
    assert listed[0] == 'error: script "build" exited with code 1'  # still failing
    fixed = listed[1:]
    assert fixed and all(line.startswith("ERROR [") for line in fixed)
    names = [line.split("name ")[1] for line in fixed]
    assert len(names) == len(set(names))  # one line per error, whatever its position
    assert "'helper" in fixed[0] and len(set(names)) > 1


def test_the_digest_names_what_the_agent_worked_with_in_the_turns_it_took(synthesizer,
                                                                          formats):
    """The files and functions the agent wrote and ran stay nameable once their turns are
    condensed: its newest work first, what it only read in a result after all of it."""
    wire = formats["openai"]
    messages = coding_run(0)
    for i in range(80):
        module = f"src/part_{i // 20}.py"  # four stretches of work, one module each
        messages += tool_turn(
            f"c{i}", "bash", {"command": f"python -m pytest tests/test_part_{i // 20}.py"},
            "\n".join(f"listed_only_{i}_{k} = f({k})" for k in range(150)),
            text=f"Next I change `handle_{i // 20}` in {module}.")
    result = synthesizer.run(wire.parse({"messages": messages}),
                             SynthesisOptions(budget=Budget(8_000), steer=False))
    assert result.tokens_after <= 8_000
    digest = wire.render(result.transcript)["messages"][2]["content"]
    line = next(x for x in digest.splitlines() if x.startswith(DIGEST_NAMES))
    named = line[len(DIGEST_NAMES):].split(", ")
    condensed = sum(_condensed(digest))
    newest = (condensed - 1) // 20
    assert set(named[:3]) == {f"handle_{newest}", f"src/part_{newest}.py",
                              f"tests/test_part_{newest}.py"}
    own = {f"{name}_{n}{ext}" for n in range(newest + 1)
           for name, ext in (("handle", ""), ("src/part", ".py"), ("tests/test_part", ".py"))}
    read = [n for n in named if n.startswith("listed_only")]
    # The room the agent's own names left holds names the results showed, after them.
    assert set(named[:len(own)]) == own and read == named[len(own):] and read
    assert len(line) <= 8_000 * 4 // 10


def test_a_stride_condenses_once_and_its_next_calls_grow_at_the_end(synthesizer, formats):
    """Hysteresis: at each stride's start the cut is set to condense the run with room to
    spare, so the calls after it keep the same digest and only add at the end."""
    wire = formats["openai"]
    budget = 8_000
    messages = _session(200, 600, 0)
    calls = []  # (stride, digest, output) per call
    for turns in range(100, 200):
        sent = messages[: 2 + 2 * turns]
        result = synthesizer.run(wire.parse({"messages": sent}),
                                 SynthesisOptions(budget=Budget(budget), steer=False))
        out = wire.render(result.transcript)["messages"]
        assert result.tokens_after <= budget
        sizes = [synthesizer.tokens(wire.parse({"messages": sent[k : k + 2]}).messages)
                 for k in range(2, len(sent), 2)]
        digest = out[2]["content"]
        calls.append((stride_start(sizes, budget), digest, out))
    starts = [k for k in range(1, len(calls)) if calls[k][0] != calls[k - 1][0]]
    assert len(starts) >= 2
    for k in starts:  # the stride's next calls: the same digest, the output grown at its end
        assert calls[k][1].startswith("[contextsynth] Digest of")
        for a, b in pairwise(calls[k : k + 3]):
            assert b[1] == a[1] and b[2][: len(a[2]) - 1] == a[2][:-1]
    kept = sum(b[1] == a[1] for a, b in pairwise(calls))
    assert kept >= len(calls) // 3


def test_within_a_stride_the_cut_moves_only_past_the_budget_and_then_well_below_it(
        synthesizer, formats, encoder):
    """Hysteresis on every call, not only at a stride's start: the cut stays while the
    output fits, and a call that would pass the budget moves it down to TARGET_SHARE, so
    the calls after a move grow at their end for a while. (Moved only as far as fitted,
    the output passed the budget again a call or two later, each move a rewrite.)"""
    wire = formats["openai"]
    budget = 8_000
    messages = _session(200, 600, 0)
    sizes = [synthesizer.tokens(wire.parse({"messages": messages[k : k + 2]}).messages)
             for k in range(2, len(messages), 2)]
    calls = []  # (stride, the turns the digest took, tokens sent) per call
    for turns in range(60, 200):
        result = synthesizer.run(wire.parse({"messages": messages[: 2 + 2 * turns]}),
                                 SynthesisOptions(budget=Budget(budget), steer=False))
        assert result.tokens_after <= budget
        digest = wire.render(result.transcript)["messages"][2]["content"]
        calls.append((stride_start(sizes[:turns], budget), sum(_condensed(digest)),
                      result.tokens_after))
    moves = [k for k in range(1, len(calls))
             if calls[k][1] != calls[k - 1][1] and calls[k][0] == calls[k - 1][0]]
    assert len(moves) >= 3
    for k in moves:
        turn = sizes[60 + k - 1]
        assert calls[k - 1][2] + turn > budget  # it had to move
        assert calls[k][2] <= TARGET_SHARE * budget  # and moved well below the budget
        # A replica that never saw the loop reads the same moves from the run alone.
        for turns in (60 + k, 60 + k + 1):
            sent = wire.parse({"messages": messages[: 2 + 2 * turns]})
            fresh = Synthesizer(TokenCounter(encoder, pretokenizer=pretokenizer(encoder)),
                                builtin_strategies())
            options = SynthesisOptions(budget=Budget(budget), steer=False)
            assert wire.render(fresh.run(sent, options).transcript) == \
                wire.render(synthesizer.run(sent, options).transcript)
    assert min(b - a for a, b in pairwise(moves)) >= 3


def test_the_users_newest_words_split_the_digest_and_stay_where_they_were_sent(
        synthesizer, formats):
    """The user's newest words end the digest's older part: the turns before them, the
    words whole, then the turns from there to the cut. Every call while no newer words
    come sends the first two as the call before sent them, however the cut moves."""
    wire = formats["openai"]
    budget = 8_000
    request = {"role": "user", "content": "Now port every module to the new API, keeping "
               "each public name. " + "The details follow. " * 120}
    messages = [*_session(60, 600, 0), request]
    for i in range(160):
        messages += tool_turn(f"d{i}", "bash", {"command": f"cat lib/n{i}.py"},
                              "\n".join(f"w_{i}_{k} = g({k})" for k in range(50)))
    at = messages.index(request)
    calls = []
    for stop in range(at + 201, len(messages) + 1, 2):
        result = synthesizer.run(wire.parse({"messages": messages[:stop]}),
                                 SynthesisOptions(budget=Budget(budget), steer=False))
        assert result.tokens_after <= budget
        out = wire.render(result.transcript)["messages"]
        assert out[2]["content"].startswith(f"{MARKER} Digest of")
        assert out[3] == request
        assert out[4]["content"].startswith(f"{MARKER} Then")
        # The names, ranked over every condensed turn, are listed once, in the last part.
        assert DIGEST_NAMES not in out[2]["content"] and DIGEST_NAMES in out[4]["content"]
        took = _condensed(out[2]["content"] + out[4]["content"])
        assert took[0] == sum(1 for m in messages[2:at] if m["role"] == "assistant")
        calls.append(out)
    moved = [(a, b) for a, b in pairwise(calls) if a[4] != b[4]]
    assert len(moved) >= 2
    assert all(b[:4] == a[:4] for a, b in moved)


def test_an_older_part_kept_for_a_calls_later_tries_is_the_one_each_would_write(
        synthesizer, formats):
    """A call tries several cuts, and the digest's older part they share is written once.
    A cut right after the user's words has no newer part, so its one part lists the
    names; a later cut's older part must not (the names come once, in the last part)."""
    wire = formats["openai"]
    request = {"role": "user", "content": "Now port every module to the new API."}
    messages = [*_session(30, 600, 0), request]
    for i in range(20):
        messages += tool_turn(f"d{i}", "bash", {"command": f"cat lib/n{i}.py"}, "ok")
    prepared = synthesizer.prepare(wire.parse({"messages": messages}),
                                   SynthesisOptions(budget=Budget(8_000)))
    run = prepared.lifted.messages
    at = messages.index(request)

    def digest(cut_at: int, olders: Olders) -> list[str]:
        out = condensed(run, 2, cut_at, lambda part: (Compaction(tuple(part)),
                                                      prepared.context),
                        prepared.context, tokens=8_000, olders=olders).compaction.messages
        return [m.text for m in out[2:5]]

    olders: Olders = {}
    right_after = digest(at + 1, olders)
    assert DIGEST_NAMES in right_after[0] and right_after[1] == request["content"]
    later = digest(at + 11, olders)
    assert later == digest(at + 11, {})
    assert DIGEST_NAMES not in later[0] and DIGEST_NAMES in later[2]


def test_a_move_of_the_cut_between_anchors_leaves_the_digests_older_part_as_sent(
        synthesizer, formats):
    """The digest is in two parts: the turns up to the last anchor, then the turns from
    there to the cut. A call that moves the cut without passing an anchor sends the older
    part as the call before sent it, so a provider's cache still serves it; only a move
    past an anchor rewrites it."""
    wire = formats["openai"]
    budget = 8_000
    messages = _session(200, 600, 0)
    sizes_of = [synthesizer.tokens(wire.parse({"messages": messages[k : k + 2]}).messages)
                for k in range(2, len(messages), 2)]
    calls = []  # (older part, newer part, the anchor the cut is past) per call
    for turns in range(100, 200):
        result = synthesizer.run(wire.parse({"messages": messages[: 2 + 2 * turns]}),
                                 SynthesisOptions(budget=Budget(budget), steer=False))
        assert result.tokens_after <= budget
        digest = wire.render(result.transcript)["messages"][2]["content"]
        older, _, newer = digest.partition(f"{MARKER} Then ")
        took = _condensed(digest)
        # The older part ends at the last anchor before the cut (the newer part is left
        # out when the cut falls on it, or before the first).
        assert took[0] == (cuts := grid(sizes_of[:turns], budget)).anchor(sum(took)) \
            or (len(took) == 1 and cuts.anchor(took[0]) in (0, took[0]))
        # The names are listed last, in the newer part, or in the one part there is.
        calls.append((older.split(DIGEST_NAMES)[0], newer, took[0]))
    moved = [(a, b) for a, b in pairwise(calls) if a[1] != b[1]]  # the newer part changed
    kept = [(a, b) for a, b in moved if a[2] == b[2]]  # ... within one anchor
    assert len(kept) >= len(moved) // 2 and kept
    assert all(b[0] == a[0] for a, b in kept)
    assert all(b[0] != a[0] for a, b in moved if a[2] != b[2])


def test_the_digests_newer_part_repeats_no_failure_line_and_lists_the_names(synthesizer,
                                                                          formats):
    """The failure lines' room is spent by the older part first and a line it listed is
    not listed again; the names, ranked over every condensed turn, come once, in the
    newer part, where a move rewrites them anyway."""
    wire = formats["openai"]
    messages = _failing_run(160, 30, text=lambda i: f"Next I run `check_{i // 40}` on "
                            f"src/m{i}.py.")
    result = synthesizer.run(wire.parse({"messages": messages}),
                             SynthesisOptions(budget=Budget(8_000), steer=False))
    digest = wire.render(result.transcript)["messages"][2]["content"]
    older, since, newer = digest.partition(f"{MARKER} Then ")
    assert since
    listed = _failures_listed(digest)
    assert len(listed) == len(set(listed)) and _failures_listed(older)
    assert DIGEST_NAMES not in older and newer.count(DIGEST_NAMES) == 1
    assert "check_3" in newer.split(DIGEST_NAMES)[1]  # the newest work's names first
    handles = re.findall(r"expand: (cs_\d+)", digest)
    spans = {s.handle: s for s in result.receipt.spans}
    assert len(handles) == 2 and all(h in spans for h in handles)
    first, second = (spans[h] for h in handles)
    assert first.last + 1 == second.first  # the two parts cover the condensed turns


def test_anchors_fall_every_few_budgets_and_stay_as_the_run_grows():
    step = int(1000 * ANCHOR_SHARE)
    sizes = [step // 4] * 12
    assert anchor_points(sizes, 1000) == [4, 8]  # the newest turn never counted
    assert grid(sizes, 1000).anchor(7) == 4 and grid(sizes, 1000).anchor(3) == 0
    assert grid(sizes, 1000).anchor(8) == 8
    uneven = [137 * (k % 5 + 1) for k in range(80)]
    grown = [anchor_points(uneven[:n], 1000) for n in range(2, 81)]
    assert all(b[: len(a)] == a for a, b in pairwise(grown))  # anchors only ever added
    assert len(grown[-1]) > 5


def test_a_newest_result_larger_than_the_budget_is_cut_with_a_handle(synthesizer, formats):
    wire = formats["openai"]
    messages = coding_run(3, output_chars=200) + tool_turn(
        "big", "bash", {"command": "pytest -q"},
        "\n".join(f"test_{k} PASSED" for k in range(4000)) + "\nFINAL: 1 failed")
    result = synthesizer.run(wire.parse({"messages": messages}),
                             SynthesisOptions(budget=Budget(2000), steer=False))
    out = wire.render(result.transcript)["messages"]
    assert result.tokens_after <= 2000
    last = out[-1]["content"]
    assert "expand: cs_" in last and "FINAL: 1 failed" in last  # cut, not dropped


def test_what_must_stay_past_the_budget_is_refused_with_the_sizes(synthesizer, formats):
    wire = formats["openai"]
    messages = coding_run(4)
    messages[0]["content"] = "Rules. " * 3000
    with pytest.raises(BudgetTooSmall, match=r"alone take \d+ tokens, past 'budget_tokens' 500"):
        synthesizer.run(wire.parse({"messages": messages}),
                        SynthesisOptions(budget=Budget(500)))


def test_under_the_trigger_the_messages_go_back_as_sent(synthesizer, formats):
    wire = formats["openai"]
    messages = coding_run(12)
    result = synthesizer.run(wire.parse({"messages": messages}),
                             SynthesisOptions(budget=Budget(None, trigger=1_000_000)))
    assert not result.compacted and result.transcript.messages == \
        wire.parse({"messages": messages}).messages


def test_cut_points_fall_every_eighth_of_the_budget_and_stay_as_the_run_grows():
    # A point where the running total reaches each multiple of 125 (an eighth of 1,000);
    # a turn that passes several multiples is one point; the newest turn is never cut.
    assert cut_points([100, 100, 100, 600, 100, 100], 1000) == [2, 3, 4, 5]
    assert cut_points([300], 1000) == []
    sizes = [137 * (k % 5 + 1) for k in range(80)]
    grown = [cut_points(sizes[:n], 2000) for n in range(2, 81)]
    assert all(b[:len(a)] == a for a, b in pairwise(grown))  # points only ever added


@given(low=st.integers(0, 40), high=st.integers(-2, 80), first=st.integers(-3, 90))
def test_the_search_near_the_last_cut_finds_what_a_bisection_finds(low, high, first):
    # Points from ``first`` on fit: both searches find the first in low..high, or None.
    def fits(i: int) -> bool:
        return i >= first

    assert first_fitting_near(fits, low, high) == first_fitting(fits, low, high)


def test_a_stride_begins_each_time_the_run_grows_by_twice_the_budget():
    assert stride_start([500] * 3, 1000) == 0  # 1,500 tokens: the first stride
    assert stride_start([500] * 4, 1000) == 4  # 2,000: the second begins at turn 4
    assert stride_start([500] * 7, 1000) == 4
    assert stride_start([500] * 8, 1000) == 8

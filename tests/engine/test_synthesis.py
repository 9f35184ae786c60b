import itertools
import json
from dataclasses import FrozenInstanceError, replace

import pytest

from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import TIER_BUDGETS, Tier
from app.engine.errors import InvalidOption, InvalidTranscript, StrategyFailed, UnknownStrategy
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.reading.phases import PhaseOptions
from app.engine.transcript.tokens import TokenCounter
from tests.support.build import coding_run, tool_turn
from tests.support.plugin import DropsUsers, KeepLastTurns


def synth(synthesizer, formats, messages, **options):
    wire = formats["openai"]
    result = synthesizer.run(wire.parse({"messages": messages}), SynthesisOptions(**options))
    return result, wire.render(result.transcript)["messages"]


def test_fast_keeps_head_notes_older_turns_and_keeps_recent_turns(synthesizer, formats):
    block = TIER_BUDGETS[Tier.MID].block_turns
    messages = coding_run(block + 3, output_chars=3000)  # a block and 3 turns after it
    result, out = synth(synthesizer, formats, messages, tier=Tier.MID)
    assert result.compacted
    assert out[:2] == messages[:2]
    note = out[2]["content"]
    assert note.startswith("[contextsynth] Earlier work, compacted:\n")
    assert f"\n({block} tool calls; expand: cs_" in note
    assert 'bash: cat src/module_0.py -> # module 0' in note
    # the run wrote nothing, so no ledger follows: the turns after the block stay as
    # multi-turn messages; an agent that only reads, with nothing missing, gets no nudge
    assert [m["role"] for m in out[3:]] == ["assistant", "tool"] * 3
    assert result.nudge is None
    assert out[-2]["tool_calls"] == messages[-2]["tool_calls"]
    assert out[-1] == messages[-1]  # the newest observation is never cut
    # the note keeps the lines of each read worth most (up to _READ_CHARS): about a third
    assert result.tokens_after < result.tokens_before / 2


def test_kept_results_before_the_last_turn_are_cut_with_a_handle(synthesizer, formats):
    result, out = synth(synthesizer, formats, coding_run(6, output_chars=3000), tier=Tier.MID)
    cut = out[-3]["content"]
    # A file read keeps a third more than the tier's result budget (see result_chars),
    # here the one for the turns after the last closed block.
    assert len(cut) < TIER_BUDGETS[Tier.MID].tail.result_chars * 4 // 3 + 100
    assert "...[contextsynth cut" in cut
    handle = cut.split("expand: ")[1].split("]")[0]
    assert handle in {s.handle for s in result.receipt.spans if s.kind == "truncated"}


def test_a_read_keeps_more_of_its_result_than_a_test_run(synthesizer, formats):
    """What the agent read it goes on to edit; a test run is read for its failure line
    and its summary."""
    rows = "".join(f"    check_{j} = verify({j}, 'case {j}')\n" for j in range(200))
    messages = [{"role": "system", "content": "You fix bugs with bash."},
                {"role": "user", "content": "Fix the crash in src/parser.py."}]
    for i, command in enumerate(["cat src/parser.py", "python -m pytest tests -q",
                                 "ls -la src/parsers/", "cat src/lexer.py"]):
        messages += tool_turn(f"call_{i}", "bash", {"command": command}, rows)
    _, out = synth(synthesizer, formats, messages, tier=Tier.MID)
    by_command = {json.loads(a["tool_calls"][0]["function"]["arguments"])["command"]:
                  r["content"] for a, r in itertools.pairwise(out)
                  if a.get("tool_calls") and r["role"] == "tool"}
    read, tests, listing = (len(by_command[c]) for c in (
        "cat src/parser.py", "python -m pytest tests -q", "ls -la src/parsers/"))
    budget = TIER_BUDGETS[Tier.MID].tail.result_chars  # no block is closed yet
    assert read > listing > tests
    assert tests < budget // 2 + 120 < budget < listing < budget + 120 < read
    assert by_command["cat src/lexer.py"] == rows  # the newest result stays whole


def test_a_handle_is_short_in_tokens_and_names_its_content(synthesizer, formats, encoder):
    # A handle is in every cut marker and note: 64 bits in decimal cost a model 9 tokens,
    # where 80 in hex took 13.
    first, _ = synth(synthesizer, formats, coding_run(6, output_chars=3000), tier=Tier.MID)
    again, _ = synth(synthesizer, formats, coding_run(6, output_chars=3000), tier=Tier.MID)
    handles = [s.handle for s in first.receipt.spans]
    assert handles == [s.handle for s in again.receipt.spans]  # same content, same names
    assert len(set(handles)) == len(handles) > 1
    for handle in handles:
        assert handle.startswith("cs_") and len(handle) == 23 and handle[3:].isdigit()
        assert len(encoder.encode(handle)) <= 9


def test_long_arguments_are_cut_and_stay_valid_json(synthesizer, formats):
    script = "print('hello')\n" * 400
    messages = coding_run(4) + tool_turn("w", "write_file", {"path": "a.py", "content": script},
                                         "written")
    _, out = synth(synthesizer, formats, messages, tier=Tier.LOCAL)
    args = out[-3]["tool_calls"][0]["function"]["arguments"]
    assert len(args) <= 2000
    value = json.loads(args)
    assert value["path"] == "a.py" and "...[cut" in value["content"]


def test_user_messages_in_older_turns_stay_in_place(synthesizer, formats):
    messages = [{"role": "user", "content": "Book a flight to Seattle."}]
    for i in range(40):
        flights = json.dumps([{"flight": f"HAT{i:03d}{k}", "price": 100 + k} for k in range(20)])
        messages += tool_turn(f"c{i}", "search_flights", {"day": i}, flights)
        messages.append({"role": "user", "content": f"Constraint {i}: economy only."})
    _, out = synth(synthesizer, formats, messages, tier=Tier.LOCAL)
    users = [m["content"] for m in out if m["role"] == "user"]
    authored = [u for u in users if not u.startswith("[contextsynth]")]
    assert authored == [m["content"] for m in messages if m["role"] == "user"]
    notes = [i for i, u in enumerate(users) if u.startswith("[contextsynth] ")
             and "compacted" in u]
    assert len(notes) >= 3
    # each note stands where its run was: between the user messages around it
    assert all(not users[i + 1].startswith("[contextsynth]") for i in notes)


def test_receipt_reports_facts_the_output_lost(synthesizer, formats):
    rows = "\n".join(f"row {i}: seat code S{i:03d}Q" for i in range(60))
    found = f"reservation found\nstatus: confirmed\ntotal $1,234.50\n{rows}\n" + "pad\n" * 200
    messages = coding_run(0) + tool_turn("r", "get_reservation", {"id": "ZFA04Y"}, found)
    messages += coding_run(16)[2:]  # the call is in the first closed block
    result, out = synth(synthesizer, formats, messages, tier=Tier.LOCAL)
    lost = result.receipt.lost
    # The note keeps the result's salient lines, within a budget; the rest is reported.
    assert "total $1,234.50" in out[2]["content"] and "1,234.50" not in lost.numbers
    assert "S059Q" in lost.identifiers
    assert "ZFA04Y" not in lost.identifiers  # the prior-work line keeps the arguments


def test_off_returns_input_but_still_reports_phase_and_counts(synthesizer, formats):
    messages = coding_run(8)
    result, out = synth(synthesizer, formats, messages, mode=Mode.OFF)
    assert not result.compacted and out == messages
    assert result.phase.value == "gather"
    assert result.tokens_before == result.tokens_after > 0


def test_nothing_to_gain_returns_the_input_unchanged(synthesizer, formats):
    messages = [{"role": "user", "content": "hi"}]
    result, out = synth(synthesizer, formats, messages, steer=False)
    assert not result.compacted and not result.nudged and out == messages


def test_nothing_compacted_comes_back_as_it_was_without_the_nudge(synthesizer, formats):
    # The output is never larger than the input: the nudge rides only on what a
    # compaction saved. The phase and the nudge's text are still in the response.
    messages = [{"role": "user", "content": "hi"}]
    result, out = synth(synthesizer, formats, messages)
    assert not result.compacted and not result.nudged and result.nudge
    assert out == messages and result.tokens_after == result.tokens_before
    off, out = synth(synthesizer, formats, messages, mode=Mode.OFF)
    assert out == messages and not off.nudged  # off leaves the messages alone


def test_the_nudge_comes_only_when_the_compaction_pays_for_it(synthesizer, formats):
    messages = coding_run(40)
    # A required tool that never ran: there is something to say.
    result, out = synth(synthesizer, formats, messages,
                        phase=PhaseOptions(required_tools=("deploy",)))
    assert result.compacted and result.nudged
    assert out[-1]["content"] == result.nudge
    assert result.tokens_after < result.tokens_before
    # The nudge is new on every call, where what the compaction took out would have been
    # read from the provider's cache at a tenth: a saving under 12.5 times the nudge's
    # tokens does not carry it, and the compaction goes out without it.
    thought = ("The parser fails on empty input. I will read the module that builds the token "
               "stream first, then the tests that cover it, and only then change anything; "
               "the public API must stay as it is, so every fix goes behind it. ") * 2
    few = [*coding_run(2), *tool_turn("t1", "bash", {"command": "pytest -q"}, "2 passed",
                                      text=thought)]
    small, out = synth(synthesizer, formats, few, phase=PhaseOptions(required_tools=("deploy",)))
    nudge = synthesizer.tokens(formats["openai"].parse(
        {"messages": [{"role": "user", "content": small.nudge}]}).messages)
    assert small.compacted and 0 < small.tokens_before - small.tokens_after < 12.5 * nudge
    assert not small.nudged and out[-1] == few[-1]


def test_the_requests_task_is_the_task(synthesizer, formats):
    messages = coding_run(12)
    wire = formats["openai"]
    options = SynthesisOptions(task="Make parse() accept ISO weeks; keep the public API.")
    prepared = synthesizer.prepare(wire.parse({"messages": messages}), options)
    assert prepared.task == options.task
    plan = synthesizer.plan_deep(prepared)
    assert plan is not None and "Make parse() accept ISO weeks" in plan.prompt[1].content
    assert "Fix the crash in src/parser.py" not in plan.prompt[1].content.split("<transcript>")[0]
    default = synthesizer.prepare(wire.parse({"messages": messages}), SynthesisOptions())
    assert default.task == messages[1]["content"]


def test_large_tiers_get_the_nudge_only_late(synthesizer, formats):
    # Long results: the nudge is new on every call, and rides on a saving of 12.5 times it.
    messages = coding_run(12, output_chars=3000)
    early, _ = synth(synthesizer, formats, messages, tier=Tier.LARGE,
                     phase=PhaseOptions(iteration=3, max_iterations=20))
    late, out = synth(synthesizer, formats, messages, tier=Tier.LARGE,
                      phase=PhaseOptions(iteration=15, max_iterations=20))
    assert early.nudge is None
    assert late.nudge is not None and out[-1]["content"] == late.nudge


def test_observation_mask_keeps_every_action(synthesizer, formats):
    messages = coding_run(8, output_chars=3000)  # three turns fill the window's tokens
    result, out = synth(synthesizer, formats, messages, mode=Mode.CUSTOM,
                        strategy="observation-mask", steer=False)
    calls_in = [m["tool_calls"][0]["function"]["name"] for m in messages if m.get("tool_calls")]
    calls_out = [m["tool_calls"][0]["function"]["name"] for m in out if m.get("tool_calls")]
    assert calls_in == calls_out
    masked = [m["content"] for m in out if m["role"] == "tool" and "omitted" in m["content"]]
    assert len(masked) == 6  # all but the tier's two recent turns
    assert {s.kind for s in result.receipt.spans} >= {"masked"}


def test_custom_needs_a_known_strategy(synthesizer, formats):
    with pytest.raises(InvalidOption, match="synthesis_strategy"):
        synth(synthesizer, formats, coding_run(4), mode=Mode.CUSTOM)
    with pytest.raises(UnknownStrategy, match="observation-mask"):
        synth(synthesizer, formats, coding_run(4), mode=Mode.CUSTOM, strategy="nope")


def test_plugins_are_held_to_the_invariants(encoder, formats):
    strategies = {**builtin_strategies(), "keep-last": KeepLastTurns(),
                  "drops-users": DropsUsers()}
    synthesizer = Synthesizer(TokenCounter(encoder), strategies)
    result, out = synth(synthesizer, formats, coding_run(5), mode=Mode.CUSTOM,
                        strategy="keep-last")
    assert result.compacted and out[3]["content"] == "[elided]"
    with pytest.raises(StrategyFailed, match="drops-users"):
        synth(synthesizer, formats, coding_run(5), mode=Mode.CUSTOM, strategy="drops-users")


def test_empty_transcript_is_rejected(synthesizer, formats):
    transcript = formats["openai"].parse({"messages": [{"role": "user", "content": "x"}]})
    with pytest.raises(InvalidTranscript, match="empty"):
        synthesizer.run(replace(transcript, messages=()), SynthesisOptions())


def test_a_result_just_over_the_budget_is_not_made_longer(synthesizer, formats):
    messages = coding_run(0)
    for i in range(5):
        # A rule of 320 characters is a handful of tokens: cutting it to the budget would
        # save fewer than the marker adds.
        messages += tool_turn(f"c{i}", "bash", {"command": "ls"}, "=" * 320)
    result, out = synth(synthesizer, formats, messages, tier=Tier.LOCAL, steer=False)
    assert all(len(m["content"]) <= 320 for m in out if m["role"] == "tool")
    assert not [s for s in result.receipt.spans if s.kind == "truncated"]


def test_engine_refuses_modes_it_does_not_run(synthesizer, formats):
    with pytest.raises(InvalidOption, match="decided before"):
        synth(synthesizer, formats, coding_run(4), mode=Mode.DEEP)


def test_a_command_run_again_shows_its_new_outcome_on_later_steps(encoder, formats):
    """Notes come from caches keyed by content: the same call with another result
    must not reuse the line made for the first one."""
    synthesizer = Synthesizer(TokenCounter(encoder), builtin_strategies())
    messages = coding_run(2)
    messages += tool_turn("t1", "bash", {"command": "pytest -q"}, "1 failed, 3 passed")
    messages += coding_run(3)[2:]
    synth(synthesizer, formats, messages)  # an earlier step, cached
    messages += tool_turn("t2", "bash", {"command": "pytest -q"}, "4 passed")
    messages += coding_run(20)[2:]  # enough later turns to close the block holding it
    _, out = synth(synthesizer, formats, messages)
    note = out[2]["content"]
    assert 'bash: pytest -q -> 1 failed, 3 passed' in note
    assert 'bash: pytest -q -> 4 passed' in note


def test_the_recent_window_grows_by_tokens_when_a_tier_has_a_budget(encoder, formats):
    from app.engine.compaction import rebuild as fast
    from app.engine.compaction.base import StrategyContext
    from app.engine.compaction.tiers import TIER_BUDGETS
    from app.engine.jobs.synthesize.synthesizer import EngineCaches
    from app.engine.transcript.model import segment

    messages = formats["openai"].parse({"messages": coding_run(10, output_chars=400)}).messages
    counter = TokenCounter(encoder)
    caches = EngineCaches()

    def window(budget_tokens):
        budget = replace(TIER_BUDGETS[Tier.MID], window_tokens=budget_tokens)
        context = StrategyContext(budget, segment(messages), caches.handles, caches.calls,
                                  caches.outcomes, counter.messages)
        older, recent = fast.older_and_recent(messages, context)
        return len(older), len(recent)

    assert window(0) == (8, 2)  # turns only
    per_turn = counter.messages(messages[2:4])
    assert window(per_turn * 5 + 1) == (5, 5)  # two more turns fit
    assert window(10**6) == (0, 10)
    assert window(1) == (8, 2)  # never fewer than the tier's turns


def test_a_note_grows_at_its_end_so_its_start_stays_cached(synthesizer, formats):
    """What changes from step to step (the count, the handle, the ledger) closes the note;
    the lines before it are the same bytes on the next step."""
    messages = coding_run(12)
    rebuild = {"mode": Mode.CUSTOM, "strategy": "fast-rebuild", "tier": Tier.MID}
    _, before = synth(synthesizer, formats, messages[:-2], **rebuild)
    _, after = synth(synthesizer, formats, messages, **rebuild)
    old, new = before[2]["content"], after[2]["content"]
    stable = old.split("\n(")[0]  # up to the footer
    assert new.startswith(stable + "\n") and len(new) > len(old)


def test_code_the_agent_just_wrote_stays_readable(synthesizer, formats):
    """A heredoc two turns back is what the agent edits and runs next: its names must
    still be there to use, not behind a cut. Before its block closes it is whole; in
    the block's note, its lines worth most follow the call's line."""
    script = "".join(f"def check_case_{i}(value):\n    return parse(value) == {i}\n"
                     for i in range(60))
    command = f"cat > test_cases.py << 'EOF'\n{script}EOF"
    written = tool_turn("w", "bash", {"command": command}, "")
    ran = tool_turn("r", "bash", {"command": "python test_cases.py"}, "ok")
    _, out = synth(synthesizer, formats, [*coding_run(3, output_chars=3000), *written, *ran],
                   tier=Tier.MID)
    whole = next(m for m in out if m.get("tool_calls") and m["tool_calls"][0]["id"] == "w")
    assert json.loads(whole["tool_calls"][0]["function"]["arguments"])["command"] == command

    block = TIER_BUDGETS[Tier.MID].block_turns  # the write ends the first block
    _, out = synth(synthesizer, formats,
                   [*coding_run(block - 1, output_chars=3000), *written, *ran], tier=Tier.MID)
    assert not any(m.get("tool_calls") and m["tool_calls"][0]["id"] == "w" for m in out)
    note = next(m["content"] for m in out if "cat > test_cases.py" in str(m["content"]))
    lines = note.split("\n")
    at = next(i for i, line in enumerate(lines) if "cat > test_cases.py" in line)
    assert "[defines check_case_0, check_case_1," in lines[at]
    code = [line for line in lines[at + 1 :] if line.startswith("    | ")]
    assert len(code) >= 10 and all("check_case_" in line or "parse(" in line for line in code)
    assert not any(line.strip() == "| EOF" for line in lines)  # the heredoc's end is no code


def _long_run(turns):
    """A coding run: a failure, a write and a statement of cause early, then reads."""
    messages = coding_run(0)
    messages += tool_turn("f", "bash", {"command": "pytest tests/test_dates.py -q"},
                          "Traceback (most recent call last):\n  File \"src/dates.py\", "
                          "line 9, in parse\nValueError: month must be in 1..12, got 13")
    messages += tool_turn("w", "write_file", {"path": "src/dates.py",
                                              "content": "def parse_month(s):\n    return 1\n"},
                          "File written.", text="The bug is that parse reads a 1-based month "
                          "as 0-based; fix parse_month in src/dates.py.")
    for i in range(turns):
        body = "".join(f"    field_{i}_{j} = load({j})\n" for j in range(40))
        messages += tool_turn(f"r{i}", "bash", {"command": f"cat src/module_{i}.py"},
                              f"# module {i}\n{body}")
    return messages


def test_old_reads_age_out_of_a_note_while_failures_writes_and_words_stay(
        synthesizer, formats):
    _, out = synth(synthesizer, formats, _long_run(90), tier=Tier.MID)
    note = "\n".join(m["content"] for m in out if m["role"] == "user"
                     and m["content"].startswith("[contextsynth] "))
    assert "ValueError: month must be in 1..12, got 13" in note
    assert 'write_file(path="src/dates.py"' in note and "[defines parse_month]" in note
    assert "The bug is that parse reads a 1-based month as 0-based" in note
    assert "cat src/module_0.py" not in note.split("Artifacts so far:")[0]
    left_out = next(line for line in note.split("\n") if "left out" in line)
    assert left_out.startswith("- (") and "lines of older calls" in left_out
    # reads in the newest closed block keep their lines and facts
    assert 'bash: cat src/module_70.py -> # module 70' in note
    assert "field_70_" in note


def test_a_rebuilt_notes_aged_part_changes_once_an_age_step(synthesizer, formats):
    """Lines age in steps of messages, not a message at a time: between two steps the
    aged part of a note is the same bytes, which a provider's prompt cache keeps."""
    messages = _long_run(90)
    starts = [i for i, m in enumerate(messages) if m["role"] == "assistant"][-40:]
    aged_parts = []
    for stop in starts:
        _, out = synth(synthesizer, formats, messages[:stop], mode=Mode.CUSTOM,
                       strategy="fast-rebuild", tier=Tier.MID)
        note = out[2]["content"]
        aged_parts.append(note.split("left out)")[0])
    changes = sum(a != b for a, b in itertools.pairwise(aged_parts))
    assert 1 <= changes <= 3  # 40 steps of 2 messages age the lines twice or three times


REASONING = ("Now let me look at the output again. The crash comes from `parse_month` in "
             "src/parser.py, because it reads the month before stripping the padding. "
             + "I will go through every caller one by one to be sure. " * 30
             + "Next I will run tests/test_parser.py.")


def _reasoning_run(turns=6, output_chars=200):
    messages = coding_run(turns, output_chars=output_chars)
    for m in messages:
        if m["role"] == "assistant":
            m["content"] = REASONING
    return messages


def test_recent_reasoning_beside_calls_is_cut_to_its_gist_with_a_handle(synthesizer, formats):
    result, out = synth(synthesizer, formats, _reasoning_run(), tier=Tier.MID)
    said = [m["content"] for m in out if m["role"] == "assistant"]
    assert said  # the newest turn's text is cut as well: it then reads the same later
    for text in said:
        assert len(text) < 400 and "`parse_month` in src/parser.py" in text
        assert "...[contextsynth cut " in text
    handle = said[-1].split("expand: ")[1].split("]")[0]
    assert handle in {s.handle for s in result.receipt.spans if s.kind == "truncated"}
    # the calls themselves are untouched
    assert [m["tool_calls"] for m in out if m["role"] == "assistant"] == \
        [m["tool_calls"] for m in _reasoning_run()[-2 * len(said)::2]]


def test_a_reply_to_the_user_keeps_its_whole_text(synthesizer, formats):
    messages = _reasoning_run(3)
    messages.append({"role": "assistant", "content": REASONING})
    messages.append({"role": "user", "content": "ok, go on"})
    _, out = synth(synthesizer, formats, messages, tier=Tier.MID)
    assert {"role": "assistant", "content": REASONING} in out


def test_thinking_blocks_stay_as_they_came_when_reasoning_is_cut(synthesizer, formats):
    wire = formats["anthropic"]
    thinking = {"type": "thinking", "thinking": "private chain", "signature": "sig-1"}
    messages = [{"role": "user", "content": "Fix the crash in src/parser.py."}]
    for i in range(4):
        messages += [
            {"role": "assistant", "content": [
                thinking, {"type": "text", "text": REASONING},
                {"type": "tool_use", "id": f"t{i}", "name": "bash",
                 "input": {"command": f"cat src/m{i}.py"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"# m{i}"}]},
        ]
    result = synthesizer.run(wire.parse({"messages": messages}), SynthesisOptions(tier=Tier.MID))
    out = wire.render(result.transcript)["messages"]
    replies = [m for m in out if m["role"] == "assistant"]
    assert replies
    for m in replies:
        kinds = [b["type"] for b in m["content"]]
        assert kinds == ["thinking", "text", "tool_use"]
        assert m["content"][0] == thinking
        assert "...[contextsynth cut " in m["content"][1]["text"]


def test_a_result_just_over_the_budget_stays_whole(synthesizer, formats):
    # A read is cut to a third more than the budget, and only when that saves a third of
    # it: a third over stays as it is (cutting would cost a second sending for little),
    # twice the budget is cut (the turn before the newest, eleven calls into the run:
    # by then a cut of half a result pays for sending it again).
    limit = TIER_BUDGETS[Tier.MID].tail.result_chars * 4 // 3
    for chars, cut in ((limit * 4 // 3, False), (limit * 2, True)):
        _, out = synth(synthesizer, formats, coding_run(12, output_chars=chars), tier=Tier.MID)
        older = [m["content"] for m in out if m["role"] == "tool"][:-1]
        assert older and ("...[contextsynth cut" in older[-1]) is cut
        assert cut or not any("...[contextsynth cut" in text for text in older)


def test_a_turn_sent_whole_is_cut_once_a_turn_follows_only_when_that_pays(
        synthesizer, formats):
    """The newest result goes out whole, and its cut form would be new to the provider's
    cache: cut early in a run, half a result would not pay that back within as many calls
    again as the run has made, so the turn stays as it went out, on every later call too;
    ten calls in, the same cut pays."""
    limit = TIER_BUDGETS[Tier.MID].tail.result_chars * 4 // 3
    messages = coding_run(13, output_chars=limit * 2)
    _, early = synth(synthesizer, formats, messages[:2 + 2 * 4], tier=Tier.MID, steer=False)
    assert [m["content"] for m in early] == [m["content"] for m in messages[:2 + 2 * 4]]
    _, out = synth(synthesizer, formats, messages[:-2], tier=Tier.MID, steer=False)
    _, later = synth(synthesizer, formats, messages, tier=Tier.MID, steer=False)
    results = {m["tool_call_id"]: m["content"] for m in later if m["role"] == "tool"}
    whole = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert results["call_9"] == whole["call_9"]
    assert "...[contextsynth cut" in results["call_10"] and "...[contextsynth cut" \
        in results["call_11"]
    # The next call sends this one's messages again up to its newest turn, which it cuts.
    assert later[: len(out) - 2] == out[:-2]


def test_an_older_recent_json_answer_is_shown_as_its_fields(synthesizer, formats):
    """An API's answer two turns back reads as the values of its objects, each flight
    on a line with the fields that differ, and a marker with the handle of the whole;
    the newest answer, and a failed one, stay as they came."""
    flights = {"flights": [{"flight_number": f"HAT{100 + i}", "origin": "JFK",
                            "destination": "SEA", "price": 120 + 7 * i,
                            "status": "available",
                            "aircraft": "Airbus A321neo, three cabins, wi-fi and power at "
                                        "every seat"} for i in range(9)]}
    answer = json.dumps(flights)
    failed = json.dumps({"error": "Error: reservation ZFA04Y not found", "code": 404})
    short = json.dumps({"status": "held", "hold_id": "H-5521", "expires_in_s": 900})
    # A few calls into the run: the fields' form is new to the provider's cache, and by
    # then what it saves on the calls to come pays for that.
    looked = [turn for i in range(2)
              for turn in tool_turn(f"l{i}", "list_airports", {"page": i}, f"JFK SEA LAX {i}")]
    messages = [{"role": "system", "content": "You book flights."},
                {"role": "user", "content": "Book the cheapest JFK to SEA flight."},
                *looked,
                *tool_turn("s1", "search_flights", {"origin": "JFK"}, answer),
                *tool_turn("g1", "get_reservation", {"id": "ZFA04Y"}, failed),
                *tool_turn("h1", "hold_seat", {"flight_number": "HAT100"}, short),
                *tool_turn("s2", "search_flights", {"origin": "JFK", "day": 2}, answer)]
    _, out = synth(synthesizer, formats, messages, tier=Tier.MID, steer=False)
    results = [m["content"] for m in out if m["role"] == "tool"][len(looked) // 2:]
    # a short answer stays as it came: with the marker its fields would be longer
    assert results[1:] == [failed, short, answer]
    shown = results[0].split("\n")
    assert "HAT104 | 148" in shown and "HAT108 | 176" in shown
    assert shown[-1].startswith(f"[contextsynth: {len(answer)} chars of JSON as fields; "
                                "expand: cs_")
    assert len(results[0]) * 3 <= len(answer) * 2


def test_observation_mask_shows_an_older_action_with_the_gist_the_window_showed(
        synthesizer, formats):
    # A turn's reasoning reads the same before and after it leaves the window, so the
    # provider's cache keeps the messages before the newest masked result.
    messages = _reasoning_run(8, output_chars=3000)  # two turns fill the window
    options = {"mode": Mode.CUSTOM, "strategy": "observation-mask", "steer": False,
               "tier": Tier.MID}
    _, earlier = synth(synthesizer, formats, messages[:-4], **options)
    _, later = synth(synthesizer, formats, messages, **options)
    said_then = [m["content"] for m in earlier if m["role"] == "assistant"]
    said_now = [m["content"] for m in later if m["role"] == "assistant"]
    assert said_now[: len(said_then)] == said_then
    assert all("...[contextsynth cut " in text for text in said_now)
    assert sum("omitted" in str(m["content"]) for m in later if m["role"] == "tool") >= 4


def test_fast_cuts_the_turns_after_its_blocks_to_their_own_budget(synthesizer, formats):
    """``fast`` sends the turns after its last closed block until a block's worth have
    piled up, where ``fast-rebuild``'s window holds a few: its results get less each."""
    budget = TIER_BUDGETS[Tier.MID]
    assert budget.tail.result_chars < budget.result_chars
    assert TIER_BUDGETS[Tier.LARGE].tail is TIER_BUDGETS[Tier.LARGE]  # no budget of its own
    messages = coding_run(3, output_chars=3000)
    cut = {}
    for name, options in (("fast", {}), ("rebuild", {"mode": Mode.CUSTOM,
                                                     "strategy": "fast-rebuild"})):
        _, out = synth(synthesizer, formats, messages, tier=Tier.MID, **options)
        cut[name] = len(out[-3]["content"])
    read = 4 / 3  # the older results are file reads
    assert abs(cut["fast"] - budget.tail.result_chars * read) < 120
    assert abs(cut["rebuild"] - budget.result_chars * read) < 120


def test_what_a_call_returns_is_a_value_nothing_downstream_can_change(synthesizer, formats):
    """The per-call values write out their __init__ (compiled, it is 15 times faster than
    the generated one) and stay frozen: the receipt a caller gets is the one computed."""
    transcript = formats["openai"].parse({"messages": coding_run(30, output_chars=900)})
    prepared = synthesizer.prepare(transcript, SynthesisOptions())
    result = synthesizer.compact(prepared)
    assert result.compacted and result.receipt.spans
    for value, field in ((result, "tokens_after"), (result.receipt, "lost"),
                         (result.receipt.lost, "paths"), (result.transcript, "messages"),
                         (result.signals, "edited"), (prepared, "nudge"),
                         (prepared.context, "budget"), (prepared.context.segments, "turns")):
        with pytest.raises(FrozenInstanceError):
            setattr(value, field, None)
    again = replace(result, nudged=not result.nudged)
    assert again.nudged is not result.nudged and again.receipt is result.receipt
    assert hash(result.receipt.lost) == hash(replace(result.receipt.lost))
    assert replace(prepared.context, budget=TIER_BUDGETS[Tier.LOCAL]) == \
        prepared.context.with_budget(TIER_BUDGETS[Tier.LOCAL])

"""A closed block's notes are made once and replayed with the caller's own messages."""

import copy

from app.engine.compaction.blocknotes import BlockNotes, content
from app.engine.compaction.fast import aged_blocks, closed_blocks
from app.engine.compaction.notes import ALL_AGED, Notes
from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import Tier
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.transcript.model import Message, Part, ToolCall
from app.engine.transcript.tokens import TokenCounter
from tests.support.convert import to_anthropic
from tests.support.corpus import load_named


def _blocks(wire, messages, encoder):
    parsed = wire.parse({"messages": messages}).messages
    counter = TokenCounter(encoder)
    context = EngineCaches().context(parsed, Tier.MID, counter.messages)
    blocks, _, _ = closed_blocks(parsed, context)
    budget = context.budget
    aged = aged_blocks(len(blocks), budget.full_blocks, budget.age_batch)
    return parsed, context, [
        (parsed[b[0].start : b[-1].stop], j == 0, ALL_AGED if j < aged else -1)
        for j, b in enumerate(blocks)]


def _same(a, b):
    assert [(m.role, m.text, m.index) for m in a.messages] == \
        [(m.role, m.text, m.index) for m in b.messages]
    assert a.spans == b.spans and a.last_note == b.last_note
    assert [id(m) for m in a.dropped] == [id(m) for m in b.dropped]
    assert a.ledgers == b.ledgers


def test_every_block_of_a_growing_run_replays_what_writing_it_anew_gives(encoder, formats):
    """A customer-service run: user messages sit inside the blocks, so a block holds
    several runs and the caller's messages between them. Each call parses the
    transcript anew, as a request does."""
    wire = formats["openai"]
    messages = load_named("tau-airline-gpt4o-task046")
    memo = BlockNotes(Notes())
    hits = 0
    for stop in range(20, len(messages) + 1, 3):
        _, context, blocks = _blocks(wire, messages[:stop], encoder)
        for region, first, aged in blocks:
            replayed = memo.write(region, context, aged_before=aged, first=first)
            fresh = Notes().write(region, context, aged_before=aged, first=first)
            _same(replayed, fresh)
            # The caller's messages are this request's objects, not an earlier one's.
            kept = [m for m in replayed.messages if m.index >= 0]
            assert kept and all(any(m is r for r in region) for m in kept)
            for span in replayed.spans:
                assert all(any(o is r for r in region) for o in span.originals)
            hits += 1
    assert hits > 20


def test_a_block_that_ages_is_written_in_its_aged_form(encoder, formats):
    wire = formats["openai"]
    messages = load_named("minisweagent-ds-chat-dev-pydicom__pydicom-901")
    _, context, blocks = _blocks(wire, messages, encoder)
    region, first, _ = blocks[0]
    memo = BlockNotes(Notes())
    whole = memo.write(region, context, aged_before=-1, first=first)
    aged = memo.write(region, context, aged_before=ALL_AGED, first=first)
    assert sum(len(m.text) for m in aged.messages) < sum(len(m.text) for m in whole.messages)
    _same(aged, Notes().write(region, context, aged_before=ALL_AGED, first=first))
    _same(memo.write(region, context, aged_before=-1, first=first), whole)


def test_a_user_message_whose_wire_form_changed_comes_back_as_sent(encoder, formats):
    """An Anthropic agent moves its cache_control mark: the block's notes are the same,
    but the user message left in place must carry the new mark."""
    wire = formats["anthropic"]
    loop = Synthesizer(TokenCounter(encoder), builtin_strategies())
    payload = to_anthropic(load_named("tau-airline-gpt4o-task046"))
    loop.run(wire.parse(payload), SynthesisOptions())
    moved = copy.deepcopy(payload)
    # A user message early in the run, in the first closed block.
    at, message = next((i, m) for i, m in enumerate(moved["messages"][2:], 2)
                       if m["role"] == "user" and isinstance(m["content"], list)
                       and m["content"][-1].get("type") == "text")
    message["content"][-1]["cache_control"] = {"type": "ephemeral"}
    warm = wire.render(loop.run(wire.parse(moved), SynthesisOptions()).transcript)
    cold_engine = Synthesizer(TokenCounter(encoder), builtin_strategies())
    cold = wire.render(cold_engine.run(wire.parse(moved), SynthesisOptions()).transcript)
    assert warm == cold
    assert any(b.get("cache_control") == {"type": "ephemeral"}
               for m in warm["messages"] if isinstance(m["content"], list)
               for b in m["content"]), at


def _call(index, command="ls", *, error=False, tool_id="c1"):
    return [Message("assistant", (Part("text", "look"),),
                    (ToolCall(tool_id, "bash", f'{{"command": "{command}"}}'),), index=index),
            Message("tool", (Part("text", "out"),), tool_call_id=tool_id, is_error=error,
                    index=index + 1)]


def test_the_key_tells_apart_what_a_note_reads():
    base = content(_call(4))
    assert content(_call(4)) == base
    assert content(_call(6)) != base  # the note's lines and span name wire indices
    assert content(_call(4, "ls -a")) != base
    assert content(_call(4, error=True)) != base
    assert content(_call(4, tool_id="c2")) != base
    two_parts = _call(4)
    two_parts[0] = Message("assistant", (Part("text", "lo"), Part("text", "ok")),
                           two_parts[0].tool_calls, index=4)
    assert content(two_parts) != base


def test_what_is_remembered_holds_none_of_the_callers_messages(encoder, formats):
    """The notes, ledgers and places are kept; the messages come from each request."""
    _, context, blocks = _blocks(formats["openai"], load_named("tau-airline-gpt4o-task046"),
                                 encoder)
    memo = BlockNotes(Notes())
    region, first, aged = blocks[0]
    memo.write(region, context, aged_before=aged, first=first)
    ((made, _),) = memo._memo._young.values()
    assert made.spans and all(span.originals == () for span, _ in made.spans)
    sent = {id(m) for m in region}
    assert not any(isinstance(m, Message) and id(m) in sent for m in made.messages)


def test_a_note_never_takes_more_tokens_than_the_run_it_replaces(encoder, formats):
    """A support conversation: between two customer messages the agent often says one
    short thing, and a note about it (a header, its line, the handle) can be shorter in
    characters and still longer in tokens; such a run stays as it was."""
    wire = formats["openai"]
    parsed = wire.parse({"messages": load_named("tau-airline-gpt4o-task023-trial3")}).messages
    counter = TokenCounter(encoder)
    context = EngineCaches().context(parsed, Tier.MID, counter.messages)
    region = parsed[context.segments.head_stop:]
    written = Notes().write(region, context, aged_before=-1, first=True)
    notes = [m for m in written.messages if m.index < 0]
    assert len(notes) == len(written.spans) > 5
    for note, span in zip(notes, written.spans, strict=True):
        assert counter.messages([note]) < counter.messages(span.originals)
    # "No problem! Could you please provide your email address ...": a reply of 34
    # tokens whose note took 42.
    kept = {id(m) for m in written.messages}
    assert any(m.role == "assistant" and m.text.startswith("No problem!") and id(m) in kept
               for m in region)

"""A run whose shape the engine does not read is compacted as a window would: recent
turns whole, the older ones out whole behind a handle, people's words kept."""

from __future__ import annotations

import json

from app.engine.jobs.synthesize.synthesizer import SynthesisOptions
from app.engine.reading.confidence import read_with_confidence, unread
from app.engine.reading.textactions import asks_user
from app.engine.transcript.model import segment
from tests.support.wire import to_anthropic

INSTRUCTION = "Please also keep the public API of dates.py unchanged."


def _unseen_harness_run(steps: int) -> list[dict]:
    """An agent that acts in prose and a harness that answers in prose with no shape it
    repeats: nothing here reads its results as results."""
    messages: list[dict] = [{"role": "system", "content": "You are a coding agent."},
                            {"role": "user", "content": "Fix the date parser in dates.py."}]
    for i in range(steps):
        messages.append({"role": "assistant", "content": f"Next I will run check {i} on "
                         f"module_{i}.py to see whether parse_{i} accepts ISO weeks."})
        output = "\n".join(f"module_{i}.py:{k}: value_{i}_{k} = {k * i}" for k in range(60))
        messages.append({"role": "user", "content": f"Ran check {i} at step {i} and got "
                         f"{60 + i} lines:\n{output}"})
        if i == 3:
            messages.append({"role": "assistant", "content": "Shall I go on?"})
            messages.append({"role": "user", "content": INSTRUCTION})
    return messages


def test_a_run_of_an_unseen_shape_is_not_read_with_confidence(formats):
    parsed = formats["openai"].parse({"messages": _unseen_harness_run(12)}).messages
    assert not read_with_confidence(parsed, segment(parsed).head_stop)


def test_an_unread_run_is_compacted_as_a_window_would(synthesizer, formats):
    messages = _unseen_harness_run(24)
    wire = formats["openai"]
    result = synthesizer.run(wire.parse({"messages": messages}), SynthesisOptions())
    out = wire.render(result.transcript)["messages"]
    assert result.compacted and result.tokens_after < result.tokens_before / 2
    # The head, then one note naming its handle, then people's words, then the recent
    # turns exactly as they came.
    assert out[:2] == messages[:2]
    note = out[2]["content"]
    assert note.startswith("[contextsynth]") and "earlier messages left out" in note
    [span] = result.receipt.spans
    assert span.handle in note
    assert INSTRUCTION in [m["content"] for m in out]
    tail = out[out.index(next(m for m in out if m["content"] == INSTRUCTION)) + 1:]
    tail = [m for m in tail if not m["content"].startswith("[contextsynth] Phase")]
    assert tail == messages[len(messages) - len(tail):]
    assert len(tail) >= 8  # at least four turns whole
    # Nothing of the agent's recent actions was cut to a gist.
    assert "you said" not in json.dumps(out)


def test_the_users_answers_to_the_agents_questions_stay_however_long(synthesizer, formats):
    """A harness that wraps the user's answer in its result shape and its boilerplate
    (Roo Code: ``[ask_followup_question for '...'] Result:``, then ``<answer>`` and a
    thousand characters of environment details): the answer is the user's, kept whole by
    the window, and never counted as unread output."""
    messages = _unseen_harness_run(24)
    details = "<environment_details>\n" + "\n".join(
        f"# Open tab {k}: src/module_{k}.py" for k in range(40)) + "\n</environment_details>"
    answer = ("[ask_followup_question for 'Which parser should I keep?'] Result:\n<answer>\n"
              "Keep the strict parser; drop the lenient one.\n</answer>\n" + details)
    asks = ("Two parsers disagree.\n<ask_followup_question>\n<question>Which parser should "
            "I keep?</question>\n</ask_followup_question>")
    messages[6:6] = [{"role": "assistant", "content": asks},
                     {"role": "user", "content": answer}]
    wire = formats["openai"]
    parsed = wire.parse({"messages": messages}).messages
    assert asks_user(parsed[6]) and not asks_user(parsed[4])
    assert parsed[7] not in unread(parsed, segment(parsed).head_stop)
    result = synthesizer.run(wire.parse({"messages": messages}), SynthesisOptions())
    out = wire.render(result.transcript)["messages"]
    assert "earlier messages left out" in out[2]["content"]  # read as a window would
    assert answer in [m["content"] for m in out]
    assert asks not in [m["content"] for m in out]  # the agent's turn went with the rest


def test_in_a_format_that_joins_user_messages_the_users_words_beside_output_stay(
        synthesizer, formats):
    """Anthropic's wire joins neighbouring user messages: the user's short instruction
    comes in one message with the long output before it, and the window keeps it."""
    messages = _unseen_harness_run(24)
    at = messages.index(next(m for m in messages if m["content"] == INSTRUCTION))
    del messages[at - 1]  # the instruction right after an output: one message on the wire
    payload = to_anthropic(messages)
    joined = next(m for m in payload["messages"] if isinstance(m["content"], list)
                  and any(b.get("text") == INSTRUCTION for b in m["content"]))
    assert len(joined["content"]) == 2
    wire = formats["anthropic"]
    result = synthesizer.run(wire.parse(payload), SynthesisOptions())
    out = wire.render(result.transcript)
    assert "earlier messages left out" in json.dumps(out)  # read as a window would
    texts = [b.get("text") for m in out["messages"] if isinstance(m["content"], list)
             for b in m["content"]]
    # The message stays whole, the output beside the words with them: a message is kept
    # or left out as it came.
    assert INSTRUCTION in texts and joined["content"][0]["text"] in texts


def test_the_window_moves_in_steps_so_its_prefix_stays_between_them(synthesizer, formats):
    wire = formats["openai"]
    outs = [wire.render(synthesizer.run(wire.parse({"messages": _unseen_harness_run(n)}),
                                        SynthesisOptions(steer=False)).transcript)["messages"]
            for n in (20, 21, 22)]
    notes = [next(m["content"] for m in out if "left out" in m["content"]) for out in outs]
    assert len(set(notes)) <= 2  # the cut moved at most once over three steps
    assert outs[0][:3] == outs[1][:3] or outs[1][:3] == outs[2][:3]

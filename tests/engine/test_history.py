import pytest

from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.history.compressor import HistoryCompressor, HistoryOptions
from app.engine.prompts import HISTORY_MARKER, HISTORY_SECTIONS
from app.engine.transcript.tokens import TokenCounter
from tests.support.build import coding_run, tool_turn
from tests.support.corpus import load, transcript_files
from tests.support.invariants import check_openai


@pytest.fixture
def compressor(encoder):
    return HistoryCompressor(TokenCounter(encoder), EngineCaches())


def compress(compressor, formats, messages, **options):
    wire = formats["openai"]
    plan = compressor.plan(wire.parse({"messages": messages}), HistoryOptions(**options))
    if not plan.fired:
        return compressor.unchanged(plan), messages, plan
    result = compressor.finish(plan, compressor.fast_summary(plan))
    return result, wire.render(result.transcript)["messages"], plan


SEATS = " ".join(f"{row}{seat}" for row in range(1, 30) for seat in "ABCD")


def chat(turns: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are a support agent."},
                {"role": "user", "content": "Rebook me to Seattle on May 20."}]
    for i in range(turns):
        messages += tool_turn(f"c{i}", "search_flights", {"day": i},
                              f'{{"flight": "HAT{i:03d}", "price": {100 + i}, '
                              f'"seats": "{SEATS}"}}')
        messages.append({"role": "assistant", "content": f"Found HAT{i:03d}."})
        messages.append({"role": "user", "content": f"I must fly economy only, option {i}."})
    return messages


def test_under_the_trigger_nothing_changes(compressor, formats):
    result, out, _ = compress(compressor, formats, chat(3), trigger_messages=50)
    assert not result.compressed and out == chat(3)
    assert "under the trigger" in result.reason


def test_token_trigger(compressor, formats):
    result, _, _ = compress(compressor, formats, chat(3), trigger_messages=500,
                            trigger_tokens=200, keep_last_n=4)
    assert result.compressed
    assert result.reason == f"over the token trigger ({result.tokens_before} > 200 tokens)"


def test_fast_summary_has_every_section_and_keeps_users(compressor, formats):
    messages = chat(15)
    result, out, _ = compress(compressor, formats, messages, trigger_messages=20,
                              keep_last_n=6)
    assert result.compressed
    check_openai(messages, out)
    at = next(i for i, m in enumerate(out) if str(m["content"]).startswith(HISTORY_MARKER))
    block = out[at]["content"]
    for section in HISTORY_SECTIONS:
        assert f"## {section}" in block
    # the work as the notes tell it: each call with its answer's fields, the agent's words
    assert "- search_flights(day=0) ->\n    flight=HAT000, price=100\n- you said: Found HAT000." \
        in block
    assert "I must fly economy only" in block  # a constraint, quoted
    assert out[at + 1:] == messages[-6:]
    assert result.tokens_after < result.tokens_before


def test_the_summary_follows_the_user_messages_it_covers(compressor, formats):
    """Work the user asked for in option 7 was done after they asked: the summary of it
    must not come before the request."""
    messages = chat(15)
    _, out, _ = compress(compressor, formats, messages, trigger_messages=20, keep_last_n=6)
    at = next(i for i, m in enumerate(out) if str(m["content"]).startswith(HISTORY_MARKER))
    asked = [m["content"] for m in out[:at] if m["role"] == "user"]
    summarized_users = [m["content"] for m in messages[2:-6] if m["role"] == "user"]
    assert asked[1:] == summarized_users  # all of them, in order, before the summary
    assert all(m["role"] in ("system", "user") for m in out[:at])


def test_the_cut_never_parts_a_result_from_its_call(compressor, formats):
    messages = coding_run(10)
    # keep_last_n=3 would start the kept part at a tool message
    _, out, plan = compress(compressor, formats, messages, trigger_messages=5, keep_last_n=3)
    assert messages[plan.stop]["role"] == "assistant"
    check_openai(messages, out)


def test_second_call_updates_the_block_with_only_the_new_span(compressor, formats):
    first_in = chat(12)
    _, first_out, _ = compress(compressor, formats, first_in, trigger_messages=20,
                               keep_last_n=4)
    grown = first_out + chat(20)[2 + 12 * 4:]
    result, second_out, plan = compress(compressor, formats, grown, trigger_messages=20,
                                        keep_last_n=4)
    assert result.compressed and result.incremental
    assert plan.previous is not None
    span_texts = " ".join(m.text for m in plan.span)
    assert "HAT000" not in span_texts and "HAT015" in span_texts
    prompt = plan.prompt[1].content
    assert "Current summary:" in prompt and "HAT000" in prompt  # via the old summary only
    blocks = [m for m in second_out if str(m.get("content", "")).startswith(HISTORY_MARKER)]
    assert len(blocks) == 1
    assert "HAT000" in blocks[0]["content"] and "HAT015" in blocks[0]["content"]
    check_openai(grown, second_out)


@pytest.mark.parametrize("path", [p for p in transcript_files() if len(load(p)) > 21],
                         ids=lambda p: p.stem[:48])
def test_real_transcripts_compress_validly(compressor, formats, path):
    messages = load(path)
    result, out, _ = compress(compressor, formats, messages, trigger_messages=20)
    check_openai(messages, out)
    if not result.compressed:
        # A chat whose older part is mostly the user's own words (kept whole) may have
        # nothing a summary would shorten: it comes back as it was.
        assert "would not be smaller" in result.reason and out == messages
        return
    assert result.tokens_after < result.tokens_before


def test_every_distinct_error_survives_repeated_compression(compressor, formats):
    # Twelve different failures across three compressions: the summary's errors section
    # keeps each one (an agent must not retry what failed), not the last few.
    history = [{"role": "system", "content": "You fix bugs with bash."},
               {"role": "user", "content": "Make the test suite pass."}]
    failures = [f"ImportError: cannot import name 'helper_{i}' from 'pkg.mod{i}'"
                for i in range(12)]
    for step in range(3):
        for i in range(step * 4, step * 4 + 4):
            history += tool_turn(f"c{i}", "bash", {"command": f"python run_{i}.py"},
                                 f"Traceback (most recent call last):\n  File \"run_{i}.py\", "
                                 f"line 1, in <module>\n{failures[i]}\n<returncode>1</returncode>")
            for k in range(4):  # reads enough that the first failures leave the work log
                listing = "\n".join(f"dir_{i}_{k}/module_{j}.py" for j in range(30))
                history += tool_turn(f"ok{i}_{k}", "bash", {"command": f"ls dir_{i}_{k}"},
                                     listing)
        result, history, _ = compress(compressor, formats, history, trigger_messages=20,
                                      keep_last_n=2)
        assert result.compressed
    text = "\n".join(str(m.get("content")) for m in history)
    assert all(line in text for line in failures)


def test_a_work_entry_keeps_the_start_of_the_lines_under_its_call(compressor, formats):
    listing = "\n".join(f"def handler_{i}(event): return route_{i}(event)" for i in range(60))
    messages = coding_run(0)
    for i in range(25):
        messages += tool_turn(f"r{i}", "read_file", {"path": f"src/h{i}.py"}, listing)
    result, out, _ = compress(compressor, formats, messages, trigger_messages=20,
                              keep_last_n=6)
    assert result.compressed
    block = next(m["content"] for m in out if str(m["content"]).startswith(HISTORY_MARKER))
    entry = block.split('- read_file(path="src/h0.py")')[1].split("\n- ")[0]
    under = entry.split("\n")[1:]
    assert under and all(line.startswith("    ") for line in under)
    assert sum(len(line) for line in under) <= 200  # where a note shows 1,000 characters

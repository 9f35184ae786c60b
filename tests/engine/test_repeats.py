"""Recent turns point back to lines shown above instead of repeating them."""

import json

import pytest

from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import Tier
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.pacing import EVERY_CHARS
from app.engine.reading import repeats
from app.engine.reading.repeats import Shown
from app.engine.transcript.tokens import TokenCounter
from tests.support.build import coding_run, tool_turn

SOURCE = "\n".join(f"    def method_{i}(self, value_{i}):  # line {i}" for i in range(12))


@pytest.fixture(scope="module")
def engine(encoder):
    return Synthesizer(TokenCounter(encoder), builtin_strategies())


def test_a_long_run_shown_above_becomes_one_line_and_new_lines_stay():
    shown = Shown()
    shown.add(SOURCE)
    edited = SOURCE.replace("method_6(self, value_6)", "method_6(self, value_6, strict)")
    out = shown.collapse(edited)
    assert out.split("\n") == [
        "    def method_0(self, value_0):  # line 0",  # a text's first line always stays
        "[contextsynth: 5 lines as shown above]",
        "    def method_6(self, value_6, strict):  # line 6",
        "[contextsynth: 5 lines as shown above]",
    ]


def test_short_runs_and_unseen_text_are_left_as_they_are():
    shown = Shown()
    shown.add("alpha = compute_alpha()\nbeta = compute_beta()\nok\n")
    text = "alpha = compute_alpha()\nbeta = compute_beta()\ngamma = compute_gamma()"
    assert shown.collapse(text) is text  # two repeated lines cost about their marker
    assert shown.collapse("nothing here was shown") == "nothing here was shown"


def test_arguments_stay_json_with_their_new_lines():
    shown = Shown()
    shown.add_arguments(json.dumps({"command": f"cat > t.py << 'EOF'\n{SOURCE}\nEOF"}))
    rewritten = SOURCE.replace("# line 11", "# line eleven")
    arguments = shown.collapse_arguments(json.dumps({"command": f"cat > t.py << 'EOF'\n"
                                                                f"{rewritten}\nEOF"}))
    command = json.loads(arguments)["command"]
    assert command.split("\n") == [
        "cat > t.py << 'EOF'",  # what the command does stays
        "[contextsynth: 11 lines as shown above]",
        "    def method_11(self, value_11):  # line eleven",
        "EOF",
    ]
    assert shown.collapse_arguments("not json") == "not json"


def _transcript():
    messages = coding_run(4, output_chars=300)
    for i in range(3):  # the agent reads the same file three times
        messages += tool_turn(f"read_{i}", "bash", {"command": "cat src/parser.py"},
                              SOURCE if i != 1 else SOURCE + "\n    # edited")
    return messages


def _rendered(engine, formats, messages, tier=Tier.LARGE):
    wire = formats["openai"]
    result = engine.run(wire.parse({"messages": messages}), SynthesisOptions(tier=tier))
    return wire.render(result.transcript)["messages"], result


def test_a_file_read_again_points_back_to_the_first_read(engine, formats):
    out, result = _rendered(engine, formats, _transcript())
    results = [m["content"] for m in out if m.get("tool_call_id", "").startswith("read_")]
    assert results[0] == SOURCE  # the first read shows the file
    # the second read: the repeat collapsed, its one new line kept
    assert results[1].split("\n")[1:] == ["[contextsynth: 11 lines as shown above]",
                                           "    # edited"]
    assert results[2] == SOURCE  # the newest result stays whole, repeats and all
    # the receipt names the read that was collapsed, and its handle gives it back whole
    second = next(s for s in result.receipt.spans
                  if s.originals[0].tool_call_id == "read_1")
    assert second.kind == "truncated" and second.originals[0].text == SOURCE + "\n    # edited"


def test_lines_cut_from_a_result_are_not_taken_as_shown(engine, formats):
    # The first read is long, so its middle is cut: a later read of that middle must
    # show it, since no message above does.
    long_file = "\n".join(f"    row_{i} = table.lookup('key_{i}', default={i})"
                          for i in range(80))
    messages = coding_run(2, output_chars=300)
    messages += tool_turn("a", "bash", {"command": "cat big.py"}, long_file)
    middle = "\n".join(long_file.split("\n")[40:46])
    messages += tool_turn("b", "bash", {"command": "sed -n 41,46p big.py"}, middle)
    messages += tool_turn("c", "bash", {"command": "ls"}, "big.py")
    out, _ = _rendered(engine, formats, messages, tier=Tier.MID)
    first = next(m["content"] for m in out if m.get("tool_call_id") == "a")
    second = next(m["content"] for m in out if m.get("tool_call_id") == "b")
    assert "row_42 " not in first  # cut from the first read
    assert second == middle


@pytest.mark.parametrize("name", ["anthropic", "gemini", "responses"])
def test_every_format_renders_the_collapsed_turns_validly(engine, formats, name):
    from tests.support.convert import to_anthropic, to_gemini, to_responses
    from tests.support.invariants import check_anthropic, check_gemini, check_responses

    convert, check = {"anthropic": (to_anthropic, check_anthropic),
                      "gemini": (to_gemini, check_gemini),
                      "responses": (to_responses, check_responses)}[name]
    payload = convert(_transcript())
    wire = formats[name]
    result = engine.run(wire.parse(payload), SynthesisOptions(tier=Tier.LARGE))
    out = wire.render(result.transcript)
    check(payload, out)
    assert "lines as shown above]" in json.dumps(out)



def test_a_log_of_more_lines_than_are_remembered_collapses_only_what_was_remembered():
    log = "\n".join(f"ok line {n:07d}" for n in range(3 * repeats._MOST_KEYS))
    shown = Shown()
    shown.add(log)
    assert len(shown.lines()) == repeats._MOST_KEYS  # the first ones; the rest not held
    again = shown.collapse(log)
    # The remembered head becomes one marker; the lines past the bound stay as they
    # are: a repeat is never claimed for a line that was not seen.
    assert again.split("\n")[1] == \
        f"[contextsynth: {repeats._MOST_KEYS - 1} lines as shown above]"
    assert again.endswith(log[log.index(f"ok line {repeats._MOST_KEYS:07d}"):])


def test_reading_and_collapsing_a_long_log_breathe(monkeypatch):
    calls = [0]
    monkeypatch.setattr(repeats, "breathe", lambda: calls.__setitem__(0, calls[0] + 1))
    lines = [f"ok line {n:07d}" for n in range(4 * repeats._PACE_LINES)]
    shown = Shown()
    shown.add("\n".join(lines[::2]))
    assert calls[0] >= len(lines) * 16 // 2 // EVERY_CHARS - 1
    before = calls[0]
    # Every other line shown: no run to collapse, and a step of the walk per line.
    text = "\n".join(lines)
    assert shown.collapse(text) is text
    assert calls[0] - before >= 3

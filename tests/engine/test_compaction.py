"""How a long result in the recent turns is cut: whole lines, and a failure's lines kept."""

from hypothesis import assume, given
from hypothesis import strategies as st

from app.engine.compaction.base import cut_text
from app.engine.compaction.tiers import Tier
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions
from tests.support.build import coding_run, tool_turn

MARKER = "...[contextsynth cut"


def test_the_head_and_tail_of_a_cut_are_whole_lines():
    lines = [f"src/pkg/module_{i}.py:{i * 7}:    value_{i} = load_value({i})" for i in range(60)]
    text = "\n".join(lines)
    for limit in (300, 750, 1000, 1333):
        cut = cut_text(text, limit, "cs_1")
        kept = cut.split("\n")
        marker = next(i for i, line in enumerate(kept) if line.startswith(MARKER))
        # no fragment of a line on either side of the marker
        assert all(line in lines for line in kept[:marker] + kept[marker + 1:])
        assert kept[0] == lines[0] and kept[-1] == lines[-1]
        # about the limit: a line end is looked for within a quarter of the head or tail
        shown = sum(len(line) + 1 for i, line in enumerate(kept) if i != marker)
        assert abs(shown - limit) <= limit // 4
        # the marker counts what was left out
        removed = int(kept[marker].split("cut ")[1].split(" chars")[0])
        start, end = "\n".join(kept[:marker]), "\n".join(kept[marker + 1:])
        assert removed == len(text) - len(start) - len(end)


def test_a_long_line_is_cut_where_it_stands():
    text = "x" * 5000
    cut = cut_text(text, 900, "cs_1")
    head, marker, tail = cut.split("\n")
    assert (len(head), len(tail)) == (600, 300) and marker.startswith(MARKER)


def test_a_cut_never_splits_a_marker_the_service_wrote():
    # Lines shown above collapse into a marker inside a result; the head's end fell in
    # the middle of one ("[contextsynth" and then the cut marker).
    collapsed = "[contextsynth: 11 lines as shown above]"
    lines = [f"line {i}: value_{i} = compute({i})" for i in range(40)]
    for at in range(10, 20):
        text = "\n".join([*lines[:at], collapsed, *lines[at:]])
        cut = cut_text(text, 750, "cs_1")
        assert "[contextsynth:" not in cut or collapsed in cut.split("\n")


CHAINED = """<returncode>1</returncode>
<output>
Traceback (most recent call last):
  File "/testbed/django/db/backends/base/operations.py", line 5, in <module>
    import sqlparse
ModuleNotFoundError: No module named 'sqlparse'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
{frames}  File "/testbed/django/db/utils.py", line 122, in load_backend
    raise ImproperlyConfigured(msg)
django.core.exceptions.ImproperlyConfigured: 'django.db.backends.dummy' isn't an \
available database backend.
Try using 'django.db.backends.XXX', where XXX is one of:
    'mysql', 'oracle', 'postgresql', 'sqlite3'
</output>"""


def test_a_cut_failure_keeps_the_exception_its_chain_started_from(synthesizer, formats):
    frames = "".join(f'  File "/testbed/django/db/models/m{i}.py", line {i}, in step_{i}\n'
                     f"    value = step_{i + 1}(value)\n" for i in range(40))
    failed = CHAINED.format(frames=frames)
    messages = coding_run(2) + tool_turn("run", "bash", {"command": "python repro.py"},
                                         failed)
    messages += tool_turn("next", "bash", {"command": "pip list"}, "Package Version")
    wire = formats["openai"]
    result = synthesizer.run(wire.parse({"messages": messages}),
                             SynthesisOptions(mode=Mode.FAST, tier=Tier.MID))
    out = wire.render(result.transcript)["messages"]
    cut = next(m["content"] for m in out if m["role"] == "tool"
               and "ImproperlyConfigured" in (m["content"] or ""))
    assert MARKER in cut and len(cut) < len(failed) / 2
    # the cause, then the exception raised from it, each as the result wrote it
    cause = cut.index("ModuleNotFoundError: No module named 'sqlparse'\n")
    assert cause < cut.index("django.core.exceptions.ImproperlyConfigured: 'django.db.")


@given(st.text(alphabet="ab \n", max_size=900), st.integers(0, 600))
def test_a_cut_keeps_a_head_and_a_tail_of_the_text_and_counts_the_rest(text, limit):
    assume(len(text) * 2 > limit * 3)  # results are cut only when that saves a third
    cut = cut_text(text, limit, "cs_1")
    at = cut.index("\n" + MARKER)
    start = cut[:at]
    marker, _, end = cut[at + 1:].partition("\n")
    assert text.startswith(start) and text.endswith(end)
    assert len(start) + len(end) <= len(text)
    removed = int(marker.split("cut ")[1].split(" chars")[0])
    assert removed == len(text) - len(start) - len(end)
    # each side is within a quarter of its share of the limit, or ends where a line does
    head = limit * 2 // 3
    assert abs(len(start) - head) <= head // 4
    assert start == text[:head] or text[len(start):].startswith("\n")

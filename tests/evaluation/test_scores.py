"""Each score on hand-made transcripts."""

import json

import pytest

from app.evaluation import errors, needed, planted
from app.evaluation.compactors import Baseline, CompactorResult
from app.evaluation.replay import Scorer, planted_steps, sample_steps
from app.evaluation.scores import PRICINGS, Pricing, Tally
from app.evaluation.seen import Seen, readable_text, shared_prefix


def call(call_id, name, args, output):
    return [{"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}]},
            {"role": "tool", "tool_call_id": call_id, "content": output}]


def run():
    """The agent reads a config, learns a port and a path, and uses both later."""
    return [
        {"role": "system", "content": "You operate servers."},
        {"role": "user", "content": "Restart the api service."},
        *call("c1", "bash", {"command": "cat /etc/api/conf.yaml"},
              "listen_port: 8443\nlog_dir: /var/log/api_v2\nworkers: 4"),
        *call("c2", "bash", {"command": "systemctl status api"},
              "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
              "PermissionError: [Errno 13] /run/api.sock"),
        *call("c3", "bash", {"command": "curl localhost:8443/health && ls /var/log/api_v2"},
              "ok"),
        {"role": "assistant", "content": "The api answers on 8443; logs are in /var/log/api_v2."},
    ]


@pytest.fixture
def scorer(encoder):
    return Scorer(Seen(encoder), needed.TokenSets(), errors.Failures())


class DropsResults:
    """Replaces every tool result by a stub."""

    name = "drops-results"

    def compact(self, messages):
        return CompactorResult([{**m, "content": "(dropped)"} if m["role"] == "tool" else m
                          for m in messages])


class Rewrites:
    """Puts a new note first on every call, as a compactor with a moving summary would."""

    name = "rewrites"

    def __init__(self):
        self.n = 0

    def compact(self, messages):
        self.n += 1
        return CompactorResult([{"role": "user", "content": f"note {self.n}: " + "state " * 50},
                          *messages])


def test_specific_tokens_are_identifier_shaped():
    assert needed.specific_tokens("Open /var/log/api_v2 on port 8443, then JG7FMM. The end.") \
        == {"/var/log/api_v2", "8443", "JG7FMM"}
    assert needed.specific_tokens("see config.py, e.g. os.path") == {"config.py", "os.path"}


def test_needed_facts_are_learned_from_the_work_and_used_later():
    messages = run()
    k = 6  # before the call that uses the port and the log dir
    assert needed.needed(messages, k, needed.TokenSets()) == {"8443", "/var/log/api_v2"}
    # What the user said is not something the agent had to learn.
    messages[1]["content"] += " It listens on 8443."
    assert needed.needed(messages, k, needed.TokenSets()) == {"/var/log/api_v2"}


def test_none_has_recall_one_and_reduction_zero(scorer):
    tallies = {"none": Tally()}
    messages = run()
    scorer.replay(messages, sample_steps(messages, None), [Baseline("none")], tallies)
    t = tallies["none"]
    assert t.needed > 0 and t.recall == 1.0 and t.reduction == 0.0
    assert t.errors_cut == 0 and t.error_retention == 1.0


def test_dropping_results_loses_recall_and_the_error_line(scorer):
    tallies = {"drops-results": Tally()}
    messages = run()
    scorer.replay(messages, sample_steps(messages, None), [DropsResults()], tallies)
    t = tallies["drops-results"]
    assert t.recall < 1.0 and t.reduction > 0.0
    assert t.errors_cut == 2 and t.error_retention == 0.0  # cut on both later calls


class HidesResultsBehindHandles:
    """Replaces each tool result by a marker naming a handle; ``honest``: the handle is
    one it made (an agent could expand it), else one nobody made."""

    def __init__(self, honest: bool) -> None:
        self.name = "hides" if honest else "fake-handles"
        self.honest = honest

    def compact(self, messages):
        out, behind = [], {}
        for i, m in enumerate(messages):
            if m["role"] != "tool":
                out.append(m)
                continue
            handle = f"cs_{i:020d}"
            out.append({**m, "content": f"[omitted; expand: {handle}]"})
            if self.honest:
                behind[handle] = [m]
        return CompactorResult(out, behind)


def test_recall_with_expand_counts_what_a_shown_handle_gives_back(scorer):
    messages = run()
    tallies = {"hides": Tally(), "fake-handles": Tally(), "none": Tally()}
    steps = sample_steps(messages, None)
    scorer.replay(messages, steps, [HidesResultsBehindHandles(True),
                                    HidesResultsBehindHandles(False), Baseline("none")],
                  tallies)
    hidden, fake, none = tallies["hides"], tallies["fake-handles"], tallies["none"]
    assert hidden.recall < 1.0 and hidden.recall_with_expand == 1.0
    assert fake.recall_with_expand == fake.recall < 1.0  # a handle nobody made gives nothing
    assert none.recall_with_expand == none.recall == 1.0
    assert hidden.summary(none)["recall_with_expand"] == 1.0


def test_the_failure_line_is_the_exception_not_the_traceback_header():
    text = run()[5]["content"]
    assert errors.failure_line(text) == "PermissionError: [Errno 13] /run/api.sock"
    assert errors.failure_line("Traceback (most recent call last):") is None
    assert errors.failure_line("FAILED tests/t.py::test_x - AssertionError: 1 != 2") \
        == "FAILED tests/t.py::test_x - AssertionError: 1 != 2"


def test_a_compactor_that_drops_a_planted_fact_loses_exactly_that_fact(scorer):
    story = planted.generate(3, "files")
    mid = next(f for f in story.facts if f.kind == "mid-output value")

    class DropsOneFact:
        name = "drops-one"

        def compact(self, messages):
            return CompactorResult([{**m, "content": m["content"].replace(mid.values[0], "(gone)")}
                              if isinstance(m.get("content"), str) else m for m in messages])

    kept, dropped = Tally(), Tally()
    scorer.planted(story, Baseline("none"), kept)
    scorer.planted(story, DropsOneFact(), dropped)
    assert kept.planted_survival == 1.0
    lost = {k for k, (n, _) in dropped.planted.items() if n == 0 and _}
    assert lost == {"mid-output value"}
    steps = len(planted_steps(story))  # every step once all facts are in
    assert steps > 1
    assert dropped.planted["mid-output value"] == [0, steps]
    assert dropped.planted["task"] == [steps, steps]


def test_planted_facts_are_scored_from_the_step_where_the_last_one_is_in():
    story = planted.generate(3, "shell")
    steps = planted_steps(story)
    text = "\n".join(readable_text(m) for m in story.messages[: steps[0]])
    assert all(planted.survives(f, text) for f in story.facts)
    every = sample_steps(story.messages, None)
    before = every[every.index(steps[0]) - 1]
    earlier = "\n".join(readable_text(m) for m in story.messages[:before])
    assert not all(planted.survives(f, earlier) for f in story.facts)
    assert steps == every[every.index(steps[0]):]


def test_an_overridden_value_survives_only_as_the_current_one():
    fact = planted.Fact("overridden value", ("500", ), earlier="300")
    assert planted.survives(fact, "max: 300 ... later max: 500")
    assert not planted.survives(fact, "max: 500 ... then max: 300")  # stale reads as current
    assert planted.survives(fact, "max: 500")
    assert not planted.survives(fact, "max: 300")


def test_every_planted_kind_is_planted_once_per_run_in_every_style():
    for style in planted.STYLES:
        story = planted.generate(1, style)
        assert sorted(f.kind for f in story.facts) == sorted(planted.KINDS)
        text = json.dumps(story.messages)
        for fact in story.facts:
            assert all(text.count(v) >= 1 for v in fact.values)


def test_prefix_reuse_of_an_append_only_sequence_is_near_one(scorer):
    messages = run()[:2]
    for i in range(40):
        messages += call(f"c{i}", "bash", {"command": f"ls /srv/{i}"}, f"file_{i}.txt")
    tallies = {"none": Tally(), "rewrites": Tally()}
    scorer.replay(messages, sample_steps(messages, None), [Baseline("none"), Rewrites()],
                  tallies)
    # Every call but the first repeats all of the one before it.
    assert tallies["none"].prefix_reuse > 0.9
    assert tallies["rewrites"].prefix_reuse < 0.05


def test_shared_prefix_counts_whole_messages_then_the_common_start():
    assert shared_prefix([(1, 2), (3, 4)], [(1, 2), (3, 4), (5,)]) == 4
    assert shared_prefix([(1, 2), (3, 4)], [(1, 2), (3, 9)]) == 3
    assert shared_prefix([(1, 2)], [(7, 2)]) == 0
    assert shared_prefix([], [(1,)]) == 0


def test_pricing_on_a_worked_example():
    openai, anthropic = PRICINGS
    # 10,000 tokens sent, 8,000 of them the previous call's prefix.
    assert openai.cost(10_000, 8_000) == pytest.approx(0.1 * 8_000 + 2_000)  # 2,800
    assert anthropic.cost(10_000, 8_000) == pytest.approx(0.1 * 8_000 + 1.25 * 2_000)  # 3,300
    tally, none = Tally(), Tally()
    none.add_call(10_000, 10_000, 8_000, 0.0)
    tally.add_call(10_000, 4_000, 0, 0.0)  # smaller, but nothing cached
    summary = tally.summary(none)
    assert summary["cost"]["openai"] == pytest.approx(4_000 / 2_800)
    assert summary["cost"]["anthropic"] == pytest.approx(5_000 / 3_300)
    assert Pricing("flat", 1.0, 1.0).cost(100, 40) == 100


def test_steps_are_spread_evenly_and_keep_the_last():
    messages = [{"role": "user", "content": "go"}]
    for i in range(20):
        messages += call(f"c{i}", "bash", {"command": "ls"}, "x")
    every = sample_steps(messages, None)
    assert every == [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    four = sample_steps(messages, 4)
    assert len(four) == 4 and four[0] == every[0] and four[-1] == every[-1]
    assert sample_steps(messages, 1) == every[-1:]

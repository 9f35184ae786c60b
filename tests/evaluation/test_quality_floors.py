"""The quick eval in CI: quality scores are deterministic, so a change that makes
compaction forget fails here. Raise a floor when a change lifts a score; lowering
one needs a reason in the commit that does it."""

import pytest

from app.engine.compaction.tiers import Tier
from app.evaluation.report import summaries
from app.evaluation.run import EvalOptions, evaluate

# Every transcript of the corpus, 8 calls each spread over the run, and 8 planted runs.
QUICK = EvalOptions(steps=8, planted_runs=8, tier=Tier.MID)

KEYS = ("reduction", "recall", "planted_survival", "error_retention")
# Quality floors are today's scores; reduction floors sit half a point lower, so that
# rewording a nudge does not fail CI, while a change that gives up reduction does.
FLOORS = {  # reduction, recall, planted survival, error retention
    # Lowered reduction (local, mid, large, frontier): the recent window keeps tool
    # arguments whole and a tier's tokens, and ``fast`` closes older turns into blocks
    # whose notes stay the same bytes (the turns after the last block grow until the next
    # closes); recall rose 14 to 26 points for it and the cost under prompt caching fell.
    # Recall 0.1 point lower (mid, large, frontier, masks): a short run's cut that saves
    # fewer tokens than the nudge now stands, where it came and went from call to call.
    # Raised (every fast tier): the recent turns point back to lines shown above instead
    # of repeating them, and a cut result spends its budget on new lines.
    # Local: blocks of 10 turns, an 800-token window and 200-character results (were 8,
    # 1,000 and 300): more reduction and recall on the whole corpus, and 2.7 points less
    # cost under prompt caching.
    # Raised (every tier): the agent's sentences that only announce a look ("Let me
    # check the `X` class:") leave the notes, since the call beside them says as much, and
    # each tier's window takes some of the tokens saved (local 1,000, mid 1,200, large
    # 3,300, frontier 6,300).
    # Raised again: a note's line for a lone shell command reads "bash: ls src", without
    # the key, the quotes and their escapes, and without a leading "cd DIR &&".
    # Raised recall (every tier): the text an agent writes beside its calls becomes its
    # gist in the recent turns (300 characters at local and mid, 400 large, 800 frontier),
    # cut the same way from the first call that sends it, and the windows take the
    # tokens saved (1,600, 1,800, 4,000 and 7,000). Lowered reduction for rebuild (it
    # slides mid's wider window): recall rose 4 points for it. Frontier's reduction floor
    # back to 0.440: its sample lost 0.4 points while the whole corpus gained 0.3.
    # Raised (mid, large, frontier): a recent result is cut only when that saves a third
    # of it, to 750, 700 and 750 characters (800 before).
    # Raised reduction (every tier): the agent's words in a note take 130 characters (160
    # before). Recall 0.1 point lower for rebuild and compress-history (below) in this
    # sample only: over every call of the corpus both gain recall (55.7% -> 55.8%, 79.7% ->
    # 79.8%) and reduction.
    # Raised (mid): the agent's text beside its calls is gisted to 150 characters (300
    # before) and the window takes 1,900 tokens (1,800): over every call of the corpus
    # reduction 66.2% -> 66.4%, recall 74.9% held, cost 50.9% -> 50.5%. Rebuild and the
    # observation mask share mid's budgets; both gain (rebuild 75.0%/55.8% -> 74.9%/56.3%,
    # the mask 44.3%/78.5% -> 45.6%/78.1%, above the keep-last line, and cheaper).
    # Raised recall (local, mid): closed blocks age a batch at a time (mid: the
    # newest block whole, the older ones aged three at a time), so a note stays whole
    # for longer on average and the output is rewritten at one closing in three; handles
    # are 64 bits in decimal (9 tokens, 13 before). Over every call of the corpus mid
    # goes 66.4%/74.9% -> 66.1%/75.1% and its cost 50.5% -> 49.7%; the observation mask,
    # whose markers carry handles, gains 0.7 points of reduction.
    # Raised (every fast tier and rebuild): a note's line shows the lines worth most of
    # the code the call carries (a script, a heredoc, a written file; 1,000 characters)
    # and of what a read showed (1,000), lines already in the note or saying nothing new
    # are left out, an aged read keeps its "key: value" lines and a call whose tool
    # changes state (set_config, cancel_order) keeps its line. The richer notes let the
    # blocks be shorter and age two at a time: mid closes a block of 11 turns once one
    # turn follows it. Mid's recall is 1.1 points lower in this sample; over every call
    # of the corpus (asserted below) it gains 1.4 points with 4.3 of reduction, and its
    # cost falls 2.5 points.
    # Recall 0.1 to 0.3 points lower: the start and the end of a long result or script
    # are cut where a line ends, so a note shows no fragment of a line ("nitial_state,
    # final_state)"); over every call of the corpus mid goes 70.4%/76.5% -> 70.5%/76.3%.
    # Frontier's recall 0.1 point lower: a result's salient lines take at most four of
    # one shape (a listing's rows), so a read of repetitive code is a third as long; over
    # every call of the corpus each fast tier gives 0.1 of recall for 0.1 of reduction,
    # and the planted runs' reduction rises 1.6 to 5 points.
    # Raised recall (every tier, rebuild and the mask): a recent result cut to its budget
    # keeps a third more when its call read a file and half when it ran tests
    # (compaction.result_chars); over every call of the corpus each tier gains 0.2 points
    # of recall at the same reduction.
    # Raised recall again: a whole note shows 1,600 characters of the code a call carries
    # (1,000 before); over every call each fast tier gains 0.2 to 0.5 points of recall
    # for 0.03 to 0.07 of reduction.
    # Raised recall again: a note shows 1,300 characters of a read's result (1,000),
    # 100 of a test run's and 50 of any other's (100 each before).
    "synthesize-fast-local": (0.645, 0.730, 1.0, 1.0),
    # Mid lowered (recall 1.7 points in this sample, 0.26 over every call of the corpus,
    # 76.84% -> 76.58%, reduction 70.60% -> 70.65%): blocks of 7 turns, the newest two
    # notes whole and older ones aged three at a time, the turns after the last block cut
    # to 450 characters (11, 1, 2 and 750 before). For issue 15's planted target: the
    # planted runs' reduction over their steps went 76.4% -> 80.1%, every fact kept.
    "synthesize-fast-mid": (0.620, 0.783, 1.0, 1.0),
    "synthesize-fast-large": (0.526, 0.890, 1.0, 1.0),
    "synthesize-fast-frontier": (0.495, 0.903, 1.0, 1.0),
    "synthesize-rebuild-mid": (0.643, 0.692, 1.0, 1.0),
    # Raised: older actions keep their reasoning's gist, as the recent turns show it.
    "observation-mask-mid": (0.424, 0.803, 0.857, 1.0),
    # Replayed as agents use it now (the answer kept as the history, new messages
    # appended), not rebuilt from the whole transcript at every call: less reduction,
    # more recall, and what it costs under prompt caching (below) fell from 115%.
    # Lowered reduction: its summary tells the work as the notes do (each call with its
    # answer's salient lines, the agent's own statements, what it wrote), 45 entries, for
    # 3.5 points of recall and every planted fact (71.4% before).
    # Raised error retention: the summary keeps every distinct error (up to 40), not the
    # newest eight (97.5% over every call before).
    # Lowered reduction: each entry of its work keeps 200 characters of the lines under
    # a note's line (code, result lines), for 2.7 points of recall over every call.
    "compress-history-fast": (0.492, 0.830, 1.0, 1.0),
}
# Prefix reuse and cost need every call of a run (a sample skips steps, and what the
# previous call sent is the point): the default tier's fast mode, replayed whole.
CACHED = EvalOptions(only=("synthesize-fast-mid", "compress-history-fast"), planted_runs=0)
CEILINGS = {  # prefix reuse floor, cost ceilings (share of sending everything)
    # Lowered cost ceilings: the nudge, after the newest turn and so never cached, no
    # longer repeats the files edited and the last failure that the turns above show, and
    # is left out while the agent gathers with nothing missing.
    # Lowered again: mid's shorter reasoning gist (150 characters) and wider window.
    # Lowered again, under issue 16's 50%: notes age three blocks at a time (the output
    # is rewritten from the oldest note that ages) and handles cost 9 tokens, not 13.
    # Lowered cost ceilings (issue 16: at most 50% and 60%): the notes' richer lines
    # let mid's blocks be shorter (see FLOORS); reuse is 1.7 points lower, as notes age
    # two blocks at a time.
    # Raised (47.0% -> 48.7%, 50.9% -> 52.9%), with reuse 89.6% -> 88.8%: mid's blocks
    # of 7 turns close more often (see FLOORS), still within issue 16's 50% and 60%.
    "synthesize-fast-mid": (0.887, 0.488, 0.530),
    # Raised cost ceilings, for the richer summary above (55.8% -> 59.2% at OpenAI's prices).
    # Raised again (58.8% -> 60.1%): each work entry keeps the lines under its note line.
    "compress-history-fast": (0.929, 0.603, 0.637),
}
# Issue 15's targets, over every call of the corpus at the default tier: needed-fact
# recall at least 75% at 70% or more token reduction.
TARGETS = {"synthesize-fast-mid": (0.70, 0.75)}
# And over the planted runs, at every step once all facts are in: reduction at least 80%,
# at least 95% of the facts kept, and 90% of each kind.
PLANTED_TARGETS = {"synthesize-fast-mid": (0.80, 0.95, 0.90)}


@pytest.fixture(scope="module")
def rows(encoder):
    return summaries(evaluate(QUICK, encoder, progress=lambda _: None).total)


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_quality_stays_above_its_floor(rows, name):
    scores = rows[name]
    below = {k: (round(scores[k], 4), floor) for k, floor in zip(KEYS, FLOORS[name], strict=True)
             if scores[k] < floor}
    assert below == {}, f"{name} fell below its floors (score, floor): {below}"


def test_the_baselines_behave_as_baselines(rows):
    assert rows["none"]["recall"] == 1.0 and rows["none"]["reduction"] == 0.0
    assert rows["none"]["planted_survival"] == 1.0
    windows = [rows[f"keep-last-{n}"] for n in (4, 8, 16, 32)]
    # A wider window keeps more and cuts less.
    assert [w["recall"] for w in windows] == sorted(w["recall"] for w in windows)
    assert [w["reduction"] for w in windows] == sorted((w["reduction"] for w in windows),
                                                       reverse=True)


@pytest.fixture(scope="module")
def cached_rows(encoder):
    return summaries(evaluate(CACHED, encoder, progress=lambda _: None).total)


@pytest.mark.parametrize("name", sorted(CEILINGS))
def test_cost_under_prompt_caching_stays_under_its_ceiling(cached_rows, name):
    scores = cached_rows[name]
    reuse, openai, anthropic = CEILINGS[name]
    assert scores["prefix_reuse"] >= reuse, scores["prefix_reuse"]
    assert scores["cost"]["openai"] <= openai, scores["cost"]
    assert scores["cost"]["anthropic"] <= anthropic, scores["cost"]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_the_default_keeps_what_agents_need_at_the_target_reduction(cached_rows, name):
    reduction, recall = TARGETS[name]
    scores = cached_rows[name]
    assert scores["reduction"] >= reduction, scores["reduction"]
    assert scores["recall"] >= recall, scores["recall"]


@pytest.mark.parametrize("name", sorted(PLANTED_TARGETS))
def test_the_default_keeps_planted_facts_at_the_target_reduction(rows, name):
    reduction, survival, each = PLANTED_TARGETS[name]
    scores = rows[name]
    assert scores["planted_reduction"] >= reduction, scores["planted_reduction"]
    assert scores["planted_survival"] >= survival, scores["planted_survival"]
    assert min(scores["planted_by_kind"].values()) >= each, scores["planted_by_kind"]


def test_an_incremental_job_extends_the_history_it_answered(encoder):
    """compress-history is replayed with the agent's own kept history: the second call
    sends the first call's answer back, with the new messages after it."""
    from app.evaluation.compactors import Incremental

    sent = []

    class Recorder:
        def run(self, path, body):
            sent.append(body["messages"])
            return [{"role": "user", "content": f"summary {len(sent)}"}]

    job = Incremental("h", lambda m: ("/compress-history", {"messages": list(m)}), Recorder())
    first = [{"role": "user", "content": "task"}, {"role": "assistant", "content": "a"}]
    job.compact(first)
    later = [*first, {"role": "user", "content": "more"}]
    assert job.compact(later) == [{"role": "user", "content": "summary 2"}]
    assert sent[1] == [{"role": "user", "content": "summary 1"}, later[-1]]
    other = [{"role": "user", "content": "another run"}]
    job.compact(other)
    assert sent[2] == other  # a transcript that does not extend the last starts afresh

"""The quick eval in CI: quality scores are deterministic, so a change that makes
compaction forget fails here. Raise a floor when a change lifts a score; lowering
one needs a reason in the commit that does it.

The corpus is split by agent family (corpus/families.json): budgets are chosen on
``tune``, and ``test`` holds families the engine was not fitted to. Both are held
to floors here, ``test`` family by family against its own keep-last line too. The
floors before the split (issue 15's, on the corpus's first 31 runs) are in git's
history with the reason for every change; those runs keep their targets below.
"""

import pytest

from app.engine.compaction.tiers import Tier
from app.evaluation.families import score_families
from app.evaluation.report import summaries
from app.evaluation.run import EvalOptions, evaluate

KEYS = ("reduction", "recall", "planted_survival", "error_retention")
WINDOWS = ("keep-last-4", "keep-last-8", "keep-last-16", "keep-last-32")


def quick(split: str) -> EvalOptions:
    """Every transcript of the split, 8 calls each spread over the run, and 8 planted
    runs."""
    return EvalOptions(split=split, steps=8, planted_runs=8, tier=Tier.MID)


# Calls a run, at most, where the floors read every call: OpenCode's longest session has
# 877 steps on a transcript of up to 2.5 MB, and every one of them made the tune split's
# replay several minutes longer. Every other run has fewer steps than this, so only
# OpenCode's two longest sessions are sampled (evenly, the last call among them); the
# tune ceilings below are read at this sampling, and no margin floor reads OpenCode.
MOST_CALLS = 240


def every_call(**options: object) -> EvalOptions:
    """Every call of each run (up to MOST_CALLS): prefix reuse, cost and the families'
    margins need it."""
    return EvalOptions(only=("synthesize-fast-mid", "compress-history-fast", *WINDOWS),
                       planted_runs=0, steps=MOST_CALLS,
                       **options)  # type: ignore[arg-type]


# Today's scores; reduction floors sit half a point lower, so that rewording a nudge
# does not fail CI, while a change that gives up reduction does. (split, compactor):
# reduction, recall, planted survival, error retention.
FLOORS = {
    # Text actions read as calls (the text-action families were at 10-29% reduction),
    # JSON records with their ids whole and 480 characters (320), kept code indented,
    # a command's directory kept.
    # A turn sent whole as the newest is cut once a turn follows only when the cut pays
    # for sending it again (issue 36: no compaction that costs more than it saves), and
    # an agent's text is cut to its gist only when that saves a third: half a point to a
    # point of reduction for three quarters to one point of recall at every tier, and
    # half the runs that cost more than sending them whole.
    # compress-history reads text actions as calls (issue 59): mini-swe-agent-text's
    # observations go into the summary with their actions.
    # Roo Code joined the tune split (six sessions of an agent that writes its tools as
    # XML tags in its text, large results and <environment_details> in every user
    # message): the split's reduction rose 4.2 to 6.9 points for synthesize-fast-*, 4.7
    # for rebuild and 8.7 for the mask, and fell 9.9 for compress-history-fast, which
    # cuts these runs by 18.6% (synthesize-fast at mid: 69.1%); recall moved less than
    # half a point for synthesize-fast-*, rose 1.1 for the mask and compress-history and
    # fell 0.6 for rebuild (64.7% on these runs). Floors rebased on the new split.
    # A seventh Roo Code session, where the user answers the agent's questions: each
    # answer comes back in the harness's result shape with its environment details and
    # is kept whole as the user's words (the window had dropped them): 0.6 to 0.9 points
    # of the split's reduction, recall up 0.3 to 0.6.
    # The harness's block kept once on the user messages it sends too (issue 58): the
    # split's reduction up about 3 points at every tier, recall where it was. Then six
    # families joined (issue 58: Gemini CLI, two AutoGen families, a LangGraph memory
    # agent; 12 runs, the AutoGen and LangGraph ones too short to compact): recall fell
    # 1 to 3 points (Gemini CLI keeps 69% of what it goes on to use, 15 points over its
    # window), and its failures, "Exit Code: 1" after long output, are read. Floors
    # rebased on the new split.
    # Issue 58's last corpus search: Kilo Code (3 runs), 6 more Roo Code sessions and
    # OpenCode (8 sessions of 186 to 1,815 messages) joined; OpenCode's long sessions,
    # compacted by 90% with their notes two thirds of each output, are most of the
    # split's needed facts, so its recall fell 20 points at every tier and its reduction
    # rose 10. Markup actions shown as markup in notes, argument names in any spelling
    # and a long result's failing last line (issue 58) moved the split less than that.
    # compress-history keeps 98.5% of OpenCode's failure lines (its entries quote the
    # newest). Floors rebased on the new split.
    ("tune", "synthesize-fast-local"): (0.748, 0.569, 1.0, 1.0),
    ("tune", "synthesize-fast-mid"): (0.737, 0.598, 1.0, 1.0),
    ("tune", "synthesize-fast-large"): (0.682, 0.693, 1.0, 1.0),
    ("tune", "synthesize-fast-frontier"): (0.657, 0.729, 1.0, 1.0),
    ("tune", "synthesize-rebuild-mid"): (0.743, 0.533, 1.0, 1.0),
    ("tune", "observation-mask-mid"): (0.581, 0.694, 0.868, 1.0),
    ("tune", "compress-history-fast"): (0.562, 0.615, 1.0, 0.985),
    # Every failure line on the test split too, since the exit status OpenHands reports
    # after long output is read, a long failure line keeps its first 300 characters, and
    # a note names the exception a chain started from when its line has no room.
    # A block closes only when its note pays for the closing (issue 36): short runs of
    # short turns keep more of their turns, 0.4 points of reduction for 1.4 of recall.
    # Console commands and what they printed read as calls and results, an edit's
    # report as its result, and a reply's code kept in its note line (issue 36): Aider
    # sessions from 17.5% to 47.5% reduction at mid (every call), the others unchanged.
    # A turn cut once a turn follows only when that pays (as on tune): the test split's
    # runs above 100% of sending them whole from 28 to 16.
    # Cline joined the test split (issue 58): three long sessions of an agent that writes
    # its tools as markup in its text, read by the shapes learned from each run; their
    # results are large and the agent goes on to use its own writes, so the split's
    # reduction rose by 12 points and its recall fell by 4 (cline alone is under its
    # window: see MARGINS).
    # Eight more Cline sessions joined (issue 58), and the notes show markup actions in
    # markup: recall rose 3 to 5 points at every tier but the mask's, reduction fell 0.5
    # to 2.6 (the mask's rose). Floors rebased.
    ("test", "synthesize-fast-local"): (0.716, 0.795, 1.0, 1.0),
    ("test", "synthesize-fast-mid"): (0.712, 0.816, 1.0, 1.0),
    ("test", "synthesize-fast-large"): (0.644, 0.892, 1.0, 1.0),
    ("test", "synthesize-fast-frontier"): (0.629, 0.900, 1.0, 1.0),
    ("test", "synthesize-rebuild-mid"): (0.748, 0.727, 1.0, 1.0),
    ("test", "observation-mask-mid"): (0.531, 0.916, 0.868, 0.977),
    ("test", "compress-history-fast"): (0.437, 0.871, 1.0, 1.0),
}
# The test split's families, every call at mid: recall minus the keep-last line's at
# the same reduction, in points of recall, at least (today's, half a point lower).
# Issue 36 asks for 8 points above the line in every family; webvoyager is not there
# yet, and this holds it where it is. Its runs are 2,000 tokens or less and the tail
# cuts that gave its reduction cost more than they saved (its cost was 102% of sending
# everything): cut only where they pay, its margin went from 3.8 points to 2.5.
# Cline (issue 58) joined under its line: read by the shapes learned from each run, its
# three long sessions went from 16.7% reduction and 30.2 points under the window to
# 86.5% and 5.2 under (the runs' results are very large and the agent goes on to use its
# own earlier writes); this holds it there. The TapeAgents team's two runs are short:
# nothing is compacted, so they sit on the line.
# Aider (issue 61): its console output as the program sends it ("Output from CMD", "I ran
# this command:") is read as results, so its commands are seen: 47.6% to 52.0% reduction,
# its margin from 10.1 to 12.0 points.
# Cline's notes show its older actions in its own markup (issue 58): its three sessions
# went from 5.0 to 21.6 points over the window; with eight more sessions the family is
# 27.9 over it. tau2-bench's customers' named records (issue 58): 15.2 to 15.4.
MARGINS = {"aider": 0.115, "openhands-codeact": 0.105, "tau2-bench": 0.149,
           "webvoyager": 0.020, "cline": 0.275, "tapeagents-team": -0.005}
CEILINGS = {  # (split, compactor): prefix reuse floor, cost ceilings (share of none)
    # A reply's code in its note line: on tune, mini-swe-agent-text's replies outside its
    # actions gave 0.7 points of recall for 1 of cost in that family (0.14 overall).
    # A turn cut once a turn follows only when that pays: 0.2 points of cost.
    # The phase's nudge is left out where it would say "no tool has run yet" after turns
    # were taken, and a required tool that failed gets one consistent nudge (issue 59):
    # a few hundredths of a point of cost either way.
    # Roo Code joined the tune split: its runs' prefix reuse is 71% and they cost 65% /
    # 70% of sending them whole at mid, so the split's reuse fell 2.9 points and its
    # cost rose 2.5 / 2.9; its seventh session (the user's answers kept whole), 0.1 more.
    # The harness's block kept once on the user messages it sends too (the user's answers,
    # reminders, resumed tasks; issue 58): the split's cost fell 4.0 / 4.2 points, its
    # reuse 0.4 (each call still rewrites the block it took off the message before, now a
    # larger share of a smaller output).
    # Six families joined (issue 58; Gemini CLI at 65% / 70%, the short runs at 100%):
    # 0.6 / 0.7 points of cost.
    # The records a customer's request names said before it (issue 58, item 4): tau-bench
    # 1.6 / 1.7 points of its cost for 0.8 of recall; 0.1 / 0.1 on the split.
    # Kilo Code, more Roo Code and OpenCode joined (issue 58); OpenCode's long sessions
    # cost 15% / 16% of sending them whole and are most of the split's calls: its cost
    # fell by 23 / 24 points. Every call up to MOST_CALLS a run.
    ("tune", "synthesize-fast-mid"): (0.861, 0.322, 0.357),
    # compress-history reads text actions as calls (issue 59): from 97.3% / 105.9% of the
    # cost of sending everything to 61.5% / 65.0%.
    # Roo Code joined the tune split: 0.7 points of reuse and 6.7 / 6.6 of cost; its
    # seventh session, 1.1 / 1.0 more. Six families joined (issue 58): 0.4 / 0.3 more.
    # Kilo Code, more Roo Code and OpenCode (issue 58): 31 / 31 points less, reuse 1.0.
    ("tune", "compress-history-fast"): (0.898, 0.395, 0.430),
    # Aider's sessions compacted (console output and edit reports read as results): less
    # of each output is the previous one's (their turns become notes), for 4.6 points of
    # cost on the split.
    # And cut only when that pays (issue 36): 0.5 and 0.7 points of cost.
    # Cline joined the split (issue 58): its long sessions, compacted by 86%, lower the
    # split's cost and raise its reuse.
    # The harness's block kept once on the user messages it sends too (issue 58): Cline's
    # feedback, resumed tasks and reminders lost their stale environment details; the
    # split's cost fell 4.8 / 5.0 points and its reuse 3.1, for the reason given above.
    # Eight more Cline sessions (issue 58): their worst runs cost 86% / 91% of sending
    # them whole; the split's cost rose 3.8 / 4.1 points.
    ("test", "synthesize-fast-mid"): (0.810, 0.346, 0.386),
    ("test", "compress-history-fast"): (0.913, 0.542, 0.577),
}
# Issue 15's targets, over every call of the corpus's first 31 runs (tau-bench airline,
# SWE-agent, mini-swe-agent on deepseek): needed-fact recall at least 75% at 70% or more
# token reduction; cost under prompt caching at most 50% and 55% (OpenAI, Anthropic).
# Issue 36 then asked that no compaction cost more than it saves: a turn sent whole as
# the newest is cut once a turn follows only when that pays, which these runs' first
# calls cannot, and their reduction went from 70.0% to 69.75% (recall 77.4% to 77.9%,
# cost 49.4% / 53.6% to 49.2% / 53.4%). Keeping 70% took tail cuts priced at three times
# the calls made, which put 25 of the test split's runs above 100% of sending them whole
# (16 here, 28 before): the reduction targets sit a quarter point lower, and the note of
# the commit that moved them says so.
FIRST_RUNS = ("tau-airline-gpt4o", "sweagent-", "minisweagent-")
TARGETS = {"synthesize-fast-mid": (0.695, 0.75, 0.50, 0.55)}
# And over the planted runs, at every step once all facts are in: reduction at least 80%
# (79.997% since the same change), at least 95% of the facts kept, and 90% of each kind.
PLANTED_TARGETS = {"synthesize-fast-mid": (0.795, 0.95, 0.90)}


@pytest.fixture(scope="module")
def rows(encoder):
    return {split: summaries(evaluate(quick(split), encoder, progress=lambda _: None).total)
            for split in ("tune", "test")}


@pytest.fixture(scope="module")
def every(encoder):
    return {split: evaluate(every_call(split=split), encoder, progress=lambda _: None)
            for split in ("tune", "test")}


@pytest.mark.parametrize(("split", "name"), sorted(FLOORS))
def test_quality_stays_above_its_floor(rows, split, name):
    scores = rows[split][name]
    floors = FLOORS[split, name]
    below = {k: (round(scores[k], 4), floor) for k, floor in zip(KEYS, floors, strict=True)
             if scores[k] < floor}
    assert below == {}, f"{name} on {split} fell below its floors (score, floor): {below}"


# Recall with expand (issue 39): what an agent that expands every handle it is shown can
# read back, at mid. The target is 97%; today's scores are 99.7% and more.
EXPAND_FLOOR = {"synthesize-fast-mid": 0.99, "compress-history-fast": 0.88}


@pytest.mark.parametrize("split", ["tune", "test"])
def test_what_the_handles_give_back_lifts_recall_to_its_ceiling(rows, split):
    for name, scores in rows[split].items():
        assert scores["recall_with_expand"] >= scores["recall"], name
        if name in EXPAND_FLOOR:
            assert scores["recall_with_expand"] >= EXPAND_FLOOR[name], (name, scores)
    # Windows make no handles: nothing behind them to expand.
    assert all(rows[split][w]["recall_with_expand"] == rows[split][w]["recall"]
               for w in WINDOWS)


@pytest.mark.parametrize("split", ["tune", "test"])
def test_the_baselines_behave_as_baselines(rows, split):
    assert rows[split]["none"]["recall"] == 1.0 and rows[split]["none"]["reduction"] == 0.0
    assert rows[split]["none"]["planted_survival"] == 1.0
    windows = [rows[split][name] for name in WINDOWS]
    # A wider window keeps more and cuts less.
    assert [w["recall"] for w in windows] == sorted(w["recall"] for w in windows)
    assert [w["reduction"] for w in windows] == sorted((w["reduction"] for w in windows),
                                                       reverse=True)


def test_every_test_family_holds_its_margin_over_the_window(every):
    families = {f.family: f for f in score_families(every["test"].runs,
                                                    "synthesize-fast-mid")}
    assert set(families) == set(MARGINS)
    below = {name: round(f.margin, 4) for name, f in families.items()
             if f.margin < MARGINS[name]}
    assert below == {}, f"families under their margin floors: {below}"


@pytest.mark.parametrize(("split", "name"), sorted(CEILINGS))
def test_cost_under_prompt_caching_stays_under_its_ceiling(every, split, name):
    scores = summaries(every[split].total)[name]
    reuse, openai, anthropic = CEILINGS[split, name]
    assert scores["prefix_reuse"] >= reuse, scores["prefix_reuse"]
    assert scores["cost"]["openai"] <= openai, scores["cost"]
    assert scores["cost"]["anthropic"] <= anthropic, scores["cost"]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_the_first_runs_keep_what_agents_need_at_the_target_reduction(encoder, name):
    options = EvalOptions(files=FIRST_RUNS, only=(name,), planted_runs=0)
    scores = summaries(evaluate(options, encoder, progress=lambda _: None).total)[name]
    reduction, recall, openai, anthropic = TARGETS[name]
    assert scores["reduction"] >= reduction, scores["reduction"]
    assert scores["recall"] >= recall, scores["recall"]
    assert scores["cost"]["openai"] <= openai and scores["cost"]["anthropic"] <= anthropic


@pytest.mark.parametrize("name", sorted(PLANTED_TARGETS))
def test_the_default_keeps_planted_facts_at_the_target_reduction(rows, name):
    reduction, survival, each = PLANTED_TARGETS[name]
    scores = rows["test"][name]
    assert scores["planted_reduction"] >= reduction, scores["planted_reduction"]
    assert scores["planted_survival"] >= survival, scores["planted_survival"]
    assert min(scores["planted_by_kind"].values()) >= each, scores["planted_by_kind"]


def test_an_incremental_job_extends_the_history_it_answered(encoder):
    """compress-history is replayed with the agent's own kept history: the second call
    sends the first call's answer back, with the new messages after it."""
    from app.evaluation.compactors import CompactorResult, Incremental

    sent = []

    class Recorder:
        def run(self, path, body):
            sent.append(body["messages"])
            return CompactorResult([{"role": "user", "content": f"summary {len(sent)}"}])

    job = Incremental("h", lambda m: ("/compress-history", {"messages": list(m)}), Recorder())
    first = [{"role": "user", "content": "task"}, {"role": "assistant", "content": "a"}]
    job.compact(first)
    later = [*first, {"role": "user", "content": "more"}]
    assert job.compact(later).messages == [{"role": "user", "content": "summary 2"}]
    assert sent[1] == [{"role": "user", "content": "summary 1"}, later[-1]]
    other = [{"role": "user", "content": "another run"}]
    job.compact(other)
    assert sent[2] == other  # a transcript that does not extend the last starts afresh

"""``/synthesize``: phase, nudge, compaction (fast, custom, or deep with a summary the
service got from an LLM), stats and receipt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from app.engine.compaction import deep
from app.engine.compaction import payback as cache_price
from app.engine.compaction.base import Compaction, Span, Strategy, StrategyContext
from app.engine.compaction.deep import DeepPlan
from app.engine.compaction.lifting import Lifted, lift
from app.engine.compaction.rebuild import older_and_recent
from app.engine.compaction.tiers import TIER_BUDGETS, Tier
from app.engine.compaction.window import WindowStrategy
from app.engine.errors import (
    BudgetTooSmall,
    InvalidOption,
    InvalidTranscript,
    StrategyFailed,
    UnknownStrategy,
)
from app.engine.jobs.accounting import account
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.synthesize.asked import asked_records
from app.engine.jobs.synthesize.budget import (
    NEAR_STEPS,
    Budget,
    Grid,
    check_fits,
    condensed,
    filled,
    first_fitting,
    grid,
    squeezed,
)
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.nudge import nudge
from app.engine.jobs.synthesize.strides import Fitting, Strides
from app.engine.reading.calls import validate
from app.engine.reading.confidence import read_with_confidence
from app.engine.reading.facts import Facts
from app.engine.reading.phases import Phase, PhaseOptions, Signals, classify, observe
from app.engine.transcript.model import (
    Message,
    Transcript,
    Turn,
    text_message,
    validate_pairs,
)
from app.engine.transcript.tokens import TokenCounter


@dataclass(frozen=True)
class SynthesisOptions:
    mode: Mode = Mode.FAST  # fast, custom or off: auto and deep are decided before
    tier: Tier = Tier.MID
    strategy: str | None = None
    phase: PhaseOptions = field(default_factory=PhaseOptions)
    steer: bool = True
    task: str | None = None  # the caller's statement of the task, else the first user message
    budget: Budget | None = None  # the most tokens the output may have (see budget)


# Receipt, Synthesis and Prepared are made on every call: __init__ is written out so
# that mypyc compiles it (see transcript.Transcript).
@dataclass(frozen=True, init=False)
class Receipt:
    spans: tuple[Span, ...]
    lost: Facts

    def __init__(self, spans: tuple[Span, ...] = (), lost: Facts | None = None) -> None:
        object.__setattr__(self, "spans", spans)
        object.__setattr__(self, "lost", Facts() if lost is None else lost)


@dataclass(frozen=True, init=False)
class Synthesis:
    transcript: Transcript
    compacted: bool
    phase: Phase
    nudge: str | None
    signals: Signals
    tokens_before: int
    tokens_after: int
    receipt: Receipt
    task: str | None  # the request's task, else the first user message
    nudged: bool  # the transcript ends with the nudge this service appended
    # Leading messages of ``transcript`` that later calls send again as they are, while
    # the agent only appends: ``stable`` on every later call, ``steady`` until the next
    # block of older turns closes (see ``blocks``).
    stable: int
    steady: int
    noted: int  # leading messages through the last note (see Compaction.noted)

    def __init__(self, transcript: Transcript, compacted: bool, phase: Phase,
                 nudge: str | None, signals: Signals, tokens_before: int, tokens_after: int,
                 receipt: Receipt, task: str | None = None, nudged: bool = False,
                 stable: int = 0, steady: int = 0, noted: int = 0) -> None:
        object.__setattr__(self, "transcript", transcript)
        object.__setattr__(self, "compacted", compacted)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "nudge", nudge)
        object.__setattr__(self, "signals", signals)
        object.__setattr__(self, "tokens_before", tokens_before)
        object.__setattr__(self, "tokens_after", tokens_after)
        object.__setattr__(self, "receipt", receipt)
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "nudged", nudged)
        object.__setattr__(self, "stable", stable)
        object.__setattr__(self, "steady", steady)
        object.__setattr__(self, "noted", noted)


@dataclass(frozen=True, init=False)
class Prepared:
    transcript: Transcript
    lifted: Lifted  # the messages as strategies see them (text actions as calls)
    options: SynthesisOptions
    context: StrategyContext
    signals: Signals
    phase: Phase
    nudge: str | None
    task: str | None
    tokens_before: int
    # Whether the run's shape was read (see reading.confidence): fast falls back to a
    # window on a run it could not read.
    read: bool

    def __init__(self, transcript: Transcript, lifted: Lifted, options: SynthesisOptions,
                 context: StrategyContext, signals: Signals, phase: Phase, nudge: str | None,
                 task: str | None, tokens_before: int, read: bool = True) -> None:
        object.__setattr__(self, "transcript", transcript)
        object.__setattr__(self, "lifted", lifted)
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "signals", signals)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "nudge", nudge)
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "tokens_before", tokens_before)
        object.__setattr__(self, "read", read)

    def with_context(self, context: StrategyContext) -> Prepared:
        return Prepared(self.transcript, self.lifted, self.options, context, self.signals,
                        self.phase, self.nudge, self.task, self.tokens_before, self.read)

    def unchanged(self) -> Synthesis:
        # Sent back as it came: a later call that compacts keeps the head.
        head = self.context.segments.head_stop
        return Synthesis(self.transcript, False, self.phase, self.nudge, self.signals,
                         self.tokens_before, self.tokens_before, Receipt(), self.task,
                         stable=head, steady=head, noted=head)


def under_trigger(prepared: Prepared) -> bool:
    """At or below the budget's trigger, the conversation goes back exactly as it came."""
    budget = prepared.options.budget
    return budget is not None and budget.trigger is not None \
        and prepared.tokens_before <= budget.trigger


def wholly(prepared: Prepared) -> bool:
    """Whether a cut point that leaves blocks closing into notes after the digest is
    passed over: so with a budget the caller gave, whose recent turns stay whole up to
    the whole budget. Such a closing shrinks the output at a point the call before found
    too large, so the cut went back to it and forward again a few calls later, each way
    a rewrite of everything after the digest (on tune's long sessions at 32k the cut
    moved 117 times in 1,165 calls, 36 of them back). Without those points the cut only
    moves forward through a stride and the older turns go to the digest. A cap the
    service sets from the model's window keeps the tier's short window, whose blocks
    close after the digest as they would without it."""
    budget = prepared.options.budget
    return budget is not None and budget.fill


class Synthesizer:
    def __init__(
        self,
        counter: TokenCounter,
        strategies: Mapping[str, Strategy],
        caches: EngineCaches | None = None,
    ) -> None:
        self._counter = counter
        self._strategies = strategies
        self._caches = caches or EngineCaches()
        self._window = WindowStrategy()
        # What a budgeted call's cut rests on, read from the run (see ``strides``).
        self._strides = Strides()

    @property
    def strategies(self) -> Mapping[str, Strategy]:
        return self._strategies

    def tokens(self, messages: Sequence[Message]) -> int:
        """The tokens of some messages, as this synthesizer counts them."""
        return self._counter.messages(messages)

    def prepare(self, transcript: Transcript, options: SynthesisOptions) -> Prepared:
        """Validate, read the phase and count the input: what every mode needs first."""
        messages = transcript.messages
        if not messages:
            raise InvalidTranscript("'messages' is empty; send at least the task as a user "
                                    "message.", pointer="/messages")
        caches = self._caches
        validate(messages, caches.calls)
        lifted = lift(messages, caches.actions)
        signals = observe(lifted.messages, options.phase, caches.outcomes, caches.calls)
        phase = classify(signals, options.phase)
        budget = TIER_BUDGETS[options.tier]
        text: str | None = None
        if options.steer and (not budget.late_nudge_only or signals.max_iterations is None
                              or signals.late):
            text = nudge(phase, signals, options.phase.output_tools or ())
        context = caches.context(lifted.messages, options.tier, self._counter.messages)
        segments = context.segments
        task = options.task
        if task is None and segments.task_index is not None:
            task = messages[segments.task_index].text
        before = self._counter.messages(messages)
        read = read_with_confidence(lifted.messages, segments.head_stop)
        return Prepared(transcript, lifted, options, context, signals, phase, text, task,
                        before, read)

    def run(self, transcript: Transcript, options: SynthesisOptions) -> Synthesis:
        """fast, custom or off."""
        return self.compact(self.prepare(transcript, options))

    def compact(self, prepared: Prepared, mode: Mode | None = None) -> Synthesis:
        """Run ``mode`` (default: the prepared options') without an LLM."""
        options = prepared.options if mode is None else replace(prepared.options, mode=mode)
        if options.mode is Mode.OFF or under_trigger(prepared):
            return prepared.unchanged()  # off leaves the messages as they are, nudge or not
        strategy = self._strategy(options)
        if strategy.name == "fast" and not prepared.read:
            # Notes of a run the engine did not read would keep its harness's output as
            # the user's words and cut the agent's actions: a window does no such harm.
            strategy = self._window
        room = options.budget.tokens if options.budget is not None else None
        context = prepared.context
        if room is not None and options.budget is not None and options.budget.fill:
            context = context.with_budget(filled(context.budget, room))
            prepared = prepared.with_context(context)
        compaction = strategy.compact(prepared.lifted.messages, context)
        if room is None:
            return self._finish(prepared, compaction, strategy.name)
        fitted = self._fit(prepared, strategy, compaction, room)
        return self._finish(prepared, fitted, strategy.name, room=room,
                            condensed=fitted is not compaction)

    def _fit(self, prepared: Prepared, strategy: Strategy, compaction: Compaction,
             tokens: int) -> Compaction:
        """``compaction`` if it fits ``tokens``; else the fewest oldest turns condensed
        into a digest that make it fit (see ``budget``)."""
        lifted = prepared.lifted
        count = self._counter.messages

        def size(c: Compaction) -> int:
            return count(lifted.lower(c.messages))

        # A call that fits without condensing sends no digest, even within a stride that
        # began condensed: holding the digest there cost 1 to 3 points of recall on tune's
        # long session at 32k and 128k for a few calls' prefix.
        if size(compaction) <= tokens:
            return compaction
        messages = lifted.messages
        context = prepared.context
        head_stop = context.segments.head_stop
        check_fits(messages, head_stop, tokens, count)
        tier = prepared.options.tier

        def sub(part: Sequence[Message]) -> tuple[Compaction, StrategyContext]:
            own = self._caches.context(part, tier, count).with_budget(context.budget)
            return strategy.compact(part, own), own

        turns = context.segments.turns
        sizes = [count(messages[t.start : t.stop]) for t in turns]
        cuts = grid(sizes, tokens)
        points = cuts.points
        fitting = Fitting(messages, context, sub, cuts, tokens,
                          lambda m: count(lifted.lower(m)), whole=wholly(prepared))
        floor = self._strides.floor(fitting, sizes, (tokens, context.budget, strategy.name))
        tried: dict[int, Compaction] = {}

        def fits(i: int) -> bool:
            cut = fitting.cut(len(turns), i)
            tried[i] = cut.compaction
            return size(cut.compaction) <= tokens and not (fitting.whole and cut.noted)

        # From the point the stride's readings leave (see strides) on, one point at a
        # time: that one fits but where a turn the readings passed over grew the output
        # by more than its own tokens, and a point further on seldom needs more than one
        # step. (A bisection could settle on a later point that fits where an earlier one
        # also does: closing blocks make the output's size uneven across points.)
        # Past a few steps, or when even the last point does not fit (a newest turn past
        # the budget), the search bisects or gives up: a long run has hundreds of points.
        most = len(points) - 1
        best: int | None = None
        if points and fits(most):
            near = min(floor + NEAR_STEPS, most)
            best = next((i for i in range(floor, near) if fits(i)), None)
            if best is None:
                best = first_fitting(fits, near, most)
        if best is not None:
            return tried[best]
        # Every older turn condensed, the newest turn's results and arguments cut; at the
        # smallest budgets the digest is its header and handle alone.
        tried_out = compaction
        for bare in (False, True):
            last = condensed(messages, head_stop, turns[-1].start, sub, context,
                             tokens=tokens, bare=bare, olders=fitting.olders,
                             anchor_at=_anchor_at(turns, cuts, len(turns) - 1),
                             ).compaction if len(turns) > 1 \
                else compaction
            tried_out = squeezed(last, tokens, lambda m: count(lifted.lower(m)), context)
            if size(tried_out) <= tokens:
                return tried_out
        raise BudgetTooSmall(
            f"even with every older turn condensed and the newest turn's results cut, the "
            f"output takes {size(tried_out)} tokens, past 'budget_tokens' {tokens}: the "
            "newest turn's own text does not fit beside the system prompt and the task; "
            "send a larger budget.", pointer="/budget_tokens")

    def plan_deep(self, prepared: Prepared) -> DeepPlan | None:
        """The prompt for the older turns; None when everything fits the recent window."""
        messages = prepared.lifted.messages
        older, _ = older_and_recent(messages, prepared.context)
        tokens = self._counter.messages(messages[older[0].start : older[-1].stop]) if older else 0
        return deep.plan(messages, prepared.context, prepared.task or "", tokens)

    def resume_deep(self, prepared: Prepared, plan: DeepPlan, turns: int,
                    summary: str) -> DeepPlan:
        """``plan`` updating an earlier summary of its first ``turns`` older turns."""
        return deep.resumed(prepared.lifted.messages, prepared.context, prepared.task or "",
                            plan, turns, summary)

    def finish_deep(self, prepared: Prepared, plan: DeepPlan, summary: str) -> Synthesis:
        compaction = deep.summarized(prepared.lifted.messages, prepared.context, plan,
                                     summary)
        room = prepared.options.budget.tokens if prepared.options.budget is not None else None
        if room is not None and self._counter.messages(
                prepared.lifted.lower(compaction.messages)) > room:
            # The summary and the recent turns do not fit: fast fits them by condensing.
            return self.compact(prepared, Mode.FAST)
        return self._finish(prepared, compaction, "deep")

    def _finish(self, prepared: Prepared, compaction: Compaction, name: str, *,
                room: int | None = None, condensed: bool = False) -> Synthesis:
        """``room``: the token budget, which the nudge must fit in too; ``condensed``: a
        budget condensed the oldest turns, the user's words among them into the digest."""
        messages = prepared.transcript.messages
        compaction = prepared.lifted.lower_compaction(compaction)
        out = list(compaction.messages)
        foldable = prepared.lifted.foldable
        if name == self._window.name or condensed:  # the user messages it left out
            foldable = foldable | {id(m) for m in compaction.dropped if m.role == "user"}
        check_output(name, messages, out, foldable, prepared.lifted.stand_ins)
        # Through the last note: the same messages on every call until a block closes.
        recurs = compaction.noted if compaction.noted is not None else compaction.stable
        books = account(self._counter, self._caches.facts, messages, prepared.tokens_before,
                        out, compaction.dropped, settled=compaction.settled,
                        recurring=recurs or 0)
        head = prepared.context.segments.head_stop
        stable = head if compaction.stable is None else compaction.stable
        steady = stable if compaction.steady is None else compaction.steady
        noted = stable if compaction.noted is None else compaction.noted
        if books.tokens_after >= books.tokens_before:
            # The input goes back as it came, without the nudge: the output is never
            # larger than the input. A later call sends what the strategy would have sent,
            # so only the messages it left as they were stay the same.
            same = next((i for i, (a, b) in enumerate(zip(messages, out, strict=False))
                         if a is not b), min(len(messages), len(out)))
            return replace(prepared.unchanged(), stable=min(stable, same),
                           steady=min(steady, same), noted=min(noted, same))
        after = books.tokens_after
        nudged = False
        # Said before the requests after the notes; each holds its place until its
        # block closes, as the turns around it do.
        for records in reversed(asked_records(prepared.lifted.messages, out,
                                              self._caches.records, max(stable, noted))):
            cost = self._counter.messages([records.message])
            if cache_price.rides(books.tokens_before - after, cost) and (
                    room is None or after + cost <= room):
                out.insert(records.at, records.message)
                after += cost
                steady += records.at < steady
        if prepared.nudge is not None:
            # The nudge rides on what the compaction saved, priced as a provider's cache
            # prices both: it is new on every call, where the tokens saved were reads.
            nudge = text_message("user", prepared.nudge)
            cost = self._counter.messages([nudge])
            if cache_price.rides(books.tokens_before - after, cost) and (
                    room is None or after + cost <= room):
                out.append(nudge)
                after += cost
                nudged = True
        t = prepared.transcript
        result = Transcript(tuple(out), t.format, t.envelope)
        return Synthesis(result, True, prepared.phase, prepared.nudge, prepared.signals,
                         books.tokens_before, after, Receipt(compaction.spans, books.lost),
                         prepared.task, nudged=nudged, stable=stable, steady=steady,
                         noted=noted)

    def _strategy(self, options: SynthesisOptions) -> Strategy:
        if options.mode is Mode.FAST:
            return self._strategies["fast"]
        if options.mode is not Mode.CUSTOM:
            raise InvalidOption(f"mode {options.mode.value!r} is decided before synthesis; "
                                "the engine runs fast, custom or off.")
        if not options.strategy:
            raise InvalidOption(
                "mode 'custom' needs 'synthesis_strategy' in 'reasoning' to name a strategy; "
                f"available: {', '.join(sorted(self._strategies))}.",
                pointer="/reasoning/synthesis_strategy",
            )
        found = self._strategies.get(options.strategy)
        if found is None:
            raise UnknownStrategy(
                f"no strategy is registered as {options.strategy!r}; available: "
                f"{', '.join(sorted(self._strategies))}. Plugins register in the "
                "'contextsynth.strategies' entry-point group.",
                pointer="/reasoning/synthesis_strategy",
            )
        return found


def check_output(name: str, before: Sequence[Message], after: Sequence[Message],
                 replaced: frozenset[int] = frozenset(),
                 stand_ins: Mapping[int, Message] | None = None) -> None:
    """Hold every strategy, plugins included, to the invariants callers rely on.

    ``replaced`` holds the ids of user messages a strategy may fold or update: one this
    service wrote on an earlier call (a history summary), or a tool's output that came
    back as a user message (a text action's observation); every other system and user
    message must stay, or its stand-in (``stand_ins``: by the id of the message as it
    came, the copy strategies saw without the harness's stale boilerplate) in its place.
    """
    try:
        validate_pairs(after)
    except InvalidTranscript as exc:
        raise StrategyFailed(f"strategy {name!r} broke tool-call pairing: {exc.detail}") from exc
    kept = {id(m) for m in after}
    for m in before:
        if m.role in ("system", "user") and id(m) not in kept and id(m) not in replaced \
                and not _stood_in(m, stand_ins, kept, replaced):
            raise StrategyFailed(
                f"strategy {name!r} dropped or changed messages[{m.index}] (role {m.role}); "
                "system and user messages must be kept as they are.")


def _anchor_at(turns: Sequence[Turn], cuts: Grid, point: int) -> int | None:
    """Where the digest's older part ends for a cut of ``point`` turns, as a message
    index (None: the digest has one part)."""
    anchor = cuts.anchor(point)
    return turns[anchor].start if anchor else None


def _stood_in(message: Message, stand_ins: Mapping[int, Message] | None, kept: set[int],
              replaced: frozenset[int]) -> bool:
    """Whether ``message``'s stand-in is kept (or was one a strategy may fold)."""
    stand_in = stand_ins.get(id(message)) if stand_ins else None
    return stand_in is not None and (id(stand_in) in kept or id(stand_in) in replaced)

"""Agent-loop replay: the calls an agent would make, each through every compactor.

Before every assistant step of a transcript the agent would send everything
so far. ``steps`` samples those calls evenly (always keeping the last); each
call's output is scored against the transcript's later messages and against
the compactor's previous output (prefix reuse).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.engine.compaction.base import HANDLE_PREFIX
from app.evaluation import errors, needed, planted
from app.evaluation.compactors import Compactor
from app.evaluation.parts import add_parts
from app.evaluation.scores import Tally
from app.evaluation.seen import Seen, Wire, count, readable_text, shared_prefix


def sample_steps(messages: Sequence[Wire], steps: int | None) -> list[int]:
    """Positions of assistant messages to call before: all, or ``steps`` spread evenly
    with the last one always among them."""
    at = [i for i, m in enumerate(messages) if m.get("role") == "assistant" and i > 0]
    if steps is None or steps >= len(at):
        return at
    if steps <= 1:
        return at[-1:]
    picked = {at[round(j * (len(at) - 1) / (steps - 1))] for j in range(steps)}
    return sorted(picked)


@dataclass
class Scorer:
    """Shared memos for every compactor and transcript of one eval."""

    seen: Seen
    sets: needed.TokenSets
    failures: errors.Failures
    parts: bool = False  # also add up each output's parts (see ``parts``)

    def replay(self, messages: Sequence[Wire], steps: list[int],
               compactors: Sequence[Compactor], tallies: dict[str, Tally]) -> None:
        """Every sampled call of one transcript through every compactor."""
        previous: dict[str, list[tuple[int, ...]]] = {c.name: [] for c in compactors}
        # Every handle a compactor made in this run, with its originals: a note shown at
        # a later call may name a handle an earlier call made.
        made: dict[str, dict[str, list[Wire]]] = {c.name: {} for c in compactors}
        for k in steps:
            prefix = list(messages[:k])
            before = count(self.seen.prompt(prefix))
            wanted = needed.needed(messages, k, self.sets)
            for compactor in compactors:
                tally = tallies[compactor.name]
                started = time.perf_counter()
                answer = compactor.compact(prefix)
                elapsed = time.perf_counter() - started
                out = answer.messages
                made[compactor.name].update(answer.behind)
                sent = self.seen.prompt(out)
                tally.add_call(before, count(sent), shared_prefix(previous[compactor.name],
                                                                  sent), elapsed)
                previous[compactor.name] = sent
                self.score(prefix, wanted, out, sent, made[compactor.name], tally)

    def score(self, prefix: Sequence[Wire], wanted: set[str], out: Sequence[Wire],
              sent: Sequence[tuple[int, ...]], made: Mapping[str, list[Wire]],
              tally: Tally) -> None:
        """What one call's output ``out`` (``sent``: its tokens) keeps of the ``wanted``
        facts, also behind the handles it shows (``made``: every handle of the run so
        far), and of the failure lines of ``prefix`` it changed."""
        tally.needed += len(wanted)
        found = needed.found(wanted, out, self.sets)
        tally.found += found
        shown = expandable(out, made)
        tally.found_expanded += needed.found(wanted, [*out, *shown], self.sets) \
            if shown else found
        if self.parts:
            add_parts(out, [len(t) for t in sent], wanted, self.sets, tally.parts)
        cut = self.failures.cut(prefix, out)
        tally.errors_cut += len(cut)
        tally.errors_kept += errors.retained(cut, out)

    def planted(self, run: planted.PlantedRun, compactor: Compactor, tally: Tally) -> None:
        """Survival of each planted fact in the context sent at every step once all of
        them are in the transcript, and the reduction over those steps. (Measured at the
        last step only, the reduction swung from 73% to 87% with the block size alone,
        by where that one step fell in the block cycle.)"""
        for k in planted_steps(run):
            prefix = run.messages[:k]
            out = compactor.compact(prefix).messages
            tally.planted_before += count(self.seen.prompt(prefix))
            tally.planted_after += count(self.seen.prompt(out))
            text = "\n".join(readable_text(m) for m in out)
            for fact in run.facts:
                score = tally.planted[fact.kind]
                score[0] += planted.survives(fact, text)
                score[1] += 1


_HANDLE = re.compile(rf"{HANDLE_PREFIX}\d{{20}}")


def expandable(out: Sequence[Wire], made: Mapping[str, list[Wire]]) -> list[Wire]:
    """The originals behind every handle ``out`` shows: what an agent with the expand
    tool could read back (a handle the compactor did not make is not one)."""
    shown = dict.fromkeys(h for m in out for h in _HANDLE.findall(readable_text(m)))
    return [original for h in shown if h in made for original in made[h]]


def planted_steps(run: planted.PlantedRun) -> list[int]:
    """The calls before each assistant step from the one where every fact is planted."""
    steps = sample_steps(run.messages, None)
    for n, k in enumerate(steps):
        text = "\n".join(readable_text(m) for m in run.messages[:k])
        if all(planted.survives(f, text) for f in run.facts):
            return steps[n:]
    return steps[-1:]

"""``/reflect``: one iteration's tool calls into insights, learnings, relevance and a verdict.

Fast mode reads the calls with heuristics; deep mode has the LLM fill the same
fields as JSON, validated here. Either way, stuck detection is deterministic:
three iterations stuck or regressing, or one call repeated with the same
result three times, sets ``stuck`` and writes a recovery prompt.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.engine import jsontext
from app.engine.jobs.recall.answer import terms
from app.engine.prompts import (
    MARKER,
    REFLECT_SYSTEM,
    REFLECT_USER,
    PromptMessage,
    fence,
)
from app.engine.reading.outcomes import Outcomes, shorten
from app.engine.transcript.model import Message, Part

RELEVANCE = ("high", "medium", "low")
FAILED_OUTCOMES = ("error", "failure", "timeout")
PROGRESS = ("advancing", "stuck", "regressing")
OUTPUT_CHARS = 1000  # raw outputs are kept this long, for debugging
_STUCK_RUN = 3
_LINE_CHARS = 160
# The reasoning context (layer 2) an agent puts in its next prompt: at most this many
# tokens unless the request says otherwise.
CONTEXT_TOKENS = 400
_RATIONALE_CHARS = 300
_FEEDBACK_CHARS = 500
# Words of almost any goal: sharing them says nothing about relevance.
_GOAL_VERBS = frozenset({"find", "fix", "make", "get", "check", "see", "use", "need", "want",
                         "try", "look"})


@dataclass(frozen=True, slots=True)
class Call:
    tool: str
    params: str
    output: str
    # "success", or how it failed ("error", "failure", "timeout"), when the caller knows
    outcome: str | None = None
    duration_ms: float | None = None
    cost: float | None = None
    rationale: str | None = None  # why the agent made the call, in its words

    @property
    def digest(self) -> str:
        """Same tool, same input, same (kept part of the) result."""
        h = hashlib.blake2b(digest_size=12)
        for value in (self.tool, self.params, self.output[:OUTPUT_CHARS]):
            h.update(value.encode("utf-8", "surrogatepass") + b"\0")
        return h.hexdigest()


@dataclass(frozen=True, slots=True)
class PastIteration:
    progress: str | None
    calls: tuple[Call, ...]


@dataclass(frozen=True, slots=True)
class Enriched:
    call: Call
    failed: bool
    line: str
    insights: tuple[str, ...]
    learning: str
    relevance: str
    next_actions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Reflection:
    calls: tuple[Enriched, ...]
    synthesis: str
    progress: str
    reasoning_context: str
    stuck: bool
    stuck_reason: str | None
    recovery_prompt: str | None


@dataclass(frozen=True, slots=True)
class Iteration:
    """What a caller says of one iteration beside its calls."""

    goal: str
    calls: tuple[Call, ...]
    history: tuple[PastIteration, ...] = ()
    user_feedback: str | None = None  # what the user said of the agent's work
    context_tokens: int = CONTEXT_TOKENS


class Reflector:
    def __init__(self, outcomes: Outcomes,
                 tokens: Callable[[str], int] | None = None) -> None:
        self._outcomes = outcomes
        # The service passes its token counter; without one, about four characters a token.
        self._tokens = tokens or _about_tokens

    def _read(self, call: Call) -> tuple[bool, str]:
        flagged = call.outcome in FAILED_OUTCOMES
        if call.outcome == "success":
            return False, self._outcomes.of(Message("tool", (Part("text", call.output),))).line
        outcome = self._outcomes.of(Message("tool", (Part("text", call.output),),
                                            is_error=flagged))
        if call.outcome == "timeout":
            # What the output says is what came before the call was cut off.
            after = f" after {call.duration_ms:g} ms" if call.duration_ms is not None else ""
            said = f": {outcome.line}" if call.output.strip() else ""
            return True, f"timed out{after}{said}"
        return outcome.error, outcome.line

    def heuristic(self, it: Iteration) -> Reflection:
        seen = {c.digest for past in it.history for c in past.calls}
        goal_terms = set(terms(it.goal)) - _GOAL_VERBS
        enriched = []
        for call in it.calls:
            failed, line = self._read(call)
            repeated = call.digest in seen
            seen.add(call.digest)
            enriched.append(_enrich(call, failed, line, repeated, goal_terms))
        fresh = [e for e in enriched if e.relevance != "low"]
        failures = sum(e.failed for e in enriched)
        if fresh:
            progress = "advancing"
        elif failures and failures == len(enriched):
            progress = "regressing"
        else:
            progress = "stuck"
        synthesis = (f"{len(enriched) - failures} of {len(enriched)} calls succeeded; "
                     f"{len(fresh)} brought new information toward the goal.")
        if failures:
            last = next(e for e in reversed(enriched) if e.failed)
            synthesis += f" Last failure: {last.call.tool} -> {last.line}."
        return self.finish(enriched, synthesis, progress, it)

    def finish(self, enriched: Sequence[Enriched], synthesis: str, progress: str,
               it: Iteration) -> Reflection:
        stuck_reason = _stuck(enriched, progress, it.history)
        recovery = None
        if stuck_reason is not None:
            recovery = (f"{MARKER} You look stuck: {stuck_reason}. Do not repeat that call. "
                        "Say what you already know and what is still missing, then take a "
                        "different next step (another tool, other inputs, or answer with "
                        "what you have).")
        context = self._context(enriched, it.user_feedback, it.context_tokens)
        return Reflection(tuple(enriched), synthesis, progress, context,
                          stuck_reason is not None, stuck_reason, recovery)

    def _context(self, enriched: Sequence[Enriched], feedback: str | None,
                 budget: int) -> str:
        """Layer 2: what the user said of the work, then a line of insights per call, most
        relevant first and in the order they ran within a rank, while they fit ``budget``
        tokens; a last line counts the calls left out."""
        ranked = [e for _, e in sorted(enumerate(enriched),
                                       key=lambda p: (RELEVANCE.index(p[1].relevance), p[0]))]
        lines = [f"user feedback: {shorten(' '.join(feedback.split()), _FEEDBACK_CHARS)}"] \
            if feedback else []
        used = sum(self._tokens(line) + 1 for line in lines)
        for n, e in enumerate(ranked):
            line = _insight_line(e)
            rest = len(ranked) - n - 1
            # Room for this line, and for the count of what follows it if anything does.
            reserve = self._tokens(_LEFT_OUT.format(n=rest, low=rest)) + 1 if rest else 0
            if used + self._tokens(line) + 1 + reserve > budget and lines:
                left = ranked[n:]
                low = sum(x.relevance == "low" for x in left)
                lines.append(_LEFT_OUT.format(n=len(left), low=low))
                break
            lines.append(line)
            used += self._tokens(line) + 1
        return "\n".join(lines)

    def prompt(self, it: Iteration) -> tuple[PromptMessage, ...]:
        shown = "\n".join(
            f"{n + 1}. {c.tool}({shorten(c.params, 300)}) -> "
            f"{shorten(c.output, 1500) if c.output.strip() else '(no output)'}"
            + (f"\n   {_facts(c)}" if _facts(c) else "")
            + (f"\n   why: {shorten(c.rationale, _RATIONALE_CHARS)}" if c.rationale else "")
            for n, c in enumerate(it.calls))
        past = "\n".join(f"- {p.progress or 'unknown'}: " + ", ".join(c.tool for c in p.calls)
                         for p in it.history[-5:]) or "(none)"
        # Earlier iterations and the user's feedback are the caller's words too (tool
        # names, progress labels): they sit in the same fence as this iteration's calls.
        record = f"This iteration's tool calls:\n{shown}\n\nEarlier iterations:\n{past}"
        if it.user_feedback:
            record += f"\n\nThe user's feedback:\n{shorten(it.user_feedback, _FEEDBACK_CHARS)}"
        user = REFLECT_USER.format(goal=fence(it.goal, "goal"), transcript=fence(record))
        return (PromptMessage("system", REFLECT_SYSTEM), PromptMessage("user", user))

    def from_reply(self, reply: str, it: Iteration) -> Reflection:
        """The LLM's JSON as a reflection; ValueError says what is wrong with it."""
        calls = it.calls
        data = _json(reply)
        entries = data.get("calls")
        if not isinstance(entries, list) or len(entries) != len(calls):
            raise ValueError(f"'calls' must be a list of {len(calls)} entries")
        enriched = []
        for n, (entry, call) in enumerate(zip(entries, calls, strict=True)):
            if not isinstance(entry, dict):
                raise ValueError(f"calls[{n}] must be an object")
            relevance = entry.get("relevance")
            if relevance not in RELEVANCE:
                raise ValueError(f"calls[{n}].relevance must be high, medium or low")
            insights = _strings(entry.get("insights"), f"calls[{n}].insights")
            actions = _strings(entry.get("next_suggested_actions"),
                               f"calls[{n}].next_suggested_actions")
            learning = entry.get("learning")
            if not isinstance(learning, str):
                raise ValueError(f"calls[{n}].learning must be a string")
            failed, line = self._read(call)
            enriched.append(Enriched(call, failed, line, insights, learning, relevance,
                                     actions))
        synthesis, progress = data.get("synthesis"), data.get("progress_assessment")
        if not isinstance(synthesis, str) or progress not in PROGRESS:
            raise ValueError("'synthesis' must be a string and 'progress_assessment' one of "
                             "advancing, stuck, regressing")
        return self.finish(enriched, synthesis, str(progress), it)


def _relevance(call: Call, goal_terms: set[str]) -> str:
    """How much of the goal the call's input and output speak to: two goal terms (or the
    only one) make it high, one medium, none low."""
    overlap = len(goal_terms & set(terms(call.output[:4000] + " " + call.params)))
    if overlap >= min(2, max(len(goal_terms), 1)):
        return "high"
    return "medium" if overlap else "low"


def _enrich(call: Call, failed: bool, line: str, repeated: bool,
            goal_terms: set[str]) -> Enriched:
    params = shorten(" ".join(call.params.split()), 80)
    relevance = _relevance(call, goal_terms)
    if failed and relevance != "low" and not repeated:
        # A failure that bears on the goal is evidence, often the most telling line.
        return Enriched(call, True, line, (f"{call.tool} shows the failure: {line}",),
                        f"{call.tool}({params}) reproduces the problem: {line}", "high",
                        ("trace the failure to the code or data it names",
                         "change that code, then run the same call to confirm"))
    if failed:
        return Enriched(call, True, line, (f"{call.tool} failed: {line}",),
                        f"{call.tool}({params}) fails ({line}); change the input or the "
                        "approach before trying again.", "low",
                        (f"fix the input of {call.tool} and retry once",
                         "try another tool for the same information"))
    if repeated:
        return Enriched(call, False, line, (f"{call.tool} returned the same as before",),
                        f"Repeating {call.tool}({params}) gives the same result.", "low",
                        ("use the result you already have instead of calling it again",))
    if not call.output.strip():
        return Enriched(call, False, line, (f"{call.tool} returned nothing",),
                        f"{call.tool}({params}) returns nothing here.", "low",
                        (f"check the input of {call.tool}",))
    actions = ("use this result toward the goal",) if relevance == "high" else ()
    return Enriched(call, False, line, (f"{call.tool} returned: {line}",),
                    f"{call.tool}({params}) works.", relevance, actions)


def _stuck(enriched: Sequence[Enriched], progress: str,
           history: Sequence[PastIteration]) -> str | None:
    # The repeated call first: it names what to stop doing.
    counts = Counter(c.digest for past in history for c in past.calls)
    counts.update(e.call.digest for e in enriched)
    for e in enriched:
        if counts[e.call.digest] >= _STUCK_RUN:
            return (f"{e.call.tool} was called {counts[e.call.digest]} times with the same "
                    "input and got the same result")
    verdicts = [p.progress for p in history] + [progress]
    if len(verdicts) >= _STUCK_RUN and all(v in ("stuck", "regressing")
                                           for v in verdicts[-_STUCK_RUN:]):
        return f"no progress for {_STUCK_RUN} iterations in a row"
    return None


def _facts(call: Call) -> str:
    """What the caller measured of a call: how it ended, how long it took, what it cost.
    A failure whose output reads as success ("done") is a failure all the same."""
    said = [f"outcome: {call.outcome}"] if call.outcome else []
    if call.duration_ms is not None:
        said.append(f"took {call.duration_ms:g} ms")
    if call.cost is not None:
        said.append(f"cost {call.cost:g}")
    return ", ".join(said)


def _about_tokens(text: str) -> int:
    return len(text) // 4 + 1


_LEFT_OUT = "({n} more calls left out, {low} of them of low relevance)"


def _insight_line(e: Enriched) -> str:
    """A call's line of the reasoning context: its relevance, the call, what it showed
    (its insights, else its learning)."""
    said = "; ".join(e.insights) or e.learning or e.line or "(no output)"
    return (f"[{e.relevance}] {e.call.tool}({shorten(' '.join(e.call.params.split()), 60)}): "
            f"{shorten(' '.join(said.split()), 2 * _LINE_CHARS)}")


def _json(reply: str) -> dict[str, Any]:
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text[text.index("\n") + 1:] if "\n" in text else text
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in the reply")
    try:
        value = jsontext.loads(text[start : end + 1])
    except ValueError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("the JSON is not an object")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a list of strings")
    return tuple(value)

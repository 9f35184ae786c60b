"""Where a compactor's output goes, and what each part of it alone holds.

Recall says how many needed facts the output keeps; it does not say which part of
the output keeps them, or what a part costs for what it holds. Each message sent
is put in one part (the caller's system and user messages, our notes, ledger and
nudge, the agent's calls and replies, its tool results whole or cut), and per
part the eval adds up its tokens, the needed facts it holds, and the needed facts
no other part of the same output holds: what the output would lose without it.
Facts held per thousand tokens compare the parts as uses of the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.prompts import LEDGER_HEADER, MARKER, MASKED_RESULT
from app.evaluation.needed import TokenSets
from app.evaluation.seen import Wire, content_text

PARTS = ("system", "user", "notes", "ledger", "nudge", "replies", "calls", "results",
         "results cut")
PARTS_NOTE = ("tokens: share of the output's tokens; holds: share of the needed facts "
              "that the part holds; alone: share it alone holds (lost without it); "
              "alone/1k tok: those per thousand of its tokens")
_LEDGER = f"{MARKER} {LEDGER_HEADER}"
_NUDGE = f"{MARKER} Phase:"
_CUT = "[contextsynth cut "
_MASKED = MASKED_RESULT.split("{", 1)[0]


def part_of(message: Wire) -> str:
    """The part ``message`` belongs to (one of PARTS)."""
    role = message.get("role")
    if role == "tool":
        text = content_text(message.get("content"))
        return "results cut" if _CUT in text or text.startswith(_MASKED) else "results"
    if role == "assistant":
        return "calls" if message.get("tool_calls") else "replies"
    if role in ("system", "developer"):
        return "system"
    text = content_text(message.get("content")).lstrip()
    if not text.startswith(MARKER):
        return "user"
    if text.startswith(_LEDGER):
        return "ledger"
    return "nudge" if text.startswith(_NUDGE) else "notes"


@dataclass
class PartTally:
    tokens: int = 0
    holds: int = 0  # needed facts in this part, summed over calls
    only: int = 0  # needed facts in this part and in no other part of the same output


def add_parts(out: Sequence[Wire], tokens: Sequence[int], wanted: set[str],
              sets: TokenSets, into: dict[str, PartTally]) -> None:
    """One call's output, ``tokens`` per message, against the facts it needed."""
    held: dict[str, set[str]] = {}
    for message, n in zip(out, tokens, strict=True):
        part = part_of(message)
        into.setdefault(part, PartTally()).tokens += n
        held.setdefault(part, set()).update(sets.of(message) & wanted)
    for part, facts in held.items():
        others: set[str] = set()
        for other, more in held.items():
            if other != part:
                others |= more
        tally = into[part]
        tally.holds += len(facts)
        tally.only += len(facts - others)


def parts_table(name: str, parts: dict[str, PartTally], needed: int) -> str:
    """A compactor's parts: share of its output tokens, share of needed facts held,
    share held there alone, and needed facts held alone per thousand tokens."""
    total = sum(p.tokens for p in parts.values()) or 1
    header = f"{name:26} {'tokens':>7} {'holds':>7} {'alone':>7} {'alone/1k tok':>12}"
    lines = [header, "-" * len(header)]
    for part in PARTS:
        p = parts.get(part)
        if p is None or not p.tokens:
            continue
        lines.append(f"  {part:24} {p.tokens / total:>6.1%} {p.holds / (needed or 1):>6.1%} "
                     f"{p.only / (needed or 1):>6.1%} {1000 * p.only / p.tokens:>12.2f}")
    return "\n".join(lines)

"""Model tiers: how much of the recent past each size of model gets in full."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum


class Tier(StrEnum):
    LOCAL = "local"
    MID = "mid"
    LARGE = "large"
    FRONTIER = "frontier"


@dataclass(frozen=True, slots=True)
class TierBudget:
    full_turns: int
    # A recent turn's tool arguments are cut past this many characters: code the agent
    # just wrote (a heredoc, an edit) is what it goes on to use, so only outliers are cut.
    argument_chars: int
    result_chars: int
    # Large models follow long contexts well; they only need steering late.
    late_nudge_only: bool
    # The recent window holds at least full_turns, and more turns while their tokens fit:
    # recent messages are what an agent uses most, so they are worth keeping whole.
    window_tokens: int = 0
    # ``fast-rebuild``: note lines this many messages older than the window take their
    # aged form (failures, writes and the agent's words stay; reads are left out); 0: lines
    # never age. Facts from that far back are seldom used again, and reads are most of a
    # note.
    brief_after: int = 0
    # ``fast``: the newest closed blocks whose notes stay whole; the older ones take their
    # aged form, ``age_batch`` blocks at a time (0 full blocks: notes never age). An aged
    # note changes the output from there on, which a provider's cache then misses: in
    # batches, that is paid once every ``age_batch`` closings.
    full_blocks: int = 0
    age_batch: int = 1
    # Turns per closed block (the ``fast`` strategy): the output grows at its end until
    # the turns after the last closed block hold a block and the recent window.
    block_turns: int = 8
    # A recent turn's text beside its calls (the agent's reasoning) past this many
    # characters becomes its gist; 0: kept whole.
    reasoning_chars: int = 0
    # ``fast``: a block closes once the turns after it hold at least this many turns and
    # tokens. The turns after the last closed block are sent as they are, so these are
    # the least ``fast`` keeps whole; -1: the recent window's (full_turns, window_tokens).
    closing_turns: int = -1
    closing_tokens: int = -1
    # ``fast``: what a result in the turns after the last closed block is cut to (-1:
    # result_chars). Those turns grow to a whole block before they become a note, where
    # ``fast-rebuild``'s window holds a few turns: each result's share is smaller.
    tail_result_chars: int = -1
    # ``fast``: a block closes only when its note's saving pays back the rewrite the
    # closing causes within this many times the calls made so far; 0: blocks close at
    # ``block_turns`` whatever they save (see ``fast``). A run has even odds of going on
    # as long again as it has lasted, and may go on longer: 1 is the break-even at even
    # odds. 1.25 is the least that kept issue 15's targets (70% reduction on the first
    # 31 runs, 80% on the planted runs); on ``tune`` 1 and 1.25 differ by 0.3 points of
    # recall.
    closing_payback: float = 0.0

    @property
    def tail(self) -> TierBudget:
        """The budget ``fast`` cuts the turns after its last closed block with."""
        if self.tail_result_chars < 0:
            return self
        return replace(self, result_chars=self.tail_result_chars, tail_result_chars=-1)

    @property
    def closing(self) -> tuple[int, int]:
        """The turns and tokens after a block that close it (see closing_turns)."""
        return (self.full_turns if self.closing_turns < 0 else self.closing_turns,
                self.window_tokens if self.closing_tokens < 0 else self.closing_tokens)


TIER_BUDGETS: dict[Tier, TierBudget] = {
    Tier.LOCAL: TierBudget(full_turns=2, argument_chars=2000, result_chars=200,
                           late_nudge_only=False, window_tokens=1600, brief_after=64,
                           block_turns=8, full_blocks=1, age_batch=3, reasoning_chars=300,
                           closing_turns=1, closing_tokens=0, closing_payback=1.25),
    Tier.MID: TierBudget(full_turns=2, argument_chars=4000, result_chars=750,
                         late_nudge_only=False, window_tokens=1900, brief_after=8,
                         block_turns=7, full_blocks=2, age_batch=3, reasoning_chars=150,
                         closing_turns=1, closing_tokens=0, tail_result_chars=450,
                         closing_payback=1.25),
    Tier.LARGE: TierBudget(full_turns=4, argument_chars=8000, result_chars=700,
                           late_nudge_only=True, window_tokens=4000, brief_after=64,
                           block_turns=16, full_blocks=1, age_batch=3, reasoning_chars=400,
                           closing_turns=2, closing_tokens=0, closing_payback=1.25),
    Tier.FRONTIER: TierBudget(full_turns=6, argument_chars=8000, result_chars=750,
                              late_nudge_only=True, window_tokens=7000, brief_after=96,
                              block_turns=16, full_blocks=2, age_batch=3,
                              reasoning_chars=800, closing_turns=3, closing_tokens=0,
                              closing_payback=1.25),
}

# Each tier's ``tail`` budget, made once: ``fast`` asks for it on every call.
TAIL_BUDGETS: dict[TierBudget, TierBudget] = {b: b.tail for b in TIER_BUDGETS.values()}

# First match wins, so narrower names come before the families they belong to.
_MODEL_RULES: tuple[tuple[re.Pattern[str], Tier], ...] = tuple(
    (re.compile(pattern), tier)
    for pattern, tier in (
        (r"(?:^|[-_./:])(mini|nano|haiku|flash|lite)\b|gpt-3\.5", Tier.MID),
        (r"opus|gpt-5|\bo[134]\b|\bo[134]-|gemini-(2\.5|3)[\w.-]*-pro|grok-4", Tier.FRONTIER),
        (r"sonnet|gpt-4|gemini-[\w.-]*pro|deepseek-(chat|reasoner|v3|r1)|mistral-large"
         r"|command-r-plus|405b|qwen[\w.-]*-max", Tier.LARGE),
        (r"mistral-(small|medium)|command-r|claude-instant", Tier.MID),
        (r"llama|qwen|mistral|mixtral|phi-?\d|gemma|codellama|deepseek-coder|starcoder"
         r"|:\d+b|\b\d+(\.\d+)?b\b|gguf|ollama", Tier.LOCAL),
    )
)


def infer_tier(model: str | None) -> Tier | None:
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    for pattern, tier in _MODEL_RULES:
        if pattern.search(name):
            return tier
    return None

"""``/rescue``: the prompt that answers a question from an exhausted agent's evidence."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.engine.compaction.base import StrategyContext
from app.engine.compaction.evidence import render_evidence
from app.engine.errors import BudgetTooSmall
from app.engine.prompts import RESCUE_SYSTEM, RESCUE_USER, PromptMessage, fence
from app.engine.reading.calls import validate
from app.engine.transcript.model import Message


@dataclass(frozen=True, slots=True)
class RescuePlan:
    prompt: tuple[PromptMessage, ...]
    steps: int
    evidence_chars: int
    compacted: bool  # some evidence was shrunk to fit the budget
    evidence: str = ""  # as the prompt shows it
    question: str = ""
    tokens: int | None = None  # the prompt's, when a token budget was counted


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """The most tokens the prompt may have, and how a text's tokens are counted."""

    tokens: int
    count: Callable[[str], int]


# Rounds of shrinking the evidence to a token budget: each aims at the room left at the
# characters per token the last round measured, a little under it.
_ROUNDS = 8
_AIM = 0.95


def plan(messages: Sequence[Message], context: StrategyContext, question: str,
         budget: int, max_steps: int | None,
         token_budget: TokenBudget | None = None) -> RescuePlan:
    """``budget``: the evidence's characters, at most; ``token_budget``: the whole
    prompt's tokens, at most (the evidence is shrunk until it fits both)."""
    validate(messages, context.calls)
    steps = sum(1 for m in messages if m.role == "assistant")
    label = f"{steps} steps" + (f" of {max_steps}" if max_steps else "")
    chars = budget
    for _ in range(_ROUNDS):
        evidence, compacted = render_evidence(messages, context, chars)
        user = RESCUE_USER.format(question=fence(question.strip(), "question"), steps=label,
                                  evidence=fence(evidence))
        prompt = (PromptMessage("system", RESCUE_SYSTEM), PromptMessage("user", user))
        if token_budget is None:
            return RescuePlan(prompt, steps, len(evidence), compacted, evidence, question)
        count = token_budget.count
        tokens = sum(count(p.content) for p in prompt)
        if tokens <= token_budget.tokens:
            return RescuePlan(prompt, steps, len(evidence), compacted or chars < budget,
                              evidence, question, tokens)
        evidence_tokens = max(count(evidence), 1)
        room = token_budget.tokens - (tokens - evidence_tokens)
        if room <= 0:
            break
        chars = min(chars - 1, int(room * len(evidence) / evidence_tokens * _AIM))
        if chars <= 0:
            break
    least = sum(token_budget.count(p.content) for p in prompt) - count(evidence) \
        if token_budget is not None else 0
    raise BudgetTooSmall(
        f"the rescue prompt without its evidence (the instructions and the question) "
        f"takes {least} tokens, and the evidence did not fit in the rest of "
        f"'budget_tokens' {token_budget.tokens if token_budget else 0}; send a larger "
        "budget or a shorter question.", pointer="/budget_tokens")

"""``/rescue``: the prompt that answers a question from an exhausted agent's evidence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.compaction.base import StrategyContext
from app.engine.compaction.evidence import render_evidence
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


def plan(messages: Sequence[Message], context: StrategyContext, question: str,
         budget: int, max_steps: int | None) -> RescuePlan:
    validate(messages, context.calls)
    steps = sum(1 for m in messages if m.role == "assistant")
    evidence, compacted = render_evidence(messages, context, budget)
    label = f"{steps} steps" + (f" of {max_steps}" if max_steps else "")
    user = RESCUE_USER.format(question=fence(question.strip(), "question"), steps=label,
                              evidence=fence(evidence))
    return RescuePlan((PromptMessage("system", RESCUE_SYSTEM), PromptMessage("user", user)),
                      steps, len(evidence), compacted, evidence, question)

"""Did a compaction pay, and what did it cost? Shared by every job that shrinks a transcript."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.reading.facts import FactExtractor, Facts
from app.engine.transcript.model import Message
from app.engine.transcript.tokens import TokenCounter

# Above this share of the input, output is recounted exactly before it is kept.
MARGIN = 0.9


@dataclass(frozen=True, init=False)  # made per call: see transcript.Transcript
class Accounting:
    tokens_before: int
    tokens_after: int
    lost: Facts

    def __init__(self, tokens_before: int, tokens_after: int, lost: Facts) -> None:
        object.__setattr__(self, "tokens_before", tokens_before)
        object.__setattr__(self, "tokens_after", tokens_after)
        object.__setattr__(self, "lost", lost)

    @property
    def shrunk(self) -> bool:
        return self.tokens_after < self.tokens_before


def texts(messages: Sequence[Message]) -> list[str]:
    """Every text of ``messages``, parts and call arguments, in order. A list, not a
    generator: compiled, a generator is driven through the interpreter's protocol, and
    this runs over the whole output of every call."""
    out: list[str] = []
    for m in messages:
        for part in m.parts:
            out.append(part.text)
        for call in m.tool_calls:
            out.append(call.arguments)
    return out


def account(counter: TokenCounter, facts: FactExtractor, before: Sequence[Message],
            tokens_before: int, after: Sequence[Message],
            dropped: Sequence[Message], *, settled: int = 0, recurring: int = 0) -> Accounting:
    """``settled``: how many leading ``dropped`` messages stay dropped as the transcript
    grows (see :attr:`Compaction.settled`); ``recurring``: how many leading ``after``
    messages the next call sends again as they are (the head and the notes). Both are
    hints for caches: a wrong value costs time, never a wrong receipt."""
    tokens_after = counter.messages(after)
    if tokens_after >= tokens_before * MARGIN:
        # Part-wise counts can be a few tokens off the rendered text; be exact here.
        tokens_after, tokens_before = counter.exact(after), counter.exact(before)
    if tokens_after >= tokens_before or not dropped:
        return Accounting(tokens_before, tokens_after, Facts())
    settled_texts = sum([len(m.parts) + len(m.tool_calls) for m in dropped[:settled]])
    recurring_texts = sum([len(m.parts) + len(m.tool_calls) for m in after[:recurring]])
    lost = facts.lost(texts(dropped), texts(after), settled=settled_texts,
                      recurring=recurring_texts)
    return Accounting(tokens_before, tokens_after, lost)

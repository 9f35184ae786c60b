"""Strategies a plugin package might register, for the entry-point tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from app.engine.compaction.base import Compaction, StrategyContext
from app.engine.transcript.model import Message, Part


class KeepLastTurns:
    """Drops old tool results' text down to a word: a well-behaved plugin."""

    name = "keep-last"

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        out = []
        dropped = []
        cut = context.segments.turns[-1].start if context.segments.turns else len(messages)
        for i, m in enumerate(messages):
            if m.role == "tool" and i < cut:
                out.append(replace(m, parts=(Part("text", "[elided]"),)))
                dropped.append(m)
            else:
                out.append(m)
        return Compaction(tuple(out), (), tuple(dropped))


class DropsUsers:
    """A broken plugin: it loses user messages."""

    name = "drops-users"

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        return Compaction(tuple(m for m in messages if m.role != "user"))


class RecordsThread:
    """Keeps everything, and notes which thread ran it."""

    name = "records-thread"

    def __init__(self) -> None:
        self.threads: list[str] = []

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        import threading

        self.threads.append(threading.current_thread().name)
        return Compaction(tuple(messages))


# Entry points may name an instance; the offload test reads what this one saw.
RECORDER = RecordsThread()

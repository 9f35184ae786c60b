"""The engine's long loops let other threads in (``pacing``): compiled, a step over
megabytes held the interpreter for a tenth of a second, and /healthz with it.

Each loop calls ``breathe`` through its module's global, so counting the calls there
counts the points where the event loop's thread may take over, compiled or not."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from app.adapters.tokenizer import pretokenizer
from app.engine.pacing import EVERY_CHARS
from app.engine.reading import facts, factscan
from app.engine.reading.facts import FactExtractor
from app.engine.transcript import tokens
from app.engine.transcript.tokens import TokenCounter


def _log(lines: int, distinct: int = 5_000) -> str:
    """Tool output of lines with an error marker and a number, ``distinct`` of them
    different: fewer than a receipt reads (``factscan.MOST_FACTS``), which would stop
    the reading early."""
    return "\n".join(f"step {n % distinct}: error: retry {n % distinct} of "
                     f"/srv/app/job{n % distinct % 97}.py failed" for n in range(lines))


@pytest.fixture
def breaths(monkeypatch: pytest.MonkeyPatch) -> Callable[[ModuleType], list[int]]:
    def counted(module: ModuleType) -> list[int]:
        calls = [0]

        def breathe() -> None:
            calls[0] += 1

        monkeypatch.setattr(module, "breathe", breathe)
        return calls
    return counted


def test_counting_the_tokens_of_a_long_log_breathes_as_it_reads(encoder, breaths):
    calls = breaths(tokens)
    text = _log(20_000)
    counter = TokenCounter(encoder, pretokenizer=pretokenizer(encoder, compiled=True))
    assert counter.text(text) == len(encoder.encode_ordinary(text))
    assert calls[0] >= len(text) // EVERY_CHARS - 1


def test_one_long_line_is_counted_a_stretch_at_a_time_between_breaths(encoder, breaths):
    calls = breaths(tokens)
    text = " ".join(f"word{n}" for n in range(200_000))
    counter = TokenCounter(encoder, pretokenizer=pretokenizer(encoder, compiled=True))
    assert counter.text(text) == len(encoder.encode_ordinary(text))
    assert calls[0] >= len(text) // (1 << 16) - 1


def test_reading_the_facts_and_error_lines_of_a_long_log_breathes(breaths):
    calls = breaths(factscan)
    text = _log(20_000)
    found = factscan.raw_tokens(text)
    assert b"/srv/app/job3.py" in found
    assert calls[0] >= len(text) // EVERY_CHARS - 1
    before = calls[0]
    assert len(factscan.error_lines(text)) == 5_000
    assert calls[0] - before >= len(text) // EVERY_CHARS - 1


def test_sorting_many_new_tokens_breathes(breaths):
    calls = breaths(factscan)
    new = [f"id{n:05d}x".encode() for n in range(50_000)]
    _, idents, _ = factscan.sort_tokens(new)
    assert len(idents) == 50_000
    assert calls[0] >= 50_000 // 4096 - 1


def test_the_lost_error_lines_of_a_long_log_are_found_between_breaths(breaths):
    calls = breaths(facts)
    log = _log(20_000)
    lost = FactExtractor().lost([log], ["a note"]).errors
    assert len(lost) == 5_000
    assert calls[0] >= 5_000 // 64 - 1


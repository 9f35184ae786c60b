import pytest

from app.adapters.tokenizer import load_encoding
from app.engine.errors import InvalidOption
from app.engine.memo import _PAIR
from app.engine.transcript.model import Message, Part, ToolCall
from app.engine.transcript.tokens import MESSAGE_OVERHEAD, TOOL_CALL_OVERHEAD, TokenCounter


class CountingEncoder:
    """Wraps the real encoder and counts how often it is asked."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0

    def encode_ordinary(self, text):
        self.calls += 1
        return self.inner.encode_ordinary(text)


def test_counts_include_tool_names_and_arguments(encoder):
    counter = TokenCounter(encoder)
    args = '{"command": "grep -rn TODO src/"}'
    m = Message("assistant", (Part("text", "Searching."),), (ToolCall("c1", "bash", args),))
    expected = (MESSAGE_OVERHEAD + len(encoder.encode_ordinary("Searching.")) + TOOL_CALL_OVERHEAD
                + len(encoder.encode_ordinary("bash")) + len(encoder.encode_ordinary(args)))
    assert counter.message(m) == expected


def test_resent_prefix_is_not_encoded_again(encoder):
    spy = CountingEncoder(encoder)
    counter = TokenCounter(spy)
    prefix = [Message("user", (Part("text", f"message number {i}"),)) for i in range(20)]
    first = counter.messages(prefix)
    calls_after_first = spy.calls
    new = Message("user", (Part("text", "the new step"),))
    second = counter.messages([*prefix, new])
    assert spy.calls == calls_after_first + 1
    assert second == first + counter.message(new)


def test_cache_is_bounded_by_the_bytes_it_holds(encoder):
    counter = TokenCounter(encoder, cache_bytes=1_000)
    for i in range(50):
        counter.text(f"some text number {i:04d}")
    # An entry is the text's fingerprint and its count, two ints (28 to 36 bytes), and
    # the pair it is kept in with its size (84): the text itself is not kept, and at
    # most seven fit.
    assert 0 < len(counter.cache) <= 1_000 // 140 and counter.cache.usage.held <= 1_000


def test_the_counts_memo_holds_no_text(encoder):
    # An agent's next call looks its history's texts up again: what the memo keeps for
    # them is their counts, not the texts (a megabyte of history weighs bytes here).
    counter = TokenCounter(encoder)
    texts = [f"line {i} of a long tool result\n" * 2_000 for i in range(4)]
    counts = [counter.text(t) for t in texts]
    held = counter.cache.usage.held
    assert held <= 4 * (64 + _PAIR) and held * 200 < sum(map(len, texts))
    assert [counter.text(t) for t in texts] == counts == [
        len(encoder.encode_ordinary(t)) for t in texts]
    assert counter.cache.usage.hits == 4


def test_unknown_encoding_is_refused_without_a_download():
    with pytest.raises(InvalidOption, match="cl100k_base"):
        load_encoding("r50k_base")

"""Counting through the encoding's pre-split gives tiktoken's own counts, text by text."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.adapters.tokenizer import pretokenizer
from app.corpus import load
from app.engine.transcript.formats.openai import OpenAIFormat
from app.engine.transcript.tokens import Pretokenizer, TokenCounter
from tests.support.corpus import transcript_files

# Pieces that meet at the pre-split's edges: contractions, runs of digits, punctuation
# before and after newlines, whitespace of every kind (\x1c-\x1f are whitespace to
# Python's \s but not to tiktoken's), indentation and trailing blanks.
_PIECES = st.sampled_from([
    "'s", "'LL", "'re", "'", "don't", " the", "word", "Word", "x", "12", "1234567", " 3.14",
    "(", "):", " ->", "==", "\n", "\r\n", "\n\n", "   ", "\t", " ", "\x0b", "\x0c", "\x1c",
    "\x1f", "\x00", "    def f():\n", "#!", "/usr/bin", "a_b", "__init__", "~", " \n ", "\r",
])
_ASCII = st.one_of(
    st.text(alphabet=st.characters(max_codepoint=127), max_size=200),
    st.lists(_PIECES, max_size=40).map("".join),
)


@pytest.fixture(scope="module")
def split(encoder) -> Pretokenizer:
    # Taken as compiled either way: the scan must count right even run as Python.
    found = pretokenizer(encoder, compiled=True)
    assert found is not None, "cl100k's pre-split is known"
    return found


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_ASCII)
def test_any_ascii_text_counts_as_tiktoken_counts_it(encoder, split, text):
    counter = TokenCounter(encoder, pretokenizer=split)
    assert counter.text(text) == len(encoder.encode_ordinary(text))
    # Again, now from remembered pieces.
    assert TokenCounter._encode_len(counter, text) == len(encoder.encode_ordinary(text))


def test_every_text_of_the_corpus_counts_as_tiktoken_counts_it(encoder, split):
    wire = OpenAIFormat()
    counter = TokenCounter(encoder, pretokenizer=split)
    for path in transcript_files():
        for message in wire.parse({"messages": load(path)}).messages:
            texts = [p.text for p in message.parts if p.text]
            texts += [t for call in message.tool_calls for t in (call.name, call.arguments)]
            for text in texts:
                assert counter.text(text) == len(encoder.encode_ordinary(text)), (path, text[:80])


class Recording:
    """The encoder, noting every text it was handed."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.texts = []

    @property
    def longest(self):
        return max(map(len, self.texts), default=0)

    def encode_ordinary(self, text):
        self.texts.append(text)
        return self.encoder.encode_ordinary(text)


def test_text_beyond_ascii_is_counted_by_the_encoder(encoder, split):
    recording = Recording(encoder)
    counter = TokenCounter(recording, pretokenizer=split)
    assert counter.text("café au lait") == len(encoder.encode_ordinary("café au lait"))
    assert counter.text("plain words") == len(encoder.encode_ordinary("plain words"))
    assert recording.texts == ["café au lait"]


# Text beyond ASCII: lines of it among ASCII lines, and every whitespace after a newline
# that could join it to the next line's first character.
_BEYOND = st.sampled_from(["café", "“quoted”", "✓ done", " ", "　x",
                           "\n \n", " ", "\ny", "日本", "😀"])
_MIXED = st.lists(st.one_of(_PIECES, _BEYOND), max_size=40).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_MIXED)
def test_text_with_lines_beyond_ascii_counts_as_tiktoken_counts_it(encoder, split, text):
    counter = TokenCounter(encoder, pretokenizer=split)
    assert counter.text(text) == len(encoder.encode_ordinary(text))
    assert TokenCounter._encode_len(counter, text) == len(encoder.encode_ordinary(text))


def test_only_the_words_beyond_ascii_go_to_the_encoder_once_each(encoder, split):
    recording = Recording(encoder)
    counter = TokenCounter(recording, pretokenizer=split)
    text = "def f():\n    return 1\n# café ok\nprint(f())\n"
    assert counter.text(text) == len(encoder.encode_ordinary(text))
    assert recording.texts == [" café"]
    # A page where most lines hold a curly quote or a dash: each such word is read by
    # the encoder once, the rest piece by piece.
    page = "\n".join(f"Item {k} – the “{k % 3}” option, naïve’s pick" for k in range(50))
    assert counter.text(page) == len(encoder.encode_ordinary(page))
    assert sorted(recording.texts) == sorted({" café", " –", " “0”", " “1”", " “2”",
                                              " naïve’s"})


def test_remembered_pieces_and_lines_are_bounded(encoder, split):
    counter = TokenCounter(encoder, pretokenizer=split, max_pieces=64)
    for i in range(40):
        text = "\n".join(f"w{i}x{j} = {i * j}" for j in range(10))
        assert counter.text(text) == len(encoder.encode_ordinary(text))
    assert len(counter._pieces) <= 65
    assert len(counter._lines) <= 4 + 10 + 1  # 64 >> 4, then one text of 10 lines


def test_only_an_encoding_whose_split_we_know_is_pre_split(encoder):
    class Other:
        def encode_ordinary(self, text):
            return [0] * len(text)

    assert pretokenizer(Other(), compiled=True) is None
    assert pretokenizer(encoder, compiled=True) is not None
    # An engine run as Python counts through tiktoken, which is then the faster.
    assert pretokenizer(encoder, compiled=False) is None


def test_the_service_counts_by_pieces_when_the_engine_is_compiled(encoder):
    from app.adapters import tokenizer
    from app.engine.transcript import pieces

    assert pieces.__file__.endswith(".so") == tokenizer.COMPILED
    assert (pretokenizer(encoder) is not None) == tokenizer.COMPILED


_WIDE = st.lists(st.sampled_from([
    "café", " naïve", "中文", "€", "\u00a0", "\u3000", "\u2028", "\x85", "\n", "\n\n", " \n",
    "\r\n", "  ", "\t", " ", "x", "12345", "'ll", ".", "—", "🙂", "\x1c", "word",
]), max_size=400).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_WIDE, repeat=st.integers(1, 400))
def test_a_long_text_beyond_ascii_goes_to_the_encoder_in_stretches(encoder, text, repeat):
    """Its token list is built a stretch at a time (a Python int per token: 120 MB for
    a 15 MB text at once), cut where no piece of the encoding crosses: the same count."""
    long = "é " + text * repeat
    assert TokenCounter(Recording(encoder)).text(long) == len(encoder.encode_ordinary(long))


@pytest.mark.parametrize("line", ["Größe: 12 € — naïve café", "中文 words 123"])
@pytest.mark.parametrize("sep", ["\n", " ", "\n\u3000"])
def test_a_long_text_is_handed_to_the_encoder_a_stretch_at_a_time(encoder, line, sep):
    long = sep.join(f"{line} {i}" for i in range(20_000))
    recording = Recording(encoder)
    assert TokenCounter(recording).text(long) == len(encoder.encode_ordinary(long))
    assert recording.longest <= (1 << 16) + 100 < len(long)


def test_one_text_of_unique_lines_keeps_the_lines_table_bounded(encoder, split):
    counter = TokenCounter(encoder, pretokenizer=split, max_pieces=64)
    text = "\n".join(f"line {i} of a log nobody repeats, id {i * 7919}" for i in range(500))
    assert counter.text(text) == len(encoder.encode_ordinary(text))
    assert len(counter._lines) <= 64 >> 4
    assert sum(map(len, counter._lines)) <= 64 << 2


def test_one_long_line_of_unique_words_keeps_the_pieces_table_bounded(encoder, split):
    counter = TokenCounter(encoder, pretokenizer=split, max_pieces=64)
    line = " ".join(f"w{i * 7919:x}q" for i in range(100_000))
    assert counter.text(line) == len(encoder.encode_ordinary(line))
    assert len(counter._pieces) <= 64 + 20_000  # a stretch's pieces at most, not 100,000

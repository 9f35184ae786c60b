"""The usage read from a provider's answer as it streams: each provider's spelling, last
value wins, a field cut across reads, and a model's own words not taken for usage."""

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from app.adapters.genai_usage import UsageReader

IN, OUT = "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"
# An Anthropic stream: the input in message_start, the output growing in message_delta,
# and a text delta in which the model writes a usage-looking key of its own.
ANTHROPIC = b"".join(
    f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in (
        ("message_start", {"type": "message_start", "message": {
            "usage": {"input_tokens": 4711, "cache_read_input_tokens": 9000,
                      "output_tokens": 1}}}),
        ("content_block_delta", {"type": "content_block_delta", "delta": {
            "type": "text_delta", "text": 'set "output_tokens": 99999 in the config'}}),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 312}}),
        ("message_stop", {"type": "message_stop"})))


def read(*chunks: bytes) -> dict[str, int]:
    reader = UsageReader()
    for chunk in chunks:
        reader.feed(chunk)
    return reader.attributes()


def test_each_providers_spelling_is_read_as_genai_usage():
    chat = {"usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
                      "prompt_tokens_details": {"cached_tokens": 64}}}
    responses = {"type": "response.completed", "response": {"usage": {
        "input_tokens": 7, "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 2}}}}
    gemini = {"usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5,
                                "totalTokenCount": 17}}
    for body, want in ((chat, (100, 10)), (responses, (7, 3)), (gemini, (12, 5))):
        assert read(json.dumps(body).encode()) == {IN: want[0], OUT: want[1]}


def test_a_stream_gives_its_last_counts_and_not_the_models_words():
    assert read(ANTHROPIC) == {IN: 4711, OUT: 312}


@given(st.lists(st.integers(0, len(ANTHROPIC)), max_size=12))
def test_any_cutting_of_the_stream_into_reads_gives_the_same_usage(cuts):
    edges = [0, *sorted(cuts), len(ANTHROPIC)]
    assert read(*(ANTHROPIC[a:b] for a, b in itertools.pairwise(edges))) == {IN: 4711, OUT: 312}


def test_an_answer_without_usage_reports_none():
    assert read(b'{"error": {"message": "no"}}', b"data: [DONE]\n\n") == {}

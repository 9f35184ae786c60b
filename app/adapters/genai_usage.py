"""The token usage a provider's answer reports, read as its body streams past.

The proxy relays an answer's body without parsing it (a stream event by event), so the
usage is picked out of the bytes: the last value of each usage field seen, whichever of
the providers' spellings it comes in. A field's name counts only as a JSON key (a quote
that no backslash escapes before it), so a model writing ``"input_tokens": 5`` in its
text, which arrives escaped inside a string, is not read as usage. Only a short tail of
each chunk is kept for the next, so a field cut across two reads is still found and the
reader holds a few dozen bytes however long the answer.
"""

from __future__ import annotations

import re

# Each provider's usage field -> the GenAI attribute it is. OpenAI chat reports prompt
# and completion tokens; Anthropic and OpenAI Responses input and output tokens (an
# Anthropic stream gives the input in message_start and the output in message_delta);
# Gemini's usageMetadata counts prompt and candidate tokens, growing chunk by chunk.
_FIELDS = {
    "prompt_tokens": "gen_ai.usage.input_tokens",
    "input_tokens": "gen_ai.usage.input_tokens",
    "promptTokenCount": "gen_ai.usage.input_tokens",
    "completion_tokens": "gen_ai.usage.output_tokens",
    "output_tokens": "gen_ai.usage.output_tokens",
    "candidatesTokenCount": "gen_ai.usage.output_tokens",
}
_FIELD = re.compile(rb'(?<!\\)"(' + b"|".join(k.encode() for k in _FIELDS)
                    + rb')"\s*:\s*(\d{1,12})')
# Enough for the longest field, its colon and a 12-digit value, with spaces.
_CARRY = 64


class UsageReader:
    """Fed an answer's chunks in order; ``attributes`` is the usage seen so far."""

    def __init__(self) -> None:
        self._tail = b""
        self._seen: dict[str, int] = {}

    def feed(self, chunk: bytes) -> None:
        text = self._tail + chunk
        for match in _FIELD.finditer(text):
            self._seen[_FIELDS[match[1].decode()]] = int(match[2])
        # A match wholly inside the tail is read again with the next chunk, to the same
        # value, so keeping it costs nothing but a repeat.
        self._tail = text[-_CARRY:]

    def attributes(self) -> dict[str, int]:
        return dict(self._seen)

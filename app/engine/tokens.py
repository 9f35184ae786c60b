"""Token counting with a per-content cache.

The encoder is handed in (the shell loads tiktoken's offline encoding) so the
engine never touches files. Counts include tool-call names and arguments and
a small per-message overhead, as the providers' own accounting does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from app.engine.memo import Memo
from app.engine.transcript import Message

# Role markers and separators cost a few tokens per message and per call.
MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 3


class Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


class TokenCounter:
    def __init__(self, encoder: Encoder, *, cache_chars: int = 64_000_000) -> None:
        self._encoder = encoder
        self._memo: Memo[str, int] = Memo(cache_chars)

    @property
    def cache(self) -> Memo[str, int]:
        return self._memo

    def _encode_len(self, text: str) -> int:
        return len(self._encoder.encode_ordinary(text))

    def text(self, text: str) -> int:
        if not text:
            return 0
        return self._memo.get(text, self._encode_len)

    def message(self, message: Message) -> int:
        return self.messages((message,))

    def messages(self, messages: Iterable[Message]) -> int:
        # One loop over every message of every request. The memo is called as itself,
        # not as a bound method: compiled, that is a direct call instead of a Python one.
        memo, count = self._memo, self._encode_len
        total = 0
        for m in messages:
            parts = m.parts
            total += MESSAGE_OVERHEAD + max(len(parts) - 1, 0)
            for part in parts:
                if part.text:
                    total += memo.get(part.text, count)
            for call in m.tool_calls:
                total += TOOL_CALL_OVERHEAD + memo.get(call.name, count)
                if call.arguments:
                    total += memo.get(call.arguments, count)
        return total

    def exact(self, messages: Iterable[Message]) -> int:
        """Count as rendered: multi-part text joined, for decisions at the margin. The
        joined text goes through the memo too: early in a run, when little is dropped,
        every call decides at the margin, over a transcript the last call counted."""
        total = 0
        for m in messages:
            total += MESSAGE_OVERHEAD + self.text(m.text)
            for call in m.tool_calls:
                total += TOOL_CALL_OVERHEAD + self.text(call.name) + self.text(call.arguments)
        return total

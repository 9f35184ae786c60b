"""The expand tool inside a streamed Chat Completions answer.

The model's text reaches the client as it arrives. What belongs to the tool is held
back: the deltas of its calls are taken out of the chunks that carry them, and from
the chunk that says why the answer finished, everything is held until the stream
ends. Then either the answer is over (those held chunks go out, a ``tool_calls``
finish that is left with no call turned into ``stop``), or the proxy answers the
tool's calls and the next round's stream follows on the same response, as one answer.
"""

from __future__ import annotations

from typing import Any

from app.adapters import jsoncodec
from app.service.expand_tool import NAME, Call, arguments_of

_DONE = b"[DONE]"


class Events:
    """Server-sent events out of a byte stream cut anywhere: whole events only."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        self._buffer += chunk.replace(b"\r\n", b"\n")
        *events, self._buffer = self._buffer.split(b"\n\n")
        return [e + b"\n\n" for e in events if e.strip()]

    def rest(self) -> bytes:
        rest, self._buffer = self._buffer, b""
        return rest


def _data(event: bytes) -> bytes:
    return b"\n".join(line[5:].strip() for line in event.split(b"\n")
                      if line.startswith(b"data:"))


def _event(chunk: dict[str, Any]) -> bytes:
    return b"data: " + jsoncodec.dumps(chunk) + b"\n\n"


class ChatRound:
    """One upstream stream: filters its events and gathers the assistant message the
    next round repeats (its text, and the tool's calls)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.ours: dict[int, dict[str, str]] = {}  # by the call's index in the stream
        self.others = 0  # calls of the client's tools
        self._theirs: set[int] = set()
        self.held: list[bytes] = []  # from the finish on
        self._finished = False

    def pass_on(self, event: bytes) -> bytes | None:
        """The event as the client gets it now, or None (held back or emptied)."""
        data = _data(event)
        if self._finished or data == _DONE:
            self.held.append(event)
            return None
        try:
            chunk = jsoncodec.loads(data)
        except ValueError:
            return event
        if not isinstance(chunk, dict) or not chunk.get("choices"):
            return event
        choice = chunk["choices"][0]
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str):
            self.text.append(delta["content"])
        calls = delta.get("tool_calls")
        if calls:
            kept = [c for c in calls if not self._ours(c)]
            if len(kept) != len(calls):
                delta = {k: v for k, v in delta.items() if k != "tool_calls"}
                if kept:
                    delta["tool_calls"] = kept
                choice = {**choice, "delta": delta}
                chunk = {**chunk, "choices": [choice, *chunk["choices"][1:]]}
                event = _event(chunk)
                if not delta and choice.get("finish_reason") is None:
                    return None
        if choice.get("finish_reason") is not None:
            self._finished = True
            self.held.append(event)  # as it came, or without the tool's calls
            return None
        return event

    def _ours(self, call: dict[str, Any]) -> bool:
        index = int(call.get("index", 0))
        function = call.get("function") or {}
        if index not in self.ours and index not in self._theirs:
            if function.get("name") == NAME:
                self.ours[index] = {"id": str(call.get("id", "")), "arguments": ""}
            else:
                self._theirs.add(index)
                self.others += 1
        if index in self.ours:
            self.ours[index]["arguments"] += str(function.get("arguments") or "")
            return True
        return False

    def calls(self) -> list[Call]:
        return [Call(c["id"], arguments_of(c["arguments"])) for c in self.ours.values()]

    def message(self) -> dict[str, Any]:
        """The assistant message of this round, as the next request repeats it."""
        return {"role": "assistant", "content": "".join(self.text) or None,
                "tool_calls": [{"id": c["id"], "type": "function", "function": {
                    "name": NAME, "arguments": c["arguments"]}} for c in self.ours.values()]}

    def ending(self) -> list[bytes]:
        """The held events, for an answer that ends here: a finish on the tool's calls
        alone becomes a plain stop."""
        if not self.ours or self.others:
            return self.held
        out = []
        for event in self.held:
            data = _data(event)
            try:
                chunk = jsoncodec.loads(data) if data != _DONE else None
            except ValueError:
                chunk = None
            if isinstance(chunk, dict) and chunk.get("choices") and \
                    chunk["choices"][0].get("finish_reason") == "tool_calls":
                chunk["choices"][0]["finish_reason"] = "stop"
                event = _event(chunk)
            out.append(event)
        return out

"""The expand tool inside a streamed answer (Chat Completions, Messages, Responses,
Gemini).

The model's text reaches the client as it arrives. What belongs to the tool is held
back: the deltas of its calls are taken out of the events that carry them, and from
the event that says why the answer finished, everything is held until the stream
ends. Then either the answer is over (those held events go out, a finish on the
tool's calls alone turned into a plain stop), or the proxy answers the tool's calls
and the next round's stream follows on the same response, as one answer: in
Messages, without its ``message_start`` and with its content blocks numbered on
from the last round's; in Responses, without its start events, with output items
and sequence numbers numbered on, and one final response holding every item shown;
in Gemini, whose chunks each hold new parts, as the chunks come.
"""

from __future__ import annotations

from typing import Any, Protocol

from app.adapters import jsoncodec
from app.service.expand_tool import (
    NAME,
    ExpandCall,
    GeminiParts,
    arguments_of,
    gemini_results,
    is_ours,
)
from app.service.sse import Event, EventDecoder

_DONE = "[DONE]"


class Round(Protocol):
    """One upstream stream of an answer, filtered for the client."""

    others: int  # calls of the client's tools

    def pass_on(self, event: Event) -> bytes | None:
        """The event as the client gets it now, or None (held back or emptied)."""
        ...

    def calls(self) -> list[ExpandCall]: ...

    def ending(self) -> list[bytes]:
        """The held events, for an answer that ends with this round."""
        ...

    def follow(self, body: dict[str, Any], results: list[tuple[ExpandCall, str]],
               ) -> dict[str, Any]:
        """The next round's request: ``body``, this round's answer, the results."""
        ...

    def next(self) -> Round:
        """The round that follows this one on the same response."""
        ...


def _payload(event: Event) -> dict[str, Any] | None:
    """The event's JSON object; None for ``[DONE]``, a comment, a block the standard does
    not dispatch (a client never sees its data), or anything else."""
    if not event.dispatched:
        return None
    try:
        value = jsoncodec.loads(event.data.encode())
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _held_payload(raw: bytes) -> dict[str, Any] | None:
    """The JSON object of an event held back as bytes (one whole event, as it came)."""
    events = EventDecoder().feed(raw)
    return _payload(events[0]) if events else None


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

    def pass_on(self, event: Event) -> bytes | None:
        """The event as the client gets it now, or None (held back or emptied)."""
        if self._finished or (event.dispatched and event.data == _DONE):
            self.held.append(event.raw)
            return None
        chunk = _payload(event)
        if chunk is None or not chunk.get("choices"):
            return event.raw
        passed = event.raw
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
                passed = _event(chunk)
                if not delta and choice.get("finish_reason") is None:
                    return None
        if choice.get("finish_reason") is not None:
            self._finished = True
            self.held.append(passed)  # as it came, or without the tool's calls
            return None
        return passed

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

    def calls(self) -> list[ExpandCall]:
        return [ExpandCall(c["id"], arguments_of(c["arguments"])) for c in self.ours.values()]

    def follow(self, body: dict[str, Any], results: list[tuple[ExpandCall, str]],
               ) -> dict[str, Any]:
        replies = [{"role": "tool", "tool_call_id": c.id, "content": text}
                   for c, text in results]
        return {**body, "messages": [*body["messages"], self.message(), *replies]}

    def next(self) -> ChatRound:
        return ChatRound()

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
            chunk = _held_payload(event)
            if chunk is not None and chunk.get("choices") and \
                    chunk["choices"][0].get("finish_reason") == "tool_calls":
                chunk["choices"][0]["finish_reason"] = "stop"
                event = _event(chunk)
            out.append(event)
        return out


def _named(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\n".encode() + b"data: " + jsoncodec.dumps(payload) + b"\n\n"


class MessagesRound:
    """One upstream stream of an Anthropic message. ``shown``: content blocks the
    client already got from earlier rounds (this round's are numbered on from there);
    ``first``: whether this round's ``message_start`` is the client's."""

    def __init__(self, shown: int = 0, first: bool = True) -> None:
        self.others = 0
        self.held: list[bytes] = []
        self._shown = shown
        self._first = first
        self._index: dict[int, int] = {}  # upstream block index -> the client's
        self._ours: dict[int, dict[str, Any]] = {}
        self._blocks: dict[int, dict[str, Any]] = {}  # every block, for the next round
        self._finished = False

    def pass_on(self, event: Event) -> bytes | None:
        payload = _payload(event)
        if payload is None:
            return event.raw
        kind = payload.get("type")
        if self._finished or kind in ("message_delta", "message_stop"):
            self._finished = True
            self.held.append(event.raw)
            return None
        if kind == "message_start":
            return event.raw if self._first else None
        if kind not in ("content_block_start", "content_block_delta", "content_block_stop"):
            return event.raw  # ping, error
        index = int(payload.get("index", 0))
        if kind == "content_block_start":
            self._start(index, payload.get("content_block") or {})
        elif kind == "content_block_delta":
            self._grow(index, payload.get("delta") or {})
        if index in self._ours:
            return None
        if index not in self._index:
            self._index[index] = self._shown + len(self._index)
        assert isinstance(kind, str)
        return _named(kind, {**payload, "index": self._index[index]})

    def _start(self, index: int, block: dict[str, Any]) -> None:
        self._blocks[index] = {**block, "partial": ""}
        if block.get("type") == "tool_use":
            if block.get("name") == NAME:
                self._ours[index] = self._blocks[index]
            else:
                self.others += 1

    def _grow(self, index: int, delta: dict[str, Any]) -> None:
        block = self._blocks.get(index)
        if block is None:
            return
        for key, field in (("text", "text"), ("thinking", "thinking"),
                           ("signature", "signature"), ("partial_json", "partial")):
            if isinstance(delta.get(key), str):
                block[field] = block.get(field, "") + delta[key]

    def calls(self) -> list[ExpandCall]:
        return [ExpandCall(str(b.get("id", "")), arguments_of(b["partial"] or "{}"))
                for b in self._ours.values()]

    def ending(self) -> list[bytes]:
        if not self._ours or self.others:
            return self.held
        out = []
        for event in self.held:
            payload = _held_payload(event)
            if payload is not None and payload.get("type") == "message_delta" and \
                    (payload.get("delta") or {}).get("stop_reason") == "tool_use":
                payload["delta"]["stop_reason"] = "end_turn"
                event = _named("message_delta", payload)
            out.append(event)
        return out

    def follow(self, body: dict[str, Any], results: list[tuple[ExpandCall, str]],
               ) -> dict[str, Any]:
        content = []
        for index in sorted(self._blocks):
            block = {k: v for k, v in self._blocks[index].items() if k != "partial"}
            if block.get("type") == "tool_use":
                block["input"] = arguments_of(self._blocks[index]["partial"] or "{}")
            content.append(block)
        replies = [{"type": "tool_result", "tool_use_id": c.id, "content": text}
                   for c, text in results]
        return {**body, "messages": [*body["messages"], {"role": "assistant",
                                                         "content": content},
                                     {"role": "user", "content": replies}]}

    def next(self) -> MessagesRound:
        return MessagesRound(self._shown + len(self._index), first=False)


_ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_STARTS = frozenset({"response.created", "response.in_progress", "response.queued"})


class ResponsesRound:
    """One upstream stream of an OpenAI response. Every event carries a sequence number
    and most an output index: both are numbered on across rounds. The final event holds
    the whole response; it goes out once, with the first round's id and every item the
    client was shown."""

    def __init__(self, seq: int = 0, shown: tuple[dict[str, Any], ...] = (),
                 response_id: str | None = None) -> None:
        self.others = 0
        self.held: list[dict[str, Any]] = []
        self._seq = seq
        self._shown = shown  # items the client got from earlier rounds
        self._id = response_id
        self._index: dict[int, int] = {}
        self._ours: set[int] = set()
        self._done: dict[int, dict[str, Any]] = {}  # every item of this round, when done
        self._finished = False

    def pass_on(self, event: Event) -> bytes | None:
        payload = _payload(event)
        if payload is None:
            return event.raw
        kind = str(payload.get("type", ""))
        if self._finished or kind in _ENDS:
            self._finished = True
            self.held.append(payload)
            return None
        if kind in _STARTS:
            if self._id is not None:
                return None  # one start per answer
            self._id = (payload.get("response") or {}).get("id")
        if "output_index" in payload:
            index = int(payload["output_index"])
            item = payload.get("item") if isinstance(payload.get("item"), dict) else None
            if kind == "response.output_item.added" and item is not None and \
                    item.get("type") == "function_call":
                if item.get("name") == NAME:
                    self._ours.add(index)
                else:
                    self.others += 1
            if kind == "response.output_item.done" and item is not None:
                self._done[index] = item
            if index in self._ours:
                return None
            if index not in self._index:
                self._index[index] = len(self._shown) + len(self._index)
            payload = {**payload, "output_index": self._index[index]}
        return self._emit(kind, payload)

    def _emit(self, kind: str, payload: dict[str, Any]) -> bytes:
        payload = {**payload, "sequence_number": self._seq}
        self._seq += 1
        return _named(kind, payload)

    def _visible(self) -> tuple[dict[str, Any], ...]:
        return (*self._shown, *(self._done[i] for i in sorted(self._done)
                                if i not in self._ours))

    def calls(self) -> list[ExpandCall]:
        return [ExpandCall(str(self._done[i].get("call_id", "")),
                     arguments_of(self._done[i].get("arguments") or "{}"))
                for i in sorted(self._ours) if i in self._done]

    def ending(self) -> list[bytes]:
        out = []
        for payload in self.held:
            kind = str(payload.get("type", ""))
            response = payload.get("response")
            if isinstance(response, dict):
                response = {**response, "output": list(self._visible())}
                if self._id is not None:
                    response["id"] = self._id
                payload = {**payload, "response": response}
            out.append(self._emit(kind, payload))
        return out

    def follow(self, body: dict[str, Any], results: list[tuple[ExpandCall, str]],
               ) -> dict[str, Any]:
        items = [self._done[i] for i in sorted(self._done)]
        outputs = [{"type": "function_call_output", "call_id": c.id, "output": text}
                   for c, text in results]
        return {**body, "input": [*body["input"], *items, *outputs]}

    def next(self) -> ResponsesRound:
        return ResponsesRound(self._seq, self._visible(), self._id)


class GeminiRound:
    """One upstream stream of a Gemini answer (``alt=sse``): each chunk a whole
    GenerateContentResponse whose first candidate holds the parts new since the last
    chunk, the last one its finishReason and usage, and no ``[DONE]``. Gemini sends a
    call whole, in one part: the tool's calls are taken out of the chunks that carry
    them, and a chunk left with no part and no finish is not sent."""

    def __init__(self) -> None:
        self.others = 0
        self.held: list[bytes] = []
        self._parts: list[dict[str, Any]] = []  # every part of the round, for the next
        self._kept = GeminiParts()
        self._finished = False

    def pass_on(self, event: Event) -> bytes | None:
        if self._finished:
            self.held.append(event.raw)
            return None
        chunk = _payload(event)
        candidates = chunk.get("candidates") if chunk is not None else None
        if chunk is None or not candidates or not isinstance(candidates[0], dict):
            return event.raw
        candidate = candidates[0]
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(content, dict) or not isinstance(parts, list):
            if not candidate.get("finishReason"):
                return event.raw
            self._hold(event.raw)
            return None
        self._gather(parts)
        kept = self._kept.kept(parts)

        def with_parts(shown: list[Any]) -> dict[str, Any]:
            return {**chunk, "candidates": [{**candidate,
                                             "content": {**content, "parts": shown}},
                                            *candidates[1:]]}

        if not candidate.get("finishReason"):
            if kept == parts:
                return event.raw
            return _event(with_parts(kept)) if kept else None
        if kept == parts and not self.calls():
            self._hold(event.raw)  # as it came: the answer ends with this round
            return None
        # The round may go on: the parts of the finishing chunk the client sees go out
        # now (the next round's follow them), its finish is held without them.
        self._hold(_event(with_parts([])))
        if not kept:
            return None
        shown = with_parts(kept)
        shown["candidates"][0].pop("finishReason", None)
        shown.pop("usageMetadata", None)
        return _event(shown)

    def _hold(self, raw: bytes) -> None:
        self._finished = True
        self.held.append(raw)

    def _gather(self, parts: list[Any]) -> None:
        for part in parts:
            if not isinstance(part, dict):
                continue
            self._parts.append(part)
            if "functionCall" in part and not is_ours(part):
                self.others += 1

    def calls(self) -> list[ExpandCall]:
        return [ExpandCall(str(p["functionCall"].get("id") or ""),
                           arguments_of(p["functionCall"].get("args")))
                for p in self._parts if is_ours(p)]

    def ending(self) -> list[bytes]:
        return self.held

    def follow(self, body: dict[str, Any], results: list[tuple[ExpandCall, str]],
               ) -> dict[str, Any]:
        said = {"role": "model", "parts": _joined(self._parts)}
        return {**body, "contents": [*body["contents"], said, gemini_results(results)]}

    def next(self) -> GeminiRound:
        return GeminiRound()


def _joined(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A stream's parts as one content: the pieces of a text joined, each part that
    carries a thoughtSignature kept as it came, where it came (Gemini reads a signature
    by its place), and empty text without one left out (Gemini refuses empty text)."""
    out: list[dict[str, Any]] = []
    for part in parts:
        plain = set(part) <= {"text", "thought"} and isinstance(part.get("text"), str)
        if plain and not part["text"]:
            continue
        last = out[-1] if out else None
        if plain and last is not None and set(last) <= {"text", "thought"} and \
                isinstance(last.get("text"), str) and \
                bool(last.get("thought")) == bool(part.get("thought")):
            out[-1] = {**last, "text": last["text"] + part["text"]}
        else:
            out.append(part)
    return out


# The formats whose streams the proxy answers the tool inside, by the first round.
ROUNDS: dict[str, type[ChatRound] | type[MessagesRound] | type[ResponsesRound]
             | type[GeminiRound]] = {
    "openai": ChatRound, "anthropic": MessagesRound, "responses": ResponsesRound,
    "gemini": GeminiRound}

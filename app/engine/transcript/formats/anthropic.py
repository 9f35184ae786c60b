"""Anthropic Messages API: top-level ``system``, content blocks, tool results inside user turns.

One wire user message may hold several ``tool_result`` blocks and text; it
parses into one canonical tool message per result plus a user message for
the rest, and renders back by merging same-role neighbours.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from app.engine.errors import InvalidTranscript
from app.engine.jsontext import dumps, shown_value
from app.engine.transcript.formats import EVIDENCE_SHOWN, Payload
from app.engine.transcript.formats.parts import render_text_part
from app.engine.transcript.model import SYSTEM_INDEX, Message, Part, Role, ToolCall, Transcript

_OWN_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document",
     "server_tool_use", "web_search_tool_result"}
)
_WIRE_ROLE: dict[Role, str] = {"user": "user", "tool": "user", "assistant": "assistant",
                               "system": "system"}


class AnthropicFormat:
    name = "anthropic"
    keys: tuple[str, ...] = ("messages", "system")

    def evidence(self, payload: Payload) -> list[str]:
        found = ["top-level 'system'"] if "system" in payload else []
        for i, m in enumerate(_messages(payload)):
            if len(found) >= EVIDENCE_SHOWN:
                break
            content = m.get("content") if isinstance(m, dict) else None
            if not isinstance(content, list):
                continue
            for b in content:
                kind = b.get("type") if isinstance(b, dict) else None
                if not isinstance(kind, str):  # not evidence; parse says what is wrong
                    continue
                if kind in _OWN_BLOCKS or (kind == "image" and "source" in b):
                    found.append(f"messages[{i}].content has a {kind!r} block")
        return found[:EVIDENCE_SHOWN]

    def parse(self, payload: Payload) -> Transcript:
        out = list(_parse_system(payload.get("system")))
        for i, m in enumerate(_messages(payload)):
            out.extend(_parse_message(m, i))
        return Transcript(tuple(out), self.name)

    def render(self, transcript: Transcript) -> dict[str, Any]:
        system = [m for m in transcript.messages if m.role == "system" and not _in_place(m)]
        rest = [m for m in transcript.messages if m.role != "system" or _in_place(m)]
        groups = _groups(rest)
        body: dict[str, Any] = {"messages": [_render_group(g) for g in groups]}
        if system:
            body["system"] = _render_system(system)
        return body


def _messages(payload: Payload) -> Sequence[Any]:
    messages = payload.get("messages")
    return messages if isinstance(messages, list) else ()


def _in_place(m: Message) -> bool:
    """A system message that came among the messages (Claude Code sends its reminders
    so), which goes back where it was rather than into the top-level system."""
    return m.raw is not None and m.raw.get("role") == "system"


def _groups(messages: Sequence[Message]) -> Iterator[list[Message]]:
    """Runs of messages that share a wire role, merged, with each system message of the
    conversation after the run it came in: a note put after a system message then joins
    the user message before it, as Anthropic's alternation wants (the system messages
    stand outside it), instead of making two user messages in a row."""
    run: list[Message] = []
    held: list[Message] = []
    for m in messages:
        if m.role == "system":
            held.append(m)
            continue
        if run and _WIRE_ROLE[run[-1].role] != _WIRE_ROLE[m.role]:
            yield run
            run = []
        if not run:
            yield from ([s] for s in held)
            held = []
        run.append(m)
    if run:
        yield run
    yield from ([s] for s in held)


def _fail(where: str, pointer: str, detail: str) -> InvalidTranscript:
    return InvalidTranscript(f"{where} {detail}", pointer=pointer)


def _parse_system(system: Any) -> Iterator[Message]:
    if system is None or system == "":
        return
    if isinstance(system, str):
        yield Message("system", (Part("text", system),), raw={"system": system},
                      index=SYSTEM_INDEX)
        return
    if not isinstance(system, list):
        raise _fail("system", "/system", "must be a string or an array of text blocks.")
    parts = tuple(_parse_block(b, "system", "/system") for b in system)
    yield Message("system", parts, raw={"system": system}, index=SYSTEM_INDEX)


def _parse_block(b: Any, where: str, pointer: str) -> Part:
    if not isinstance(b, dict) or not isinstance(b.get("type"), str):
        raise _fail(where, pointer, "has a content block that is not an object with a string "
                    "'type' (text, image, tool_use, tool_result, thinking...).")
    kind = b["type"]
    if kind == "text":
        if not isinstance(b.get("text"), str):
            raise _fail(where, pointer, "has a text block without a string 'text'.")
        return Part("text", b["text"], b)
    if kind == "thinking":
        return Part("thinking", str(b.get("thinking", "")), b)
    return Part(kind, "", b)


def _parse_message(m: Any, i: int) -> Iterator[Message]:
    where, pointer = f"messages[{i}]", f"/messages/{i}"
    if not isinstance(m, dict):
        raise _fail(where, pointer, "must be an object with 'role' and 'content'.")
    role = m.get("role")
    if role not in ("user", "assistant", "system"):
        raise _fail(
            where, pointer,
            f"has role {shown_value(role)}; it must be the string user, assistant or system.",
        )
    content = m.get("content")
    if role == "system":  # a system message of the conversation's own, kept in its place
        if isinstance(content, str):
            yield Message("system", (Part("text", content),), raw=m, index=i)
        elif isinstance(content, list):
            yield Message("system", tuple(_parse_block(b, where, pointer) for b in content),
                          raw=m, index=i)
        else:
            raise _fail(where, pointer, "content must be a string or an array of text blocks.")
        return
    if isinstance(content, str):
        yield Message(role, (Part("text", content),), raw=m, index=i)
        return
    if not isinstance(content, list):
        raise _fail(where, pointer, "content must be a string or an array of content blocks.")
    if role == "assistant":
        yield _parse_assistant(m, content, where, pointer, i)
        return
    rest: list[Part] = []
    for b in content:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            yield _parse_tool_result(m, b, where, pointer, i)
        else:
            rest.append(_parse_block(b, where, pointer))
    if rest or not content:
        yield Message("user", tuple(rest), raw=m, index=i)


def _parse_assistant(
    m: Mapping[str, Any], content: list[Any], where: str, pointer: str, i: int
) -> Message:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    for b in content:
        part = _parse_block(b, where, pointer)
        if part.kind == "tool_use":
            if not isinstance(b.get("id"), str) or not isinstance(b.get("name"), str):
                raise _fail(where, pointer, "has a tool_use block without a string id and name.")
            arguments = dumps(b.get("input", {}))
            calls.append(ToolCall(b["id"], b["name"], arguments, b))
        parts.append(part)
    return Message("assistant", tuple(parts), tuple(calls), raw=m, index=i)


def _parse_tool_result(
    m: Mapping[str, Any], b: Mapping[str, Any], where: str, pointer: str, i: int
) -> Message:
    call_id = b.get("tool_use_id")
    if not isinstance(call_id, str):
        raise _fail(where, pointer, "has a tool_result block without a string 'tool_use_id'.")
    content = b.get("content")
    if content is None:
        parts: tuple[Part, ...] = ()
    elif isinstance(content, str):
        parts = (Part("text", content),)
    elif isinstance(content, list):
        parts = tuple(_parse_block(x, where, pointer) for x in content)
    else:
        raise _fail(where, pointer, "has a tool_result whose content is not a string or array.")
    return Message(
        "tool", parts, tool_call_id=call_id, is_error=bool(b.get("is_error")),
        raw={"envelope": m, "block": b}, index=i,
    )


def _envelope(m: Message) -> Mapping[str, Any] | None:
    raw = m.raw
    if raw is None:
        return None
    return raw["envelope"] if m.role == "tool" else raw  # type: ignore[no-any-return]


def _render_group(group: list[Message]) -> dict[str, Any]:
    first = group[0]
    envelope = _envelope(first)
    out = dict(envelope) if envelope is not None else {}
    out["role"] = _WIRE_ROLE[first.role]
    if len(group) == 1 and first.role != "tool" and _was_plain_text(first):
        out["content"] = first.text
        return out
    blocks: list[Any] = []
    for m in group:
        blocks.extend(_render_blocks(m))
    out["content"] = blocks
    return out


def _was_plain_text(m: Message) -> bool:
    return m.raw is None or isinstance(m.raw.get("content"), str)


def _render_blocks(m: Message) -> list[Any]:
    if m.role == "tool":
        return [_render_tool_result(m)]
    if m.raw is None:  # written by the engine: one block, however many parts
        return [{"type": "text", "text": m.text}]
    calls = {c.id: c for c in m.tool_calls}
    out: list[Any] = []
    for p in m.parts:
        if p.kind == "tool_use":
            out.append(_render_call(calls[p.raw["id"]]))
        else:
            out.append(render_text_part(p))
    return out


def _render_call(call: ToolCall) -> dict[str, Any]:
    raw = call.raw
    if raw is None:
        return {"type": "tool_use", "id": call.id, "name": call.name,
                "input": json.loads(call.arguments)}
    if dumps(raw.get("input", {})) == call.arguments:
        return dict(raw)
    return {**raw, "input": json.loads(call.arguments)}


def _render_tool_result(m: Message) -> dict[str, Any]:
    block = m.raw["block"] if m.raw is not None else {
        "type": "tool_result", "tool_use_id": m.tool_call_id}
    original = block.get("content")
    if isinstance(original, str) and len(m.parts) == 1 and m.parts[0].text is original:
        return dict(block)
    if isinstance(original, list):
        return {**block, "content": [render_text_part(p) for p in m.parts]}
    return {**block, "content": m.text}


def _render_system(system: list[Message]) -> Any:
    if len(system) == 1:
        only = system[0]
        original = only.raw.get("system") if only.raw is not None else None
        if isinstance(original, str) and only.parts and only.parts[0].text is original:
            return original
    return [render_text_part(p) for m in system for p in m.parts]

"""OpenAI Responses ``input`` items, with ``instructions`` as the system prompt.

Assistant-side items that follow each other (reasoning, assistant messages,
function calls) form one canonical assistant message, so a reasoning item
is kept or dropped with the calls it led to, never split from them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.engine.errors import InvalidTranscript
from app.engine.jsontext import dumps, shown_value
from app.engine.transcript.formats import EVIDENCE_SHOWN, Payload
from app.engine.transcript.model import SYSTEM_INDEX, Message, Part, Role, ToolCall, Transcript

_ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning",
                         "custom_tool_call", "custom_tool_call_output"})
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system",
                           "developer": "system"}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
# Items the model produced that are not function calls (built-in tools and the like).
_ASSISTANT_ITEMS = frozenset({"reasoning", "function_call", "custom_tool_call"})
# The results of calls: a function's, and a custom (free-form) tool's, such as the
# apply_patch tool Codex declares, whose call carries its text in 'input'.
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})


class ResponsesFormat:
    name = "responses"
    keys: tuple[str, ...] = ("input", "instructions")

    def evidence(self, payload: Payload) -> list[str]:
        found = [f"top-level {k!r}" for k in self.keys if k in payload]
        for where in ("messages", "contents"):
            items = payload.get(where)
            if isinstance(items, list):
                found.extend(f"{where}[{i}] is a Responses {m['type']!r} item"
                             for i, m in enumerate(items)
                             if isinstance(m, dict) and isinstance(m.get("type"), str)
                             and m["type"] in _ITEM_TYPES)
        return found[:EVIDENCE_SHOWN]

    def parse(self, payload: Payload) -> Transcript:
        out: list[Message] = []
        instructions = payload.get("instructions")
        if isinstance(instructions, str) and instructions:
            out.append(Message("system", (Part("text", instructions),),
                               raw={"instructions": instructions}, index=SYSTEM_INDEX))
        items = payload.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list):
            raise InvalidTranscript(
                "OpenAI Responses conversations go in a top-level 'input' (a string or an "
                "array of items); none was found.", pointer="/input")
        pending: list[tuple[int, Mapping[str, Any]]] = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise _fail(i, "must be an object (a message, function_call, "
                            "function_call_output or reasoning item).")
            _check_types(item, i)
            if _is_assistant_side(item):
                pending.append((i, item))
                continue
            if pending:
                out.append(_assistant(pending))
                pending = []
            out.append(_parse_item(item, i))
        if pending:
            out.append(_assistant(pending))
        return Transcript(tuple(out), self.name)

    def render(self, transcript: Transcript) -> dict[str, Any]:
        body: dict[str, Any] = {}
        items: list[Any] = []
        for m in transcript.messages:
            if m.role == "system" and m.raw is not None and "instructions" in m.raw:
                body["instructions"] = m.text
            else:
                items.extend(_render(m))
        body["input"] = items
        return body


def _fail(i: int, detail: str, suffix: str = "") -> InvalidTranscript:
    return InvalidTranscript(f"input[{i}] {detail}", pointer=f"/input/{i}{suffix}")


# The fields read as names (looked up, compared), with what each must be.
_NAMED = (("type", "a string such as message, function_call, function_call_output or "
                   "reasoning"),
          ("role", "a string: user, assistant, system or developer"))
# The fields that hold parts, each part named by a string 'type'.
_PART_LISTS = ("content", "output", "summary")


def _check_types(item: Mapping[str, Any], i: int) -> None:
    """Fields the parser looks up by value, checked for their type first: an array where
    a name belongs is the caller's mistake to hear about, not an exception."""
    # A null reads as the field left out, as it always has (SDKs write unset fields so).
    for key, expected in _NAMED:
        if item.get(key) is not None and not isinstance(item[key], str):
            raise _fail(i, f"has {key} {shown_value(item[key])}; it must be {expected}.",
                        f"/{key}")
    for key in _PART_LISTS:
        parts = item.get(key)
        if not isinstance(parts, list):
            continue
        for j, p in enumerate(parts):
            if isinstance(p, dict) and p.get("type") is not None and \
                    not isinstance(p["type"], str):
                raise _fail(i, f"has a {key} part {j} whose 'type' is {shown_value(p['type'])}; "
                            "it must be a string such as input_text, output_text "
                            "or summary_text.",
                            f"/{key}/{j}/type")


def _is_assistant_side(item: Mapping[str, Any]) -> bool:
    kind = item.get("type")
    if kind in _ASSISTANT_ITEMS:
        return True
    if kind in (None, "message"):
        return bool(item.get("role") == "assistant")
    # Unknown item types (web_search_call, computer_call, ...) are produced by the model.
    return kind not in _OUTPUT_ITEMS


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, dict) and isinstance(p.get("type"), str)
                         and p["type"] in _TEXT_PARTS and isinstance(p.get("text"), str))
    return ""


def _assistant(items: list[tuple[int, Mapping[str, Any]]]) -> Message:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    for i, item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            arguments = item.get("arguments", "")
            if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(
                    arguments, str):
                raise _fail(i, "is a function_call without a string 'call_id', 'name' and "
                            "'arguments' (a JSON string).")
            calls.append(ToolCall(call_id, name, arguments, item))
            parts.append(Part("function_call", "", {"call_id": call_id}))
        elif kind == "custom_tool_call":
            call_id, name, text = item.get("call_id"), item.get("name"), item.get("input", "")
            if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(
                    text, str):
                raise _fail(i, "is a custom_tool_call without a string 'call_id', 'name' and "
                            "'input'.")
            # Read as a call whose one argument is its text, so a patch it carries is
            # read as any call's arguments are.
            calls.append(ToolCall(call_id, name, dumps({"input": text}), item))
            parts.append(Part("function_call", "", {"call_id": call_id}))
        elif kind == "reasoning":
            summary = item.get("summary")
            text = _content_text(summary) if isinstance(summary, list) else ""
            parts.append(Part("reasoning", text, item))
        elif kind == "message":
            parts.append(Part("text", _content_text(item.get("content")), item))
        else:
            parts.append(Part(str(kind), "", item))
    return Message("assistant", tuple(parts), tuple(calls), raw={"items": items},
                   index=items[0][0])


def _parse_item(item: Mapping[str, Any], i: int) -> Message:
    kind = item.get("type", "message")
    if kind in _OUTPUT_ITEMS:
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            raise _fail(i, f"is a {kind} without a string 'call_id'.")
        return Message("tool", (Part("text", _content_text(item.get("output"))),),
                       tool_call_id=call_id, raw=item, index=i)
    given = item.get("role")
    role = _ROLES.get(given) if isinstance(given, str) else None
    if role is None or role == "assistant":
        raise _fail(i, f"has role {shown_value(given)}; Responses message items use user, "
                    "assistant, system or developer.")
    return Message(role, (Part("text", _content_text(item.get("content")), item),), raw=item,
                   index=i)


def _with_text(item: Mapping[str, Any], text: str, key: str, part_type: str) -> dict[str, Any]:
    """The item with its text replaced, in the shape it came in."""
    if isinstance(item.get(key), str):
        return {**item, key: text}
    return {**item, key: [{"type": part_type, "text": text}]}


def _render(m: Message) -> list[Any]:
    if m.raw is None:  # written by the engine
        part = "output_text" if m.role == "assistant" else "input_text"
        return [{"type": "message", "role": m.role,
                 "content": [{"type": part, "text": m.text}]}]
    if m.role == "tool":
        item = m.raw
        if _content_text(item.get("output")) == m.text:
            return [item]
        return [_with_text(item, m.text, "output", "input_text")]
    if m.role != "assistant":
        item = m.raw
        if _content_text(item.get("content")) == m.text:
            return [item]
        return [_with_text(item, m.text, "content", "input_text")]
    calls = {c.id: c for c in m.tool_calls}
    out: list[Any] = []
    for p in m.parts:
        if p.kind == "function_call":
            call = calls[p.raw["call_id"]]
            raw = call.raw
            if raw.get("type") == "custom_tool_call":
                out.append(_custom_call(raw, call.arguments))
            else:
                out.append(raw if raw.get("arguments") is call.arguments
                           else {**raw, "arguments": call.arguments})
        elif p.kind == "text" and _content_text(p.raw.get("content")) != p.text:
            out.append(_with_text(p.raw, p.text, "content", "output_text"))
        else:
            out.append(p.raw)
    return out


def _custom_call(raw: Mapping[str, Any], arguments: str) -> Any:
    """A custom tool's call, its 'input' as the arguments now hold it (cut, when an old
    call's text was shortened)."""
    value = json.loads(arguments)
    text = value.get("input") if isinstance(value, dict) else None
    if not isinstance(text, str) or text == raw.get("input"):
        return raw
    return {**raw, "input": text}

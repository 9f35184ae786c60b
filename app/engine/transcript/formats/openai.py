"""OpenAI Chat Completions ``messages`` (also spoken by Ollama, vLLM, LM Studio, OpenRouter...)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.errors import InvalidTranscript
from app.engine.jsontext import shown_value
from app.engine.transcript.formats import EVIDENCE_SHOWN, Payload
from app.engine.transcript.formats.parts import render_text_part
from app.engine.transcript.model import Message, Part, Role, ToolCall, Transcript

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}
# Content part types that only Chat Completions uses.
_OWN_PART_TYPES = frozenset({"image_url", "input_audio", "file", "refusal"})


class OpenAIFormat:
    name = "openai"
    keys: tuple[str, ...] = ("messages",)

    def evidence(self, payload: Payload) -> list[str]:
        found: list[str] = []
        for i, m in enumerate(_messages(payload)):
            if len(found) >= EVIDENCE_SHOWN:
                break
            if not isinstance(m, dict):
                continue
            role = m.get("role")
            if role in ("system", "developer", "tool"):
                found.append(f"messages[{i}] has role {role!r}")
            for key in ("tool_calls", "tool_call_id"):
                if key in m:
                    found.append(f"messages[{i}] has {key!r}")
            content = m.get("content")
            if isinstance(content, list):
                found.extend(
                    f"messages[{i}].content has a {p['type']!r} part"
                    for p in content
                    if isinstance(p, dict) and isinstance(p.get("type"), str)
                    and p["type"] in _OWN_PART_TYPES
                )
        return found[:EVIDENCE_SHOWN]

    def parse(self, payload: Payload) -> Transcript:
        messages = tuple(_parse_message(m, i) for i, m in enumerate(_messages(payload)))
        return Transcript(messages, self.name)

    def render(self, transcript: Transcript) -> dict[str, Any]:
        return {"messages": [_render_message(m) for m in transcript.messages]}


def _messages(payload: Payload) -> Sequence[Any]:
    messages = payload.get("messages")
    return messages if isinstance(messages, list) else ()


def _fail(index: int, detail: str, suffix: str = "") -> InvalidTranscript:
    return InvalidTranscript(f"messages[{index}]{suffix} {detail}", pointer=f"/messages/{index}")


def _parse_message(m: Any, i: int) -> Message:
    # Runs for every message of every request: one dict lookup per field, positional
    # construction, checks that cost nothing on the common path.
    if not isinstance(m, dict):
        raise _fail(i, "must be an object with 'role' and 'content'.")
    given = m.get("role")
    # A role that is not a string (an array, an object) cannot be a key: say so, not crash.
    role = _ROLES.get(given) if isinstance(given, str) else None
    if role is None:
        raise _fail(
            i,
            f"has role {shown_value(given)}; it must be a string, one of system, "
            "developer, user, assistant or tool.",
        )
    tool_call_id = None
    if role == "tool":
        tool_call_id = m.get("tool_call_id")
        if not isinstance(tool_call_id, str):
            raise _fail(i, "is a tool message without a string 'tool_call_id'; set it to the "
                        "id of the tool call it answers.")
    calls = m.get("tool_calls")
    name = m.get("name")
    return Message(
        role,
        _parse_content(m.get("content"), i),
        _parse_calls(calls, i) if calls is not None and role == "assistant" else (),
        tool_call_id,
        name if isinstance(name, str) else None,
        False,
        m,
        i,
    )


def _parse_content(content: Any, i: int) -> tuple[Part, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (Part("text", content),)
    if not isinstance(content, list):
        raise _fail(i, "must be a string, null or an array of content parts.", ".content")
    parts: list[Part] = []
    for j, p in enumerate(content):
        if not isinstance(p, dict) or not isinstance(p.get("type"), str):
            raise _fail(i, f"part {j} must be an object with a string 'type' (text, image_url, "
                        "input_audio, file or refusal).", ".content")
        if p["type"] == "text":
            text = p.get("text")
            if not isinstance(text, str):
                raise _fail(i, f"part {j} is a text part without a string 'text'.", ".content")
            parts.append(Part("text", text, p))
        else:
            parts.append(Part(p["type"], "", p))
    return tuple(parts)


def _parse_calls(calls: Any, i: int) -> tuple[ToolCall, ...]:
    if not isinstance(calls, list):
        raise _fail(i, "must be an array of tool calls.", ".tool_calls")
    out: list[ToolCall] = []
    for j, c in enumerate(calls):
        fn = c.get("function") if isinstance(c, dict) else None
        call_id = c.get("id") if fn is not None else None
        if not isinstance(fn, dict) or not isinstance(call_id, str):
            raise _fail(
                i, f"[{j}] must be an object with a string 'id' and a 'function' object.",
                ".tool_calls",
            )
        name, arguments = fn.get("name"), fn.get("arguments", "")
        if not isinstance(name, str) or not isinstance(arguments, str):
            raise _fail(
                i, f"[{j}].function needs a string 'name' and 'arguments' as a JSON string.",
                ".tool_calls",
            )
        out.append(ToolCall(call_id, name, arguments, c))
    return tuple(out)


def _render_message(m: Message) -> dict[str, Any]:
    raw: Mapping[str, Any] | None = m.raw
    if raw is None:
        out: dict[str, Any] = {"role": m.role, "content": m.text}
        if m.tool_call_id is not None:
            out["tool_call_id"] = m.tool_call_id
        return out
    out = dict(raw)
    out["content"] = _render_content(raw.get("content"), m.parts)
    if m.tool_calls:
        out["tool_calls"] = [_render_call(c) for c in m.tool_calls]
    return out


def _render_content(original: Any, parts: tuple[Part, ...]) -> Any:
    if isinstance(original, str) and len(parts) == 1 and parts[0].text is original:
        return original
    if original is None and not parts:
        return None
    if isinstance(original, list):
        return [render_text_part(p) for p in parts]
    return "\n".join(p.text for p in parts if p.text)


def _render_call(call: ToolCall) -> dict[str, Any]:
    raw = call.raw
    if raw is None:
        return {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
    if raw["function"].get("arguments") is call.arguments:
        return dict(raw)
    return {**raw, "function": {**raw["function"], "arguments": call.arguments}}

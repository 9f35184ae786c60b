"""Gemini ``generateContent``: ``contents`` of ``user`` / ``model`` turns, ``systemInstruction``.

Gemini has no call ids on older payloads: a ``functionResponse`` answers the
first unanswered ``functionCall`` of the same name in the model turn before
it. An ``id`` on both sides, as newer payloads carry, wins over that rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from app.engine.errors import InvalidTranscript
from app.engine.jsontext import dumps, shown_value
from app.engine.transcript.formats import EVIDENCE_SHOWN, Payload
from app.engine.transcript.formats.parts import group_by_role
from app.engine.transcript.model import SYSTEM_INDEX, Message, Part, Role, ToolCall, Transcript

_SYSTEM_KEYS = ("systemInstruction", "system_instruction")
_WIRE_ROLE: dict[Role, str] = {"user": "user", "tool": "user", "assistant": "model"}
_DATA_KEYS = ("inlineData", "fileData", "executableCode", "codeExecutionResult",
              "functionResponse")


class GeminiFormat:
    name = "gemini"
    keys: tuple[str, ...] = ("contents", *_SYSTEM_KEYS)

    def evidence(self, payload: Payload) -> list[str]:
        found = [f"top-level {k!r}" for k in self.keys if k in payload]
        for where in ("messages", "input"):
            items = payload.get(where)
            if isinstance(items, list):
                found.extend(f"{where}[{i}] has Gemini 'parts'" for i, m in enumerate(items)
                             if isinstance(m, dict) and "parts" in m and "content" not in m)
        return found[:EVIDENCE_SHOWN]

    def parse(self, payload: Payload) -> Transcript:
        contents = payload.get("contents")
        if not isinstance(contents, list):
            raise InvalidTranscript(
                "Gemini conversations go in a top-level 'contents' array of "
                "{role, parts} objects; none was found.", pointer="/contents")
        out = list(_parse_system(payload))
        previous_calls: list[ToolCall] = []
        for i, content in enumerate(contents):
            for m in _parse_content(content, i, previous_calls):
                out.append(m)
                if m.role == "assistant":
                    previous_calls = list(m.tool_calls)
        return Transcript(tuple(out), self.name)

    def render(self, transcript: Transcript) -> dict[str, Any]:
        system = [m for m in transcript.messages if m.role == "system"]
        rest = [m for m in transcript.messages if m.role != "system"]
        groups = group_by_role(rest, _WIRE_ROLE)
        body: dict[str, Any] = {"contents": [_render_group(g) for g in groups]}
        if system:
            key, value = _render_system(system)
            body[key] = value
        return body


def _fail(pointer: str, detail: str) -> InvalidTranscript:
    where = pointer.strip("/").replace("/", ".")
    return InvalidTranscript(f"{where} {detail}", pointer=pointer)


def _parse_system(payload: Payload) -> Iterator[Message]:
    for key in _SYSTEM_KEYS:
        system = payload.get(key)
        if system is None:
            continue
        if isinstance(system, str):  # the SDKs accept a bare string
            yield Message("system", (Part("text", system),), raw={"key": key, "value": system},
                          index=SYSTEM_INDEX)
            continue
        if not isinstance(system, dict) or not isinstance(system.get("parts"), list):
            raise _fail(f"/{key}", "must be an object with a 'parts' array of text parts.")
        parts = tuple(_parse_part(p, f"/{key}/parts/{j}")
                      for j, p in enumerate(system["parts"]))
        yield Message("system", parts, raw={"key": key, "value": system}, index=SYSTEM_INDEX)


def _parse_part(p: Any, pointer: str) -> Part:
    if not isinstance(p, dict):
        raise _fail(pointer, "must be an object such as {\"text\": ...}.")
    if "functionCall" in p:  # may share the part with a thoughtSignature
        return Part("functionCall", "", p)
    if isinstance(p.get("text"), str):
        return Part("thinking" if p.get("thought") else "text", p["text"], p)
    kind = next((k for k in _DATA_KEYS if k in p), "opaque")
    return Part(kind, "", p)


def _parse_content(c: Any, i: int, previous_calls: list[ToolCall]) -> Iterator[Message]:
    pointer = f"/contents/{i}"
    if not isinstance(c, dict) or not isinstance(c.get("parts"), list):
        raise _fail(pointer, "must be an object with 'role' and a 'parts' array.")
    role = c.get("role", "user")
    if role not in ("user", "model"):
        raise _fail(pointer, f"has role {shown_value(role)}; it must be the string "
                    "'user' or 'model' (the system prompt goes in 'systemInstruction').")
    if role == "model":
        yield _parse_model(c, i)
        return
    unanswered = list(previous_calls)
    rest: list[Part] = []
    for j, p in enumerate(c["parts"]):
        if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
            yield _parse_response(c, p, f"{pointer}/parts/{j}", unanswered, i)
        else:
            rest.append(_parse_part(p, f"{pointer}/parts/{j}"))
    if rest or not c["parts"]:
        yield Message("user", tuple(rest), raw=c, index=i)


def _parse_model(c: Mapping[str, Any], i: int) -> Message:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    for j, p in enumerate(c["parts"]):
        part = _parse_part(p, f"/contents/{i}/parts/{j}")
        if part.kind == "functionCall":
            fc = p["functionCall"]
            if not isinstance(fc, dict) or not isinstance(fc.get("name"), str):
                raise _fail(f"/contents/{i}/parts/{j}", "has a functionCall without a 'name'.")
            given = fc.get("id")
            call_id = given if isinstance(given, str) else f"gemini_{i}_{j}"
            arguments = dumps(fc.get("args", {}))
            calls.append(ToolCall(call_id, fc["name"], arguments, p))
            part = Part("functionCall", "", {"call_id": call_id, "part": p})
        parts.append(part)
    return Message("assistant", tuple(parts), tuple(calls), raw=c, index=i)


def _response_text(response: Any) -> str:
    # A lone string field ({"output": "..."}) reads as that string; anything else as JSON.
    if isinstance(response, dict) and len(response) == 1:
        only = next(iter(response.values()))
        if isinstance(only, str):
            return only
    return dumps(response)


def _parse_response(
    c: Mapping[str, Any], p: Mapping[str, Any], pointer: str, unanswered: list[ToolCall], i: int
) -> Message:
    fr = p["functionResponse"]
    name, given_id = fr.get("name"), fr.get("id")
    match = next((call for call in unanswered if isinstance(given_id, str)
                  and call.id == given_id), None)
    if match is None:
        match = next((call for call in unanswered if call.name == name), None)
    if match is None:
        raise _fail(pointer, f"is a functionResponse for {name!r}, but the model turn before it "
                    "has no unanswered functionCall of that name. Put each response in the "
                    "user turn right after the call, or drop it.")
    unanswered.remove(match)
    text = _response_text(fr.get("response", {}))
    # The call it answers names it (its own name may be anything when its id matched).
    return Message("tool", (Part("text", text),), tool_call_id=match.id, name=match.name,
                   raw={"envelope": c, "part": p, "text": text}, index=i)


def _render_group(group: list[Message]) -> dict[str, Any]:
    first = group[0]
    raw = first.raw
    envelope = raw["envelope"] if first.role == "tool" and raw is not None else raw
    out = {k: v for k, v in envelope.items() if k != "parts"} if envelope is not None else {}
    out["role"] = _WIRE_ROLE[first.role]
    out["parts"] = [part for m in group for part in _render_parts(m)]
    return out


def _render_parts(m: Message) -> list[Any]:
    if m.role == "tool":
        return [_render_response(m)]
    if m.raw is None:  # written by the engine
        return [{"text": m.text}]
    calls = {c.id: c for c in m.tool_calls}
    out: list[Any] = []
    for p in m.parts:
        if p.kind == "functionCall":
            out.append(_render_call(calls[p.raw["call_id"]]))
        elif p.kind in ("text", "thinking") and p.raw.get("text") is not p.text:
            out.append({**p.raw, "text": p.text})
        else:
            out.append(p.raw)
    return out


def _render_call(call: ToolCall) -> Any:
    raw = call.raw
    fc = raw["functionCall"]
    if dumps(fc.get("args", {})) == call.arguments:
        return raw
    return {**raw, "functionCall": {**fc, "args": json.loads(call.arguments)}}


def _render_response(m: Message) -> Any:
    raw = m.raw
    text = m.text
    if raw is None:
        return {"functionResponse": {"name": m.name or "tool", "response": {"output": text}}}
    part, fr = raw["part"], raw["part"]["functionResponse"]
    if m.parts and m.parts[0].text is raw["text"]:
        return part
    response = fr.get("response")
    if isinstance(response, dict) and len(response) == 1 and isinstance(
            next(iter(response.values())), str):
        new = {next(iter(response)): text}  # keep the caller's key
    else:
        new = {"output": text}  # the cut text of a JSON object is no longer JSON
    return {**part, "functionResponse": {**fr, "response": new}}


def _render_system(system: list[Message]) -> tuple[str, Any]:
    raw = system[0].raw or {"key": "systemInstruction", "value": None}
    key, value = raw["key"], raw["value"]
    if len(system) == 1 and (value == system[0].text if isinstance(value, str)
                             else all(p.raw is not None and p.raw.get("text") is p.text
                                      for p in system[0].parts)):
        return key, value
    parts = [p.raw if p.raw is not None else {"text": p.text} for m in system for p in m.parts]
    base = value if isinstance(value, dict) else {}
    return key, {**base, "parts": parts}

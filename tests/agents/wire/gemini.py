"""Gemini ``generateContent`` and ``streamGenerateContent`` (server-sent events with
``?alt=sse``), under ``/v1beta`` and ``/v1``, with function calls and thought signatures,
and ``countTokens``.

A function call the model makes carries a ``thoughtSignature`` (as Gemini's thinking
models give one): the client must send the call back with it unchanged, which
``signature`` lets a check verify. Structured side requests (a ``responseMimeType`` of
JSON with a schema: Gemini CLI's next-speaker and loop checks) get an object with every
property the schema asks for.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from tests.agents.script import Call, Result, Seen, Turn, flatten, new_id
from tests.agents.wire import Event, Reply, approx_tokens, halves

_METHODS = ("generateContent", "streamGenerateContent")
PATHS = tuple(f"/{version}/models/{{model}}:{method}"
              for version in ("v1beta", "v1") for method in _METHODS)


def signature(call: dict[str, Any]) -> str:
    """The thought signature this upstream gives a ``functionCall`` (opaque bytes,
    base64), made of its name and arguments: a client may renumber call ids (Gemini CLI
    does in its side requests), never the call."""
    made = json.dumps([call.get("name"), call.get("args") or {}], sort_keys=True)
    return base64.b64encode(hashlib.sha256(made.encode()).digest()).decode()


def _parts_text(content: dict[str, Any]) -> str:
    return "\n".join(str(p["text"]) for p in content.get("parts") or []
                     if "text" in p and not p.get("thought"))


def _result_text(response: Any) -> str:
    if isinstance(response, dict) and set(response) <= {"output", "error"}:
        return "\n".join(str(v) for v in response.values())
    return json.dumps(response)


def _schema_value(schema: dict[str, Any]) -> Any:
    """A value of a JSON schema's type: enough for a client that parses the answer."""
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if isinstance(kind, str):
        kind = kind.lower()
    if "enum" in schema:
        return schema["enum"][-1]  # next_speaker: [model, user] -> user
    if kind == "object":
        return {name: _schema_value(sub) for name, sub in (schema.get("properties") or {}).items()}
    return {"array": [], "boolean": False, "number": 0, "integer": 0}.get(str(kind), "no")


class GeminiWire:
    name = "gemini"
    paths = PATHS

    def read(self, path: str, body: dict[str, Any], query: dict[str, str]) -> Seen:
        contents = body.get("contents") or []
        last: dict[str, Any] = contents[-1] if contents else {"role": "user", "parts": []}
        results: tuple[Result, ...] = ()
        if last.get("role", "user") == "user":
            results = tuple(
                Result(str(r.get("id") or r.get("name")), _result_text(r.get("response")),
                       "error" in (r.get("response") or {}))
                for p in last.get("parts") or [] if (r := p.get("functionResponse")))
        tools = tuple(str(f.get("name")) for t in body.get("tools") or []
                      for f in t.get("functionDeclarations") or [])
        system = body.get("systemInstruction") or {}
        return Seen(route=path, model=path.rpartition("/models/")[2].partition(":")[0],
                    stream=path.endswith(":streamGenerateContent"), tools=tools,
                    system=_parts_text(system) if isinstance(system, dict) else str(system),
                    results=results,
                    last_user=_parts_text(last) if last.get("role", "user") == "user" else "",
                    text=flatten(contents), body=body)

    def other(self, path: str, body: dict[str, Any]) -> Reply | None:
        if path.endswith(":countTokens"):
            return Reply({"totalTokens": approx_tokens(json.dumps(body))})
        return None

    def reply(self, seen: Seen, turn: Turn) -> Reply:
        config = seen.body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        parts: list[dict[str, Any]] = []
        if schema and not turn.calls:
            parts.append({"text": json.dumps(_schema_value(schema))})
        else:
            if turn.thinking and (config.get("thinkingConfig") or {}).get("includeThoughts"):
                parts.append({"text": turn.thinking, "thought": True})
            if turn.text:
                parts.append({"text": turn.text})
            for call in turn.calls:
                call_id = call.id or new_id("gc_")
                made = {"id": call_id, "name": call.name, "args": call.arguments}
                parts.append({"functionCall": made, "thoughtSignature": signature(made)})
        tokens_in, tokens_out = approx_tokens(seen.text), approx_tokens(json.dumps(parts))
        usage = {"promptTokenCount": tokens_in, "candidatesTokenCount": tokens_out,
                 "totalTokenCount": tokens_in + tokens_out}
        answer = {"candidates": [{"content": {"role": "model", "parts": parts},
                                  "finishReason": "STOP", "index": 0}],
                  "usageMetadata": usage, "modelVersion": seen.model,
                  "responseId": new_id("gr_")}
        if not seen.stream:
            return Reply(answer)
        return Reply(events=_events(answer, parts))


def _events(answer: dict[str, Any], parts: list[dict[str, Any]]) -> list[Event]:
    """Texts in pieces, each call whole (Gemini never splits a call), the finish and the
    usage on the last chunk."""
    pieces: list[dict[str, Any]] = []
    for part in parts:
        if "text" in part:
            pieces += [{**part, "text": half} for half in halves(part["text"])]
        else:
            pieces.append(part)
    head = {"modelVersion": answer["modelVersion"], "responseId": answer["responseId"]}
    events: list[Event] = [
        (None, {**head, "candidates": [{"content": {"role": "model", "parts": [piece]},
                                        "index": 0}]}) for piece in pieces[:-1]]
    last = pieces[-1:] if pieces else [{"text": ""}]
    events.append((None, {**head, "candidates": [{"content": {"role": "model", "parts": last},
                                                  "finishReason": "STOP", "index": 0}],
                          "usageMetadata": answer["usageMetadata"]}))
    return events


def calls_of(content: dict[str, Any]) -> list[Call]:
    """The function calls of a model content of a request (for checks)."""
    return [Call(c["name"], c.get("args") or {}, str(c.get("id") or c["name"]))
            for p in content.get("parts") or [] if (c := p.get("functionCall"))]

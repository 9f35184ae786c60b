"""OpenAI Responses (``POST /v1/responses``), whole or streamed, with function tools and
custom (free-form) tools such as Codex's ``apply_patch``."""

from __future__ import annotations

import json
from typing import Any

from tests.agents.script import Call, Result, Seen, Turn, flatten, new_id
from tests.agents.wire import Event, Reply, approx_tokens, halves
from tests.agents.wire.anthropic import signature

OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _tool_name(tool: dict[str, Any]) -> str:
    return str(tool.get("name") or tool.get("type", ""))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))


class ResponsesWire:
    name = "responses"
    paths = ("/v1/responses",)

    def read(self, path: str, body: dict[str, Any], query: dict[str, str]) -> Seen:
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        results: list[Result] = []
        for item in reversed(items):
            if item.get("type") not in OUTPUTS:
                break
            output = item.get("output")
            results.insert(0, Result(item["call_id"], _text(output)))
        last = items[-1] if items else {}
        last_user = _text(last.get("content")) if last.get("role") == "user" else ""
        return Seen(route=path, model=str(body.get("model", "")), stream=bool(body.get("stream")),
                    tools=tuple(_tool_name(t) for t in body.get("tools") or []),
                    system=str(body.get("instructions") or ""), results=tuple(results),
                    last_user=last_user, text=flatten(items), body=body)

    def other(self, path: str, body: dict[str, Any]) -> Reply | None:
        if path.endswith("/v1/responses/input_tokens"):
            return Reply({"object": "response.input_tokens",
                          "input_tokens": approx_tokens(json.dumps(body))})
        return None

    def reply(self, seen: Seen, turn: Turn) -> Reply:
        custom = {_tool_name(t) for t in seen.body.get("tools") or [] if t.get("type") == "custom"}
        output: list[dict[str, Any]] = []
        if turn.thinking:
            reasoning: dict[str, Any] = {"type": "reasoning", "id": new_id("rs_"), "summary": [
                {"type": "summary_text", "text": turn.thinking}]}
            if "reasoning.encrypted_content" in (seen.body.get("include") or []):
                # Stateless clients (store: false) send it back on the next request; the
                # provider refuses one that was altered (``valid`` checks it came intact).
                reasoning["encrypted_content"] = signature(turn.thinking)
            output.append(reasoning)
        if turn.text:
            output.append({"type": "message", "id": new_id("msg_"), "role": "assistant",
                           "status": "completed", "content": [
                               {"type": "output_text", "text": turn.text, "annotations": []}]})
        for c in turn.calls:
            call_id = c.id or new_id("call_")
            if c.name in custom:
                output.append({"type": "custom_tool_call", "id": new_id("ctc_"),
                               "call_id": call_id, "name": c.name,
                               "input": str(c.arguments.get("input", "")),
                               "status": "completed"})
            else:
                output.append({"type": "function_call", "id": new_id("fc_"), "call_id": call_id,
                               "name": c.name, "arguments": json.dumps(c.arguments),
                               "status": "completed"})
        tokens_in = approx_tokens(seen.text)
        tokens_out = approx_tokens(json.dumps(output))
        response = {"id": new_id("resp_"), "object": "response", "created_at": 1,
                    "status": "completed", "model": seen.model, "output": output,
                    "parallel_tool_calls": bool(seen.body.get("parallel_tool_calls", True)),
                    "tool_choice": seen.body.get("tool_choice", "auto"),
                    "tools": seen.body.get("tools") or [],
                    "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out,
                              "total_tokens": tokens_in + tokens_out,
                              "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens_details": {"reasoning_tokens": 0}}}
        if not seen.stream:
            return Reply(response)
        return Reply(events=_events(response))


def _events(response: dict[str, Any]) -> list[Event]:
    raw: list[dict[str, Any]] = []
    shell = {**response, "status": "in_progress", "output": []}
    raw += [{"type": "response.created", "response": shell},
            {"type": "response.in_progress", "response": shell}]
    for index, item in enumerate(response["output"]):
        empty = {**item}
        if item["type"] == "message":
            empty["content"], empty["status"] = [], "in_progress"
        elif item["type"] == "function_call":
            empty["arguments"], empty["status"] = "", "in_progress"
        elif item["type"] == "custom_tool_call":
            empty["input"] = ""
        elif item["type"] == "reasoning":
            empty["summary"] = []
        raw.append({"type": "response.output_item.added", "output_index": index, "item": empty})
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            raw.append({"type": "response.content_part.added", **at, "content_index": 0,
                        "part": part})
            raw += [{"type": "response.output_text.delta", **at, "content_index": 0,
                     "delta": piece} for piece in halves(text)]
            raw += [{"type": "response.output_text.done", **at, "content_index": 0,
                     "text": text},
                    {"type": "response.content_part.done", **at, "content_index": 0,
                     "part": item["content"][0]}]
        elif item["type"] == "function_call":
            raw += [{"type": "response.function_call_arguments.delta", **at, "delta": piece}
                    for piece in halves(item["arguments"])]
            raw.append({"type": "response.function_call_arguments.done", **at,
                        "arguments": item["arguments"]})
        elif item["type"] == "custom_tool_call":
            raw += [{"type": "response.custom_tool_call_input.delta", **at, "delta": piece}
                    for piece in halves(item["input"])]
            raw.append({"type": "response.custom_tool_call_input.done", **at,
                        "input": item["input"]})
        elif item["type"] == "reasoning":
            summary = item["summary"][0]
            raw += [{"type": "response.reasoning_summary_part.added", **at, "summary_index": 0,
                     "part": {"type": "summary_text", "text": ""}},
                    {"type": "response.reasoning_summary_text.delta", **at, "summary_index": 0,
                     "delta": summary["text"]},
                    {"type": "response.reasoning_summary_text.done", **at, "summary_index": 0,
                     "text": summary["text"]},
                    {"type": "response.reasoning_summary_part.done", **at, "summary_index": 0,
                     "part": summary}]
        raw.append({"type": "response.output_item.done", "output_index": index, "item": item})
    raw.append({"type": "response.completed", "response": response})
    return [(event["type"], {**event, "sequence_number": n}) for n, event in enumerate(raw)]



def calls_of(items: list[dict[str, Any]]) -> list[Call]:
    """The calls among a request's input items (for checks)."""
    return [Call(i["name"], json.loads(i["arguments"]) if i["type"] == "function_call"
                 else {"input": i.get("input", "")}, i["call_id"])
            for i in items if i.get("type") in ("function_call", "custom_tool_call")]

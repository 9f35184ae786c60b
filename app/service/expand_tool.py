"""The expand tool in each provider's shape: proxy mode offers the model a tool that
reads back what compaction cut (``contextsynth_expand``), and answers its calls itself.

A shape knows, for one wire format, where a request's tools live and how the tool is
declared there, where an answer holds its tool calls, how a call and its result are
added to the conversation for the next round, and how the tool's calls are taken out
of an answer the client gets. Bodies are the parsed provider JSON, changed in place
only on copies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

NAME = "contextsynth_expand"
DESCRIPTION = (
    "Read back what was cut from this conversation to keep it short. Older turns and long "
    "outputs were replaced by notes and markers naming a handle, as in `expand: "
    "cs_01234567890123456789`; call this with that handle to get the original messages "
    "(as JSON lines). Narrow a long one with `lines` (\"120-180\") or `search` (a string "
    "the lines must hold). Use it only when a note lacks a detail you need.")
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "handle": {"type": "string", "description": "The handle, cs_ and 20 digits."},
        "lines": {"type": "string", "description": "Optional: a line range, as 120-180."},
        "search": {"type": "string", "description": "Optional: only lines holding this."},
    },
    "required": ["handle"],
}


@dataclass(frozen=True, slots=True)
class ExpandCall:
    """One call of the tool in an answer: its id and its arguments (parsed)."""

    id: str
    arguments: dict[str, Any]


class Shape(Protocol):
    def offer(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` with the tool added to its tools."""
        ...

    def calls(self, answer: dict[str, Any]) -> tuple[list[ExpandCall], int]:
        """The tool's calls in ``answer``, and how many calls of other tools it holds."""
        ...

    def next_round(self, body: dict[str, Any], answer: dict[str, Any],
                   results: list[tuple[ExpandCall, str]]) -> dict[str, Any]:
        """The request of the next round: ``body``, then the answer, then the results."""
        ...

    def without_tool(self, answer: dict[str, Any]) -> dict[str, Any]:
        """``answer`` with the tool's calls taken out (the client never sees it)."""
        ...

    def tokens(self, answer: dict[str, Any]) -> int:
        """What the answer's round cost, in tokens, as its usage says."""
        ...


def arguments_of(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _usage(answer: dict[str, Any], *keys: str) -> int:
    usage = answer.get("usage")
    if not isinstance(usage, dict):
        return 0
    return sum(int(v) for k in keys if isinstance(v := usage.get(k), int))


def _forced(choice: Any, forcing_words: tuple[str, ...]) -> bool:
    """Whether ``tool_choice`` makes the model call a tool of the client's."""
    if isinstance(choice, str):
        return choice in forcing_words
    return isinstance(choice, dict) and choice.get("type") not in (None, "auto", "none")


class ChatShape:
    """OpenAI Chat Completions."""

    def offer(self, body: dict[str, Any]) -> dict[str, Any]:
        tool = {"type": "function", "function": {"name": NAME, "description": DESCRIPTION,
                                                 "parameters": PARAMETERS}}
        return {**body, "tools": [*(body.get("tools") or []), tool]}

    def calls(self, answer: dict[str, Any]) -> tuple[list[ExpandCall], int]:
        ours, others = [], 0
        for call in _chat_calls(answer):
            function = call.get("function") or {}
            if function.get("name") == NAME:
                ours.append(ExpandCall(str(call.get("id", "")),
                                       arguments_of(function.get("arguments"))))
            else:
                others += 1
        return ours, others

    def next_round(self, body: dict[str, Any], answer: dict[str, Any],
                   results: list[tuple[ExpandCall, str]]) -> dict[str, Any]:
        message = dict(answer["choices"][0]["message"])
        message.pop("refusal", None)
        replies = [{"role": "tool", "tool_call_id": call.id, "content": text}
                   for call, text in results]
        return {**body, "messages": [*body["messages"], message, *replies]}

    def without_tool(self, answer: dict[str, Any]) -> dict[str, Any]:
        choices = []
        for choice in answer.get("choices") or []:
            message = dict(choice.get("message") or {})
            kept = [c for c in message.get("tool_calls") or []
                    if (c.get("function") or {}).get("name") != NAME]
            choice = dict(choice)
            if kept:
                message["tool_calls"] = kept
            elif "tool_calls" in message:
                del message["tool_calls"]
                if choice.get("finish_reason") == "tool_calls":
                    choice["finish_reason"] = "stop"
            choice["message"] = message
            choices.append(choice)
        return {**answer, "choices": choices}

    def tokens(self, answer: dict[str, Any]) -> int:
        return _usage(answer, "total_tokens")


def _chat_calls(answer: dict[str, Any]) -> list[dict[str, Any]]:
    choices = answer.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return []
    message = choices[0].get("message") or {}
    return [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]


class MessagesShape:
    """Anthropic Messages."""

    def offer(self, body: dict[str, Any]) -> dict[str, Any]:
        tool = {"name": NAME, "description": DESCRIPTION, "input_schema": PARAMETERS}
        return {**body, "tools": [*(body.get("tools") or []), tool]}

    def calls(self, answer: dict[str, Any]) -> tuple[list[ExpandCall], int]:
        ours, others = [], 0
        for block in answer.get("content") or []:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            if block.get("name") == NAME:
                ours.append(ExpandCall(str(block.get("id", "")), arguments_of(block.get("input"))))
            else:
                others += 1
        return ours, others

    def next_round(self, body: dict[str, Any], answer: dict[str, Any],
                   results: list[tuple[ExpandCall, str]]) -> dict[str, Any]:
        said = {"role": "assistant", "content": answer["content"]}
        replies = {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call.id, "content": text}
            for call, text in results]}
        return {**body, "messages": [*body["messages"], said, replies]}

    def without_tool(self, answer: dict[str, Any]) -> dict[str, Any]:
        content = [b for b in answer.get("content") or []
                   if not (isinstance(b, dict) and b.get("type") == "tool_use"
                           and b.get("name") == NAME)]
        out = {**answer, "content": content}
        if out.get("stop_reason") == "tool_use" and not any(
                isinstance(b, dict) and b.get("type") == "tool_use" for b in content):
            out["stop_reason"] = "end_turn"
        return out

    def tokens(self, answer: dict[str, Any]) -> int:
        return _usage(answer, "input_tokens", "output_tokens")


class ResponsesShape:
    """OpenAI Responses."""

    def offer(self, body: dict[str, Any]) -> dict[str, Any]:
        tool = {"type": "function", "name": NAME, "description": DESCRIPTION,
                "parameters": PARAMETERS}
        return {**body, "tools": [*(body.get("tools") or []), tool]}

    def calls(self, answer: dict[str, Any]) -> tuple[list[ExpandCall], int]:
        ours, others = [], 0
        for item in answer.get("output") or []:
            if not isinstance(item, dict) or item.get("type") != "function_call":
                continue
            if item.get("name") == NAME:
                ours.append(ExpandCall(str(item.get("call_id", "")),
                                 arguments_of(item.get("arguments"))))
            else:
                others += 1
        return ours, others

    def next_round(self, body: dict[str, Any], answer: dict[str, Any],
                   results: list[tuple[ExpandCall, str]]) -> dict[str, Any]:
        # The answer's items as they came (a reasoning item must precede its call), then
        # an output per call.
        outputs = [{"type": "function_call_output", "call_id": call.id, "output": text}
                   for call, text in results]
        return {**body, "input": [*body["input"], *answer["output"], *outputs]}

    def without_tool(self, answer: dict[str, Any]) -> dict[str, Any]:
        output = [i for i in answer.get("output") or []
                  if not (isinstance(i, dict) and i.get("type") == "function_call"
                          and i.get("name") == NAME)]
        return {**answer, "output": output}

    def tokens(self, answer: dict[str, Any]) -> int:
        return _usage(answer, "total_tokens")


class GeminiShape:
    """Gemini generateContent: calls are ``functionCall`` parts of the first candidate's
    content, results ``functionResponse`` parts of a user content."""

    def offer(self, body: dict[str, Any]) -> dict[str, Any]:
        declaration = {"name": NAME, "description": DESCRIPTION, "parameters": PARAMETERS}
        tools = list(body.get("tools") or [])
        # Into the client's declarations where it has some (one tool object holds them
        # all, as the SDKs send them), else as a tool object of its own.
        for i, tool in enumerate(tools):
            if isinstance(tool, dict) and isinstance(tool.get("functionDeclarations"), list):
                tools[i] = {**tool, "functionDeclarations": [*tool["functionDeclarations"],
                                                             declaration]}
                break
        else:
            tools.append({"functionDeclarations": [declaration]})
        return {**body, "tools": tools}

    def calls(self, answer: dict[str, Any]) -> tuple[list[ExpandCall], int]:
        ours, others = [], 0
        for part in _gemini_parts(answer):
            call = part.get("functionCall")
            if not isinstance(call, dict):
                continue
            if call.get("name") == NAME:
                ours.append(ExpandCall(str(call.get("id") or ""), arguments_of(call.get("args"))))
            else:
                others += 1
        return ours, others

    def next_round(self, body: dict[str, Any], answer: dict[str, Any],
                   results: list[tuple[ExpandCall, str]]) -> dict[str, Any]:
        # The model's content as it came: a call's thoughtSignature must go back with it.
        said = {**answer["candidates"][0]["content"], "role": "model"}
        return {**body, "contents": [*body["contents"], said, gemini_results(results)]}

    def without_tool(self, answer: dict[str, Any]) -> dict[str, Any]:
        candidates = []
        for candidate in answer.get("candidates") or []:
            content = candidate.get("content") if isinstance(candidate, dict) else None
            if isinstance(content, dict) and isinstance(content.get("parts"), list):
                candidate = {**candidate, "content": {
                    **content, "parts": GeminiParts().kept(content["parts"])}}
            candidates.append(candidate)
        return {**answer, "candidates": candidates}

    def tokens(self, answer: dict[str, Any]) -> int:
        usage = answer.get("usageMetadata")
        total = usage.get("totalTokenCount") if isinstance(usage, dict) else None
        return total if isinstance(total, int) else 0


def _gemini_parts(answer: dict[str, Any]) -> list[dict[str, Any]]:
    candidates = answer.get("candidates") or []
    if not candidates or not isinstance(candidates[0], dict):
        return []
    content = candidates[0].get("content") or {}
    return [p for p in content.get("parts") or [] if isinstance(p, dict)]


def is_ours(part: Any) -> bool:
    """Whether a Gemini part is a call of the tool."""
    call = part.get("functionCall") if isinstance(part, dict) else None
    return isinstance(call, dict) and call.get("name") == NAME


def gemini_results(results: list[tuple[ExpandCall, str]]) -> dict[str, Any]:
    """The user content answering the tool's calls: a functionResponse each, with the
    call's id where it had one (Gemini otherwise pairs a response with the call of its
    name), the text under ``output`` as the API documents for a function's output."""
    parts = []
    for call, text in results:
        response: dict[str, Any] = {"name": NAME, "response": {"output": text}}
        if call.id:
            response["id"] = call.id
        parts.append({"functionResponse": response})
    return {"role": "user", "parts": parts}


@dataclass(slots=True)
class GeminiParts:
    """Takes the tool's calls out of the parts of one answer, as they come (whole, or a
    stream's chunks in order). Parallel calls carry their step's thoughtSignature on the
    first call alone, and Gemini refuses a step whose first call has none: a signature
    on a call of ours taken out goes on the client's call that follows it."""

    signature: str | None = None

    def kept(self, parts: list[Any]) -> list[Any]:
        out = []
        for part in parts:
            if is_ours(part):
                signed = part.get("thoughtSignature")
                if self.signature is None and isinstance(signed, str):
                    self.signature = signed
                continue
            if self.signature is not None and isinstance(part, dict) and \
                    "functionCall" in part and "thoughtSignature" not in part:
                part = {**part, "thoughtSignature": self.signature}
                self.signature = None
            out.append(part)
        return out


# By the wire format of the proxy route.
SHAPES: dict[str, Shape] = {"openai": ChatShape(), "anthropic": MessagesShape(),
                            "responses": ResponsesShape(), "gemini": GeminiShape()}
# The formats whose streams the proxy answers the tool inside (see expand_stream).
STREAMED = frozenset({"openai", "anthropic", "responses", "gemini"})
# tool_choice values that make the model call one of the client's tools (Gemini's:
# toolConfig's functionCallingConfig mode).
_FORCING = {"openai": ("required",), "anthropic": ("any",), "responses": ("required",),
            "gemini": ("ANY",)}
# Where each format's request holds its conversation.
_CONVERSATION = {"responses": "input", "gemini": "contents"}


def conversation_field(wire: str) -> str:
    """The field a format's request holds its conversation in."""
    return _CONVERSATION.get(wire, "messages")


def may_offer(wire: str, body: dict[str, Any]) -> bool:
    """Whether the tool may be added to this request: its format has a shape, the
    conversation is a list (the rounds append to it), and no tool_choice forces a
    client's tool (on Gemini, nor would the tool make the request one it refuses)."""
    if wire not in SHAPES or not isinstance(body.get(conversation_field(wire)), list):
        return False
    if wire == "gemini":
        return _gemini_may_offer(body)
    return not _forced(body.get("tool_choice"), _FORCING[wire])


def _gemini_may_offer(body: dict[str, Any]) -> bool:
    """Gemini refuses function declarations beside a JSON answer ("Function calling with
    a response mime type: 'application/json' is unsupported") and, on the models before
    Gemini 3, beside built-in tools alone (googleSearch, codeExecution: "Tool use with
    function calling is unsupported"): the tool is not offered where it would turn a
    request the provider takes into one it refuses."""
    config = _field(body, "toolConfig", "tool_config")
    calling = _field(config, "functionCallingConfig", "function_calling_config")
    if str(calling.get("mode", "")).upper() in _FORCING["gemini"]:
        return False
    generation = _field(body, "generationConfig", "generation_config")
    mime = _field_value(generation, "responseMimeType", "response_mime_type")
    if mime not in (None, "", "text/plain") or any(
            _field_value(generation, k, s) is not None for k, s in _SCHEMAS):
        return False
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    declared = any(_field_value(t, "functionDeclarations", "function_declarations")
                   is not None for t in tools)
    built_in = any(set(t) - {"functionDeclarations", "function_declarations"} for t in tools)
    return declared or not built_in


_SCHEMAS = (("responseSchema", "response_schema"),
            ("responseJsonSchema", "response_json_schema"))


def _field_value(value: dict[str, Any], camel: str, snake: str) -> Any:
    """A field of a Gemini request in either spelling: REST takes camelCase and
    snake_case alike."""
    return value[camel] if camel in value else value.get(snake)


def _field(value: dict[str, Any], camel: str, snake: str) -> dict[str, Any]:
    found = _field_value(value, camel, snake)
    return found if isinstance(found, dict) else {}


_CONVERSATION_KEYS = ("messages", "input", "contents", "actions")


def read_back(document: dict[str, Any], arguments: dict[str, Any], max_chars: int) -> str:
    """What the tool answers for a stored span: its originals as JSON lines, narrowed to
    ``lines`` or to lines holding ``search``, each line numbered, within ``max_chars``."""
    # A span is stored in the wire format of the caller that dropped it last: its
    # conversation sits under that format's key (Responses' input, Gemini's contents).
    originals: Any = next((document[k] for k in _CONVERSATION_KEYS if k in document), [])
    lines = json.dumps(originals, indent=1, ensure_ascii=False).split("\n")
    numbered = list(enumerate(lines, 1))
    span = str(arguments.get("lines") or "")
    if span:
        first, _, last = span.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            return f"`lines` must be a range such as 120-180, not {span!r}."
        numbered = [(n, line) for n, line in numbered if low <= n <= high]
    search = str(arguments.get("search") or "")
    if search:
        numbered = [(n, line) for n, line in numbered if search in line]
        if not numbered:
            return f"no line of {arguments.get('handle')} holds {search!r}."
    text = "\n".join(f"{n}: {line}" for n, line in numbered)
    if len(text) <= max_chars:
        return text
    shown = text[:max_chars].rsplit("\n", 1)[0]
    last_shown = shown.count("\n") + 1
    return (f"{shown}\n[{len(numbered) - last_shown} more lines of {len(lines)}: ask for "
            "`lines` past these, or `search`]")

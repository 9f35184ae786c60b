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


# By the wire format of the proxy route.
SHAPES: dict[str, Shape] = {"openai": ChatShape(), "anthropic": MessagesShape(),
                            "responses": ResponsesShape()}
# The formats whose streams the proxy answers the tool inside (see expand_stream).
STREAMED = frozenset({"openai", "anthropic", "responses"})
# tool_choice values that make the model call one of the client's tools.
_FORCING = {"openai": ("required",), "anthropic": ("any",), "responses": ("required",)}


def may_offer(wire: str, body: dict[str, Any]) -> bool:
    """Whether the tool may be added to this request: its format has a shape, the
    conversation is a list (the rounds append to it), and no tool_choice forces a
    client's tool."""
    key = "input" if wire == "responses" else "messages"
    if wire not in SHAPES or not isinstance(body.get(key), list):
        return False
    return not _forced(body.get("tool_choice"), _FORCING[wire])


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

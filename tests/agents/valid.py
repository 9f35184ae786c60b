"""What a provider would refuse in a request body the upstream received: each check
returns the problems found (empty: the provider would take it).

These look at one body alone, as the provider does; ``tests.support.invariants``
compares a body with the one the client sent.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.agents.wire.anthropic import signature

CACHE_MARKS = 4  # Anthropic's limit of cache_control marks a request


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content or []


def _marks(value: Any) -> int:
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(_marks(v) for v in value.values())
    if isinstance(value, list):
        return sum(_marks(v) for v in value)
    return 0


def anthropic(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    # System messages among the messages (Claude Code's) stand outside the alternation.
    turns = [(i, m) for i, m in enumerate(body.get("messages") or []) if m["role"] != "system"]
    if turns and turns[0][1]["role"] != "user":
        problems.append("the first message is not the user's")
    for (i, a), (_, b) in itertools.pairwise(turns):
        if a["role"] == b["role"]:
            problems.append(f"messages[{i}] and the next are both {a['role']}")
    open_calls: set[str] = set()
    for i, m in turns:
        blocks = _blocks(m["content"])
        if m["role"] == "assistant":
            if open_calls:
                problems.append(f"calls {sorted(open_calls)} unanswered before messages[{i}]")
            open_calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
            for b in blocks:
                if b.get("type") == "text" and not b.get("text"):
                    problems.append(f"messages[{i}] has an empty text block")
                if b.get("type") == "thinking" and b.get("signature") != signature(
                        b.get("thinking", "")):
                    problems.append(f"messages[{i}] has a thinking block whose signature "
                                    "does not match its text")
        else:
            answered = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
            if answered != open_calls:
                problems.append(f"messages[{i}] answers {sorted(answered)}, "
                                f"the calls before it were {sorted(open_calls)}")
            kinds = [b.get("type") == "tool_result" for b in blocks]
            if kinds != sorted(kinds, reverse=True):
                problems.append(f"messages[{i}] has text before its tool results")
            open_calls = set()
    if open_calls:
        problems.append(f"calls {sorted(open_calls)} are never answered")
    names = [t.get("name") for t in body.get("tools") or []]
    if len(names) != len(set(names)):
        problems.append(f"tools declared twice: {names}")
    marks = _marks(body.get("system")) + _marks(body.get("messages")) + _marks(body.get("tools"))
    if marks > CACHE_MARKS:
        problems.append(f"{marks} cache_control marks (Anthropic takes {CACHE_MARKS})")
    return problems


def responses(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    items = body.get("input") or []
    if isinstance(items, str):
        return problems
    calls: dict[str, str] = {}  # call id -> its kind
    answered: set[str] = set()
    pending: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind in ("function_call", "custom_tool_call"):
            if item["call_id"] in calls:
                problems.append(f"input[{i}] repeats call {item['call_id']}")
            calls[item["call_id"]] = kind
            pending.add(item["call_id"])
            if kind == "function_call":
                try:
                    json.loads(item["arguments"])
                except ValueError:
                    problems.append(f"input[{i}] has arguments that are not JSON")
        elif kind in ("function_call_output", "custom_tool_call_output"):
            want = "function_call" if kind == "function_call_output" else "custom_tool_call"
            if calls.get(item["call_id"]) != want:
                problems.append(f"input[{i}] answers {item['call_id']}, no {want} before it")
            if item["call_id"] in answered:
                problems.append(f"input[{i}] answers {item['call_id']} a second time")
            answered.add(item["call_id"])
            pending.discard(item["call_id"])
        elif kind == "reasoning" and item.get("encrypted_content") is not None:
            summary = "\n".join(p.get("text", "") for p in item.get("summary") or [])
            if item["encrypted_content"] != signature(summary):
                problems.append(f"input[{i}] is a reasoning item whose encrypted_content "
                                "does not match it")
        elif kind == "message" and item.get("role") == "user" and pending:
            problems.append(f"calls {sorted(pending)} unanswered before input[{i}]")
    if pending:
        problems.append(f"calls {sorted(pending)} are never answered")
    names = [t.get("name") or t.get("type") for t in body.get("tools") or []]
    if len(names) != len(set(names)):
        problems.append(f"tools declared twice: {names}")
    return problems


def chat(body: dict[str, Any]) -> list[str]:
    """What OpenAI's Chat Completions refuses: a tool message that answers no call of the
    assistant message before it, a call left unanswered before the next turn, arguments
    that are not JSON, tools declared twice, a message without content or calls."""
    problems: list[str] = []
    open_calls: set[str] = set()
    for i, m in enumerate(body.get("messages") or []):
        role = m.get("role")
        if role == "tool":
            if m.get("tool_call_id") not in open_calls:
                problems.append(f"messages[{i}] answers {m.get('tool_call_id')}, which no "
                                "call before it made")
            open_calls.discard(m.get("tool_call_id"))
            continue
        if open_calls:
            problems.append(f"calls {sorted(open_calls)} unanswered before messages[{i}]")
            open_calls = set()
        if role == "assistant":
            for call in m.get("tool_calls") or []:
                open_calls.add(call["id"])
                try:
                    json.loads(call["function"]["arguments"])
                except ValueError:
                    problems.append(f"messages[{i}] has arguments that are not JSON")
            if not m.get("content") and not m.get("tool_calls"):
                problems.append(f"messages[{i}] has neither content nor calls")
        elif role not in ("system", "developer", "user"):
            problems.append(f"messages[{i}] has the role {role!r}")
        elif not m.get("content"):
            problems.append(f"messages[{i}] ({role}) is empty")
    if open_calls:
        problems.append(f"calls {sorted(open_calls)} are never answered")
    names = [(t.get("function") or {}).get("name") for t in body.get("tools") or []]
    if len(names) != len(set(names)):
        problems.append(f"tools declared twice: {names}")
    return problems


def gemini(body: dict[str, Any]) -> list[str]:
    """What Gemini's generateContent refuses: a role other than user and model, a content
    without parts, a function call turn not followed by as many responses as it made
    calls, and (thinking models) a call of the current turn whose thought signature is
    missing or not the one the model gave."""
    from tests.agents.wire.gemini import signature as thought_signature

    problems: list[str] = []
    contents = body.get("contents") or []
    if not contents:
        problems.append("no contents")
    # The current turn: from the last user content that is the user's words on.
    asked = max((i for i, c in enumerate(contents) if c.get("role", "user") == "user"
                 and any("text" in p for p in c.get("parts") or [])), default=0)
    for i, c in enumerate(contents):
        role, parts = c.get("role", "user"), c.get("parts") or []
        if role not in ("user", "model"):
            problems.append(f"contents[{i}] has the role {role!r}")
        if not parts or any(not p for p in parts):
            problems.append(f"contents[{i}] has an empty part or none")
        calls = [p for p in parts if "functionCall" in p]
        for n, p in enumerate(calls):
            call_id = str(p["functionCall"].get("id") or p["functionCall"]["name"])
            given = p.get("thoughtSignature")
            if given is not None and given != thought_signature(p["functionCall"]):
                problems.append(f"contents[{i}] changed the thought signature of {call_id}")
            if given is None and n == 0 and i > asked:
                problems.append(f"contents[{i}] dropped the thought signature of {call_id}")
        if calls:
            after = contents[i + 1] if i + 1 < len(contents) else None
            answers = [p for p in (after or {}).get("parts") or [] if "functionResponse" in p]
            if after is None or after.get("role", "user") != "user" or \
                    len(answers) != len(calls):
                problems.append(f"contents[{i}] makes {len(calls)} calls; the next content "
                                f"answers {len(answers)}")
    names = [f.get("name") for t in body.get("tools") or []
             for f in t.get("functionDeclarations") or []]
    if len(names) != len(set(names)):
        problems.append(f"tools declared twice: {names}")
    return problems

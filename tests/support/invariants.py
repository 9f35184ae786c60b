"""DESIGN section 3's invariants, checked on wire output in each format's own terms."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from app.engine.reading.textactions import (
    console_command,
    is_console_output,
    is_observation,
    shapes,
)

MARKER = "[contextsynth]"


def _users(texts: list[str]) -> list[str]:
    """The user's own words among a list of user texts: not the service's notes, and not
    a tool's output that came back as a user message after a text action, nor a command
    typed at a harness's console and what it printed (which the engine may fold into a
    note or cut, as it does a call and its result). The first is the task, always the
    user's."""
    def typed(i: int) -> bool:
        return 0 < i < len(texts) - 1 and console_command(texts[i]) is not None \
            and is_console_output(texts[i + 1])

    harness = _repeated_shapes(texts)
    bracketed = _bracketed_harness(texts)
    return [t for i, t in enumerate(texts)
            if not t.startswith(MARKER) and (i == 0 or not (
                is_observation(t) or typed(i) or (typed(i - 1) and not typed(i - 2))
                or not harness.isdisjoint(shapes(_first_text(t)))
                or (bracketed and _BRACKET.match(t) is not None
                    and not any(tag in t for tag in _USERS_TAGS))))]


# A text a harness writes as the user opens with a bracketed label ("[read_file for 'a.py'.
# Reading multiple files at once...] Result:", "[ERROR] You did not use a tool",
# "[TASK RESUMPTION]"): where most user texts after the task do, those are the harness's,
# each label too rare to repeat as a shape; the user's words it carries come in a tag.
_BRACKET = re.compile(r"\[[A-Za-z_][\w ]*[\]:' ]")
_USERS_TAGS = ("<answer>", "<feedback>", "<user_message>")


def _bracketed_harness(texts: list[str]) -> bool:
    after = [_first_text(t) for t in texts[1:] if not t.startswith(MARKER)]
    return len(after) >= 3 and \
        sum(1 for t in after if _BRACKET.match(t) is not None) * 2 > len(after)


def _first_text(text: str) -> str:
    """A user message's first text: content written as a list of parts comes as JSON."""
    if not text.startswith("[{"):
        return text
    try:
        parts = json.loads(text)
    except ValueError:
        return text
    return next((p["text"] for p in parts if isinstance(p, dict)
                 and isinstance(p.get("text"), str)), text)


def _repeated_shapes(texts: list[str]) -> frozenset[str]:
    """The shapes a run's harness opens its results with (``reading.textactions``): one
    that opens at least 3 of the user texts after the task and a fifth of them. Looser
    than the engine's reading, which counts only the texts right after an action."""
    counts: dict[str, int] = {}
    for t in texts[1:]:
        for shape in set(shapes(_first_text(t))):
            counts[shape] = counts.get(shape, 0) + 1
    least = max(3, 0.2 * (len(texts) - 1))
    return frozenset(shape for shape, n in counts.items() if n >= least)


# A block on lines of its own, ``<tag>`` through ``</tag>``: a harness appends one to what
# it sends as the user (environment details), and a tag that opens such a block in at
# least this many user texts is the harness's, not the user's words.
_BLOCK = re.compile(r"^[ \t]*<([a-z][a-z0-9_]*)>[ \t]*\n.*?^[ \t]*</\1>[ \t]*$\n?",
                    re.MULTILINE | re.DOTALL)
_HARNESS_BLOCKS = 3


def _kept_in_order(before: list[str], after: list[str]) -> None:
    """Every user's word of ``before`` is in ``after``, verbatim and in order; what else
    ``after`` holds is the service's notes and the tools' outputs, whole or cut. A block
    the harness appends to many user texts is not the user's: a copy a newer message
    shows again may go."""
    tags = _harness_tags(before)
    words = [_without_blocks(w, tags) for w in _users(before)]
    rest = iter(_without_blocks(t, tags) for t in after if not t.startswith(MARKER))
    missing = [w for w in words if not any(t == w for t in rest)]
    assert missing == [], f"user messages dropped or changed: {[m[:80] for m in missing]}"


def _texts_of(text: str) -> list[str]:
    """A user text's texts: each text part of content written as a list of parts."""
    if not text.startswith("[{"):
        return [text]
    try:
        parts = json.loads(text)
    except ValueError:
        return [text]
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]


def _harness_tags(texts: list[str]) -> frozenset[str]:
    counts: dict[str, int] = {}
    for t in texts[1:]:
        for tag in {m.group(1) for part in _texts_of(t) for m in _BLOCK.finditer(part)}:
            counts[tag] = counts.get(tag, 0) + 1
    return frozenset(tag for tag, n in counts.items() if n >= _HARNESS_BLOCKS)


def _without_blocks(text: str, tags: frozenset[str]) -> str:
    """``text`` without the harness's blocks: its words, as the user wrote them."""
    if not tags:
        return text
    return "\n".join(_BLOCK.sub(lambda m: "" if m.group(1) in tags else m.group(0), part
                                ).rstrip() for part in _texts_of(text))


def _user_texts_openai(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        if m.get("role") in ("user", "system", "developer"):
            c = m.get("content")
            out.append(c if isinstance(c, str) else json.dumps(c, sort_keys=True))
    return out


def check_openai(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    # 1. pairing: every result follows its call's assistant message, every call answered
    pending: set[str] = set()
    for i, m in enumerate(after):
        role = m["role"]
        if role == "assistant":
            assert not pending, f"calls {pending} unanswered before messages[{i}]"
            pending = {c["id"] for c in m.get("tool_calls") or []}
        elif role == "tool":
            assert m["tool_call_id"] in pending, f"orphaned tool result at messages[{i}]"
            pending.discard(m["tool_call_id"])
    assert not pending, f"calls {pending} unanswered at the end"
    # 2. roles the provider accepts
    assert all(m["role"] in ("system", "developer", "user", "assistant", "tool") for m in after)
    for m in after:
        for c in m.get("tool_calls") or []:
            json.loads(c["function"]["arguments"])  # arguments stay valid JSON
    # 3. every system and user message kept, verbatim and in order
    _kept_in_order(_user_texts_openai(before), _user_texts_openai(after))
    # 4. unknown fields survive on kept messages
    originals = {json.dumps(m, sort_keys=True) for m in before}
    users = set(_users(_user_texts_openai(before)))
    for m in after:
        if m.get("role") in ("user", "system") and m.get("content") in users:
            assert json.dumps(m, sort_keys=True) in originals


def _blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
    c = m["content"]
    return [{"type": "text", "text": c}] if isinstance(c, str) else c


def check_anthropic(before: dict[str, Any], after: dict[str, Any]) -> None:
    messages = after["messages"]
    # 2. alternation, first message from the user (unless the caller's was not)
    assert messages[0]["role"] == "user" or before["messages"][0]["role"] != "user"
    for a, b in itertools.pairwise(messages):
        assert a["role"] != b["role"], "same-role neighbours must be merged"
    # 1. each tool_result answers a tool_use of the assistant message right before it
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        blocks = _blocks(m)
        if m["role"] == "assistant":
            assert not open_calls, f"calls {open_calls} unanswered before messages[{i}]"
            open_calls = {b["id"] for b in blocks if b["type"] == "tool_use"}
            assert all(b.get("text") != "" for b in blocks if b["type"] == "text")
        else:
            results = [b for b in blocks if b["type"] == "tool_result"]
            assert {b["tool_use_id"] for b in results} == open_calls, f"messages[{i}] pairing"
            # tool results come first in a user message
            kinds = [b["type"] == "tool_result" for b in blocks]
            assert kinds == sorted(kinds, reverse=True)
            open_calls = set()
    assert not open_calls
    # 3. system prompt and all user text kept
    assert after.get("system") == before.get("system")
    user_before = [b["text"] for m in before["messages"] if m["role"] == "user"
                   for b in _blocks(m) if b["type"] == "text"]
    user_after = [b["text"] for m in messages if m["role"] == "user"
                  for b in _blocks(m) if b["type"] == "text"]
    _kept_in_order(user_before, user_after)



def check_gemini(before: dict[str, Any], after: dict[str, Any]) -> None:
    contents = after["contents"]
    assert contents[0]["role"] == "user" or before["contents"][0]["role"] != "user"
    for a, b in itertools.pairwise(contents):
        assert a["role"] != b["role"], "user/model must alternate"
    assert all(c["role"] in ("user", "model") for c in contents)
    # 1. each response answers a call of the model turn right before it, every call answered
    open_calls: list[str] = []
    for i, c in enumerate(contents):
        if c["role"] == "model":
            assert not open_calls, f"calls {open_calls} unanswered before contents[{i}]"
            open_calls = [p["functionCall"]["name"] for p in c["parts"] if "functionCall" in p]
        else:
            answered = [p["functionResponse"]["name"] for p in c["parts"]
                        if "functionResponse" in p]
            assert sorted(answered) == sorted(open_calls), f"contents[{i}] pairing"
            open_calls = []
    assert not open_calls
    # 3. the system instruction and every user text kept
    assert after.get("systemInstruction") == before.get("systemInstruction")
    texts = [p["text"] for c in before["contents"] if c["role"] == "user"
             for p in c["parts"] if "text" in p]
    kept = [p["text"] for c in contents if c["role"] == "user" for p in c["parts"]
            if "text" in p]
    _kept_in_order(texts, kept)


def check_responses(before: dict[str, Any], after: dict[str, Any]) -> None:
    items = after["input"]
    # 1. every output follows its call, every call has its output
    pending: set[str] = set()
    seen_calls: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "function_call":
            pending.add(item["call_id"])
            seen_calls.add(item["call_id"])
            json.loads(item["arguments"])
        elif kind == "function_call_output":
            assert item["call_id"] in pending, f"orphaned output at input[{i}]"
            pending.discard(item["call_id"])
        elif kind == "message" and item["role"] != "assistant":
            assert not pending, f"calls {pending} unanswered before input[{i}]"
    assert not pending
    # reasoning items stay right before the calls they led to
    for a, b in itertools.pairwise(items):
        if a.get("type") == "reasoning":
            assert b.get("type") in ("function_call", "message"), "reasoning split from its call"
    # 3. instructions and every user message kept
    assert after.get("instructions") == before.get("instructions")

    def user_texts(xs: list[dict[str, Any]]) -> list[str]:
        return [p["text"] for x in xs if x.get("role") == "user" for p in x["content"]]

    _kept_in_order(user_texts(before["input"]), user_texts(items))

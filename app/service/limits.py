"""Request limits: those that apply to every job, the bounds of each job's lists
(``ListBound``, declared by the request models), and finding the conversation in a
payload. Every refusal names the setting that sets the limit."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from app.engine.errors import LimitExceeded
from app.engine.transcript.formats import Payload, WireFormat
from app.engine.transcript.formats import conversation as format_conversation
from app.engine.transcript.formats.size import content_chars, conversation_chars
from app.settings import Settings

# Where a request carries its conversation, in any wire format: measured per message.
CONVERSATION_KEYS = frozenset({"messages", "contents", "input"})


class SettingExceeded(LimitExceeded):
    """A request over a limit the operator configures: the problem names the setting
    (``limit``, as an environment variable) and its value, so a caller knows what to cut
    and an operator what to raise."""

    def __init__(self, detail: str, *, setting: str, value: int, pointer: str) -> None:
        super().__init__(detail, pointer=pointer)
        self.setting = setting
        self.value = value

    def fields(self) -> dict[str, Any]:
        return {"limit": env_name(self.setting), "limit_value": self.value}


def env_name(setting: str) -> str:
    """The environment variable of a ``Settings`` field."""
    return str(Settings.model_config.get("env_prefix", "")) + setting.upper()


def _items(value: Any) -> int | None:
    return len(value) if isinstance(value, list) else None


@dataclass(frozen=True, slots=True)
class ListBound:
    """At most ``Settings.<setting>`` items in each list at ``path`` (keys from the top
    of the body, ``*`` for every item of a list), or in all of them together when
    ``total``. ``count`` says how many items a value holds (None: not a list, which is
    left to the schema); ``what`` names them, ``advice`` says how to send fewer."""

    path: tuple[str, ...]
    setting: str
    what: str
    advice: str
    total: bool = False
    count: Callable[[Any], int | None] = _items


def check_bounds(body: Any, bounds: tuple[ListBound, ...], settings: Settings) -> None:
    """Raise on the first list over its bound. Run on the parsed JSON before any model
    reads it: validating 100,000 items, only to refuse them, held the worker for seconds.
    Counting costs a ``len`` per list; ``bounds`` list the outer lists first, so an inner
    path is walked only through an outer list within its bound."""
    for bound in bounds:
        limit: int = getattr(settings, bound.setting)
        found = [(pointer, n) for pointer, value in _reach(body, bound.path, "")
                 if (n := bound.count(value)) is not None]
        if bound.total:
            # Points at the list that holds them all: the path up to its first ``*``.
            outer = bound.path[: bound.path.index("*")] if "*" in bound.path else bound.path
            total = sum(n for _, n in found)
            over = [("/" + "/".join(map(_escaped, outer)), total, "holds, in all,")] \
                if total > limit else []
        else:
            over = [(pointer, n, "has") for pointer, n in found if n > limit][:1]
        for pointer, n, has in over:
            raise SettingExceeded(
                f"{pointer} {has} {n} {bound.what}; this service takes at most {limit} "
                f"({env_name(bound.setting)}). {bound.advice}",
                setting=bound.setting, value=limit, pointer=pointer)


def _reach(value: Any, path: tuple[str, ...], pointer: str) -> Iterator[tuple[str, Any]]:
    """The values at ``path`` under ``value``, with their JSON Pointers."""
    if not path:
        yield pointer, value
        return
    key, rest = path[0], path[1:]
    if key == "*":
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _reach(item, rest, f"{pointer}/{i}")
    elif isinstance(value, dict) and key in value:
        yield from _reach(value[key], rest, f"{pointer}/{_escaped(key)}")


def count_lines(pattern: str) -> Callable[[Any], int | None]:
    """A text's items as the lines that match ``pattern`` (for a list sent as text,
    such as a scratchpad's ``Action:`` lines): one scan in C, however long the text."""
    lines = re.compile(pattern, re.MULTILINE)

    def count(value: Any) -> int | None:
        return sum(1 for _ in lines.finditer(value)) if isinstance(value, str) else None
    return count


def check_limits(payload: Payload, formats: Mapping[str, WireFormat], settings: Settings,
                 ) -> int:
    """Raise on a limit; return the characters of content, to size the work. Limits come
    before the format is resolved: an oversized payload is not read for its shapes."""
    key, messages = _conversation(payload, formats)
    limit = settings.max_messages
    if len(messages) > limit:
        raise SettingExceeded(
            f"the request has {len(messages)} messages; this service accepts at most "
            f"{limit} ({env_name('max_messages')}). Send the most recent {limit}, or "
            "compress in parts.", setting="max_messages", value=limit, pointer=f"/{key}")
    most = settings.max_message_chars
    total, over = conversation_chars(messages, most)
    if over >= 0:
        raise SettingExceeded(
            f"{key}[{over}] has {content_chars(messages[over])} characters of content; the "
            f"limit is {most} ({env_name('max_message_chars')}). Cut the message (for "
            "example a huge tool output) before sending.", setting="max_message_chars",
            value=most, pointer=f"/{key}/{over}")
    return total


def check_texts(body: Any, limit: int, skip: frozenset[str]) -> None:
    """Raise on the first string in ``body`` longer than ``limit`` characters (memories,
    tool outputs, observations, scratchpads, questions...). Every step of a job reads a
    text whole, holding the interpreter while it does: the limit bounds how long any
    one step can keep other requests, /healthz included, waiting. Top-level keys in
    ``skip`` (the conversation) are measured per message by ``check_limits``."""
    stack: list[tuple[Any, str]] = [(v, f"/{k}") for k, v in body.items() if k not in skip] \
        if isinstance(body, dict) else [(body, "")]
    while stack:
        value, pointer = stack.pop()
        if isinstance(value, str):
            if len(value) > limit:
                raise SettingExceeded(
                    f"{pointer or '/'} has {len(value)} characters; the limit for one text "
                    f"is {limit} ({env_name('max_message_chars')}). Cut it (for example a "
                    "huge tool output or memory) before sending.",
                    setting="max_message_chars", value=limit, pointer=pointer or "/")
        elif isinstance(value, dict):
            stack.extend((v, f"{pointer}/{_escaped(str(k))}") for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{pointer}/{i}") for i, v in enumerate(value))


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _conversation(payload: Payload, formats: Mapping[str, WireFormat]) -> tuple[str, list[Any]]:
    """The key and the list of messages, contents or input items, under the first key of
    a format that the payload carries."""
    for wire in formats.values():
        found = format_conversation(payload, wire)
        if found:
            return wire.keys[0], found
    return "messages", []

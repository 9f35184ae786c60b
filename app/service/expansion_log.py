"""What the model read through the expand tool, given back to its conversation.

The proxy answers the expand tool itself and the client never sees a round (see
``expand_tool``), so the client's next request holds the model's answer but not the
calls and results that came before it. This remembers them per conversation, anchored
where they happened in the client's own history: after its message at ``at - 1`` (known
by a fingerprint of its text), before the answer at ``at``. When a later request of the
conversation has that message there and an answer after it, the calls and results go
back in before the answer, so the model's history is the one it actually had, and
what it read is compacted with the rest like any tool result.

Records live in the cache (Redis when configured, so any replica finds them) for as
long as handles do, a few per conversation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.adapters import jsoncodec
from app.adapters.cache import Cache, expansions_key

# Records kept per conversation: the newest, for the turns an agent is still sending.
MOST_RECORDS = 16
# Text of an item that says nothing of what it says: where an Anthropic agent moves
# its cache mark between calls, and the fields SDKs fill in or leave out.
_IGNORED = frozenset({"cache_control", "status", "annotations", "logprobs", "index"})
# What an answer item is, where the conversation holds it.
_SAID_ROLES = frozenset({"assistant", "model"})
_SAID_TYPES = frozenset({"message", "function_call", "reasoning"})


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where a request's answer goes in its conversation: after ``at`` items, the last
    of them with this fingerprint."""

    at: int
    before: str


def fingerprint(item: Any) -> str:
    """The item's text and ids, as a hash: the same for a message an SDK wrote back
    with another field order, a string where a list of text parts was, or a moved
    cache mark."""
    words: list[str] = []
    _texts(item, words)
    return hashlib.blake2b(" ".join(" ".join(words).split()).encode(
        "utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _texts(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key in sorted(value):
            if key not in _IGNORED and key != "role" and key != "type":
                _texts(value[key], out)
    elif isinstance(value, list):
        for item in value:
            _texts(item, out)


def anchor(conversation: Sequence[Any]) -> Anchor | None:
    """Where this request's answer will follow, in the client's coordinates."""
    return Anchor(len(conversation), fingerprint(conversation[-1])) if conversation else None


def _id(item: Any) -> str | None:
    found = item.get("id") if isinstance(item, dict) else None
    return found if isinstance(found, str) and found else None


def _said(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    return item.get("role") in _SAID_ROLES or (
        "role" not in item and item.get("type") in _SAID_TYPES)


class ExpansionLog:
    """The expand rounds of each conversation, by tenant."""

    def __init__(self, cache: Cache, ttl_s: float) -> None:
        self._cache = cache
        self._ttl_s = ttl_s

    async def record(self, tenant: str, conversation: str, where: Anchor,
                     items: list[Any]) -> None:
        """Remember ``items`` (the rounds' calls and results) to go in at ``where``."""
        if not items:
            return
        key = expansions_key(tenant, conversation)
        records = [r for r in await self._records(key) if r.get("at") != where.at]
        records.append({"at": where.at, "before": where.before, "items": items})
        await self._cache.set(key, jsoncodec.dumps(records[-MOST_RECORDS:]), self._ttl_s)

    async def replayed(self, tenant: str, conversation: str,
                       items: list[Any]) -> list[Any] | None:
        """``items`` with every remembered round back in its place, or None when no
        round of this conversation belongs in it."""
        records = await self._records(expansions_key(tenant, conversation))
        fits = [r for r in records if self._fits(r, items)]
        if not fits:
            return None
        out = list(items)
        # From the last place to the first: each place is in the client's coordinates.
        for record in sorted(fits, key=lambda r: int(r["at"]), reverse=True):
            at = int(record["at"])
            # An item the client was shown too (a Responses stream shows the rounds' text
            # and reasoning) comes once, where the model had it: before its call.
            known = {_id(i) for i in record["items"]} - {None}
            rest = [i for i in out[at:] if _id(i) not in known]
            out[at:] = [*record["items"], *rest]
        return out

    @staticmethod
    def _fits(record: dict[str, Any], items: list[Any]) -> bool:
        at = record.get("at")
        if not isinstance(at, int) or not 0 < at < len(items):
            return False
        if not isinstance(record.get("items"), list) or not _said(items[at]):
            return False
        return fingerprint(items[at - 1]) == record.get("before")

    async def _records(self, key: str) -> list[dict[str, Any]]:
        raw = await self._cache.get(key)
        if raw is None:
            return []
        try:
            found = jsoncodec.loads(raw)
        except ValueError:
            return []
        return [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []

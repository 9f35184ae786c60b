"""The conversation key: what a router hashes on so that an agent's steps reach the
replica that remembers its conversation (see app.adapters.warmpath).

A caller may send ``x-contextsynth-conversation``; it comes back as sent. Without
one, the service derives a key from how the conversation starts (its system prompt
and first messages, which an agent resends unchanged at every step) and returns it,
so a client can echo it from its next call on and an ingress can route on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

HEADER = "x-contextsynth-conversation"
# The items the key is made of: the first two of the conversation (the task, and its
# first answer or the first user message after a system one).
_ITEMS = 2
# Beside the conversation's list, the keys that hold its system prompt.
_SYSTEM_KEYS = ("system", "systemInstruction", "system_instruction", "instructions")
_MAX_KEY = 128


def conversation_key(sent: str | None, body: Any,
                     conversation_keys: tuple[str, ...]) -> str | None:
    """The caller's key when it sent a usable one, else one made from ``body``'s start;
    None for a body with no conversation."""
    if sent and len(sent) <= _MAX_KEY and sent.isprintable():
        return sent
    if not isinstance(body, Mapping):
        return None
    items = next((body[k] for k in conversation_keys if isinstance(body.get(k), list)), None)
    if not items:
        return None
    start = {"system": [body.get(k) for k in _SYSTEM_KEYS], "items": items[:_ITEMS]}
    try:
        text = orjson.dumps(start, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # a lone surrogate: the standard encoder escapes it
        text = repr(start).encode("utf-8", "surrogatepass")
    return "cv_" + hashlib.blake2b(text, digest_size=12).hexdigest()

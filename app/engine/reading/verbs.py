"""Which tools change state, read from their names: what such a call changed stays in an
aged note, as a write does, while reads (``get_``, ``list_``, ``search_``) age out."""

from __future__ import annotations

import re

# A tool name's first word: up to "_", "-", "." or a capital (setConfig).
_VERB = re.compile(r"[A-Za-z][a-z0-9]*")
_STATE_VERBS = frozenset({
    "add", "apply", "approve", "assign", "book", "cancel", "change", "charge", "close",
    "commit", "confirm", "create", "delete", "deploy", "disable", "edit", "enable",
    "exchange", "grant", "insert", "install", "kill", "merge", "modify", "move", "patch",
    "pay", "post", "publish", "push", "put", "refund", "register", "reject", "remove",
    "rename", "replace", "reset", "restart", "revoke", "save", "schedule", "send", "set",
    "start", "stop", "submit", "toggle", "transfer", "update", "upload", "write"})


def changes_state(name: str) -> bool:
    """Whether a tool's name says it changes something (``set_config``, ``cancelOrder``,
    ``book-flight``): its first word is a verb of change."""
    verb = _VERB.match(name)
    return verb is not None and verb.group(0).lower() in _STATE_VERBS


# The names of a tool that ends the task: its result comes back only when the run goes
# on. Whole names, so that a tool that finishes something else (``finish_booking``,
# ``get_completions``) is not one.
_ENDS = re.compile(r"(?:attempt_?completion|complete_?task|task_?complete|finish(?:_task)?"
                   r"|submit|final_?answer|done)", re.IGNORECASE)


def ends_task(name: str) -> bool:
    """Whether a tool's name says it hands the finished task back. A run that goes on
    after such a call's result was sent back to work: the user's feedback, or the
    harness refusing the finish."""
    return _ENDS.fullmatch(name) is not None

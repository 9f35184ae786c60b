"""Whether a run's shape was read: the engine compacts by what it reads, and a run it
cannot read is better sent as a window would send it than guessed at.

Read, a run's work is calls and results (on the wire, or lifted from its text) and its
user messages are people's words: short, and worth keeping. Unread, a harness's outputs
come back as user messages the engine takes for the user's, kept whole on every call,
while the agent's own actions, which it goes on to use, are cut to their gist. So a run
is unread when long user messages, each right after an agent's turn that made no call,
hold a large share of what came after the task.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.reading.textactions import asks_user
from app.engine.transcript.model import Message

# A user message this long after a turn without calls is more likely a harness's output
# than a person's words (the corpus's people write a few hundred characters at most).
LONG_CHARS = 1_000
# A run is unread when at least this many such messages hold this share of its text
# after the head.
_LEAST_UNREAD = 3
_UNREAD_SHARE = 0.4


def unread(messages: Sequence[Message], head_stop: int) -> tuple[Message, ...]:
    """The long user messages after the head that answer a turn without calls: nothing
    read them as results. A user's answer to the agent's question is read, as theirs."""
    return tuple(m for previous, m in zip(messages[head_stop - 1:], messages[head_stop:],
                                          strict=False)
                 if m.role == "user" and previous.role == "assistant"
                 and not previous.tool_calls and len(m.text) >= LONG_CHARS
                 and not asks_user(previous))


def read_with_confidence(messages: Sequence[Message], head_stop: int) -> bool:
    """Whether the run's shape was read (see the module's docstring)."""
    found = unread(messages, head_stop)
    if len(found) < _LEAST_UNREAD:
        return True
    total = sum(len(m.text) for m in messages[head_stop:])
    return sum(len(m.text) for m in found) < _UNREAD_SHARE * total

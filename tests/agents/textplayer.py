"""A player for the programs whose model acts in its text, not through a tools API
(mini-swe-agent's fenced commands, Aider's edit blocks and shell blocks).

Such a request has no call id to answer: the player knows the result of its last step
by finding its own last reply among the request's messages (each reply names its step,
so no two are alike) and reading what came after it, or, for a program that puts what
the model asked to see elsewhere in the request (Aider adds a file to its file list,
not after the reply), the whole request. A request without its last reply is a retry or
a side request and gets the same answer again. The proxy's expand tool is still a tool:
offered on a compacted request, it is called as ``ScriptedPlayer`` calls it, and the
round's result comes back as a tool message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tests.agents.plan import FINAL, Script, Step
from tests.agents.script import EXPAND_TOOL, Call, Result, Seen, Turn, new_id
from tests.agents.wire.chat import text_of

# A step as the reply text that takes it (its number, to tell replies apart).
TextMap = Callable[[Step, int, str], str]


@dataclass
class TextActions:
    """A program's way of acting in text: ``write`` makes a step's reply, ``final`` the
    reply that ends the work, ``side`` tells a side request (a commit message, a
    summary) from a working one, ``whole``: read a result from the whole request."""

    write: TextMap
    final: str = FINAL
    side: Callable[[Seen], bool] = lambda seen: False
    side_answer: str = "Fix the discount rounding"
    whole: bool = False


def _after(seen: Seen, reply: str) -> str | None:
    """The text of the messages after the last assistant message that is ``reply``,
    or None when the request does not hold it."""
    messages = seen.body.get("messages") or []
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "assistant" and \
                text_of(m.get("content")).strip().endswith(reply.strip()):
            return "\n".join(text_of(n.get("content")) for n in messages[i + 1:])
    return None


@dataclass
class TextPlayer:
    actions: TextActions
    repo: str
    script: Script = field(default_factory=Script)
    side_requests: list[Seen] = field(default_factory=list)
    last: Turn | None = None
    steps_taken: int = 0

    def play(self, seen: Seen) -> Turn:
        if self.actions.side(seen):
            self.side_requests.append(seen)
            return Turn(text=self.actions.side_answer)
        self.script.advance(seen)  # the expand call's result comes as a tool message
        if self.script.pending is not None and self.last is not None:
            if self.last.calls:
                return self.last  # the round did not come back: the same call again
            after = _after(seen, self.last.text)
            if after is None:
                return self.last  # a retry: the same reply again
            result = seen.text if self.actions.whole else after
            self.script.advance(replace(seen, results=(Result(self.script.pending, result),)))
        handle = self.script.wants_expand(seen)
        if handle is not None:
            call = Call(EXPAND_TOOL, {"handle": handle}, new_id("call_"))
            # No text with it: in a stream, a round's text reaches the program as part
            # of the answer, and the reply it then sends back would not be the step's.
            return self._made(Turn(calls=(call,)), call.id)
        step = self.script.next_step()
        if step is None:
            self.last = None
            return Turn(text=self.actions.final)
        self.steps_taken += 1
        turn = Turn(text=self.actions.write(step, self.steps_taken, self.repo))
        return self._made(turn, f"text-step-{self.steps_taken}")

    def _made(self, turn: Turn, pending: str) -> Turn:
        self.script.pending = pending
        self.last = turn
        return turn

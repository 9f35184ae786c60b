"""A player that walks the plan (``tests.agents.plan``) with one program's tools.

What differs between programs is only how a neutral step becomes a call of their own
tools (``Tools``: Claude Code's ``Bash``/``Read``/``Edit``, Codex's ``shell`` and
``apply_patch``, ...) and how a side request (a title, a summary: a request without the
program's working tools) is told apart. The rest is here:

- a request carrying the result of the last call moves the script on;
- a request without it (a retry, a request sent twice) gets the same turn again;
- the first request that offers the proxy's expand tool with a handle in its notes gets
  a call of it instead of the next step, once;
- past the last step, the model says what it did and stops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tests.agents.plan import FINAL, Script, Step
from tests.agents.script import EXPAND_TOOL, Call, Seen, Turn, new_id

# A step as one of a program's tool calls (the repository's root given for tools that
# want absolute paths).
ToolMap = Callable[[Step, str], Call]


@dataclass
class Tools:
    """A program's tools: ``working`` names a tool every working request offers (a
    request without it is a side request), ``call`` maps a step, ``id_prefix`` is the
    API's call-id look."""

    working: str
    call: ToolMap
    id_prefix: str
    side_answer: str = "Fix failing pricing tests"


@dataclass
class ScriptedPlayer:
    tools: Tools
    repo: str
    script: Script = field(default_factory=Script)
    side_requests: list[Seen] = field(default_factory=list)
    last: Turn | None = None

    def play(self, seen: Seen) -> Turn:
        if self.tools.working not in seen.tools and EXPAND_TOOL not in seen.tools:
            self.side_requests.append(seen)
            return Turn(text=self.tools.side_answer)
        self.script.advance(seen)
        if self.script.pending is not None and self.last is not None:
            return self.last  # the same request again: the same answer
        handle = self.script.wants_expand(seen)
        if handle is not None:
            call = Call(EXPAND_TOOL, {"handle": handle}, new_id(self.tools.id_prefix))
            return self._made(Turn(thinking="The notes cut what I read first; read it back.",
                                   text="Reading back what the notes cut.", calls=(call,)))
        step = self.script.next_step()
        if step is None:
            self.last = None
            return Turn(thinking="All steps are done.", text=FINAL)
        call = self.tools.call(step, self.repo)
        call = Call(call.name, call.arguments, call.id or new_id(self.tools.id_prefix))
        return self._made(Turn(thinking=f"Next: {step.kind} {step.path or step.command}.",
                               calls=(call,)))

    def _made(self, turn: Turn) -> Turn:
        self.script.pending = turn.calls[0].id
        self.last = turn
        return turn

"""Synthetic agent runs with unique facts planted where real agents lose them.

A run is seeded and uses one style of work (shell, file tools, JSON APIs or
the web) for its filler turns. Into it go one fact of each kind, each a code no
other text contains, planted in the first two thirds of the run so that every
compactor has to decide about it:

- ``task``: a ticket code in the task;
- ``mid-output value``: a value on a line in the middle of a long tool output;
- ``exception``: the message of an exception at the end of a deep traceback;
- ``decision``: the agent's own decision and its reason, in its text;
- ``written file``: a file the agent wrote and a function it defined there;
- ``user constraint``: a constraint the user adds in the middle of the run;
- ``overridden value``: a setting read twice, changed in between: the later
  value must be present and, if the earlier one is too, come after it.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from typing import Any

from app.evaluation.seen import Wire

KINDS = ("task", "mid-output value", "exception", "decision", "written file",
         "user constraint", "overridden value")
STYLES = ("shell", "files", "json", "web")
_WORDS = ("ledger", "invoice", "shard", "replica", "cursor", "bucket", "tenant", "quota",
          "batch", "route", "token", "schema", "index", "queue", "vault", "cache")


@dataclass(frozen=True)
class Fact:
    kind: str
    values: tuple[str, ...]  # all must be present
    earlier: str | None = None  # for overridden values: the stale value


@dataclass
class PlantedRun:
    name: str
    messages: list[Wire] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)


class _Writer:
    def __init__(self, rng: random.Random, style: str) -> None:
        self.rng = rng
        self.style = style
        self.messages: list[Wire] = []
        self._calls = 0

    def code(self, prefix: str = "") -> str:
        body = "".join(self.rng.choice(string.ascii_uppercase + string.digits) for _ in range(5))
        return f"{prefix}{body}"

    def word(self) -> str:
        return self.rng.choice(_WORDS)

    def turn(self, name: str, args: dict[str, Any], output: str, text: str | None = None) -> None:
        self._calls += 1
        call_id = f"call_{self._calls}"
        self.messages.append({"role": "assistant", "content": text, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})

    def lines(self, n: int) -> list[str]:
        return [f"{self.word()}_{i}: {self.rng.randint(10, 9999)} {self.word()} ok"
                for i in range(n)]

    def filler(self) -> None:
        """One ordinary step of the run's style of work."""
        w, n = self.word(), self.rng.randint(12, 40)
        if self.style == "shell":
            self.turn("bash", {"command": f"grep -rn {w} src/ | head -{n}"},
                      "\n".join(f"src/{w}/mod_{i}.py:{self.rng.randint(1, 400)}:    "
                                f"{w}_{i} = load_{w}(cfg)" for i in range(n)))
        elif self.style == "files":
            self.turn("read_file", {"path": f"src/{w}/handler_{n}.py"},
                      "\n".join(f"def step_{i}(ctx):\n    return ctx.{w}[{i}]" for i in range(n)))
        elif self.style == "json":
            rows = [{"id": f"{w}-{i}", "status": "active", "size": self.rng.randint(1, 900)}
                    for i in range(n // 2)]
            self.turn("list_records", {"collection": w, "limit": n},
                      json.dumps({"items": rows, "next": None}))
        else:
            self.turn("fetch_url", {"url": f"https://docs.example.org/{w}/guide"},
                      "\n".join(f"{w.title()} guide, section {i}: configure the {w} "
                                f"before use; see the {self.word()} chapter." for i in range(n)))


def _plant(writer: _Writer, kind: str, task_code: str) -> Fact:
    rng, code = writer.rng, writer.code()
    if kind == "mid-output value":
        above, below = writer.lines(20), writer.lines(20)
        key = f"{writer.word()}_region"
        writer.turn("bash" if writer.style == "shell" else "describe_cluster",
                    {"target": "prod"}, "\n".join([*above, f"{key}: {code}", *below]))
        return Fact(kind, (code,))
    if kind == "exception":
        frames = "\n".join(f'  File "/srv/app/{writer.word()}/m{i}.py", line {rng.randint(5, 500)}'
                           f", in step_{i}\n    value = step_{i + 1}(value)" for i in range(18))
        message = f"ValueError: checksum mismatch for block {code} (expected 0x{code})"
        writer.turn("run_job", {"job": "reconcile", "dry_run": True},
                    f"Traceback (most recent call last):\n{frames}\n{message}")
        return Fact(kind, (code,))
    if kind == "decision":
        writer.messages.append({"role": "assistant", "content": (
            f"The import fails because the {writer.word()} adapter pins an old schema. "
            f"Decision: switch to adapter {code} and keep the schema frozen, since the "
            "migration would break the nightly export.")})
        writer.messages.append({"role": "user", "content": "Go on."})
        return Fact(kind, (code,))
    if kind == "written file":
        module, func = f"src/fixes/patch_{code.lower()}.py", f"settle_{code.lower()}"
        body = f"def {func}(batch):\n    return [row for row in batch if row.ok]\n"
        if writer.style == "shell":
            writer.turn("bash", {"command": f"cat > {module} <<'EOF'\n{body}EOF"}, "")
        else:
            writer.turn("write_file", {"path": module, "content": body}, "File written.")
        return Fact(kind, (module, func))
    if kind == "user constraint":
        writer.messages.append({"role": "user", "content": (
            f"One more thing: never modify the table {code}; billing reads it directly.")})
        writer.messages.append({"role": "assistant", "content": "Understood."})
        return Fact(kind, (code,))
    if kind == "overridden value":
        old, new = str(rng.randint(100000, 499999)), str(rng.randint(500000, 999999))
        writer.turn("get_config", {"key": "max_connections"},
                    f"max_connections: {old}\nsource: defaults")
        for _ in range(3):
            writer.filler()
        writer.turn("set_config", {"key": "max_connections", "value": int(new)},
                    f"updated. max_connections: {new}\nsource: override")
        return Fact(kind, (new,), earlier=old)
    return Fact("task", (task_code,))


def generate(seed: int, style: str, turns: int = 40) -> PlantedRun:
    """One run of about ``turns`` tool calls with every kind of fact planted."""
    rng = random.Random(f"{seed}:{style}")
    writer = _Writer(rng, style)
    task_code = writer.code("PAY-")
    writer.messages += [
        {"role": "system", "content": "You are an engineering agent. Use the tools."},
        {"role": "user", "content": f"Ticket {task_code}: reconcile the failed settlement "
                                    "batches and make the nightly export pass again."},
    ]
    facts = [Fact("task", (task_code,))]
    kinds = [k for k in KINDS if k != "task"]
    rng.shuffle(kinds)
    # Facts go in the first two thirds, spread out; filler around and after them.
    slots = sorted(rng.sample(range(2, max(turns * 2 // 3, len(kinds) + 3)), len(kinds)))
    planted = dict(zip(slots, kinds, strict=True))
    for step in range(turns):
        if step in planted:
            facts.append(_plant(writer, planted[step], task_code))
        else:
            writer.filler()
    writer.messages.append({"role": "assistant", "content": "Summing up the state now."})
    return PlantedRun(f"planted-{style}-{seed}", writer.messages, facts)


def runs(count: int, seed: int = 7) -> list[PlantedRun]:
    """``count`` runs, the styles in turn."""
    return [generate(seed + i, STYLES[i % len(STYLES)]) for i in range(count)]


def survives(fact: Fact, text: str) -> bool:
    """The fact is in the context, and a stale value never reads as the current one."""
    if not all(v in text for v in fact.values):
        return False
    if fact.earlier is None or fact.earlier not in text:
        return True
    return text.rfind(fact.values[0]) > text.rfind(fact.earlier)

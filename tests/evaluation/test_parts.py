"""Where an output's tokens and needed facts are: each message's part, and what a part
alone holds."""

from __future__ import annotations

import pytest

from app.cli import main
from app.engine.prompts import (
    CUT_MARKER,
    LEDGER_HEADER,
    MARKER,
    MASKED_RESULT,
    PRIOR_WORK_HEADER,
)
from app.engine.transcript.tokens import Encoder
from app.evaluation.needed import TokenSets
from app.evaluation.parts import PartTally, add_parts, part_of, parts_table
from app.evaluation.run import EvalOptions, evaluate
from app.evaluation.seen import Wire

# A run long enough that its later calls carry notes.
LONG = "minisweagent-ds-chat-dev-marshmallow-code__marshmallow-1359"


def _call(args: str) -> Wire:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": args}}]}


@pytest.mark.parametrize(("message", "part"), [
    ({"role": "system", "content": "You are an agent."}, "system"),
    ({"role": "user", "content": "Fix the bug in app/db.py"}, "user"),
    ({"role": "user", "content": f"{PRIOR_WORK_HEADER}\n- bash: ls -> a.py"}, "notes"),
    ({"role": "user", "content": f"{MARKER} {LEDGER_HEADER}\n- files created: a.py"},
     "ledger"),
    ({"role": "user", "content": f"{MARKER} Phase: verify. Check it."}, "nudge"),
    ({"role": "assistant", "content": "Done: the fix is in."}, "replies"),
    (_call('{"command": "ls"}'), "calls"),
    ({"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"}, "results"),
    ({"role": "tool", "tool_call_id": "c1",
      "content": "head\n" + CUT_MARKER.format(chars=900, handle="cs_1") + "\ntail"},
     "results cut"),
    ({"role": "tool", "tool_call_id": "c1",
      "content": MASKED_RESULT.format(name="bash", chars=900, first="", handle="cs_1")},
     "results cut"),
])
def test_each_message_has_its_part(message: Wire, part: str) -> None:
    assert part_of(message) == part


def test_a_fact_held_in_two_parts_is_held_by_neither_alone() -> None:
    out: list[Wire] = [
        {"role": "user", "content": f"{PRIOR_WORK_HEADER}\n- read src/app_config.py"},
        _call('{"command": "cat src/app_config.py"}'),
        {"role": "tool", "tool_call_id": "c1", "content": "retry_limit = 17\nport_9000"},
    ]
    parts: dict[str, PartTally] = {}
    wanted = {"src/app_config.py", "retry_limit", "port_9000", "never_seen_42"}
    add_parts(out, [10, 20, 30], wanted, TokenSets(), parts)
    assert parts["notes"] == PartTally(tokens=10, holds=1, only=0)
    assert parts["calls"] == PartTally(tokens=20, holds=1, only=0)
    assert parts["results"] == PartTally(tokens=30, holds=2, only=2)
    table = parts_table("demo", parts, needed=len(wanted))
    # results: half the tokens, half the needed facts alone, 2 per 30 tokens
    assert "\n  results                   50.0%  50.0%  50.0%        66.67" in table


def test_the_eval_adds_up_parts_only_when_asked(encoder: Encoder) -> None:
    options = EvalOptions(steps=3, planted_runs=0, files=(LONG,),
                          only=("synthesize-fast-mid",))
    plain = evaluate(options, encoder, progress=lambda _: None).total
    assert plain["synthesize-fast-mid"].parts == {}
    tallies = evaluate(EvalOptions(**{**options.__dict__, "parts": True}), encoder,
                       progress=lambda _: None).total
    for name in ("none", "synthesize-fast-mid"):
        tally = tallies[name]
        # Every token sent is in one part, and no part holds more than was needed.
        assert sum(p.tokens for p in tally.parts.values()) == tally.tokens_after
        assert all(p.only <= p.holds <= tally.needed for p in tally.parts.values())
    assert "notes" in tallies["synthesize-fast-mid"].parts
    assert set(tallies["none"].parts) <= {"system", "user", "replies", "calls", "results"}


def test_the_cli_prints_a_parts_table_per_compactor(capsys: pytest.CaptureFixture[str],
                                                    ) -> None:
    assert main(["eval", "--steps", "2", "--planted", "0", "--file", LONG,
                 "--compactors", "synthesize-fast-mid", "--parts"]) == 0
    out = capsys.readouterr().out
    assert "\nsynthesize-fast-mid         tokens   holds   alone alone/1k tok" in out
    assert "\n  notes " in out and "alone/1k tok: those per thousand" in out

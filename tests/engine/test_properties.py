"""DESIGN section 3's invariants over generated transcripts, every mode, tier and format."""

import copy

import pytest
from hypothesis import HealthCheck, given, settings

from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import Tier
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.transcript.model import text_message
from app.engine.transcript.tokens import TokenCounter
from tests.support.generate import chat_session, openai_transcript
from tests.support.wire import CASES

RUNS = [(Mode.FAST, None), (Mode.OFF, None), (Mode.CUSTOM, "observation-mask"),
        (Mode.CUSTOM, "fast-rebuild")]


@pytest.fixture(scope="module")
def engine(encoder):
    return Synthesizer(TokenCounter(encoder), builtin_strategies())


def _tokens(engine, wire, payload):
    return engine._counter.exact(wire.parse(payload).messages)


def _invariants_hold(engine, formats, messages, runs):
    """Every format, tier and run of ``runs`` on ``messages``: the wire stays valid, the
    user's words stay, the output is never larger (but for the nudge steer asks for),
    and the caller's payload is never mutated."""
    for name, convert, check in CASES.values():
        payload = convert(messages)
        wire = formats[name]
        sent = copy.deepcopy(payload)
        before = _tokens(engine, wire, payload)
        for mode, strategy in runs:
            for tier in Tier:
                result = engine.run(wire.parse(payload),
                                    SynthesisOptions(mode=mode, tier=tier, strategy=strategy))
                changed = result.compacted or result.nudged
                out = wire.render(result.transcript) if changed else payload
                check(payload, out)
                # 5. never more tokens than the input, but for the nudge steer asks for
                extra = 0
                if result.nudged:
                    extra = engine._counter.messages([text_message("user", result.nudge)])
                assert _tokens(engine, wire, out) <= before + extra
                assert result.tokens_after <= result.tokens_before + extra
        assert payload == sent, "the caller's payload must not be mutated"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(messages=openai_transcript())
def test_invariants_hold_in_every_format(engine, formats, messages):
    _invariants_hold(engine, formats, messages, RUNS)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(messages=chat_session())
def test_invariants_hold_for_agents_that_act_in_their_text(engine, formats, messages):
    # Actions in replies, reports and console output read as calls and results, every
    # request the user typed kept where it was, in every format (Anthropic and Gemini
    # join neighbouring user messages) and tier.
    _invariants_hold(engine, formats, messages, [(Mode.FAST, None)])

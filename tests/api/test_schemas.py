"""The request models take their names from the engine: keys from the formats, modes and
strategies from its enums, so a new format or mode cannot be left out of the contract."""

from typing import get_args

from app.api.schemas.common import CONVERSATION_KEYS, PAYLOAD_KEYS, Conversation
from app.api.schemas.synthesize import ReasoningBundle, SynthesizeRequest
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.reasoning import STRATEGIES
from app.engine.transcript.formats import build_formats


def test_every_key_a_format_reads_is_a_field_of_the_conversation():
    for wire in build_formats().values():
        assert wire.keys[0] in CONVERSATION_KEYS
        assert set(wire.keys) <= set(PAYLOAD_KEYS) <= set(Conversation.model_fields)


def test_modes_and_strategies_are_the_engines():
    mode = ReasoningBundle.model_fields["synthesis"].annotation
    assert {v for arg in get_args(mode) for v in get_args(arg)} == {m.value for m in Mode}
    strategy = SynthesizeRequest.model_fields["strategy"].annotation
    assert get_args(strategy) == STRATEGIES

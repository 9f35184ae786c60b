"""Webhook subscriptions as the operator writes them."""

import re

import pytest
from pydantic import ValidationError

from app.settings import Settings
from tests.support.receiver import SECRET

HOOK = {"url": "https://hooks.example.com/x", "secret": SECRET}


def test_a_misspelt_event_type_fails_at_start_up_naming_the_types():
    named = re.escape("the types are context.synthesized")
    with pytest.raises(ValidationError, match=named) as refused:
        Settings(webhooks=[{**HOOK, "events": ["context.synthesised"]}])
    assert "'context.synthesised'" in str(refused.value)


def test_known_types_and_the_wildcard_are_taken():
    settings = Settings(webhooks=[{**HOOK, "events": ["context.synthesized", "*"]}])
    assert settings.webhooks[0].events == ["context.synthesized", "*"]

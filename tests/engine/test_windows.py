import pytest

from app.engine.errors import InvalidOption
from app.engine.jobs.history.windows import context_window, share_of_window, window_in

TABLE = {"gpt-4o": 128_000, "gpt-4o-mini": 64_000, "o1": 200_000, "gpt-4": 8_192,
         "claude-sonnet-4-5": 200_000, "azure/gpt-4o": 100_000, "llama3.1": 8_192}


@pytest.mark.parametrize(("model", "tokens"), [
    ("gpt-4o", 128_000), ("GPT-4o", 128_000), ("gpt-4o-mini", 64_000),  # exact
    ("openai/gpt-4o", 128_000), ("openrouter/openai/gpt-4o-mini", 64_000),  # prefixed
    ("azure/gpt-4o", 100_000),  # a provider's own window wins over the bare name's
    ("gpt-4o-2024-08-06", 128_000), ("gpt-4o-mini-2024-07-18", 64_000),  # dated
    ("claude-sonnet-4-5@20250929", 200_000), ("llama3.1:8b", 8_192),
    ("openai/gpt-4o-2024-11-20", 128_000),
    ("o1-preview", None), ("gpt-4.5-preview", None), ("my-finetune", None), ("", None),
    (None, None),
])
def test_a_model_is_found_by_its_name_its_bare_name_or_as_a_dated_variant(model, tokens):
    assert window_in(TABLE, model) == tokens


def test_families_answer_only_where_the_table_has_nothing():
    assert window_in({}, "claude-3-5-sonnet-20241022") == 200_000
    assert window_in({"claude-3-5-sonnet-20241022": 100_000},
                     "claude-3-5-sonnet-20241022") == 100_000


@pytest.mark.parametrize(("model", "tokens"), [
    # As LiteLLM's map has them (input limits): gpt-5 takes 272k of its 400k window.
    ("gpt-4o", 128_000), ("openai/gpt-4o", 128_000), ("gpt-4o-2024-08-06", 128_000),
    ("gpt-4", 8_192), ("gpt-5", 272_000), ("gemini-2.5-flash", 1_048_576),
    ("claude-sonnet-4-5-20250929", 200_000), ("o1-preview", None), ("my-finetune", None),
])
def test_the_shipped_table_knows_the_common_models(model, tokens):
    assert context_window(model) == tokens


def test_share_uses_the_given_window_first():
    assert share_of_window(0.5, "gpt-4", None) == 4_096
    assert share_of_window(0.5, "gpt-4", 10_000) == 5_000


def test_share_without_a_window_says_how_to_give_one():
    with pytest.raises(InvalidOption, match="context_window"):
        share_of_window(0.8, "my-finetune", None)

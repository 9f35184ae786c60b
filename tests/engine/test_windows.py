import pytest

from app.engine.errors import InvalidOption
from app.engine.jobs.history.windows import context_window, share_of_window


@pytest.mark.parametrize(("model", "tokens"), [
    ("gpt-4o", 128_000), ("gpt-4o-mini-2024-07-18", 128_000), ("openai/gpt-4.1", 1_047_576),
    ("gpt-4", 8_192), ("gpt-4-0613", 8_192), ("gpt-4-turbo", 128_000), ("gpt-5", 400_000),
    ("o3-mini", 200_000), ("o1", 200_000), ("claude-3-5-sonnet-20241022", 200_000),
    ("claude-sonnet-4-20250514", 200_000), ("gemini-1.5-pro", 2_097_152),
    ("gemini-2.5-flash", 1_048_576),
    ("o1-preview", None), ("llama3.1:8b", None), ("gpt-4.5-preview", None), (None, None),
])
def test_known_families_have_their_window(model, tokens):
    assert context_window(model) == tokens


def test_share_uses_the_given_window_first():
    assert share_of_window(0.5, "gpt-4", None) == 4_096
    assert share_of_window(0.5, "gpt-4", 10_000) == 5_000


def test_share_without_a_window_says_how_to_give_one():
    with pytest.raises(InvalidOption, match="context_window"):
        share_of_window(0.8, "my-finetune", None)

import pytest

from app.engine.compaction.tiers import TIER_BUDGETS, Tier, infer_tier


@pytest.mark.parametrize(("model", "tier"), [
    ("gpt-4o-mini", Tier.MID),
    ("gpt-4o", Tier.LARGE),
    ("gpt-5", Tier.FRONTIER),
    ("claude-opus-4-1", Tier.FRONTIER),
    ("claude-sonnet-4-5", Tier.LARGE),
    ("claude-3-5-haiku-latest", Tier.MID),
    ("gemini-2.5-flash", Tier.MID),
    ("gemini-2.5-pro", Tier.FRONTIER),
    ("deepseek-chat", Tier.LARGE),
    ("ollama/llama3.1:8b", Tier.LOCAL),
    ("qwen2.5-coder:7b", Tier.LOCAL),
    ("o3", Tier.FRONTIER),
    ("something-unknown", None),
    (None, None),
])
def test_model_names_map_to_tiers(model, tier):
    assert infer_tier(model) == tier


def test_budgets_grow_with_the_tier():
    order = [Tier.LOCAL, Tier.MID, Tier.LARGE, Tier.FRONTIER]
    turns = [TIER_BUDGETS[t].full_turns for t in order]
    assert turns == sorted(turns) and turns[0] >= 2
    assert [TIER_BUDGETS[t].argument_chars for t in order] == [2000, 4000, 8000, 8000]
    windows = [TIER_BUDGETS[t].window_tokens for t in order]
    assert windows == sorted(windows) and windows[0] > 0

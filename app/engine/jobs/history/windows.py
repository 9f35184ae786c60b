"""Context windows of well-known models, for triggers given as a share of the window.

Only families whose published window is one number are listed; for any other
model the caller says ``context_window`` itself.
"""

from __future__ import annotations

import re

from app.engine.errors import InvalidOption

# First match wins, so narrower names come before the families they belong to.
_WINDOWS: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(pattern), tokens)
    for pattern, tokens in (
        (r"gpt-4\.1", 1_047_576),
        (r"gpt-4o|gpt-4-turbo|gpt-4-\d{4}-preview", 128_000),
        (r"gpt-4-32k", 32_768),
        (r"gpt-4(?![\w.])", 8_192),
        (r"gpt-3\.5-turbo", 16_385),
        (r"gpt-5", 400_000),
        (r"^o[134](?:-mini|-pro)?(?:-\d{4}-\d{2}-\d{2})?$", 200_000),
        (r"claude-(?:3|sonnet-4|opus-4|haiku-4)", 200_000),
        (r"gemini-1\.5-pro", 2_097_152),
        (r"gemini-(?:1\.5-flash|2\.0|2\.5)", 1_048_576),
    )
)


def context_window(model: str | None) -> int | None:
    """The window of ``model`` in tokens, or None when it is not a known family."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    return next((tokens for pattern, tokens in _WINDOWS if pattern.search(name)), None)


def share_of_window(share: float, model: str | None, window: int | None) -> int:
    """The token count that is ``share`` of the model's window (``window`` wins)."""
    size = window or context_window(model)
    if size is None:
        named = f"the window of model {model!r} is not known" if model else "no model was named"
        raise InvalidOption(
            f"'trigger_share' needs the model's context window, and {named}; send "
            "'context_window' (in tokens) or a 'model' of a known family (GPT, o-series, "
            "Claude, Gemini).", pointer="/trigger_share")
    return max(int(size * share), 1)

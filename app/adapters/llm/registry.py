"""Providers from settings, with their keys read once at start-up."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.adapters.llm.anthropic import AnthropicProvider
from app.adapters.llm.base import Provider
from app.adapters.llm.config import ProviderConfig
from app.adapters.llm.openai_compat import OpenAICompatible

_KINDS: dict[str, Callable[[ProviderConfig, str | None], Provider]] = {
    "openai": OpenAICompatible,
    "azure": OpenAICompatible,
    "anthropic": AnthropicProvider,
}


def build_providers(
    configs: list[ProviderConfig], environ: Mapping[str, str]
) -> dict[str, Provider]:
    return {c.name: _KINDS[c.kind](c, c.resolve_key(dict(environ))) for c in configs}

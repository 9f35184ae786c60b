"""Provider configuration, as it appears in ``CONTEXTSYNTH_LLM_PROVIDERS`` (a JSON list)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class ProviderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="How requests name it in 'synthesis_provider'.")
    kind: Literal["openai", "azure", "anthropic"] = Field(
        "openai", description="openai: any Chat Completions server (OpenAI, Ollama, vLLM, "
        "LM Studio, OpenRouter); azure: the same with an api-key header; anthropic.")
    base_url: str = Field(description="e.g. https://api.openai.com/v1 or "
                          "http://localhost:11434/v1 or https://api.anthropic.com")
    model: str = Field(description="Default model for this provider.")
    api_key: SecretStr | None = Field(None, description="Prefer api_key_env or api_key_file.")
    api_key_env: str | None = Field(None, description="Environment variable with the key.")
    api_key_file: str | None = Field(None, description="File with the key (a mounted secret).")
    timeout_s: float = Field(20.0, gt=0, description="Per HTTP call: a summary of a few "
                             "hundred tokens takes a few seconds; raise it for slow local "
                             "models.")
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"

    def resolve_key(self, environ: dict[str, str]) -> str | None:
        """The key from the first source that has one; read at start-up, never logged."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_env:
            return environ.get(self.api_key_env) or None
        if self.api_key_file:
            return Path(self.api_key_file).read_text(encoding="utf-8").strip() or None
        return None

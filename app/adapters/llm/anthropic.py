"""Anthropic Messages API."""

from __future__ import annotations

from typing import Any

import httpx

from app.adapters.llm.base import Completion, CompletionRequest, LLMBadResponse
from app.adapters.llm.config import ProviderConfig
from app.adapters.llm.http import post_json, usage_from

API_VERSION = "2023-06-01"


class AnthropicProvider:
    max_temperature = 1.0

    def __init__(self, config: ProviderConfig, api_key: str | None) -> None:
        self.name = config.name
        self.default_model = config.model
        self._config = config
        self._headers = {"anthropic-version": API_VERSION}
        if api_key:
            self._headers["x-api-key"] = api_key

    async def complete(self, http: httpx.AsyncClient, request: CompletionRequest) -> Completion:
        config = self._config
        model = request.model or config.model
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "messages": [{"role": m.role, "content": m.content}
                         for m in request.messages if m.role != "system"],
        }
        if system:
            body["system"] = system
        data = await post_json(
            http, f"{config.base_url.rstrip('/')}/v1/messages", headers=self._headers,
            body=body, timeout=config.timeout_s, provider=self.name,
        )
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise LLMBadResponse(f"provider {self.name!r} answered without a content array")
        text = "".join(b.get("text", "") for b in blocks
                       if isinstance(b, dict) and b.get("type") == "text")
        if not text.strip():
            raise LLMBadResponse(f"provider {self.name!r} returned an empty completion")
        return Completion(text=text, model=str(data.get("model") or model), provider=self.name,
                          usage=usage_from(data, "input_tokens", "output_tokens", self.name),
                          cut=data.get("stop_reason") == "max_tokens")

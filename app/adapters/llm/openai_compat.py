"""OpenAI-compatible Chat Completions: OpenAI, Azure OpenAI, Ollama, vLLM, LM Studio, OpenRouter."""

from __future__ import annotations

from typing import Any

import httpx

from app.adapters.llm.base import Completion, CompletionRequest, LLMBadResponse
from app.adapters.llm.config import ProviderConfig
from app.adapters.llm.http import post_json, usage_from


class OpenAICompatible:
    max_temperature = 2.0

    def __init__(self, config: ProviderConfig, api_key: str | None) -> None:
        self.name = config.name
        self.default_model = config.model
        self._config = config
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        if config.kind == "azure" and api_key:
            self._headers = {"api-key": api_key}

    async def complete(self, http: httpx.AsyncClient, request: CompletionRequest) -> Completion:
        config = self._config
        model = request.model or config.model
        body: dict[str, Any] = {
            "model": model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            config.max_tokens_param: request.max_tokens,
        }
        data = await post_json(
            http, f"{config.base_url.rstrip('/')}/chat/completions", headers=self._headers,
            body=body, timeout=config.timeout_s, provider=self.name,
        )
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMBadResponse(
                f"provider {self.name!r} answered without choices[0].message.content") from None
        if not isinstance(text, str) or not text.strip():
            raise LLMBadResponse(f"provider {self.name!r} returned an empty completion")
        finish = data["choices"][0].get("finish_reason")  # an object: its content was read
        return Completion(text=text, model=str(data.get("model") or model), provider=self.name,
                          usage=usage_from(data, "prompt_tokens", "completion_tokens",
                                           self.name), cut=finish == "length")

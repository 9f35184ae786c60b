"""What a tenant may spend the operator's provider key on.

A tenant listed in ``proxy_tenant_keys`` is forwarded with a key the operator pays for,
often one account shared by several tenants. Sent on blindly, any path under ``/v1``
would reach the provider with it: another team's files, stored responses and batches,
the organisation's admin keys. So on a server key a request passes only where the
operator said it may: the conversation routes the proxy compacts (and charges), and
the pass-through routes listed in ``proxy_server_key_routes`` (by default the
read-only model lists and token counts). The operator can also list the models each
tenant may ask for (``proxy_tenant_models``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import unquote

from app.engine.errors import ContextsynthError

# Read-only: listing and describing models, and counting tokens, in each provider's API.
DEFAULT_ROUTES = (
    "GET /v1/models", "GET /v1/models/*",  # OpenAI and Anthropic (Gemini's under /v1 too)
    "POST /v1/responses/input_tokens",  # OpenAI's token count for a Responses request
    "GET /v1beta/models", "GET /v1beta/models/*",
    "POST /v1beta/models/*:countTokens", "POST /v1/models/*:countTokens",
)
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
# A model named in a Gemini path: /v1beta/models/{model}:method.
_GEMINI_MODEL = re.compile(r"/models/([^/:]+):")


class ServerKeyRefused(ContextsynthError):
    """A request the tenant may not make on the operator's key: a 403 in the provider's
    own error shape, which its SDK raises as a permission error."""

    slug = "server-key-refused"
    title = "This request may not be sent with the server's provider key"

    def __init__(self, detail: str, *, upstream: str) -> None:
        super().__init__(detail)
        self.upstream = upstream


class NotAProxyRoute(ContextsynthError):
    """A spelling of a conversation route (a trailing slash, other capitals) that would
    otherwise be passed through uncompacted and uncharged: a 404 naming the real one."""

    slug = "not-a-route"
    title = "No such route: the proxy's conversation routes are spelled exactly"

    def __init__(self, detail: str, *, upstream: str) -> None:
        super().__init__(detail)
        self.upstream = upstream


@dataclass(frozen=True, slots=True)
class _Pattern:
    method: str
    path: str  # `*` stands for one path segment, or part of one

    def matches(self, method: str, path: str) -> bool:
        if method != self.method or path.count("/") != self.path.count("/"):
            return False
        return all(fnmatchcase(part, want) for part, want
                   in zip(path.split("/"), self.path.split("/"), strict=True))


def parse_route(entry: str) -> _Pattern:
    """``"GET /v1/models/*"`` read, or ValueError saying how to write it."""
    method, _, path = entry.strip().partition(" ")
    if method.upper() not in _METHODS or not path.startswith("/"):
        raise ValueError(f"{entry!r} is not a route: write a method and a path, for "
                         "example 'GET /v1/models/*' (* stands for one path segment)")
    return _Pattern(method.upper(), path.strip())


def _plain(path: str) -> bool:
    """No dot segments and nothing percent-encoded that could become one or a slash on
    the way: the path the provider receives is the path that was checked."""
    decoded = unquote(path)
    return decoded == path and not any(part in (".", "..") for part in path.split("/"))


def requested_model(path: str, body: bytes | Mapping[str, Any] | None) -> str | None:
    """The model a provider request asks for: its body's ``model``, or the one a Gemini
    path names."""
    if isinstance(body, Mapping):
        model = body.get("model")
        if isinstance(model, str):
            return model
    found = _GEMINI_MODEL.search(path)
    return unquote(found.group(1)) if found else None


class ServerKeyPolicy:
    def __init__(self, routes: Iterable[str], models: Mapping[str, Sequence[str]]) -> None:
        self._routes = tuple(parse_route(r) for r in routes)
        self._models = {tenant: tuple(names) for tenant, names in models.items()}

    def check_route(self, method: str, path: str, upstream: str) -> None:
        """A pass-through request on a server key goes only to a listed route."""
        method = method.upper()
        if _plain(path) and any(p.matches(method, path) for p in self._routes):
            return
        raise ServerKeyRefused(
            f"{method} {path} is not passed through with the server's provider key: on this "
            "service it reaches the provider only for the conversation routes and the "
            "routes the operator lists in CONTEXTSYNTH_PROXY_SERVER_KEY_ROUTES. Send your "
            "own provider key, or ask the operator to list the route.", upstream=upstream)

    def check_model(self, tenant: str, model: str | None, upstream: str) -> None:
        """On a server key, a tenant whose models the operator listed asks for one of them
        (a pattern such as ``gpt-4.1*`` matches by prefix)."""
        allowed = self._models.get(tenant)
        if allowed is None:
            return
        if model is not None and any(fnmatchcase(model, want) for want in allowed):
            return
        named = f"model {model!r}" if model is not None else "a request that names no model"
        raise ServerKeyRefused(
            f"{named} is not one this tenant may use with the server's provider key; it may "
            f"use: {', '.join(allowed)} (CONTEXTSYNTH_PROXY_TENANT_MODELS).", upstream=upstream)

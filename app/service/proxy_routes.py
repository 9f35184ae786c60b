"""The proxy's routes: which provider route a caller's path is, where a request the proxy
does not compact goes, and a conversation route spelled otherwise refused.

A caller's SDK posts to its provider's own path (``/v1/chat/completions``,
``/v1/messages``, Gemini's ``/v1beta/models/{model}:generateContent``); the route says
which upstream and wire format that is, and the path the upstream takes it at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, quote

from app.service.server_keys import NotAProxyRoute

# Gemini also takes its key in the query (?key=).
KEY_PARAM = "key"


@dataclass(frozen=True, slots=True)
class ProviderRoute:
    upstream: str  # its name in metrics and settings
    format: str  # the wire format of its conversation
    # Appended to the upstream's base URL; a {name} in it is filled in from the request's
    # own path (Gemini names the model there).
    path: str

    def bound(self, params: Mapping[str, str], query: str) -> ProviderRoute:
        """This route for one request: its path's parameters in place, and the query as
        it came (Gemini's ``alt=sse`` asks for a stream there)."""
        path = self.path.format_map({k: quote(v, safe="") for k, v in params.items()})
        return replace(self, path=path + (f"?{query}" if query else ""))


# Gemini's conversation routes, under v1beta (the REST reference, older SDKs) and v1
# (google-genai's default): the upstream's path is the caller's.
_GEMINI_ROUTES = {path: ProviderRoute("gemini", "gemini", path)
                  for version in ("v1beta", "v1")
                  for method in ("generateContent", "streamGenerateContent")
                  for path in (f"/{version}/models/{{model}}:{method}",)}

# The provider routes the proxy serves, by the path (its template) a caller's SDK posts to.
PROVIDER_ROUTES: Mapping[str, ProviderRoute] = {
    "/v1/chat/completions": ProviderRoute("openai", "openai", "/chat/completions"),
    "/v1/messages": ProviderRoute("anthropic", "anthropic", "/v1/messages"),
    "/v1/responses": ProviderRoute("openai", "responses", "/responses"),
    **_GEMINI_ROUTES,
}


# Token counts the proxy answers for what the model would receive: the request as the
# same path's conversation route would compact it, counted by the provider.
COUNT_ROUTES: Mapping[str, ProviderRoute] = {
    "/v1/messages/count_tokens": ProviderRoute("anthropic", "anthropic",
                                               "/v1/messages/count_tokens"),
}


# Which provider a request the proxy does not compact goes to. Under /v1beta, Gemini;
# under /v1, which OpenAI, Anthropic and google-genai share, a header its SDK always
# sends (or Gemini's key in the query) says, and any other request goes to OpenAI.
_PASSED_PREFIXES: Mapping[str, str] = {"/v1beta/": "gemini"}
_SIGNS: Mapping[str, str] = {"anthropic-version": "anthropic", "x-goog-api-key": "gemini",
                             "x-goog-api-client": "gemini"}
_DEFAULT_UPSTREAM = "openai"
# The part of a path an upstream's base URL already holds: OpenAI's names its /v1, the
# others' are the host.
BASE_HOLDS: Mapping[str, str] = {"openai": "/v1"}


def passed_to(path: str, query: str, headers: Sequence[tuple[str, str]]) -> str:
    by_path = next((name for prefix, name in _PASSED_PREFIXES.items()
                    if path.startswith(prefix)), None)
    signed = next((_SIGNS[k.lower()] for k, _ in headers if k.lower() in _SIGNS), None)
    keyed = "gemini" if any(k == KEY_PARAM for k, _ in parse_qsl(query)) else None
    return by_path or signed or keyed or _DEFAULT_UPSTREAM


def _spelled(path: str) -> str:
    """A path as a lenient server would route it: slashes collapsed and trimmed, lower
    case; Gemini's model segment stands as its template's."""
    parts = [p for p in path.lower().split("/") if p]
    if len(parts) == 3 and parts[1] == "models" and ":" in parts[2]:
        parts[2] = "{model}:" + parts[2].partition(":")[2]
    return "/" + "/".join(parts)


_SPELLED_ROUTES = {_spelled(path): path for path in (*PROVIDER_ROUTES, *COUNT_ROUTES)}


def check_spelling(method: str, path: str, upstream: str) -> None:
    """A conversation posted to its route spelled otherwise (``/v1/chat/completions/``,
    ``/v1/Chat/Completions``) is refused, not passed through: the provider may route it
    as the conversation it is, uncompacted and uncharged."""
    exact = _SPELLED_ROUTES.get(_spelled(path))
    if method.upper() == "POST" and exact is not None and exact != path:
        raise NotAProxyRoute(f"{path} is not a route of this proxy; send the request to "
                             f"{exact}, spelled exactly so.", upstream=upstream)

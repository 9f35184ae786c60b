"""The proxy's routes: where a caller's path goes, and a misspelt conversation route."""

import pytest

from app.service.proxy_routes import (
    PROVIDER_ROUTES,
    check_spelling,
    passed_to,
)
from app.service.server_keys import NotAProxyRoute


@pytest.mark.parametrize(("path", "query", "headers", "upstream"), [
    ("/v1beta/models/gemini-3-pro:countTokens", "", [], "gemini"),
    ("/v1/files", "key=abc", [], "gemini"),  # Gemini's key in the query
    ("/v1/messages/batches", "", [("Anthropic-Version", "2023-06-01")], "anthropic"),
    ("/v1/models", "", [("x-goog-api-client", "genai-py")], "gemini"),
    ("/v1/models", "", [("authorization", "Bearer sk-x")], "openai"),
])
def test_a_passed_through_request_goes_to_the_provider_its_path_or_sdk_names(
        path, query, headers, upstream):
    assert passed_to(path, query, headers) == upstream


def test_a_gemini_route_is_bound_to_the_model_and_query_of_the_request():
    route = PROVIDER_ROUTES["/v1beta/models/{model}:streamGenerateContent"]
    bound = route.bound({"model": "gemini-3-pro"}, "alt=sse")
    assert bound.path == "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse"
    assert (bound.upstream, bound.format) == ("gemini", "gemini")


@pytest.mark.parametrize("path", ["/v1/chat/completions/", "/v1/Chat/Completions",
                                  "//v1/messages", "/v1beta/models/x:GenerateContent"])
def test_a_conversation_posted_to_its_route_spelled_otherwise_is_refused(path):
    with pytest.raises(NotAProxyRoute) as refused:
        check_spelling("POST", path, "openai")
    assert "spelled exactly so" in str(refused.value)


def test_the_routes_as_spelled_and_other_paths_pass():
    # Asked only of a path no route matched (a Gemini path with its model filled in is
    # matched by its template first).
    check_spelling("POST", "/v1/chat/completions", "openai")
    check_spelling("GET", "/v1/Chat/Completions", "openai")  # not a conversation
    check_spelling("POST", "/v1/embeddings", "openai")

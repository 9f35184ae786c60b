"""The alert rules and the Grafana dashboard read series the running service exports.

Each query is parsed with a PromQL parser (promql-parser, Prometheus' grammar and type
rules), and every metric and label it names is looked up in what /metrics wrote after
real traffic: a job, a proxied call, errors; once in the default mode (fast, in
memory, no LLM) and once with an LLM provider and a webhook receiver besides."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import promql_parser
import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from app.adapters.metrics import Metrics
from tests.support.build import coding_run
from tests.support.fake_llm import FakeLLM
from tests.support.fake_upstream import FakeUpstream, Scripted
from tests.support.receiver import SECRET, Receiver
from tests.support.subprocess_server import running_service

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DASHBOARD = DEPLOY / "grafana" / "contextsynth.json"

# Labels Prometheus and the Operator's ServiceMonitor put on every scraped series. A
# query may read them; an exported label of the same name would be renamed exported_*.
# (endpoint is the Operator's too, the Service port's name: no query here needs it.)
TARGET_LABELS = frozenset({"namespace", "instance", "job", "pod", "service", "container"})
RESERVED_LABELS = TARGET_LABELS | {"endpoint"}
# Series the rules read that other exporters write, with their labels: the kubelet's
# cAdvisor and kube-state-metrics, as kube-prometheus-stack scrapes them.
EXTERNAL = {
    "container_memory_working_set_bytes": {"container", "pod", "namespace", "image", "id"},
    "kube_pod_container_resource_limits": {"container", "pod", "namespace", "resource",
                                           "unit", "node", "uid"},
}
# The series with a tenant label.
TENANT_SERIES = frozenset({"contextsynth_requests_total", "contextsynth_tokens_total",
                           "contextsynth_rate_limited_total"})
# Grafana's own variables, which no PromQL parser knows: any valid duration will do.
GRAFANA_DURATIONS = re.compile(r"\$__(rate_interval|interval|range)")


@dataclass
class Scrape:
    """What one /metrics page held: each sample name's label names (only samples that
    were written), and the names its families declare (samples or not)."""

    labels: dict[str, set[str]] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, text: str) -> Scrape:
        scrape = cls()
        suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum",
                    "_count", "_created"), "summary": ("_sum", "_count", "_created")}
        for family in text_string_to_metric_families(text):
            scrape.declared.update(
                family.name + s for s in suffixes.get(family.type, ("",)))
            for sample in family.samples:
                scrape.labels.setdefault(sample.name, set()).update(sample.labels)
        return scrape


def _traffic(url: str, upstream: FakeUpstream) -> None:
    """A job, a bad request, an unknown path, proxied calls (one streamed, one the
    provider fails), as a client would send them over HTTP."""
    with httpx.Client(base_url=url, timeout=30) as c:
        assert c.post("/synthesize", json={"messages": coding_run(12)}).status_code == 200
        assert c.post("/synthesize", json={"messages": []}).status_code == 422
        assert c.get("/no-such-path").status_code == 404
        chat = {"model": "gpt-4o-mini", "messages": [
            {"role": "system", "content": "You book flights."},
            *[{"role": "user" if i % 2 == 0 else "assistant",
               "content": f"step {i}: " + "the traveller asked about fares. " * 40}
              for i in range(12)]]}
        key = {"authorization": "Bearer sk-test"}
        assert c.post("/v1/chat/completions", json=chat, headers=key).status_code == 200
        with c.stream("POST", "/v1/chat/completions", json={**chat, "stream": True},
                      headers=key) as streamed:
            assert streamed.status_code == 200 and b"[DONE]" in streamed.read()
        upstream.script.append(Scripted(500, {"error": {"message": "upstream broke"}}))
        assert c.post("/v1/chat/completions", json=chat, headers=key).status_code == 500


def _scrape(url: str) -> str:
    return httpx.get(f"{url}/metrics", timeout=10).text


@pytest.fixture(scope="module")
def default_scrape() -> tuple[Scrape, str]:
    """The default mode: fast, in memory, no LLM, no webhooks; the proxy's provider
    faked on loopback."""
    with FakeUpstream() as upstream, pytest.MonkeyPatch.context() as env:
        for name in [k for k in os.environ if k.startswith("CONTEXTSYNTH_")]:
            env.delenv(name)
        with running_service({"CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1"}) as url:
            _traffic(url, upstream)
            text = _scrape(url)
    return Scrape.of(text), text


@pytest.fixture(scope="module")
def full_scrape() -> Scrape:
    """With an LLM provider (and one that is down: a fallback) and a webhook receiver."""
    with FakeUpstream() as upstream, FakeLLM() as llm, Receiver() as receiver, \
            pytest.MonkeyPatch.context() as env:
        for name in [k for k in os.environ if k.startswith("CONTEXTSYNTH_")]:
            env.delenv(name)
        settings = {
            "CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1",
            "CONTEXTSYNTH_LLM_PROVIDERS": json.dumps([
                {"name": "local", "kind": "openai", "base_url": llm.base_url,
                 "model": "fake"},
                {"name": "down", "kind": "openai", "base_url": "http://127.0.0.1:9/v1",
                 "model": "none"}]),
            "CONTEXTSYNTH_LLM_RETRIES": "1",
            "CONTEXTSYNTH_WEBHOOKS": json.dumps([{"url": receiver.url, "secret": SECRET}]),
            "CONTEXTSYNTH_WEBHOOKS_ALLOW_PRIVATE": "true",
            # Well above the traffic below, which then runs into it: a refusal to count.
            "CONTEXTSYNTH_RATE_LIMIT_DEFAULT": json.dumps({"requests_per_minute": 40})}
        with running_service(settings) as url:
            _traffic(url, upstream)
            deep = {"messages": coding_run(12), "reasoning": {"synthesis": "deep"}}
            with httpx.Client(base_url=url, timeout=60) as c:
                assert c.post("/synthesize", json=deep).status_code == 200
                assert c.post("/synthesize", json={**deep, "reasoning": {
                    "synthesis": "deep", "synthesis_provider": "down"}}).status_code == 200
            asyncio.run(receiver.wait_for(2))  # delivered: the deliveries are counted
            with httpx.Client(base_url=url, timeout=60) as c:
                statuses = [c.post("/synthesize", json={"messages": coding_run(2)}).status_code
                            for _ in range(40)]
            assert 429 in statuses
            text = _scrape(url)
    return Scrape.of(text)


# -- reading queries -------------------------------------------------------------------

@dataclass
class Query:
    """The series one PromQL expression reads, and the labels it names."""

    expr: str
    selectors: list[tuple[str, set[str]]]  # (metric name, labels its matchers name)
    grouping: set[str]  # labels of by/without/on/ignoring clauses

    @classmethod
    def parse(cls, expr: str) -> Query:
        tree = promql_parser.parse(GRAFANA_DURATIONS.sub("5m", expr))
        query = cls(expr, [], set())

        def visit(node: Any) -> None:
            if isinstance(node, promql_parser.VectorSelector):
                assert node.name, f"a selector without a metric name in {expr}"
                query.selectors.append(
                    (node.name, {m.name for m in node.matchers.matchers}))
            elif isinstance(node, promql_parser.AggregateExpr) and node.modifier:
                query.grouping.update(node.modifier.labels)
            elif isinstance(node, promql_parser.BinaryExpr) and node.modifier \
                    and node.modifier.matching:
                query.grouping.update(node.modifier.matching.labels)

        promql_parser.walk(tree, visit)
        return query


def _declared_labels() -> dict[str, set[str]]:
    """The label names of each series the Metrics object declares, for series the
    traffic did not write (the expand tool's, drops): the scrape shows no labels then."""
    out: dict[str, set[str]] = {}
    for value in vars(Metrics(CollectorRegistry())).values():
        if isinstance(value, MetricWrapperBase):
            suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
                        "gauge": ("",)}[value._type]
            for suffix in suffixes:
                out.setdefault(value._name + suffix, set()).update(value._labelnames)
    for name, labels in out.items():
        if name.endswith("_bucket"):
            labels.add("le")
    return out


def _check(query: Query, scrape: Scrape, *, require_samples: bool) -> None:
    """Every metric the query names is exported (or declared external), and every label
    it names is one of theirs or a target label."""
    declared = _declared_labels()
    known: set[str] = set(TARGET_LABELS)
    for name, matched in query.selectors:
        if name in EXTERNAL:
            own = EXTERNAL[name]
        else:
            assert name in scrape.declared, f"{name} is not exported ({query.expr})"
            assert name in scrape.labels or not require_samples, \
                f"{name} has no samples after the traffic"
            own = scrape.labels[name] if name in scrape.labels else declared[name]
        assert matched <= own | TARGET_LABELS, \
            f"{name} has no label {matched - own - TARGET_LABELS} ({query.expr})"
        known |= own
    assert query.grouping <= known, \
        f"grouping by {query.grouping - known}, which no series here has ({query.expr})"


def _render(overlay: str) -> list[dict[str, Any]]:
    out = subprocess.run([_kubectl(), "kustomize", str(DEPLOY / "overlays" / overlay)],
                         check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl is not installed: overlays not rendered")
    return found


def _rules() -> list[dict[str, Any]]:
    [rule] = [d for d in _render("prod") if d["kind"] == "PrometheusRule"]
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def _panels() -> list[dict[str, Any]]:
    return [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] != "row"]


# -- the alert rules ---------------------------------------------------------------------

def test_every_alert_reads_series_the_service_exports(full_scrape):
    rules = _rules()
    assert {r["alert"] for r in rules} >= {
        "ContextsynthHighErrorRate", "ContextsynthSlowRequests", "ContextsynthLLMCircuitOpen",
        "ContextsynthWebhookDeadLetters", "ContextsynthWebhookOutboxLag",
        "ContextsynthRedisUnavailable", "ContextsynthWarmPathMissing",
        "ContextsynthMemoryNearLimit", "ContextsynthProviderErrors",
        "ContextsynthRateLimitUnchecked", "ContextsynthTenantThrottled"}
    for rule in rules:
        query = Query.parse(rule["expr"])
        # Series an alert waits on must exist once there is traffic: a misspelt name
        # or label would leave it silent forever.
        _check(query, full_scrape, require_samples=True)


def test_rate_limits_are_charted_and_alerted_and_relayed_errors_page_no_one():
    """Refusals and limits left unchecked are on the dashboard and in the rules; the
    service's error alert takes out the provider 5xx the proxy relays as they came."""
    charted = {name for panel in _panels() for t in panel["targets"]
               for name, _ in Query.parse(t["expr"]).selectors}
    alerted = {name for rule in _rules() for name, _ in Query.parse(rule["expr"]).selectors}
    for series in ("contextsynth_rate_limited_total", "contextsynth_rate_limit_unchecked_total"):
        assert series in charted and series in alerted, series
    [errors] = [r for r in _rules() if r["alert"] == "ContextsynthHighErrorRate"]
    assert ("contextsynth_proxy_responses_total", {"status"}) in \
        Query.parse(errors["expr"]).selectors
    assert "- (" in errors["expr"]  # subtracted, not added


def test_the_external_series_are_only_the_declared_ones():
    named = {name for rule in _rules() for name, _ in Query.parse(rule["expr"]).selectors}
    assert {n for n in named if not n.startswith("contextsynth_")} == set(EXTERNAL)


def test_a_broken_expression_or_a_stale_label_is_caught(full_scrape):
    # The checks above are the parser's and this file's: they do fail.
    with pytest.raises(ValueError):
        Query.parse("sum(rate(contextsynth_requests_total[5m])")
    with pytest.raises(ValueError):  # a range function given an instant vector
        Query.parse("rate(contextsynth_requests_total)")
    stale = Query.parse('sum by (endpoint) (rate(contextsynth_requests_total[5m]))')
    with pytest.raises(AssertionError, match="grouping by"):
        _check(stale, full_scrape, require_samples=True)
    with pytest.raises(AssertionError, match="not exported"):
        _check(Query.parse("contextsynth_request_total"), full_scrape, require_samples=True)


# -- the dashboard -------------------------------------------------------------------------

def test_every_dashboard_query_reads_series_the_service_exports(full_scrape):
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in _panels():
        for target in panel["targets"]:
            _check(Query.parse(target["expr"]), full_scrape, require_samples=False)
    for variable in dashboard["templating"]["list"][1:]:
        selector, label = re.fullmatch(r"label_values\((.*), *(\w+)\)",
                                       variable["query"]["query"]).groups()
        query = Query.parse(selector)
        query.grouping.add(label)
        _check(query, full_scrape, require_samples=True)


def test_every_panel_shows_data_in_the_default_mode_or_says_why(default_scrape):
    scrape, _ = default_scrape
    for panel in _panels():
        shown = any(all(name in scrape.labels for name, _ in Query.parse(t["expr"]).selectors)
                    for t in panel["targets"])
        says_empty = panel["description"].startswith("Empty")
        assert shown != says_empty, (
            f"{panel['title']!r}: " + ("shows data and says it is empty" if shown else
                                       "shows nothing by default and does not say why"))


def test_the_dashboard_filters_by_namespace_instance_and_tenant():
    dashboard = json.loads(DASHBOARD.read_text())
    names = [v["name"] for v in dashboard["templating"]["list"]]
    assert names == ["datasource", "namespace", "instance", "tenant"]
    rows = [p["title"] for p in json.loads(DASHBOARD.read_text())["panels"]
            if p["type"] == "row"]
    assert "Proxy" in rows
    for panel in _panels():
        assert panel["datasource"]["uid"] == "${datasource}" and panel["gridPos"]["w"] > 0
        for target in panel["targets"]:
            for name, matched in Query.parse(target["expr"]).selectors:
                assert {"namespace", "instance"} <= matched, (panel["title"], name)
        # A panel follows the tenant picked where its series have one, and says so where
        # they do not.
        selectors = [s for t in panel["targets"] for s in Query.parse(t["expr"]).selectors]
        by_tenant = [name for name, matched in selectors if "tenant" in matched]
        assert by_tenant == [name for name, _ in selectors if name in TENANT_SERIES]
        assert bool(by_tenant) != ("Not filtered by tenant" in panel["description"]), \
            panel["title"]


# -- the metrics themselves ------------------------------------------------------------------

def test_no_exported_label_is_one_prometheus_sets_on_the_target(full_scrape):
    # Declared or written: the objects' label names, and what the scrape held.
    metrics = Metrics(CollectorRegistry())
    for name, value in vars(metrics).items():
        if isinstance(value, MetricWrapperBase):
            assert not set(value._labelnames) & RESERVED_LABELS, (name, value._labelnames)
    for name, labels in full_scrape.labels.items():
        assert not labels & RESERVED_LABELS, (name, labels)


def test_proxied_answers_are_counted_by_upstream_and_status(default_scrape):
    _, text = default_scrape
    families = {f.name: f for f in text_string_to_metric_families(text)}
    answers = {(s.labels["upstream"], s.labels["status"]): s.value
               for s in families["contextsynth_proxy_responses"].samples
               if s.name.endswith("_total")}
    assert answers == {("openai", "200"): 2, ("openai", "500"): 1}
    requests = {(s.labels["route"], s.labels["status"]): s.value
                for s in families["contextsynth_requests"].samples
                if s.name.endswith("_total")}
    assert requests[("/v1/chat/completions", "500")] == 1
    assert requests[("unmatched", "404")] == 1
    in_flight = {s.labels["route"]: s.value
                 for s in families["contextsynth_requests_in_flight"].samples}
    # Everything sent is over (the streamed answer too); only the scrape itself runs.
    assert in_flight.pop("/metrics") == 1 and set(in_flight.values()) == {0}

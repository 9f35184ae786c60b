"""The image definition and the Kubernetes manifests, validated offline."""

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml

from tests.support.docs import section as documented

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S_VERSION = kubernetes_validate.latest_version()
CRDS = {"ServiceMonitor", "PrometheusRule"}  # no schema ships for custom resources


def docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def validate(doc: dict) -> None:
    if doc["kind"] in CRDS:
        assert doc["apiVersion"] == "monitoring.coreos.com/v1"
        assert doc["spec"]["endpoints" if doc["kind"] == "ServiceMonitor" else "groups"]
        if doc["kind"] == "PrometheusRule":
            validate_rules(doc)
        return
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


# The Prometheus Operator's schema of a rule (monitoring.coreos.com/v1 PrometheusRule),
# which kubernetes-validate does not ship: the fields, and the duration pattern.
_RULE_FIELDS = {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}
_DURATION = re.compile(r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?"
                       r"(([0-9]+)s)?(([0-9]+)ms)?)$")


def validate_rules(doc: dict) -> None:
    """A PrometheusRule as the Operator's CRD admits it, and as this project writes
    alerts: each with a for, a severity, a summary, a description and a runbook."""
    assert set(doc["spec"]) <= {"groups"}
    groups = doc["spec"]["groups"]
    assert len({g["name"] for g in groups}) == len(groups), "group names repeat"
    alerts = []
    for group in groups:
        assert set(group) <= {"name", "interval", "rules", "partial_response_strategy",
                              "limit", "query_offset", "labels"}, group["name"]
        assert group["rules"], group["name"]
        for rule in group["rules"]:
            assert set(rule) <= _RULE_FIELDS, set(rule) - _RULE_FIELDS
            assert ("alert" in rule) != ("record" in rule), rule
            assert isinstance(rule["expr"], str) and rule["expr"].strip()
            for key in ("labels", "annotations"):
                assert all(isinstance(k, str) and isinstance(v, str)
                           for k, v in rule.get(key, {}).items()), (rule, key)
            if "alert" in rule:
                alerts.append(rule["alert"])
                assert _DURATION.match(rule["for"]) and rule["for"] != "0", rule["alert"]
                assert rule["labels"]["severity"] in {"critical", "warning", "info"}
                assert {"summary", "description", "runbook"} <= set(rule["annotations"])
    assert len(set(alerts)) == len(alerts), "alert names repeat"


BASE = sorted(p for p in DEPLOY.rglob("*.yaml")
              if p.name != "kustomization.yaml" and "overlays" not in p.parts)
OVERLAYS = sorted(p.name for p in (DEPLOY / "overlays").iterdir() if p.is_dir())
MANIFESTS = [*BASE, DEPLOY / "overlays/dev/redis.yaml"]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_full_manifest_is_valid(path):
    for doc in docs(path):
        validate(doc)


def _kubectl() -> str | None:
    return shutil.which("kubectl")


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not installed: overlays not rendered")
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlays_render_to_valid_manifests(overlay):
    out = subprocess.run([_kubectl(), "kustomize", str(DEPLOY / "overlays" / overlay)],
                         check=True, capture_output=True, text=True).stdout
    rendered = [d for d in yaml.safe_load_all(out) if d]
    kinds = {d["kind"] for d in rendered}
    assert kinds >= {"ConfigMap", "Deployment", "Service", "HorizontalPodAutoscaler",
                     "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor", "Ingress"}
    # The alerts are a component an overlay opts into: prod does, dev does not.
    assert ("PrometheusRule" in kinds) == (overlay == "prod")
    for doc in rendered:
        validate(doc)
        assert doc["metadata"]["namespace"].startswith("contextsynth")
    config = next(d for d in rendered if d["kind"] == "ConfigMap")["data"]
    deployment = next(d for d in rendered if d["kind"] == "Deployment"
                      and d["metadata"]["name"] == "contextsynth")
    if overlay == "dev":
        assert config["CONTEXTSYNTH_REDIS_URL"] == "redis://redis:6379/0"
        assert any(d["kind"] == "Deployment" and d["metadata"]["name"] == "redis"
                   for d in rendered)
    else:
        assert config["CONTEXTSYNTH_REDIS_URL"].startswith("rediss://")
        hpa = next(d for d in rendered if d["kind"] == "HorizontalPodAutoscaler")
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 30)
        assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].startswith(
            "registry.example.com/")


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not installed: overlays not rendered")
def test_prod_runs_its_image_by_digest_with_the_release_tag():
    # What runs is what was pushed: the digest decides what is pulled; the tag, for
    # people, names the release the labels and the package carry.
    rendered = _render("prod")
    deployment = _one(rendered, "Deployment")
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    found = re.fullmatch(r"registry\.example\.com/contextsynth:([\w.-]+)@sha256:[0-9a-f]{64}",
                         image)
    assert found, image
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert found[1] == version == deployment["metadata"]["labels"]["app.kubernetes.io/version"]
    # A pinned digest is pulled once per node: IfNotPresent is exact, not stale.
    assert deployment["spec"]["template"]["spec"]["containers"][0][
        "imagePullPolicy"] == "IfNotPresent"


def test_deployment_is_hardened_and_probed():
    deployment = docs(DEPLOY / "base/deployment.yaml")[0]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"]
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    env = {e["name"]: e["value"] for e in container["env"]}
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert env["PROMETHEUS_MULTIPROC_DIR"] in mounts
    drain = float(_env_file(DEPLOY / "base/config.env")["CONTEXTSYNTH_WEBHOOK_DRAIN_S"])
    assert pod["terminationGracePeriodSeconds"] > drain + 5  # the preStop pause


def test_dockerfile_lints_clean_and_runs_as_non_root():
    hadolint = Path(sys.executable).parent / "hadolint"
    result = subprocess.run([str(hadolint), str(ROOT / "Dockerfile")], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^USER 10001$", text, re.MULTILINE)
    assert "HEALTHCHECK" in text and '"contextsynth", "serve"' in text
    assert "-r requirements.lock" in text and text.count("FROM ") == 2


def test_lock_pins_every_runtime_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    locked = {line.split("==")[0].lower().replace("_", "-")
              for line in (ROOT / "requirements.lock").read_text().splitlines()
              if "==" in line}
    for requirement in project["dependencies"]:
        name = re.split(r"[<>=!~\[ ]", requirement)[0].lower().replace("_", "-")
        assert name in locked, f"{name} is not in requirements.lock"


def test_the_healthcheck_probes_the_configured_port():
    text = (ROOT / "Dockerfile").read_text()
    check = text.split("HEALTHCHECK", 1)[1].split("\n", 2)[1]
    assert "CONTEXTSYNTH_PORT" in check and ":8080/" not in check


def test_every_locked_requirement_has_a_hash():
    entries = " ".join((ROOT / "requirements.lock").read_text().split("\\\n")).splitlines()
    pins = [line for line in entries if "==" in line and not line.lstrip().startswith("#")]
    assert len(pins) > 20
    for pin in pins:
        assert "--hash=sha256:" in pin, pin.split()[0]


def _render(overlay: str) -> list[dict]:
    out = subprocess.run([_kubectl(), "kustomize", str(DEPLOY / "overlays" / overlay)],
                         check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _one(rendered: list[dict], kind: str, name: str = "contextsynth") -> dict:
    """The object of that kind and name; a generated one (the ConfigMap) by the name
    before its hash suffix."""
    return next(d for d in rendered if d["kind"] == kind and (
        d["metadata"]["name"] == name or d["metadata"]["name"].rsplit("-", 1)[0] == name))


def _env_file(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not installed: overlays not rendered")
@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_the_network_policy_admits_the_configured_redis(overlay):
    rendered = _render(overlay)
    url = urlsplit(_one(rendered, "ConfigMap", "contextsynth-config")["data"][
        "CONTEXTSYNTH_REDIS_URL"])
    port = url.port or 6379
    policy = _one(rendered, "NetworkPolicy")
    open_ports = {p["port"] for rule in policy["spec"]["egress"] if "to" not in rule
                  for p in rule.get("ports", [])}
    assert port in open_ports, f"{overlay}: Redis on {port}, egress allows {open_ports}"
    # in-cluster providers: pods labelled for it, in any namespace, whatever the app labels
    selectors = [peer["podSelector"] for rule in policy["spec"]["egress"]
                 for peer in rule.get("to", []) if "podSelector" in peer]
    assert selectors == [{"matchExpressions": [
        {"key": "contextsynth.io/egress", "operator": "In", "values": ["allow"]}]}]
    namespaces = [peer.get("namespaceSelector", {}).get("matchLabels", {})
                  for rule in policy["spec"]["ingress"] for peer in rule["from"]]
    assert {"contextsynth.io/clients": "allow"} in namespaces


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not installed: overlays not rendered")
@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_replicas_are_the_autoscalers_and_pods_carry_the_recommended_labels(overlay):
    rendered = _render(overlay)
    deployment = _one(rendered, "Deployment")
    assert "replicas" not in deployment["spec"]  # an apply would undo the HPA's count
    for labels in (deployment["metadata"]["labels"],
                   deployment["spec"]["template"]["metadata"]["labels"]):
        assert labels["app.kubernetes.io/instance"] == f"contextsynth-{overlay}"
        assert labels["app.kubernetes.io/version"] and labels[
            "app.kubernetes.io/managed-by"] == "kustomize"
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert "app.kubernetes.io/version" not in selector  # selectors cannot change
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {"topology.kubernetes.io/zone",
                                                  "kubernetes.io/hostname"}
    if overlay == "dev":
        redis = _one(rendered, "Deployment", "redis")
        container = redis["spec"]["template"]["spec"]["containers"][0]
        assert container["readinessProbe"] and container["livenessProbe"]
        assert redis["metadata"]["labels"]["app.kubernetes.io/name"] == "redis"


# The panels' queries are checked against a running service's /metrics in
# tests/integration/test_monitoring.py; here, that the documentation lists them.
def test_the_grafana_dashboard_has_the_documented_panels():
    dashboard = json.loads((DEPLOY / "grafana" / "contextsynth.json").read_text())
    section = documented("Dashboards")
    rows = [line[2:-2].split(" | ") for line in section.splitlines()
            if line.startswith("| ") and not line.startswith(("| row", "| ---"))]
    panels, row = [], None
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
        else:
            panels.append((row, panel["title"]))
    assert [(r, title.strip("`")) for r, title, *_ in rows] == panels
    assert len(panels) >= 20


def test_the_alerts_component_holds_the_rules():
    component = yaml.safe_load((DEPLOY / "components/alerts/kustomization.yaml").read_text())
    assert component["kind"] == "Component" and component["resources"] == [
        "prometheusrule.yaml"]
    [rule] = docs(DEPLOY / "components/alerts/prometheusrule.yaml")
    validate(rule)
    base = yaml.safe_load((DEPLOY / "base/kustomization.yaml").read_text())
    assert "prometheusrule.yaml" not in base["resources"]  # opted into, not imposed
    with pytest.raises(AssertionError):  # the structure check does fail
        validate_rules({"spec": {"groups": [{"name": "g", "rules": [
            {"alert": "A", "expr": "up == 0", "for": "5 minutes",
             "labels": {"severity": "warning"}}]}]}})


def test_the_ingress_routes_an_agents_steps_on_its_conversation_key():
    ingress = docs(DEPLOY / "base" / "ingress.yaml")[0]
    hashed = ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/upstream-hash-by"]
    # The header every job answer carries and clients echo (app/service/conversation.py).
    assert hashed.startswith("$http_x_contextsynth_conversation")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    service = docs(DEPLOY / "base" / "service.yaml")[0]
    assert backend["name"] == service["metadata"]["name"]
    assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}
    assert "ingress.yaml" in (DEPLOY / "base" / "kustomization.yaml").read_text()


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not installed: overlays not rendered")
@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_the_rendered_overlays_route_an_agents_steps_on_its_conversation_key(overlay):
    # What an operator applies, not only the base: no overlay drops the ingress or
    # its hash, and the pods it routes to run one worker each.
    rendered = _render(overlay)
    ingress = _one(rendered, "Ingress")
    hashed = ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/upstream-hash-by"]
    assert hashed.startswith("$http_x_contextsynth_conversation")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == _one(rendered, "Service")["metadata"]["name"]
    workers = _one(rendered, "ConfigMap", "contextsynth-config")["data"].get(
        "CONTEXTSYNTH_WORKERS", "1")
    assert workers == "1"


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not installed: overlays not rendered")
def test_a_config_change_rolls_the_pods(tmp_path):
    # The ConfigMap's name carries a hash of its content and the Deployment names it, so
    # changing a setting changes the pod template, which is what makes Kubernetes roll.
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy)

    def config_ref(root: Path) -> str:
        out = subprocess.run([_kubectl(), "kustomize", str(root / "overlays" / "prod")],
                             check=True, capture_output=True, text=True).stdout
        rendered = [d for d in yaml.safe_load_all(out) if d]
        pod = _one(rendered, "Deployment")["spec"]["template"]["spec"]
        [ref] = [source["configMapRef"]["name"] for source in pod["containers"][0]["envFrom"]
                 if "configMapRef" in source]
        assert ref == _one(rendered, "ConfigMap", "contextsynth-config")["metadata"]["name"]
        return str(ref)

    before = config_ref(copy)
    assert before.startswith("contextsynth-config-")
    env = copy / "overlays" / "prod" / "config.env"
    env.write_text(env.read_text() + "CONTEXTSYNTH_LOG_LEVEL=debug\n")
    assert config_ref(copy) != before

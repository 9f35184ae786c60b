"""The image definition and the Kubernetes manifests, validated offline."""

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S_VERSION = kubernetes_validate.latest_version()
CRDS = {"ServiceMonitor"}  # no schema ships for custom resources


def docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def validate(doc: dict) -> None:
    if doc["kind"] in CRDS:
        assert doc["apiVersion"] == "monitoring.coreos.com/v1" and doc["spec"]["endpoints"]
        return
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


BASE = sorted(p for p in DEPLOY.rglob("*.yaml")
              if p.name != "kustomization.yaml" and "overlays" not in p.parts)
MANIFESTS = [*BASE, DEPLOY / "overlays/dev/redis.yaml"]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_full_manifest_is_valid(path):
    for doc in docs(path):
        validate(doc)


def _kubectl() -> str | None:
    return shutil.which("kubectl")


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not installed: overlays not rendered")
@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_overlays_render_to_valid_manifests(overlay):
    out = subprocess.run([_kubectl(), "kustomize", str(DEPLOY / "overlays" / overlay)],
                         check=True, capture_output=True, text=True).stdout
    rendered = [d for d in yaml.safe_load_all(out) if d]
    kinds = {d["kind"] for d in rendered}
    assert kinds >= {"ConfigMap", "Deployment", "Service", "HorizontalPodAutoscaler",
                     "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor"}
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
        assert deployment["spec"]["replicas"] == 3
        assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].startswith(
            "registry.example.com/")


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
    drain = float(docs(DEPLOY / "base/configmap.yaml")[0]["data"]["CONTEXTSYNTH_WEBHOOK_DRAIN_S"])
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


def _build_stage_copies() -> list[str]:
    """The paths the Dockerfile's build stage copies from the build context."""
    text = (ROOT / "Dockerfile").read_text()
    build = text.split("FROM ${PYTHON_IMAGE}")[0]
    paths: list[str] = []
    for line in build.splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            *sources, _ = line.split()[1:]
            paths.extend(sources)
    return paths


def test_the_image_builds_the_engine_compiled(tmp_path):
    """A wheel built from exactly what the Dockerfile copies holds the mypyc modules."""
    from tests.test_build import compiled_paths

    context = tmp_path / "context"
    context.mkdir()
    for name in _build_stage_copies():
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, context / name,
                            ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        else:
            shutil.copy2(source, context / name)
    assert (context / "setup.py").exists(), "the Dockerfile does not copy setup.py"
    out = tmp_path / "wheel"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(context)], capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-2000:]
    [wheel] = out.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for module in compiled_paths():
        stem = module.removesuffix(".py")
        assert any(n.startswith(stem + ".") and n.endswith(".so") for n in names), module


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

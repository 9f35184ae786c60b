"""What ``pip install .`` (and so the image) gives: one top-level name, the engine
compiled, and a ``contextsynth`` command that serves; ``compose.yaml`` as Compose reads it."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import jsonschema
import pytest
import yaml

from app.settings import Settings
from tests.support.corpus import load_named
from tests.support.redis_server import free_port
from tests.test_build import compiled_paths

ROOT = Path(__file__).resolve().parents[1]


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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from exactly what the Dockerfile copies, as the image builds it."""
    context = tmp_path_factory.mktemp("context")
    for name in _build_stage_copies():
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, context / name,
                            ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        else:
            shutil.copy2(source, context / name)
    assert (context / "setup.py").exists(), "the Dockerfile does not copy setup.py"
    out = tmp_path_factory.mktemp("wheel")
    # The image builds without CONTEXTSYNTH_PURE_PYTHON, whatever this checkout was
    # installed with: so does this build. It checks what the wheel holds, not how fast
    # the engine runs: the C compiler does not optimise (half the build's time).
    env = {k: v for k, v in os.environ.items() if k != "CONTEXTSYNTH_PURE_PYTHON"}
    env["CONTEXTSYNTH_MYPYC_OPT"] = "0"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(context)], capture_output=True, text=True, timeout=900, env=env)
    assert build.returncode == 0, build.stderr[-2000:]
    [built] = out.glob("*.whl")
    return built


def test_the_wheel_holds_the_engine_compiled(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    for module in compiled_paths():
        stem = "contextsynth/" + module.removesuffix(".py")
        assert any(n.startswith(stem + ".") and n.endswith(".so") for n in names), module


def test_the_wheel_adds_one_top_level_name(wheel: Path):
    """Many projects have a package called ``app``: installing this one must not shadow it."""
    archive = zipfile.ZipFile(wheel)
    tops = {name.split("/", 1)[0] for name in archive.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"contextsynth"}
    [top_level] = [n for n in archive.namelist() if n.endswith(".dist-info/top_level.txt")]
    assert archive.read(top_level).decode().split() == ["contextsynth"]
    [entry_points] = [n for n in archive.namelist() if n.endswith("entry_points.txt")]
    assert "contextsynth = contextsynth:main" in archive.read(entry_points).decode()


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=300)
    return target


def _python(installed: Path) -> list[str]:
    """This interpreter without its site-packages' start-up files (so without the
    checkout's editable ``app``), seeing the wheel and the dependencies."""
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    return [sys.executable, "-S", "-c",
            f"import sys; sys.path[:0] = [{str(installed)!r}, {deps!r}]; "
            "sys.argv[0] = 'contextsynth'; exec(sys.argv.pop(1))"]


def test_an_installed_wheel_does_not_make_app_importable(installed: Path, tmp_path: Path):
    probe = subprocess.run([*_python(installed), "import contextsynth, app"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "No module named 'app'" in probe.stderr, probe.stderr


@pytest.fixture
def served(installed: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    start = ("import contextsynth; sys.argv[1:] = ['serve', '--host', '127.0.0.1', "
             f"'--port', '{port}']; sys.exit(contextsynth.main())")
    log = (tmp_path / "serve.log").open("wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTSYNTH_")}
    proc = subprocess.Popen([*_python(installed), start], cwd=tmp_path, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            subprocess.run(["sleep", "0.2"], check=True)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_the_installed_command_serves_with_the_compiled_engine(served: str):
    messages = load_named("tau-airline")
    answer = httpx.post(f"{served}/synthesize", json={"messages": messages}, timeout=120)
    assert answer.status_code == 200, answer.text
    stats = answer.json()["stats"]
    assert stats["tokens_after"] < stats["tokens_before"]
    metrics = httpx.get(f"{served}/metrics", timeout=10).text.splitlines()
    [build] = [line for line in metrics if line.startswith("contextsynth_build_info{")]
    assert 'engine="compiled"' in build


COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())


def test_compose_follows_the_compose_specification():
    schema = json.loads((ROOT / "tests/support/schemas/compose-spec.json").read_text())
    # Its $schema names draft 7 without the trailing '#' jsonschema looks the draft up by.
    validator = jsonschema.Draft7Validator(schema)
    assert [e.message for e in validator.iter_errors(COMPOSE)] == []


def test_compose_runs_the_image_beside_its_redis():
    service = COMPOSE["services"]["contextsynth"]
    assert service["build"] == "."  # the Dockerfile beside it
    environment = service["environment"]
    settings = {f"CONTEXTSYNTH_{name.upper()}" for name in Settings.model_fields}
    assert set(environment) <= settings
    redis = environment["CONTEXTSYNTH_REDIS_URL"].split("//", 1)[1].split(":", 1)[0]
    assert redis in COMPOSE["services"]
    assert service["depends_on"][redis]["condition"] == "service_healthy"
    assert "healthcheck" in COMPOSE["services"][redis]
    # The port published is the one the service listens on, and the image exposes.
    published = {int(p.split(":")[1]) for p in service["ports"]}
    assert published == {int(environment["CONTEXTSYNTH_PORT"])}
    assert f"EXPOSE {environment['CONTEXTSYNTH_PORT']}" in (ROOT / "Dockerfile").read_text()

"""``bench --replay`` and ``bench --load`` against a real ``contextsynth serve``, on a
small corpus: both run end to end and report what they measured."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from app.cli import fleet, load, proxybench, replay
from app.corpus import CORPUS_DIR

SMALL = "sweagent-ctf-crypto-eps.jsonl"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    shutil.copy(CORPUS_DIR / SMALL, tmp_path / SMALL)
    return tmp_path


def test_replay_times_the_same_compaction_in_process_and_over_http(corpus: Path,
                                                                    capfd) -> None:
    lines: list[str] = []
    recorded = corpus / "replay.json"
    assert replay.run(corpus, 3, compare=False, say=lines.append, record=recorded) == 0
    run = json.loads(recorded.read_text())
    assert run["printed"].splitlines() == lines[-len(run["printed"].splitlines()):]
    assert run["summary"]["contextsynth over HTTP"]["calls"] == 3
    rows = {line[:26].strip(): line.split() for line in lines
            if line.startswith("contextsynth")}
    engine, http = rows["contextsynth in process"], rows["contextsynth over HTTP"]
    assert engine[3] == http[3] == "3"  # calls
    assert float(engine[4]) > 0 and float(http[4]) > 0
    # The service runs the same engine: the same tokens come back either way.
    assert engine[-1] == http[-1]
    echo = next(line.split() for line in lines if line.startswith("echo over HTTP"))
    assert echo[3] == "3" and float(echo[4]) > 0 and echo[-1] == "0.0%"  # body back as sent
    assert any(line.startswith("over HTTP a call takes") and "an echo of the same bodies"
               in line for line in lines)
    assert not any("target" in line for line in lines)  # nothing a user cannot act on
    assert lines[-1] == "the other compactors were left out (--no-compare)"
    progress = capfd.readouterr().err.splitlines()
    assert [line for line in progress if line.startswith("[")][-1].startswith("[1/1] ")


def test_load_drives_both_routes_without_failures(corpus: Path) -> None:
    lines: list[str] = []
    progress: list[str] = []
    assert load.run(corpus, clients=2, seconds=1, workers=(1,), steps=2,
                    say=lines.append, progress=progress.append) == 0
    assert progress == ["1 worker(s), /synthesize: 2 clients for 1 s",
                        "1 worker(s), /bench/echo: 2 clients for 1 s"]
    assert not any("target" in line for line in lines)
    table = [line.split() for line in lines if line.strip().startswith("1 /")]
    assert [row[1] for row in table] == ["/synthesize", "/bench/echo"]
    assert all(float(row[3]) > 0 and row[-1] == "0" for row in table)
    assert "of the echo route's requests/s" in lines[-1]


def test_a_fleet_sends_the_same_calls_at_every_size_and_routes_by_key(corpus: Path) -> None:
    made = fleet.agents(4, 3, corpus)
    # Distinct agents from one run: distinct conversations, each calling step by step.
    assert len({a.key for a in made}) == 4 and all(len(a.bodies) == 3 for a in made)
    assert all(len(a.bodies[0]) < len(a.bodies[1]) < len(a.bodies[2]) for a in made)
    lines: list[str] = []
    assert fleet.run(corpus, counts=(1, 4), replicas=1, steps=3, clients=2,
                     say=lines.append) == 0
    # body KB, agents, replicas, routing (two words), calls, ...
    rows = [line.split() for line in lines if line.split()[1:3] in (["1", "1"], ["4", "1"])]
    assert [row[5] for row in rows] == ["12", "12"]  # the same calls either way
    # The whole fleet in progress at once: what the caches hold per agent is shown.
    assert rows[0][11] == "-" and float(rows[1][11]) > 0
    # And which caches hold those bytes, the most first: together about that figure.
    (by_cache,) = [line for line in lines if line.startswith("warm KB/agent by cache, 4 ")]
    sizes = [float(item.split()[-1]) for item in by_cache.split(": ", 1)[1].split(", ")]
    # (each rounded to a KB, the total to a kilobyte too)
    assert sizes == sorted(sizes, reverse=True)
    assert 0 < sum(sizes) <= float(rows[1][11]) * 1e3 + len(sizes) + 1
    assert any(line.startswith("CPU per call, 4 agents against 1:") for line in lines)
    lines.clear()
    assert fleet.run(corpus, counts=(4,), replicas=2, steps=3, clients=2,
                     say=lines.append) == 0
    assert "handles made on one replica and expanded on another: 4 of 4" in lines
    assert any("round-robin costs" in line for line in lines)


def test_the_proxy_bench_reports_the_time_it_adds(corpus: Path) -> None:
    lines: list[str] = []
    assert proxybench.run(corpus, steps=2, say=lines.append) == 0
    rows = {line[:48].strip(): line.split()[-2:] for line in lines[2:6]}
    assert set(rows) == {"engine in process, same requests", "added to a request",
                         "added to the first streamed byte, fast",
                         "added to the first streamed byte, off"}
    assert all(float(p50) <= float(p99) for p50, p99 in rows.values())
    assert lines[-1].startswith("2 requests; targets:")


def test_agents_drawn_mid_run_send_texts_of_their_own(corpus: Path) -> None:
    steps = fleet.sample_steps(fleet.load(corpus / SMALL), None)
    made = fleet.agents(3, fleet.CallSample(2, from_step=1), corpus)
    for agent in made:  # the calls before the run's steps 1 and 2, whole histories
        assert [len(orjson.loads(b)["messages"]) for b in agent.bodies] == steps[1:3]
    # Two agents of one run share the system prompt and no other text, as two real
    # agents would: no memo of one serves the other.
    texts = [{m["content"] for m in orjson.loads(a.bodies[-1])["messages"]
              if m["role"] != "system" and isinstance(m["content"], str) and m["content"]}
             for a in made]
    assert texts[0] and not texts[0] & texts[1]
    with pytest.raises(fleet.NoRuns):
        fleet.agents(1, fleet.CallSample(2, from_step=len(steps)), corpus)
    # By size: the calls start at the first body of that size.
    kb = len(made[0].bodies[0]) // 1024 + 1
    sized = fleet.agents(1, fleet.CallSample(2, kb=kb), corpus)[0]
    assert len(sized.bodies[0]) >= kb * 1024 > len(made[0].bodies[0])

import json

import httpx
import pytest

from app.cli import bench, main
from tests.support.corpus import TRANSCRIPTS
from tests.support.subprocess_server import running_service


def test_compress_prints_the_compacted_transcript(capsys):
    path = TRANSCRIPTS / "minisweagent-ds-chat-test-1-100-django__django-11099.jsonl"
    assert main(["compress", str(path), "--tier", "local"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["tier"] == "local" and result["compacted"]
    assert [m["role"] for m in result["messages"][:3]] == ["system", "user", "user"]
    assert result["messages"][2]["content"].startswith("[contextsynth] Earlier work")
    assert "tokens" in err and "smaller" in err


def test_compress_reports_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "tool", "tool_call_id": "x", "content": "?"}]))
    assert main(["compress", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("contextsynth compress: messages[0] (role tool) is a tool result")
    assert err.rstrip().endswith("(at /messages/0)") and err.count("\n") == 1


def test_openapi_to_stdout(capsys):
    assert main(["openapi", "-o", "-"]) == 0
    assert "/synthesize:" in capsys.readouterr().out


def test_serve_answers_over_real_http():
    with running_service() as url:
        messages = [json.loads(line) for line in
                    (TRANSCRIPTS / "tau-airline-gpt4o-task013-trial0.jsonl").read_text()
                    .splitlines()]
        r = httpx.post(f"{url}/synthesize", json={"messages": messages}, timeout=30)
        assert r.status_code == 200 and r.json()["compacted"]
        assert "contextsynth_requests_total" in httpx.get(f"{url}/metrics").text


def test_bench_runs_on_a_small_corpus(tmp_path, capsys):
    # A text-action run too (actions in its text, results as user messages): no trace.
    text_run = "mini-swe-agent-text-nanoswea-test-repo-missing-colon.jsonl"
    for name in ("sweagent-ctf-crypto-eps.jsonl", "tau-airline-gpt4o-task017-trial1.jsonl",
                 text_run):
        (tmp_path / name).write_text((TRANSCRIPTS / name).read_text())
    recorded = tmp_path / "bench.json"
    assert main(["bench", "--dir", str(tmp_path), "--repeat", "1", "--json", str(recorded)]) == 0
    printed = capsys.readouterr().out
    assert "median cold/floor" in printed
    # --json keeps what was printed, the rows it came from and the machine it ran on.
    run = json.loads(recorded.read_text())
    assert run["printed"] == printed.rstrip("\n")
    assert run["printed"].splitlines() == bench.table(run["rows"])
    assert run["summary"] == bench.summary(run["rows"]) and len(run["rows"]) == 3
    assert run["machine"]["cpus"] >= 1 and run["machine"]["engine"] in ("compiled", "interpreted")
    assert run["command"].startswith("contextsynth bench") and run["date"]
    assert main(["bench", "--dir", str(tmp_path), "--jobs"]) == 0
    out = capsys.readouterr().out
    assert "synthesize" in out and "median" in out
    [row] = [line for line in out.splitlines() if line.startswith(text_run[:40])]
    assert row.split()[-1] == "-"


def test_bench_json_keeps_what_a_bench_without_rows_printed(tmp_path, capsys, monkeypatch):
    # --load, --proxy, --largest, ... keep no rows: --json records what they print.
    name = "tau-airline-gpt4o-task017-trial1.jsonl"
    (tmp_path / name).write_text((TRANSCRIPTS / name).read_text())
    monkeypatch.setenv("CONTEXTSYNTH_PROXY_EXPAND_TOOL", "false")
    monkeypatch.setenv("CONTEXTSYNTH_API_KEYS", "not-for-the-record")
    recorded = tmp_path / "jobs.json"
    assert main(["bench", "--dir", str(tmp_path), "--jobs", "--json", str(recorded)]) == 0
    printed = capsys.readouterr().out
    run = json.loads(recorded.read_text())
    assert "synthesize" in printed and run["printed"] == printed.rstrip("\n")
    assert "rows" not in run and run["machine"]["cpus"] >= 1
    # the settings it ran with, but no secret
    assert run["settings"]["CONTEXTSYNTH_PROXY_EXPAND_TOOL"] == "false"
    assert "CONTEXTSYNTH_API_KEYS" not in run["settings"]


def test_a_missing_or_malformed_file_is_one_clear_line(tmp_path, capsys):
    assert main(["compress", str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read" in err and "No such file" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["compress", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "bad.json" in err


def test_compress_takes_every_format_and_says_what_a_custom_mode_needs(tmp_path, capsys):
    messages = [json.loads(line) for line in
                (TRANSCRIPTS / "sweagent-ctf-crypto-eps.jsonl").read_text().splitlines()]
    from tests.support.convert import to_gemini

    path = tmp_path / "gemini.json"
    path.write_text(json.dumps(to_gemini(messages)), encoding="utf-8")
    assert main(["compress", str(path), "--format", "gemini", "--stats"]) == 0
    assert json.loads(capsys.readouterr().out)["stats"]["tokens_before"] > 0
    with pytest.raises(SystemExit):
        main(["compress", str(path), "--mode", "custom"])
    assert "--strategy" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["serve", "--workers", "0"], ["serve", "--port", "0"],
                                  ["serve", "--port", "70000"]])
def test_serve_refuses_ports_and_worker_counts_it_cannot_use(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and "out of range" in capsys.readouterr().err


def test_version_and_help(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("contextsynth 0.")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "hash-key" in capsys.readouterr().out


def test_a_client_that_trickles_its_headers_is_cut_off():
    import socket
    import time

    env = {"CONTEXTSYNTH_HEADER_TIMEOUT_S": "0.5"}
    with running_service(env=env) as url:
        host, port = url.removeprefix("http://").split(":")
        slow = socket.create_connection((host, int(port)))
        slow.settimeout(5)
        slow.sendall(b"POST /synthesize HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 4:
            try:
                slow.sendall(b"X")  # a header byte now and then, never the end
                time.sleep(0.2)
            except OSError:
                closed = True
                break
            slow.setblocking(False)
            try:
                closed = slow.recv(1) == b""
            except BlockingIOError:
                pass
            finally:
                slow.setblocking(True)
            if closed:
                break
        assert closed and time.monotonic() - started < 2.5
        # a client that sends its request at once is served, on a kept-alive connection
        with httpx.Client(base_url=url) as client:
            for _ in range(2):
                assert client.get("/healthz").status_code == 200


def test_help_is_plain_text_and_every_command_and_option_says_what_it_is(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "``" not in out  # reST markup, printed raw
    commands = ("serve", "compress", "openapi", "mcp", "hash-key", "bench", "eval", "wrap")
    description = out.split("positional arguments:")[0]
    assert all(command in description for command in commands)
    assert ".venv/bin/contextsynth" in out  # where a clone's serve.sh put the command
    for command in commands:
        with pytest.raises(SystemExit):
            main([command, "--help"])
        lines = capsys.readouterr().out.split("options:", 1)[1].splitlines()
        # An option's help follows its name on its line, or on the next, indented deeper.
        bare = [line.strip() for i, line in enumerate(lines) if line.startswith("  -")
                and "  " not in line.strip()
                and not (i + 1 < len(lines) and lines[i + 1].startswith(" " * 8))]
        assert bare == [], f"{command}: options without help: {bare}"


def test_a_busy_port_is_one_line_saying_how_to_choose_another(capsys, monkeypatch):
    import socket

    monkeypatch.setenv("CONTEXTSYNTH_HOST", "127.0.0.1")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"port {port} on 127.0.0.1 is already in use" in err
    assert f"--port {port + 1}" in err and f"CONTEXTSYNTH_PORT={port + 1}" in err

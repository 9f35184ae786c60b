"""``contextsynth bench --long``: the longest chained session's last call timed per
budget against the tokenizer floor (no timing is asserted: the machine is shared)."""

import json

from app.cli import main
from app.corpus import CORPUS_DIR

RUNS = ("minisweagent-ds-chat-test-1-100-django__django-11099.jsonl",
        "minisweagent-ds-chat-dev-pydicom__pydicom-901.jsonl")


def test_bench_long_times_the_longest_sessions_last_call_at_each_budget(tmp_path, capsys):
    for name in RUNS:  # two real runs, cut to 40 messages each, chained as one session
        lines = (CORPUS_DIR / name).read_text(encoding="utf-8").splitlines()[:40]
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "manifest.json").write_text(json.dumps(
        [{"file": name, "family": "mini-swe-agent"} for name in RUNS]), encoding="utf-8")
    assert main(["bench", "--long", "--dir", str(tmp_path), "--repeat", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "mini-swe-agent x2: 79 messages, its last call, tier mid"
    rows = {line.split()[0]: line.split() for line in out[2:]}
    assert list(rows) == ["none", "8000", "32000", "128000"]
    for cells in rows.values():
        assert cells[3].endswith("x") and cells[5].endswith("%")
    for budget in (8000, 32000, 128000):  # what each call sends, within its budget
        assert int(rows[str(budget)][-1]) <= budget

"""A command that cannot find what it reads says so in one line, never a traceback."""

import pytest

from app.cli import main


@pytest.mark.parametrize("command", [["eval"], ["eval", "--split", "test"], ["bench"],
                                     ["bench", "--jobs"]])
def test_a_missing_corpus_is_one_line(tmp_path, capsys, command):
    assert main([*command, "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"contextsynth {command[0]}: no .jsonl transcripts in {tmp_path}")
    assert err.count("\n") == 1 and "Traceback" not in err

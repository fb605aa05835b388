"""``teamgym inspect PATH [-o FILE] [--step N]``: where the report goes, and errors as the CLI prints them."""

from __future__ import annotations

from teamgym.cli import main
from tests.report.rows import node_rows, write_run


def test_inspect_writes_beside_its_input(tmp_path, capsys):
    run = write_run(tmp_path / "run", {0: node_rows("s0-0", 0, "tool", [1.0]), 1: node_rows("s1-0", 0, "tool", [0.0])})
    assert main(["inspect", str(run)]) == 0
    assert (run / "report.html").is_file() and f"wrote {run / 'report.html'}" in capsys.readouterr().out
    assert main(["inspect", str(run / "batches" / "step_000001.jsonl")]) == 0
    assert (run / "batches" / "step_000001.html").is_file()
    assert main(["inspect", str(run), "-o", str(tmp_path / "one.html"), "--step", "1"]) == 0
    assert '"step":[1]' in (tmp_path / "one.html").read_text()


def test_inspect_errors_name_the_value_and_the_fix(tmp_path, capsys):
    assert main(["inspect", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"teamgym: error: PATH '{tmp_path}' holds no batches/step_N.jsonl" in err and "save_batches=true" in err
    run = write_run(tmp_path / "run", {0: node_rows("s0-0", 0, "tool", [1.0])})
    assert main(["inspect", str(run), "--max-chars", "0"]) == 2
    assert "--max-chars 0: expected an integer >= 1" in capsys.readouterr().err

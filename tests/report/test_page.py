"""The page: self-contained, its data embedded safely and compactly, texts cut at ``max_chars``, size bounded."""

from __future__ import annotations

import json
import re

from teamgym.report import build_payload, load_source, render_html, write_report
from teamgym.report.curves import learning_curves
from teamgym.report.derive import FLAGS
from tests.report.rows import node_rows, write_run


def embedded(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="teamgym-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def test_the_page_is_self_contained(tmp_path):
    run = write_run(tmp_path / "run", {0: node_rows("s0-0", 0, "tool", [1.0, 0.0])})
    html = render_html(load_source(run))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "<script src" not in html and "@import" not in html and "url(" not in html
    assert html.count("<script") == 2 and html.count("</script>") == 2


def test_texts_cannot_break_out_of_the_page(tmp_path):
    evil = "</script><script>alert(1)</script><!-- \u2028 \ud800"
    run = write_run(tmp_path / "run", {0: node_rows("s0-0", 0, "tool", [1.0], text=evil)})
    html = render_html(load_source(run))
    assert html.count("</script>") == 2
    strings = embedded(html)["strings"]
    assert "</script><script>alert(1)</script><!-- \u2028 ?" in strings


def test_columns_rows_and_episodes(tmp_path):
    rows = node_rows("s0-0", 0, "tool", [1.0, -0.5, 0.25], chosen=2) + node_rows("s0-0", 1, "planner", [2.0, 0.0])
    rows[1]["reward_terms"] = {"team": 0.0, "local": -0.5, "format": -0.5}
    rows[3]["infra_error"] = "sandbox down"
    for row, advantage in zip(rows, [1.0, -1.0, 0.0, None, 0.7]):
        row["advantage"], row["dropped"] = advantage, None if advantage is not None else "infra_error"
    run = write_run(tmp_path / "run", {3: rows}, metrics=[{"step": 3, "advantage/min": -1.0, "advantage/max": 1.0}])
    data = build_payload(load_source(run))
    cols = data["cols"]
    assert data["episodes"] == {"id": ["s0-0"], "task": ["7"], "step": [3], "success": [1]}
    assert data["agents"] == ["tool", "planner"] and data["terms"] == ["team", "local", "format"]
    assert cols["c"] == [0, 0, 1, 1, 0] and cols["b"] == [0, 1, 2, 0, 1] and cols["n"] == [0, 0, 0, 1, 1]
    assert cols["r"] == [1.0, -0.5, 0.25, 2.0, 0.0]
    assert cols["f"] == [0, FLAGS["format"], 0, FLAGS["infra"], 0]
    assert cols["v"][3] is None and all(v is not None for i, v in enumerate(cols["v"]) if i != 3)
    assert cols["q"][1] == [0.0, -0.5, -0.5] and cols["q"][0] == [0.0, 1.0, None]
    assert cols["k"] == [2] * 5 and cols["l"] == [-1.0] * 5
    assert len(set(cols["p"])) == 1  # one prompt stored once for every candidate sharing it
    assert [data["strings"][i] for i in cols["x"]] == [r["text"] for r in rows]
    assert "saved by the trainer" in data["meta"]["advantages"]["3"]


def test_long_texts_are_cut_and_the_file_is_bounded(tmp_path):
    long = "x" * 50_000
    rows = [r for e in range(20) for r in node_rows(f"s0-{e}", 0, "tool", [0.0] * 4, text=long + str(e))]
    run = write_run(tmp_path / "run", {0: rows})
    report = write_report(run, tmp_path / "r.html", max_chars=1000)
    data = embedded(report.read_text())
    assert {len(data["strings"][i]) for i in data["cols"]["x"]} == {1000}
    assert sorted(data["cut"].values()) == sorted(len(long + str(e)) for e in range(20))
    assert report.stat().st_size < 80 * 1000 + 120_000  # 20 distinct texts of 1,000 characters, plus the page


def test_learning_curves_panels():
    rows = [
        {"step": s, "reward/tool/mixed": s / 10, "reward/planner/mixed": 1 - s / 10, "kl": float("nan")}
        for s in range(5)
    ]
    svg = learning_curves(rows)
    assert svg.count("<svg") == 1 and ">tool<" in svg and ">planner<" in svg
    assert learning_curves([]) == "" and learning_curves([{"step": 0, "kl": float("nan")}]) == ""

"""The env catalogue: a fresh page per built-in env (the test that keeps docs/envs/ true), and how pages are made."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pytest

import teamgym
from teamgym import cli, registry
from teamgym.contrib.catalogue import default_out, render_page, stale_pages, write_pages
from teamgym.contrib.docstring import parse
from teamgym.contrib.episodes import builtin_ids
from tests.support.relay_env import RelayEnv

ROOT = Path(__file__).resolve().parents[2]


def test_every_builtin_env_has_a_fresh_page():
    if find_spec("textarena") is None:
        pytest.skip("docs/envs lists TextArena's games, registered only with the textarena extra (CI installs it)")
    stale = stale_pages(default_out(), builtin_ids(), source_root=ROOT)
    assert not stale, f"stale pages {[str(s.path) for s in stale]}: run `teamgym catalogue --write` and commit them"


@pytest.mark.parametrize("env_id", builtin_ids())
def test_a_page_has_every_part(env_id):
    page = (default_out() / f"{env_id}.md").read_text()
    for part in ("## Description", "## Rewards", "## Options", "## Scripted policies", "## Version history",
                 "## Example episode", "| agents |", "| observation space |", "| source | [teamgym/envs/"):
        assert part in page, f"{env_id}: no {part!r}"
    rewards = page.split("## Rewards")[1].split("\n## ")[0]
    assert "| --- |" in rewards and "team" in rewards, f"{env_id}: the docstring's reward table is not on the page"


@pytest.fixture
def relay_registered(monkeypatch):
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", RelayEnv, max_turns=2, deprecated="use relay-v1")
    teamgym.register("relay-v1", RelayEnv)


def test_stale_missing_and_orphan_pages_are_found(relay_registered, tmp_path: Path, capsys):
    ids = ["relay-v0", "relay-v1"]
    assert [p.name for p in write_pages(tmp_path, ids)] == ["relay-v0.md", "relay-v1.md", "README.md"]
    assert stale_pages(tmp_path, ids) == []
    page = tmp_path / "relay-v1.md"
    page.write_text(page.read_text().replace("listener", "LISTENER"))
    (tmp_path / "gone-v0.md").write_text("# gone-v0\n")
    (tmp_path / "relay-v0.md").unlink()
    found = {s.path.name: s.expected is None for s in stale_pages(tmp_path, ids)}
    assert found == {"relay-v1.md": False, "relay-v0.md": False, "gone-v0.md": True}
    assert cli.main(["catalogue", *ids, "--out", str(tmp_path)]) == 1
    assert "relay-v1.md is stale" in capsys.readouterr().out
    assert cli.main(["catalogue", *ids, "--out", str(tmp_path), "--write"]) == 0
    assert cli.main(["catalogue", *ids, "--out", str(tmp_path)]) == 0
    assert cli.main(["catalogue", "rellay-v1", "--out", str(tmp_path)]) == 2
    assert "did you mean 'relay-v1'" in capsys.readouterr().err


def test_a_page_shows_versions_options_policies_and_an_episode(relay_registered):
    page = render_page("relay-v1")
    assert "| [relay-v0](relay-v0.md) | deprecated: use relay-v1 |" in page and "| relay-v1 | newest |" in page
    assert "| `max_turns` | `int` | `3` |" in page
    assert "| `speaker` | `oracle`, `silent` |" in page
    assert "--- turn 0 | speaker" in page and "success=True" in page
    assert "| `team` | {0, 1} |" not in page  # relay's table has plain names: kept as written
    assert "| team | {0, 1} | the listener has said the word (on the listener's turn) |" in page
    assert "| `max_turns` | `int` | `2` |" in render_page("relay-v0")  # the registered default


def test_both_docstring_styles_become_sections():
    definition = parse(
        "``a-v0``: the summary\n  on two lines.\n\nIntro with ``code`` and :mod:`~teamgym.envs.planning.base`.\n\n"
        "Rewards (per step)\n\n    ====  ======  ==========\n    term  range   meaning\n    ====  ======  ==========\n"
        "    team  {0,     solved\n          1}      at last\n    ====  ======  ==========\n\n"
        "Version history\n    v0: first.\n\n>>> 1 + 1\n2\n"
    )
    assert definition.summary == "`a-v0`: the summary on two lines."
    assert [s.title for s in definition.sections] == ["", "Rewards (per step)", "Version history"]
    assert definition.sections[0].markdown == "Intro with `code` and `base`."
    assert definition.section("rewards").markdown.splitlines()[2] == "| team | {0, 1} | solved at last |"
    assert definition.examples == (">>> 1 + 1\n2",)
    bold = parse("Summary.\n\n**Task.** Walk.\n\nMore task.\n\n**Bad input** never raises. The program::\n\n"
                 "    print(1)\n\n    print(2)\n\n**Version history.** v0: first.")
    assert [s.title for s in bold.sections] == ["Task", "Bad input", "Version history"]
    assert bold.section("task").markdown == "Walk.\n\nMore task."
    assert bold.section("bad").markdown == ("**Bad input** never raises. The program:\n\n"
                                            "```text\nprint(1)\n\nprint(2)\n```")

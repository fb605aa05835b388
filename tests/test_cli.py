from __future__ import annotations

import io
import subprocess
import sys

import pytest

import teamgym
from teamgym import cli, registry
from tests.support.relay_env import RelayEnv


@pytest.fixture(autouse=True)
def relay_registered(monkeypatch):
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", RelayEnv)


def test_list_shows_ids_agents_descriptions(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "relay-v0" in out and "speaker, listener" in out and "Speaker passes a secret word" in out


def test_play_all_scripted_prints_the_episode(capsys):
    assert cli.main(["play", "relay-v0", "--agent", "all=scripted", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "turn 0 | speaker" in out and "turn 0 | listener" in out and "success=True" in out


def test_play_human_types_one_role():
    parser = cli._parser()
    args = parser.parse_args(["play", "relay-v0", "--agent", "speaker=scripted:oracle", "--task-id", "harbor"])
    stdin = io.StringIO("the word is\nharbor\n.\n")
    stdout = io.StringIO()
    assert cli._play(args, stdin=stdin, stdout=stdout) == 0
    out = stdout.getvalue()
    assert "The word is harbor" in out  # the scripted speaker
    assert "##### listener (turn 0) sees:" in out
    assert "success=True" in out


def test_bad_agent_spec_is_a_clean_error(capsys):
    assert cli.main(["play", "relay-v0", "--agent", "judge=scripted"]) == 2
    assert "roles with one" in capsys.readouterr().err
    assert cli.main(["play", "relay-v0", "--agent", "speaker=human"]) == 2
    assert cli.main(["play", "nope-v0"]) == 2


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.strip() == f"teamgym {teamgym.__version__}"


def test_console_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "teamgym", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "play" in result.stdout and "train" in result.stdout

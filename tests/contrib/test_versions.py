"""``teamgym versions``: record, check and accept behaviour fingerprints (on a test env and a record of its own)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import teamgym
from teamgym import cli, registry
from teamgym.contrib.versions import check_record, fingerprint, record
from teamgym.core import reward_terms
from teamgym.errors import InvalidArgumentError
from tests.support.relay_env import RelayEnv


@pytest.fixture(autouse=True)
def relay_registered(monkeypatch):
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", RelayEnv, max_turns=2)


def test_fingerprint_covers_every_scripted_team_and_is_deterministic():
    prints = fingerprint("relay-v0")
    assert sorted(prints) == ["empty/seed0", "oracle/seed0", "oracle/seed1", "silent/seed0", "silent/seed1"]
    assert prints == fingerprint("relay-v0")


class _TimedRelay(RelayEnv):
    """RelayEnv with a diagnostic info (as a sandbox's timing) that may change without a new version."""

    elapsed = 0.25

    def _apply_action(self, agent, action):
        outcome = super()._apply_action(agent, action)
        return replace(outcome, info={agent: {"elapsed_s": self.elapsed}})


class _StingyRelay(RelayEnv):
    """RelayEnv whose listener no longer earns the echo term: what an agent earns changed."""

    def _apply_action(self, agent, action):
        outcome = super()._apply_action(agent, action)
        return replace(outcome, terms={who: reward_terms(team=terms["team"], echo=0.0) if "echo" in terms else terms
                                       for who, terms in outcome.terms.items()})


def test_diagnostic_infos_are_not_behaviour_but_rewards_are():
    base = fingerprint("relay-v0")
    teamgym.register("relay-v0", _TimedRelay, max_turns=2, override=True)
    assert fingerprint("relay-v0") == base
    _TimedRelay.elapsed = 9.5
    assert fingerprint("relay-v0") == base
    teamgym.register("relay-v0", _StingyRelay, max_turns=2, override=True)
    assert fingerprint("relay-v0")["oracle/seed0"] != base["oracle/seed0"]


def test_a_change_of_behaviour_fails_until_it_is_a_new_version(tmp_path: Path):
    path = tmp_path / "fingerprints.json"
    assert record(path, ["relay-v0"]) == ["recorded relay-v0 (5 episodes)"]
    assert check_record(path, ["relay-v0"]) == []
    teamgym.register("relay-v0", RelayEnv, max_turns=4, override=True)  # silently changed: the silent team plays on
    (finding,) = check_record(path, ["relay-v0"])
    assert finding.kind == "changed" and "silent/seed0" in finding.episodes and "oracle/seed0" not in finding.episodes
    assert "register relay-v1" in finding.message() and "Version history" in finding.message()
    with pytest.raises(InvalidArgumentError, match="register relay-v1"):
        record(path, ["relay-v0"])
    # The policy's way: v1 has the new behaviour, v0 keeps the old one.
    teamgym.register("relay-v0", RelayEnv, max_turns=2, override=True)
    teamgym.register("relay-v1", RelayEnv, max_turns=4)
    assert record(path, ["relay-v0", "relay-v1"]) == ["recorded relay-v1 (5 episodes)"]
    assert check_record(path, ["relay-v0", "relay-v1"]) == []


def test_accepting_a_change_keeps_the_reason(tmp_path: Path, capsys):
    path = tmp_path / "fingerprints.json"
    record(path, ["relay-v0"])
    teamgym.register("relay-v0", RelayEnv, max_turns=3, override=True)
    assert cli.main(["versions", "relay-v0", "--file", str(path)]) == 1
    assert "behaves differently" in capsys.readouterr().out
    assert cli.main(["versions", "relay-v0", "--file", str(path), "--accept", "relay-v0"]) == 2
    assert "--reason" in capsys.readouterr().err
    assert cli.main(["versions", "relay-v0", "--file", str(path), "--accept", "relay-v0",
                     "--reason", "the turn limit was off by one"]) == 0
    entry = json.loads(path.read_text())["envs"]["relay-v0"]
    assert entry["accepted_changes"] == ["the turn limit was off by one"]


def test_removed_versions_and_unrecorded_ones_are_findings(tmp_path: Path, capsys):
    path = tmp_path / "fingerprints.json"
    record(path, ["relay-v0"])
    teamgym.register("relay-v1", RelayEnv)
    assert [f.kind for f in check_record(path, ["relay-v1"])] == ["unrecorded"]
    del registry._registry["relay-v0"]
    assert [(f.env_id, f.kind) for f in check_record(path, ["relay-v1"])] == [("relay-v0", "unregistered"),
                                                                             ("relay-v1", "unrecorded")]
    assert cli.main(["versions", "relay-v1", "--file", str(path), "--record"]) == 1
    out = capsys.readouterr().out
    assert "recorded relay-v1" in out and "relay-v0 is recorded but no longer registered" in out

"""``teamgym check``: every check reported with its expectation, a failure with what happened, where and the fix."""

from __future__ import annotations

import json
import logging

import pytest

from teamgym import cli
from teamgym.contrib.checks import CHECKS, check
from teamgym.core import Outcome, reward_terms
from teamgym.testing import env_checks
from tests.support.relay_env import RelayEnv


class FragileRelayEnv(RelayEnv):
    """A relay whose listener chokes on an empty reply (a garbage action), and whose speaker forgets its state."""

    def _apply_action(self, agent: str, action: str) -> Outcome:
        if agent == "listener" and not action.strip():
            raise KeyError("empty reply")
        return super()._apply_action(agent, action)


class MissingTermsRelayEnv(RelayEnv):
    """A relay that forgets the ``team`` term."""

    def _apply_action(self, agent: str, action: str) -> Outcome:
        outcome = super()._apply_action(agent, action)
        return Outcome({a: {k: v for k, v in t.items() if k != "team"} or reward_terms() for a, t in
                        outcome.terms.items()}, outcome.terminated)


def test_every_check_of_check_env_has_an_expectation_and_a_fix():
    names = [name for name, _ in env_checks("discussion-v0")]
    assert ["build", *names] == list(CHECKS)
    assert all(e.expected and e.fix for e in CHECKS.values())


def test_a_passing_env_reports_every_check(capsys):
    assert cli.main(["check", "tests.support.relay_env:RelayEnv", "--garbage", "50"]) == 0
    out = capsys.readouterr().out
    assert "Starting API test" not in out  # PettingZoo's progress lines stay out of the report
    assert out.count("PASS") == len(CHECKS) and "10 checks: all passed" in out


def test_pettingzoos_made_up_reset_option_is_not_reported_but_a_real_one_is(caplog):
    with caplog.at_level(logging.WARNING, logger="teamgym.core.env"):
        assert check("tests.support.relay_env:RelayEnv", num_garbage=20).passed
        assert "ignores unknown options" not in caplog.text  # api_test's reset(options={"options": 1})
        RelayEnv().reset(seed=0, options={"difficulty": 2})
    assert "ignores unknown options ['difficulty']" in caplog.text


def test_a_failure_says_what_was_expected_what_happened_where_and_the_fix():
    report = check("tests.contrib.test_checks:FragileRelayEnv", num_garbage=200)
    failed = {r.name: r for r in report.results if not r.passed}
    assert not report.passed and "garbage" in failed
    garbage = failed["garbage"]
    assert "raised KeyError" in garbage.happened and "empty reply" in garbage.happened
    assert "test_checks.py" in garbage.where and "_apply_action" in garbage.where
    assert garbage.fix == CHECKS["garbage"].fix
    assert report.results[-1].name == "scripted"  # later checks still ran
    text = report.to_text()
    assert "FAIL  garbage" in text and "expected: garbage completions" in text and "fix:" in text


def test_json_report_and_exit_status(capsys):
    assert cli.main(["check", "tests.contrib.test_checks:MissingTermsRelayEnv", "--garbage", "20", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False and report["num_garbage"] == 20
    failed = [c for c in report["checks"] if not c["passed"]]
    assert failed and all(c["expected"] and c["happened"] and c["fix"] for c in failed)
    assert any("KeyError: 'team'" in c["happened"] for c in failed)


def test_unknown_id_fails_the_build_with_a_suggestion(capsys):
    assert cli.main(["check", "dicussion-v0"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  build" in out and "did you mean 'discussion-v0'" in out and "fix the build first" in out
    assert cli.main(["check", "no_such_module:Env"]) == 1
    assert "cannot be imported" in capsys.readouterr().out


def test_bad_garbage_count_is_a_usage_error(capsys):
    assert cli.main(["check", "discussion-v0", "--garbage", "0"]) == 2
    assert "--garbage 0" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["discussion-v0", "discussion"])
def test_registered_ids_are_checked_through_make(target):
    assert check(target, num_garbage=30).passed

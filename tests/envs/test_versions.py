"""The versioning policy, kept honest: a registered version behaves as its recorded fingerprint says.

A change in an env's behaviour is a new ``-vN`` (CONTRIBUTING.md, "Versions"); ``teamgym versions`` says what to do
when one of these tests fails.
"""

from __future__ import annotations

import inspect
import re
from importlib.util import find_spec
from pathlib import Path

import pytest

import teamgym
from teamgym.contrib.episodes import builtin_ids
from teamgym.contrib.versions import check_record, load_record

RECORD = Path(__file__).with_name("fingerprints.json")


@pytest.mark.parametrize("env_id", builtin_ids())
def test_behaviour_matches_the_recorded_fingerprint(env_id):
    findings = [f for f in check_record(RECORD, [env_id]) if f.env_id == env_id]
    assert not findings, "\n".join(f.message() for f in findings)


def test_recorded_versions_stay_registered():
    recorded = set(load_record(RECORD)["envs"])
    if find_spec("textarena") is None:  # TextArena's games are registered only with the textarena extra
        recorded = {env_id for env_id in recorded if not env_id.startswith("textarena/")}
    missing = sorted(recorded - set(teamgym.list_envs()))
    assert not missing, f"{missing} are recorded but no longer registered: keep old versions (deprecated if need be)"


def test_every_registered_version_is_in_the_docstring_version_history():
    for env_id in builtin_ids():
        env_spec = teamgym.spec(env_id)
        doc = inspect.getdoc(inspect.getmodule(env_spec.load())) or ""
        history = re.search(r"Version history\W+(.*)", doc, flags=re.S)
        assert history, f"{env_id}: its module docstring has no 'Version history' section"
        assert re.search(rf"\bv{env_spec.version}\b", history.group(1)), (
            f"{env_id}: the docstring's 'Version history' does not mention v{env_spec.version}: say what changed"
        )

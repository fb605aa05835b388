from __future__ import annotations

import pytest

import teamgym
from teamgym import registry
from teamgym.core import TurnParallelEnv
from teamgym.errors import InvalidArgumentError, RegistrationError, UnknownEnvError
from tests.support.relay_env import RelayEnv


@pytest.fixture
def relay_registered(monkeypatch):
    """Registers relay-v0 and relay-v1 for one test, and removes them afterwards."""
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", RelayEnv, max_turns=2)
    teamgym.register("relay-v1", "tests.support.relay_env:RelayEnv", description="newer relay")
    return None


def test_make_and_unversioned_resolves_to_newest(relay_registered):
    env = teamgym.make("relay-v0")
    assert isinstance(env, RelayEnv) and env.max_turns == 2
    assert teamgym.spec("relay").id == "relay-v1"
    assert teamgym.make("relay").max_turns == 3
    assert teamgym.make("relay-v0", max_turns=5).max_turns == 5
    assert {"relay-v0", "relay-v1"} <= set(teamgym.list_envs())


def test_make_parallel_gives_turn_view(relay_registered):
    env = teamgym.make_parallel("relay-v0")
    assert isinstance(env, TurnParallelEnv)


def test_unknown_id_suggests_closest(relay_registered):
    with pytest.raises(UnknownEnvError, match="did you mean 'relay-v0'") as info:
        teamgym.make("rellay-v0")
    assert info.value.suggestions[0] == "relay-v0"
    with pytest.raises(UnknownEnvError, match="relay-v0"):
        teamgym.make("relay-v7")  # known name, unknown version: lists the versions
    with pytest.raises(UnknownEnvError):
        teamgym.spec("not an id!")
    assert isinstance(UnknownEnvError("x", []), LookupError)


def test_suggestions_only_for_close_names():
    with pytest.raises(UnknownEnvError) as info:
        teamgym.make("nope-v0")  # 0.5 from sudoku-v0 by difflib's ratio: a different word, not a typo
    assert info.value.suggestions == [] and "did you mean" not in str(info.value)
    registered = str(info.value).split("registered: ")[1].split(". See")[0].split(", ")
    # Every registered id is listed (an installed plugin's ids too, e.g. ascend-v0 under .ci/run), in sorted order.
    assert "coder_tester-v0" in registered and registered == sorted(teamgym.list_envs())
    with pytest.raises(UnknownEnvError, match="did you mean 'coder_tester-v0'"):
        teamgym.make("coder_testr-v0")


def test_spec_description_is_what_teamgym_list_shows(relay_registered):
    for env_id in ("coder_tester-v0", "plan_path-v0", "sudoku-v0", "sokoban-v0", "math_tool-v0", "discussion-v0"):
        assert teamgym.spec(env_id).description, env_id
    assert teamgym.spec("relay-v0").description == "Speaker passes a secret word to a listener."  # its docstring
    assert teamgym.spec("relay-v1").description == "newer relay"
    text = teamgym.pprint_registry(print_output=False)
    for env_id in teamgym.list_envs():
        assert teamgym.spec(env_id).summary() in next(row for row in text.splitlines() if row.startswith(env_id))


def test_unknown_kwarg_names_accepted_ones(relay_registered):
    with pytest.raises(InvalidArgumentError, match=r"max_turn.*did you mean 'max_turns'.*accepts") as info:
        teamgym.make("relay-v0", max_turn=3)
    assert "render_mode" in str(info.value)


def test_registration_errors(relay_registered):
    with pytest.raises(RegistrationError, match="no version"):
        teamgym.register("noversion", RelayEnv)
    with pytest.raises(RegistrationError, match="malformed"):
        teamgym.register("bad id-v0", RelayEnv)
    with pytest.raises(RegistrationError, match="already registered"):
        teamgym.register("relay-v0", "tests.support.relay_env:RelayEnv")
    teamgym.register("relay-v0", RelayEnv, max_turns=2)  # identical: a no-op
    teamgym.register("relay-v0", RelayEnv, override=True, max_turns=4)
    assert teamgym.make("relay-v0").max_turns == 4
    with pytest.raises(RegistrationError, match="package.module:Callable"):
        teamgym.register("broken-v0", "no_colon_here")
    teamgym.register("broken-v0", "no_such_module:Env")
    with pytest.raises(RegistrationError, match="cannot be loaded"):
        teamgym.make("broken-v0")


def test_entry_point_must_return_aec_env(relay_registered):
    teamgym.register("notenv-v0", lambda: object())
    with pytest.raises(RegistrationError, match="AECEnv"):
        teamgym.make("notenv-v0")


def test_pprint_registry_lists_agents_and_descriptions(relay_registered):
    text = teamgym.pprint_registry(print_output=False)
    line = next(row for row in text.splitlines() if row.startswith("relay-v1"))
    assert "speaker, listener" in line and "newer relay" in line
    line = next(row for row in text.splitlines() if row.startswith("relay-v0"))
    assert "Speaker passes a secret word" in line


def test_deprecated_version_warns_and_the_name_gives_the_newest(relay_registered):
    teamgym.register("relay-v0", RelayEnv, max_turns=2, deprecated="its listener was rewarded twice; use relay-v1",
                     override=True)
    with pytest.warns(FutureWarning, match=r"relay-v0 is deprecated: its listener.*newest version is relay-v1"):
        teamgym.make("relay-v0")
    assert teamgym.make("relay").max_turns == 3
    line = next(row for row in teamgym.pprint_registry(print_output=False).splitlines() if row.startswith("relay-v0"))
    assert "(deprecated: its listener was rewarded twice; use relay-v1)" in line

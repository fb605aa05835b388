from __future__ import annotations

import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from teamgym.errors import EnvStateError, InvalidArgumentError
from teamgym.wrappers import ProcessReward, RewardMixing, SingleAgentView, TurnLimit
from tests.support.relay_env import RelayEnv
from tests.support.tally_env import TallyEnv
from tests.wrappers.envs import DEFAULT_REGISTERED, FACTORIES, TEST_ENVS


def _partners(env, agent):
    """Partners that never solve the task, so that every role gets turns."""
    return {a: (lambda obs: "1") for a in env.possible_agents if a != agent}


def _cases():
    for name, make in FACTORIES.items():
        marks = () if name in TEST_ENVS or name in DEFAULT_REGISTERED else (pytest.mark.slow,)
        for agent in make().possible_agents:
            yield pytest.param(name, agent, marks=marks)


@pytest.mark.parametrize("name,agent", list(_cases()))
def test_gymnasium_check_env_for_every_role(name, agent):
    # gymnasium's checker fails a truncation right after the first step: give the tally env room (its partners
    # may
    # take every step of a turn)
    env = TallyEnv(max_turns=10) if name == "tally" else FACTORIES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no render fps", "no spec": not applicable to text envs
        gymnasium_check_env(SingleAgentView(env, agent, _partners(env, agent)), skip_render_check=True)


def test_gymnasium_check_env_through_wrappers():
    env = TurnLimit(ProcessReward(RewardMixing(TallyEnv(max_turns=10), 0.5), lambda e, a, x: 0.1), 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gymnasium_check_env(SingleAgentView(env, "bob", _partners(env, "bob")), skip_render_check=True)


def test_spaces_are_the_agents():
    base = RelayEnv()
    view = SingleAgentView(base, "listener", {"speaker": lambda obs: "hi"})
    assert view.observation_space == base.observation_space("listener")
    assert view.action_space == base.action_space("listener")


def test_partners_play_until_the_agents_turn_and_reward_accumulates():
    env = SingleAgentView(TallyEnv(), "alice", {"bob": lambda obs: "1", "carol": lambda obs: "1"})
    observation, info = env.reset(seed=0, options={"task_id": 0})  # target 10
    assert env.env.agent_selection == "alice" and info["turn"] == 0
    observation, reward, terminated, truncated, info = env.step("5")  # carol adds 1: 6, alice's turn again
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert env.env.agent_selection == "alice" and observation["prompt"].endswith("total so far 6.")
    observation, reward, terminated, truncated, info = env.step("4")  # solved: every agent gets team = 1
    assert (reward, terminated, truncated) == (1.0, True, False)
    with pytest.raises(EnvStateError, match="reset"):
        env.step("1")


def test_reward_includes_what_partners_earned_for_the_agent():
    env = SingleAgentView(TallyEnv(), "alice", {"bob": lambda obs: "0", "carol": lambda obs: "6"})
    env.reset(seed=0, options={"task_id": 0})
    observation, reward, terminated, truncated, info = env.step("2")  # carol 6 (8), carol 6 (14): overshoot
    assert reward == -1.0 and terminated


def test_info_terms_since_the_agents_last_turn_explain_its_reward():
    """``reward_terms`` are the last env step's (often a partner's); ``cumulative_reward_terms`` add up to the
    reward the view returns, partner steps included (what an adapter must report per turn)."""
    from teamgym.core.rewards import mix

    env = SingleAgentView(TallyEnv(), "alice", {"bob": lambda obs: "0", "carol": lambda obs: "6"})
    env.reset(seed=0, options={"task_id": 0})
    observation, reward, terminated, truncated, info = env.step("2")
    assert reward == -1.0
    assert mix(info["cumulative_reward_terms"], env.env.unwrapped.alpha["alice"]) == pytest.approx(reward)


def test_truncation_is_reported():
    env = SingleAgentView(RelayEnv(max_turns=1), "listener", {"speaker": lambda obs: "..."})
    env.reset(seed=0)
    assert env.step("no idea")[2:4] == (False, True)


@pytest.mark.parametrize("partners", [{}, {"speaker": lambda o: "", "judge": lambda o: ""}, {"speaker": 3}])
def test_bad_partners_raise(partners):
    with pytest.raises(InvalidArgumentError):
        SingleAgentView(RelayEnv(), "listener", partners)


def test_unknown_agent_raises():
    with pytest.raises(InvalidArgumentError, match="coder"):
        SingleAgentView(RelayEnv(), "coder", {})


def test_reset_skips_episodes_the_partners_end_before_the_agents_turn():
    oracle = TallyEnv()
    partners = {a: oracle.scripted_policy(a) for a in ("alice", "bob")}
    env = SingleAgentView(oracle, "carol", partners, max_resets=3)
    with pytest.raises(EnvStateError, match="before 'carol' had a turn"):
        env.reset(seed=0, options={"task_id": 0})  # alice 9, bob 1: solved before carol's turn, every time
    env = SingleAgentView(TallyEnv(), "carol", {"alice": lambda obs: "2", "bob": lambda obs: "0"})
    observation, info = env.reset(seed=0)
    assert info["skipped_episodes"] == 0 and env.env.agent_selection == "carol"


def test_the_agents_own_step_reaches_its_info_past_the_partners_steps(monkeypatch):
    # The tool acts, then the planner: the planner's step rebuilds every agent's infos, yet what the tool's own step
    # reported (its diagnostics, an infrastructure failure) is what the tool's info must show.
    from teamgym.envs.planning import base as planning_base
    from teamgym.sandbox import ExecResult

    env = gymnasium.make("teamgym/plan_path-v0", agent="tool", partners={"planner": lambda obs: "I pass."})
    env.reset(seed=0)
    info = env.step("```python\nprint('Actions: U')\n```")[-1]
    assert info["tool_status"] == "ok" and info["tool_plan"]["moves"] == 1
    broken = ExecResult(status="error", stderr="", returncode=None, infra_error="the fork server died")
    monkeypatch.setattr(planning_base.sandbox, "run_python", lambda *args, **kwargs: broken)
    info = env.step("```python\nprint('Actions: U')\n```")[-1]
    assert info["infra_error"] == "the fork server died"  # a trainer drops this sample
    assert info["tool_status"] == "sandbox failure"

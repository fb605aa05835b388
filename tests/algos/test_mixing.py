import math

import numpy as np
import pytest
import torch

from teamgym.algos import AlphaMixer, BanditAlpha, CorrelationAlpha, StaticAlpha
from teamgym.algos.mixing import ZERO_SPREAD
from teamgym.core.rewards import mix
from teamgym.errors import CheckpointError, InvalidArgumentError


def test_static_alpha_global_and_per_agent():
    assert StaticAlpha().alpha_for("coder") == 1.0
    mixer = StaticAlpha({"coder": 2.0}, default=0.5)
    assert mixer.alpha_for("coder") == 2.0 and mixer.alpha_for("tester") == 0.5
    mixer.update({"team_return": 1.0})
    assert mixer.history == [{"default": 0.5, "coder": 2.0}]
    clone = StaticAlpha()
    clone.load_state_dict(mixer.state_dict())
    assert clone.alpha_for("coder") == 2.0
    assert isinstance(mixer, AlphaMixer) and isinstance(BanditAlpha(["a"]), AlphaMixer)
    assert mix({"team": 1.0, "local": 0.25}, 2.0) == 2.25  # the one mixing function the alphas feed
    with pytest.raises(InvalidArgumentError):
        StaticAlpha(float("nan"))


def test_bandit_alpha_learns_the_best_arm():
    mixer = BanditAlpha(["coder", "tester"], grid=(0.0, 0.5, 1.0, 2.0), gamma=0.1, seed=0)
    for _ in range(600):
        # team return is highest when the coder uses alpha = 1 (a stationary toy landscape)
        mixer.update({"team_return": 1.0 - abs(mixer.alpha_for("coder") - 1.0)})
    probs = mixer.probabilities("coder")
    assert int(np.argmax(probs)) == 2 and probs[2] > 0.5
    assert len(mixer.history) == 600 and set(mixer.history[0]) == {"coder", "tester"}


def test_bandit_alpha_state_dict_resumes_identically():
    a = BanditAlpha(["x"], seed=3)
    for i in range(10):
        a.update({"team_return": float(i % 3)})
    b = BanditAlpha(["x"], seed=99)
    b.load_state_dict(a.state_dict())
    for i in range(10):
        a.update({"team_return": float(i)})
        b.update({"team_return": float(i)})
        assert a.alpha_for("x") == b.alpha_for("x")
    with pytest.raises(CheckpointError):
        b.load_state_dict({})
    with pytest.raises(InvalidArgumentError, match="team_return"):
        a.update({})
    with pytest.raises(InvalidArgumentError, match="unknown agent"):
        a.alpha_for("nobody")


# ---------------------------------------------------------------------- CorrelationAlpha


def reference_correlation_alpha(batches, agents, *, low=0.0, high=2.0, rate=0.1):
    """CorrelationAlpha's rule in plain loops: ``[(rho, alphas)]`` after each batch ``(groups, agents, local,
    team)``."""
    rho = {agent: 0.0 for agent in agents}
    out = []
    for groups, who, local, team in batches:
        members = {}
        for g, agent, x, y in zip(groups, who, local, team):
            members.setdefault((g, agent), []).append((x, y))
        per_agent = {agent: [] for agent in agents}
        for (_, agent), pairs in members.items():
            xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
            if len(pairs) < 2 or max(xs) - min(xs) <= ZERO_SPREAD or max(ys) - min(ys) <= ZERO_SPREAD:
                continue
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            sxy = sum((x - mx) * (y - my) for x, y in pairs)
            sxx = sum((x - mx) ** 2 for x in xs)
            syy = sum((y - my) ** 2 for y in ys)
            per_agent[agent].append(max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy))))
        for agent, values in per_agent.items():
            if values:
                rho[agent] = (1 - rate) * rho[agent] + rate * sum(values) / len(values)
        out.append((dict(rho), {agent: low + (high - low) * (1 - rho[agent]) / 2 for agent in agents}))
    return out


def random_batch(rng, agents, rows=60):
    """Groups of 1-5 rows, terms on a coarse grid (so constant terms and ties are common), one agent per group id
    most of the time and two sometimes (two groups then)."""
    groups = rng.integers(0, rows // 3, rows)
    who = [agents[int(g) % len(agents)] if rng.random() < 0.9 else agents[0] for g in groups]
    local = rng.integers(-2, 3, rows) * 0.25
    team = np.where(rng.random(rows) < 0.3, 0.0, rng.integers(-1, 3, rows) * 0.5)
    return groups.tolist(), who, local.tolist(), team.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_correlation_alpha_matches_the_plain_python_reference(seed):
    rng = np.random.default_rng(seed)
    agents = ["tool", "planner", "critic"]
    batches = [random_batch(rng, agents) for _ in range(8)]
    mixer = CorrelationAlpha(agents, low=0.5, high=3.0, rate=0.3)
    expected = reference_correlation_alpha(batches, agents, low=0.5, high=3.0, rate=0.3)
    moved = 0
    for (groups, who, local, team), (rho, alphas) in zip(batches, expected):
        before = dict(mixer.rho)
        mixer.observe(torch.tensor(groups), who, torch.tensor(local), np.asarray(team))
        assert mixer.rho == pytest.approx(rho, abs=1e-12)
        assert {a: mixer.alpha_for(a) for a in agents} == pytest.approx(alphas, abs=1e-12)
        moved += sum(before[a] != mixer.rho[a] for a in agents)
    assert moved > 0  # the batches are not all uninformative


def test_correlation_alpha_starts_at_the_midpoint_and_stays_in_range():
    assert CorrelationAlpha(["a"]).alpha_for("a") == 1.0  # rho = 0: AT-GRPO's alpha
    assert CorrelationAlpha(["a"], low=0.5, high=1.5).alpha_for("a") == 1.0
    rng = np.random.default_rng(0)
    mixer = CorrelationAlpha(["a", "b"], low=0.25, high=4.0, rate=1.0)
    for _ in range(50):
        mixer.observe(*random_batch(rng, ["a", "b"]))
        assert all(0.25 <= mixer.alpha_for(a) <= 4.0 for a in ("a", "b"))
    extreme = CorrelationAlpha(["a"], rate=1.0)
    extreme.observe([0, 0, 0], ["a"] * 3, [0.0, 1.0, 2.0], [0.0, 1e6, 2e6])  # perfectly aligned
    assert extreme.alpha_for("a") == pytest.approx(0.0, abs=1e-12)
    extreme.observe([0, 0, 0], ["a"] * 3, [0.0, 1.0, 2.0], [2e-3, 1e-3, 0.0])  # perfectly opposed
    assert extreme.alpha_for("a") == pytest.approx(2.0)


def test_aligned_groups_lower_alpha_and_opposed_groups_raise_it():
    mixer = CorrelationAlpha(["helper", "rival"])
    for _ in range(20):
        mixer.observe([0, 0, 0, 1, 1, 1, 2, 2], ["helper"] * 3 + ["rival"] * 3 + ["helper"] * 2,
                      [0.0, 0.5, 1.0, 1.0, 0.5, 0.0, -1.0, 0.0], [0.0, 0.4, 1.5, 0.0, 0.4, 1.5, 0.0, 1.0])
    assert mixer.alpha_for("helper") < 0.5 and mixer.alpha_for("rival") > 1.5
    assert mixer.groups == {"helper": 2, "rival": 1}
    assert mixer.metrics()["alpha_corr/rival"] == pytest.approx(-mixer.rho["helper"], abs=0.02)
    # a correlation within a group, not across them: two states where both terms are higher in the easy one, but
    # within each a better local term is worse for the team
    across = CorrelationAlpha(["a"], rate=1.0)
    across.observe([0, 0, 1, 1], ["a"] * 4, [0.0, 1.0, 10.0, 11.0], [1.0, 0.0, 11.0, 10.0])
    assert across.alpha_for("a") == 2.0


def test_groups_without_variance_leave_the_estimate_unchanged():
    mixer = CorrelationAlpha(["tool", "planner"], rate=0.5)
    mixer.observe([0, 0, 1, 1], ["planner"] * 2 + ["tool"] * 2, [0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0])
    state = mixer.state_dict()
    assert mixer.groups == {"tool": 1, "planner": 1} and mixer.rho["tool"] == 0.5
    # the team term constant (plan_path's tool on its own step), the local constant, a single candidate, and a
    # spread that is rounding only: no evidence, so nothing moves (calling it rho = 0 would pull alpha to 1)
    mixer.observe([0, 0, 0, 1, 1, 2, 3, 3], ["tool"] * 3 + ["planner"] * 2 + ["tool"] + ["planner"] * 2,
                  [-0.5, 0.0, 0.75, 0.3, 0.3, 1.0, 0.1 + 0.2, 0.3], [0.0, 0.0, 0.0, 1.0, 2.0, 5.0, 1.0, 2.0])
    assert mixer.rho == state["rho"] and mixer.groups == {"tool": 0, "planner": 0}
    mixer.observe([], [], [], [])
    assert mixer.rho == state["rho"]


def test_correlation_alpha_state_dict_round_trip_and_protocol():
    agents = ["tool", "planner"]
    rng = np.random.default_rng(1)
    a = CorrelationAlpha(agents, low=0.5, high=2.5, rate=0.2)
    for _ in range(5):
        in_force = {x: a.alpha_for(x) for x in agents}
        a.update({"team_return": 1.0})  # records the alphas in force; the estimate moves only in observe
        assert a.history[-1] == in_force and a.alpha_for("tool") == in_force["tool"]
        a.observe(*random_batch(rng, agents))
    b = CorrelationAlpha(agents)
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict() and len(b.history) == 5
    for _ in range(5):
        batch = random_batch(rng, agents)
        a.observe(*batch)
        b.observe(*batch)
        assert [a.alpha_for(x) for x in agents] == [b.alpha_for(x) for x in agents]
    assert isinstance(a, AlphaMixer)
    with pytest.raises(CheckpointError, match="CorrelationAlpha"):
        b.load_state_dict({"agents": ["tool"]})
    assert b.state_dict() == a.state_dict()  # a failed load changes nothing


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"agents": []}, r"agent names, got \[\]"),
    ({"agents": "tool"}, "agent names, got 'tool'"),
    ({"low": -0.5}, r"low=-0.5: expected >= 0"),
    ({"low": 1.0, "high": 1.0}, r"high=1.0 with low=1.0: expected high > low .* StaticAlpha"),
    ({"high": float("inf")}, r"high=inf: expected a finite number"),
    ({"rate": 0.0}, r"rate=0.0: expected a number in \(0, 1\]"),
    ({"rate": True}, r"rate=True: expected a finite number"),
])
def test_correlation_alpha_refuses_bad_arguments(kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message):
        CorrelationAlpha(**{"agents": ["a"], **kwargs})


def test_correlation_alpha_observe_refuses_bad_columns():
    mixer = CorrelationAlpha(["a"])
    with pytest.raises(InvalidArgumentError, match="unknown agent 'b'"):
        mixer.observe([0], ["b"], [0.0], [0.0])
    with pytest.raises(InvalidArgumentError, match="2 group ids, 2 agents, 2 local and 1 team"):
        mixer.observe([0, 0], ["a", "a"], [0.0, 1.0], [0.0])
    with pytest.raises(InvalidArgumentError, match="team must be finite, got nan at row 1"):
        mixer.observe([0, 0], ["a", "a"], [0.0, 1.0], [0.0, float("nan")])
    with pytest.raises(InvalidArgumentError, match="group_ids must be ints"):
        mixer.observe(["x", "y"], ["a", "a"], [0.0, 1.0], [0.0, 1.0])
    with pytest.raises(InvalidArgumentError, match="unknown agent"):
        mixer.alpha_for("nobody")
    assert mixer.rho == {"a": 0.0}

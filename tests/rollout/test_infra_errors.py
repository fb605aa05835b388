"""Infrastructure errors never steer the tree, and never reach other rows' advantages."""

from __future__ import annotations

import re
from functools import partial

import pytest
import torch

import teamgym
from teamgym.envs.planning import base as planning_base
from teamgym.rollout import LocalSlots, RolloutEngine, TreeSampling, default_prompt, task_seed
from teamgym.sandbox import ExecResult
from teamgym.train.columns import usable_rows
from tests.rollout.fakes import ScriptedSampler
from tests.rollout.test_engine import ReferenceSlots

BOOM = "```python\nprint('Actions: R')  # BOOM\n```"


def fake_sandbox(program: str, **kwargs) -> ExecResult:
    """Prints what the program's ``print('...')`` says; a program marked BOOM finds the sandbox down."""
    if "BOOM" in program:
        return ExecResult(status="error", infra_error="the fork server died")
    printed = re.findall(r"print\('([^']*)'\)", program)
    return ExecResult(status="ok", stdout="\n".join(printed) + "\n", returncode=0)


def tool_text(prompt: str, j: int) -> str:
    """The failing candidate scores 0, every healthy sibling pays a penalty (no code, or a bad plan): the old greedy
    rule advanced on the failure at every tool node."""
    return [BOOM, "no code here", "```python\nprint('Actions: L,L,L,L')\n```", "no code"][j % 4]


def planner_text(prompt: str, j: int) -> str:
    return ["Actions: R", "Actions: D", "nothing", "Actions: U"][j % 4]


@pytest.fixture
def failing_sandbox(monkeypatch):
    monkeypatch.setattr(planning_base.sandbox, "run_python", fake_sandbox)


def plan_engine(tree: TreeSampling, slots_cls=LocalSlots, tool=tool_text) -> RolloutEngine:
    env_fn = partial(teamgym.make, "plan_path-v0", size=4, max_turns=3)
    return RolloutEngine(slots_cls(env_fn, default_prompt),
                         {"tool": ScriptedSampler(tool), "planner": ScriptedSampler(planner_text)}, tree=tree, seed=3)


@pytest.mark.parametrize("strategy", ["greedy", "top_m", "adaptive", "budget"])
def test_infra_error_candidates_are_never_chosen(failing_sandbox, strategy):
    tree = TreeSampling(k=4, strategy=strategy, top_m=4, top_m_temperature=5.0, k0=2, k_max=6)
    batch = plan_engine(tree).rollout([1, 2, 3, 4, 5]).batch
    rows = batch.rows()
    failed = [r for r in rows if r["infra_error"]]
    assert failed and all(r["rewards"] == 0.0 for r in failed)
    assert any(r["rewards"] < 0 for r in rows if r["agent"] == "tool" and not r["infra_error"])
    for row in failed:
        siblings = [r for r in rows if (r["episode_id"], r["step"]) == (row["episode_id"], row["step"])]
        assert not row["chosen"] or all(r["infra_error"] for r in siblings)
    assert not any(r["chosen"] for r in failed)


def test_the_slot_keeps_the_state_it_advances_to_with_failures(failing_sandbox):
    """The copy-saving slot gives the rows and end states of the restore-everything reference when some candidates
    fail (a failed candidate never ranks first, so the state kept is the healthy winner's)."""
    results = []
    for slots_cls in (LocalSlots, ReferenceSlots):
        engine = plan_engine(TreeSampling(k=4), slots_cls)
        result = engine.rollout([1, 2, 3])
        results.append((result.batch.rows(), [(s.env.history, s.env.rewards) for s in engine.slots.slots]))
        engine.close()
    assert results[0] == results[1]


def test_a_node_whose_candidates_all_fail_advances_and_its_episode_is_dropped(failing_sandbox):
    batch = plan_engine(TreeSampling(k=2), tool=lambda prompt, j: BOOM).rollout([1, 2]).batch
    assert any(r["chosen"] and r["infra_error"] for r in batch.rows())
    assert not usable_rows(batch).any()


def test_a_trajectory_with_an_infra_error_is_dropped_whole(failing_sandbox):
    """The old wiring dropped the failed row only, so its episode's return (0 for the failed step) still entered the
    group statistics of the task's other trajectories, and its other rows were trained on a cut-short return."""
    seen: dict[str, int] = {}

    def tool(prompt: str, j: int) -> str:  # the first trajectory of a task to reach a prompt fails there
        seen[prompt] = seen.get(prompt, 0) + 1
        return BOOM if seen[prompt] == 1 else tool_text(prompt, 2)

    tasks = [t for t in (1, 2) for _ in range(3)]
    batch = plan_engine(TreeSampling(k=1), tool=tool).rollout(tasks, seeds=[task_seed(t) for t in tasks]).batch
    usable = usable_rows(batch).tolist()
    broken = {e for e, error in zip(batch.episode_id, batch.infra_error, strict=True) if error}
    assert broken and len(broken) < len(set(batch.episode_id))
    assert all(keep == (episode not in broken) for episode, keep in zip(batch.episode_id, usable, strict=True))
    assert len(batch.select(torch.tensor(usable))) < sum(not error for error in batch.infra_error)


def test_a_failed_continuation_takes_its_candidate_and_a_failed_tree_its_continuations(failing_sandbox):
    eng = plan_engine(TreeSampling(k=3, continue_unchosen=True), tool=lambda prompt, j: tool_text(prompt, j + 1))
    batch = eng.rollout([1, 2]).batch  # continuations sample one candidate (j = 0): a healthy one
    eng.close()
    rows = batch.rows()
    continued = sorted({r["episode_id"] for r in rows if r["fork"]})
    assert continued
    victim = continued[0]  # a continuation whose chosen path fails: dropped with the candidate it continues
    fork = next(r["fork"] for r in rows if r["episode_id"] == victim)
    row = next(i for i, r in enumerate(rows) if r["episode_id"] == victim)
    batch.infra_error[row] = "down"
    usable = usable_rows(batch).tolist()
    for i, r in enumerate(rows):
        if r["episode_id"] == victim or (r["episode_id"], r["step"], r["branch"]) == (
                fork["episode_id"], fork["step"], fork["branch"]):
            assert not usable[i]
        elif not r["infra_error"]:
            assert usable[i]
    root = next(i for i, r in enumerate(rows) if r["episode_id"] == "ep-1" and r["chosen"])
    batch.infra_error[root] = "down"  # the tree's chosen path fails: the tree goes, continuations included
    usable = usable_rows(batch).tolist()
    assert not any(usable[i] for i, r in enumerate(rows) if r["episode_id"].split("/")[0] == "ep-1")

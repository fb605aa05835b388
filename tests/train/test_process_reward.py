"""The learned process reward (``prm`` section): its config, its tree-value targets against a slow reference, the
exact process term the estimator sees, its metrics, exact resume, and no held-out task in its buffer."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest
import torch

import teamgym
from teamgym.algos import get_advantage
from teamgym.errors import InvalidArgumentError
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.train import TrainConfig, train
from teamgym.train.checkpoint import load_latest_checkpoint
from teamgym.train.cli import add_arguments, config_from_args
from teamgym.train.metrics import read_metrics
from teamgym.train.process_reward import (
    LearnedProcessReward,
    add_process_term,
    prm_labels,
    prm_scores,
    prm_targets,
)
from teamgym.train.sections import PRM_LOSSES, PRMConfig
from tests.support.slow_losses import slow_bce


@pytest.fixture(autouse=True)
def relay_registered(monkeypatch):
    """relay-v0 for this module's tests only (a copy of the registry, restored afterwards)."""
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("relay-v0", "tests.support.relay_env:RelayEnv")


#: A PRM small enough for a test run (a second per fit at most).
TINY_PRM = {"prm.n_embd": 16, "prm.n_layer": 1, "prm.n_head": 1, "prm.max_length": 64, "prm.epochs": 1}


def tiny(tmp_path: Path, name: str, **overrides) -> TrainConfig:
    values = dict(env_id="relay-v0", algo="at_grpo", env_kwargs={"max_turns": 2}, steps=2,
                  output_dir=str(tmp_path / name), tasks_per_step=2, k=2, n_layer=1, n_embd=16, n_head=1,
                  max_new_tokens=6, sft_steps=0, eval_tasks=2, checkpoint_every=1, progress_bar=False, plot=False,
                  torch_threads=1, **TINY_PRM, **{"prm.weight": 0.5, "prm.warmup_steps": 1})
    values.update(overrides)
    return TrainConfig.from_dict(values)


def batch_rows(output_dir: str, step: int) -> list[dict]:
    path = Path(output_dir) / "batches" / f"step_{step:06d}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


# ---------------------------------------------------------------------- the section


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [("prm.weight", -0.5, "--prm-weight"), ("prm.weight", float("nan"), ">= 0.0"), ("prm.target", "mc", "treerl"),
     ("prm.loss", "hinge", "expected one of mse, bce"),
     ("prm.n_embd", 0, "--prm-n-embd"), ("prm.n_layer", 1.5, "--prm-n-layer"), ("prm.n_head", 0, "--prm-n-head"),
     ("prm.max_length", 8, ">= 16"), ("prm.lr", 0.0, "> 0.0"), ("prm.epochs", 0, "--prm-epochs"),
     ("prm.batch_size", 0, "--prm-batch-size"), ("prm.buffer", 0, "--prm-buffer"),
     ("prm.warmup_steps", -1, "--prm-warmup-steps"), ("prm.warmup_steps", True, ">= 0")],
)
def test_bad_prm_values_name_the_field_the_value_and_the_fix(path, value, expected):
    with pytest.raises(InvalidArgumentError, match="expected") as err:
        TrainConfig.from_dict({"algo": "at_grpo", path: value})
    assert f"{path}={value!r}" in str(err.value) and expected in str(err.value)


def test_prm_heads_must_divide_its_width():
    with pytest.raises(InvalidArgumentError, match="n_head must divide n_embd"):
        PRMConfig(n_embd=30, n_head=4)


def test_the_prm_is_off_by_default_and_needs_a_tree_rollout_with_continued_candidates():
    assert TrainConfig().prm == PRMConfig() and PRMConfig().weight == 0 and not PRMConfig().enabled
    config = TrainConfig.from_dict({"algo": "at_grpo", "prm.weight": 0.5})
    assert config.tree_sampling.continue_unchosen is True  # every leaf a finished episode
    assert TrainConfig.from_dict({"algo": "at_grpo"}).tree_sampling.continue_unchosen is False
    with pytest.raises(InvalidArgumentError, match="prm.weight=0.5 with a trajectory rollout.*--algo at_grpo"):
        TrainConfig.from_dict({"algo": "turn_ppo", "prm.weight": 0.5})
    with pytest.raises(InvalidArgumentError, match="tree.continue_unchosen=False.*continue_unchosen=true"):
        TrainConfig.from_dict({"algo": "at_grpo", "prm.weight": 0.5, "tree.continue_unchosen": False})


def test_the_prm_flags_are_generated_from_the_section():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = {option for action in parser._actions for option in action.option_strings}
    assert {"--prm-weight", "--prm-target", "--prm-loss", "--prm-n-embd", "--prm-n-layer", "--prm-n-head",
            "--prm-max-length", "--prm-lr", "--prm-epochs", "--prm-batch-size", "--prm-buffer",
            "--prm-warmup-steps"} <= flags
    args = parser.parse_args(["--algo", "at_grpo", "--prm-weight", "0.5", "--prm-target", "masprm",
                              "--prm-warmup-steps", "3", "--prm-lr", "0.01", "--prm-buffer", "64",
                              "--prm-loss", "bce"])
    config = config_from_args(args)
    assert config.prm == PRMConfig(weight=0.5, target="masprm", loss="bce", warmup_steps=3, lr=0.01, buffer=64)


def test_the_prm_loss_is_mse_by_default_and_spelled_as_the_wrapper_spells_it():
    from teamgym.wrappers.prm import PRM_LOSSES as WRAPPER_LOSSES

    assert PRMConfig().loss == "mse" and PRMConfig(loss="bce").loss == "bce"
    assert PRM_LOSSES == WRAPPER_LOSSES  # spelled twice so that the config loads without torch


# ---------------------------------------------------------------------- the bce loss's labels and scores


def test_bce_labels_split_the_target_range_in_the_middle():
    assert prm_labels(torch.tensor([-1.0, -0.2, 0.0, 0.1, 1.0]), "masprm").tolist() == [0, 0, 0, 1, 1]
    assert prm_labels(torch.tensor([0.0, 0.4, 0.5, 0.6, 1.0]), "treerl").tolist() == [0, 0, 0, 1, 1]


def test_bce_scores_are_probabilities_mapped_onto_the_target_range():
    logits = torch.tensor([-50.0, -2.0, 0.0, 0.5, 50.0], dtype=torch.float64)
    p = [1 / (1 + math.exp(-z)) for z in logits.tolist()]
    treerl, masprm = prm_scores(logits, "treerl", "bce"), prm_scores(logits, "masprm", "bce")
    assert treerl.tolist() == pytest.approx(p, abs=1e-15)
    assert masprm.tolist() == pytest.approx([2 * q - 1 for q in p], abs=1e-15)
    assert 0 < treerl[0] < 1e-20 and treerl[-1] == 1.0 and masprm[0] == -1.0 and masprm[-1] == 1.0
    assert masprm[2] == 0.0 and treerl[2] == 0.5  # logit 0: the middle of the range, the labels' threshold
    assert torch.equal(prm_scores(logits, "masprm", "mse"), logits)  # a regressor's output is its score


def test_a_bce_prm_fits_its_labels_and_scores_in_the_target_range():
    """observe() under bce: the fit minimises the BCE of the buffer's labels (its first loss is the slow BCE of the
    logits the PRM had), and its scores are the mapped probabilities of those logits."""
    batch, _ = hand_made_tree()
    config = PRMConfig(weight=1.0, target="masprm", loss="bce", n_embd=8, n_layer=1, n_head=1, max_length=16,
                       epochs=1, batch_size=64)
    prm = LearnedProcessReward(config, seed=0)
    logits = prm.prm.score_texts(batch.text)
    step = prm.observe(batch, batch.text)
    labels = [float(t > 0) for t in step.targets.tolist()]
    assert 0 < sum(labels) < len(labels)
    assert step.metrics["prm/loss"] == pytest.approx(slow_bce(logits, labels), rel=1e-5)
    assert step.scores.tolist() == pytest.approx([2 / (1 + math.exp(-z)) - 1 for z in logits], abs=1e-12)


# ---------------------------------------------------------------------- targets from the sampling tree


def _row(episode: str, task: str, agent: str, step: int, branch: int, *, chosen: bool, ended: bool | None = None,
         fork: dict | None = None) -> dict:
    """A row; ``ended``: None if its step did not end an episode, else whether that episode was solved."""
    return {"episode_id": episode, "task_id": task, "agent": agent, "turn": step // 2, "step": step, "branch": branch,
            "chosen": chosen, "prompt_ids": [1], "completion_ids": [2], "logprobs": [-1.0],
            "text": f"{episode} {step}.{branch}", "reward_terms": {"team": 0.0, "local": 0.0}, "rewards": 0.0,
            "anchor": "a", "success": False, "infra_error": "", "fork": fork or {},
            "outcome": {} if ended is None else {"success": ended}}


def hand_made_tree() -> tuple[AgentTurnBatch, list[float]]:
    """Two trees, K = 3 then 2, two continued candidates; with each row's mean leaf success worked out by hand."""
    rows = [
        # episode e: step 0 (a), K = 3: b0 advanced, b1 continued (e/0.1), b2 ended the episode, solved
        _row("e", "t", "a", 0, 0, chosen=True), _row("e", "t", "a", 0, 1, chosen=False),
        _row("e", "t", "a", 0, 2, chosen=False, ended=True),
        # step 1 (b): b0 ended, solved; b1 advanced; b2 continued (e/1.2)
        _row("e", "t", "b", 1, 0, chosen=False, ended=True), _row("e", "t", "b", 1, 1, chosen=True),
        _row("e", "t", "b", 1, 2, chosen=False),
        # step 2 (a): both end the episode; the chosen one fails, the other solves it
        _row("e", "t", "a", 2, 0, chosen=True, ended=False), _row("e", "t", "a", 2, 1, chosen=False, ended=True),
        # the continuations: one candidate per node, played to the end
        _row("e/0.1", "t", "b", 1, 0, chosen=True, fork={"episode_id": "e", "step": 0, "branch": 1}),
        _row("e/0.1", "t", "a", 2, 0, chosen=True, ended=False, fork={"episode_id": "e", "step": 0, "branch": 1}),
        _row("e/1.2", "t", "a", 2, 0, chosen=True, ended=True, fork={"episode_id": "e", "step": 1, "branch": 2}),
        # episode f: one step, K = 2, both end it
        _row("f", "u", "a", 0, 0, chosen=True, ended=True), _row("f", "u", "a", 0, 1, chosen=False, ended=False),
    ]
    by_hand = [
        (1 + (0 + 1) + 1) / 4,  # e 0.0: leaves e 1.0, e 2.0, e 2.1, e/1.2 2.0
        0.0, 1.0,  # e 0.1: its continuation fails; e 0.2: a solved leaf
        1.0, 0.5, 1.0,  # e 1.0 leaf; e 1.1: leaves e 2.0, e 2.1; e 1.2: its continuation solves it
        0.0, 1.0,  # leaves
        0.0, 0.0, 1.0,  # continuations
        1.0, 0.0,  # f
    ]
    return AgentTurnBatch.from_rows(rows), by_hand


def slow_reference_values(batch: AgentTurnBatch) -> list[float]:
    """Each row's mean leaf success, from the tree rebuilt row by row: a row's parent is the chosen row of its episode
    at the closest earlier step, else (a continuation's first row) the candidate it continues, else the tree's root;
    its leaves are found by walking every descendant."""
    rows = batch.rows()
    children: dict[int, list[int]] = {i: [] for i in range(len(rows))}
    for i, row in enumerate(rows):
        earlier = [j for j, other in enumerate(rows) if other["episode_id"] == row["episode_id"] and other["chosen"]
                   and other["step"] < row["step"]]
        if earlier:
            children[max(earlier, key=lambda j: rows[j]["step"])].append(i)
        elif row["fork"]:
            fork = row["fork"]
            origin = next(j for j, other in enumerate(rows) if (other["episode_id"], other["step"], other["branch"])
                          == (fork["episode_id"], fork["step"], fork["branch"]))
            children[origin].append(i)

    def leaves(i: int) -> list[float]:
        if not children[i]:
            assert rows[i]["outcome"], rows[i]
            return [float(rows[i]["outcome"]["success"])]
        return [value for child in children[i] for value in leaves(child)]

    return [sum(leaves(i)) / len(leaves(i)) for i in range(len(rows))]


def test_tree_value_targets_equal_a_slow_reference_and_the_hand_computed_values():
    batch, by_hand = hand_made_tree()
    reference = slow_reference_values(batch)
    assert reference == pytest.approx(by_hand)
    assert prm_targets(batch, "treerl").tolist() == pytest.approx(by_hand)
    assert prm_targets(batch, "masprm").tolist() == pytest.approx([2 * v - 1 for v in by_hand])  # +1 / -1 leaves


def test_a_leaf_that_did_not_end_its_episode_is_refused():
    batch, _ = hand_made_tree()
    cut = batch.select([not fork for fork in batch.fork])  # the continuations gone: e 0.1 and e 1.2 are open leaves
    with pytest.raises(InvalidArgumentError, match=r"step 0, branch 1\).*continue_unchosen=true"):
        prm_targets(cut)


def test_the_process_term_goes_into_local_and_the_rewards_only():
    batch, _ = hand_made_tree()
    original = [dict(terms) for terms in batch.reward_terms]
    shared = batch.select([True] * len(batch))  # shares the terms dicts, as the trainer's train batch does
    values = torch.arange(len(batch), dtype=torch.float64) / 10
    add_process_term(shared, values)
    assert torch.allclose(shared.rewards, values.float())
    assert [t["process"] for t in shared.reward_terms] == pytest.approx(values.tolist())
    assert [t["local"] for t in shared.reward_terms] == pytest.approx(values.tolist())
    assert batch.reward_terms == original  # the rollout's own rows are untouched


def test_the_prm_refuses_held_out_tasks():
    batch, _ = hand_made_tree()
    prm = LearnedProcessReward(PRMConfig(weight=1.0, n_embd=8, n_layer=1, n_head=1, max_length=16), seed=0)
    with pytest.raises(InvalidArgumentError, match="held-out tasks"):
        prm.observe(batch, batch.text, heldout=["u"])
    assert not prm.buffer and prm.fits == 0


# ---------------------------------------------------------------------- in the trainer


def test_prm_metrics_are_logged_and_the_term_waits_for_the_warm_up(tmp_path):
    config = tiny(tmp_path, "run")
    train(config)
    rows = read_metrics(config.output_dir)
    for key in ("prm/loss", "prm/mean_score", "prm/target_mean", "prm/corr", "prm/active", "prm/buffer",
                "prm/term_mean"):
        assert all(key in row for row in rows), key
    assert [row["prm/active"] for row in rows] == [0.0, 1.0]  # warmup_steps=1: scores used from the second step
    assert rows[0]["prm/term_mean"] == 0.0 and rows[1]["prm/term_mean"] != 0.0
    assert rows[1]["prm/buffer"] > rows[0]["prm/buffer"] > 0
    state = load_latest_checkpoint(config.output_dir)[1]["prm"]
    assert state["fits"] == 2 and len(state["buffer"]) == rows[1]["prm/buffer"]
    assert all("### completion" in text and text.split("\n### completion\n")[0] for text, _, _ in state["buffer"])


def test_the_estimator_sees_exactly_weight_times_the_score_on_every_row(tmp_path):
    """Step 1's rollout is the same with the PRM on (weight 0.5, no warm-up) and off (weight 0, the same continued
    candidates): the estimator's reward of every row differs by 0.5 x the PRM's score, and AT-GRPO's advantages are
    those of the rewards with the term."""
    on = tiny(tmp_path, "on", steps=1, save_batches=True, **{"prm.warmup_steps": 0})
    off = tiny(tmp_path, "off", steps=1, save_batches=True, **{"prm.weight": 0.0, "tree.continue_unchosen": True})
    train(on)
    train(off)
    rows_on, rows_off = batch_rows(on.output_dir, 1), batch_rows(off.output_dir, 1)
    assert [(r["episode_id"], r["step"], r["branch"], r["text"]) for r in rows_on] == [
        (r["episode_id"], r["step"], r["branch"], r["text"]) for r in rows_off]
    trained = [(a, b) for a, b in zip(rows_on, rows_off, strict=True) if a["mixed_reward"] is not None]
    assert trained and all(not a["fork"] for a, _ in trained)  # continuations only feed the PRM under at_grpo
    assert {a["dropped"] for a in rows_on if a["fork"]} == {"continuation"}
    for a, b in trained:
        assert a["process"] == pytest.approx(0.5 * a["prm_score"], abs=1e-12)
        assert a["mixed_reward"] - b["mixed_reward"] == pytest.approx(0.5 * a["prm_score"], abs=1e-6)
        assert a["mixed_reward"] == pytest.approx(a["rewards"] + a["process"], abs=1e-6)
    rewards = torch.tensor([a["mixed_reward"] for a, _ in trained])
    episodes = [a["episode_id"] for a, _ in trained]
    agents = [a["agent"] for a, _ in trained]
    steps = torch.tensor([a["step"] for a, _ in trained])
    from teamgym.algos import factorize

    expected = get_advantage("at_grpo")(rewards, factorize(episodes)[0], factorize(agents)[0], steps)
    assert [a["advantage"] for a, _ in trained] == pytest.approx(expected.tolist(), abs=1e-5)
    assert all(r["prm_target"] is not None for r in rows_on if not r["infra_error"])


@pytest.mark.parametrize(("loss", "other"), [("mse", "bce"), ("bce", "mse")])
def test_resume_is_exact_with_the_prm_and_refuses_another_loss(tmp_path, loss, other):
    prm = {"prm.loss": loss, "prm.target": "masprm" if loss == "bce" else "treerl"}
    full = tiny(tmp_path, "full", **prm)
    train(full)
    train(tiny(tmp_path, "part", steps=1, **prm))
    with pytest.raises(InvalidArgumentError, match=f"fitted with the '{loss}' loss.*prm.loss='{other}'"):
        train(tiny(tmp_path, "part", **{**prm, "prm.loss": other}), resume=True)
    resumed = tiny(tmp_path, "part", **prm)
    train(resumed, resume=True)
    a, b = load_latest_checkpoint(full.output_dir)[1], load_latest_checkpoint(resumed.output_dir)[1]
    assert a["prm"]["loss"] == b["prm"]["loss"] == loss
    assert all(torch.equal(a["models"]["shared"][k], b["models"]["shared"][k]) for k in a["models"]["shared"])
    assert all(torch.equal(a["prm"]["model"][k], b["prm"]["model"][k]) for k in a["prm"]["model"])
    assert a["prm"]["buffer"] == b["prm"]["buffer"] and a["prm"]["fits"] == b["prm"]["fits"] == 2
    timing = {"step_seconds", "tokens_per_s", "prm/fit_seconds"}

    def same(rows):
        return [{k: v for k, v in row.items() if k not in timing and not k.endswith("time_share")} for row in rows]

    rows = read_metrics(full.output_dir)
    assert same(rows) == same(read_metrics(resumed.output_dir))
    if loss == "bce":
        assert all(-1 <= row["prm/mean_score"] <= 1 for row in rows)  # 2 p - 1


def test_the_prm_never_sees_held_out_tasks(tmp_path):
    config = tiny(tmp_path, "run", steps=3)
    trainer_tasks = teamgym.make("relay-v0").task_ids()
    heldout = set(trainer_tasks[-config.eval_tasks:])
    train(config)
    buffer = load_latest_checkpoint(config.output_dir)[1]["prm"]["buffer"]
    seen = {task for _, _, task in buffer}
    assert seen and seen <= set(trainer_tasks) - heldout

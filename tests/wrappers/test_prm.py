from __future__ import annotations

import sys

import pytest
import torch

from teamgym.algos import tree_values
from teamgym.errors import DependencyNotInstalled, InvalidArgumentError
from teamgym.testing import check_env
from teamgym.wrappers import ProcessReward, TransformersPRM
from teamgym.wrappers.prm import prm_loss
from tests.support.relay_env import RelayEnv
from tests.support.slow_losses import slow_bce, slow_mse
from tests.support.tally_env import TallyEnv

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny():
    return TransformersPRM.tiny(n_embd=16, n_layer=1, max_length=64, seed=0)


def _speaker_tree():
    """A sampling tree on the relay env: root -> 4 speaker candidates -> 2 listener continuations each
    (leaves).

    Returns the speaker nodes' (prompt, action) texts, the tree's parents and leaf rewards (the team outcome).
    """
    env = RelayEnv()
    env.reset(seed=0, options={"task_id": "apple"})
    root = env.snapshot()
    prompt = env.observe("speaker")["prompt"]
    listener = env.scripted_policy("listener")  # repeats what the speaker said
    parents, rewards, texts = [-1], [0.0], []
    for candidate in ["The word is apple", "It is apple", "The word is pear", "I will not say"]:
        env.restore(root)
        env.step(candidate)
        node = len(parents)
        parents.append(0)
        rewards.append(0.0)
        texts.append(TransformersPRM.text(prompt, candidate))
        branch = env.snapshot()
        for _ in range(2):
            env.restore(branch)
            env.step(listener(env.observe("listener")))
            parents.append(node)
            rewards.append(env.infos["listener"]["reward_terms"]["team"])
    return texts, torch.tensor(parents), torch.tensor(rewards)


def test_fits_tree_value_targets(tiny):
    texts, parents, leaf_rewards = _speaker_tree()
    values = tree_values(parents, leaf_rewards).value[1::3].float()  # the 4 speaker nodes
    assert values.tolist() == [1.0, 1.0, 0.0, 0.0]
    losses = tiny.fit(texts, values, epochs=20, lr=1e-2, batch_size=4)
    assert losses[-1] < losses[0]
    scores = tiny.score_texts(texts)
    assert min(scores[:2]) > max(scores[2:])


def test_fit_is_deterministic_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    runs = []
    for _ in range(2):
        prm = TransformersPRM.tiny(max_length=32, seed=1)
        runs.append(prm.fit(["a", "b", "c"], [0.0, 1.0, 0.5], epochs=3, seed=2))
    assert runs[0] == runs[1]
    assert torch.equal(torch.get_rng_state(), state)


def test_scores_through_process_reward_pass_check_env(tiny):
    check_env(lambda: ProcessReward(TallyEnv(), tiny, weight=0.1), num_garbage=20, api_cycles=2)


def test_long_texts_keep_their_end(tiny):
    batch = tiny._encode(["x" * 500 + "END"])
    assert batch["input_ids"].shape[1] == 64
    assert tiny.tokenizer.decode(batch["input_ids"][0][-3:]) == "END"


def test_missing_transformers_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(DependencyNotInstalled, match=r"teamgym\[hf\]"):
        TransformersPRM.tiny()


def test_needs_a_regressor_with_a_pad_token(tiny):
    class Config:
        num_labels = 2

    class Model:
        config = Config()

    with pytest.raises(InvalidArgumentError, match="num_labels=1"):
        TransformersPRM(Model(), tiny.tokenizer)


@pytest.mark.parametrize("texts,targets", [(["a"], [1.0, 2.0]), ([], []), (["a"], [float("nan")])])
def test_fit_rejects_bad_data(tiny, texts, targets):
    with pytest.raises(InvalidArgumentError):
        tiny.fit(texts, targets)


def test_the_bce_loss_matches_a_slow_reference():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(9, generator=generator, dtype=torch.float64) * 3
    labels = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.5, 0.0], dtype=torch.float64)
    expected = slow_bce(logits.tolist(), labels.tolist())
    assert float(prm_loss(logits, labels, "bce")) == pytest.approx(expected, rel=1e-12)
    assert float(prm_loss(logits, labels, "mse")) == pytest.approx(slow_mse(logits.tolist(), labels.tolist()),
                                                                    rel=1e-12)


@pytest.mark.parametrize("loss", ["mse", "bce"])
def test_a_fit_minimises_its_loss_on_the_model_outputs(loss):
    """One batch of the whole set: the first epoch's loss is the loss of the outputs the model had before the fit."""
    prm = TransformersPRM.tiny(n_embd=16, n_layer=1, max_length=32, seed=4)
    texts, labels = ["a yes", "bb no", "ccc yes", "d no", "eeeee no"], [1.0, 0.0, 1.0, 0.0, 0.0]
    outputs = prm.score_texts(texts)
    reference = (slow_bce if loss == "bce" else slow_mse)(outputs, labels)
    first = prm.fit(texts, labels, epochs=1, lr=1e-3, batch_size=len(texts), loss=loss)[0]
    assert first == pytest.approx(reference, rel=1e-5)


def test_mse_is_the_default_loss():
    runs = []
    for kwargs in ({}, {"loss": "mse"}):
        prm = TransformersPRM.tiny(n_embd=16, n_layer=1, max_length=32, seed=3)
        runs.append((prm.fit(["a", "bb", "ccc"], [0.0, 1.0, 0.5], epochs=2, seed=1, **kwargs),
                     prm.score_texts(["a", "bb", "ccc"])))
    assert runs[0] == runs[1]


def test_a_bce_fit_learns_labels_that_are_a_function_of_the_text():
    texts = [f"step {i}: {'agree' if i % 2 else 'refuse'}" for i in range(16)]
    labels = [float(i % 2) for i in range(16)]
    prm = TransformersPRM.tiny(n_embd=16, n_layer=1, max_length=32, seed=0)
    losses = prm.fit(texts, labels, epochs=15, lr=1e-2, batch_size=8, loss="bce")
    assert losses[-1] < losses[0]
    predicted = [float(z > 0) for z in prm.score_texts(texts)]
    assert sum(p == y for p, y in zip(predicted, labels, strict=True)) / len(labels) > 0.9


def test_bce_needs_labels_in_0_1_and_a_known_loss(tiny):
    with pytest.raises(InvalidArgumentError, match=r"labels in \[0, 1\].*\[-1.0, 1.0\]"):
        tiny.fit(["a", "b"], [-1.0, 1.0], loss="bce")
    with pytest.raises(InvalidArgumentError, match="loss='hinge': expected one of mse, bce"):
        tiny.fit(["a", "b"], [0.0, 1.0], loss="hinge")

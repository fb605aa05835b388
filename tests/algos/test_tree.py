import math

import numpy as np
import pytest
import torch

from teamgym.algos import masprm_targets, tree_values, treerl_advantages, treerl_terms
from teamgym.errors import InvalidArgumentError
from tests.algos.reference import tree_values_loop, treerl_loop


def random_forest(seed: int):
    """Random forest with shuffled node order, 1-3 roots."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 60))
    parents = [-1]
    for node in range(1, m):
        parents.append(-1 if rng.random() < 0.05 else int(rng.integers(0, node)))
    perm = rng.permutation(m)
    position = {old: new for new, old in enumerate(perm)}
    shuffled = [0] * m
    for old, parent in enumerate(parents):
        shuffled[position[old]] = -1 if parent < 0 else position[parent]
    rewards = rng.integers(0, 2, m).astype(float)
    return torch.tensor(shuffled), torch.tensor(rewards)


@pytest.mark.parametrize("seed", range(30))
def test_tree_values_and_treerl_match_loop(seed):
    parents, rewards = random_forest(seed)
    values = tree_values(parents, rewards)
    np.testing.assert_allclose(values.value.numpy(), tree_values_loop(parents.tolist(), rewards.tolist()))
    for samples in ("leaves", "nodes"):
        for normalize in (True, False):
            np.testing.assert_allclose(
                treerl_advantages(parents, rewards, samples=samples, normalize=normalize).numpy(),
                treerl_loop(parents.tolist(), rewards.tolist(), samples=samples, normalize=normalize),
            )


def test_local_advantages_telescope_along_a_path():
    parents = torch.tensor([-1, 0, 0, 1, 1, 2, 3, 3])
    rewards = torch.tensor([0, 0, 0, 0, 1, 1, 1, 0], dtype=torch.float64)
    v = tree_values(parents, rewards).value
    node, total = 7, 0.0
    while parents[node] >= 0:
        total += (v[node] - v[parents[node]]).item()
        node = int(parents[node])
    assert abs(total - (v[7] - v[0]).item()) < 1e-12
    assert v[0].item() == pytest.approx(3 / 4)  # leaves 4, 5, 6, 7
    assert treerl_advantages(parents, rewards)[0].item() == 0.0
    global_adv, local_adv = treerl_terms(parents, rewards)
    assert global_adv[7].item() == pytest.approx((v[7] - v[0]).item()) and local_adv[0].item() == 0.0
    assert local_adv[7].item() + local_adv[3].item() + local_adv[1].item() == pytest.approx(
        global_adv[7].item()
    )


def test_treerl_per_node_rows_carry_what_the_leaf_paths_carry_in_treerl():
    # Hand-computed AT-GRPO-style tree: root 0; step-0 candidates 1 (chosen, continued by two candidates 3 and 4)
    # and 2 (unchosen, continued to the end by one candidate 5). Leaf rewards are path returns: 3, 1, 0.
    parents = torch.tensor([-1, 0, 0, 1, 1, 2])
    rewards = torch.tensor([0.0, 0.0, 0.0, 3.0, 1.0, 0.0], dtype=torch.float64)
    # V = (4/3, 2, 0, 3, 1, 0); GA + LA per node: 0, 4/3, -8/3, 5/3 + 1, -1/3 - 1, -4/3 + 0; |L| = (3, 2, 1, 1, 1, 1)
    per_leaf = [0.0, 4 / 3 / math.sqrt(2), -8 / 3, 8 / 3, -4 / 3, -4 / 3]
    assert treerl_advantages(parents, rewards).tolist() == pytest.approx(per_leaf)
    # TreeRL trains one sequence per leaf, so node 1's tokens occur in both leaves' paths (3 and 4), each time with
    # (GA + LA) / sqrt(2): sqrt(2) (GA + LA) in all. A batch that holds each node once (the trainer's rows) must give
    # node 1 that total; with 1 / sqrt(2) alone the chosen (best) candidate would weigh half what its paths weigh.
    per_node = [0.0, 4 / 3 * math.sqrt(2), -8 / 3, 8 / 3, -4 / 3, -4 / 3]
    assert treerl_advantages(parents, rewards, samples="nodes").tolist() == pytest.approx(per_node)
    assert treerl_advantages(parents, rewards, samples="nodes", normalize=False).tolist() == pytest.approx(
        [0.0, 8 / 3, -8 / 3, 8 / 3, -4 / 3, -4 / 3])
    with pytest.raises(InvalidArgumentError, match="samples"):
        treerl_advantages(parents, rewards, samples="paths")


def test_masprm_targets_in_range_and_sign():
    parents = torch.tensor([-1, 0, 0, 1, 1])
    targets = masprm_targets(parents, torch.tensor([0.0, 0.0, -1.0, 1.0, 1.0]))
    assert targets.tolist() == pytest.approx([1 / 3, 1.0, -1.0, 1.0, 1.0])
    with pytest.raises(InvalidArgumentError, match=r"\[-1, 1\]"):
        masprm_targets(parents, torch.tensor([0.0, 0.0, -3.0, 1.0, 1.0]))


def test_tree_errors():
    with pytest.raises(InvalidArgumentError, match="cycle"):
        tree_values(torch.tensor([1, 0, -1]), torch.zeros(3))
    with pytest.raises(InvalidArgumentError, match="not a node index"):
        tree_values(torch.tensor([-1, 5]), torch.zeros(2))
    with pytest.raises(InvalidArgumentError, match="own parent"):
        tree_values(torch.tensor([0]), torch.zeros(1))

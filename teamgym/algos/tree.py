"""Values and advantages on a sampling tree (direction B): Monte-Carlo node values and TreeRL advantages.

A forest of sampling trees is given as ``parents`` (``(M,)`` int64, ``-1`` for roots, any node order) and
``leaf_rewards`` (``(M,)``, read only at leaves, i.e. nodes without children; put anything, e.g. 0, elsewhere).
In AT-GRPO's tree each (agent, turn) node has K children, so these values come for free from the rollouts and serve
as process-reward-model (PRM) targets.
"""

from __future__ import annotations

import torch

from teamgym.algos._checks import check_ids, check_same_length, check_values
from teamgym.algos.registry import register_advantage
from teamgym.errors import InvalidArgumentError

__all__ = ["TreeValues", "tree_values", "treerl_advantages", "masprm_targets"]


class TreeValues:
    """Per-node results of :func:`tree_values`: ``value``, ``leaf_count``, ``root``, ``is_leaf`` (all ``(M,)``)."""

    def __init__(
        self, value: torch.Tensor, leaf_count: torch.Tensor, root: torch.Tensor, is_leaf: torch.Tensor
    ):
        self.value = value  # (M,) float64 mean leaf reward below the node
        self.leaf_count = leaf_count  # (M,) float64 number of leaves below (1 for a leaf)
        self.root = root  # (M,) int64 root of the node's tree
        self.is_leaf = is_leaf  # (M,) bool


def _check_tree(parents: torch.Tensor) -> torch.Tensor:
    parents = check_ids("parents", parents)
    m = parents.numel()
    if bool(((parents < -1) | (parents >= m)).any()):
        bad = int(((parents < -1) | (parents >= m)).nonzero()[0])
        raise InvalidArgumentError(
            f"parents[{bad}] = {int(parents[bad])} is not a node index in [0, {m}) nor -1 (root): fix the tree"
        )
    if bool((parents == torch.arange(m)).any()):
        bad = int((parents == torch.arange(m)).nonzero()[0])
        raise InvalidArgumentError(f"node {bad} is its own parent: roots have parent -1")
    return parents


def tree_values(parents: torch.Tensor, leaf_rewards: torch.Tensor) -> TreeValues:
    """Monte-Carlo value of every node: the mean reward of the leaves below it.

    ``V(s) = mean_{l in L(s)} r_l`` (TreeRL, arXiv 2506.11902, Eq. 3; MASPRM's ``q_sum / visits`` when every leaf is
    one rollout backed up along its path, arXiv 2510.24803, Sec. 3). Vectorised by walking all leaves up one level
    per step: O(M * depth). Raises ``InvalidArgumentError`` on cycles or out-of-range parents.
    """
    parents = _check_tree(parents)
    leaf_rewards = check_values("leaf_rewards", leaf_rewards)
    m = check_same_length(parents=parents, leaf_rewards=leaf_rewards)
    has_child = torch.zeros(m, dtype=torch.bool)
    has_child[parents[parents >= 0]] = True
    is_leaf = ~has_child
    reward_sum = torch.zeros(m, dtype=torch.float64)
    leaf_count = torch.zeros(m, dtype=torch.float64)
    current = torch.nonzero(is_leaf).squeeze(1)
    carried = leaf_rewards.to(torch.float64)[current]
    for _ in range(m + 1):
        if current.numel() == 0:
            break
        reward_sum.index_add_(0, current, carried)
        leaf_count.index_add_(0, current, torch.ones_like(carried))
        up = parents[current]
        keep = up >= 0
        current, carried = up[keep], carried[keep]
    else:
        raise InvalidArgumentError("parents contains a cycle: every chain must end at a root (parent -1)")
    root = torch.arange(m)
    for _ in range(m + 1):
        up = parents[root]
        if bool((up < 0).all()):
            break
        root = torch.where(up >= 0, up, root)
    else:
        raise InvalidArgumentError("parents contains a cycle: every chain must end at a root (parent -1)")
    value = reward_sum / leaf_count.clamp_min(1.0)
    return TreeValues(value, leaf_count, root, is_leaf)


def masprm_targets(parents: torch.Tensor, leaf_rewards: torch.Tensor) -> torch.Tensor:
    """MASPRM value targets in [-1, 1]: mean of the +1 (correct) / -1 (wrong) leaf rewards below each node.

    Source: arXiv 2510.24803 (code milad1378yz/MASPRM). Train a PRM with BCE on ``target > 0`` or regress on it.
    """
    leaf_rewards = check_values("leaf_rewards", leaf_rewards)
    values = tree_values(parents, leaf_rewards)
    leaves = leaf_rewards[values.is_leaf]
    if bool(((leaves < -1) | (leaves > 1)).any()):
        raise InvalidArgumentError(
            "MASPRM leaf rewards must lie in [-1, 1] (+1 correct, -1 wrong): rescale them"
        )
    return values.value.to(leaf_rewards.dtype)


@register_advantage("treerl")
def treerl_advantages(
    parents: torch.Tensor, leaf_rewards: torch.Tensor, *, normalize: bool = True
) -> torch.Tensor:
    """TreeRL per-node advantage ``(V(s) - V(root) + V(s) - V(parent)) / sqrt(|L(s)|)``; roots get 0.

    Source: TreeRL (arXiv 2506.11902, Eqs. 4-6; code THUDM/TreeRL). Global term ``V(s) - V(root)``, local term
    ``V(s) - V(parent)``; local terms along a root-to-leaf path telescope to ``V(leaf) - V(root)``. The
    ``1/sqrt(#leaves below)`` factor (``normalize``) keeps nodes shared by many leaves from dominating. Each token of
    the segment that produced node s gets this value.
    """
    values = tree_values(parents, leaf_rewards)
    parents = parents.to(torch.int64)
    v = values.value
    parent_value = torch.where(parents >= 0, v[parents.clamp_min(0)], v)
    advantage = (v - v[values.root]) + (v - parent_value)
    if normalize:
        advantage = advantage / torch.sqrt(values.leaf_count)
    advantage = torch.where(parents >= 0, advantage, torch.zeros_like(advantage))
    return advantage.to(leaf_rewards.dtype if leaf_rewards.is_floating_point() else torch.float32)

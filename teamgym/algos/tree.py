"""Values and advantages on a sampling tree (direction B): Monte-Carlo node values and TreeRL advantages.

A forest of sampling trees is given as ``parents`` (``(M,)`` int64, ``-1`` for roots, any node order) and
``leaf_rewards`` (``(M,)``, read only at leaves, i.e. nodes without children; put anything, e.g. 0,
elsewhere). In AT-GRPO's tree each (agent, turn) node has K children, so these values come for free from the
rollouts and serve as process-reward-model (PRM) targets.
"""

from __future__ import annotations

import torch

from teamgym.algos._checks import check_ids, check_output, check_same_length, check_values
from teamgym.algos.registry import register_advantage
from teamgym.errors import InvalidArgumentError

__all__ = ["TREERL_SAMPLES", "TreeValues", "tree_values", "treerl_terms", "treerl_advantages", "masprm_targets"]


class TreeValues:
    """Per-node results of :func:`tree_values`; every field is an ``(M,)`` tensor."""

    def __init__(
        self, value: torch.Tensor, leaf_count: torch.Tensor, root: torch.Tensor, is_leaf: torch.Tensor
    ):
        self.value = value  # (M,) float64 mean leaf reward below the node
        self.leaf_count = leaf_count  # (M,) float64 number of leaves below (1 for a leaf)
        self.root = root  # (M,) int64 root of the node's tree
        self.is_leaf = is_leaf  # (M,) bool


def _roots(parents: torch.Tensor) -> torch.Tensor:
    """Root of every node by pointer doubling (O(M log depth)); raises on out-of-range parents and cycles."""
    m = parents.numel()
    low, high = (int(v) for v in torch.aminmax(parents)) if m else (-1, -1)
    if low < -1 or high >= m:
        bad = int(((parents < -1) | (parents >= m)).nonzero()[0])
        raise InvalidArgumentError(
            f"parents[{bad}] = {int(parents[bad])} is not a node index in [0, {m}) nor -1 (root): "
            "fix the tree"
        )
    index = torch.arange(m, device=parents.device)
    jump = torch.where(parents >= 0, parents, index)  # roots point to themselves
    for _ in range(max(1, m).bit_length() + 1):
        further = jump.index_select(0, jump)
        if torch.equal(further, jump):
            break
        jump = further
    if m and not bool((parents[jump] < 0).all()):
        if bool((parents == index).any()):
            bad = int((parents == index).nonzero()[0])
            raise InvalidArgumentError(f"node {bad} is its own parent: roots have parent -1")
        raise InvalidArgumentError("parents contains a cycle: every chain must end at a root (parent -1)")
    return jump


def tree_values(parents: torch.Tensor, leaf_rewards: torch.Tensor) -> TreeValues:
    """Monte-Carlo value of every node: the mean reward of the leaves below it.

    ``V(s) = mean_{l in L(s)} r_l`` (TreeRL, arXiv 2506.11902; MASPRM's ``q_sum / visits`` when every leaf
    is one rollout backed up along its path, arXiv 2510.24803). Every leaf's reward is added to all its
    ancestors, one level per step for all leaves at once: O(leaves * depth) work, ``depth`` tensor ops. Raises
    ``InvalidArgumentError`` on cycles or out-of-range parents.
    """
    parents = check_ids("parents", parents)
    leaf_rewards = check_values("leaf_rewards", leaf_rewards)
    m = check_same_length(parents=parents, leaf_rewards=leaf_rewards)
    root = _roots(parents)
    is_leaf = torch.bincount(parents + 1, minlength=m + 1)[1:] == 0
    # slot m is a sink for walks that went past their root
    up = torch.cat([torch.where(parents >= 0, parents, m), torch.tensor([m], device=parents.device)])
    reward_sum = torch.zeros(m + 1, dtype=torch.float64, device=parents.device)
    leaf_count = torch.zeros(m + 1, dtype=torch.float64, device=parents.device)
    current = torch.nonzero(is_leaf).squeeze(1)
    carried = leaf_rewards.to(torch.float64).index_select(0, current)
    ones = torch.ones_like(carried)
    while True:
        reward_sum.index_add_(0, current, carried)
        leaf_count.index_add_(0, current, ones)
        current = up.index_select(0, current)
        if bool((current == m).all()):
            break
    value = reward_sum[:m] / leaf_count[:m].clamp_min(1.0)
    return TreeValues(value, leaf_count[:m], root, is_leaf)


def masprm_targets(parents: torch.Tensor, leaf_rewards: torch.Tensor) -> torch.Tensor:
    """MASPRM value targets in [-1, 1]: mean of the +1 (correct) / -1 (wrong) leaf rewards below each node.

    Source: arXiv 2510.24803 (code milad1378yz/MASPRM). Train a PRM with BCE on ``target > 0`` or regress on
    it.
    """
    leaf_rewards = check_values("leaf_rewards", leaf_rewards)
    values = tree_values(parents, leaf_rewards)
    leaves = leaf_rewards[values.is_leaf]
    if bool(((leaves < -1) | (leaves > 1)).any()):
        raise InvalidArgumentError(
            "MASPRM leaf rewards must lie in [-1, 1] (+1 correct, -1 wrong): rescale them"
        )
    return values.value.to(leaf_rewards.dtype)


def treerl_terms(parents: torch.Tensor, leaf_rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """TreeRL's two process signals per node: ``(global, local) = (V(s) - V(root), V(s) - V(parent))``.

    Both ``(M,)`` float64; roots get 0 in both. Source: TreeRL (arXiv 2506.11902; code THUDM/TreeRL).
    """
    values = tree_values(parents, leaf_rewards)
    parents = parents.to(torch.int64)
    v = values.value
    is_root = parents < 0
    global_adv = torch.where(is_root, 0.0, v - v.index_select(0, values.root))
    local_adv = torch.where(is_root, 0.0, v - v.index_select(0, parents.clamp_min(0)))
    return global_adv, local_adv


#: How a training batch holds a sampling tree, for :func:`treerl_advantages`.
TREERL_SAMPLES = ("leaves", "nodes")


@register_advantage("treerl")
def treerl_advantages(
    parents: torch.Tensor, leaf_rewards: torch.Tensor, *, normalize: bool = True, samples: str = "leaves"
) -> torch.Tensor:
    """TreeRL per-node advantage ``(V(s) - V(root) + V(s) - V(parent)) / sqrt(|L(s)|)``; roots get 0.

    Source: TreeRL (arXiv 2506.11902; code THUDM/TreeRL). Global term ``V(s) - V(root)``, local term
    ``V(s) - V(parent)`` (both from :func:`treerl_terms`); local terms along a root-to-leaf path telescope to
    ``V(leaf) - V(root)``.

    ``samples`` says how the training batch holds the tree:

    * ``"leaves"`` (TreeRL's trainer): one sequence per leaf, its root-to-leaf path, so the tokens of node s occur
      in ``|L(s)|`` sequences, each time with the value above. The ``1/sqrt(|L(s)|)`` factor (``normalize``;
      THUDM/TreeRL ``compute_weighted_update``, style ``sqrt``) keeps those repeated nodes from dominating: node s
      weighs ``sqrt(|L(s)|) (GA + LA)`` in the loss, all its copies together.
    * ``"nodes"``: one row per node (teamgym's trainer: every candidate is one row). The row gets what its
      ``|L(s)|`` copies get together in TreeRL, ``|L(s)|`` times the value above: ``(GA + LA) sqrt(|L(s)|)``, or
      ``(GA + LA) |L(s)|`` without ``normalize``. Without this, a node shared by many leaves would weigh
      ``1/|L(s)|`` of what TreeRL gives it; in AT-GRPO's tree those are the chosen (best) candidates.
    """
    if samples not in TREERL_SAMPLES:
        raise InvalidArgumentError(
            f"samples={samples!r}: expected 'leaves' (one training sequence per leaf path, TreeRL's) or 'nodes' "
            "(one row per node, the trainer's)"
        )
    values = tree_values(parents, leaf_rewards)
    parents = parents.to(torch.int64)
    v = values.value
    is_root = parents < 0
    parent_value = v.index_select(0, parents.clamp_min(0))
    advantage = (v - v.index_select(0, values.root)) + (v - parent_value)
    if normalize:
        advantage = advantage / torch.sqrt(values.leaf_count)
    if samples == "nodes":
        advantage = advantage * values.leaf_count
    advantage = torch.where(is_root, 0.0, advantage)
    return check_output("treerl advantages",
                        advantage.to(leaf_rewards.dtype if leaf_rewards.is_floating_point() else torch.float32))

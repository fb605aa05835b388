"""Slow, obvious loop implementations that the vectorised estimators are tested against."""

from __future__ import annotations

import math
from collections import defaultdict


def std(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def group_ids_loop(*columns) -> list[int]:
    seen: dict = {}
    return [seen.setdefault(key, len(seen)) for key in zip(*columns, strict=True)]


def grpo_loop(rewards, group_ids, scale_by_std=True, eps=1e-6) -> list[float]:
    groups = defaultdict(list)
    for r, g in zip(rewards, group_ids, strict=True):
        groups[g].append(r)
    out = []
    for r, g in zip(rewards, group_ids, strict=True):
        members = groups[g]
        if len(members) == 1:
            out.append(0.0)
            continue
        a = r - sum(members) / len(members)
        out.append(a / (std(members) + eps) if scale_by_std else a)
    return out


def rloo_loop(rewards, group_ids) -> list[float]:
    groups = defaultdict(list)
    for r, g in zip(rewards, group_ids, strict=True):
        groups[g].append(r)
    out = []
    for r, g in zip(rewards, group_ids, strict=True):
        members = groups[g]
        out.append(0.0 if len(members) == 1 else r - (sum(members) - r) / (len(members) - 1))
    return out


def discounted_returns_loop(rewards, trajectory_ids, turn_ids, gamma) -> list[float]:
    rows = defaultdict(list)
    for i, t in enumerate(trajectory_ids):
        rows[t].append(i)
    out = [0.0] * len(rewards)
    for indices in rows.values():
        running = 0.0
        for i in sorted(indices, key=lambda i: turn_ids[i], reverse=True):
            running = rewards[i] + gamma * running
            out[i] = running
    return out


def gigpo_loop(episode_returns, step_returns, group_ids, trajectory_ids, anchor_ids, omega=1.0, scale=True):
    trajectories = {}
    for i, key in enumerate(zip(group_ids, trajectory_ids, strict=True)):
        trajectories.setdefault(key, episode_returns[i])
    per_group = defaultdict(list)
    for (g, _), ret in trajectories.items():
        per_group[g].append(ret)
    episode_adv = {}
    for (g, t), ret in trajectories.items():
        members = per_group[g]
        if len(members) == 1:
            episode_adv[(g, t)] = 0.0
        else:
            a = ret - sum(members) / len(members)
            episode_adv[(g, t)] = a / (std(members) + 1e-6) if scale else a
    step = grpo_loop(step_returns, list(zip(group_ids, anchor_ids, strict=True)), scale_by_std=scale)
    return [episode_adv[(g, t)] + omega * s for g, t, s in zip(group_ids, trajectory_ids, step, strict=True)]


def team_gigpo_loop(
    episode_returns, step_returns, group_ids, trajectory_ids, agent_ids, anchor_ids, omega=1.0
):
    units = {}
    for i, key in enumerate(zip(group_ids, agent_ids, trajectory_ids, strict=True)):
        units.setdefault(key, episode_returns[i])
    per_group_agent = defaultdict(list)
    for (g, k, _), ret in units.items():
        per_group_agent[(g, k)].append(ret)
    episode_adv = {}
    for (g, k, t), ret in units.items():
        members = per_group_agent[(g, k)]
        episode_adv[(g, k, t)] = (
            0.0 if len(members) == 1 else (ret - sum(members) / len(members)) / (std(members) + 1e-6)
        )
    step = grpo_loop(step_returns, list(zip(group_ids, agent_ids, anchor_ids, strict=True)))
    return [
        episode_adv[(g, k, t)] + omega * s
        for g, k, t, s in zip(group_ids, agent_ids, trajectory_ids, step, strict=True)
    ]


def tree_values_loop(parents, leaf_rewards) -> list[float]:
    children = defaultdict(list)
    for node, parent in enumerate(parents):
        if parent >= 0:
            children[parent].append(node)

    def leaves(node):
        if not children[node]:
            return [leaf_rewards[node]]
        return [r for child in children[node] for r in leaves(child)]

    return [sum(leaves(n)) / len(leaves(n)) for n in range(len(parents))]


def treerl_loop(parents, leaf_rewards, *, samples="leaves", normalize=True) -> list[float]:
    values = tree_values_loop(parents, leaf_rewards)
    children = defaultdict(list)
    for node, parent in enumerate(parents):
        if parent >= 0:
            children[parent].append(node)

    def n_leaves(node):
        return 1 if not children[node] else sum(n_leaves(c) for c in children[node])

    out = []
    for node, parent in enumerate(parents):
        if parent < 0:
            out.append(0.0)
            continue
        root = node
        while parents[root] >= 0:
            root = parents[root]
        advantage = 2 * values[node] - values[root] - values[parent]
        weight = math.sqrt(n_leaves(node)) if normalize else 1.0
        # one training sequence per leaf: each copy of the node gets advantage / weight; one row per node: the
        # node gets what its n_leaves copies get together
        out.append(advantage / weight * (n_leaves(node) if samples == "nodes" else 1))
    return out


def turn_gae_loop(rewards, values, trajectory_ids, turn_ids, dones, gamma, lam) -> tuple[list[float], list[float]]:
    """GAE by walking each chain backwards, one turn at a time (Schulman et al. 2016, eq. 16)."""
    rows = defaultdict(list)
    for i, t in enumerate(trajectory_ids):
        rows[t].append(i)
    advantages = [0.0] * len(rewards)
    for indices in rows.values():
        chain = sorted(indices, key=lambda i: turn_ids[i])
        running, next_value = 0.0, 0.0
        for position in range(len(chain) - 1, -1, -1):
            i = chain[position]
            if position == len(chain) - 1 or dones[i]:
                running, next_value = 0.0, 0.0
            delta = rewards[i] + gamma * next_value - values[i]
            running = delta + gamma * lam * running
            advantages[i] = running
            next_value = values[i]
    return advantages, [a + v for a, v in zip(advantages, values, strict=True)]


def token_gae_loop(token_rewards, token_values, mask, gamma, lam) -> list[list[float]]:
    """Token-level GAE of padded (B, T) lists as verl's ``compute_gae_advantage_return``: one chain per row, over
    its unmasked tokens (masked tokens neither pass values nor advantages)."""
    out = []
    for rewards, values, keep in zip(token_rewards, token_values, mask, strict=True):
        advantages = [0.0] * len(rewards)
        running, next_value = 0.0, 0.0
        for t in range(len(rewards) - 1, -1, -1):
            if not keep[t]:
                continue
            delta = rewards[t] + gamma * next_value - values[t]
            running = delta + gamma * lam * running
            advantages[t], next_value = running, values[t]
        out.append(advantages)
    return out

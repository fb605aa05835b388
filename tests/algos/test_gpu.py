"""The estimators run on CUDA tensors and agree with CPU (run with `pytest -m gpu` on a GPU machine)."""

import pytest
import torch

from teamgym.algos import (
    at_grpo,
    discounted_returns,
    dr_mas,
    gigpo,
    grpo,
    ppo_clip_loss,
    rloo,
    team_gigpo,
    treerl_advantages,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def test_estimators_on_cuda_match_cpu():
    gen = torch.Generator().manual_seed(0)
    n = 10_000
    group = torch.randint(0, 500, (n,), generator=gen)
    traj = torch.randint(0, 4, (n,), generator=gen)
    agent = torch.randint(0, 2, (n,), generator=gen)
    turn = torch.randperm(n, generator=gen)
    anchor = group * 3 + torch.randint(0, 3, (n,), generator=gen)
    rewards = torch.randint(0, 2, (n,), generator=gen).float()
    ep = rewards.new_tensor(torch.randint(0, 2, (500 * 8,), generator=gen).float())[
        group * 8 + traj * 2 + agent
    ]
    cpu = {
        "grpo": lambda d: grpo(rewards.to(d), group.to(d)),
        "rloo": lambda d: rloo(rewards.to(d), group.to(d)),
        "at_grpo": lambda d: at_grpo(rewards.to(d), group.to(d), agent.to(d), turn.to(d) % 3),
        "dr_mas": lambda d: dr_mas(rewards.to(d), group.to(d), agent.to(d)),
        "returns": lambda d: discounted_returns(rewards.to(d), (group * 8 + traj).to(d), turn.to(d)),
        "team_gigpo": lambda d: team_gigpo(
            ep.to(d), rewards.to(d), group.to(d), traj.to(d), agent.to(d), anchor.to(d)
        ),
        "gigpo": lambda d: gigpo(
            ep.to(d), rewards.to(d), (group * 2 + agent).to(d), traj.to(d), anchor.to(d)
        ),
    }
    for name, fn in cpu.items():
        on_gpu = fn("cuda")
        assert on_gpu.device.type == "cuda", name
        assert torch.allclose(on_gpu.cpu(), fn("cpu"), atol=1e-5), name
    parents = torch.tensor([-1, 0, 0, 1, 1, 2, 2])
    leaves = torch.tensor([0.0, 0, 0, 1, 0, 1, 1])
    assert torch.allclose(
        treerl_advantages(parents.cuda(), leaves.cuda()).cpu(), treerl_advantages(parents, leaves)
    )
    logp = torch.randn(4, 8, generator=gen)
    loss = ppo_clip_loss(logp.cuda(), logp.cuda() + 0.1, torch.ones(4).cuda(), torch.ones(4, 8).cuda())
    assert loss.loss.device.type == "cuda"

"""GPU checks (skipped without CUDA): the HF policy samples and scores on the device consistently."""

from __future__ import annotations

import pytest
import torch

from teamgym.rollout import HFPolicy, SamplingParams


@pytest.mark.gpu
def test_tiny_policy_on_cuda_scores_what_it_sampled():
    policy = HFPolicy.tiny(seed=0)
    policy.model.to("cuda")
    policy.device = torch.device("cuda")
    policy.rng = torch.Generator(device="cuda")
    policy.rng.manual_seed(0)
    out = [c for g in policy.generate(["abc", "a longer prompt"], 4, SamplingParams(max_tokens=12)) for c in g]
    logprobs, _, mask = policy.score([c.prompt_ids for c in out], [c.token_ids for c in out])
    for i, c in enumerate(out):
        assert mask[i].sum().item() == len(c.token_ids)
        assert torch.allclose(logprobs[i, : len(c.token_ids)].cpu(), torch.tensor(c.logprobs), atol=1e-3)


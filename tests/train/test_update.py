"""The policy update: every loss aggregation is invariant to micro-batching, and the two KL references."""

from __future__ import annotations

import pytest
import torch

from teamgym.algos import AGGREGATIONS
from teamgym.rollout import AgentTurnBatch, HFPolicy
from teamgym.train.reference import ReferencePolicies
from teamgym.train.update import PPOConfig, policy_update

BUDGET = 12


def scored_batch(policy: HFPolicy, lengths: list[int], seed: int = 0) -> AgentTurnBatch:
    """Rows with completions of ``lengths`` tokens whose sampling logprobs are the policy's own, perturbed (so that
    ratios differ from 1 and some clip)."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for i, length in enumerate(lengths):
        prompt = torch.randint(2, 40, (3 + i % 4,), generator=generator).tolist()
        completion = torch.randint(2, 40, (length,), generator=generator).tolist()
        with torch.no_grad():
            logprobs = policy.score([prompt], [completion])[0][0, :length]
        noise = 0.3 * torch.randn(length, generator=generator)
        rows.append({"episode_id": f"e{i}", "task_id": i, "agent": "solo", "turn": 0, "step": 0, "branch": 0,
                     "chosen": True, "prompt_ids": prompt, "completion_ids": completion,
                     "logprobs": (logprobs + noise).tolist(), "text": "", "reward_terms": {"team": 0.0, "local": 0.0},
                     "rewards": 0.0, "anchor": "a", "success": False, "infra_error": ""})
    return AgentTurnBatch.from_rows(rows)


def gradient(policy: HFPolicy, batch: AgentTurnBatch, advantages: torch.Tensor, ppo: PPOConfig,
             reference: ReferencePolicies | None = None) -> torch.Tensor:
    """The flattened gradient one ``policy_update`` leaves (lr 0: the weights do not move)."""
    optimizer = torch.optim.SGD(policy.model.parameters(), lr=0.0)
    policy_update(batch, advantages, {"solo": policy}, {policy.name: optimizer}, ppo=ppo, temperature=1.0,
                  norm_length=BUDGET, reference=reference)
    return torch.cat([p.grad.flatten() for p in policy.model.parameters() if p.grad is not None])


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
@pytest.mark.parametrize("kl_reference", ["sampler", "reference"])
def test_every_loss_aggregation_is_invariant_to_the_micro_batch_size(aggregation, kl_reference):
    """The old Dr.GRPO loss divided by each micro-batch's longest completion (relative difference 2.88 between 1-row
    and whole micro-batches), and the entropy and KL terms were token means weighted by row shares."""
    torch.manual_seed(0)
    policy = HFPolicy.tiny(seed=0, n_layer=1, n_embd=16, n_head=1, name="shared")
    batch = scored_batch(policy, [1, 7, 3, 12, 2, 5])
    reference = ReferencePolicies({"solo": policy}) if kl_reference == "reference" else None
    with torch.no_grad():  # move the policy off its reference, so that the reference KL has a gradient
        for parameter in policy.model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    advantages = torch.tensor([1.0, -0.5, 2.0, -1.5, 0.3, -0.8])
    grads = []
    for size in (1, 2, 4, 6):
        ppo = PPOConfig(micro_batch_size=size, aggregation=aggregation, kl_coef=0.3, kl_reference=kl_reference,
                        entropy_coef=0.05, max_grad_norm=1e9)
        grads.append(gradient(policy, batch, advantages, ppo, reference))
    for other in grads[1:]:
        assert torch.allclose(other, grads[0], rtol=1e-4, atol=1e-7), (other - grads[0]).abs().max()


def test_dr_grpo_divides_by_the_constant_budget():
    policy = HFPolicy.tiny(seed=1, n_layer=1, n_embd=16, n_head=1, name="shared")
    batch = scored_batch(policy, [2, 4])
    advantages = torch.tensor([1.0, -1.0])
    ppo = PPOConfig(aggregation="seq-mean-token-sum-norm", max_grad_norm=1e9)
    optimizer = torch.optim.SGD(policy.model.parameters(), lr=0.0)
    stats = policy_update(batch, advantages, {"solo": policy}, {"shared": optimizer}, ppo=ppo, temperature=1.0,
                          norm_length=BUDGET)
    base = gradient(policy, batch, advantages, ppo)
    optimizer = torch.optim.SGD(policy.model.parameters(), lr=0.0)
    policy_update(batch, advantages, {"solo": policy}, {"shared": optimizer}, ppo=ppo, temperature=1.0,
                  norm_length=2 * BUDGET)
    doubled = torch.cat([p.grad.flatten() for p in policy.model.parameters() if p.grad is not None])
    assert torch.allclose(doubled * 2, base, rtol=1e-5, atol=1e-8) and stats.rows == 2


def test_the_sampler_kl_has_no_gradient_on_policy_but_the_reference_kl_does():
    policy = HFPolicy.tiny(seed=2, n_layer=1, n_embd=16, n_head=1, name="shared")
    reference = ReferencePolicies({"solo": policy})
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    batch = scored_batch(policy, [3, 5, 4])
    with torch.no_grad():
        on_policy = [policy.score([p], [c])[0][0, :len(c)].tolist()
                     for p, c in zip(batch.prompt_ids, batch.completion_ids, strict=True)]
    batch.logprobs = on_policy
    zero = torch.zeros(3)
    sampler = gradient(policy, batch, zero, PPOConfig(kl_coef=1.0, kl_reference="sampler", max_grad_norm=1e9))
    anchored = gradient(policy, batch, zero, PPOConfig(kl_coef=1.0, kl_reference="reference", max_grad_norm=1e9),
                        reference)
    assert sampler.abs().max() < 1e-6 < anchored.abs().max()


def test_a_lora_reference_is_the_base_with_adapters_disabled(tmp_path):
    peft = pytest.importorskip("peft")
    source = HFPolicy.tiny(seed=3, n_layer=1, n_embd=16, n_head=1)
    with torch.no_grad():
        base = source.score([[3, 4, 5]], [[6, 7]])[0]
    model = peft.get_peft_model(source.model, peft.LoraConfig(r=2, target_modules=["c_attn"], init_lora_weights=False,
                                                              fan_in_fan_out=True))
    policy = HFPolicy(model, source.tokenizer, name="shared")
    prompts, completions = [[3, 4, 5]], [[6, 7]]
    reference = ReferencePolicies({"solo": policy})
    assert reference.frozen == {"shared": None} and reference.state_dict() == {}
    assert torch.allclose(reference.logprobs(policy, prompts, completions, temperature=1.0), base)
    with torch.no_grad():
        adapted = policy.score(prompts, completions)[0]
    assert not torch.allclose(adapted, base)

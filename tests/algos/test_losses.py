import pytest
import torch

from teamgym.algos import (
    aggregate,
    dynamic_sampling_mask,
    entropy_bonus,
    kl_penalty,
    overlong_penalty,
    ppo_clip_loss,
)
from teamgym.errors import InvalidArgumentError


def ppo_loop(logp, old, adv, clip_low, clip_high, dual):
    """Per-token scalar reference of the clipped surrogate."""
    out = []
    for lp, lo, a in zip(logp, old, adv, strict=True):
        ratio = torch.exp(torch.clamp(torch.tensor(lp - lo), -20, 20)).item()
        loss = max(-a * ratio, -a * min(max(ratio, 1 - clip_low), 1 + clip_high))
        if dual is not None and a < 0:
            loss = min(loss, -a * dual)
        out.append(loss)
    return out


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("dual", [None, 3.0])
def test_ppo_clip_matches_scalar_loop(seed, dual):
    gen = torch.Generator().manual_seed(seed)
    logp = torch.randn(3, 5, generator=gen, dtype=torch.float64)
    old = logp + torch.randn(3, 5, generator=gen, dtype=torch.float64)
    adv = torch.randn(3, generator=gen, dtype=torch.float64)
    mask = torch.ones(3, 5)
    result = ppo_clip_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.28, dual_clip=dual)
    ref = ppo_loop(
        logp.flatten().tolist(), old.flatten().tolist(), adv.repeat_interleave(5).tolist(), 0.2, 0.28, dual
    )
    assert result.loss.item() == pytest.approx(sum(ref) / len(ref))
    assert 0.0 <= result.clip_fraction.item() <= 1.0


def test_clip_higher_is_asymmetric():
    old = torch.zeros(1, 1)
    up = ppo_clip_loss(
        torch.full((1, 1), 0.5), old, torch.ones(1), torch.ones(1, 1), clip_low=0.2, clip_high=0.28
    )
    assert up.loss.item() == pytest.approx(-1.28)
    down = ppo_clip_loss(
        torch.full((1, 1), -0.5), old, -torch.ones(1), torch.ones(1, 1), clip_low=0.2, clip_high=0.28
    )
    assert down.loss.item() == pytest.approx(0.8)
    dual = ppo_clip_loss(torch.full((1, 1), 3.0), old, -torch.ones(1), torch.ones(1, 1), dual_clip=3.0)
    assert dual.loss.item() == pytest.approx(3.0) and dual.dual_clip_fraction.item() == 1.0


def test_loss_has_gradient_and_zero_at_on_policy_zero_advantage():
    logp = torch.zeros(2, 3, requires_grad=True)
    result = ppo_clip_loss(logp, torch.zeros(2, 3), torch.tensor([1.0, -1.0]), torch.ones(2, 3))
    result.loss.backward()
    assert logp.grad is not None and torch.allclose(logp.grad[0], -logp.grad[1])


def test_aggregation_modes():
    loss = torch.tensor([[1.0, 1.0, 1.0, 1.0], [4.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    assert aggregate(loss, mask, "token-mean").item() == pytest.approx(8 / 5)
    assert aggregate(loss, mask, "seq-mean-token-mean").item() == pytest.approx((1 + 4) / 2)
    assert aggregate(loss, mask, "seq-mean-token-sum-norm").item() == pytest.approx((4 / 4 + 4 / 4) / 2)
    assert aggregate(loss, mask, "seq-mean-token-sum-norm", norm_length=8).item() == pytest.approx(0.5)
    with pytest.raises(InvalidArgumentError, match="token-mean"):
        aggregate(loss, mask, "token_mean")


def test_kl_estimators():
    logp = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    ref = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    assert (kl_penalty(logp, ref, "k3") >= 0).all()
    assert kl_penalty(logp, logp, "k3").abs().max() == 0
    assert torch.allclose(kl_penalty(logp, ref, "k1"), logp - ref)
    with pytest.raises(InvalidArgumentError):
        kl_penalty(logp, ref, "k2")


def test_entropy_bonus_sign():
    entropy = torch.ones(2, 3)
    assert entropy_bonus(entropy, torch.ones(2, 3), coef=0.01).item() == pytest.approx(-0.01)


def test_overlong_penalty():
    penalty = overlong_penalty(torch.tensor([100, 3000, 3500, 4096, 5000]), max_length=4096, buffer=1024)
    assert penalty.tolist() == pytest.approx([0.0, 0.0, -(3500 - 3072) / 1024, -1.0, -(5000 - 3072) / 1024])
    with pytest.raises(InvalidArgumentError):
        overlong_penalty(torch.tensor([1]), max_length=10, buffer=0)


def test_dynamic_sampling_drops_zero_variance_groups():
    keep = dynamic_sampling_mask(torch.tensor([1.0, 1.0, 0.0, 1.0, 5.0]), torch.tensor([0, 0, 1, 1, 2]))
    assert keep.tolist() == [False, False, True, True, False]

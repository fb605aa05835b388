import math

import pytest
import torch

from teamgym.algos import BetaValueTracker, PerAgentValueTracker, adaptive_rho
from teamgym.errors import CheckpointError, InvalidArgumentError


def test_constant_rho_mass_converges_and_p_stays_inside():
    tracker = BetaValueTracker(rho=0.875)
    gen = torch.Generator().manual_seed(0)
    for _ in range(300):
        tracker.update(["q"], torch.randint(0, 2, (1,), generator=gen).float())
        alpha, beta = tracker.alpha_beta("q")
        assert 0.0 < alpha / (alpha + beta) < 1.0
    assert sum(tracker.alpha_beta("q")) == pytest.approx(1 / (1 - 0.875), rel=1e-9)
    for _ in range(100):  # (float64 rounds p to 1.0 only after ~300 identical rewards)
        tracker.update(["q"], [1.0])
    p = tracker.baseline(["q"]).item()
    assert 0.9 < p < 1.0


def test_baseline_never_sees_the_current_reward():
    tracker = BetaValueTracker()
    tracker.update(["a", "b"], [1.0, 0.0])
    before = tracker.baseline(["a", "b"]).clone()
    adv_high = tracker.advantages(["a", "b"], [1.0, 1.0])
    adv_low = tracker.advantages(["a", "b"], [0.0, 0.0])
    assert torch.equal(tracker.baseline(["a", "b"]), before)  # advantages() does not update
    raw = torch.tensor([1.0, 1.0], dtype=torch.float64) - before
    expected = (raw - raw.mean()) / (raw.std() + 1e-8)
    assert torch.allclose(adv_high, expected) and adv_low.shape == (2,)


def test_update_rule_and_offline_init():
    tracker = BetaValueTracker(rho=0.5)
    tracker.update(["k"], [1.0])
    assert tracker.alpha_beta("k") == (0.5 * 0.5 + 1.0, 0.5 * 0.5)
    tracker.init_from_samples("w", successes=3, samples=7)
    n0 = 1 / (1 - 0.875)
    assert tracker.alpha_beta("w") == pytest.approx((n0 * 3.5 / 8, n0 * 4.5 / 8))
    w = tracker.sampling_weights(["k", "unseen"])
    p = tracker.baseline(["k", "unseen"])
    assert torch.allclose(w, torch.sqrt(p * (1 - p)) + 0.05)


def test_adaptive_rho_clamped_and_used():
    assert adaptive_rho(0.0) == 0.96
    assert adaptive_rho(10.0) == 0.875
    assert adaptive_rho(0.06) == pytest.approx(0.875)  # 2^-1 = 0.5, clamped up
    assert adaptive_rho(0.01) == pytest.approx(2 ** (-1 / 6))
    tracker = BetaValueTracker()
    tracker.update(["k"], [1.0], kl=[0.0])
    assert tracker.alpha_beta("k") == pytest.approx((0.96 * 0.5 + 1, 0.96 * 0.5))


def test_reward_mapping_and_errors():
    tracker = BetaValueTracker(reward_range=(-1.0, 1.0))
    tracker.update(["k"], [-1.0])
    assert tracker.alpha_beta("k") == (0.875 * 0.5, 0.875 * 0.5 + 1.0)
    with pytest.raises(InvalidArgumentError, match="outside reward_range"):
        BetaValueTracker().update(["k"], [2.0])
    with pytest.raises(InvalidArgumentError, match="rho"):
        BetaValueTracker(rho=1.0)
    with pytest.raises(InvalidArgumentError, match="one entry per row"):
        BetaValueTracker().update(["a", "b"], [1.0])


def test_state_dict_round_trip():
    tracker = BetaValueTracker(rho=0.9)
    tracker.update([("t", 1), "x"], [1.0, 0.0])
    clone = BetaValueTracker()
    clone.load_state_dict(tracker.state_dict())
    assert clone.rho == 0.9 and clone.alpha_beta(("t", 1)) == tracker.alpha_beta(("t", 1)) and len(clone) == 2
    with pytest.raises(CheckpointError):
        clone.load_state_dict({"keys": []})


@pytest.mark.parametrize("seed", range(5))
def test_per_agent_tracker_with_one_agent_equals_spo(seed):
    gen = torch.Generator().manual_seed(seed)
    spo, ours = BetaValueTracker(), PerAgentValueTracker()
    for _ in range(20):
        tasks = torch.randint(0, 5, (8,), generator=gen).tolist()
        rewards = torch.randint(0, 2, (8,), generator=gen).double()
        agents = ["solver"] * 8
        assert torch.allclose(ours.agent_advantages(tasks, agents, rewards), spo.advantages(tasks, rewards))
        assert torch.equal(ours.baseline(ours.keys_for(tasks, agents)), spo.baseline(tasks))
        kl = torch.rand(8, generator=gen).div(10).tolist()
        spo.update(tasks, rewards, kl=kl)
        ours.agent_update(tasks, agents, rewards, kl=kl)


def test_per_agent_tracker_separates_agents():
    tracker = PerAgentValueTracker()
    tracker.agent_update(
        ["t"] * 4, ["coder", "coder", "tester", "tester"], [1.0, 1.0, 0.0, 0.0], [0, 1, 0, 1]
    )
    p = tracker.baseline(tracker.keys_for(["t", "t"], ["coder", "tester"], [0, 0]))
    assert p[0] > 0.5 > p[1]
    adv = tracker.agent_advantages(["t"] * 4, ["coder", "coder", "tester", "tester"], [1.0, 0.0, 1.0, 0.0])
    assert math.isclose(adv[:2].sum().item(), 0.0, abs_tol=1e-9) and math.isclose(
        adv[2:].sum().item(), 0, abs_tol=1e-9
    )

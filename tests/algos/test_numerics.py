"""Numerical edge cases of every registered estimator: constant groups give exactly 0, huge finite inputs give finite
output or a clear error (never a silent NaN)."""

from __future__ import annotations

import pytest
import torch

from teamgym.algos import get_advantage, list_advantages
from teamgym.algos._checks import MAX_MAGNITUDE
from teamgym.errors import InvalidArgumentError


def arguments(name: str, values: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], dict[str, float]]:
    """Positional arguments of estimator ``name`` with ``values`` as its rewards or returns (one group of rows, two
    trajectories, one agent, one anchor; a root with ``len(values)`` leaves for the tree)."""
    n = len(values)
    zeros = torch.zeros(n, dtype=torch.long)
    table = {
        "grpo": (values, zeros), "dr_grpo": (values, zeros), "rloo": (values, zeros),
        "at_grpo": (values, zeros, zeros, zeros), "dr_mas": (values, zeros, zeros), "mhgpo": (values, zeros, zeros),
        "gigpo": (values, values, zeros, torch.arange(n), zeros),
        "team_gigpo": (values, values, zeros, torch.arange(n), zeros, zeros),
        "treerl": (torch.tensor([-1] + [0] * n), torch.cat([values.new_zeros(1), values])),
    }
    assert set(table) == set(list_advantages()), "a new estimator needs its arguments here"
    return table[name], {}


@pytest.mark.parametrize("name", sorted(list_advantages()))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_constant_group_gives_exactly_zero(name, dtype):
    values = torch.full((3,), 0.7, dtype=dtype)
    args, _ = arguments(name, values)
    out = get_advantage(name)(*args)
    assert out.dtype == dtype
    if name == "treerl":  # no division by a spread: a rounding error of the mean stays one
        assert out.abs().max() < 1e-6
    else:
        assert torch.equal(out, torch.zeros_like(out))


def test_grpo_with_eps_zero_on_a_constant_group_gives_exactly_zero():
    """The old bug: the float mean of three 0.7s is 0.7 - 1e-16, divided by a std of 1e-16 it gave -0.926."""
    grpo = get_advantage("grpo")
    for dtype in (torch.float32, torch.float64):
        assert torch.equal(grpo(torch.full((3,), 0.7, dtype=dtype), torch.zeros(3, dtype=torch.long), eps=0.0),
                           torch.zeros(3, dtype=dtype))


@pytest.mark.parametrize("name", sorted(list_advantages()))
def test_huge_finite_inputs_give_a_clear_error_not_nan(name):
    args, knobs = arguments(name, torch.tensor([1e308, -1e308, 1e308], dtype=torch.float64))
    with pytest.raises(InvalidArgumentError, match="rescale"):
        get_advantage(name)(*args, **knobs)


@pytest.mark.parametrize("name", sorted(list_advantages()))
def test_inputs_at_the_bound_give_finite_output(name):
    args, knobs = arguments(name, torch.tensor([MAX_MAGNITUDE, -MAX_MAGNITUDE, 0.5 * MAX_MAGNITUDE],
                                               dtype=torch.float64))
    assert torch.isfinite(get_advantage(name)(*args, **knobs)).all()


@pytest.mark.parametrize("name", sorted(list_advantages()))
def test_float32_inputs_near_their_largest_value_give_finite_output_or_a_clear_error(name):
    big = torch.finfo(torch.float32).max
    args, knobs = arguments(name, torch.tensor([big, -big, -big], dtype=torch.float32))
    try:
        out = get_advantage(name)(*args, **knobs)
    except InvalidArgumentError as err:
        assert "float64" in str(err)
    else:
        assert torch.isfinite(out).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_narrow_constant_groups_centre_to_exactly_zero_without_a_spread_check(dtype):
    """Float64 sums of equal narrow floats are exact, so the fast centring (no std, no constant-group check) gives
    exact zeros where the full statistics do, and the same centred values everywhere."""
    from teamgym.algos.grouping import _centre, _stats

    generator = torch.Generator().manual_seed(0)
    sizes = torch.randint(1, 200, (300,), generator=generator)
    codes = torch.repeat_interleave(torch.arange(300), sizes)
    levels = (torch.rand(300, generator=generator) * 1e4 - 5e3).to(dtype)
    values = levels.index_select(0, codes)
    noisy = torch.rand(300, generator=generator) < 0.5  # half the groups get distinct values
    values = torch.where(noisy.index_select(0, codes), torch.randn(codes.numel(), generator=generator).to(dtype),
                         values)
    count, centred = _centre(values, codes, 300)
    stats = _stats(values, codes, 300)
    assert torch.equal(centred, stats.centred) and torch.equal(count, stats.count)
    assert torch.equal(centred[~noisy.index_select(0, codes)], torch.zeros(int((~noisy).index_select(0, codes).sum()),
                                                                            dtype=torch.float64))

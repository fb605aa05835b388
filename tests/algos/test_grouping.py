import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from teamgym.algos import combine_ids, dense_ids, factorize, group_ids, group_stats
from teamgym.errors import InvalidArgumentError
from tests.algos.reference import group_ids_loop


def same_partition(a, b) -> bool:
    """Two id lists induce the same grouping (a bijection between their values)."""
    pairs = set(zip(a, b, strict=True))
    return len(pairs) == len(set(a)) == len(set(b))


@pytest.mark.parametrize("seed", range(20))
def test_group_ids_matches_loop_on_mixed_columns(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    tasks = torch.from_numpy(rng.integers(-5, 5, n) * 10**12)  # sparse, negative: the sort path
    agents = [["coder", "tester", "reviewer"][i] for i in rng.integers(0, 3, n)]
    anchors = [f"obs {i}" for i in rng.integers(0, 4, n)]
    turns = rng.integers(0, 3, n).tolist()
    ours = group_ids(tasks, agents, anchors, turns)
    assert ours.dtype == torch.int64
    assert same_partition(ours.tolist(), group_ids_loop(tasks.tolist(), agents, anchors, turns))
    assert set(ours.tolist()) == set(range(int(ours.max()) + 1))  # dense


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(max_size=3), min_size=1, max_size=40),
    st.lists(st.integers(-3, 3), min_size=40, max_size=40),
)
def test_group_ids_property_strings_and_ints(strings, ints):
    ints = ints[: len(strings)]
    ours = group_ids(strings, torch.tensor(ints)).tolist()
    assert same_partition(ours, group_ids_loop(strings, ints))


def test_dense_ids_both_paths_preserve_order():
    small = torch.tensor([5, 3, 5, 9])
    huge = torch.tensor([5, -(10**15), 5, 10**15])
    codes, n = dense_ids(small)
    assert codes.tolist() == [1, 0, 1, 2] and n == 3
    assert dense_ids(huge)[0].tolist() == [1, 0, 1, 2]
    assert dense_ids(torch.tensor([], dtype=torch.int64))[1] == 0


def test_combine_ids_and_factorize():
    assert combine_ids(torch.tensor([1, 1, 2]), torch.tensor([0, 1, 0])).tolist() == [0, 1, 2]
    codes, n = factorize(["b", "a", "b"])
    assert codes.tolist() == [0, 1, 0] and n == 2
    codes, n = factorize(np.array(["x", "y", "x"]))
    assert codes.tolist() == [0, 1, 0]


def test_group_stats_bessel():
    stats = group_stats(torch.tensor([0.0, 1.0, 4.0]), torch.tensor([3, 3, 8]))
    assert stats.count.tolist() == [2.0, 1.0]
    assert torch.allclose(stats.std, torch.tensor([np.sqrt(0.5), 0.0], dtype=torch.float64))


def test_group_id_errors_name_the_problem():
    with pytest.raises(InvalidArgumentError, match="equal lengths"):
        group_ids([1, 2], [1])
    with pytest.raises(InvalidArgumentError, match="hashable"):
        group_ids([[1], [2]])
    with pytest.raises(InvalidArgumentError, match="integers"):
        group_ids(torch.tensor([0.5]))
    with pytest.raises(InvalidArgumentError, match="at least one"):
        group_ids()
    with pytest.raises(InvalidArgumentError, match="lengths"):
        combine_ids(torch.tensor([1, 2]), torch.tensor([1]))


def test_combine_ids_nested_and_sort_paths_match_loop():
    rng = np.random.default_rng(0)
    n = 20_000  # enough distinct keys that the radix range exceeds the bincount limit
    groups = torch.from_numpy(rng.integers(0, 5_000, n))
    nested = groups * 1_000_003 + torch.from_numpy(rng.integers(0, 3, n))  # anchor ids built per group
    unrelated = torch.from_numpy(rng.integers(-(10**12), 10**12, n))
    for other in (nested, unrelated):
        for a, b in ((groups, other), (other, groups)):
            ours = combine_ids(a, b).tolist()
            assert same_partition(ours, group_ids_loop(a.tolist(), b.tolist()))


def test_partition_codes_give_the_groups_of_combine_ids():
    """The estimators' codes (nesting tested before any remap) group rows as combine_ids does, on every path:
    radix fold, nested either way (small or sparse inner ids), remap then fold, remap then sort."""
    from teamgym.algos.grouping import _partition_codes

    rng = np.random.default_rng(1)
    n = 20_000
    groups = torch.from_numpy(rng.integers(0, 5_000, n))
    small = torch.from_numpy(rng.integers(0, 4, n))
    nested_small = groups * 4 + small  # anchors built per group, small ids: nested before any remap
    nested_sparse = groups * 1_000_003 + small
    few_sparse = torch.from_numpy(rng.integers(0, 3, n)) * 10**12  # sparse but few: folds after the remap
    unrelated = torch.from_numpy(rng.integers(-(10**12), 10**12, n))
    for other in (small, nested_small, nested_sparse, few_sparse, unrelated):
        for a, b in ((groups, other), (other, groups)):
            codes, size = _partition_codes(a, b)
            assert codes.dtype == torch.int64 and 0 <= int(codes.min()) and int(codes.max()) < size
            assert same_partition(codes.tolist(), combine_ids(a, b).tolist())

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teamgym.core import TextSpace
from teamgym.errors import InvalidArgumentError


@given(st.text(max_size=200))
def test_contains_any_string_within_bounds(text):
    assert TextSpace(200).contains(text)


def test_contains_rejects_non_strings_and_lengths():
    space = TextSpace(5, min_length=1)
    assert not space.contains("")
    assert not space.contains("toolong")
    assert not space.contains(b"abc")
    assert not space.contains(None)
    assert space.contains("\n\t \x00")


def test_sample_is_varied_unicode_and_seeded():
    a, b = TextSpace(300, seed=3), TextSpace(300, seed=3)
    samples = [a.sample() for _ in range(200)]
    assert samples == [b.sample() for _ in range(200)]
    assert all(a.contains(s) for s in samples)
    joined = "".join(samples)
    assert "\n" in joined and " " in joined
    assert any(ord(c) > 0x2FF for c in joined), "expected non-Latin characters"
    assert any(ord(c) < 0x20 for c in joined), "expected control characters"
    assert len({len(s) for s in samples}) > 20


def test_sample_respects_length_mask():
    space = TextSpace(50, seed=0)
    assert len(space.sample(mask=(7, None))) == 7


@pytest.mark.parametrize("kwargs", [{"max_length": -1}, {"max_length": 3, "min_length": 4}, {"max_length": 2.5}])
def test_bad_arguments_raise(kwargs):
    with pytest.raises(InvalidArgumentError, match="expected"):
        TextSpace(**kwargs)


def test_equality_and_repr():
    assert TextSpace(10) == TextSpace(10)
    assert TextSpace(10) != TextSpace(11)
    assert "max_length=10" in repr(TextSpace(10))

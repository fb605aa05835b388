"""Every ``>>>`` example of the wrappers (class and module docstrings, and docs/wrappers.md) runs."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import teamgym.wrappers

DOCS = Path(__file__).resolve().parents[2] / "docs" / "wrappers.md"
MODULES = sorted(f"teamgym.wrappers.{m.name}" for m in pkgutil.iter_modules(teamgym.wrappers.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_module_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=True)
    assert result.failed == 0


def test_docs_page_examples():
    result = doctest.testfile(str(DOCS), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


def test_docs_page_lists_every_wrapper_with_an_example():
    text = DOCS.read_text(encoding="utf-8")
    for name in (
        "RewardMixing",
        "ProcessReward",
        "Recorder",
        "SingleAgentView",
        "TurnLimit",
        "EnvProgressScorer",
        "MonteCarloScorer",
        "TextScorer",
        "TransformersPRM",
    ):
        assert f"## {name}" in text or f"`{name}(" in text, name
        assert f"{name}(" in text.split("```python", 1)[1], f"{name} has no example"
    for name in ("RewardMixing", "ProcessReward", "Recorder", "SingleAgentView", "TurnLimit"):
        assert ">>>" in (getattr(teamgym.wrappers, name).__doc__ or ""), f"{name}'s docstring has no example"

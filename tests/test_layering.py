"""The import chain docs/ARCHITECTURE.md states: every module-level import between teamgym's packages flows one way."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "teamgym"

#: Package -> the teamgym packages its modules may import at module level (docs/ARCHITECTURE.md, "Layout").
ALLOWED = {
    "errors": set(),
    "core": {"errors"},
    "sandbox": {"errors"},
    "algos": {"errors"},
    "registry": {"errors"},
    "envs": {"errors", "core", "sandbox", "registry"},
    "wrappers": {"errors", "core", "algos"},
    "rollout": {"errors", "core", "algos"},
    "train": {"errors", "core", "algos", "registry", "rollout"},
    "testing": {"errors", "core"},
    "report": {"errors"},
    "cli": {"errors", "core"},
    "integrations": {"errors", "core", "algos", "registry", "rollout", "wrappers"},
}


def module_level_imports(path: Path) -> set[str]:
    """The teamgym packages ``path`` imports at module level (``from teamgym import x`` counts as ``x``)."""
    out = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module == "teamgym":
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("teamgym."):
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names if a.name.startswith("teamgym."))
    return out


def test_imports_flow_the_documented_way():
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        package = parts[0].removesuffix(".py")
        if package in ("__init__", "__main__"):
            continue
        for imported in module_level_imports(path) - {package}:
            if imported not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(PACKAGE)} imports teamgym.{imported}")
    assert not wrong, wrong

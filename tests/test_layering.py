"""The import chain docs/ARCHITECTURE.md states: every module-level import between teamgym's packages flows one way."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "teamgym"

#: Package -> the teamgym packages its modules may import at module level (docs/ARCHITECTURE.md, "Layout").
#: errors and host, the two leaves, may be imported by every package.
ALLOWED = {
    "errors": set(),
    "host": set(),
    "core": {"errors", "host"},
    "sandbox": {"errors", "host"},
    "algos": {"errors", "host"},
    "registry": {"errors", "host"},
    "envs": {"errors", "host", "core", "sandbox", "registry"},
    "wrappers": {"errors", "host", "core", "algos"},
    "rollout": {"errors", "host", "core", "algos", "sandbox"},
    "train": {"errors", "host", "core", "algos", "registry", "rollout"},
    "testing": {"errors", "host", "core"},
    "report": {"errors", "host"},
    "contrib": {"errors", "host", "core", "registry", "testing"},
    "cli": {"errors", "host", "core"},
    "integrations": {"errors", "host", "core", "algos", "registry", "rollout", "wrappers"},
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


def test_the_layout_lists_every_module_where_it_is():
    """docs/ARCHITECTURE.md's layout names each module (private ``_x.py`` may go unnamed) in the folder it is in."""
    doc = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    layout = doc[doc.index("## Layout"):].split("```")[1]
    folders: list[str] = []
    misplaced = []
    for line in layout.splitlines():
        stripped = line.lstrip()
        depth = (len(line) - len(stripped)) // 2
        head = stripped.split("  ")[0]
        if head.endswith("/") and line.startswith(" "):
            folders[depth - 1:] = [head.rstrip("/")]
        elif head.endswith(".py") and line.startswith(" "):
            for name in head.split(", "):
                path = PACKAGE.joinpath(*folders[: depth - 1], name)
                if not path.is_file():
                    misplaced.append(str(path.relative_to(PACKAGE)))
    assert not misplaced, f"listed but not there: {misplaced}"
    unlisted = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                if not p.name.startswith("_") and p.name not in layout and p.stem.removesuffix("_gen") not in layout]
    assert not unlisted, f"modules docs/ARCHITECTURE.md does not name: {unlisted}"

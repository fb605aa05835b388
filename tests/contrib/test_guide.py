"""CONTRIBUTING.md: linked from the README, and every file it links to exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_links_the_guide_and_the_catalogue():
    readme = (ROOT / "README.md").read_text()
    assert "(CONTRIBUTING.md)" in readme and "(docs/envs/README.md)" in readme


def test_the_guide_links_only_to_files_that_exist():
    guide = (ROOT / "CONTRIBUTING.md").read_text()
    links = [link.split("#")[0] for link in re.findall(r"\]\(([^)\s]+)\)", guide) if "://" not in link]
    missing = [link for link in links if not (ROOT / link).exists()]
    assert links and not missing, missing

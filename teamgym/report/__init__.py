"""``teamgym inspect``: one self-contained HTML page to look at a run's rollouts, sampling trees and rewards.

>>> from teamgym.report import write_report                                   # doctest: +SKIP
>>> write_report("runs/plan_path", "runs/plan_path/report.html")              # doctest: +SKIP

See docs/inspect.md for what the page shows and how large runs stay fast.
"""

from __future__ import annotations

from teamgym.report.columns import Turn, read_turn
from teamgym.report.page import DEFAULT_MAX_CHARS, build_payload, render_html
from teamgym.report.sources import Source, load_source
from teamgym.report.write import default_output, write_report

__all__ = [
    "DEFAULT_MAX_CHARS",
    "Source",
    "Turn",
    "build_payload",
    "default_output",
    "load_source",
    "read_turn",
    "render_html",
    "write_report",
]

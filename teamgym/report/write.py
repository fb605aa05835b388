"""Write a report file, and the ``teamgym inspect`` command line around it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from teamgym.errors import InvalidArgumentError
from teamgym.report.page import DEFAULT_MAX_CHARS, render_html
from teamgym.report.sources import load_source

__all__ = ["add_arguments", "default_output", "run", "write_report"]


def default_output(path: str | Path) -> Path:
    """Where a report of ``path`` goes by default: ``report.html`` in a directory, ``<name>.html`` beside a file."""
    path = Path(path)
    return path / "report.html" if path.is_dir() else path.with_suffix(".html")


def write_report(
    path: str | Path,
    output: str | Path | None = None,
    *,
    step: int | None = None,
    max_rows: int = 20_000,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> Path:
    """Read ``path`` (see :func:`~teamgym.report.sources.load_source`) and write its report; returns the file.

    Args:
        path: a run directory, its ``batches/``, one ``step_N.jsonl``, or a Recorder JSONL file.
        output: the HTML file to write (default :func:`default_output`).
        step: only this RL step.
        max_rows: the most agent-turns in the page.
        max_chars: texts longer than this are cut in the file.
    """
    if max_chars < 1:
        raise InvalidArgumentError(f"--max-chars {max_chars}: expected an integer >= 1")
    source = load_source(path, step=step, max_rows=max_rows)
    html = render_html(source, max_chars=max_chars)
    target = Path(output) if output is not None else default_output(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, target)  # a reader never sees half a page
    return target


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``inspect`` options on ``parser``."""
    parser.add_argument(
        "path",
        help="a run directory (teamgym train --output-dir, with --set save_batches=true), "
        "its batches/ or one step_N.jsonl, or a Recorder JSONL file",
    )
    parser.add_argument(
        "-o",
        "--output",
        default=None,
        help="the HTML file to write (default: PATH/report.html, or the file's name with .html)",
    )
    parser.add_argument("--step", type=int, default=None, help="only this RL step (default: the newest that fit)")
    parser.add_argument("--max-rows", type=int, default=20_000, help="the most agent-turns in the page (20000)")
    parser.add_argument(
        "--max-chars", type=int, default=DEFAULT_MAX_CHARS, help=f"cut longer texts in the file ({DEFAULT_MAX_CHARS})"
    )


def run(args: argparse.Namespace) -> int:
    """``teamgym inspect``: write the report and print where it is."""
    target = write_report(args.path, args.output, step=args.step, max_rows=args.max_rows, max_chars=args.max_chars)
    size = target.stat().st_size
    print(f"wrote {target} ({size / 1e6:.1f} MB): open it in a browser")
    return 0

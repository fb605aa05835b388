"""Build the self-contained HTML report: the rows as compact JSON inside the page, the page's CSS and script inline.

The data sits in one ``<script type="application/json">`` element, column by column (numbers rounded to 4
decimals, each distinct text stored once: a tree node's K candidates share one prompt), and the page renders it
lazily: lists are virtualised and an episode's tree and texts are drawn when it is opened. Texts longer than
``max_chars`` are cut in the file (the page says so where it shows them), which bounds the file at about
``rows * (max_chars + 200)`` bytes in the worst case.
"""

from __future__ import annotations

import datetime
import json
import math
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from teamgym.report.columns import Turn
from teamgym.report.curves import learning_curves
from teamgym.report.derive import FLAGS, prompt_decoder, row_flags, step_advantages, token_budget
from teamgym.report.sources import Source

__all__ = ["build_payload", "render_html", "DEFAULT_MAX_CHARS"]

#: Default cut of every text in the file, in characters.
DEFAULT_MAX_CHARS = 4000
#: The page's scripts (``static/``), inlined in this order: helpers first, then the page that uses them.
SCRIPTS = ("format.js", "diff.js", "vlist.js", "overview.js", "report.js")


class _Strings:
    """A table of distinct texts, each cut at ``max_chars``; rows refer to texts by index."""

    def __init__(self, max_chars: int):
        self.max_chars = max_chars
        self.values: list[str] = []
        self.cut: dict[int, int] = {}
        self._index: dict[str, int] = {}

    def add(self, text: str | None) -> int:
        if text is None:
            return -1
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.values)
            clean = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates from model output
            if len(clean) > self.max_chars:
                self.cut[index] = len(clean)
                clean = clean[: self.max_chars]
            self.values.append(clean)
        return index


def _round(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, 4)


def build_payload(source: Source, *, max_chars: int = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """The JSON the page renders: meta, config, summary, the distinct texts and one list per column."""
    strings = _Strings(max_chars)
    decode = prompt_decoder(source.config) if source.kind == "run" else None
    budget = token_budget(source.config) if source.kind == "run" else None
    metrics_by_step = {row.get("step"): row for row in source.metrics}
    agents: dict[str, int] = {}
    terms: dict[str, int] = {}
    for step in source.steps:
        for turn in step.turns:
            agents.setdefault(turn.agent, len(agents))
            for name in turn.terms:
                terms.setdefault(name, len(terms))
    columns: dict[str, list[Any]] = {key: [] for key in "eatnbcrvxpklfqo"}
    episodes: dict[str, list[Any]] = {"id": [], "task": [], "step": [], "success": []}
    episode_index: dict[tuple[int | None, str], int] = {}
    advantage_notes: dict[str, str] = {}
    for step in source.steps:
        advantages = step_advantages(step.raw, step.turns, source.config, metrics_by_step.get(step.step))
        advantage_notes["" if step.step is None else str(step.step)] = advantages.note
        for position, turn in enumerate(step.turns):
            key = (step.step, turn.episode)
            if key not in episode_index:
                episode_index[key] = len(episodes["id"])
                episodes["id"].append(turn.episode)
                episodes["task"].append(turn.task)
                episodes["step"].append(step.step)
                episodes["success"].append(None if turn.success is None else int(turn.success))
            _append_row(
                columns,
                turn,
                strings,
                decode,
                agents,
                terms,
                episode_index[key],
                advantages.values[position],
                row_flags(turn, budget, advantages.zero_variance[position]),
            )
    from teamgym import __version__

    meta = {
        "path": str(source.path),
        "kind": source.kind,
        "notes": source.notes,
        "steps_available": _steps_text(source.available_steps),
        "advantages": advantage_notes,
        "flags": FLAGS,
        "max_chars": max_chars,
        "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "version": __version__,
    }
    return {
        "meta": meta,
        "config": source.config,
        "summary": source.summary,
        "agents": list(agents),
        "terms": list(terms),
        "strings": strings.values,
        "cut": strings.cut,
        "episodes": episodes,
        "cols": columns,
    }


def _append_row(
    columns: dict[str, list[Any]],
    turn: Turn,
    strings: _Strings,
    decode: Any,
    agents: dict[str, int],
    terms: dict[str, int],
    episode: int,
    advantage: float | None,
    flags: int,
) -> None:
    prompt = turn.prompt
    if prompt is None and turn.prompt_ids is not None and decode is not None:
        prompt = decode(turn.prompt_ids)
    values = [None] * len(terms)
    for name, value in turn.terms.items():
        values[terms[name]] = _round(value)
    columns["e"].append(episode)
    columns["a"].append(agents[turn.agent])
    columns["t"].append(turn.turn)
    columns["n"].append(turn.env_step)
    columns["b"].append(turn.branch)
    columns["c"].append(int(turn.chosen))
    columns["r"].append(_round(turn.reward))
    columns["v"].append(_round(advantage))
    columns["x"].append(strings.add(turn.text))
    columns["p"].append(strings.add(prompt))
    columns["k"].append(turn.completion_tokens)
    columns["l"].append(_round(turn.logprob_mean))
    columns["f"].append(flags)
    columns["q"].append(values if values else None)
    columns["o"].append({agent: _round(value) for agent, value in turn.others.items()} or None)


def _steps_text(steps: list[int]) -> str:
    if not steps:
        return "–"
    return f"{len(steps)} ({steps[0]}-{steps[-1]})" if len(steps) > 1 else str(steps[0])


def _static(name: str) -> str:
    return resources.files("teamgym.report").joinpath("static", name).read_text(encoding="utf-8")


def render_html(source: Source, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The whole report page for ``source``."""
    payload = build_payload(source, max_chars=max_chars)
    # "<" escaped inside the JSON, so that no text can close the script element that holds it.
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str).replace("<", "\\u003c")
    title = f"teamgym inspect: {Path(source.path).name or source.path}"
    page = _static("report.html")
    page = page.replace("{{title}}", escape(title)).replace("{{css}}", _static("report.css"))
    script = "\n".join(_static(name) for name in SCRIPTS)
    page = page.replace("{{js}}", script).replace("{{curves}}", learning_curves(source.metrics))
    return page.replace("{{data}}", data, 1)

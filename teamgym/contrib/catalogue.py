"""``teamgym catalogue``: one Markdown page per env, generated from its docstring and metadata, and an index.

Each page (``docs/envs/<id>.md``) holds the env's one-line summary; a table of how to make it, its agents, spaces,
tasks and entry point; its reward table and the rest of its module docstring (the env's docs page); its options
(from the signature, with the registered defaults); its scripted policies; every registered version of its name
with its status; and an example episode, the ansi rendering of its default scripted team on seed 0.
``docs/envs/README.md`` is the index. ``tests/contrib/test_catalogue.py`` fails when a page is stale::

    teamgym catalogue                    # check: is every built-in env's page up to date? (exit 0/1)
    teamgym catalogue --write            # regenerate docs/envs/
    teamgym catalogue my_game-v0 --out docs --write   # a plugin's page, in the plugin's own folder

Pages are written by :func:`render_page` from what the env says about itself, so keep the docstring (agents,
spaces, rewards, options, scripted policies, version history) and the code in step and the page follows.
"""

from __future__ import annotations

import argparse
import inspect
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

from teamgym.contrib.docstring import DocPage, parse
from teamgym.contrib.episodes import build, builtin_ids, play_team
from teamgym.core import TurnBasedTextEnv
from teamgym.errors import InvalidArgumentError
from teamgym.registry import EnvSpec, list_envs, spec

__all__ = ["INDEX", "Stale", "add_arguments", "default_out", "render_index", "render_page", "run", "stale_pages",
           "write_pages"]

INDEX = "README.md"

#: Docstring sections that get a part of the page of their own (the rest is the description).
_OWN_PARTS = ("rewards", "options", "scripted policies", "version history")


@dataclass(frozen=True)
class Stale:
    """A page that differs from what the catalogue would write now (``expected`` is ``None``: it should not exist)."""

    path: Path
    expected: str | None


def default_out() -> Path:
    """``docs/envs`` of the teamgym checkout this module runs from."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "docs").is_dir():
        raise InvalidArgumentError(f"no teamgym checkout at {root} (no docs/ folder): pass --out DIR")
    return root / "docs" / "envs"


def render_page(env_id: str, *, source_root: Path | None = None, out: Path | None = None) -> str:
    """The Markdown page of ``env_id``.

    Args:
        env_id: a registered id.
        source_root: link the env's source file when it lies under this folder (with ``out``, the page's folder).
        out: the folder the page is written to (for the relative source link).
    """
    env_spec = spec(env_id)
    doc = _doc(env_spec)
    env = build(env_spec.id, render_mode="ansi")
    try:
        parts = [f"# {env_spec.id}", doc.summary or env_spec.summary(), _facts(env_spec, env, source_root, out),
                 *_description(doc), *_rewards(doc), *_options(env_spec, doc), *_scripted(env, doc),
                 *_versions(env_spec, doc), *_example(env_spec, env)]
    finally:
        env.close()
    return "\n\n".join(part.strip("\n") for part in parts if part) + "\n"


def render_index(env_ids: list[str]) -> str:
    """The catalogue's index: one row per env id with its agents, summary and versions."""
    rows = ["| id | agents | description | versions |", "| --- | --- | --- | --- |"]
    for env_id in env_ids:
        env_spec = spec(env_id)
        agents = ", ".join(f"`{a}`" for a in env_spec.agents())
        versions = ", ".join(f"v{s.version}" for s in _versions_of(env_spec))
        summary = _doc(env_spec).summary.removeprefix(f"`{env_id}`: ") or env_spec.summary()
        summary = (summary[:1].upper() + summary[1:]).replace("|", "\\|")
        if env_spec.deprecated:
            summary = f"(deprecated) {summary}"
        rows.append(f"| [{env_id}]({env_id}.md) | {agents} | {summary} | {versions} |")
    about = ("One page per built-in env, generated from the env's docstring and metadata by `teamgym catalogue "
             "--write`; `tests/contrib/test_catalogue.py` fails when a page is stale. Envs from plugin packages are "
             "not listed: `teamgym catalogue ENV_ID --out DIR --write` writes their pages where their package wants "
             "them. How to add an env: [CONTRIBUTING.md](../../CONTRIBUTING.md).")
    return "\n\n".join(["# Environment catalogue", textwrap.fill(about, 120), "\n".join(rows)]) + "\n"


def write_pages(out: Path, env_ids: list[str], *, index: bool = True, source_root: Path | None = None) -> list[Path]:
    """Write the pages of ``env_ids`` (and, with ``index``, the index) into ``out``; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path, text in _expected(out, env_ids, index=index, source_root=source_root).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def stale_pages(out: Path, env_ids: list[str], *, index: bool = True,
                source_root: Path | None = None) -> list[Stale]:
    """The pages in ``out`` that differ from what :func:`write_pages` would write, or that no env id has."""
    expected = _expected(out, env_ids, index=index, source_root=source_root)
    stale = [Stale(path, text) for path, text in expected.items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    if index and out.is_dir():
        stale += [Stale(path, None) for path in sorted(out.glob("*.md")) if path not in expected]
    return stale


def _expected(out: Path, env_ids: list[str], *, index: bool, source_root: Path | None) -> dict[Path, str]:
    pages = {out / f"{env_id}.md": render_page(env_id, source_root=source_root, out=out) for env_id in env_ids}
    if index:
        pages[out / INDEX] = render_index(env_ids)
    return pages


# ---------------------------------------------------------------------- the parts of a page
def _doc(env_spec: EnvSpec) -> DocPage:
    """The env's docs page: its module's docstring (the class's when the module has none)."""
    target = env_spec.load()
    return parse(inspect.getdoc(inspect.getmodule(target)) or inspect.getdoc(target) or "")


def _facts(env_spec: EnvSpec, env: TurnBasedTextEnv, source_root: Path | None, out: Path | None) -> str:
    agent = env.possible_agents[0]
    target = env_spec.load()
    entry = env_spec.entry_point if isinstance(env_spec.entry_point, str) else f"{target.__module__}:{target.__name__}"
    rows = [
        ("make", f'`teamgym.make("{env_spec.id}")`'),
        ("agents", ", ".join(f"`{a}`" for a in env.possible_agents)),
        ("observation space", f"`{env.observation_space(agent)!r}`"),
        ("action space", f"`{env.action_space(agent)!r}`"),
        ("tasks", _tasks(env)),
        ("render modes", ", ".join(env.metadata.get("render_modes", [])) or "none"),
        ("entry point", f"`{entry}`"),
    ]
    source = inspect.getsourcefile(target)
    if source and source_root is not None and out is not None and Path(source).resolve().is_relative_to(source_root):
        relative = Path(os.path.relpath(Path(source).resolve(), out.resolve())).as_posix()
        rows.append(("source", f"[{Path(source).resolve().relative_to(source_root).as_posix()}]({relative})"))
    return "| | |\n| --- | --- |\n" + "\n".join(f"| {key} | {value} |" for key, value in rows)


def _tasks(env: TurnBasedTextEnv) -> str:
    ids = env.task_ids() if isinstance(env, TurnBasedTextEnv) else None
    if ids is None:
        return "procedural: any int is a task id (`reset(options={'task_id': 7})`)"
    return f"{len(ids)} (a dataset), e.g. `{ids[0]!r}`"


def _description(doc: DocPage) -> list[str]:
    parts = ["## Description"]
    for section in doc.sections:
        if section.title.lower().startswith(_OWN_PARTS):
            continue
        parts.append(f"### {section.title}\n\n{section.markdown}" if section.title else section.markdown)
    return parts if len(parts) > 1 else []


def _rewards(doc: DocPage) -> list[str]:
    section = doc.section("rewards")
    if section is None:
        return ["## Rewards", "The docstring has no 'Rewards' section: add the reward table (CONTRIBUTING.md)."]
    title = section.title[len("rewards"):].strip()
    return ["## Rewards", title, section.markdown]


def _options(env_spec: EnvSpec, doc: DocPage) -> list[str]:
    try:
        parameters = list(inspect.signature(env_spec.load()).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    rows = ["| option | type | default |", "| --- | --- | --- |"]
    for p in parameters:
        if p.kind not in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            continue
        default = env_spec.kwargs.get(p.name, p.default)
        shown = "(required)" if default is inspect.Parameter.empty else f"`{default!r}`"
        annotation = "" if p.annotation is inspect.Parameter.empty else f"`{p.annotation}`"
        rows.append(f"| `{p.name}` | {annotation.replace('|', chr(92) + '|')} | {shown} |")
    parts = ["## Options", f'Keyword arguments of `teamgym.make("{env_spec.id}", ...)`, with the registered defaults:',
             "\n".join(rows)]
    section = doc.section("options")
    if section is not None:
        parts.append(section.markdown)
    return parts


def _scripted(env: TurnBasedTextEnv, doc: DocPage) -> list[str]:
    policies = env.scripted_policies() if isinstance(env, TurnBasedTextEnv) else {}
    if not policies:
        return ["## Scripted policies", "None."]
    rows = ["| role | policies (the first is the default) |", "| --- | --- |"]
    rows += [f"| `{role}` | {', '.join(f'`{name}`' for name in names)} |" for role, names in policies.items()]
    parts = ["## Scripted policies", "\n".join(rows)]
    section = doc.section("scripted policies")
    if section is not None:
        parts.append(section.markdown)
    return parts


def _versions_of(env_spec: EnvSpec) -> list[EnvSpec]:
    return sorted((spec(env_id) for env_id in list_envs() if spec(env_id).name == env_spec.name),
                  key=lambda s: s.version)


def _versions(env_spec: EnvSpec, doc: DocPage) -> list[str]:
    versions = _versions_of(env_spec)
    rows = ["| id | status |", "| --- | --- |"]
    for version in versions:
        status = ("deprecated: " + version.deprecated if version.deprecated
                  else "newest" if version is versions[-1] else "supported")
        name = version.id if version.id == env_spec.id else f"[{version.id}]({version.id}.md)"
        rows.append(f"| {name} | {status} |")
    parts = ["## Version history", "\n".join(rows)]
    section = doc.section("version history")
    if section is not None:
        parts.append(section.markdown)
    return parts


def _example(env_spec: EnvSpec, env: TurnBasedTextEnv) -> list[str]:
    if not (isinstance(env, TurnBasedTextEnv) and env.scripted_policies()):
        return []
    play_team(env, None, seed=0)
    how = f"`teamgym play {env_spec.id} --agent all=scripted --seed 0`"
    return ["## Example episode", f"The default scripted team on seed 0 ({how}):",
            f"```text\n{env.render()}\n```"]


# ---------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``catalogue`` options on ``parser``."""
    parser.add_argument("env_ids", nargs="*", metavar="ENV_ID",
                        help="pages to check or write (default: every built-in env, and the index)")
    parser.add_argument("--write", action="store_true", help="write the pages (default: only check them)")
    parser.add_argument("--out", type=Path, default=None, help="the pages' folder (default: docs/envs/ here)")


def run(args: argparse.Namespace) -> int:
    """``teamgym catalogue``: check the pages (exit 1 when one is stale) or ``--write`` them."""
    out = args.out or default_out()
    known = set(list_envs())
    unknown = [env_id for env_id in args.env_ids if env_id not in known]
    if unknown:
        spec(unknown[0])  # raises UnknownEnvError with the closest ids
    env_ids = args.env_ids or builtin_ids()
    index = not args.env_ids
    source_root = Path(__file__).resolve().parents[2] if args.out is None else Path.cwd().resolve()
    if args.write:
        written = write_pages(out, env_ids, index=index, source_root=source_root)
        print("\n".join(f"wrote {path}" for path in written) if written else f"{out}: every page is up to date")
        return 0
    stale = stale_pages(out, env_ids, index=index, source_root=source_root)
    for page in stale:
        what = "is stale" if page.expected is not None else "belongs to no registered env"
        print(f"{page.path} {what}")
    if stale:
        print("run `teamgym catalogue --write` (with the same ENV_IDs and --out) and commit the pages")
        return 1
    print(f"{len(env_ids)} pages in {out} are up to date")
    return 0

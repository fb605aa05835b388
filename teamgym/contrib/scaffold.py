"""``teamgym new-env``: a new env family that passes ``teamgym check`` and its own tests from the first minute.

::

    teamgym new-env my_game                               # teamgym/envs/my_game/ in this checkout
    teamgym new-env my_game --roles scout,solver,judge    # the roles, in turn order
    teamgym new-env my_game --package ../teamgym-my-game  # a plugin package (the "teamgym.envs" entry point)

The env is a small working game (every agent holds a private clue; the team reports their sum) laid out as the
built-in envs are: ``env.py`` (the class and its docstring, the docs page: agents, tasks, spaces, the reward table,
infos, options, scripted policies, version history), ``prompts.py``, ``rewards.py``, ``data.py`` (procedural tasks
offline, a JSONL loader), ``policies.py`` (a scripted oracle and a random policy) and tests. In this checkout it is
registered in ``teamgym/envs/__init__.py``, its catalogue page is written and its fingerprint recorded; a package
gets ``pyproject.toml``, a README, ``docs/<id>.md`` and ``tests/fingerprints.json`` of its own. Then replace the
game with yours, keeping the layout, the docstring's sections and the tests' shape (CONTRIBUTING.md).
"""

from __future__ import annotations

import argparse
import keyword
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from string import Template

from teamgym.errors import InvalidArgumentError
from teamgym.registry import list_envs, spec

__all__ = ["DEFAULT_ROLES", "EnvNames", "add_arguments", "new_env_in_tree", "new_env_package", "run"]

DEFAULT_ROLES = ("scout", "solver")
TEMPLATES = Path(__file__).resolve().parent / "templates"
CHECKOUT = Path(__file__).resolve().parents[2]
#: The family's modules, the same in this checkout and in a package.
FAMILY = ("env.py", "prompts.py", "rewards.py", "data.py", "policies.py")

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,29}$")

# Runs the teamgym CLI with a plugin package importable and registered, in a fresh interpreter (the scaffolding
# process itself stays as it was).
_PLUGIN_CLI = ("import importlib, sys; sys.path.insert(0, sys.argv[1]); importlib.import_module(sys.argv[2])"
               ".register_envs(); from teamgym.cli import main; raise SystemExit(main(sys.argv[3:]))")


@dataclass(frozen=True)
class EnvNames:
    """The names a new env is known by.

    Attributes:
        name: the env's name (``my_game``), also its folder.
        roles: the agents, in turn order.
    """

    name: str
    roles: tuple[str, ...]

    def __post_init__(self) -> None:
        if not _NAME.match(self.name) or keyword.iskeyword(self.name):
            raise InvalidArgumentError(
                f"env name {self.name!r}: expected a lowercase Python identifier of at most 30 characters, "
                "e.g. 'my_game' (it names the folder, the module and the id my_game-v0)"
            )
        taken = sorted({spec(env_id).name for env_id in list_envs()})
        if self.name in taken:
            raise InvalidArgumentError(
                f"env name {self.name!r} is already registered ({spec(self.name).id}): choose another name; to change "
                f"that env, register {self.name}-v{spec(self.name).version + 1} beside it (CONTRIBUTING.md, Versions)"
            )
        bad = [role for role in self.roles if not _NAME.match(role) or keyword.iskeyword(role)]
        if not self.roles or bad or len(set(self.roles)) != len(self.roles):
            raise InvalidArgumentError(
                f"--roles {','.join(self.roles)!r}: expected distinct lowercase identifiers in turn order, "
                "e.g. scout,solver"
            )

    @property
    def env_id(self) -> str:
        """``name-v0``."""
        return f"{self.name}-v0"

    @property
    def class_name(self) -> str:
        """``MyGameEnv`` for ``my_game``."""
        return "".join(part.capitalize() for part in self.name.split("_") if part) + "Env"

    def values(self, module: str, *, in_tree: bool) -> dict[str, str]:
        """What the templates' ``${...}`` placeholders stand for."""
        return {
            "name": self.name,
            "env_id": self.env_id,
            "class_name": self.class_name,
            "module": module,
            "distribution": f"teamgym-{self.name.replace('_', '-')}",
            "roles_line": _wrap("    roles = (", [f'"{role}"' for role in self.roles],
                                ",)" if len(self.roles) == 1 else ")", indent=" " * 13),
            "agents_sentence": _wrap("    The agents, in this order every turn: ",
                                     [f"``{role}``" for role in self.roles], ".", indent="    "),
            "first_role": self.roles[0],
            "last_role": self.roles[-1],
            # teamgym is a first-party import in this checkout (an import section of its own) and a third-party
            # one in a package (in the same section as numpy and pytest).
            "sep": "\n" if in_tree else "",
        }


def _wrap(prefix: str, items: list[str], suffix: str, *, indent: str) -> str:
    """``prefix`` + the comma-separated ``items`` + ``suffix``, broken into lines of at most 120 characters."""
    lines, line = [], prefix
    for i, item in enumerate(items):
        piece = item + (", " if i + 1 < len(items) else suffix)
        if len(line) + len(piece.rstrip()) > 120 and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += piece
    return "\n".join([*lines, line])


def new_env_in_tree(names: EnvNames) -> list[Path]:
    """Add the env family ``teamgym/envs/<name>/`` to this checkout, register it, write its page and fingerprint.

    Returns:
        The files written or changed.
    """
    root = CHECKOUT
    registry_module = root / "teamgym" / "envs" / "__init__.py"
    if not ((root / "pyproject.toml").is_file() and (root / "tests" / "envs").is_dir() and (root / "docs").is_dir()):
        raise InvalidArgumentError(
            f"no teamgym checkout at {root} (teamgym is installed, not checked out): clone it and `pip install -e .`, "
            "or make a plugin package with --package DIR"
        )
    family, tests = root / "teamgym" / "envs" / names.name, root / "tests" / "envs" / names.name
    for folder in (family, tests):
        if folder.exists():
            raise InvalidArgumentError(f"{folder} already exists: choose another name, or remove it first")
    values = names.values(f"teamgym.envs.{names.name}", in_tree=True)
    files = {family / "__init__.py": _render("init_tree.py", values), tests / "__init__.py": "",
             tests / "test_env.py": _render("test_env.py", values)}
    files.update({family / module: _render(module, values) for module in FAMILY})
    written = _write(files)
    entry_point = f"teamgym.envs.{names.name}.env:{names.class_name}"
    with registry_module.open("a", encoding="utf-8") as handle:
        handle.write(f'register("{names.env_id}", "{entry_point}")\n')
    written.append(registry_module)
    _teamgym(root, [sys.executable, "-m", "teamgym.cli", "catalogue", "--write"])
    _teamgym(root, [sys.executable, "-m", "teamgym.cli", "versions", "--record"])
    return [*written, root / "docs" / "envs" / f"{names.env_id}.md", root / "tests" / "envs" / "fingerprints.json"]


def new_env_package(names: EnvNames, directory: Path) -> list[Path]:
    """Write a plugin package for the env into ``directory`` (absent or empty), with its docs page and fingerprint.

    Returns:
        The files written.
    """
    directory = directory.resolve()
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise InvalidArgumentError(f"--package {directory}: expected a new or empty folder for the package")
    module = f"teamgym_{names.name}"
    values = names.values(module, in_tree=False)
    files = {directory / "pyproject.toml": _render("pyproject.toml", values),
             directory / "README.md": _render("README.md", values),
             directory / module / "__init__.py": _render("init_package.py", values)}
    files.update({directory / module / name: _render(name, values) for name in FAMILY})
    files.update({directory / "tests" / name: _render(name, values)
                  for name in ("conftest.py", "test_env.py", "test_versions.py")})
    written = _write(files)
    plugin = [sys.executable, "-c", _PLUGIN_CLI, str(directory), module]
    _teamgym(directory, [*plugin, "catalogue", names.env_id, "--out", "docs", "--write"])
    _teamgym(directory, [*plugin, "versions", names.env_id, "--record", "--file", "tests/fingerprints.json"])
    return [*written, directory / "docs" / f"{names.env_id}.md", directory / "tests" / "fingerprints.json"]


def _render(template: str, values: dict[str, str]) -> str:
    return Template((TEMPLATES / f"{template}.tmpl").read_text(encoding="utf-8")).substitute(values)


def _write(files: dict[Path, str]) -> list[Path]:
    """Write every file (all rendered first, so that a template error writes nothing)."""
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)


def _teamgym(cwd: Path, command: list[str]) -> None:
    """Run a teamgym command in a fresh interpreter that imports this teamgym, in ``cwd``."""
    path = os.pathsep.join(p for p in (str(CHECKOUT), os.environ.get("PYTHONPATH", "")) if p)
    result = subprocess.run(command, cwd=cwd, env={**os.environ, "PYTHONPATH": path}, capture_output=True,
                            text=True, check=False)
    if result.returncode != 0:
        raise InvalidArgumentError(
            f"the new env's files are written, but `{' '.join(command[3:] if '-c' in command else command[1:])}` "
            f"failed in {cwd}:\n{result.stdout}{result.stderr}\nfix the env, then run that command again"
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``new-env`` options on ``parser``."""
    parser.add_argument("name", help="the env's name, a lowercase identifier (its id will be NAME-v0)")
    parser.add_argument("--roles", default=",".join(DEFAULT_ROLES),
                        help=f"the agents in turn order, comma-separated (default {','.join(DEFAULT_ROLES)})")
    parser.add_argument("--package", type=Path, default=None, metavar="DIR",
                        help="write a plugin package into DIR (default: a family in this checkout's teamgym/envs/)")


def run(args: argparse.Namespace) -> int:
    """``teamgym new-env``: scaffold the env and say what to do next."""
    names = EnvNames(args.name, tuple(role.strip() for role in args.roles.split(",")))
    if args.package is None:
        written = new_env_in_tree(names)
        steps = [f"teamgym check {names.env_id}", f"python -m pytest tests/envs/{names.name}"]
    else:
        written = new_env_package(names, args.package)
        steps = [f"pip install -e {args.package}", f"teamgym check {names.env_id}",
                 f"python -m pytest {args.package / 'tests'}"]
    print("\n".join(f"wrote {path}" for path in written))
    print(f"\n{names.env_id} is ready; next:\n" + "\n".join(f"  {step}" for step in steps))
    print("then make the game yours: CONTRIBUTING.md has the checklist")
    return 0

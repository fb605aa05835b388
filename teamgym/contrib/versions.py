"""``teamgym versions``: behaviour fingerprints that keep the versioning policy honest.

The policy (Gymnasium's): a change in what an env does (what an agent sees, what it earns, when the episode ends)
is a new version. Register ``name-v(N+1)`` with the new behaviour and keep ``name-vN`` registered with the old one
(supported, or ``deprecated=`` with what to use instead); ``make("name")`` gives the newest. Results published on
``name-vN`` then stay reproducible.

A *fingerprint* pins one version's behaviour: for each scripted team the env offers (each policy name of any role)
on seeds 0 and 1, and for a team that always replies with an empty completion on seed 0, a hash of every step: the
acting agent, its observation and action, every agent's reward, reward terms, chat messages and infra error, and
the episode's end (success, truncation, turns, steps, returns). Other infos are diagnostics and may change without
a new version. The fingerprints of the built-in envs are recorded in ``tests/envs/fingerprints.json``;
``tests/envs/test_versions.py`` fails when a registered version behaves differently from its record, when a
recorded version is no longer registered, or when a version is not recorded at all::

    teamgym versions                       # check every built-in version against the record (exit 0/1)
    teamgym versions --record              # record the versions that have no fingerprint yet (a new env or -vN)
    teamgym versions --accept sudoku-v0 --reason "a crash fix: ..."   # re-record a changed version, reason kept

A plugin package keeps its own record: ``teamgym versions my_game-v0 --file tests/fingerprints.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from teamgym.contrib.episodes import build, builtin_ids, play_constant, play_team, team_names
from teamgym.core.env import EPISODE_KEY
from teamgym.errors import InvalidArgumentError
from teamgym.registry import list_envs

__all__ = ["FINGERPRINT_SEEDS", "Finding", "add_arguments", "check_record", "default_record_path", "fingerprint",
           "load_record", "record", "run"]

#: The seeds every scripted team plays for a fingerprint.
FINGERPRINT_SEEDS = (0, 1)

_ABOUT = ("Behaviour fingerprints of each registered env version: a hash per episode of a scripted team (see "
          "teamgym.contrib.versions). A change here without a new -vN breaks the versioning policy (CONTRIBUTING.md).")


@dataclass(frozen=True)
class Finding:
    """One way the registered versions and the record disagree.

    Attributes:
        env_id: the version.
        kind: ``"changed"`` (behaves differently), ``"unrecorded"`` (no fingerprint) or ``"unregistered"`` (recorded,
            no longer registered).
        episodes: for ``changed``, the episodes whose hash differs.
    """

    env_id: str
    kind: str
    episodes: tuple[str, ...] = ()

    def message(self) -> str:
        """What is wrong and what to do, per the versioning policy."""
        name = self.env_id.rsplit("-v", 1)[0]
        version = int(self.env_id.rsplit("-v", 1)[1])
        if self.kind == "unrecorded":
            return (f"{self.env_id} has no recorded fingerprint: run `teamgym versions {self.env_id} --record` (a "
                    f"plugin: with --file and the path of its record) and commit the file")
        if self.kind == "unregistered":
            return (f"{self.env_id} is recorded but no longer registered: keep old versions registered (with "
                    f"deprecated='why, and what to use instead' if they should not be used) so that published "
                    f"results stay reproducible")
        return (f"{self.env_id} behaves differently from its recorded fingerprint (episodes {', '.join(self.episodes)} "
                f"differ). A change in behaviour is a new version: register {name}-v{version + 1} with it, keep "
                f"{self.env_id} registered with the old behaviour (or deprecated), add the change to the docstring's "
                f"'Version history', then run `teamgym versions --record`. If {self.env_id} itself must change (a "
                f"crash fix every user needs), run `teamgym versions --accept {self.env_id} --reason '...'`")


def fingerprint(env_id: str) -> dict[str, str]:
    """The behaviour fingerprint of ``env_id`` built with its registered defaults: ``{episode: hash}``.

    Episodes are ``"<team>/seed<s>"`` for each scripted team name and seed in :data:`FINGERPRINT_SEEDS`, and
    ``"empty/seed0"``; each hash is the first 16 hex digits of a SHA-256 over the episode's steps.
    """
    env = build(env_id)
    try:
        hashes = {f"{name}/seed{seed}": _hash(play_team(env, name, seed=seed))
                  for name in team_names(env) for seed in FINGERPRINT_SEEDS}
        hashes["empty/seed0"] = _hash(play_constant(env, "", seed=0))
    finally:
        env.close()
    return hashes


#: The parts of an episode's summary that a fingerprint pins (the rest are diagnostics).
_EPISODE_KEYS = ("success", "truncated", "turns", "steps", "returns")


def _hash(rows: list[dict[str, Any]]) -> str:
    """A hash of what a learner sees and earns in each step; other infos (diagnostics) may change freely."""
    steps = [{
        "agent": row["agent"],
        "action": row["action"],
        "observation": row["observation"],
        "rewards": row["rewards"],
        "terms": {agent: info.get("reward_terms") for agent, info in row["infos"].items()},
        "messages": {agent: info.get("messages") for agent, info in row["infos"].items()},
        "infra_error": {agent: info.get("infra_error", "") for agent, info in row["infos"].items()},
        "episode": {agent: {key: info[EPISODE_KEY].get(key) for key in _EPISODE_KEYS}
                    for agent, info in row["infos"].items() if EPISODE_KEY in info},
    } for row in rows]
    text = json.dumps(steps, sort_keys=True, ensure_ascii=True, default=_plain)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def _plain(value: Any) -> Any:
    """JSON for the values envs put in observations and infos; anything else would hash by its address."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise TypeError(f"cannot fingerprint a {type(value).__name__} ({value!r:.80}): put plain data in infos")


def default_record_path() -> Path:
    """``tests/envs/fingerprints.json`` of the teamgym checkout this module runs from."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "tests" / "envs").is_dir():
        raise InvalidArgumentError(
            f"no teamgym checkout at {root} (teamgym is installed, not checked out): pass --file PATH, e.g. the "
            "fingerprints.json of your plugin package's tests"
        )
    return root / "tests" / "envs" / "fingerprints.json"


def load_record(path: Path) -> dict[str, Any]:
    """The record at ``path`` (an empty one when the file does not exist yet)."""
    if not path.exists():
        return {"about": _ABOUT, "envs": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise InvalidArgumentError(f"{path}: not valid JSON ({err.msg}): restore it from git") from err
    if not isinstance(data, dict) or not isinstance(data.get("envs"), dict):
        raise InvalidArgumentError(f"{path}: expected {{'about': ..., 'envs': {{id: ...}}}}: restore it from git")
    return data


def check_record(path: Path, env_ids: list[str]) -> list[Finding]:
    """How the behaviour of ``env_ids`` and the record at ``path`` disagree (``[]`` when they agree).

    A recorded version among neither ``env_ids`` nor the registered ids is ``unregistered``. A version whose
    episodes differ is played a second time before it counts as ``changed`` (a sandbox timeout on a loaded
    machine must not read as a change of behaviour).
    """
    envs = load_record(path)["envs"]
    findings = [Finding(env_id, "unregistered") for env_id in sorted(envs)
                if env_id not in env_ids and env_id not in list_envs()]
    for env_id in env_ids:
        if env_id not in envs:
            findings.append(Finding(env_id, "unrecorded"))
            continue
        recorded = envs[env_id]["episodes"]
        if fingerprint(env_id) != recorded:
            now = fingerprint(env_id)
            changed = sorted(set(recorded) ^ set(now) | {k for k in set(recorded) & set(now) if recorded[k] != now[k]})
            if changed:
                findings.append(Finding(env_id, "changed", tuple(changed)))
    return findings


def record(path: Path, env_ids: list[str], *, accept: dict[str, str] | None = None) -> list[str]:
    """Record the fingerprints of ``env_ids`` that have none; re-record those in ``accept`` (``{id: reason}``).

    Returns:
        One line per version written.

    Raises:
        InvalidArgumentError: a recorded version behaves differently and is not in ``accept`` (the policy asks for
            a new version), or ``accept`` names a version that is not recorded.
    """
    accept = dict(accept or {})
    data = load_record(path)
    envs: dict[str, Any] = data["envs"]
    for env_id in accept:
        if env_id not in envs:
            raise InvalidArgumentError(f"--accept {env_id}: it has no recorded fingerprint to replace: use --record")
    written = []
    for env_id in env_ids:
        now = fingerprint(env_id)
        entry = envs.get(env_id)
        if entry is None:
            envs[env_id] = {"episodes": now, "accepted_changes": []}
            written.append(f"recorded {env_id} ({len(now)} episodes)")
        elif entry["episodes"] != now and env_id in accept:
            entry["episodes"] = now
            entry["accepted_changes"].append(accept[env_id])
            written.append(f"re-recorded {env_id}: {accept[env_id]}")
        elif entry["episodes"] != now:
            raise InvalidArgumentError(Finding(env_id, "changed", ("see `teamgym versions`",)).message())
    data["envs"] = dict(sorted(envs.items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``versions`` options on ``parser``."""
    parser.add_argument("env_ids", nargs="*", metavar="ENV_ID", help="versions to check (default: every built-in one)")
    parser.add_argument("--record", action="store_true", help="record the versions that have no fingerprint yet")
    parser.add_argument("--accept", metavar="ENV_ID", default=None,
                        help="re-record this changed version (needs --reason; the policy prefers a new -vN)")
    parser.add_argument("--reason", default="", help="why ENV_ID itself had to change (kept in the record)")
    parser.add_argument("--file", type=Path, default=None,
                        help="the record (default: tests/envs/fingerprints.json of this teamgym checkout)")


def run(args: argparse.Namespace) -> int:
    """``teamgym versions``: check, record or accept; 0 when the record and the envs agree, else 1."""
    path = args.file or default_record_path()
    env_ids = args.env_ids or builtin_ids()
    if args.accept is not None and not args.reason.strip():
        raise InvalidArgumentError(f"--accept {args.accept}: say why with --reason '...' (kept in the record)")
    if args.accept is not None or args.record:
        accept = {args.accept: args.reason.strip()} if args.accept is not None else {}
        lines = record(path, sorted(set(env_ids) | set(accept)), accept=accept)
        print("\n".join(lines) if lines else f"{path}: nothing to record")
    findings = check_record(path, env_ids)
    for finding in findings:
        print(finding.message())
    if not findings:
        print(f"{len(env_ids)} versions match {path}")
    return 1 if findings else 0

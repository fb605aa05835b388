"""The env registry: versioned ids, ``make``, and third-party envs through entry points.

Ids are ``name-vN``. An id without a version resolves to the newest registered version. Unknown ids raise
:class:`~teamgym.errors.UnknownEnvError` with the closest registered ids; unknown keyword arguments raise
:class:`~teamgym.errors.InvalidArgumentError` listing the accepted ones.

Third-party packages register envs with an entry point in the ``teamgym.envs`` group, pointing at a function that
calls :func:`register` (or at a module that does so when imported)::

    [project.entry-points."teamgym.envs"]
    my_envs = "my_package.envs:register_envs"

>>> import teamgym
>>> teamgym.spec("coder_tester").id
'coder_tester-v1'
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from pettingzoo import AECEnv, ParallelEnv

from teamgym.errors import InvalidArgumentError, RegistrationError, UnknownEnvError, closest_names

__all__ = ["EnvSpec", "register", "spec", "make", "make_parallel", "list_envs", "pprint_registry", "ENTRY_POINT_GROUP"]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "teamgym.envs"
# The envs' own names for their episode length; ``max_cycles`` (PettingZoo's) may not be given with one of them.
_TURN_LIMITS = ("max_turns", "rounds")
_ID = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(?:/[A-Za-z_][\w.]*)?)(?:-v(?P<version>\d+))?$")


@dataclass(frozen=True)
class EnvSpec:
    """Everything needed to build one registered env.

    Attributes:
        id: ``name-vN``.
        entry_point: ``"package.module:Class"`` (imported on first ``make``) or a callable returning an ``AECEnv``.
        kwargs: default keyword arguments, overridden by those given to ``make``.
        description: one line for ``teamgym list`` (default: the first line of the entry point's docstring, read at
            registration for a callable; for a ``"module:Class"`` string, :meth:`summary` reads it on first use).
        deprecated: why this version should no longer be used, and what to use instead ("" = supported); ``make``
            warns with it (a ``FutureWarning``), ``teamgym list`` shows it.
    """

    id: str
    entry_point: str | Callable[..., AECEnv]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    deprecated: str = ""

    @property
    def name(self) -> str:
        return _parse(self.id)[0]

    @property
    def version(self) -> int:
        version = _parse(self.id)[1]
        assert version is not None
        return version

    def load(self) -> Callable[..., AECEnv]:
        """The callable that builds the env (importing its module if the entry point is a string)."""
        if callable(self.entry_point):
            return self.entry_point
        try:
            target = load_entry_point(self.entry_point)
        except (ImportError, AttributeError) as err:
            raise RegistrationError(
                f"env {self.id!r}: entry point {self.entry_point!r} cannot be loaded ({err}); "
                "expected 'package.module:Callable' importable in this environment"
            ) from err
        return target

    def summary(self) -> str:
        """The one-line description shown by ``teamgym list``."""
        return self.description or _first_doc_line(self.load())

    def agents(self) -> list[str]:
        """The agent names of an env built with the default arguments."""
        target = self.load()
        roles = getattr(target, "roles", ())
        if roles and "agents" not in self.kwargs:
            return list(roles)
        env = target(**self.kwargs)
        try:
            return list(env.possible_agents)
        finally:
            env.close()


def _first_doc_line(target: Any) -> str:
    doc = (inspect.getdoc(target) or "").strip()
    return doc.splitlines()[0] if doc else ""


def load_entry_point(entry_point: str) -> Any:
    """The object ``"package.module:attr.path"`` names (``ImportError``/``AttributeError`` when there is none)."""
    module_name, _, attr = entry_point.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


_registry: dict[str, EnvSpec] = {}
_plugins_loaded = False


def _parse(env_id: str) -> tuple[str, int | None]:
    match = _ID.match(env_id) if isinstance(env_id, str) else None
    if match is None:
        raise RegistrationError(
            f"env id {env_id!r} is malformed: expected 'name-vN', e.g. 'coder_tester-v0' "
            "(letters, digits, '_' and '.', an optional 'namespace/' prefix)"
        )
    version = match.group("version")
    return match.group("name"), None if version is None else int(version)


def register(
    env_id: str,
    entry_point: str | Callable[..., AECEnv],
    *,
    description: str = "",
    deprecated: str = "",
    override: bool = False,
    **defaults: Any,
) -> EnvSpec:
    """Register an env under ``env_id`` (``name-vN``).

    A change in an env's behaviour is a new version (CONTRIBUTING.md, "Versions"): register ``name-v(N+1)`` and
    keep ``name-vN`` registered, supported or ``deprecated``.

    Args:
        env_id: the versioned id.
        entry_point: ``"package.module:Class"`` or a callable returning a PettingZoo ``AECEnv``.
        description: one line for ``teamgym list`` (default: the first line of a callable's docstring).
        deprecated: for an old version that should no longer be used: why, and what to use instead (``make`` warns).
        override: replace an existing registration with a different one (re-registering an identical one is a no-op).
        **defaults: default keyword arguments passed to the entry point.

    Returns:
        The new spec.
    """
    name, version = _parse(env_id)
    if version is None:
        raise RegistrationError(f"env id {env_id!r} has no version: register it as '{name}-v0'")
    if not (callable(entry_point) or (isinstance(entry_point, str) and ":" in entry_point)):
        raise RegistrationError(
            f"env {env_id!r}: entry_point={entry_point!r} must be a callable or 'package.module:Callable'"
        )
    if not description and callable(entry_point):
        description = _first_doc_line(entry_point)
    new = EnvSpec(env_id, entry_point, dict(defaults), description, deprecated)
    old = _registry.get(env_id)
    if old is not None and old != new and not override:
        raise RegistrationError(
            f"env {env_id!r} is already registered (entry point {old.entry_point!r}): "
            "register a new version ('-v1'), or pass override=True to replace it"
        )
    _registry[env_id] = new
    return new


def _load_plugins() -> None:
    """Import third-party envs registered under the ``teamgym.envs`` entry-point group, once."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = point.load()
            if callable(loaded):
                loaded()
        except Exception as err:  # a broken plugin must not break teamgym itself
            logger.warning("teamgym: skipping env plugin %r (%s): %s", point.name, point.value, err)


def list_envs() -> list[str]:
    """Every registered env id, sorted."""
    _load_plugins()
    return sorted(_registry)


def spec(env_id: str) -> EnvSpec:
    """The spec of ``env_id``; an unversioned id gives the newest version."""
    _load_plugins()
    if isinstance(env_id, str) and env_id in _registry:
        return _registry[env_id]
    try:
        name, version = _parse(env_id)
    except RegistrationError:
        raise UnknownEnvError(str(env_id), _registry) from None
    versions = sorted(s.version for s in _registry.values() if s.name == name)
    if version is None and versions:
        return _registry[f"{name}-v{versions[-1]}"]
    if versions:
        raise UnknownEnvError(env_id, [f"{name}-v{v}" for v in versions])
    raise UnknownEnvError(env_id, _registry)


def make(env_id: str, **kwargs: Any) -> AECEnv:
    """Build the registered env ``env_id`` (a PettingZoo ``AECEnv``), overriding its defaults with ``kwargs``.

    >>> import teamgym
    >>> env = teamgym.make("coder_tester-v0")
    >>> env.reset(seed=0)
    >>> env.agent_selection
    'coder'
    """
    env_spec = spec(env_id)
    if env_spec.deprecated:
        newest = spec(env_spec.name).id
        warnings.warn(f"{env_spec.id} is deprecated: {env_spec.deprecated} (the newest version is {newest})",
                      FutureWarning, stacklevel=2)
    target = env_spec.load()
    limits = [name for name in _TURN_LIMITS if name in kwargs]
    if kwargs.get("max_cycles") is not None and limits:
        raise InvalidArgumentError(
            f"make({env_spec.id!r}, max_cycles={kwargs['max_cycles']!r}, {limits[0]}={kwargs[limits[0]]!r}): both "
            "set the episode's length; pass one (max_cycles is PettingZoo's name: one cycle = one step of every agent)"
        )
    arguments = {**env_spec.kwargs, **kwargs}
    _check_kwargs(env_spec.id, target, arguments)
    env = target(**arguments)
    if not isinstance(env, AECEnv):
        raise RegistrationError(
            f"env {env_spec.id!r}: entry point returned {type(env).__name__}, expected a pettingzoo.AECEnv"
        )
    env.spec = env_spec
    return env


def make_parallel(env_id: str, **kwargs: Any) -> ParallelEnv:
    """The ``ParallelEnv`` view of ``env_id``: one parallel step per turn (see ``teamgym.core.parallel``)."""
    from teamgym.core.env import TurnBasedTextEnv
    from teamgym.core.parallel import TurnParallelEnv

    env = make(env_id, **kwargs)
    if isinstance(env.unwrapped, TurnBasedTextEnv) and env is env.unwrapped:
        return TurnParallelEnv(env)
    from pettingzoo.utils.conversions import aec_to_parallel

    return aec_to_parallel(env)


def pprint_registry(*, print_output: bool = True) -> str:
    """A table of registered envs: id, agents, description. Printed unless ``print_output=False``; also returned."""
    rows = [("id", "agents", "description")]
    for env_id in list_envs():
        env_spec = _registry[env_id]
        try:
            agents = ", ".join(env_spec.agents())
            description = env_spec.summary()
            if env_spec.deprecated:
                description = f"(deprecated: {env_spec.deprecated}) {description}"
        except Exception as err:  # one broken plugin must not hide the others
            agents, description = "?", f"(cannot be built: {err})"
        rows.append((env_id, agents, description))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    text = "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows)
    if print_output:
        print(text)
    return text


def _check_kwargs(env_id: str, target: Callable[..., Any], arguments: Mapping[str, Any]) -> None:
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return
    parameters = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = [p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    unknown = sorted(set(arguments) - set(accepted))
    if unknown:
        guesses = [g for name in unknown for g in closest_names(name, accepted, n=1)]
        hint = f" (did you mean {', '.join(repr(g) for g in guesses)}?)" if guesses else ""
        raise InvalidArgumentError(
            f"make({env_id!r}) got unknown argument(s) {unknown}{hint}: {env_id} accepts {sorted(accepted)}"
        )

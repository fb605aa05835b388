"""Every teamgym env as Gymnasium env ids: ``gymnasium.make("teamgym/<env id>", agent=..., partners=...)``.

One role of a team is a single-agent ``gymnasium.Env`` (:class:`~teamgym.wrappers.SingleAgentView`), its partners
played by given policies. ``import teamgym`` registers ``teamgym/<id>`` with Gymnasium for every id
``teamgym.list_envs()`` knows then (built-in and plugin envs); envs registered later are added by calling
:func:`register_gymnasium_envs` again. The role is an argument rather than part of the id because an env's agents
may depend on its arguments (``discussion-v0``'s ``num_agents``).

>>> import gymnasium
>>> import teamgym
>>> env = gymnasium.make("teamgym/sanity_relay-v0", agent="listener", partners={"speaker": "scripted"})
>>> observation, info = env.reset(seed=0)
>>> sorted(info)[:4]  # the listener's own diagnostic, answer, is there from reset on
['action_flags', 'answer', 'cumulative_reward_terms', 'infra_error']

Arguments of ``gymnasium.make`` (after the id):

* ``agent``: the role played (default: the env's first agent);
* ``partners``: ``{role: policy}`` for every other role: a callable ``policy(observation) -> str``, ``"scripted"``
  or ``"scripted:NAME"`` (the env's scripted policy; default ``"scripted"`` for every partner);
* ``info_keys``: keep only these keys of each info (for a library that stores infos in fixed-shape arrays);
* every other keyword goes to ``teamgym.make`` (``max_cycles=``, ``dataset=``, ``render_mode=``...).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium

from teamgym.errors import InvalidArgumentError
from teamgym.registry import list_envs, make

if TYPE_CHECKING:
    from teamgym.integrations.partners import PartnerSpec
    from teamgym.wrappers.single_agent import SingleAgentView

__all__ = ["NAMESPACE", "make_single_agent", "register_gymnasium_envs"]

NAMESPACE = "teamgym"

logger = logging.getLogger(__name__)


def make_single_agent(
    env_id: str,
    agent: str | None = None,
    partners: Mapping[str, PartnerSpec] | None = None,
    info_keys: Collection[str] | None = None,
    **env_kwargs: Any,
) -> SingleAgentView:
    """``agent`` of ``teamgym.make(env_id, **env_kwargs)`` as a ``gymnasium.Env``; the entry point of the ids.

    ``info_keys`` goes to :class:`~teamgym.wrappers.SingleAgentView` (keep only these info keys)."""
    # Imported here: ``import teamgym`` registers the ids and must not load the wrappers (and torch) to do it.
    from teamgym.integrations.partners import resolve_partners
    from teamgym.wrappers.single_agent import SingleAgentView

    env = make(env_id, **env_kwargs)
    agents = list(env.possible_agents)
    role = agents[0] if agent is None else agent
    if role not in agents:
        raise InvalidArgumentError(f"agent={agent!r}: {env_id} has agents {agents}; pass agent=one of them")
    given = dict(partners) if partners is not None else {a: "scripted" for a in agents if a != role}
    return SingleAgentView(env, role, resolve_partners(env, given), info_keys=info_keys)


def register_gymnasium_envs() -> list[str]:
    """Register ``teamgym/<id>`` with Gymnasium for every teamgym id not registered yet; returns the new ids.

    Ids Gymnasium cannot parse (a plugin's ``namespace/name-vN`` under ``teamgym/``) are skipped.
    """
    added = []
    for env_id in list_envs():
        gym_id = f"{NAMESPACE}/{env_id}"
        if gym_id in gymnasium.registry:
            continue
        try:
            gymnasium.register(
                id=gym_id, entry_point=make_single_agent, kwargs={"env_id": env_id}, disable_env_checker=False
            )
        except gymnasium.error.Error as error:  # an id Gymnasium cannot parse (a plugin's own namespace)
            logger.debug("not registered with Gymnasium: %s (%s)", gym_id, error)
            continue
        added.append(gym_id)
    return added

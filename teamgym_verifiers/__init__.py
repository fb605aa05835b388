"""The module verifiers imports for ``--env.taskset.id teamgym-verifiers``: teamgym's taskset and env, by ``__all__``.

verifiers 0.4 finds a taskset's package by its id (``teamgym-verifiers`` -> ``teamgym_verifiers``) and takes the
``Taskset`` and ``Env`` subclasses this module exports; the code is :mod:`teamgym.integrations.verifiers`.
"""

from teamgym.integrations.verifiers import TeamgymEnv, TeamgymTaskset

__all__ = ["TeamgymEnv", "TeamgymTaskset"]

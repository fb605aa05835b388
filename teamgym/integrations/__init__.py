"""Adapters that hand teamgym's envs and estimators to the LLM-RL trainers people use.

One module per library, each behind an optional extra and imported only when used (importing
``teamgym.integrations`` imports none of them):

* :mod:`teamgym.integrations.trl`: a ``rollout_func`` for TRL's ``GRPOTrainer`` (``pip install 'teamgym[trl]'``);
* :mod:`teamgym.integrations.verl`: a verl agent loop and teamgym's estimators in verl's registry
  (``pip install 'teamgym[verl]'``);
* :mod:`teamgym.integrations.openrlhf`: the agent classes OpenRLHF's ``--train.agent_func_path`` file binds
  (``pip install 'teamgym[openrlhf]'``, GPU machines; see docs/integrations/openrlhf.md for CPU);
* :mod:`teamgym.integrations.verifiers`: one teamgym role as a verifiers multi-turn environment
  (``pip install 'teamgym[verifiers]'``);
* :mod:`teamgym.integrations.marl`: candidate choice, a text env as a ``Discrete(k)``/``Box`` PettingZoo env for
  classic MARL libraries (no extra), trained by :mod:`teamgym.integrations.tianshou` (``teamgym[tianshou]``) or
  :mod:`teamgym.integrations.rllib` (``teamgym[rllib]``);
* :mod:`teamgym.integrations.textarena`: a teamgym env behind TextArena's ``Env`` API (``teamgym[textarena]``;
  TextArena's games as teamgym envs are :mod:`teamgym.envs.textarena`).

:mod:`teamgym.integrations.partners` resolves the partner policies every single-role adapter takes.
"""

"""verl's plugin hook: verl imports this module (entry point ``verl.plugins: teamgym``) in every process that imports
verl, so teamgym's estimators are in ``ADV_ESTIMATOR_REGISTRY`` and its trainer
(``trainer.v1.trainer_mode=teamgym_sync``, which feeds ``teamgym_gigpo`` and ``teamgym_team_gigpo``) in verl's trainer
registry wherever verl's ``TaskRunner`` looks them up (it is a Ray actor: a registration made only in the launching
process would not reach it).

Importing it without verl installed does nothing; ``VERL_USE_EXTERNAL_PLUGINS=none`` turns verl's discovery off.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("verl") is not None:
    from teamgym.integrations.verl import register_estimators, register_trainer

    register_estimators()
    # verl's v1 trainers (its default) need TransferQueue; without it there is no trainer to register.
    if importlib.util.find_spec("transfer_queue") is not None:
        register_trainer()

"""verl's plugin hook: verl imports this module (entry point ``verl.plugins: teamgym``) in every process that imports
verl, so teamgym's estimators are in ``ADV_ESTIMATOR_REGISTRY`` wherever verl's trainer computes advantages (its
``TaskRunner`` is a Ray actor: a registration made only in the launching process would not reach it).

Importing it without verl installed does nothing; ``VERL_USE_EXTERNAL_PLUGINS=none`` turns verl's discovery off.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("verl") is not None:
    from teamgym.integrations.verl import register_estimators

    register_estimators()

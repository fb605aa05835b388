#!/usr/bin/env bash
# Runs the MARL-library tests (tests/integrations/test_tianshou.py, test_rllib.py), learning runs included, and
# Tianshou's replay buffer on collected single-agent episodes (tests/integrations/test_gymnasium.py -k tianshou)
# against real Tianshou 2.0 and RLlib in their own virtual environment.
#
# Tianshou 2.0.1 pins pandas<3 and ray[rllib] pins gymnasium 1.2.2, both older than what the project's environment
# resolves, so they live in a venv that sees the project's installed packages (torch==2.13.0+cpu, teamgym, ray,
# pytest) and shadows only what these two pin. About a minute of installs, then ~6 minutes of tests on 2 cores
# (Tianshou's numba kernels compile once per process; RLlib starts a local Ray).
#
#   bash scripts/test_marl.sh                 # after the README's test install
#   bash scripts/test_marl.sh -m "not slow"   # without the learning runs
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv-marl}"
. scripts/project_venv.sh
project_venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 10 --timeout 60 \
    -c "$VENV/constraints.txt" -e ".[tianshou,rllib,textarena]"
exec "$VENV/bin/python" -m pytest -p no:cacheprovider -m "slow or not slow" \
    tests/integrations/test_tianshou.py tests/integrations/test_rllib.py \
    "tests/integrations/test_gymnasium.py::test_tianshou_buffer_takes_a_collected_episode" \
    "tests/integrations/test_gymnasium.py::test_tianshou_buffer_takes_coder_tester_infos_without_the_per_test_lists" "$@"

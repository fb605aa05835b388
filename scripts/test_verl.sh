#!/usr/bin/env bash
# Runs tests/integrations/test_verl.py against a real verl (0.9.1) in its own virtual environment.
#
# verl pins transformers<5.11 and tensordict<=0.10, which conflict with the transformers the project's other extras
# resolve, so it lives in a venv that sees the project's installed packages (torch==2.13.0+cpu, teamgym, ray, pytest)
# and shadows only what verl pins. verl 0.9.1's metadata leaves out three modules its agent loop imports
# (cachetools, uvicorn, fastapi) and TransferQueue, which its default (v1) trainer and teamgym's gigpo trainer import
# (only verl's verl-core extra names it): the `verl` extra names them. transformers 5.25 (the
# project's) brings kernels 0.19, whose LayerRepository raises a ValueError (not the ImportError transformers 5.10
# catches) when imported by verl's transformers: an older kernels (0.12) is pinned in this venv.
#
#   bash scripts/test_verl.sh              # after the README's test install; about 40 s of installs on 2 cores
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv-verl}"
. scripts/project_venv.sh
project_venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 10 --timeout 60 \
    -c "$VENV/constraints.txt" -e ".[verl]" "kernels<0.13"
exec "$VENV/bin/python" -m pytest -p no:cacheprovider tests/integrations/test_verl.py "$@"

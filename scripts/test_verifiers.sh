#!/usr/bin/env bash
# Runs tests/integrations/test_verifiers.py against a real verifiers (0.4) in its own virtual environment.
#
# verifiers brings many service clients (openai, anthropic, mcp, prime-*) and renderers; they stay out of the main
# environment in a venv that sees the project's installed packages (torch==2.13.0+cpu, teamgym, pytest). Its chat
# harness program is prepared with `uv` (which fetches the program's own deps from PyPI once), so uv is installed
# here too.
#
#   bash scripts/test_verifiers.sh         # after the README's test install; about 1 min of installs on 2 cores
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv-verifiers}"
. scripts/project_venv.sh
project_venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 10 --timeout 60 \
    -c "$VENV/constraints.txt" -e ".[verifiers]" uv
exec "$VENV/bin/python" -m pytest -p no:cacheprovider tests/integrations/test_verifiers.py "$@"

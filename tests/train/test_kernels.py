"""CPU kernel pinning (teamgym.train.kernels): the trainer's runs compute the same floats on AVX2 and AVX-512 hosts."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from teamgym.errors import InvalidArgumentError
from teamgym.train import TrainConfig
from teamgym.train.kernels import PINNED_ENV, pin_cpu_kernels

ROOT = Path(__file__).resolve().parents[2]

# A tiny GPT-2's logits and gradients, hashed: the floats a training step computes.
PROBE = """
import hashlib, json, sys, torch
from teamgym.train.kernels import pin_cpu_kernels
used = pin_cpu_kernels(sys.argv[1]) if sys.argv[1] != "none" else torch.backends.cpu.get_cpu_capability()
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0); torch.set_num_threads(1)
model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=64, n_head=2, n_layer=1, n_positions=32))
x = torch.randint(0, 50, (4, 24))
out = model(x, labels=x)
out.loss.backward()
h = hashlib.sha256(out.logits.detach().numpy().tobytes())
for p in model.parameters():
    h.update(p.grad.numpy().tobytes())
print(json.dumps({"used": used, "hash": h.hexdigest()}))
"""


def _has(flag: str) -> bool:
    try:
        return flag in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


def probe(choice: str, **env: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in PINNED_ENV["avx2"]}
    path = os.pathsep.join(p for p in (str(ROOT), clean.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-c", PROBE, choice], env={**clean, "PYTHONPATH": path, **env},
                         capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not _has("avx2"), reason="the CPU has no AVX2")
def test_pinned_runs_compute_what_avx2_kernels_compute_whatever_the_cpu_has():
    pinned, avx2 = probe("avx2"), probe("none", ATEN_CPU_CAPABILITY="avx2", MKL_CBWR="AVX2,STRICT")
    assert pinned["used"] == "AVX2"
    assert pinned["hash"] == avx2["hash"]
    if _has("avx512f"):  # on an AVX-512 host, torch's own choice computes other floats: what the pin is for
        native = probe("native")
        assert native["used"] == "AVX512"
        assert native["hash"] != pinned["hash"]


def test_the_users_own_setting_wins():
    assert probe("avx2", ATEN_CPU_CAPABILITY="default")["used"] == "DEFAULT"


def test_a_pin_after_torch_has_chosen_warns_naming_the_kernels(monkeypatch, caplog):
    for name in PINNED_ENV["avx2"]:
        monkeypatch.delenv(name, raising=False)
    torch.ones(3).softmax(0)  # torch has chosen its kernels in this process
    chosen = torch.backends.cpu.get_cpu_capability()
    monkeypatch.setattr("teamgym.train.kernels._warned", set())
    with caplog.at_level(logging.WARNING, logger="teamgym.train.kernels"):
        used = pin_cpu_kernels("avx2")
    assert used == chosen
    if chosen != "AVX2":
        assert f"torch runs {chosen} kernels" in caplog.text
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx2"  # for the processes this one starts


def test_native_sets_nothing(monkeypatch):
    for name in PINNED_ENV["avx2"]:
        monkeypatch.delenv(name, raising=False)
    pin_cpu_kernels("native")
    assert not any(name in os.environ for name in PINNED_ENV["avx2"])


def test_a_bad_choice_is_refused_naming_it():
    with pytest.raises(InvalidArgumentError, match="cpu_kernels.*avx512"):
        TrainConfig.from_dict({"cpu_kernels": "avx512"})
    with pytest.raises(InvalidArgumentError, match="cpu_kernels"):
        pin_cpu_kernels("fast")


def test_the_summary_records_the_kernels_the_run_used(tmp_path, monkeypatch):
    from teamgym.train.trainer import train

    monkeypatch.delenv("MKL_CBWR", raising=False)
    config = TrainConfig.from_dict(dict(env_id="plan_path-v0", algo="at_grpo", steps=0, output_dir=str(tmp_path / "r"),
                                        n_layer=1, n_embd=16, n_head=1, sft_steps=2, sft_tasks=2, eval_tasks=2,
                                        eval_every=0, progress_bar=False, plot=False))
    host = train(config)["host"]
    assert host["cpu_kernels"] == torch.backends.cpu.get_cpu_capability()
    assert host["mkl_cbwr"] == "AVX2,STRICT"
    assert host["cpu"]


@pytest.mark.skipif(not _has("avx2"), reason="the CPU has no AVX2")
def test_the_command_line_pins_before_torchs_first_operation(tmp_path):
    # the default algo (turn_ppo): its config check runs torch ops, which fixed the kernels before a later pin
    clean = {k: v for k, v in os.environ.items() if k not in PINNED_ENV["avx2"]}
    path = os.pathsep.join(p for p in (str(ROOT), clean.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [sys.executable, "-m", "teamgym.train", "--steps", "0", "--n-layer", "1", "--n-embd", "16",
         "--n-head", "1", "--sft-steps", "2", "--sft-tasks", "2", "--eval-tasks", "2", "--eval-every", "0",
         "--no-progress-bar", "--no-plot", "--output-dir", str(tmp_path / "r")],
        env={**clean, "PYTHONPATH": path}, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "teamgym.train.kernels" not in out.stderr  # no warning: the pin came first
    host = json.loads((tmp_path / "r" / "summary.json").read_text())["host"]
    assert host["cpu_kernels"] == "AVX2" and host["mkl_cbwr"] == "AVX2,STRICT"

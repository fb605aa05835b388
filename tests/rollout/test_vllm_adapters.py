"""Per-role adapters on a vLLM engine's multi-LoRA, against a fake engine (the real one: test_vllm_lora.py): each role
samples with its own LoRA request; a sync loads only the adapters that changed, as new versions, removing the old
ones; a base sync sends the base's weights under the checkpoint's names, then every adapter again."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from teamgym.errors import InvalidArgumentError
from teamgym.rollout import HFPolicy, SamplingParams
from teamgym.rollout.adapters import adapter_of, role_adapter_policies
from teamgym.rollout.vllm import VLLMSampler
from teamgym.rollout.vllm_lora import VLLMAdapters, lora_engine_kwargs
from tests.rollout.fakes import FakeLLM, FakeVLLMSamplingParams

pytest.importorskip("peft")
ROLES = ["coder", "tester"]


@dataclass(frozen=True)
class FakeLoRARequest:
    lora_name: str
    lora_int_id: int
    lora_path: str


class FakeLoRALLM(FakeLLM):
    """A FakeLLM with ``llm_engine.add_lora / remove_lora / list_loras`` that records each call's LoRA request."""

    def __init__(self):
        super().__init__()
        self.loras: dict[int, FakeLoRARequest] = {}
        self.lora_calls: list[FakeLoRARequest | None] = []
        engine = self.llm_engine
        engine.add_lora = lambda request: self.loras.setdefault(request.lora_int_id, request) is request
        engine.remove_lora = lambda lora_id: self.loras.pop(lora_id, None) is not None
        engine.list_loras = lambda: set(self.loras)

    def generate(self, prompts, params, use_tqdm=True, lora_request=None):
        self.lora_calls.append(lora_request)
        return super().generate(prompts, params, use_tqdm)


@pytest.fixture
def setup():
    policies = role_adapter_policies(HFPolicy.tiny(n_layer=1, n_embd=16, n_head=1), ROLES, rank=2)
    llm = FakeLoRALLM()
    adapters = VLLMAdapters(VLLMSampler(llm, sampling_params_cls=FakeVLLMSamplingParams), policies["coder"].model,
                            ROLES, lora_request_cls=FakeLoRARequest)
    yield policies, llm, adapters
    adapters.close()


def move(policy, adapter):
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if adapter_of(name) == adapter and (adapter is None or "lora_B" in name):
                param.add_(0.1)


def test_each_role_samples_with_its_own_request_and_only_changed_adapters_reload(setup):
    policies, llm, adapters = setup
    assert adapters.sync() == ROLES and set(llm.loras) == {1, 2}
    first = dict(adapters.requests)
    for role in ROLES:
        adapters.sampler(role).generate(["hi"], 2, SamplingParams(max_tokens=4))
        saved = Path(first[role].lora_path)
        assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in saved.iterdir()}
    assert llm.lora_calls == [first["coder"], first["tester"]]
    assert adapters.sync() == []  # nothing changed: nothing loaded
    move(policies["tester"], "tester")
    assert adapters.sync() == ["tester"]
    assert adapters.requests["coder"] is first["coder"] and adapters.requests["tester"].lora_int_id == 3
    assert set(llm.loras) == {1, 3} and adapters.requests["tester"].lora_name == "tester-v3"
    assert not Path(first["tester"].lora_path).exists()
    with pytest.raises(InvalidArgumentError, match="role='critic'"):
        adapters.sampler("critic")
    adapters.close()
    assert not adapters._dir.exists()


def test_a_base_sync_sends_the_checkpoint_names_then_every_adapter(setup):
    policies, llm, adapters = setup
    adapters.sync()
    plain = HFPolicy.tiny(n_layer=1, n_embd=16, n_head=1).model.state_dict()
    move(policies["coder"], None)
    assert adapters.sync(base=True) == ROLES
    names = [name for name, _ in llm.model.loaded]
    assert sorted(names) == sorted(plain) and all("lora" not in name for name in names)
    assert set(llm.loras) == {3, 4} and llm.cache_resets >= 2


def test_engine_keywords_round_the_rank_up_to_one_vllm_serves():
    assert lora_engine_kwargs(2, 4) == {"enable_lora": True, "max_loras": 2, "max_cpu_loras": 2, "max_lora_rank": 8}
    assert lora_engine_kwargs(3, 9)["max_lora_rank"] == 16
    with pytest.raises(InvalidArgumentError, match="lora_rank=600"):
        lora_engine_kwargs(2, 600)

"""The verifiers env with verifiers' real classes: loaded by taskset id as ``vf.load_environment`` loads it, an
episode run through verifiers' own rollout machinery (its chat harness program, its interception server and its eval
client) against a local OpenAI-compatible stub that returns scripted completions. verifiers lives in its own venv
(its chat program is set up with ``uv``): run with ``bash scripts/test_verifiers.sh``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

vf = pytest.importorskip("verifiers.v1", reason="verifiers lives in its own venv: bash scripts/test_verifiers.sh")

import teamgym  # noqa: E402
from teamgym.integrations import verifiers as tg_verifiers  # noqa: E402
from teamgym.rollout import task_seed  # noqa: E402


class ScriptedChat:
    """An OpenAI-compatible chat-completions server (streaming or not) that answers with scripted replies."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def _handler(self):
        chat = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                chat.requests.append(body)
                text = chat.replies[min(len(chat.requests), len(chat.replies)) - 1]
                usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                base = {"id": f"c{len(chat.requests)}", "created": 0, "model": body.get("model", "stub")}
                if body.get("stream"):
                    events = [
                        {**base, "object": "chat.completion.chunk", "choices": [
                            {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
                        {**base, "object": "chat.completion.chunk", "choices": [
                            {"index": 0, "delta": {}, "finish_reason": "stop"}]},
                        {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage},
                    ]
                    data = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"
                    content_type = "text/event-stream"
                else:
                    data = json.dumps({**base, "object": "chat.completion", "usage": usage, "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}
                    ).encode()
                    content_type = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler

    def close(self):
        self.server.shutdown()


@pytest.fixture
def harness_env(monkeypatch):
    """verifiers' chat harness program is prepared with `uv`, installed in this venv (scripts/test_verifiers.sh)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TEAMGYM_STUB_KEY", "unused")


@pytest.fixture
def tally_registered(monkeypatch, harness_env):
    """tally-v0 (three agents adding digits; no sandbox, so the env is deterministic) for one test."""
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("tally-v0", "tests.support.tally_env:TallyEnv")


def _one(observation):
    return "1"


def _config(**taskset):
    return vf.resolve_env_config({"taskset": {"id": tg_verifiers.TASKSET_ID, **taskset}})


def test_load_environment_finds_teamgyms_taskset_and_env_by_id():
    config = _config(env_kwargs={"size": 4}, task_ids=[3, 5])
    assert isinstance(config, tg_verifiers.TeamgymEnvConfig)
    assert isinstance(config.taskset, tg_verifiers.TeamgymTasksetConfig)
    env = vf.load_environment(config)
    assert isinstance(env, tg_verifiers.TeamgymEnv) and isinstance(env.taskset, tg_verifiers.TeamgymTaskset)
    tasks = list(env.taskset)
    assert [t.data.info for t in tasks] == [{"env_id": "plan_path-v0", "task_id": i, "role": "planner"}
                                           for i in (3, 5)]
    with pytest.raises(teamgym.errors.InvalidArgumentError, match="roles"):
        list(vf.load_environment(_config(role="coder")).taskset)


def test_an_episode_through_verifiers_rollout_earns_the_envs_rewards(tally_registered):
    replies = ["4", "no digit here", "2", "1", "1"]
    chat = ScriptedChat(replies)
    try:
        config = _config(env_id="tally-v0", env_kwargs={"max_turns": 4}, role="alice", partners={}, task_ids=[7])
        env = vf.load_environment(config)
        env = type(env)(config, partners={"bob": _one, "carol": _one})  # callables replace the config's partners
        (task,) = list(env.taskset)
        context = vf.ModelContext(model="stub", client=vf.EvalClientConfig(base_url=chat.base_url,
                                                                           api_key_var="TEAMGYM_STUB_KEY"))

        async def episode():
            async with env.serving():
                (slot,) = env.slots(task, 1)
                return await env.run_slot(slot, context)

        result = asyncio.run(episode())
    finally:
        chat.close()
    assert result.ok, result.errors
    (trace,) = result.traces
    turn_rewards = trace.info["teamgym_turn_rewards"]
    played = replies[:len(turn_rewards)]
    assert len(chat.requests) == len(turn_rewards) >= 2
    # The env's rewards: replaying the same replies with the same partners gives the same ones.
    view = teamgym.wrappers.SingleAgentView(teamgym.make("tally-v0", max_turns=4), "alice",
                                            {"bob": _one, "carol": _one})
    observation, _ = view.reset(seed=task_seed(7), options={"task_id": 7})
    observations, expected = [observation["prompt"]], []
    for text in played:
        observation, reward, terminated, truncated, info = view.step(text)
        observations.append(observation["prompt"])
        expected.append(reward)
    assert turn_rewards == pytest.approx(expected)
    assert trace.rewards["teamgym_reward"].score == pytest.approx(sum(expected))
    assert trace.info["teamgym_success"] == bool(info.get("teamgym_episode", {}).get("success", False))
    # The model saw the role's observations as user turns, in order, and its own replies as assistant turns.
    last = chat.requests[-1]["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    assistants = [m["content"] for m in last if m["role"] == "assistant"]
    assert [u if isinstance(u, str) else u[0]["text"] for u in users] == observations[:len(users)]
    assert len(users) == len(turn_rewards) and assistants == played[:-1]


def test_example_prints_the_command_and_evaluates_through_an_endpoint(harness_env, capsys):
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "examples" / "verifiers_eval.py"
    spec = importlib.util.spec_from_file_location("verifiers_eval", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    command = example.main(["--tasks", "2"])
    assert command.startswith(f"vf-eval {tg_verifiers.TASKSET_ID} ") and "--env.taskset.task-ids 0 1" in command
    chat = ScriptedChat(["Actions: R"])
    try:
        (value,) = example.main(["--tasks", "1", "--base-url", chat.base_url, "--api-key-var", "TEAMGYM_STUB_KEY"])
    finally:
        chat.close()
    assert chat.requests and isinstance(value, float) and "task 0: planner return" in capsys.readouterr().out

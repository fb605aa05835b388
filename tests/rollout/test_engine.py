"""The rollout engine: batching per policy, AT-GRPO tree sampling, and the three reference-code defects."""

from __future__ import annotations

import json
import math
import threading
from functools import partial

import pytest
import torch

import teamgym
from teamgym.algos import allocate_level_budget, at_grpo, choose_greedy, grpo, tree_step
from teamgym.core.env import EPISODE_KEY
from teamgym.core.rewards import mix
from teamgym.errors import InvalidArgumentError
from teamgym.rollout import AgentTurnBatch, RolloutEngine, SamplingParams, TreeSampling, default_prompt, task_seed
from teamgym.rollout.slot import EnvSlot, LocalSlots, Scored, _chooser, _restore, _snapshot
from teamgym.sandbox import Sandbox
from tests.rollout.fakes import ScriptedSampler
from tests.support.relay_env import RelayEnv
from tests.support.sandbox_batches import record_batches

SPEAKER = ["", "word is banana", "The word is {word}", "hm"]


def _said(prompt: str) -> str:
    return prompt.split("said: ")[1].split("\n")[0] if "said: " in prompt else ""


def speaker_text(prompt: str, j: int) -> str:
    word = prompt.split("secret word is ")[1].split(".")[0]
    return SPEAKER[j % len(SPEAKER)].format(word=word)


def listener_text(prompt: str, j: int) -> str:
    # Branch 0 echoes what this listener was shown: it reveals the state the listener acted in.
    return [_said(prompt), "nope", "maybe " + _said(prompt)[-5:], ""][j % 4]


def either_text(prompt: str, j: int) -> str:
    """One policy for both roles: the speaker's text on a speaker prompt, else the listener's."""
    return speaker_text(prompt, j) if "secret word is" in prompt else listener_text(prompt, j)


def make_engine(tree: TreeSampling, shared: bool = True, max_turns: int = 3, **kwargs) -> RolloutEngine:
    speaker = ScriptedSampler(either_text if shared else speaker_text)
    listener = speaker if shared else ScriptedSampler(listener_text)
    return RolloutEngine(LocalSlots(lambda: RelayEnv(max_turns=max_turns), default_prompt),
                         {"speaker": speaker, "listener": listener}, sampling=SamplingParams(max_tokens=16), tree=tree,
                         **kwargs)


def replay_reward(row: dict, batch_rows: list[dict], max_turns: int = 3) -> tuple[float, dict]:
    """Reward of ``row``'s candidate from a fresh env that replays the episode's chosen actions before it."""
    env = RelayEnv(max_turns=max_turns)
    env.reset(options={"task_id": row["task_id"]})
    path = sorted((r for r in batch_rows if r["episode_id"] == row["episode_id"] and r["chosen"]
                   and r["step"] < row["step"]), key=lambda r: r["step"])
    for r in path:
        env.step(r["text"])
    agent = env.agent_selection
    assert agent == row["agent"]
    env.step(row["text"])
    return env.rewards[agent], env.infos[agent]["reward_terms"]


@pytest.mark.parametrize("strategy", ["greedy", "top_m"])
def test_every_branch_is_scored_on_its_own_state(strategy):
    engine = make_engine(TreeSampling(k=4, strategy=strategy, top_m=3), seed=3)
    result = engine.rollout(["apple", "river", "copper"])
    rows = result.batch.rows()
    assert len(rows) == result.completions
    later = [r for r in rows if r["turn"] > 0]
    assert later, "the scripted episode must last more than one turn"
    for row in rows:
        reward, terms = replay_reward(row, rows)
        assert row["rewards"] == pytest.approx(reward)
        assert row["reward_terms"] == terms


def test_groups_never_mix_tasks_or_episodes():
    engine = make_engine(TreeSampling(k=4))
    batch = engine.rollout(["apple", "river", "apple", "violet"]).batch
    ids = batch.node_ids()
    for g in ids.unique().tolist():
        members = (ids == g).nonzero().flatten().tolist()
        assert len(members) == 4
        assert len({batch.task_id[i] for i in members}) == 1
        assert len({batch.episode_id[i] for i in members}) == 1
        assert len({(batch.agent[i], int(batch.turn[i]), int(batch.step[i])) for i in members}) == 1
        assert sorted(int(batch.branch[i]) for i in members) == [0, 1, 2, 3]
        assert int(batch.chosen[members].sum()) == 1
        assert len({batch.anchor[i] for i in members}) == 1


def test_later_agent_sees_the_state_its_own_branch_produced():
    engine = make_engine(TreeSampling(k=4, strategy="top_m", top_m=3, top_m_temperature=5.0), seed=0)
    rows = engine.rollout(["apple", "river", "copper", "violet"]).batch.rows()
    checked = 0
    for row in rows:
        if row["agent"] == "listener" and row["branch"] == 0:
            spoken = [r for r in rows if r["episode_id"] == row["episode_id"] and r["step"] == row["step"] - 1
                      and r["chosen"]]
            assert len(spoken) == 1 and spoken[0]["agent"] == "speaker"
            assert row["text"] == spoken[0]["text"]
            checked += 1
    assert checked >= 4


def test_chosen_branch_is_the_greedy_argmax():
    rows = make_engine(TreeSampling(k=4)).rollout(["apple", "river"]).batch.rows()
    nodes: dict = {}
    for r in rows:
        nodes.setdefault((r["episode_id"], r["step"]), []).append(r)
    for members in nodes.values():
        rewards = [m["rewards"] for m in sorted(members, key=lambda m: m["branch"])]
        chosen = [m["branch"] for m in members if m["chosen"]]
        assert chosen == [rewards.index(max(rewards))]


def test_one_generate_call_per_policy_per_step():
    engine = make_engine(TreeSampling(k=3), shared=False)
    engine.rollout(["apple", "river", "copper"])
    speaker, listener = engine.samplers["speaker"], engine.samplers["listener"]
    for prompts, n in speaker.calls + listener.calls:
        assert n == 3 and len(prompts) <= 3
    assert len(speaker.calls[0][0]) == 3  # the first step batches all three envs' prompts


def test_shared_policy_serves_every_role():
    engine = make_engine(TreeSampling(k=2), shared=True)
    result = engine.rollout(["apple"])
    assert {r["agent"] for r in result.batch.rows()} == {"speaker", "listener"}
    assert len(engine.samplers["speaker"].calls) == len(result.batch) // 2


def test_adaptive_k_spends_more_only_where_candidates_disagree():
    engine = make_engine(TreeSampling(k=4, strategy="adaptive", k0=2, k_max=6))
    result = engine.rollout(["apple", "river"])
    rows = result.batch.rows()
    assert result.completions == len(rows)
    nodes: dict = {}
    for r in rows:
        nodes.setdefault((r["episode_id"], r["step"]), []).append(r["rewards"])
    for rewards in nodes.values():
        first = rewards[:2]
        if first[0] == first[1]:
            assert len(rewards) == 2
        else:
            assert len(rewards) > 2
    assert engine.adaptive.spent == result.completions


def test_budget_strategy_spends_k_per_node_at_every_level_moved_to_the_nodes_that_disagree():
    def speaker(prompt: str, j: int) -> str:  # on two of the four tasks every candidate says the same
        word = prompt.split("secret word is ")[1].split(".")[0]
        return f"The word is {word}" if word in ("apple", "river") else speaker_text(prompt, j)

    def tree_engine(tree: TreeSampling) -> RolloutEngine:
        return RolloutEngine(LocalSlots(lambda: RelayEnv(max_turns=3), default_prompt),
                             {"speaker": ScriptedSampler(speaker), "listener": ScriptedSampler(listener_text)},
                             sampling=SamplingParams(max_tokens=16), tree=tree)

    tree = TreeSampling(k=4, strategy="budget", k0=2, k_max=6)
    result = tree_engine(tree).rollout(["apple", "river", "copper", "violet"])
    rows = result.batch.rows()
    assert result.completions == len(rows)
    levels: dict = {}
    for r in rows:
        levels.setdefault(r["step"], {}).setdefault(r["episode_id"], []).append(r["rewards"])
    sizes = set()
    for level in levels.values():
        assert sum(len(rewards) for rewards in level.values()) == tree.k * len(level)  # greedy K's spend, exactly
        first = [rewards[:tree.k0] for rewards in level.values()]
        assert [len(rewards) - tree.k0 for rewards in level.values()] == allocate_level_budget(
            first, k=tree.k, k0=tree.k0, k_max=tree.k_max)
        sizes |= {len(rewards) for rewards in level.values()}
    assert len(sizes) > 1  # the budget moved between nodes somewhere (else this test would not see the allocation)
    greedy = tree_engine(TreeSampling(k=4)).rollout(["apple", "river", "copper", "violet"])
    assert greedy.completions == result.completions


def test_at_grpo_on_one_agent_one_turn_equals_grpo():
    batch = make_engine(TreeSampling(k=4), max_turns=1).rollout(["apple"]).batch
    speaker = batch.select([a == "speaker" for a in batch.agent])
    task = torch.zeros(len(speaker), dtype=torch.long)
    adv = at_grpo(speaker.rewards, task, task, speaker.turn)
    assert torch.allclose(adv, grpo(speaker.rewards, task))


def test_explicit_seeds_replay_a_task_from_one_state():
    seen = []

    class SeededRelay(RelayEnv):
        def reset(self, seed=None, options=None):
            seen.append((options["task_id"], seed))
            return super().reset(seed=seed, options=options)

    engine = RolloutEngine(LocalSlots(SeededRelay, default_prompt), {"speaker": ScriptedSampler(lambda p, j: "x"),
                                         "listener": ScriptedSampler(lambda p, j: "y")}, tree=TreeSampling(k=1))
    engine.rollout(["apple", "apple", "river"])
    default = list(seen)
    assert default[0][1] != default[1][1]  # by default each (task, slot) has its own seed, as before
    seen.clear()
    tasks = ["apple", "apple", "river"]
    engine.rollout(tasks, seeds=[task_seed(t) for t in tasks])
    assert seen == [("apple", task_seed("apple")), ("apple", task_seed("apple")), ("river", task_seed("river"))]
    assert task_seed("apple") == default[0][1]
    with pytest.raises(InvalidArgumentError, match="one seed per episode"):
        engine.rollout(tasks, seeds=[1])


def test_unknown_agent_policy_is_named():
    engine = RolloutEngine(LocalSlots(lambda: RelayEnv(), default_prompt), {"speaker": ScriptedSampler(speaker_text)})
    with pytest.raises(InvalidArgumentError, match="listener"):
        engine.rollout(["apple"])


def test_bad_tree_settings_name_the_field():
    with pytest.raises(InvalidArgumentError, match="k=0"):
        TreeSampling(k=0)
    with pytest.raises(InvalidArgumentError, match="strategy='best'"):
        TreeSampling(strategy="best")


def test_batch_select_concat_jsonl_roundtrip(tmp_path):
    batch = make_engine(TreeSampling(k=2)).rollout(["apple", "river"]).batch
    both = AgentTurnBatch.concat([batch, batch])
    assert len(both) == 2 * len(batch)
    chosen = batch.select(batch.chosen)
    assert len(chosen) == int(batch.chosen.sum())
    path = tmp_path / "rows.jsonl"
    batch.to_jsonl(path)
    assert len(path.read_text().splitlines()) == len(batch)


class ReferenceSlot(EnvSlot):
    """The slot as :func:`tree_step` states it: restore before every candidate, snapshot after every one; a branch
    whose scoring failed (``infra_error``) is chosen only when every branch failed."""

    def open_node(self):
        self._reference_branches, self._reference_failed, self._reference_ended = [], [], []
        return super().open_node()

    def programs(self, texts):
        return []  # declares nothing: every candidate's step runs its own program

    def expand(self, texts, strategy, choose_args, prefetched=((), ())):
        env, agent = self.env, self._agent
        results = []

        alphas = choose_args.get("alphas")

        def act(text):
            env.step(text)
            info = env.infos.get(agent, {})
            reward = float(env.rewards.get(agent, 0.0)) if alphas is None else mix(info["reward_terms"], alphas[agent])
            self._reference_ended.append(self.done())
            summary = next((env.infos[a][EPISODE_KEY] for a in env.agents if EPISODE_KEY in env.infos[a]), {})
            outcome = {"success": bool(summary.get("success", False))} if self.done() else {}
            others = {a: (dict(env.infos[a]["reward_terms"]), float(env.rewards[a]) if alphas is None else
                          mix(env.infos[a]["reward_terms"], alphas[a])) for a in env.agents if a != agent}
            received = {a: v for a, v in others.items() if v[1] != 0.0 or any(t != 0.0 for t in v[0].values())}
            results.append(Scored(reward, dict(info.get("reward_terms", {})), str(info.get("infra_error", "") or ""),
                                  {a: v[0] for a, v in received.items()}, {a: v[1] for a, v in received.items()},
                                  outcome))
            return reward

        step = tree_step(self._state, list(texts), restore=partial(_restore, env), act=act,
                         take_snapshot=partial(_snapshot, env), choose=choose_greedy)
        self._reference_branches.extend(step.branches)
        self._reference_failed.extend(bool(result.infra_error) for result in results)
        healthy = [b.reward if not bad else -math.inf for b, bad in zip(self._reference_branches,
                                                                       self._reference_failed, strict=True)]
        rewards = healthy if any(math.isfinite(r) for r in healthy) else [b.reward for b in self._reference_branches]
        chosen = _chooser(strategy, choose_args)(rewards)  # a failed branch only when every branch failed
        _restore(env, self._reference_branches[chosen].snapshot)
        self._reference_chosen = chosen
        return results, chosen

    def unchosen_children(self):
        return [(b, branch.snapshot) for b, branch in enumerate(self._reference_branches)
                if b != self._reference_chosen and not self._reference_failed[b] and not self._reference_ended[b]]


class ReferenceSlots(LocalSlots):
    def ensure(self, count):
        while len(self.slots) < count:
            self.slots.append(ReferenceSlot(self.env_fn, self.prompt_formatter))


def plan_text(prompt: str, j: int) -> str:
    """Ties (two unreadable answers), one-move plans that differ, and a repeat of the first."""
    return ["no plan", "Actions: R", "Actions: D", "no plan", "Actions: U,D", "Actions: R"][(j + len(prompt)) % 6]


@pytest.mark.parametrize("strategy", ["greedy", "top_m", "adaptive"])
@pytest.mark.parametrize("env_id", ["plan_path-v0", "relay"])
def test_slot_expansion_equals_the_tree_step_reference(strategy, env_id):
    """The slot's copy-saving expansion (live first candidate, reordered acts, only winning snapshots) gives the
    rows and end states of the plain restore-snapshot-every-candidate reference."""
    tree = TreeSampling(k=4, strategy=strategy, top_m=3, top_m_temperature=2.0, k0=2, k_max=6)
    if env_id == "relay":
        env_fn, text, tasks = (lambda: RelayEnv(max_turns=3)), None, ["apple", "river", "copper"]
    else:
        env_fn = partial(teamgym.make, "plan_path-v0", size=4, max_turns=3)
        text, tasks = plan_text, [1, 2, 3, 4]
    results = []
    for slots_cls in (LocalSlots, ReferenceSlots):
        engine = make_engine(tree, seed=7) if text is None else RolloutEngine(
            LocalSlots(env_fn, default_prompt), {"tool": ScriptedSampler(text), "planner": ScriptedSampler(text)},
            tree=tree, seed=7)
        engine.slots = slots_cls(env_fn, engine.slots.prompt_formatter)
        result = engine.rollout(tasks)
        ends = [(s.env.history, s.env.rewards, s.env.infos, s.env.agent_selection) for s in engine.slots.slots]
        results.append((result.batch.rows(), result.episodes, ends))
        engine.close()
    assert results[0] == results[1]
    assert any(r["chosen"] and r["branch"] > 0 for r in results[0][0])


def test_slot_skips_copies_it_does_not_need():
    env_fn = partial(teamgym.make, "plan_path-v0", size=4, max_turns=2)
    slot = EnvSlot(env_fn, lambda env, agent: env.observe(agent)["prompt"])
    slot.reset(1, 0)
    counts = {"snapshot": 0, "handoff": 0, "restore": 0}
    env = slot.env
    for name in ("snapshot", "restore"):
        original = getattr(env, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            counts["handoff" if kwargs.get("handoff") else _name] += 1
            return _original(*args, **kwargs)

        setattr(env, name, counted)
    slot.open_node()
    scored, chosen = slot.expand(["x", "y", "z", "w"], "greedy", {})
    assert len({s.reward for s in scored}) == 1 and chosen == 0  # all tie: the first is chosen
    # a copy of the node; the first candidate to act (branch 1) hands its state over; restores before branches
    # 2, 3 and 0 only
    assert counts == {"snapshot": 1, "handoff": 1, "restore": 3}
    counts.update(snapshot=0, handoff=0, restore=0)
    slot.open_node()
    scored, chosen = slot.expand(["Actions: U", "x", "Actions: R,R", "y"], "greedy", {})
    assert chosen in (0, 2) and counts["snapshot"] == 1 and counts["restore"] == 3 + (chosen != 0)


def test_others_terms_survive_select_concat_and_rows_without_them(tmp_path):
    env_fn = partial(teamgym.make, "plan_path-v0", size=4, max_turns=2)
    engine = RolloutEngine(LocalSlots(env_fn, default_prompt),
                           {"tool": ScriptedSampler(plan_text), "planner": ScriptedSampler(plan_text)},
                           tree=TreeSampling(k=2))
    batch = engine.rollout([1, 2]).batch
    engine.close()
    for terms, rewards, agent in zip(batch.others_terms, batch.others_rewards, batch.agent, strict=True):
        assert set(terms) == set(rewards) and agent not in terms
        if agent == "tool":
            assert terms == {}  # the tool's step pays nobody else
        elif terms:  # the planner's step pays the tool the team term, and only it
            assert set(terms) == {"tool"} and terms["tool"]["team"] != 0.0
            assert rewards["tool"] == pytest.approx(terms["tool"]["team"])
    assert any(batch.others_terms)
    both = AgentTurnBatch.concat([batch, batch.select(~batch.chosen)])
    unchosen = [i for i in range(len(batch)) if not batch.chosen[i]]
    assert both.others_terms == batch.others_terms + [batch.others_terms[i] for i in unchosen]
    assert both.others_rewards == batch.others_rewards + [batch.others_rewards[i] for i in unchosen]
    old_rows = [{k: v for k, v in row.items() if k not in ("others_terms", "others_rewards")} for row in batch.rows()]
    old = AgentTurnBatch.from_rows(old_rows)
    assert old.others_terms == [{}] * len(batch) and old.others_rewards == [{}] * len(batch)
    assert old.select(old.chosen).others_terms == [{}] * int(batch.chosen.sum())
    path = tmp_path / "rows.jsonl"
    batch.to_jsonl(path)
    assert [json.loads(line)["others_terms"] for line in path.read_text().splitlines()] == batch.others_terms


@pytest.mark.parametrize("strategy", ["greedy", "top_m"])
def test_repeated_candidates_are_not_stepped_again(strategy):
    env_fn = partial(teamgym.make, "plan_path-v0", size=4, max_turns=2)
    slot = EnvSlot(env_fn, lambda env, agent: env.observe(agent)["prompt"])
    slot.reset(1, 0)
    slot.open_node()
    slot.expand(["no code"], "greedy", {})  # the tool acts; the planner's node is next
    stepped = []
    original = slot.env.step
    slot.env.step = lambda action: (stepped.append(action), original(action))[1]
    slot.open_node()
    texts = ["Actions: D", "Actions: R", "Actions: D", "Actions: R", "Actions: R"]
    scored, chosen = slot.expand(texts, strategy, {"seed": 0, "m": 3, "temperature": 1.0})
    assert sorted(stepped) == ["Actions: D", "Actions: R"]
    assert scored[0] == scored[2] and scored[1] == scored[3] == scored[4]
    assert scored[0].terms is not scored[2].terms
    reward, terms = slot.env.rewards[slot._agent], slot.env.infos[slot._agent]["reward_terms"]
    assert reward == scored[chosen].reward and terms == scored[chosen].terms


def program_text(prompt: str, j: int) -> str:
    """Tool programs that print plans (one repeated, one failing) and an answer without code."""
    return ["```\nprint('Actions: R')\n```", "```\nprint('Actions: D')\n```", "```\n1/0\n```",
            "```\nprint('Actions: R')\n```", "no code", "```\nprint('Actions: D,R')\n```"][(j + len(prompt)) % 6]


@pytest.mark.parametrize("strategy", ["greedy", "adaptive"])
def test_a_levels_programs_go_to_the_sandbox_together(strategy, monkeypatch):
    """Every program of a tree level (all candidates, all envs) goes out in one batch, each distinct one once, and
    the rows equal the reference slots' (every candidate's program run by its own step)."""
    batches = record_batches(monkeypatch)
    tree = TreeSampling(k=4, strategy=strategy, k0=2, k_max=6)
    env_fn = partial(teamgym.make, "plan_path-v0", size=4, max_turns=2)
    results = []
    for slots_cls in (LocalSlots, ReferenceSlots):
        batches.clear()
        engine = RolloutEngine(slots_cls(env_fn, default_prompt), {"tool": ScriptedSampler(program_text),
                                                                   "planner": ScriptedSampler(plan_text)},
                               tree=tree, seed=3)
        result = engine.rollout([1, 2, 3])
        engine.close()
        results.append((result.batch.rows(), result.episodes, list(batches)))
    (rows, episodes, batched), (ref_rows, ref_episodes, one_by_one) = results
    assert rows == ref_rows and episodes == ref_episodes
    tool_rows = [r for r in rows if r["agent"] == "tool" and "```" in r["text"]]
    assert tool_rows and len(one_by_one) >= len({(r["episode_id"], r["step"]) for r in tool_rows})
    assert all(len(batch) == 1 for batch in one_by_one)
    levels = {}
    for r in tool_rows:
        levels.setdefault((r["step"], r["branch"] >= 2 and strategy == "adaptive"), set()).add(r["episode_id"])
    assert len(batched) <= len(levels)  # one batch per level (and adaptive top-up round), not one per program
    assert max(len(batch) for batch in batched) > 1
    assert all(len(set(batch)) == len(batch) for batch in batched)


# ---------------------------------------------------------------------- waves

def _node_key(rows):
    return [(r["episode_id"], r["step"], r["branch"], r["agent"], r["text"], r["rewards"], r["chosen"]) for r in rows]


@pytest.mark.parametrize("strategy", ["greedy", "top_m", "adaptive"])
def test_waves_give_the_lockstep_batch(strategy):
    tree = TreeSampling(k=4, strategy=strategy, top_m=3, top_m_temperature=5.0, k0=2, k_max=6)
    tasks = ["apple", "river", "copper", "violet", "meadow"]
    lockstep = make_engine(tree, seed=7).rollout(tasks)
    for waves in (2, 3, 8):
        engine = make_engine(tree, seed=7, waves=waves)
        result = engine.rollout(tasks)
        engine.close()
        if strategy == "adaptive":  # the budget bank is shared, so nodes may draw differently; the rules still hold
            assert result.completions == len(result.batch)
            assert [e["episode_id"] for e in result.episodes] == [f"ep-{i}" for i in range(len(tasks))]
            continue
        assert _node_key(result.batch.rows()) == _node_key(lockstep.batch.rows())
        assert result.episodes == lockstep.episodes
        assert result.completions == lockstep.completions


def test_waves_generate_each_wave_apart_and_overlap_its_env_work():
    stepped = threading.Event()
    env_threads, overlapped = set(), []

    class WatchedRelay(RelayEnv):
        def step(self, action):
            env_threads.add(threading.current_thread().name)
            stepped.set()
            super().step(action)

    class WaitingPolicy(ScriptedSampler):
        def generate(self, prompts, n, sampling):
            if len(self.calls) == 1:  # the second wave's first call, while wave 0's candidates are stepped
                overlapped.append(("river" in prompts[0] and "violet" in prompts[1], stepped.wait(timeout=10)))
            return super().generate(prompts, n, sampling)

    policy = WaitingPolicy(either_text)
    engine = RolloutEngine(LocalSlots(WatchedRelay, default_prompt), {"speaker": policy, "listener": policy},
                           tree=TreeSampling(k=2), waves=2)
    result = engine.rollout(["apple", "river", "copper", "violet"])
    engine.close()
    assert overlapped == [(True, True)]
    assert env_threads and all(name.startswith("teamgym-env") for name in env_threads)
    assert [len(prompts) for prompts, _ in policy.calls[:2]] == [2, 2]  # episodes 0, 2 then 1, 3
    assert {r["episode_id"] for r in result.batch.rows()} == {f"ep-{i}" for i in range(4)}


def test_an_env_error_in_a_wave_reaches_the_caller_and_the_engine_goes_on():
    class Fragile(RelayEnv):
        def step(self, action):
            if self.task == "copper" and self.agent_selection == "listener":
                raise RuntimeError("env broke on copper")
            super().step(action)

    policy = ScriptedSampler(either_text)
    engine = RolloutEngine(LocalSlots(Fragile, default_prompt), {"speaker": policy, "listener": policy},
                           tree=TreeSampling(k=2), waves=2)
    with pytest.raises(RuntimeError, match="env broke on copper"):
        engine.rollout(["apple", "copper", "river"])
    result = engine.rollout(["apple", "river", "violet"])
    engine.close()
    assert len(result.episodes) == 3


@pytest.mark.parametrize("waves", [0, -1, True, 1.5, "2"])
def test_bad_waves_are_named(waves):
    with pytest.raises(InvalidArgumentError, match="waves="):
        make_engine(TreeSampling(k=2), waves=waves)


# ---------------------------------------------------------------------- chat prompts

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def test_chat_prompt_renders_the_envs_messages_in_the_template():
    from teamgym.rollout import ChatPrompt
    from teamgym.rollout.tiny import char_tokenizer

    tokenizer = char_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    prompt = ChatPrompt(tokenizer)
    env = RelayEnv()
    env.reset(seed=0, options={"task_id": "apple"})
    env.step("The word is apple")
    text = prompt(env, "listener")
    system, user = (m["content"] for m in env.infos["listener"]["messages"])
    assert text == f"<|system|>{system}<|end|>\n<|user|>{user}<|end|>\n<|assistant|>"
    assert "The speaker said: The word is apple" in text
    policy = ScriptedSampler(lambda p, j: "apple" if "<|assistant|>" in p else "")
    engine = RolloutEngine(LocalSlots(RelayEnv, prompt), {"speaker": policy, "listener": policy},
                           tree=TreeSampling(k=2))
    rows = engine.rollout(["apple"]).batch.rows()
    assert rows and all(r["text"] == "apple" for r in rows)  # every node's prompt went through the template


def test_chat_prompt_needs_a_chat_template():
    from teamgym.rollout import ChatPrompt
    from teamgym.rollout.tiny import char_tokenizer

    with pytest.raises(InvalidArgumentError, match="chat template.*prompt_format='env'"):
        ChatPrompt(char_tokenizer())


def test_coder_testers_matrices_go_to_the_sandbox_by_level(monkeypatch):
    """coder_tester declares its steps' test matrices (``WireProgram``): a tree level's go to the sandbox in one
    ``run_wire`` batch, and the rows equal the reference slots' (every candidate's step runs its own matrix)."""
    coder = "```python\ndef has_close_elements(numbers, threshold):\n    return {j}\n```"
    tester = ("```python\nassert has_close_elements([1.0, 1.05], 0.1)\n"
              "assert has_close_elements([1.0, 2.0], 0.1) == {j}\n```")
    samplers = {"coder": ScriptedSampler(lambda prompt, j: coder.format(j=j % 2 == 0)),
                "tester": ScriptedSampler(lambda prompt, j: tester.format(j=j % 3 == 1))}
    env_fn = partial(teamgym.make, "coder_tester-v0", max_turns=2, limit=2)
    tasks = ["HumanEval/0", "HumanEval/1"]
    for task in tasks:  # the mutants (computed once per process, in the sandbox) are known before either run
        env_fn().reset(options={"task_id": task})
    batches: list[int] = []
    original = Sandbox.run_wire

    def recorded(self, wire):
        batches.append(len(wire))
        return original(self, wire)

    monkeypatch.setattr(Sandbox, "run_wire", recorded)
    results = []
    for slots_cls in (LocalSlots, ReferenceSlots):
        batches.clear()
        engine = RolloutEngine(slots_cls(env_fn, default_prompt), samplers, tree=TreeSampling(k=3), seed=0)
        result = engine.rollout(tasks)
        engine.close()
        results.append((result.batch.rows(), result.episodes, list(batches)))
    (rows, episodes, batched), (ref_rows, ref_episodes, one_by_one) = results
    assert rows == ref_rows and episodes == ref_episodes
    levels = {r["step"] for r in rows}
    assert len(batched) == len(levels) < len(one_by_one)
    assert sum(batched) < sum(one_by_one)  # identical matrices run once


def test_tree_rollout_on_coder_tester_runs_its_steps():
    """coder_tester once had a private ``_programs()`` that shadowed the env hook ``_programs(agent, action)``: the
    engine's per-level program batching then raised TypeError on its first tree level."""
    coder = "```python\ndef has_close_elements(numbers, threshold):\n    return {j}\n```"
    tester = "```python\nassert has_close_elements([1.0, 1.05], 0.1)\n```"
    samplers = {"coder": ScriptedSampler(lambda prompt, j: coder.format(j=j % 2)),
                "tester": ScriptedSampler(lambda prompt, j: tester)}
    env_fn = partial(teamgym.make, "coder_tester-v0", max_turns=1, limit=1)
    engine = RolloutEngine(LocalSlots(env_fn, default_prompt), samplers, tree=TreeSampling(k=2), seed=0)
    result = engine.rollout(["HumanEval/0"])
    engine.close()
    rows = result.batch.rows()
    assert {r["agent"] for r in rows} == {"coder", "tester"}
    assert max(r["rewards"] for r in rows if r["agent"] == "coder") > 0  # "return True" passes some tests

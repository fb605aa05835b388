"""Property tests of discussion-v0: for any answers, team, switch and persuasion terms follow the documented rules."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import teamgym

WEIGHT = 0.25
CHOICES = ("truth", "-1", "-2", "none")


def _reply(choice: str, truth: str) -> str:
    return {"truth": rf"\boxed{{{truth}}}", "none": "no answer"}.get(choice, rf"\boxed{{{choice}}}")


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4).flatmap(lambda n: st.lists(st.lists(st.sampled_from(CHOICES), min_size=n, max_size=n),
                                                     min_size=1, max_size=3)))
def test_terms_follow_the_documented_rules(table: list[list[str]]) -> None:
    num_agents, rounds = len(table[0]), len(table) - 1
    env = teamgym.make("discussion-v0", num_agents=num_agents, rounds=rounds, persuasion_weight=WEIGHT)
    env.reset(seed=0)
    truth = env.unwrapped.task.answer
    agents = list(env.agents)
    for r, row in enumerate(table):
        round_terms = {}
        for agent, choice in zip(agents, row, strict=True):
            env.step(_reply(choice, truth))
            round_terms[agent] = env.infos[agent]["reward_terms"]
        end_terms = {a: env.infos[a]["reward_terms"] for a in agents}  # the round's last step
        for i, agent in enumerate(agents):
            right = row[i] == "truth"
            assert round_terms[agent]["correct"] == float(right)
            assert round_terms[agent]["format"] == (-0.5 if row[i] == "none" else 0.0)
            if r > 0:
                was_right = table[r - 1][i] == "truth"
                assert round_terms[agent]["switch"] == 0.5 * (right and not was_right) - 0.5 * (was_right and not right)
        if r > 0:
            total = sum(t["persuasion"] for t in end_terms.values())
            previous = table[r - 1]
            converted = sum(1 for i in range(num_agents) if previous[i] != "truth" and row[i] == "truth"
                            and any(previous[k] == "truth" for k in range(num_agents) if k != i))
            misled = sum(1 for i in range(num_agents) if previous[i] == "truth" and row[i] in ("-1", "-2")
                         and any(previous[k] == row[i] for k in range(num_agents) if k != i))
            assert abs(total - WEIGHT * (converted - misled)) < 1e-9
    final = [c for c in table[-1] if c != "none"]
    counts = {c: final.count(c) for c in set(final)}
    top = max(counts.values(), default=0)
    leaders = [c for c, n in counts.items() if n == top]
    team = float(leaders == ["truth"])
    assert all(env.infos[a]["reward_terms"]["team"] == team for a in agents)
    assert all(env.terminations.values())
    assert env.infos[agents[0]]["teamgym_episode"]["success"] == bool(team)

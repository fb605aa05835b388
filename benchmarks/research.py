"""The research questions of issue 21 measured with seeds and confidence intervals: one resumable runner over a grid
of (question, method, env, seed), and the report (docs/RESULTS.md, one table and one plot per question) it writes
from the runs' JSON.

    python benchmarks/research.py                          # every question, env and seed 0-4, then the report
    python benchmarks/research.py --questions A --jobs 2   # one question, two runs at a time
    python benchmarks/research.py --dry-run                # what would run, and how (nothing is run)
    python benchmarks/research.py --report                 # the report only, from the runs there are
    python benchmarks/research.py --quick                  # one tiny cell end to end, report in a temp folder (CI)

Each (env, seed) first gets one warm start, shared by every method and question: ``python -m teamgym.train ...
--steps 0 --output-dir RUNS/warm_start/warm_start/<env>/seed_<n>`` (the SFT stage and its held-out evaluations, no
RL). Each run is then one subprocess ``python -m teamgym.train ... --torch-threads 1 --warm-start-from <that folder>
--output-dir RUNS/<question>/<method>/<env>/seed_<n>`` (its output in that folder's ``train.log``), which starts
from that warm start exactly as if it had made it itself (``warm_start_from``, tested bit for bit), so the grid pays
for each warm start once instead of once per method. When it has finished, the
runner writes the folder's ``result.json``: held-out success (greedy and sampled) after the warm start and after RL,
the completions and completion tokens RL generated, wall seconds, the command and the trainer's ``summary.json``.
Rerunning skips runs whose ``result.json`` exists, resumes (``--resume``) runs with checkpoints and no result, and
starts the others; a ``result.json`` written by other train arguments (another budget...) stops the runner before it
starts anything (choose another ``--runs-dir``). Runs whose train arguments are the same but for the output folder
(``at_grpo``, the baseline of every question) run once; the others get a copy of its result (``copied_from``).
``--jobs N`` runs N subprocesses at once.

Protocol (:data:`PROTOCOL`): the steadier warm start of docs/training.md (width 128, 1,000 cosine SFT steps on 3,000
tasks' oracle demonstrations), then RL until the question's completion budget (``--completion-budget``, the same for
every method of a question unless the question defines a share of it, as C does) or ``--max-steps``; held-out
success on 200 tasks never trained on, before and after. The main job's recipe, which the protocol is, was chosen on
seeds 0-4 and the held-out tasks 1,000,000-1,000,199 of plan_path-v0 (docs/training.md); the grid reports seeds 5-9
(:data:`SEEDS`) on held-out tasks from 2,000,000 (``--heldout-offset``), on which nothing was chosen. The methods'
own settings are their papers' or the trainer's defaults, not tuned on any seed. Cells report the mean over seeds with
a 95% percentile bootstrap interval, and each method's difference from ``at_grpo`` paired by seed (the same seed,
hence the same warm start) with its interval. Methods the trainer cannot express yet, and envs without a warm start,
are listed with the reason instead of being approximated.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import bootstrap_ci, paired_differences  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# The runner imports teamgym too (the run folders' checks, metrics): the checkout it launches, not an installed copy
# that may be another revision or a tree being edited.
sys.path.insert(0, str(ROOT))
RESULT_FILE = "result.json"
SAFE_PATH = ("-P",) if sys.version_info >= (3, 11) else ()
BASELINE = "at_grpo"
#: The reported seeds: not 0-4, on which the main job's recipe (the protocol) was chosen.
SEEDS = (5, 6, 7, 8, 9)
#: Where the ``result.json`` files of the runs docs/RESULTS.md reports are committed (copied from the runs folder;
#: ``--report --runs-dir`` this folder rewrites the page from them).
COMMITTED_RUNS = "benchmarks/results/research"
#: The run folders' first level for the shared warm starts (``<runs>/warm_start/warm_start/<env>/seed_<n>``).
WARM_START = "warm_start"
#: Completions RL may generate in each run of a question: about 80 steps of the main job's AT-GRPO, which spends
#: 113-133 completions per step on plan_path-v0 after the warm start (docs/benchmarks.md).
BUDGET = 9_600
#: The most RL steps a run may take (the trainer's ``steps``, a cap the budget should reach first: a method with a
#: quarter of AT-GRPO's completions per step needs about four times its steps).
MAX_STEPS = 1_000
#: Train flags of every run, before the method's own (which may override them): the steadier warm start of
#: docs/training.md, 200 held-out tasks (from id 2,000,000: not the tasks the recipe was chosen on), held-out success
#: after the warm start and at the end only (an evaluation every 20 of up to 1,000 steps would cost more than the RL).
#: Flags that restate the trainer's defaults of the day the grid ran, added when the main job's defaults moved
#: (2026-12-07: failure replay, a cosine learning rate): a result recorded without them ran the same config.
RESTATED_DEFAULTS = ("--task-replay", "0", "--ppo-lr-schedule", "constant")
PROTOCOL = ("--n-embd", "128", "--n-head", "4", "--sft-tasks", "3000", "--sft-steps", "1000", "--sft-schedule",
            "cosine", "--eval-tasks", "200", "--heldout-offset", "2000000", "--eval-every", "0", "--no-progress-bar",
            *RESTATED_DEFAULTS)
#: ``--quick``: a tiny model and warm start, 4 held-out tasks, a few RL steps (CI checks the plumbing, not results).
QUICK_PROTOCOL = ("--n-layer", "1", "--n-embd", "16", "--n-head", "1", "--sft-tasks", "8", "--sft-steps", "3",
                  "--eval-tasks", "4", "--eval-every", "0", "--tasks-per-step", "2", "--tree-k", "2", "--no-plot",
                  "--no-progress-bar")
QUICK_BUDGET, QUICK_MAX_STEPS = 40, 3
#: Where an env's own settings are chosen (``--choose-lr``): the seeds and held-out tasks the main job's recipe was
#: chosen on (held-out ids from 1,000,000, the trainer's default), never the reported ones.
SELECTION_SEEDS = (0, 1, 2, 3, 4)
SELECTION_PROTOCOL = tuple("1000000" if previous == "--heldout-offset" else flag
                           for previous, flag in zip(("", *PROTOCOL), PROTOCOL))
#: The run folders' first level for ``--choose-lr`` (``<runs>/choose_lr/at_grpo_lr_<lr>/<env>/seed_<n>``).
CHOOSE_LR = "choose_lr"
LEARNING_RATES = ("1e-4", "3e-5", "1e-5")


@dataclass(frozen=True)
class Method:
    """One row of a question: train flags that exist today, or why it cannot be run.

    Attributes:
        name: the row's name (a folder name).
        flags: ``teamgym train`` flags of the method, after :data:`PROTOCOL`.
        note: what the method is, for the table.
        budget_share: the share of the question's completion budget this method gets (1: equal budgets).
        unsupported: why the trainer cannot run it yet ("" = it can).
    """

    name: str
    flags: tuple[str, ...] = ()
    note: str = ""
    budget_share: float = 1.0
    unsupported: str = ""


@dataclass(frozen=True)
class Env:
    """An env of the grid, or why it is not run.

    Attributes:
        env_id: the registered id.
        flags: ``teamgym train`` flags of every run on this env, after :data:`PROTOCOL` and before the method's
            (a setting chosen for this env on the selection seeds and tasks, :func:`choose_lr`).
        chosen: how ``flags`` were chosen, for the report.
        note: what a reader of its rows should know (the report prints it).
        unsupported: why the trainer cannot run it yet ("" = it can).
    """

    env_id: str
    flags: tuple[str, ...] = ()
    chosen: str = ""
    note: str = ""
    unsupported: str = ""


@dataclass(frozen=True)
class Question:
    """One table of the report: its methods (the first, ``at_grpo``, is what the others are paired against)."""

    key: str
    title: str
    methods: tuple[Method, ...]
    notes: tuple[str, ...] = ()

    def method(self, name: str) -> Method:
        return next(m for m in self.methods if m.name == name)


AT_GRPO = Method(BASELINE, ("--algo", "at_grpo"), "AT-GRPO: tree, K = 4 per (agent, turn) node, greedy advance, "
                                                  "alpha = 1 (the env's mixing)")
#: The envs with a compact preset (prompt and scripted warm start, teamgym.train.presets) the tiny model learns.
ENVS = (
    Env("plan_path-v0"),
    Env("sokoban-v0", note="its progress (boxes on goals) is 0 until a one-box map is solved, so a failing plan scored "
                           "only its invalid moves and AT-GRPO's per-node groups taught the tool to write short plans "
                           "that never solve (docs/training.md, \"sokoban-v1: v0 paid for short plans\"); its rows are "
                           "kept as that finding, and sokoban-v1 is the env of the comparisons."),
    Env("sokoban-v1", ("--ppo-lr", "1e-5"),
        chosen="the learning rate of the highest mean greedy success after AT-GRPO on seeds 0-4 and held-out tasks "
               "from 1,000,000 (`python benchmarks/research.py --choose-lr --envs sokoban-v1`: 56.0% at the "
               "protocol's 1e-4, a loss of 8.3 points [7.1, 10.2] from the warm starts' 64.3%; 63.8% at 3e-5; 65.1% "
               "at 1e-5, a gain of +0.8 [-2.4, +4.5]; docs/training.md). It is the lowest rate tried, and 3e-5 and "
               "1e-5 are within each other's intervals."),
    Env("sudoku-v0", ("--ppo-lr", "1e-5"),
        chosen="the learning rate of the highest mean greedy success after AT-GRPO on seeds 0-4 and held-out tasks "
               "from 1,000,000 (`python benchmarks/research.py --choose-lr --envs sudoku-v0`, warm starts 69.5%: "
               "68.7% at the protocol's 1e-4, a gain of -0.8 points [-3.1, +2.1]; 73.7% at 3e-5, +4.2 [+2.5, +6.5]; "
               "74.4% at 1e-5, +4.9 [+2.8, +6.6]; docs/training.md). It is the lowest rate tried, and 3e-5 and 1e-5 "
               "are within each other's intervals."),
)

QUESTIONS = (
    Question("gap1", "Gap 1: tree-sampling strategies at equal completions", (
        AT_GRPO,
        Method("top_m", ("--algo", "at_grpo", "--tree-strategy", "top_m"),
               "advance stochastically among the 2 best candidates (tree.top_m 2, softmax temperature 1)"),
        Method("adaptive_k", ("--algo", "at_grpo", "--tree-strategy", "adaptive"),
               "AdaptiveK: k0 = 2 candidates first, up to k_max = 8 where they disagree"),
        Method("budget_aware", ("--algo", "at_grpo", "--tree-strategy", "budget"),
               "k0 = 2 candidates at every node of a tree level, then the level's other 2 per node dealt to the nodes "
               "whose first two disagree (up to k_max = 8 each), the rest to the others: exactly K = 4 per node, as "
               "greedy (teamgym.algos.allocate_level_budget)"),
    ), ("Learning signal: *advantage energy per completion* is the squared distance of each completion's reward "
        "from its group's mean, averaged over completions and RL steps (teamgym.algos."
        "advantage_energy_per_completion; metrics.jsonl's `advantage_energy`). For the same rewards it never favours "
        "small groups (expectation s2 (K - 1) / K), unlike *informative groups per 1,000 completions*, shown beside "
        "it, which counts a disagreeing pair as much as a disagreeing group of eight.",)),
    Question("A", "A: team_gigpo against at_grpo, gigpo and dr_mas at equal completions", (
        AT_GRPO,
        Method("team_gigpo", ("--algo", "team_gigpo", "--group-size", "4"),
               "trajectory rollout, 8 tasks x group_size 4"),
        Method("gigpo", ("--algo", "gigpo", "--group-size", "4"), "trajectory rollout, 8 tasks x group_size 4"),
        Method("dr_mas", ("--algo", "dr_mas", "--group-size", "4"), "trajectory rollout, 8 tasks x group_size 4, "
               "groups = (task, agent)"),
    )),
    Question("B", "B: a PRM's process reward against turn-level reward only", (
        Method(BASELINE, AT_GRPO.flags, "turn-level reward only (the env's team and local terms)"),
        Method("prm_process_reward", ("--algo", "at_grpo", "--prm-weight", "0.5"),
               "AT-GRPO plus 0.5 x PRM(step) in each row's local reward: a tiny TransformersPRM fitted after every "
               "step on the tree's TreeRL values (unchosen candidates continued, counted in the budget; "
               "docs/training.md, \"Process reward from a learned PRM\")"),
        Method("masprm_bce",
               ("--algo", "at_grpo", "--prm-weight", "0.5", "--prm-target", "masprm", "--prm-loss", "bce"),
               "as prm_process_reward, with MASPRM's targets (q_sum / visits of +1 / -1 leaves) and loss (a BCE on "
               "target > 0; the score 2 p - 1)"),
        Method("treerl", ("--algo", "treerl"), "not a PRM: TreeRL's advantages from the same tree values "
               "(unchosen candidates continued), what the tree's values give without a learned model"),
    )),
    Question("gap3", "Gap 3: adaptive alpha against static alpha in {0, 0.5, 1, 2}", (
        Method(BASELINE, AT_GRPO.flags, "static alpha = 1 (the env's own mixing, AT-GRPO)"),
        Method("alpha_0", ("--algo", "at_grpo", "--alpha", "0"), "static alpha = 0 (local terms only)"),
        Method("alpha_0.5", ("--algo", "at_grpo", "--alpha", "0.5"), "static alpha = 0.5"),
        Method("alpha_2", ("--algo", "at_grpo", "--alpha", "2"), "static alpha = 2"),
        Method("bandit", ("--algo", "at_grpo", "--alpha", "bandit"), "EXP3 per agent over {0, 0.5, 1, 2}, credited "
               "with the team return of the rollout after its update"),
        Method("correlation", ("--algo", "at_grpo", "--alpha", "correlation"), "per agent, alpha in [0, 2] from the "
               "moving correlation of local and team terms among the candidates of one state (1 at rho = 0; logged "
               "as alpha_corr/tool and alpha_corr/planner); under at_grpo the tool's candidates hold no team "
               "variance, so its alpha stays 1"),
    )),
    Question("C", "C: spo_per_agent at 1/K of AT-GRPO's completions against AT-GRPO at the full budget", (
        Method(BASELINE, AT_GRPO.flags, "the full budget, K = 4 candidates per node"),
        Method("spo_per_agent_1_of_k", ("--algo", "spo_per_agent", "--group-size", "1"),
               "one completion per node (trajectory rollout, group_size 1) on the trackers' task pool (64 tasks), "
               "at a quarter of the budget (1/K, K = 4)", budget_share=0.25),
        Method("spo_per_agent", ("--algo", "spo_per_agent", "--group-size", "1"),
               "the same at the full budget (a control: what the saved completions would buy)"),
    )),
)
QUESTION_KEYS = tuple(q.key for q in QUESTIONS)


def question(key: str) -> Question:
    return next(q for q in QUESTIONS if q.key == key)


# ---------------------------------------------------------------------- runs


@dataclass(frozen=True)
class Run:
    """One (question, method, env, seed) of the grid and where it lives."""

    question: str
    method: str
    env_id: str
    seed: int
    folder: Path
    train_args: tuple[str, ...]  # every flag but --output-dir (and --resume)

    @property
    def label(self) -> str:
        return f"{self.question}/{self.method}/{self.env_id}/seed_{self.seed}"

    def command(self, *, resume: bool = False) -> list[str]:
        # -P (Python 3.11+): `-m` would put the working directory first on the path, and a checkout there (not
        # ROOT, which launch() puts on PYTHONPATH) would be the teamgym that trains.
        return [sys.executable, *SAFE_PATH, "-m", "teamgym.train", *self.train_args, "--output-dir", str(self.folder),
                *(["--resume"] if resume else [])]


def run_folder(runs_dir: Path, key: str, method: str, env_id: str, seed: int) -> Path:
    return Path(runs_dir) / key / method / env_id.replace("/", "_") / f"seed_{seed}"


def warm_start_run(env_id: str, seed: int, *, runs_dir: Path, protocol: Sequence[str] = PROTOCOL) -> Run:
    """The warm start (SFT and its evaluations, ``--steps 0``) that every method's run of ``(env_id, seed)`` starts
    from."""
    args = (*protocol, "--env-id", env_id, "--seed", str(seed), "--steps", "0", "--torch-threads", "1")
    return Run(WARM_START, WARM_START, env_id, seed, run_folder(runs_dir, WARM_START, WARM_START, env_id, seed), args)


def warm_starts_of(runs: Iterable[Run], *, runs_dir: Path, protocol: Sequence[str] = PROTOCOL) -> list[Run]:
    """The warm starts ``runs`` start from, one per (env, seed)."""
    pairs = dict.fromkeys((r.env_id, r.seed) for r in runs)
    return [warm_start_run(env_id, seed, runs_dir=runs_dir, protocol=protocol) for env_id, seed in pairs]


def rl_args(flags: Sequence[str], env_id: str, seed: int, *, runs_dir: Path, budget: int, max_steps: int,
            protocol: Sequence[str]) -> tuple[str, ...]:
    """The train arguments of one RL run: ``protocol``, ``flags``, then the env, seed, completion budget, step cap,
    one torch thread, and its (env, seed)'s shared warm start."""
    return (*protocol, *flags, "--env-id", env_id, "--seed", str(seed), "--completion-budget", str(budget),
            "--steps", str(max_steps), "--torch-threads", "1", "--warm-start-from",
            str(warm_start_run(env_id, seed, runs_dir=runs_dir, protocol=protocol).folder))


def plan_runs(questions: Iterable[str], envs: Iterable[str], seeds: Iterable[int], *, runs_dir: Path, budget: int,
              max_steps: int, protocol: Sequence[str] = PROTOCOL, methods: Iterable[str] | None = None) -> list[Run]:
    """The runs of the grid that the trainer can run (unsupported methods and envs are left out), each starting from
    its (env, seed)'s shared warm start (:func:`warm_start_run`)."""
    wanted = set(methods) if methods is not None else None
    env_ids = [e.env_id for e in ENVS if e.env_id in set(envs) and not e.unsupported]
    env_flags = {e.env_id: e.flags for e in ENVS}
    runs = []
    for key in questions:
        for method in question(key).methods:
            if method.unsupported or (wanted is not None and method.name not in wanted):
                continue
            for env_id in env_ids:
                for seed in seeds:
                    args = rl_args((*env_flags[env_id], *method.flags), env_id, seed, runs_dir=runs_dir,
                                   budget=max(1, round(budget * method.budget_share)), max_steps=max_steps,
                                   protocol=protocol)
                    runs.append(Run(key, method.name, env_id, seed, run_folder(runs_dir, key, method.name, env_id,
                                                                               seed), args))
    return runs


def lr_runs(env_id: str, learning_rates: Sequence[str], seeds: Sequence[int], *, runs_dir: Path, budget: int,
            max_steps: int, protocol: Sequence[str] = SELECTION_PROTOCOL) -> list[Run]:
    """``--choose-lr``: AT-GRPO at each learning rate, from the selection seeds' warm starts, at the grid's budget."""
    runs = []
    for lr in learning_rates:
        method = f"{BASELINE}_lr_{lr}"
        for seed in seeds:
            args = rl_args(("--algo", BASELINE, "--ppo-lr", lr), env_id, seed, runs_dir=runs_dir, budget=budget,
                           max_steps=max_steps, protocol=protocol)
            runs.append(Run(CHOOSE_LR, method, env_id, seed, run_folder(runs_dir, CHOOSE_LR, method, env_id, seed),
                            args))
    return runs


def lr_table(runs: Sequence[Run]) -> tuple[list[str], str | None]:
    """The ``--choose-lr`` table (markdown lines) from the runs' results, and the learning rate with the highest mean
    greedy success after RL (None until every run has a result)."""
    rows: dict[str, dict[int, dict[str, Any]]] = {}
    for run in runs:
        by_seed = rows.setdefault(run.method.rsplit("_", 1)[1], {})
        result = read_result(run.folder)
        if result is not None:
            by_seed[run.seed] = result
    seeds = sorted({run.seed for run in runs})
    lines = ["| learning rate | greedy after RL per seed, % | greedy after RL, % [95% CI] | RL gain, points [95% CI] "
             "| sampled after RL, % |", "|---|---|---:|---:|---:|"]
    best, best_mean, complete = None, -1.0, True
    for lr, by_seed in rows.items():
        complete = complete and len(by_seed) == len(seeds)
        after = [by_seed[s]["greedy_after_rl"] for s in seeds if s in by_seed]
        gains = [by_seed[s]["greedy_after_rl"] - by_seed[s]["greedy_after_warm_start"] for s in seeds if s in by_seed]
        sampled = [by_seed[s]["sampled_after_rl"] for s in seeds if s in by_seed]
        per_seed = " / ".join(f"{s}: {100 * by_seed[s]['greedy_after_rl']:.1f}" for s in seeds if s in by_seed) or "—"
        lines.append(f"| {lr} | {per_seed} | {_interval(mean_ci(after), len(after))} | "
                     f"{_interval(mean_ci(gains), len(gains), signed=True)} | "
                     f"{_pct(sum(sampled) / len(sampled) if sampled else None)} |")
        if after and sum(after) / len(after) > best_mean:
            best, best_mean = lr, sum(after) / len(after)
    return lines, best if complete else None


def check_runs(runs: Sequence[Run], warm_starts: Sequence[Run] = ()) -> None:
    """Every run's flags make a valid ``TrainConfig``, and one that can start from its warm start (a typo, or a method
    flag that would change the warm start, fails here, before hours of compute; imports torch)."""
    from teamgym.errors import InvalidArgumentError
    from teamgym.train.cli import add_arguments, config_from_args
    from teamgym.train.config import warm_start_differences

    parser = argparse.ArgumentParser(prog="teamgym train")
    add_arguments(parser)

    def config(args: Sequence[str]) -> Any:
        return config_from_args(parser.parse_args([*args, "--output-dir", "unused"]))

    warm = {str(w.folder): config(w.train_args).to_dict() for w in warm_starts}
    for args in dict.fromkeys(r.train_args for r in runs):
        made = config(args)
        source = warm.get(made.warm_start_from)
        differences = warm_start_differences(source, made) if source is not None else []
        if differences:
            raise InvalidArgumentError(f"the run `{shlex.join(args)}` cannot start from its warm start "
                                       f"{made.warm_start_from}: " + "; ".join(differences))


def read_result(folder: Path) -> dict[str, Any] | None:
    """The run's ``result.json``, or ``None`` when there is none (or a torn one)."""
    try:
        result = json.loads((Path(folder) / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) else None


def run_status(run: Run) -> str:
    """``done`` (its result is there), ``conflict`` (a result from other train arguments), ``resume`` (checkpoints, no
    result) or ``fresh``."""
    from teamgym.train.run_dir import list_checkpoints

    result = read_result(run.folder)
    if result is not None:
        recorded = tuple(result.get("train_args", ()))
        return "done" if recorded in (run.train_args, without_restated_defaults(run.train_args)) else "conflict"
    return "resume" if list_checkpoints(run.folder) else "fresh"


def without_restated_defaults(args: Sequence[str]) -> tuple[str, ...]:
    """``args`` less the first run of :data:`RESTATED_DEFAULTS` in it: the arguments a result recorded before those
    flags existed holds for the same config."""
    n = len(RESTATED_DEFAULTS)
    for at in range(len(args) - n + 1):
        if tuple(args[at:at + n]) == RESTATED_DEFAULTS:
            return (*args[:at], *args[at + n:])
    return tuple(args)


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` as JSON, atomically: a killed runner leaves the old file or none, never a torn one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def learning_signal(folder: Path) -> dict[str, float | None]:
    """The RL steps' mean learning-signal measures from the run's ``metrics.jsonl``: ``advantage_energy`` (squared
    group-centred reward per completion, which does not favour small groups) and ``informative_groups_per_1000``
    (which does); ``None`` where the run logged none."""
    from teamgym.train.metrics import read_metrics

    rows = read_metrics(folder)
    out: dict[str, float | None] = {}
    for key in ("advantage_energy", "informative_groups_per_1000"):
        values = [float(r[key]) for r in rows if isinstance(r.get(key), (int, float))]
        out[key] = float(np.mean(values)) if values else None
    return out


def result_of(run: Run, summary: dict[str, Any], *, command: list[str], seconds: float, invocation: str
              ) -> dict[str, Any]:
    """A finished run's ``result.json`` from the trainer's ``summary.json``."""
    def warm(kind: str) -> float | None:  # no SFT: the warm start is the untrained model
        after = summary.get(f"heldout_{kind}success_after_sft")
        return after if after is not None else summary.get(f"heldout_{kind}success_before")

    return {
        "question": run.question, "method": run.method, "env_id": run.env_id, "seed": run.seed,
        "greedy_after_warm_start": warm(""), "sampled_after_warm_start": warm("sampled_"),
        "greedy_after_rl": summary["heldout_success_after"],
        "sampled_after_rl": summary["heldout_sampled_success_after"],
        "heldout_tasks": summary["heldout_tasks"], "steps": summary["steps"],
        "completion_budget": summary.get("completion_budget"), "completions": summary.get("completions_used"),
        "completion_tokens": summary.get("completion_tokens_used"),
        "stopped_by_budget": summary.get("stopped_by_budget"),
        "wall_seconds": summary["wall_seconds"], "end_to_end_seconds": seconds,
        **learning_signal(run.folder),
        "train_args": list(run.train_args), "command": command, "invocation": invocation,
        "revision": revision(), "summary": summary,
    }


def revision() -> str | None:
    """The commit of the checkout that trains (ROOT), with ``+`` when its tracked files differ from it; ``None``
    outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+" if dirty else "")


Launcher = Callable[[list[str], Path], int]


def launch(command: list[str], log: Path) -> int:
    """Run one training subprocess (this checkout's teamgym first on the path), its output appended to ``log``."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"$ {shlex.join(command)}\n")
        out.flush()
        return subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT).returncode


def execute(runs: Sequence[Run], *, jobs: int = 1, invocation: str = "", launcher: Launcher = launch,
            say: Callable[[str], None] = print) -> list[str]:
    """Run what is not done yet, ``jobs`` subprocesses at a time; returns the labels of the runs that failed.

    Runs with the same train arguments form a group: one of them runs (the one done already, else one with
    checkpoints, else the first), the others get a copy of its result.
    """
    groups: dict[tuple[str, ...], list[Run]] = {}
    for run in runs:
        groups.setdefault(run.train_args, []).append(run)
    failed: list[str] = []

    def work(group: list[Run]) -> None:
        status = {run: run_status(run) for run in group}
        if all(s == "done" for s in status.values()):
            return
        if "conflict" in status.values():
            failed.extend(r.label for r in group if status[r] != "done")
            say(f"FAILED {group[0].label}: a result.json of other train arguments is in the way (another --runs-dir)")
            return
        order = {"done": 0, "resume": 1, "fresh": 2}
        leader = min(group, key=lambda r: order[status[r]])
        result = read_result(leader.folder) if status[leader] == "done" else None
        if result is None:
            resume = status[leader] == "resume"
            command = leader.command(resume=resume)
            say(f"start {leader.label} ({'resumed from its checkpoint' if resume else 'fresh'})")
            tic = time.perf_counter()
            code = launcher(command, leader.folder / "train.log")
            seconds = time.perf_counter() - tic
            try:
                summary = json.loads((leader.folder / "summary.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                summary = None
            if code != 0 or summary is None:
                failed.extend(r.label for r in group if status[r] != "done")
                say(f"FAILED {leader.label} (exit status {code}): see {leader.folder / 'train.log'}")
                return
            result = result_of(leader, summary, command=leader.command(), seconds=seconds, invocation=invocation)
            result["resumed"] = resume
            write_json(leader.folder / RESULT_FILE, result)
            say(f"done {leader.label} in {seconds:.0f} s: greedy {_pct(result['greedy_after_rl'])} after RL "
                f"({_pct(result['greedy_after_warm_start'])} after the warm start), {result['completions']} "
                f"completions in {result['steps']} steps")
        for run in group:
            if run is not leader and status[run] != "done":
                run.folder.mkdir(parents=True, exist_ok=True)
                copy = {**result, "question": run.question, "method": run.method,
                        "copied_from": str(leader.folder)}
                write_json(run.folder / RESULT_FILE, copy)
                say(f"done {run.label}: the same train arguments as {leader.label}, result copied")

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(work, groups.values()))
    return failed


def run_grid(runs: Sequence[Run], warm_starts: Sequence[Run], *, jobs: int = 1, invocation: str = "",
             launcher: Launcher = launch, say: Callable[[str], None] = print) -> list[str]:
    """Run the warm starts, then the runs whose warm start exists (:func:`execute` for both); returns the labels of
    the runs and warm starts that failed, a run whose warm start failed among them (it is not launched)."""
    failed = execute(warm_starts, jobs=jobs, invocation=invocation, launcher=launcher, say=say)
    cold = {(w.env_id, w.seed) for w in warm_starts if w.label in failed}
    for run in runs:
        if (run.env_id, run.seed) in cold:
            failed.append(run.label)
            say(f"FAILED {run.label}: its warm start failed")
    return failed + execute([r for r in runs if (r.env_id, r.seed) not in cold], jobs=jobs, invocation=invocation,
                            launcher=launcher, say=say)


def export_results(runs_dir: Path, target: Path) -> int:
    """Copy every ``result.json`` under ``runs_dir`` (the grid's layout) to ``target``; returns how many."""
    count = 0
    for path, _ in result_files(runs_dir):
        destination = Path(target) / path.relative_to(runs_dir)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(path.read_bytes())
        count += 1
    return count


# ---------------------------------------------------------------------- report


def load_results(runs_dir: Path) -> list[dict[str, Any]]:
    """Every ``result.json`` under ``runs_dir`` (``<question>/<method>/<env>/seed_<n>/``)."""
    return [result for _, result in result_files(runs_dir)]


def result_files(runs_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """``(path, result)`` of every readable ``result.json`` under ``runs_dir``
    (``<question>/<method>/<env>/seed_<n>/``), in path order."""
    out = []
    for path in sorted(Path(runs_dir).glob(f"*/*/*/seed_*/{RESULT_FILE}")):
        result = read_result(path.parent)
        if result is not None:
            out.append((path, result))
    return out


@dataclass
class Cell:
    """What the runs of one (question, method, env) give."""

    runs: list[dict[str, Any]] = field(default_factory=list)

    def values(self, key: str) -> dict[int, float]:
        """``{seed: value}`` of ``key`` over the runs that have it."""
        return {int(r["seed"]): float(r[key]) for r in self.runs if r.get(key) is not None}

    def mean(self, key: str) -> float | None:
        values = list(self.values(key).values())
        return float(np.mean(values)) if values else None


def cells(results: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], Cell]:
    out: dict[tuple[str, str, str], Cell] = {}
    for result in results:
        out.setdefault((result["question"], result["method"], result["env_id"]), Cell()).runs.append(result)
    return out


def mean_ci(values: Sequence[float]) -> tuple[float, float, float] | None:
    """``(mean, low, high)``: the mean and its 95% percentile bootstrap interval (None without values)."""
    if not len(values):
        return None
    low, high = bootstrap_ci(list(values))
    return float(np.mean(values)), low, high


def paired(cell: Cell, baseline: Cell | None, key: str = "greedy_after_rl") -> tuple[dict[int, float], tuple | None]:
    """The per-seed differences ``cell - baseline`` of ``key`` and their mean with its bootstrap interval."""
    if baseline is None:
        return {}, None
    diffs = paired_differences(cell.values(key), baseline.values(key))
    return diffs, mean_ci(list(diffs.values()))


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _interval(stats: tuple[float, float, float] | None, n: int, *, signed: bool = False) -> str:
    if stats is None:
        return "—"
    mean, low, high = (100 * v for v in stats)
    if n < 2:  # one run: no interval
        return f"{mean:+.1f}" if signed else f"{mean:.1f}"
    return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]" if signed else f"{mean:.1f} [{low:.1f}, {high:.1f}]"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _signal(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def grid_command(keys: Sequence[str], seeds: Sequence[int], budget: int, max_steps: int, runs_dir: Path) -> str:
    """The runner's command for ``keys`` (what (re)produces their tables)."""
    return shlex.join(["python", "benchmarks/research.py", "--questions", *keys, "--seeds", *map(str, seeds),
                       "--budget", str(budget), "--max-steps", str(max_steps), "--runs-dir", str(runs_dir)])


def question_section(q: Question, all_cells: dict[tuple[str, str, str], Cell], *, envs: Sequence[str],
                     seeds: Sequence[int], budget: int, command: str, image: str | None) -> list[str]:
    """One question's markdown: its table, what its intervals say, its plot."""
    asked = len(seeds)
    lines = [f"## {q.title}", "", f"Command: `{command}`", ""]
    recorded = sorted({r.get("invocation") for c in (all_cells.get((q.key, m.name, e)) for m in q.methods for e in envs)
                       if c for r in c.runs if r.get("invocation")})
    if recorded and recorded != [command]:
        lines += ["Runs recorded from: " + "; ".join(f"`{c}`" for c in recorded), ""]
    lines += [
        "| method | env | seeds | greedy after RL, % [95% CI] | minus at_grpo, points [95% CI] (paired seeds) "
        "| after the warm start, % | sampled after RL, % | completions | completion tokens | wall s | budget "
        "| advantage energy per completion | informative groups per 1,000 "
        "| RL gain over the warm start, greedy, points [95% CI] | what it is |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    readings: list[str] = []
    comparisons = excluded = 0
    env_rows = [e for e in ENVS if e.env_id in envs]
    for method in q.methods:
        if method.unsupported:
            lines.append(f"| `{method.name}` | every env | not run | — | — | — | — | — | — | — | — | — | — | — | "
                         f"unsupported: {method.unsupported} |")
            continue
        for env in env_rows:
            if env.unsupported:
                continue
            cell = all_cells.get((q.key, method.name, env.env_id), Cell())
            n = len(cell.values("greedy_after_rl"))
            seeds_text = f"{n} of {asked} seeds" if n < asked else f"{n} seed{'s' if n != 1 else ''}"
            greedy = mean_ci(list(cell.values("greedy_after_rl").values()))
            if method.name == BASELINE:
                diff_text = "(baseline)"
            else:
                diffs, stats = paired(cell, all_cells.get((q.key, BASELINE, env.env_id)))
                diff_text = _interval(stats, len(diffs), signed=True)
                if diffs:
                    diff_text += f" ({len(diffs)} pairs)"
                if stats is not None and len(diffs) >= 2:
                    texts = []
                    for key, label in (("greedy_after_rl", "greedy"), ("sampled_after_rl", "sampled")):
                        pairs, interval = (diffs, stats) if key == "greedy_after_rl" else paired(
                            cell, all_cells.get((q.key, BASELINE, env.env_id)), key)
                        if interval is None or len(pairs) < 2:
                            continue
                        mean, low, high = interval
                        verdict = ("above at_grpo" if low > 0 else "below at_grpo" if high < 0 else
                                   "not distinguishable from at_grpo")
                        comparisons += 1
                        excluded += low > 0 or high < 0
                        texts.append(f"{label} {100 * mean:+.1f} points [{100 * low:+.1f}, {100 * high:+.1f}]: "
                                     f"{verdict}")
                    readings.append(f"`{method.name}` on {env.env_id} ({len(diffs)} paired seeds): "
                                    + "; ".join(texts))
            asked_budget = max(1, round(budget * method.budget_share))
            other = sorted({r["completion_budget"] for r in cell.runs} - {asked_budget, None})
            budget_text = f"{asked_budget:,}" + (f" (runs: {', '.join(f'{b:,}' for b in other)})" if other else "")
            flags = " ".join(method.flags)
            gains = list(paired_differences(cell.values("greedy_after_rl"),
                                            cell.values("greedy_after_warm_start")).values())
            lines.append(
                f"| `{method.name}` | {env.env_id} | {seeds_text} | {_interval(greedy, n)} | {diff_text} | "
                f"{_pct(cell.mean('greedy_after_warm_start'))} | {_pct(cell.mean('sampled_after_rl'))} | "
                f"{_number(cell.mean('completions'))} | {_number(cell.mean('completion_tokens'))} | "
                f"{_number(cell.mean('wall_seconds'))} | {budget_text} | {_signal(cell.mean('advantage_energy'))} | "
                f"{_number(cell.mean('informative_groups_per_1000'))} | "
                f"{_interval(mean_ci(gains), len(gains), signed=True)} | {method.note} (`{flags}`) |")
    for env in env_rows:
        if env.unsupported:
            lines.append(f"| every method | {env.env_id} | not run | — | — | — | — | — | — | — | — | — | — | — "
                         f"| {env.unsupported} |")
    lines.append("")
    if readings:
        lines += ["Paired differences from at_grpo (held-out success after RL, the same seeds; an interval that "
                  "excludes 0 is the only ranking the table supports):", ""]
        lines += [f"- {text}" for text in readings] + [""]
        lines += [f"{excluded} of these {comparisons} intervals exclude 0. With 95% intervals, about "
                  f"{0.05 * comparisons:.1f} of {comparisons} would exclude 0 by chance alone if no method differed "
                  "from at_grpo, so a single exclusion is a lead to rerun on more seeds, not a finding.", ""]
    else:
        lines += ["No paired difference yet (it needs at least two seeds of a method and of at_grpo).", ""]
    lines += [f"{note}" for note in q.notes] + ([""] if q.notes else [])
    if image:
        lines += [f"![{q.title}]({image})", ""]
    return lines


def host_of(result: dict[str, Any]) -> str:
    """The machine a run ran on, as its ``summary.json`` records it: the CPU and the kernels torch ran."""
    host = (result.get("summary") or {}).get("host") or {}
    kernels = host.get("cpu_kernels")
    return f"{host.get('cpu', 'CPU not recorded')}, " + (f"{kernels} kernels" if kernels else "kernels not recorded")


def hosts_section(results: Sequence[dict[str, Any]]) -> list[str]:
    """Where the runs ran, when on more than one machine: wall seconds compare only within one."""
    by_host: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_host.setdefault(host_of(result), []).append(result)
    if len(by_host) < 2:
        return []
    parts = []
    for host, rows in sorted(by_host.items()):
        envs = sorted({r["env_id"] for r in rows})
        parts.append(f"{host}: {len(rows)} run{'s' if len(rows) != 1 else ''} ({', '.join(envs)})")
    return ["Hosts: " + "; ".join(parts) + ". Held-out success and completions do not depend on the host where its "
            "CPU kernels are the same (the trainer pins them to AVX2, docs/training.md, \"Same numbers on every "
            "host\"; the runs that do not record their kernels ran on an older host whose torch chose AVX2 ones: the "
            "five sokoban-v1 warm starts, rerun pinned on the newer host, gave their recorded numbers to the digit), "
            "but **wall seconds compare only between runs of one host**: a cell whose runs ran on another machine "
            "than its `at_grpo` row's is faster or slower for that reason alone.", ""]


def warm_start_section(all_cells: dict[tuple[str, str, str], Cell], *, envs: Sequence[str],
                       seeds: Sequence[int]) -> list[str]:
    """The warm starts' table: per env, held-out success after SFT per seed, its mean and interval, and its cost."""
    lines = ["## Warm starts", "",
             "One per (env, seed), shared by every method: held-out success after the SFT warm start, before any RL.",
             "", "| env | seeds | greedy per seed, % | greedy, % [95% CI] | sampled, % [95% CI] | wall s |",
             "|---|---|---|---:|---:|---:|"]
    for env_id in envs:
        cell = all_cells.get((WARM_START, WARM_START, env_id), Cell())
        greedy, sampled = cell.values("greedy_after_warm_start"), cell.values("sampled_after_warm_start")
        n = len(greedy)
        per_seed = " / ".join(f"{seed}: {100 * greedy[seed]:.1f}" for seed in sorted(greedy)) or "—"
        lines.append(f"| {env_id} | {n} of {len(seeds)} | {per_seed} | "
                     f"{_interval(mean_ci(list(greedy.values())), n)} | "
                     f"{_interval(mean_ci(list(sampled.values())), len(sampled))} | "
                     f"{_number(cell.mean('wall_seconds'))} |")
    return [*lines, ""]


def plot_question(q: Question, all_cells: dict[tuple[str, str, str], Cell], envs: Sequence[str], path: Path) -> bool:
    """One PNG per question: per env, each method's held-out greedy success after RL (mean and 95% CI, every seed as a
    dot, the warm start as a dash). False (no file) when the question has no run yet."""
    shown = [e for e in envs if any(all_cells.get((q.key, m.name, e)) for m in q.methods)]
    if not shown:
        return False
    try:
        import matplotlib
    except ImportError:  # the tables stand without the picture
        print("no plot: matplotlib is not installed (pip install 'teamgym[plot]')", file=sys.stderr)
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [m.name for m in q.methods if not m.unsupported]
    fig, axes = plt.subplots(1, len(shown), figsize=(1.2 + 1.1 * len(methods) * len(shown), 3.6), squeeze=False)
    for ax, env_id in zip(axes[0], shown):
        for x, name in enumerate(methods):
            cell = all_cells.get((q.key, name, env_id), Cell())
            values = list(cell.values("greedy_after_rl").values())
            if not values:
                continue
            mean, low, high = mean_ci(values)
            ax.bar(x, 100 * mean, color="tab:blue" if name == BASELINE else "tab:gray", alpha=0.7)
            ax.errorbar(x, 100 * mean, yerr=[[100 * (mean - low)], [100 * (high - mean)]], color="black", capsize=4)
            ax.scatter([x] * len(values), [100 * v for v in values], color="black", s=10, zorder=3)
            warm = cell.mean("greedy_after_warm_start")
            if warm is not None:
                ax.hlines(100 * warm, x - 0.4, x + 0.4, colors="tab:red", linestyles="--")
        ax.set_xticks(range(len(methods)), methods, rotation=30, ha="right")
        ax.set_title(env_id)
        ax.set_ylim(0, 100)
        ax.set_ylabel("held-out greedy success after RL (%)")
    fig.suptitle(f"{q.title}\n(bars: mean, 95% bootstrap CI; dots: seeds; red dashes: after the warm start)",
                 fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write_report(runs_dir: Path, results_path: Path, *, keys: Sequence[str] = QUESTION_KEYS,
                 envs: Sequence[str] = tuple(e.env_id for e in ENVS), seeds: Sequence[int] = SEEDS,
                 budget: int = BUDGET, max_steps: int = MAX_STEPS, protocol: Sequence[str] = PROTOCOL,
                 command: str = "", table_command: str = "") -> str:
    """Write the report of the runs under ``runs_dir`` to ``results_path`` (and its plots beside it, in
    ``images/``); returns its text.

    Args:
        command: the report's own command (default: ``--report`` on ``runs_dir``).
        table_command: the command shown with every table (default: the grid's, one question each).
    """
    results = load_results(runs_dir)
    all_cells = cells(results)
    results_path = Path(results_path)
    report = command or shlex.join(["python", "benchmarks/research.py", "--report", "--runs-dir", str(runs_dir)])
    lines = [
        "# Research results: the open gaps of AT-GRPO and the research directions, with seeds and CIs", "",
        "Written by `benchmarks/research.py` from the runs' `result.json` files (issue 21; the questions are gap 1, "
        "A, B, gap 3 and C of docs/algorithms.md). Do not edit by hand: rerun the command below.", "",
        f"Report command: `{report}`", "",
    ]
    if not results:
        lines += [f"**No cell has been run yet**: every table below is empty and no number here is a result. Run "
                  f"`{grid_command(keys, seeds, budget, max_steps, runs_dir)}` (add `--jobs N` for N runs at a "
                  "time; it writes this file at the end).", ""]
    else:
        lines += [f"{len(results)} runs found under `{runs_dir}` (their `result.json` files; a table's command skips "
                  "the runs whose result is there, so pass another `--runs-dir` to run them again from scratch).", ""]
        lines += hosts_section(results)
        idle = [env_id for env_id in envs if not any(r["env_id"] == env_id for r in results)]
        if idle:
            lines += [f"**No run yet on {', '.join(idle)}**: their rows below are empty.", ""]
    lines += [
        f"Protocol: every run is `python -m teamgym.train` with the flags `{' '.join(protocol)}`"
        + (" (the steadier warm start of docs/training.md, 200 held-out tasks never trained on)"
           if tuple(protocol) == PROTOCOL else " (not the protocol of the research runs: a smoke test)")
        + ", then the method's flags, "
        f"`--completion-budget` (the question's budget: {budget:,} completions unless a method takes a share of it) "
        f"and `--steps {max_steps}` as a cap. Held-out success is one sample per node, greedy (and sampled at the "
        "training temperature). A cell is the mean over its seeds with a 95% percentile bootstrap interval "
        "(10,000 resamples); the difference from `at_grpo` is paired by seed (the same seed starts from the same "
        "warm start) and bootstrapped the same way. A cell with fewer runs than asked shows what exists and says "
        "`n of N seeds`. Each (env, seed) has one warm start (`--steps 0`), which every method's run of it starts "
        "from (`--warm-start-from`, bit for bit the run it would have been with its own warm start); its held-out "
        "success and wall time are in the warm-start table. Completions, tokens (completion tokens RL generated) and "
        "wall seconds (the trainer's: RL and the final evaluation, not the shared warm start) are means over the "
        "cell's seeds; each run's exact command is in its `result.json`. The protocol's recipe was chosen on seeds "
        "0-4 and held-out tasks 1,000,000-1,000,199 of plan_path-v0; the grid reports other seeds and tasks. The other "
        "envs run it as it is, but for a setting a line below names, chosen for that env on its own seeds 0-4 and "
        "held-out tasks from 1,000,000. The learning-signal columns compare like with like "
        "only within one rollout type: a trajectory rollout's groups "
        "are episodes of one task compared by their return (rewards summed over turns), a tree's are the candidates "
        "of one node compared by their step reward, so a trajectory method's advantage energy is on another scale "
        "than a tree method's.", "",
        "The envs' versions here pay the tool's `plan` term every turn (plan_path-v2, sokoban-v2 and sudoku-v1 pay "
        "it only beyond the best plan the tool printed earlier in the episode: docs/envs): under the methods that "
        "score the sum of the agents' rewards (`grpo`, `rloo`, `dr_mas`, `gigpo`), a planner that stalls while the "
        "tool prints a winning plan again earns the team more than one that solves at once. Whether these runs "
        "learned to stall was not measured.", "",
    ]
    for env in ENVS:
        if env.env_id in envs and env.flags:
            lines += [f"Runs on {env.env_id} add `{' '.join(env.flags)}` after the protocol's flags: {env.chosen}", ""]
        if env.env_id in envs and env.note:
            lines += [f"{env.env_id}: {env.note}", ""]
    lines += warm_start_section(all_cells, envs=envs, seeds=seeds)
    for key in keys:
        q = question(key)
        image_path = results_path.parent / "images" / f"research_{key}.png"
        has_image = plot_question(q, all_cells, envs, image_path)
        lines += question_section(q, all_cells, envs=envs, seeds=seeds, budget=budget,
                                  command=table_command or grid_command([key], seeds, budget, max_steps, runs_dir),
                                  image=f"images/research_{key}.png" if has_image else None)
    text = "\n".join(lines).rstrip() + "\n"
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(text, encoding="utf-8")
    return text


# ---------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--questions", nargs="+", choices=QUESTION_KEYS, default=list(QUESTION_KEYS))
    parser.add_argument("--methods", nargs="+", default=None, help="only these methods of the questions")
    parser.add_argument("--envs", nargs="+", default=[e.env_id for e in ENVS])
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--budget", type=int, default=BUDGET, help="completions RL may generate per run")
    parser.add_argument("--max-steps", type=int, default=MAX_STEPS, help="RL steps at most (the trainer's --steps)")
    parser.add_argument("--jobs", type=int, default=1, help="training subprocesses at a time")
    parser.add_argument("--runs-dir", type=Path, default=None, help="default: runs/research (--quick: a temp folder)")
    parser.add_argument("--results", type=Path, default=None,
                        help="the report to write (default: docs/RESULTS.md; --quick: RESULTS.md in the runs dir)")
    parser.add_argument("--report", action="store_true", help="only write the report from the runs there are")
    parser.add_argument("--dry-run", action="store_true", help="print each run's status and command, run nothing")
    parser.add_argument("--export", type=Path, default=None, metavar="DIR",
                        help=f"copy the runs' result.json files (only those) to DIR, keeping the layout, and stop; "
                             f"the page's own runs are committed in {COMMITTED_RUNS}")
    parser.add_argument("--choose-lr", action="store_true",
                        help=f"choose each --envs env's RL learning rate: AT-GRPO at each of --lrs on seeds "
                             f"{', '.join(map(str, SELECTION_SEEDS))} and held-out tasks from 1,000,000 (not the "
                             "reported ones), at the grid's budget; prints the table and the best mean greedy success")
    parser.add_argument("--lrs", nargs="+", default=list(LEARNING_RATES), help="--choose-lr's learning rates")
    parser.add_argument("--quick", action="store_true",
                        help=f"one cell (A, at_grpo, plan_path-v0, seed 0) with a tiny model and warm start, a "
                             f"budget of {QUICK_BUDGET} completions and {QUICK_MAX_STEPS} steps at most; for CI")
    args = parser.parse_args(argv)
    known = {m.name for q in QUESTIONS for m in q.methods}
    unknown = sorted(set(args.methods or ()) - known) + sorted(set(args.envs) - {e.env_id for e in ENVS})
    if unknown:
        parser.error(f"unknown methods or envs {unknown}: methods are {sorted(known)}, envs "
                     f"{[e.env_id for e in ENVS]}")
    protocol = PROTOCOL
    if args.quick:
        args.questions, args.methods, args.envs, args.seeds = ["A"], [BASELINE], ["plan_path-v0"], [0]
        args.budget, args.max_steps, protocol = QUICK_BUDGET, QUICK_MAX_STEPS, QUICK_PROTOCOL
        args.runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="teamgym-research-quick-"))
    runs_dir = args.runs_dir or Path("runs/research")
    results_path = args.results or (runs_dir / "RESULTS.md" if args.quick else ROOT / "docs" / "RESULTS.md")
    invocation = shlex.join(["python", "benchmarks/research.py", *(sys.argv[1:] if argv is None else argv)])

    def report() -> None:
        write_report(runs_dir, results_path, keys=args.questions, envs=args.envs, seeds=args.seeds,
                     budget=args.budget, max_steps=args.max_steps, protocol=protocol,
                     table_command=invocation if args.quick else "")
        print(f"report: {results_path}")

    if args.export is not None:
        copied = export_results(runs_dir, args.export)
        print(f"{copied} result files copied from {runs_dir} to {args.export}")
        return 0
    if args.report:
        report()
        return 0
    if args.choose_lr:
        return choose_lr(args.envs, args.lrs, runs_dir=runs_dir, budget=args.budget, max_steps=args.max_steps,
                         jobs=args.jobs, invocation=invocation, dry_run=args.dry_run)
    runs = plan_runs(args.questions, args.envs, args.seeds, runs_dir=runs_dir, budget=args.budget,
                     max_steps=args.max_steps, protocol=protocol, methods=args.methods)
    warm_starts = warm_starts_of(runs, runs_dir=runs_dir, protocol=protocol)
    status = {run: run_status(run) for run in [*warm_starts, *runs]}
    conflicts = [run for run in status if status[run] == "conflict"]
    if args.dry_run:
        first: dict[tuple[str, ...], Run] = {}
        for run in [*warm_starts, *runs]:
            leader = first.setdefault(run.train_args, run)
            how = shlex.join(run.command(resume=status[run] == "resume")) if leader is run else f"as {leader.label}"
            print(f"{status[run]:8} {run.label}: {how}")
        print(f"{len(runs)} runs, {len(first)} distinct train commands", file=sys.stderr)
        return 0
    if conflicts:
        print(f"{len(conflicts)} run folders hold results of other train arguments (e.g. {conflicts[0].folder}): "
              "choose another --runs-dir, or remove them to run them again", file=sys.stderr)
        return 2
    check_runs(runs, warm_starts)
    counts = {s: sum(status[r] == s for r in runs) for s in ("done", "resume", "fresh")}
    warm_todo = sum(status[w] != "done" for w in warm_starts)
    print(f"{len(runs)} runs under {runs_dir}: {counts['done']} done, {counts['resume']} to resume, "
          f"{counts['fresh']} to start (runs with the same train arguments run once), after {warm_todo} of their "
          f"{len(warm_starts)} warm starts; {args.jobs} at a time", flush=True)
    failed = run_grid(runs, warm_starts, jobs=args.jobs, invocation=invocation,
                      say=lambda text: print(text, flush=True))
    report()
    if failed:
        print(f"{len(failed)} runs failed: {', '.join(failed)} (rerun the command to retry them)", file=sys.stderr)
        return 1
    return 0


def choose_lr(envs: Sequence[str], learning_rates: Sequence[str], *, runs_dir: Path, budget: int, max_steps: int,
              jobs: int, invocation: str, dry_run: bool = False, launcher: Launcher = launch,
              say: Callable[[str], None] = print) -> int:
    """``--choose-lr``: run :func:`lr_runs` for each env (resumable, as the grid), print each table and choice
    (``dry_run``: each run's status and command only)."""
    failed: list[str] = []
    tables = []
    for env_id in envs:
        runs = lr_runs(env_id, learning_rates, SELECTION_SEEDS, runs_dir=runs_dir, budget=budget, max_steps=max_steps)
        warm_starts = warm_starts_of(runs, runs_dir=runs_dir, protocol=SELECTION_PROTOCOL)
        if dry_run:
            for run in [*warm_starts, *runs]:
                say(f"{run_status(run):8} {run.label}: {shlex.join(run.command())}")
            continue
        check_runs(runs, warm_starts)
        failed += run_grid(runs, warm_starts, jobs=jobs, invocation=invocation, launcher=launcher, say=say)
        lines, best = lr_table(runs)
        warm = [read_result(w.folder) for w in warm_starts]
        warm_text = " / ".join(f"{w['seed']}: {100 * w['greedy_after_warm_start']:.1f}" for w in warm if w)
        tables += [f"{env_id}, AT-GRPO at {budget:,} completions, seeds {', '.join(map(str, SELECTION_SEEDS))}, "
                   f"held-out tasks from 1,000,000 (warm starts, greedy: {warm_text or '—'}):", "", *lines, "",
                   f"chosen: --ppo-lr {best}" if best else "not all runs have a result yet", ""]
    say("\n".join(tables))
    if failed:
        say(f"{len(failed)} runs failed: {', '.join(failed)} (rerun the command to retry them)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

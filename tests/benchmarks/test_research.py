"""benchmarks/research.py: the report's statistics on hand-made results, the skip/resume/copy logic with a fake
trainer, the grid's flags, and ``--quick`` end to end."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


research = _load("research")
stats = sys.modules["_stats"]  # the helper research.py (and main_job_seeds.py) import


# ---------------------------------------------------------------------- statistics


def test_bootstrap_ci_by_hand():
    assert stats.bootstrap_ci([0.5]) == (0.5, 0.5)  # one value: no spread
    assert stats.bootstrap_ci([0.7] * 5) == pytest.approx((0.7, 0.7))
    # two values: resampled means are 0, 0.5, 1 with odds 1/4, 1/2, 1/4, so the 2.5th and 97.5th percentiles are 0, 1
    assert stats.bootstrap_ci([0.0, 1.0]) == (0.0, 1.0)
    low, high = stats.bootstrap_ci([0.6, 0.7, 0.8, 0.9, 1.0])
    assert 0.6 <= low < 0.8 < high <= 1.0 and stats.bootstrap_ci([0.6, 0.7, 0.8, 0.9, 1.0]) == (low, high)


def test_paired_differences_keep_only_shared_seeds():
    diffs = stats.paired_differences({0: 0.8, 1: 0.7, 2: 0.9}, {0: 0.6, 1: 0.7, 3: 0.5})
    assert list(diffs) == [0, 1] and diffs == pytest.approx({0: 0.2, 1: 0.0})


def _result(question, method, seed, greedy, *, env="plan_path-v0", warm=0.70, completions=9_700, tokens=50_000,
            wall=300.0, budget=9_600):
    return {"question": question, "method": method, "env_id": env, "seed": seed, "greedy_after_rl": greedy,
            "sampled_after_rl": greedy - 0.05, "greedy_after_warm_start": warm, "sampled_after_warm_start": warm,
            "completions": completions, "completion_tokens": tokens, "wall_seconds": wall,
            "completion_budget": budget, "train_args": [], "invocation": "python benchmarks/research.py --questions A"}


def _write(runs_dir: Path, result: dict) -> None:
    folder = research.run_folder(runs_dir, result["question"], result["method"], result["env_id"], result["seed"])
    folder.mkdir(parents=True)
    (folder / research.RESULT_FILE).write_text(json.dumps(result))


def _row(text: str, method: str, env: str = "plan_path-v0") -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| `{method}` | {env} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_report_means_intervals_and_paired_differences(tmp_path):
    runs = tmp_path / "runs"
    base = [0.70, 0.72, 0.74, 0.76, 0.78]
    for seed, value in enumerate(base):
        _write(runs, _result("A", "at_grpo", seed, value, completions=9_600 + seed))
    for seed in range(4):  # seed 4 missing: 4 of 5, paired on seeds 0-3
        _write(runs, _result("A", "team_gigpo", seed, base[seed] + 0.10, warm=0.60))
    for seed, delta in enumerate([-0.02, 0.02, -0.02, 0.02, 0.0]):
        _write(runs, _result("A", "gigpo", seed, base[seed] + delta))
    _write(runs, _result("A", "gigpo", 9, 0.99))  # a seed at_grpo lacks: in the mean, not in the pairs
    results = tmp_path / "out" / "RESULTS.md"
    text = research.write_report(runs, results, keys=["A", "B", "gap1"])
    assert results.read_text() == text

    row = _row(text, "at_grpo")
    low, high = stats.bootstrap_ci(base)
    assert row[2:5] == ["5 seeds", f"{100 * np.mean(base):.1f} [{100 * low:.1f}, {100 * high:.1f}]", "(baseline)"]
    assert row[5:10] == ["70.0", f"{100 * (np.mean(base) - 0.05):.1f}", "9,602", "50,000", "300"]

    gains = [v - 0.70 for v in base]  # after RL minus the warm start (0.70), per seed: +0 ... +8 points
    low, high = stats.bootstrap_ci(gains)
    assert row[13] == f"{100 * np.mean(gains):+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"
    row = _row(text, "team_gigpo")
    assert row[2] == "4 of 5 seeds" and row[5] == "60.0"
    assert row[4] == "+10.0 [+10.0, +10.0] (4 pairs)"
    assert ("`team_gigpo` on plan_path-v0 (4 paired seeds): greedy +10.0 points [+10.0, +10.0]: above at_grpo; "
            "sampled +10.0 points [+10.0, +10.0]: above at_grpo") in text

    row = _row(text, "gigpo")
    assert row[2] == "6 seeds" and row[4].startswith("+0.0 [-") and row[4].endswith("(5 pairs)")
    assert "`gigpo` on plan_path-v0 (5 paired seeds): greedy +0.0 points" in text
    assert "not distinguishable from at_grpo" in text
    # team_gigpo twice (above), gigpo twice (not): 2 of 4, against 0.2 expected by chance
    assert "2 of these 4 intervals exclude 0. With 95% intervals, about 0.2 of 4" in text

    row = _row(text, "dr_mas")
    assert row[2] == "0 of 5 seeds" and set(row[3:10]) == {"—"}
    budget_aware = _row(text, "budget_aware")
    assert budget_aware[2] == "0 of 5 seeds" and "--tree-strategy budget" in budget_aware[-1]
    assert _row(text, "at_grpo", "sokoban-v0")[2] == "0 of 5 seeds"  # every env of the grid has a row
    assert "Command: `python benchmarks/research.py --questions A --seeds 5 6 7 8 9 --budget 9600" in text
    assert "No cell has been run yet" not in text and "**No run yet on sokoban-v0, sokoban-v1, sudoku-v0**" in text
    assert (results.parent / "images" / "research_A.png").stat().st_size > 0
    assert "](images/research_A.png)" in text and "research_B.png" not in text  # B has no run: no plot
    assert _row(text, "prm_process_reward")[2] == "0 of 5 seeds"  # runnable now, not yet run
    assert not (results.parent / "images" / "research_B.png").exists()


def test_export_copies_only_the_result_files(tmp_path):
    runs = tmp_path / "runs"
    _write(runs, _result("A", "gigpo", 5, 0.8))
    folder = research.run_folder(runs, "A", "gigpo", "plan_path-v0", 5)
    (folder / "train.log").write_text("log")
    (research.run_folder(runs, "A", "gigpo", "plan_path-v0", 6)).mkdir(parents=True)
    (research.run_folder(runs, "A", "gigpo", "plan_path-v0", 6) / research.RESULT_FILE).write_text("{torn")
    assert research.main(["--runs-dir", str(runs), "--export", str(tmp_path / "out")]) == 0
    copied = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert copied == ["A/gigpo/plan_path-v0/seed_5/result.json"]


def test_an_empty_report_says_nothing_has_run(tmp_path):
    text = research.write_report(tmp_path / "none", tmp_path / "RESULTS.md")
    assert "**No cell has been run yet**" in text and "`python benchmarks/research.py --questions gap1 A B gap3" in text
    assert "| `at_grpo` | plan_path-v0 | 0 of 5 seeds | — |" in text


def test_the_committed_results_page_is_the_report_of_the_committed_runs(tmp_path, monkeypatch):
    """Every number in docs/RESULTS.md comes from a committed result.json: the report rewritten from them is it."""
    monkeypatch.chdir(ROOT)
    runs = Path(research.COMMITTED_RUNS)
    assert len(research.load_results(runs)) >= 5
    text = research.write_report(runs, tmp_path / "RESULTS.md")
    assert text == (ROOT / "docs" / "RESULTS.md").read_text()
    assert "**No cell has been run yet**" not in text
    for image in (tmp_path / "images").iterdir():
        assert (ROOT / "docs" / "images" / image.name).exists(), image.name


# ---------------------------------------------------------------------- the grid and the runner


def test_every_method_of_the_grid_is_a_valid_train_config(tmp_path):
    runs = research.plan_runs(research.QUESTION_KEYS, [e.env_id for e in research.ENVS], [0], runs_dir=tmp_path,
                              budget=9_600, max_steps=1_000)
    warm_starts = research.warm_starts_of(runs, runs_dir=tmp_path)
    research.check_runs(runs, warm_starts)  # every flag exists, every value is valid, every warm start fits
    assert len(warm_starts) == len(research.ENVS)
    assert all(w.train_args[w.train_args.index("--steps") + 1] == "0" for w in warm_starts)
    folders = {(w.env_id, w.seed): str(w.folder) for w in warm_starts}
    assert all(r.train_args[r.train_args.index("--warm-start-from") + 1] == folders[(r.env_id, r.seed)]
               for r in runs)
    assert "--heldout-offset" in research.PROTOCOL and not set(research.SEEDS) & {0, 1, 2, 3, 4}
    assert {r.env_id for r in runs} == {e.env_id for e in research.ENVS}  # each has a warm start
    for q in research.QUESTIONS:
        assert q.methods[0].name == research.BASELINE
        for method in q.methods:
            assert bool(method.unsupported) != bool(method.flags), method  # runnable, or a reason why not
        budgets = {r.method: r.train_args[r.train_args.index("--completion-budget") + 1] for r in runs
                   if r.question == q.key}
        shares = {m.name: m.budget_share for m in q.methods if not m.unsupported}
        assert budgets == {name: str(round(9_600 * share)) for name, share in shares.items()}
    assert {r.method for r in runs if r.question == "C" and "2400" in r.train_args} == {"spo_per_agent_1_of_k"}


def test_a_method_flag_that_would_change_the_warm_start_is_refused_before_anything_runs(tmp_path, monkeypatch):
    from teamgym.errors import InvalidArgumentError

    q = research.question("A")
    wider = research.Method("wider", ("--algo", "gigpo", "--n-embd", "64"), "changes the model")
    monkeypatch.setattr(research, "QUESTIONS", (research.Question("A", q.title, (*q.methods, wider)),
                                                *research.QUESTIONS[1:]))
    runs = research.plan_runs(["A"], ["plan_path-v0"], [5], runs_dir=tmp_path, budget=100, max_steps=9,
                              methods=["at_grpo", "wider"])
    with pytest.raises(InvalidArgumentError, match=r"n_embd=128 \(this run: 64\)"):
        research.check_runs(runs, research.warm_starts_of(runs, runs_dir=tmp_path))


class FakeTrainer:
    """Stands in for the training subprocess: writes the summary.json the trainer would."""

    def __init__(self, code: int = 0):
        self.commands: list[list[str]] = []
        self.code = code

    def __call__(self, command: list[str], log: Path) -> int:
        self.commands.append(command)
        folder = Path(command[command.index("--output-dir") + 1])
        folder.mkdir(parents=True, exist_ok=True)
        if self.code == 0:
            seed = int(command[command.index("--seed") + 1])
            summary = {"heldout_success_after": 0.5 + seed / 10, "heldout_sampled_success_after": 0.4,
                       "heldout_success_after_sft": 0.3, "heldout_sampled_success_after_sft": 0.2,
                       "heldout_success_before": 0.0, "heldout_sampled_success_before": 0.0, "heldout_tasks": 200,
                       "steps": 7, "completion_budget": 100, "completions_used": 104, "completion_tokens_used": 999,
                       "stopped_by_budget": True, "wall_seconds": 12.0}
            (folder / "summary.json").write_text(json.dumps(summary))
        return self.code


def test_done_runs_are_skipped_checkpointed_ones_resumed_and_equal_ones_run_once(tmp_path):
    runs = research.plan_runs(["A", "gap3"], ["plan_path-v0"], [0, 1], runs_dir=tmp_path, budget=100, max_steps=9,
                              protocol=("--no-plot",), methods=["at_grpo", "gigpo", "alpha_0"])
    by_label = {r.label: r for r in runs}
    assert len(runs) == 8 and {research.run_status(r) for r in runs} == {"fresh"}
    done = by_label["A/gigpo/plan_path-v0/seed_0"]
    done.folder.mkdir(parents=True)
    (done.folder / research.RESULT_FILE).write_text(json.dumps({**_result("A", "gigpo", 0, 0.5),
                                                                 "train_args": list(done.train_args)}))
    assert research.run_status(done) == "done"
    resumable = by_label["gap3/alpha_0/plan_path-v0/seed_1"]
    (resumable.folder / "checkpoints" / "step_00000003").mkdir(parents=True)
    (resumable.folder / research.RESULT_FILE).write_text("{torn")  # a result cut short is no result
    assert research.run_status(resumable) == "resume"

    trainer = FakeTrainer()
    assert research.execute(runs, launcher=trainer, say=lambda _: None) == []
    launched = {Path(c[c.index("--output-dir") + 1]): c for c in trainer.commands}
    # at_grpo is the same run in A and gap3: once per seed; gigpo seed 0 was done
    assert len(trainer.commands) == 5 and done.folder not in launched
    assert launched[resumable.folder][-1] == "--resume"
    assert all(c[-1] != "--resume" for f, c in launched.items() if f != resumable.folder)
    for run in runs:
        result = research.read_result(run.folder)
        assert result is not None and (result["question"], result["method"]) == (run.question, run.method)
    copies = [research.read_result(r.folder) for r in runs if r.method == "at_grpo"]
    assert sorted(bool(c.get("copied_from")) for c in copies) == [False, False, True, True]
    fresh = research.read_result(by_label["A/at_grpo/plan_path-v0/seed_1"].folder) or {}
    if fresh.get("copied_from"):
        fresh = research.read_result(by_label["gap3/at_grpo/plan_path-v0/seed_1"].folder)
    assert (fresh["greedy_after_rl"], fresh["greedy_after_warm_start"], fresh["completions"],
            fresh["completion_tokens"], fresh["stopped_by_budget"]) == (0.6, 0.3, 104, 999, True)
    assert fresh["command"][fresh["command"].index("--completion-budget") + 1] == "100"

    again = FakeTrainer()
    assert research.execute(runs, launcher=again, say=lambda _: None) == [] and again.commands == []


def test_warm_starts_run_first_and_a_failed_one_fails_its_runs_without_launching_them(tmp_path):
    runs = research.plan_runs(["A"], ["plan_path-v0"], [5, 6], runs_dir=tmp_path, budget=100, max_steps=9,
                              protocol=("--no-plot",), methods=["at_grpo", "gigpo"])
    warm_starts = research.warm_starts_of(runs, runs_dir=tmp_path)

    class FailSeed6(FakeTrainer):
        def __call__(self, command, log):
            if command[command.index("--steps") + 1] == "0" and command[command.index("--seed") + 1] == "6":
                self.commands.append(command)
                return 1
            return super().__call__(command, log)

    trainer = FailSeed6()
    failed = research.run_grid(runs, warm_starts, launcher=trainer, say=lambda _: None)
    assert sorted(failed) == sorted([w.label for w in warm_starts if w.seed == 6]
                                    + [r.label for r in runs if r.seed == 6])
    outputs = [c[c.index("--output-dir") + 1] for c in trainer.commands]
    assert outputs[:2] == [str(w.folder) for w in warm_starts] and len(outputs) == 4  # 2 warm starts, seed 5's runs
    assert all(research.read_result(r.folder) is not None for r in runs if r.seed == 5)


def test_a_failed_run_writes_no_result_and_is_reported(tmp_path):
    runs = research.plan_runs(["A"], ["plan_path-v0"], [0], runs_dir=tmp_path, budget=100, max_steps=9,
                              protocol=(), methods=["gigpo"])
    assert research.execute(runs, launcher=FakeTrainer(code=1), say=lambda _: None) == [runs[0].label]
    assert research.read_result(runs[0].folder) is None and research.run_status(runs[0]) == "fresh"


def test_results_of_other_train_arguments_stop_the_runner(tmp_path, capsys):
    runs = research.plan_runs(["A"], ["plan_path-v0"], [0], runs_dir=tmp_path, budget=100, max_steps=9,
                              methods=["gigpo"])
    runs[0].folder.mkdir(parents=True)
    (runs[0].folder / research.RESULT_FILE).write_text(json.dumps({"train_args": ["--budget", "other"]}))
    assert research.run_status(runs[0]) == "conflict"
    code = research.main(["--questions", "A", "--methods", "gigpo", "--envs", "plan_path-v0", "--seeds", "0",
                          "--budget", "100", "--max-steps", "9", "--runs-dir", str(tmp_path)])
    assert code == 2 and "choose another --runs-dir" in capsys.readouterr().err


def test_results_recorded_before_the_restated_defaults_still_count(tmp_path):
    """The protocol restates the trainer's old defaults since they moved; the committed results, recorded without
    those flags, ran the same config and are not re-run."""
    runs = research.plan_runs(["A"], ["plan_path-v0"], [0], runs_dir=tmp_path, budget=100, max_steps=9,
                              methods=["gigpo"])
    old = research.without_restated_defaults(runs[0].train_args)
    assert len(old) == len(runs[0].train_args) - len(research.RESTATED_DEFAULTS)
    runs[0].folder.mkdir(parents=True)
    (runs[0].folder / research.RESULT_FILE).write_text(json.dumps({"train_args": list(old)}))
    assert research.run_status(runs[0]) == "done"
    (runs[0].folder / research.RESULT_FILE).write_text(json.dumps({"train_args": [*old, "--ppo-lr", "1"]}))
    assert research.run_status(runs[0]) == "conflict"


def test_quick_runs_one_cell_end_to_end_then_skips_or_resumes_it(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(ROOT / "benchmarks" / "research.py"), "--quick", "--runs-dir", str(tmp_path)]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    folder = tmp_path / "A" / "at_grpo" / "plan_path-v0" / "seed_0"
    result = json.loads((folder / "result.json").read_text())
    assert result["completions"] >= research.QUICK_BUDGET and result["stopped_by_budget"] is True
    assert 1 <= result["steps"] <= research.QUICK_MAX_STEPS and result["completion_tokens"] >= result["completions"]
    assert result["summary"]["completions_used"] == result["completions"] and result["wall_seconds"] > 0
    for key in ("greedy_after_rl", "sampled_after_rl", "greedy_after_warm_start", "sampled_after_warm_start"):
        assert 0.0 <= result[key] <= 1.0, key
    assert result["command"][1:][:len(research.SAFE_PATH) + 2] == [*research.SAFE_PATH, "-m", "teamgym.train"]
    assert "--torch-threads" in result["command"]
    assert result["revision"] is None or len(result["revision"].rstrip("+")) == 40  # the commit that trained
    warm = tmp_path / "warm_start" / "warm_start" / "plan_path-v0" / "seed_0"
    assert result["command"][result["command"].index("--warm-start-from") + 1] == str(warm)
    warm_result = json.loads((warm / "result.json").read_text())
    assert warm_result["steps"] == 0 and warm_result["greedy_after_rl"] == warm_result["greedy_after_warm_start"]
    assert result["greedy_after_warm_start"] == warm_result["greedy_after_warm_start"]
    energy = [r["advantage_energy"] for r in map(json.loads, (folder / "metrics.jsonl").read_text().splitlines())]
    assert result["advantage_energy"] == pytest.approx(sum(energy) / len(energy)) and result["advantage_energy"] >= 0
    assert result["informative_groups_per_1000"] >= 0
    report = (tmp_path / "RESULTS.md").read_text()
    row = _row(report, "at_grpo")
    assert row[2] == "1 seed" and row[7] == f"{result['completions']:,}"
    assert row[11] == f"{result['advantage_energy']:.4f}"
    assert "Command: `python benchmarks/research.py --quick" in report and "a smoke test" in report
    assert next(line for line in report.splitlines() if line.startswith("| plan_path-v0 | 1 of 1 |"))
    assert (tmp_path / "images" / "research_A.png").exists()

    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert second.returncode == 0 and "1 done, 0 to resume, 0 to start" in second.stdout, second.stdout
    assert "start A/" not in second.stdout and json.loads((folder / "result.json").read_text()) == result

    # killed after its last checkpoint, before its summary and result: resumed (not restarted) to the same result
    (folder / "result.json").unlink()
    (folder / "summary.json").unlink()
    third = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert third.returncode == 0 and "0 done, 1 to resume, 0 to start" in third.stdout, third.stdout + third.stderr
    resumed = json.loads((folder / "result.json").read_text())
    assert resumed["resumed"] is True and "--resume" not in resumed["command"]
    for key in ("greedy_after_rl", "greedy_after_warm_start", "completions", "completion_tokens", "steps"):
        assert resumed[key] == result[key], key
    assert "resumed from step" in (folder / "train.log").read_text()


# ---------------------------------------------------------------------- per-env settings and --choose-lr


def test_an_envs_flags_go_into_its_runs_after_the_protocol_and_before_the_methods(tmp_path, monkeypatch):
    monkeypatch.setattr(research, "ENVS", (research.Env("plan_path-v0", ("--ppo-lr", "3e-5"), "chosen"),
                                           research.Env("sudoku-v0")))
    runs = research.plan_runs(["A"], ["plan_path-v0", "sudoku-v0"], [5], runs_dir=tmp_path, budget=100, max_steps=9,
                              methods=["at_grpo", "gigpo"])
    research.check_runs(runs, research.warm_starts_of(runs, runs_dir=tmp_path))  # the rate leaves the warm start
    for run in runs:
        args = list(run.train_args)
        if run.env_id == "sudoku-v0":
            assert "--ppo-lr" not in args
            continue
        at = args.index("--ppo-lr")
        assert args[at + 1] == "3e-5" and at == len(research.PROTOCOL) and args[at + 2] == "--algo"
    assert all("--ppo-lr" not in w.train_args for w in research.warm_starts_of(runs, runs_dir=tmp_path))
    text = research.write_report(tmp_path, tmp_path / "RESULTS.md", envs=["plan_path-v0", "sudoku-v0"])
    assert "Runs on plan_path-v0 add `--ppo-lr 3e-5` after the protocol's flags: chosen" in text
    assert "Runs on sudoku-v0" not in text


class RateTrainer(FakeTrainer):
    """A fake trainer whose greedy success after RL depends on the learning rate (and a little on the seed)."""

    SUCCESS = {"1e-4": 0.40, "3e-5": 0.62, "1e-5": 0.55}

    def __call__(self, command, log):
        code = super().__call__(command, log)
        if "--ppo-lr" in command:
            folder = Path(command[command.index("--output-dir") + 1])
            summary = json.loads((folder / "summary.json").read_text())
            seed = int(command[command.index("--seed") + 1])
            summary["heldout_success_after"] = self.SUCCESS[command[command.index("--ppo-lr") + 1]] + seed / 100
            (folder / "summary.json").write_text(json.dumps(summary))
        return code


def test_choose_lr_runs_at_grpo_per_rate_on_the_selection_seeds_and_picks_the_best_mean(tmp_path):
    out: list[str] = []
    trainer = RateTrainer()
    code = research.choose_lr(["sokoban-v1"], ["1e-4", "3e-5", "1e-5"], runs_dir=tmp_path, budget=100, max_steps=9,
                              jobs=2, invocation="test", launcher=trainer, say=out.append)
    assert code == 0
    warm = [c for c in trainer.commands if c[c.index("--steps") + 1] == "0"]
    runs = [c for c in trainer.commands if c[c.index("--steps") + 1] != "0"]
    assert len(warm) == 5 and len(runs) == 15 and trainer.commands[:5] == warm  # warm starts first
    for command in trainer.commands:
        assert command[command.index("--heldout-offset") + 1] == "1000000"  # the selection split, not the grid's
        assert int(command[command.index("--seed") + 1]) in research.SELECTION_SEEDS
    assert {c[c.index("--ppo-lr") + 1] for c in runs} == {"1e-4", "3e-5", "1e-5"}
    assert all(c[c.index("--algo") + 1] == research.BASELINE and c[c.index("--completion-budget") + 1] == "100"
               for c in runs)
    text = "\n".join(out)
    assert "chosen: --ppo-lr 3e-5" in text and "| 3e-5 | 0: 62.0 / 1: 63.0 / 2: 64.0 / 3: 65.0 / 4: 66.0 |" in text
    again = RateTrainer()  # resumable: nothing runs twice
    assert research.choose_lr(["sokoban-v1"], ["1e-4", "3e-5", "1e-5"], runs_dir=tmp_path, budget=100, max_steps=9,
                              jobs=1, invocation="test", launcher=again, say=out.append) == 0
    assert again.commands == []


def test_choose_lr_names_no_rate_until_every_run_has_a_result(tmp_path):
    runs = research.lr_runs("sokoban-v1", ["1e-4", "3e-5"], [0, 1], runs_dir=tmp_path, budget=100, max_steps=9)
    for run in runs[:3]:
        _write(tmp_path, {**_result(research.CHOOSE_LR, run.method, run.seed, 0.5, env="sokoban-v1")})
    lines, best = research.lr_table(runs)
    assert best is None and any(line.startswith("| 3e-5 | 0: 50.0 |") for line in lines)


def test_the_report_names_the_hosts_when_runs_ran_on_several():
    old = {"env_id": "sokoban-v1", "summary": {"host": {"cpu": "AMD EPYC"}}}
    new = {"env_id": "plan_path-v0", "summary": {"host": {"cpu": "AMD EPYC (family 26, model 2)",
                                                          "cpu_kernels": "AVX2"}}}
    assert research.hosts_section([old, old]) == []  # one machine: nothing to say
    text = "\n".join(research.hosts_section([old, new, new]))
    assert "AMD EPYC (family 26, model 2), AVX2 kernels: 2 runs (plan_path-v0)" in text
    assert "AMD EPYC, kernels not recorded: 1 run (sokoban-v1)" in text
    assert "wall seconds compare only between runs of one host" in text

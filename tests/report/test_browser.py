"""The report in a real headless Chromium: it loads without errors or network, the tree and the turns of a real
2-step run render, filters and search change what is shown, diff and expand work.

Needs Debian's ``chromium`` (``apt-get install -y chromium``; CI installs it); skipped without one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from teamgym.report import write_report
from teamgym.rollout.tiny import char_tokenizer
from teamgym.wrappers import Recorder
from tests.support.chromium import Chromium, find_chromium

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(find_chromium() is None, reason="needs chromium on PATH (apt-get install -y chromium)"),
]


@pytest.fixture(scope="module")
def browser():
    with Chromium() as chromium:
        yield chromium


def open_report(browser: Chromium, path: Path, tab: str = ""):
    page = browser.open(path.as_uri() + (f"#{tab}" if tab else ""))
    page.wait_until("document.body.dataset.ready === '1'")
    return page


def batch_rows(run: Path) -> list[dict]:
    return [json.loads(line) for f in sorted((run / "batches").glob("step_*.jsonl")) for line in open(f)]


def match_count(page) -> str:
    return page.evaluate("document.getElementById('match-count').textContent")


def set_filter(page, element: str, value: str | bool) -> None:
    """Change one filter control as a user would, and let the page react."""
    prop = "checked" if isinstance(value, bool) else "value"
    page.evaluate(
        f"(() => {{ const e = document.getElementById({element!r}); e.{prop} = {json.dumps(value)}; "
        "e.dispatchEvent(new Event('change')); })()"
    )


def test_page_loads_without_console_errors_or_network(browser, tree_run):
    page = open_report(browser, tree_run / "report.html")
    for tab in ("rows", "overview", "episodes"):
        page.evaluate(f"document.querySelector('#tabs button[data-tab={tab}]').click()")
    page.drain()
    assert page.console_errors == []
    assert all(url.startswith(("file:", "data:", "about:")) for url in page.requests), page.requests
    rows = batch_rows(tree_run)
    assert page.evaluate("window.teamgymReport.rows") == len(rows)
    assert match_count(page).startswith(f"{len(rows)} of {len(rows)} agent-turns")


def test_tree_and_turns_of_a_real_run_render(browser, tree_run):
    page = open_report(browser, tree_run / "report.html")
    rows = batch_rows(tree_run)
    first = page.evaluate("document.querySelector('#episode-view .ep-head b').textContent")
    mine = [r for r in rows if r["episode_id"] == first]
    nodes = sorted({r["step"] for r in mine})
    assert page.evaluate("document.querySelectorAll('#episode-view section.node').length") == len(nodes)
    assert page.evaluate("document.querySelectorAll('#episode-view .tree circle[data-row]').length") == len(mine)
    assert page.evaluate("document.querySelectorAll('#episode-view .cand').length") == len(mine)
    assert page.evaluate("document.querySelectorAll('#episode-view .cand.chosen').length") == len(nodes)
    assert page.evaluate("document.querySelectorAll('#episode-view .tree circle.chosen').length") == len(nodes)
    assert page.evaluate("document.querySelectorAll('#episode-view .tree line.spine').length") == len(nodes)
    agents = page.evaluate("[...document.querySelectorAll('#episode-view .cand')].map(c => c.dataset.agent)")
    assert agents == [r["agent"] for r in sorted(mine, key=lambda r: (r["step"], r["branch"]))]
    shown = page.evaluate("[...document.querySelectorAll('#episode-view .cand pre.text')].map(p => p.textContent)")
    assert shown == [r["text"] for r in sorted(mine, key=lambda r: (r["step"], r["branch"]))]
    prompt = page.evaluate("""(() => { const d = document.querySelector('#episode-view details.prompt');
        d.open = true; d.dispatchEvent(new Event('toggle'));
        return d.querySelector('pre').textContent; })()""")
    assert prompt.endswith("T>")  # the compact plan_path prompt the tool saw: the grid, then its cue
    advantages = page.evaluate(
        "[...document.querySelectorAll('#episode-view .cand-head')]"
        ".map(h => h.textContent.match(/advantage (\\S+)/)[1])"
    )
    assert all(a != "–" for a in advantages)
    page.evaluate("document.querySelector('#tabs button[data-tab=overview]').click()")
    assert page.evaluate("document.querySelectorAll('#curves svg.curve').length") >= 4


def test_filters_and_search_change_what_is_shown(browser, tree_run):
    page = open_report(browser, tree_run / "report.html", tab="rows")
    rows = batch_rows(tree_run)
    total = len(rows)

    def count() -> int:
        return int(match_count(page).split(" of ")[0].replace(",", ""))

    set_filter(page, "f-agent", "planner")
    assert count() == sum(r["agent"] == "planner" for r in rows) < total
    agents = page.evaluate("[...document.querySelectorAll('#row-list .trow')].map(r => r.children[3].textContent)")
    assert agents and set(agents) == {"planner"}
    set_filter(page, "f-agent", "all")
    last_turn = max(r["turn"] for r in rows)
    set_filter(page, "f-turn", str(last_turn))
    assert count() == sum(r["turn"] == last_turn for r in rows)
    set_filter(page, "f-turn", "all")
    set_filter(page, "f-rmin", "0.5")
    assert count() == sum(r["rewards"] >= 0.5 for r in rows)
    set_filter(page, "f-rmin", "")
    set_filter(page, "f-chosen", True)
    assert count() == sum(r["chosen"] for r in rows)
    set_filter(page, "f-chosen", False)
    set_filter(page, "f-success", "failed")
    assert count() == sum(not r["success"] for r in rows)
    set_filter(page, "f-success", "any")
    word = "actions: d"  # in completions, and in the planner's prompts (the line the tool's program printed)
    decode = char_tokenizer().decode
    set_filter(page, "f-search", word)
    assert count() == sum(word in r["text"].lower() or word in decode(r["prompt_ids"]).lower() for r in rows) > 0
    page.evaluate("document.querySelector('#tabs button[data-tab=episodes]').click()")
    marks = page.evaluate(
        "[...document.querySelectorAll('#episode-view .cand:not(.dim) mark')].map(m => m.textContent)"
    )
    assert marks and {m.lower() for m in marks} == {word}
    set_filter(page, "f-search", "no completion says this")
    assert count() == 0
    assert "No agent-turn matches" in page.evaluate("document.getElementById('episode-view').textContent")
    page.evaluate("document.getElementById('f-reset').click()")
    assert count() == total
    assert page.console_errors == []


def test_row_click_opens_its_episode_and_diff_vs_chosen(browser, tree_run):
    page = open_report(browser, tree_run / "report.html", tab="rows")
    unchosen = page.evaluate("[...document.querySelectorAll('#row-list .trow:not(.chosen)')].map(r => r.dataset.row)")
    page.evaluate(f"document.querySelector('#row-list .trow[data-row=\"{unchosen[0]}\"]').click()")
    assert page.evaluate("document.querySelector('#tab-episodes').classList.contains('active')")
    card = f'#episode-view .cand[data-row="{unchosen[0]}"]'
    assert page.evaluate(f"!!document.querySelector('{card}')")
    page.evaluate(f"document.querySelector('{card} button.vs').click()")
    diff = page.evaluate(f"document.querySelector('{card}').closest('section.node').querySelector('.diff').textContent")
    assert "diff of candidate" in diff and "(chosen)" in diff
    assert page.console_errors == []


def test_recorder_file_with_long_prompts(browser, tmp_path):
    """A Recorder file of scripted coder_tester episodes: env prompts long enough to be clipped, then expanded."""
    import teamgym

    path = tmp_path / "turns.jsonl"
    env = Recorder(teamgym.make("coder_tester-v0"), path)
    base = env.unwrapped
    for seed in range(3):
        env.reset(seed=seed)
        policies = {agent: base.scripted_policy(agent) for agent in base.possible_agents}
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            env.step(None if terminated or truncated else policies[agent](observation))
    env.close()
    report = write_report(path)
    page = open_report(browser, report)
    assert page.console_errors == []
    records = [json.loads(line) for line in open(path)]
    assert page.evaluate("window.teamgymReport.episodes") == 3
    long_prompt = max(len(r["prompt"]) for r in records)
    assert long_prompt > 600
    shown = page.evaluate("""(() => {
        for (const d of document.querySelectorAll('#episode-view details.prompt')) {
            d.open = true; d.dispatchEvent(new Event('toggle'));
            const more = d.querySelector('button.more');
            if (more) { more.click(); return d.querySelector('pre').textContent.length; }
        }
        return 0; })()""")
    assert shown in {len(r["prompt"]) for r in records if r["episode_id"] == records[0]["episode_id"]}
    assert shown > 600
    assert page.console_errors == []


def test_the_diff_rebuilds_both_texts(browser, tree_run):
    """``lcsDiff`` on random texts: the kept and removed parts give the first text, the kept and added the second."""
    import random

    rng = random.Random(0)
    words = ["a", "b", "print", "(", ")", " ", "\n", "x1", "Actions:", ","]
    pairs = [
        ("".join(rng.choices(words, k=rng.randint(0, 30))), "".join(rng.choices(words, k=rng.randint(0, 30))))
        for _ in range(60)
    ]
    page = open_report(browser, tree_run / "report.html")
    results = page.evaluate(f"{json.dumps(pairs)}.map(([a, b]) => lcsDiff(a, b))")
    for (a, b), ops in zip(pairs, results):
        assert "".join(text for op, text in ops if op in "=-") == a
        assert "".join(text for op, text in ops if op in "=+") == b
    assert page.evaluate("lcsDiff('a b c', 'a x c')") == [["=", "a "], ["-", "b"], ["+", "x"], ["=", " c"]]

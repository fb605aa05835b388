/* teamgym inspect: the Overview tab: where the report came from, the per-step table, the run's config and
 * held-out success. The learning curves are inline SVG written by the Python side. */
"use strict";
function kvTable(entries) {
  const cells = entries.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`);
  return `<table class="kv">${cells.join("")}</table>`;
}
function renderOverview(D, episodes) {
  const $ = (id) => document.getElementById(id);
  const m = D.meta, N = D.cols.e.length;
  $("overview-meta").innerHTML = kvTable([["source", m.path], ["kind", m.kind], ["agent-turns", fmtInt(N)],
    ["episodes", fmtInt(episodes.length)], ["steps saved", m.steps_available],
    ["advantages", Object.entries(m.advantages).map(([s, note]) => (s === "" ? "" : `step ${s}: `) + note)
      .join("; ") || "–"],
    ["texts cut at", fmtInt(m.max_chars) + " characters"], ["written", m.generated + " by teamgym " + m.version]]);
  if (!$("curves").children.length) $("curves").innerHTML = '<div class="muted">no metrics.jsonl</div>';
  const stats = new Map();
  for (const ep of episodes) {
    const s = stats.get(ep.step) || { rows: 0, eps: 0, ok: 0, known: 0, sum: 0 };
    s.eps += 1; s.rows += ep.rows.length;
    if (ep.ok !== null) { s.known += 1; s.ok += ep.ok; }
    for (const row of ep.rows) s.sum += row.r;
    stats.set(ep.step, s);
  }
  const lines = [...stats.entries()].map(([step, s]) => `<tr><td>${step ?? ""}</td>` +
    `<td class="num">${fmtInt(s.rows)}</td><td class="num">${fmtInt(s.eps)}</td><td class="num">` +
    `${s.known ? num(s.ok / s.known) : "–"}</td><td class="num">${num(s.sum / s.rows)}</td></tr>`);
  $("step-table").innerHTML = `<table class="kv"><tr><th>step</th><th>agent-turns</th><th>episodes</th>` +
    `<th>success</th><th>mean reward</th></tr>${lines.join("")}</table>`;
  const c = D.config;
  let html = "";
  if (c) {
    const keys = ["env_id", "env_kwargs", "algo", "rollout", "model", "steps", "tasks_per_step", "k", "group_size",
      "strategy", "lr", "temperature", "max_new_tokens", "alpha_mixer", "alpha", "sft_steps", "seed"];
    html += kvTable(keys.filter((k) => k in c).map((k) => [k, JSON.stringify(c[k])]));
  }
  if (D.summary) {
    html += "<h2>Held-out success (summary.json)</h2>" + kvTable(Object.entries(D.summary)
      .filter(([k, v]) => typeof v === "number").map(([k, v]) => [k, num(v, 4)]));
  }
  if (c) {
    html += `<details><summary>full config.json</summary><pre>${esc(JSON.stringify(c, null, 2))}</pre></details>`;
  }
  $("config").innerHTML = html || '<div class="muted">no config.json</div>';
}


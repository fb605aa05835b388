/* teamgym inspect: renders the JSON embedded in this page. No network, no libraries.
 * Lists are virtualised (only the rows in view exist in the DOM) and an episode is drawn when it is opened, so a
 * page of tens of thousands of agent-turns opens as fast as a small one. */
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("teamgym-data").textContent);
  const S = D.strings, C = D.cols, EP = D.episodes, FLAGS = D.meta.flags;
  const N = C.e.length;
  const PREVIEW = 600;
  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------------ rows, episodes, nodes
  const rows = new Array(N);
  for (let i = 0; i < N; i++) {
    rows[i] = { i, e: C.e[i], a: D.agents[C.a[i]], t: C.t[i], n: C.n[i], b: C.b[i], c: C.c[i] === 1, r: C.r[i],
      v: C.v[i], x: C.x[i], p: C.p[i], k: C.k[i], l: C.l[i], f: C.f[i], q: C.q[i], o: C.o[i] };
  }
  const episodes = EP.id.map((id, e) => ({ e, id, task: EP.task[e], step: EP.step[e], ok: EP.success[e],
    rows: [], nodes: [], ret: 0 }));
  for (const row of rows) episodes[row.e].rows.push(row);
  for (const ep of episodes) {
    ep.rows.sort((u, w) => (u.n - w.n) || ((u.b ?? 0) - (w.b ?? 0)) || (u.i - w.i));
    let node = null;
    for (const row of ep.rows) {
      if (!node || node.n !== row.n || row.b === null) {
        node = { n: row.n, rows: [], ep };
        ep.nodes.push(node);
      }
      node.rows.push(row);
      row.node = node;
    }
    for (const nd of ep.nodes) {
      nd.chosen = nd.rows.find((r) => r.c) || null;
      if (nd.chosen) ep.ret += nd.chosen.r;
    }
  }
  const groups = new Map();  // (step, task) -> episodes: a trajectory rollout's GiGPO group
  for (const ep of episodes) {
    const key = ep.step + "\u0000" + ep.task;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(ep);
  }
  let rMin = Infinity, rMax = -Infinity;
  for (const row of rows) { if (row.r < rMin) rMin = row.r; if (row.r > rMax) rMax = row.r; }

  // ------------------------------------------------------------------ helpers
  function rewardColor(r) {
    if (r >= 0) return mixColor("#e5e7eb", "#16a34a", rMax > 0 ? Math.min(1, r / rMax) : 0);
    return mixColor("#e5e7eb", "#dc2626", rMin < 0 ? Math.min(1, r / rMin) : 0);
  }
  const flagNames = (mask) => Object.keys(FLAGS).filter((name) => mask & FLAGS[name]);
  const FLAG_TEXT = { format: "format penalty", infra: "infra error: dropped", clipped: "clipped at token budget",
    zero_variance: "zero variance: dropped" };
  const flagChips = (mask) => flagNames(mask).map((name) => `<span class="flag" data-flag="${name}">` +
    `${FLAG_TEXT[name] || name}</span>`).join(" ");
  const stepLabel = (s) => (s === null || s < 0) ? "" : "step " + s;

  // ------------------------------------------------------------------ filters
  const F = { step: "all", agent: "all", turn: "all", rmin: null, rmax: null, success: "any", flag: "any",
    chosen: false, q: "" };
  const matched = new Uint8Array(N);
  const lowered = new Map();
  function lower(idx) {
    if (idx < 0) return "";
    let s = lowered.get(idx);
    if (s === undefined) { s = S[idx].toLowerCase(); lowered.set(idx, s); }
    return s;
  }
  function rowMatches(row) {
    const ep = episodes[row.e];
    if (F.step !== "all" && String(ep.step) !== F.step) return false;
    if (F.agent !== "all" && row.a !== F.agent) return false;
    if (F.turn !== "all" && String(row.t) !== F.turn) return false;
    if (F.rmin !== null && !(row.r >= F.rmin)) return false;
    if (F.rmax !== null && !(row.r <= F.rmax)) return false;
    if (F.success === "solved" && ep.ok !== 1) return false;
    if (F.success === "failed" && ep.ok !== 0) return false;
    if (F.chosen && !row.c) return false;
    if (F.flag === "none" && row.f) return false;
    if (F.flag !== "any" && F.flag !== "none" && !(row.f & FLAGS[F.flag])) return false;
    if (F.q && lower(row.x).indexOf(F.q) < 0 && lower(row.p).indexOf(F.q) < 0) return false;
    return true;
  }
  let episodeItems = [], rowItems = [];
  function applyFilters() {
    rowItems = [];
    const hit = new Uint8Array(episodes.length);
    for (let i = 0; i < N; i++) {
      matched[i] = rowMatches(rows[i]) ? 1 : 0;
      if (matched[i]) { rowItems.push(rows[i]); hit[rows[i].e] = 1; }
    }
    episodeItems = episodes.filter((ep) => hit[ep.e]);
    $("match-count").textContent = `${fmtInt(rowItems.length)} of ${fmtInt(N)} agent-turns · ` +
      `${fmtInt(episodeItems.length)} of ${fmtInt(episodes.length)} episodes`;
    episodeList.set(episodeItems);
    rowList.set(rowItems);
    if (current && !hit[current.e]) current = null;
    if (!current && episodeItems.length) current = episodeItems[0];
    renderEpisode();
  }
  function fillSelect(id, values, labels) {
    const select = $(id);
    select.innerHTML = values.map((v, k) => `<option value="${esc(v)}">${esc(labels ? labels[k] : v)}</option>`)
      .join("");
  }
  function initFilters() {
    const steps = [...new Set(episodes.map((ep) => ep.step))].filter((s) => s !== null && s >= 0)
      .sort((u, w) => u - w);
    fillSelect("f-step", ["all", ...steps.map(String)], ["all", ...steps.map(String)]);
    $("f-step").disabled = steps.length < 2;
    fillSelect("f-agent", ["all", ...D.agents]);
    const turns = [...new Set(rows.map((r) => r.t))].sort((u, w) => u - w);
    fillSelect("f-turn", ["all", ...turns.map(String)]);
    fillSelect("f-flag", ["any", "none", ...Object.keys(FLAGS)],
      ["any", "no flag", ...Object.keys(FLAGS).map((k) => FLAG_TEXT[k] || k)]);
    $("f-success").disabled = !EP.success.some((v) => v !== null);
    const read = () => {
      F.step = $("f-step").value; F.agent = $("f-agent").value; F.turn = $("f-turn").value;
      const lo = $("f-rmin").value, hi = $("f-rmax").value;
      F.rmin = lo === "" ? null : Number(lo); F.rmax = hi === "" ? null : Number(hi);
      F.success = $("f-success").value; F.flag = $("f-flag").value; F.chosen = $("f-chosen").checked;
      F.q = $("f-search").value.trim().toLowerCase();
      applyFilters();
    };
    let timer = null;
    const later = () => { clearTimeout(timer); timer = setTimeout(read, 120); };
    for (const id of ["f-step", "f-agent", "f-turn", "f-success", "f-flag", "f-chosen", "f-rmin", "f-rmax",
      "f-search"]) {
      $(id).addEventListener("change", read);
    }
    for (const id of ["f-rmin", "f-rmax", "f-search"]) $(id).addEventListener("input", later);
    $("f-reset").addEventListener("click", () => { $("filters").reset(); read(); });
  }
  function highlight(text) {
    if (!F.q) return esc(text);
    const low = text.toLowerCase();
    let out = "", at = 0, k;
    while ((k = low.indexOf(F.q, at)) >= 0) {
      out += esc(text.slice(at, k)) + "<mark>" + esc(text.slice(k, k + F.q.length)) + "</mark>";
      at = k + F.q.length;
    }
    return out + esc(text.slice(at));
  }

  let current = null;
  const episodeList = VirtualList($("episode-list"), 40, (ep) => {
    const item = el("div", "ep" + (ep === current ? " selected" : ""));
    item.dataset.episode = ep.id;
    const mark = ep.ok === 1 ? '<span class="ok">solved</span>' : ep.ok === 0 ? '<span class="fail">failed</span>' : "";
    const hits = ep.rows.reduce((sum, row) => sum + matched[row.i], 0);
    item.innerHTML = `<div class="l1">${esc(ep.id)} ${mark}</div><div class="l2">` + esc(joinParts([
      stepLabel(ep.step), `task ${ep.task ?? "?"}`, `${ep.nodes.length} nodes`, `path reward ${num(ep.ret)}`,
      `${hits}/${ep.rows.length} match`])) + "</div>";
    item.addEventListener("click", () => { current = ep; episodeList.draw(); renderEpisode(); });
    return item;
  });
  const rowList = VirtualList($("row-list"), 26, (row) => {
    const ep = episodes[row.e];
    const item = el("div", "trow rowgrid" + (row.c ? " chosen" : ""));
    item.dataset.row = row.i;
    item.innerHTML = `<span class="num">${ep.step ?? ""}</span><span>${esc(ep.id)}</span>` +
      `<span class="num">${row.n}</span><span>${esc(row.a)}</span><span class="num">${row.t}</span>` +
      `<span class="num">${row.b ?? ""}${row.c ? " ✓" : ""}</span><span class="num">${num(row.r)}</span>` +
      `<span class="num">${signed(row.v)}</span><span>${flagNames(row.f).join(", ")}</span>` +
      `<span class="mono">${esc(S[row.x].slice(0, 200).replace(/\s+/g, " "))}</span>`;
    item.addEventListener("click", () => openRow(row));
    return item;
  });

  // ------------------------------------------------------------------ one episode: tree and nodes
  function openRow(row) {
    current = episodes[row.e];
    showTab("episodes");
    const index = episodeItems.indexOf(current);
    if (index >= 0) episodeList.reveal(index);
    renderEpisode();
    focusRow(row.i);
  }
  function focusRow(i) {
    const card = document.querySelector(`.cand[data-row="${i}"]`);
    if (!card) return;
    card.scrollIntoView({ block: "center" });
    card.classList.add("flash");
    setTimeout(() => card.classList.remove("flash"), 1200);
  }
  function treeSvg(ep) {
    const colW = 92, rowH = 24, top = 30, left = 26;
    const k = Math.max(1, ...ep.nodes.map((nd) => nd.rows.length));
    const width = left + ep.nodes.length * colW + 20, height = top + k * rowH + 8;
    const pos = new Map();
    ep.nodes.forEach((nd, d) => nd.rows.forEach((row, j) => {
      pos.set(row.i, [left + 40 + d * colW, top + 10 + j * rowH]);
    }));
    const parts = [`<svg width="${width}" height="${height}" class="tree-svg">`];
    parts.push(`<circle cx="10" cy="${top + 10}" r="5" fill="#9ca3af"><title>initial state</title></circle>`);
    let parent = [10, top + 10];
    ep.nodes.forEach((nd, d) => {
      parts.push(`<text x="${left + 40 + d * colW - 30}" y="12">${esc(nd.rows[0].a)}</text>` +
        `<text x="${left + 40 + d * colW - 30}" y="24" class="muted">t${nd.rows[0].t} s${nd.n}</text>`);
      for (const row of nd.rows) {
        const [x, y] = pos.get(row.i);
        parts.push(`<line class="edge${row.c ? " spine" : ""}" x1="${parent[0]}" y1="${parent[1]}" ` +
          `x2="${x}" y2="${y}"/>`);
      }
      if (nd.chosen) parent = pos.get(nd.chosen.i);
    });
    for (const nd of ep.nodes) {
      for (const row of nd.rows) {
        const [x, y] = pos.get(row.i);
        parts.push(`<circle data-row="${row.i}" class="${row.c ? "chosen" : ""}${matched[row.i] ? "" : " dim"}" ` +
          `cx="${x}" cy="${y}" r="8" fill="${rewardColor(row.r)}"><title>${esc(row.a)} turn ${row.t}, ` +
          `candidate ${row.b ?? 0}${row.c ? " (chosen)" : ""}: reward ${num(row.r)}, advantage ${signed(row.v)}` +
          `</title></circle><text x="${x + 11}" y="${y + 4}">${num(row.r, 2)}</text>`);
      }
    }
    parts.push("</svg>");
    return parts.join("");
  }
  function termsTable(row) {
    if (!row.q) return "";
    const cells = [];
    D.terms.forEach((name, k) => {
      const value = row.q[k];
      if (value === null || (value === 0 && name !== "team" && name !== "local")) return;
      cells.push(`<tr><td>${esc(name)}</td><td class="v">${num(value)}</td></tr>`);
    });
    return `<table class="terms">${cells.join("")}</table>`;
  }
  function textBlock(idx, cls) {
    if (idx < 0) return '<pre class="' + cls + ' muted">(no text saved)</pre>';
    const text = S[idx];
    const cut = D.cut[idx];
    const note = cut ? `<div class="meta">cut at ${fmtInt(text.length)} of ${fmtInt(cut)} characters in this file ` +
      `(--max-chars)</div>` : "";
    if (text.length <= PREVIEW) return `<pre class="${cls}">${highlight(text)}</pre>${note}`;
    return `<pre class="${cls}" data-text="${idx}">${highlight(text.slice(0, PREVIEW))}…</pre>` +
      `<button type="button" class="more" data-text="${idx}">show all ${fmtInt(text.length)} characters</button>` +
      note;
  }
  function candCard(row) {
    const card = el("div", "cand" + (row.c ? " chosen" : "") + (matched[row.i] ? "" : " dim"));
    card.dataset.row = row.i;
    card.dataset.agent = row.a;
    const others = row.o ? Object.entries(row.o).map(([a, v]) => `${esc(a)} ${signed(v)}`).join(", ") : "";
    card.innerHTML = `<div class="cand-head"><b>#${row.b ?? 0}</b>` +
      (row.c ? '<span class="badge chosen">chosen</span>' : "") +
      `<span>reward <b>${num(row.r)}</b></span><span>advantage <b>${signed(row.v)}</b></span>${flagChips(row.f)}` +
      (row.node.rows.length > 1 ? `<label class="pick"><input type="checkbox" data-row="${row.i}"> diff</label>` : "") +
      (row.node.chosen && !row.c ? `<button type="button" class="vs" data-row="${row.i}">diff vs chosen</button>`
        : "") +
      `</div>${termsTable(row)}${textBlock(row.x, "text")}<div class="meta">` +
      [row.k !== null ? `${row.k} tokens` : "", row.l !== null ? `mean logprob ${num(row.l)}` : "",
        others ? `others received: ${others}` : ""].filter(Boolean).join(" · ") + "</div>";
    return card;
  }
  function nodeSection(nd) {
    const section = el("section", "node");
    section.dataset.step = nd.n;
    const rs = nd.rows.map((r) => r.r);
    const mean = rs.reduce((u, w) => u + w, 0) / rs.length;
    const std = rs.length > 1 ? Math.sqrt(rs.reduce((u, w) => u + (w - mean) ** 2, 0) / (rs.length - 1)) : 0;
    const first = nd.rows[0];
    section.innerHTML = `<header>${esc(first.a)} · turn ${first.t} · env step ${nd.n} <span class="muted">· ` +
      `${nd.rows.length} candidate${nd.rows.length > 1 ? "s" : ""} · reward mean ${num(mean)}, std ${num(std)}` +
      `</span></header>`;
    if (first.p >= 0) {
      const prompt = el("details", "prompt");
      prompt.innerHTML = `<summary>prompt (${fmtInt(S[first.p].length)} characters${D.cut[first.p] ? ", cut" : ""})` +
        `</summary>`;
      prompt.addEventListener("toggle", () => {  // drawn when first opened
        if (prompt.open && !prompt.querySelector("pre")) {
          prompt.insertAdjacentHTML("beforeend", textBlock(first.p, "prompt-text"));
        }
      });
      section.appendChild(prompt);
    }
    const grid = el("div", "cands");
    for (const row of nd.rows) grid.appendChild(candCard(row));
    section.appendChild(grid);
    const diffBox = el("div", "diff");
    diffBox.hidden = true;
    section.appendChild(diffBox);
    section.addEventListener("change", (event) => {
      if (!event.target.matches("input[type=checkbox][data-row]")) return;
      const picked = [...section.querySelectorAll("input[type=checkbox][data-row]:checked")];
      if (picked.length > 2) { picked.filter((b) => b !== event.target)[0].checked = false; }
      const now = [...section.querySelectorAll("input[type=checkbox][data-row]:checked")]
        .map((b) => rows[+b.dataset.row]);
      showDiff(diffBox, now);
    });
    section.addEventListener("click", (event) => {
      const button = event.target.closest("button.vs");
      if (!button) return;
      const other = rows[+button.dataset.row];
      section.querySelectorAll("input[type=checkbox][data-row]").forEach((b) => {
        b.checked = +b.dataset.row === other.i || +b.dataset.row === nd.chosen.i;
      });
      showDiff(diffBox, [nd.chosen, other]);
    });
    return section;
  }
  function renderEpisode() {
    const view = $("episode-view");
    if (!current) {
      const why = N ? "No agent-turn matches the filters." : "No agent-turns in this report.";
      view.innerHTML = `<div class="empty">${why}</div>`;
      return;
    }
    const ep = current;
    const mark = ep.ok === 1 ? '<span class="ok">solved</span>' : ep.ok === 0 ? '<span class="fail">failed</span>' : "";
    const group = groups.get(ep.step + "\u0000" + ep.task) || [];
    const links = group.length > 1 ? `<div class="group-links muted">same task in this step: ` + group.map((g) =>
      `<a href="#" data-episode-index="${g.e}">${esc(g.id)}${g === ep ? " (this)" : ""} ` +
      `${g.ok === 1 ? "✓" : g.ok === 0 ? "✗" : ""} ${num(g.ret)}</a>`).join("") + "</div>" : "";
    view.innerHTML = `<div class="ep-head"><b>${esc(ep.id)}</b> ${mark} · ` + esc(joinParts([stepLabel(ep.step),
      `task ${ep.task ?? "?"}`, `${ep.nodes.length} nodes, ${ep.rows.length} agent-turns`,
      `reward along the chosen path ${num(ep.ret)}`])) + `</div>${links}<div class="tree">${treeSvg(ep)}</div>`;
    const nodes = el("div", "nodes");
    for (const nd of ep.nodes) nodes.appendChild(nodeSection(nd));
    view.appendChild(nodes);
    view.scrollTop = 0;
  }
  $("episode-view").addEventListener("click", (event) => {
    const more = event.target.closest("button.more");
    if (more) {
      const idx = +more.dataset.text;
      const pre = more.parentElement.querySelector(`pre[data-text="${idx}"]`);
      pre.innerHTML = highlight(S[idx]);
      more.remove();
      return;
    }
    const circle = event.target.closest("circle[data-row]");
    if (circle) { focusRow(+circle.dataset.row); return; }
    const link = event.target.closest("a[data-episode-index]");
    if (link) {
      event.preventDefault();
      current = episodes[+link.dataset.episodeIndex];
      episodeList.draw();
      renderEpisode();
    }
  });

  // ------------------------------------------------------------------ diff of two candidates
  function showDiff(box, pair) {
    if (pair.length !== 2) { box.hidden = true; box.innerHTML = ""; return; }
    const [first, second] = pair.sort((u, w) => (w.c - u.c) || ((u.b ?? 0) - (w.b ?? 0)));
    const ops = lcsDiff(S[first.x], S[second.x]);
    const body = ops === null ? '<div class="muted">too long to diff here</div>' : "<pre>" + ops.map(([op, s]) =>
      op === "=" ? esc(s) : op === "-" ? `<del>${esc(s)}</del>` : `<ins>${esc(s)}</ins>`).join("") + "</pre>";
    box.innerHTML = `<div class="muted">diff of candidate #${first.b ?? 0}${first.c ? " (chosen)" : ""} ` +
      `→ #${second.b ?? 0}: <del>only in #${first.b ?? 0}</del> <ins>only in #${second.b ?? 0}</ins></div>${body}`;
    box.hidden = false;
  }

  // ------------------------------------------------------------------ tabs and start
  function showTab(name) {
    for (const button of document.querySelectorAll("#tabs button")) {
      button.classList.toggle("active", button.dataset.tab === name);
    }
    for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.id === "tab-" + name);
    $("filters").style.display = name === "overview" ? "none" : "";
    if (name === "episodes") episodeList.draw();
    if (name === "rows") rowList.draw();
  }
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => showTab(button.dataset.tab));
  }
  $("source").textContent = D.meta.path;
  $("notes").innerHTML = D.meta.notes.map((n) => `<div>${esc(n)}</div>`).join("");
  initFilters();
  renderOverview(D, episodes);
  const start = location.hash.slice(1);
  showTab(["episodes", "rows", "overview"].includes(start) ? start : (N ? "episodes" : "overview"));
  applyFilters();
  window.teamgymReport = { ready: performance.now(), rows: N, episodes: episodes.length };
  document.body.dataset.ready = "1";
})();

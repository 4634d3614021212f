/* votebench live dashboard: follows /api/stream, fetches /api/snapshot when the store changes, renders in place. */
"use strict";
(function () {
  const SVGNS = "http://www.w3.org/2000/svg";
  // Okabe & Ito (2008): distinguishable with the common colour-vision deficiencies (yellow left out: too light on white)
  const PALETTE = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000"];
  const DASHES = ["", "7 4", "2 3"];
  const TOP_K = 20;
  const BUMP_K = 12;

  const ui = {
    snap: null, version: 0, fetching: false, again: false, group: null, sort: null, desc: false, query: "",
    showAll: false, open: new Set(), tasks: new Map(), letters: new Map(), es: null, retry: null, built: false,
  };

  // ------------------------------------------------------------------ small helpers
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids) if (k !== null && k !== undefined && k !== false) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function sv(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const $ = id => document.getElementById(id);
  function fmt(x, d) { return x === null || x === undefined ? "–" : Number(x).toFixed(d === undefined ? 2 : d); }
  function fmtScore(x) {
    if (x === null || x === undefined) return "–";
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return x.toExponential(3);
    return Number(x.toPrecision(5)).toString();
  }
  function fmtRank(x) {
    if (x === null || x === undefined) return "–";
    const r = Math.round(x * 10) / 10;
    return Number.isInteger(r) ? String(r) : r.toFixed(1);
  }
  function pct(a, b) { return b ? 100 * a / b : 0; }
  function width(node, p) { node.style.width = p.toFixed(1) + "%"; return node; }
  function plural(n, one, many) { return `${n.toLocaleString()} ${n === 1 ? one : (many || one + "s")}`; }
  function tauColor(t) {
    if (t === null || t === undefined) return "#f2f4f7";
    const a = Math.min(1, Math.abs(t));
    const [r, g, b] = t >= 0 ? [0, 114, 178] : [213, 94, 0];
    return `rgba(${r},${g},${b},${(0.1 + 0.55 * a).toFixed(3)})`;
  }
  function overLabel(g) {
    return g.over === "systems" ? "candidates (systems)" : g.over === "instances" ? "instances" : "tasks (judges)";
  }

  // ------------------------------------------------------------------ header
  function renderHeader(s) {
    const p = s.progress;
    const status = $("status");
    status.className = "pill " + s.status;
    status.textContent = s.status === "partial" ? "in progress" : s.status;
    width($("bar-fill"), 100 * p.fraction);
    const parts = [];
    if (p.replicates_total) parts.push(`${p.replicates_done.toLocaleString()} / ${p.replicates_total.toLocaleString()} replicates`);
    parts.push(`${p.blocks_done.toLocaleString()} / ${p.blocks_total.toLocaleString()} blocks`);
    parts.push(`${Math.floor(100 * p.fraction)}%`);
    $("progress-text").textContent = parts.join(" · ");
    const dask = $("dask");
    dask.replaceChildren();
    if (s.dask_dashboard && /^https?:\/\//.test(s.dask_dashboard)) {
      dask.append(el("a", {href: s.dask_dashboard, target: "_blank", rel: "noopener noreferrer"}, "dask dashboard ↗"));
    } else {
      dask.textContent = s.status === "complete" ? "" : "dask dashboard: not available";
    }
    $("store").textContent = `store ${s.store}` + (s.engine_version ? ` · engine ${s.engine_version}` : "") +
      (s.seed !== null && s.seed !== undefined ? ` · seed ${s.seed}` : "") + (s.message ? ` · ${s.message}` : "");
    $("updated").textContent = "updated " + new Date((s.generated || Date.now() / 1000) * 1000).toLocaleTimeString();
  }

  // ------------------------------------------------------------------ overview: rules x perturbations
  function names(g, idx) { return idx.map(i => g.systems[i]); }
  function chips(list, cls, max) {
    const out = [];
    list.slice(0, max).forEach(n => out.push(el("span", {class: "chip " + cls, title: n}, n.length > 28 ? n.slice(0, 27) + "…" : n)));
    if (list.length > max) out.push(el("span", {class: "sub", title: list.slice(max).join("\n")}, ` +${list.length - max} more`));
    return out;
  }
  function overview(s) {
    const boots = s.groups.filter(g => g.kind === "bootstrap");
    if (!boots.length) return null;
    const card = el("section", {class: "card", id: "overview"});
    card.append(el("div", {class: "row"}, el("h2", {}, "Who leads, and how sure"),
      el("span", {class: "sub"}, "per rule (rows) and perturbation (columns): the leader, and the systems the bootstrap " +
        `cannot separate from it at ${Math.round(100 * s.level)}%`)));
    card.append(el("div", {class: "legend"}, el("span", {}, el("span", {class: "chip lead"}, "leader")),
      el("span", {}, el("span", {class: "chip tied"}, "tied with the leader")),
      el("span", {}, "full data: the rule's ranking of all the scores")));
    const inputs = [...new Set(boots.map(g => g.input))];
    for (const inp of inputs) {
      const gs = boots.filter(g => g.input === inp);
      const rules = [...new Set(gs.flatMap(g => g.rules.map(r => r.rule)))];
      const t = el("table", {class: "ov"});
      const head = el("tr", {}, el("th", {}, inputs.length > 1 ? `${inp}: rule` : "rule"), el("th", {}, "full data"));
      gs.forEach(g => head.append(el("th", {}, `bootstrap over ${overLabel(g)}`, el("div", {class: "sub"},
        `${g.replicates_done.toLocaleString()} / ${g.replicates_total.toLocaleString()} replicates`))));
      t.append(head);
      for (const rule of rules) {
        const tr = el("tr", {}, el("th", {}, rule));
        const first = gs.map(g => g.rules.find(r => r.rule === rule)).find(r => r);
        tr.append(el("td", {}, ...chips(names(gs[0], first.leader), "lead", 3)));
        for (const g of gs) {
          const r = g.rules.find(x => x.rule === rule);
          if (!r) { tr.append(el("td", {class: "wait"}, "–")); continue; }
          if (!r.replicates_done) { tr.append(el("td", {class: "wait"}, "waiting for replicates")); continue; }
          const td = el("td", {}, ...chips(names(g, r.leader), "lead", 3));
          if (r.tied.length) td.append(el("div", {}, ...chips(names(g, r.tied), "tied", 4)));
          else td.append(el("div", {class: "sub"}, "no system tied with it"));
          tr.append(td);
        }
        t.append(tr);
      }
      card.append(el("div", {class: "tablewrap"}, t));
    }
    return card;
  }

  // ------------------------------------------------------------------ leaderboard
  function intervalOf(g, r, i) {
    if (g.interval === "pairwise") return [r.pair_low[i], r.pair_high[i]];
    return [r.rank_low[i], r.rank_high[i]];
  }
  function ivText(lo, hi) { return lo === null ? "–" : (lo === hi ? fmtRank(lo) : `${fmtRank(lo)}–${fmtRank(hi)}`); }
  function explainInterval(g, level) {
    const lo = (50 * (1 - level)).toFixed(1), hi = (50 * (1 + level)).toFixed(1);
    if (g.interval === "pairwise") {
      return `Bootstrap over candidates: each replicate ranks only the systems it drew, so its ranks are biased toward 1 ` +
        `and percentile intervals would not contain the systems' own ranks. The interval shown is the range of ranks ` +
        `allowed by the pairwise orders the bootstrap is sure about: from 1 + the systems that score above this one in ` +
        `≥ ${Math.round(100 * level)}% of the replicates drawing both, to N − the systems it beats in ≥ ` +
        `${Math.round(100 * level)}% of them (whole ranks).`;
    }
    return `Interval: the ${lo}–${hi} percentiles of the system's rank over the replicates done, interpolated between ` +
      `replicate ranks (numpy's linear method), so a bound can fall between two whole ranks. Bar: interval; tick: ` +
      `full-data rank.`;
  }
  function boardGroup(s) {
    const boots = s.groups.filter(g => g.kind === "bootstrap");
    if (!boots.length) return null;
    let g = boots.find(x => x.name === ui.group);
    if (!g) { g = boots.find(x => x.over !== "systems") || boots[0]; ui.group = g.name; }
    return {g, boots};
  }
  function sortedRows(g) {
    const S = g.systems.length;
    const key = ui.sort || "0:rank";
    const rows = [...Array(S).keys()];
    const big = Number.POSITIVE_INFINITY;
    let val;
    if (key === "name") val = i => g.systems[i].toLowerCase();
    else {
      const [ri, what] = key.split(":");
      const r = g.rules[Number(ri)];
      if (what === "rank") val = i => r.rank[i] === null ? big : r.rank[i];
      else if (what === "score") val = i => r.score[i] === null ? big : -r.score[i];
      else val = i => { const [lo, hi] = intervalOf(g, r, i); return lo === null ? big : lo * 1e6 + hi; };
    }
    rows.sort((a, b) => {
      const va = val(a), vb = val(b);
      let c = va < vb ? -1 : va > vb ? 1 : 0;
      if (ui.desc) c = -c;
      return c || g.systems[a].localeCompare(g.systems[b]);
    });
    return rows;
  }
  function ivCell(g, r, i) {
    const [lo, hi] = intervalOf(g, r, i);
    const td = el("td", {class: "iv"});
    const n = g.n_systems;
    const bar = el("span", {class: "ivbar" + (r.leader.includes(i) ? " lead" : r.tied.includes(i) ? " tied" : "")});
    if (lo !== null) {
      const x = v => 100 * (n <= 1 ? 0.5 : (v - 1) / (n - 1));
      const seg = el("i"); seg.style.left = x(lo).toFixed(1) + "%"; seg.style.width = Math.max(2, x(hi) - x(lo)).toFixed(1) + "%";
      bar.append(seg);
    }
    if (r.rank[i] !== null) { const tick = el("b"); tick.style.left = (100 * (n <= 1 ? 0.5 : (r.rank[i] - 1) / (n - 1))).toFixed(1) + "%"; bar.append(tick); }
    td.append(bar, ivText(lo, hi));
    return td;
  }
  function rankCell(r, i, counts) {
    const v = r.rank[i];
    const td = el("td", {}, v === null ? "–" : String(v) + (counts.get(v) > 1 ? "=" : ""));
    if (r.leader.includes(i)) td.append(el("span", {class: "badge lead", title: "leader (rank 1)"}, "★"));
    else if (r.tied.includes(i)) td.append(el("span", {class: "badge tied", title: "tied with the leader: the bootstrap cannot separate it from the leader"}, "≈"));
    return td;
  }
  function boardTable(g) {
    const t = el("table", {class: "lb"});
    const h1 = el("tr", {}, el("th", {colspan: 2}, ""));
    const h2 = el("tr", {});
    const th = (label, key, cls, title) => {
      const e = el("th", {class: ["sortable", cls, ui.sort === key || (!ui.sort && key === "0:rank") ? "sorted" : "",
                                  ui.desc && (ui.sort === key) ? "desc" : ""].filter(Boolean).join(" "), title}, label);
      e.addEventListener("click", () => {
        if ((ui.sort || "0:rank") === key) ui.desc = !ui.desc; else { ui.sort = key; ui.desc = false; }
        renderBoard();
      });
      return e;
    };
    h2.append(el("th", {title: "position in the current order"}, "#"), th("system", "name", "name"));
    const ivLabel = g.interval === "pairwise" ? "rank range" : `${Math.round(100 * ui.snap.level)}% interval`;
    g.rules.forEach((r, ri) => {
      h1.append(el("th", {colspan: 3, class: "group"}, r.rule));
      h2.append(th("score", `${ri}:score`, "first", "the rule's aggregate score on the full data (higher is better)"),
        th("rank", `${ri}:rank`, "", "full-data rank ('=' marks ties)"),
        th(ivLabel, `${ri}:iv`, "", explainInterval(g, ui.snap.level)));
    });
    t.append(el("thead", {}, h1, h2));
    const body = el("tbody");
    const q = ui.query.trim().toLowerCase();
    let rows = sortedRows(g);
    if (q) rows = rows.filter(i => g.systems[i].toLowerCase().includes(q));
    const total = rows.length;
    if (!q && !ui.showAll) rows = rows.slice(0, TOP_K);
    const counts = g.rules.map(r => { const m = new Map(); r.rank.forEach(v => m.set(v, (m.get(v) || 0) + 1)); return m; });
    rows.forEach((i, pos) => {
      const lead0 = g.rules.length && g.rules[0].leader.includes(i);
      const tr = el("tr", {class: "sys" + (lead0 ? " is-leader" : "") + (ui.open.has(g.systems[i]) ? " open" : ""),
                           "data-system": g.systems[i], title: "click for the per-task scores"});
      tr.append(el("td", {class: "sub"}, String(pos + 1)), el("td", {class: "name"}, g.systems[i]));
      g.rules.forEach((r, ri) => {
        tr.append(el("td", {class: "first"}, fmtScore(r.score[i])), rankCell(r, i, counts[ri]), ivCell(g, r, i));
      });
      tr.addEventListener("click", () => toggleTasks(g, g.systems[i]));
      body.append(tr);
      if (ui.open.has(g.systems[i])) {
        body.append(el("tr", {class: "detail"}, el("td", {colspan: 2 + 3 * g.rules.length, class: "detail"}, tasksView(g, g.systems[i]))));
      }
    });
    t.append(body);
    return {table: t, shown: rows.length, total};
  }
  function tasksView(g, system) {
    const key = `${g.input}\u0000${system}`;
    const got = ui.tasks.get(key);
    if (!got) return el("span", {class: "sub"}, "loading the per-task scores…");
    if (got.error) return el("span", {class: "note"}, got.error);
    const t = el("table", {class: "tasks"}, el("tr", {}, el("th", {}, "task"), el("th", {}, "score"), el("th", {}, "better"),
      el("th", {}, "rank on the task")));
    got.tasks.forEach(d => t.append(el("tr", {}, el("td", {}, d.task), el("td", {}, fmtScore(d.score)),
      el("td", {title: d.direction_assumed ? "no sidecar or lower_is_better gave this direction: higher is better was assumed" : null},
         (d.higher_is_better ? "↑ higher" : "↓ lower") + (d.direction_assumed ? " (assumed)" : "")),
      el("td", {}, d.rank === null ? "–" : `${d.rank} / ${d.ranked}`))));
    return el("div", {}, el("div", {class: "sub"}, `${system} on ${got.source}: ${got.note}`), t);
  }
  async function toggleTasks(g, system) {
    if (ui.open.has(system)) { ui.open.delete(system); renderBoard(); return; }
    ui.open.add(system);
    renderBoard();
    const key = `${g.input}\u0000${system}`;
    if (ui.tasks.has(key)) return;
    try {
      const r = await fetch(`api/scores?input=${encodeURIComponent(g.input)}&system=${encodeURIComponent(system)}`,
                            {cache: "no-store"});
      ui.tasks.set(key, await r.json());
    } catch (e) {
      ui.tasks.set(key, {error: "cannot reach the server"});
    }
    renderBoard();
  }
  function stabilityLine(g) {
    const box = el("div", {class: "stats"});
    g.rules.forEach(r => box.append(el("span", {}, el("b", {}, r.rule), ": ",
      el("span", {title: "Kendall's W of the replicate rankings (1 = every replicate ranks alike), over the systems present in every replicate"},
         "Kendall W ", el("b", {}, r.kendall_w === null && g.over === "systems" && r.replicates_done > 1 ?
           "n/a (no system is in every replicate)" : fmt(r.kendall_w))), " · ",
      el("span", {title: `mean Spearman correlation between two replicate rankings, over ${r.spearman_over}`},
         "mean Spearman ", el("b", {}, fmt(r.mean_spearman)),
         r.spearman_replicates < r.replicates_done ? ` (${r.spearman_replicates} replicates)` : ""), " · ",
      el("span", {title: "share of the replicates (holding both) that keep the full-data order of a pair of systems, averaged over pairs"},
         "pair orders kept ", el("b", {}, r.order_stability === null ? "–" : (100 * r.order_stability).toFixed(1) + "%")))));
    return box;
  }
  // ------------------------------------------------------------------ letter groups (paired tests, on demand)
  function alignedLetters(list) {  // one column per letter, so shared letters line up (past 26 letters: as given)
    if (list.some(s => s.includes("z") || new Set(s).size !== s.length)) return list;
    const cols = [...new Set(list.join(""))].sort();
    return list.map(s => cols.map(c => (s.includes(c) ? c : " ")).join("").trimEnd());
  }
  function lettersText(d) {
    const n = d.systems.length, pairs = d.pairs.length, diff = d.pairs.filter(p => p.different).length;
    const who = n < d.candidates ? `the ${n} best of ${d.candidates} systems by mean score` : `all ${n} systems`;
    const how = d.level === "instance"
      ? `paired permutation test of the mean difference (${d.resamples} sign patterns per pair, seed ${d.seed}), ` +
        `p-values Holm-adjusted over the ${pairs} pairs`
      : `one score per task: ${d.method} over ${d.n_tasks} tasks (${d.reason})`;
    return `${who}; ${how}; alpha = ${d.alpha}. ${diff} of ${pairs} pairs differ significantly. ` +
      "Systems sharing a letter are not significantly different; two systems with no letter in common are.";
  }
  function lettersView(g) {
    const box = el("div", {class: "letters", id: "letters"});
    const got = ui.letters.get(g.input);
    if (!got) {
      const b = el("button", {type: "button", id: "letters-button"}, "letter groups (paired tests of the best systems)");
      b.addEventListener("click", () => loadLetters(g));
      box.append(b, el("span", {class: "sub"}, ` · computed once for input ${g.input}, from its scores`));
      return box;
    }
    if (got.loading) return el("div", {class: "letters sub", id: "letters"}, "computing the paired tests…");
    if (got.error) return el("div", {class: "letters note", id: "letters"}, got.error);
    const letters = alignedLetters(got.letters);
    const t = el("table", {class: "tasks"}, el("tr", {}, el("th", {}, "system"), el("th", {}, "mean"), el("th", {}, "letters")));
    got.systems.forEach((s, i) => t.append(el("tr", {}, el("td", {}, s), el("td", {}, fmtScore(got.mean[i])),
      el("td", {class: "cld"}, letters[i]))));
    box.append(el("h3", {}, `Letter groups · ${got.input}`), el("div", {class: "explain"}, lettersText(got)),
               ...got.notes.map(n => el("div", {class: "note"}, n)), t);
    return box;
  }
  async function loadLetters(g) {
    ui.letters.set(g.input, {loading: true});
    renderBoard();
    try {
      const r = await fetch(`api/letters?input=${encodeURIComponent(g.input)}`, {cache: "no-store"});
      ui.letters.set(g.input, await r.json());
    } catch (e) {
      ui.letters.set(g.input, {error: "cannot reach the server"});
    }
    renderBoard();
  }
  function renderBoard() {
    const s = ui.snap;
    const host = $("board");
    if (!s || !host) return;
    const got = boardGroup(s);
    if (!got) { host.replaceChildren(); return; }
    const {g, boots} = got;
    const head = el("div", {class: "row"}, el("h2", {}, "Leaderboard"),
      el("span", {class: "sub"}, `${g.name} · bootstrap over ${overLabel(g)} · ${plural(g.n_systems, "system")} · ` +
        `${g.replicates_done.toLocaleString()} / ${g.replicates_total.toLocaleString()} replicates`),
      el("div", {class: "bar small"}, width(el("div"), pct(g.blocks_done, g.blocks_total))));
    const controls = $("board-controls") || el("div", {class: "controls", id: "board-controls"});
    if (!controls.childElementCount) {
      const search = el("input", {type: "search", id: "search", placeholder: "search systems", "aria-label": "search systems"});
      search.addEventListener("input", () => { ui.query = search.value; renderBoard(); });
      const more = el("button", {id: "show-all", type: "button"});
      more.addEventListener("click", () => { ui.showAll = !ui.showAll; renderBoard(); });
      const pick = el("select", {id: "group-select", "aria-label": "bootstrap group"});
      pick.addEventListener("change", () => { ui.group = pick.value; ui.sort = null; ui.open.clear(); renderBoard(); renderBump(); });
      controls.append(search, more, pick, el("span", {class: "sub", id: "shown"}));
    }
    const pick = $("group-select") || controls.querySelector("select");
    const opts = boots.map(b => b.name);
    if ([...pick.options].map(o => o.value).join("|") !== opts.join("|")) {
      pick.replaceChildren(...boots.map(b => el("option", {value: b.name}, `${b.name} (over ${b.over})`)));
    }
    pick.value = g.name;
    pick.hidden = boots.length < 2;
    const {table, shown, total} = boardTable(g);
    const more = controls.querySelector("#show-all");
    more.textContent = ui.showAll ? `show the top ${TOP_K}` : `show all ${g.n_systems}`;
    more.hidden = g.n_systems <= TOP_K || Boolean(ui.query.trim());
    controls.querySelector("#shown").textContent = ui.query.trim() ? `${total} matching` :
      `showing ${shown} of ${g.n_systems} · click a column to sort, a system for its per-task scores`;
    const legend = el("div", {class: "legend"},
      el("span", {}, el("span", {class: "badge lead"}, "★"), " leader"),
      el("span", {}, el("span", {class: "badge tied"}, "≈"), ` tied with the leader: the leader scores above it in fewer than ${Math.round(100 * s.level)}% of the replicates`),
      el("span", {}, "'=' shared rank"));
    const parts = [head, controls, legend, el("div", {class: "explain"}, explainInterval(g, s.level)),
                   el("div", {class: "tablewrap"}, table), stabilityLine(g), lettersView(g)];
    const src = g.rules.find(r => r.ranking_source !== "full data");
    if (src) parts.push(el("div", {class: "note"}, `ranked by ${src.ranking_source} (no full-data ranking in the store)`));
    host.replaceChildren(...parts);
  }

  // ------------------------------------------------------------------ bump chart
  function renderBump() {
    const s = ui.snap;
    const host = $("bump");
    if (!s || !host) return;
    const got = boardGroup(s);
    if (!got || got.g.rules.length < 2) { host.replaceChildren(); host.hidden = true; return; }
    host.hidden = false;
    const g = got.g;
    const ri0 = ui.sort && ui.sort !== "name" ? Number(ui.sort.split(":")[0]) : 0;
    const base = g.rules[ri0];
    const order = [...g.systems.keys()].filter(i => base.rank[i] !== null)
      .sort((a, b) => base.rank[a] - base.rank[b] || g.systems[a].localeCompare(g.systems[b]));
    const shown = order.slice(0, Math.min(BUMP_K, order.length));
    const K = shown.length;
    const R = g.rules.length;
    // y = rank + position among the systems tied at that rank: competition ranks skip the places ties take, so no
    // two systems share a row; ranks beyond `cap` go to one row at the bottom
    const worst = Math.max(...shown.flatMap(i => g.rules.map(r => (r.rank[i] === null ? 0 : r.rank[i]))));
    const cap = Math.min(g.n_systems, Math.max(K, Math.min(worst + 1, 2 * K)));
    const rows = Math.min(worst, cap) + (worst > cap ? 1 : 0);
    const nameW = 200, top = 30, rowH = 21, colW = Math.max(130, Math.min(230, 660 / Math.max(1, R - 1)));
    const W = nameW + colW * (R - 1) + nameW + 20, H = top + rows * rowH + 8;
    const x = ri => nameW + 10 + ri * colW;
    const yOf = slot => top + (slot - 0.5) * rowH;
    const pos = new Map();
    g.rules.forEach((r, ri) => {
      const seen = new Map();
      shown.map(i => [i, r.rank[i]]).sort((a, b) => (a[1] ?? 1e9) - (b[1] ?? 1e9) || g.systems[a[0]].localeCompare(g.systems[b[0]]))
        .forEach(([i, v]) => {
          if (v === null || v > cap) { const k = seen.get("low") || 0; seen.set("low", k + 1); pos.set(`${ri}:${i}`, yOf(rows) + k * 3); return; }
          const k = seen.get(v) || 0; seen.set(v, k + 1);
          pos.set(`${ri}:${i}`, yOf(Math.min(v + k, cap)));
        });
    });
    const counts = g.rules.map(r => { const m = new Map(); r.rank.forEach(v => m.set(v, (m.get(v) || 0) + 1)); return m; });
    const rankText = (ri, i) => { const v = g.rules[ri].rank[i]; return v === null ? "–" : v > cap ? `${v}` : String(v) + (counts[ri].get(v) > 1 ? "=" : ""); };
    const svg = sv("svg", {class: "bump", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "ranks of the top systems under every rule"});
    svg.style.maxWidth = W + "px";
    const axis = sv("g", {class: "axis"});
    for (let k = 1; k <= rows; k++) {
      if (k % 2 === 1) axis.append(sv("rect", {x: x(0) - 6, y: top + (k - 1) * rowH, width: colW * (R - 1) + 12, height: rowH, fill: "#f7f8fa"}));
    }
    g.rules.forEach((r, ri) => {
      axis.append(sv("line", {x1: x(ri), x2: x(ri), y1: top - 4, y2: H - 4, stroke: "#d9dde4"}));
      axis.append(sv("text", {x: x(ri), y: 16, "text-anchor": "middle", "font-weight": 600}, r.rule));
    });
    if (worst > cap) axis.append(sv("text", {x: x(0) - 10, y: yOf(rows) + 4, "text-anchor": "end"}, `below ${cap}`));
    svg.append(axis);
    shown.forEach((i, k) => {
      const color = PALETTE[k % PALETTE.length], dash = DASHES[Math.floor(k / PALETTE.length) % DASHES.length];
      const grp = sv("g", {class: "sysline"});
      const pts = g.rules.map((r, ri) => [x(ri), pos.get(`${ri}:${i}`)]);
      grp.append(sv("path", {class: "line", d: "M" + pts.map(p => p.join(",")).join("L"), stroke: color,
                             "stroke-dasharray": dash || null}));
      g.rules.forEach((r, ri) => grp.append(sv("circle", {cx: pts[ri][0], cy: pts[ri][1], r: r.leader.includes(i) ? 6 : 4,
        fill: r.leader.includes(i) ? color : "#fff", stroke: color, "stroke-width": 2})));
      const name = g.systems[i].length > 22 ? g.systems[i].slice(0, 21) + "…" : g.systems[i];
      grp.append(sv("text", {x: x(0) - 10, y: pts[0][1] + 4, "text-anchor": "end"}, `${name}  ${rankText(0, i)}`));
      grp.append(sv("text", {x: x(R - 1) + 10, y: pts[R - 1][1] + 4}, `${rankText(R - 1, i)}  ${name}`));
      grp.append(sv("title", {}, `${g.systems[i]}\n` + g.rules.map((r, ri) => `${r.rule}: rank ${rankText(ri, i)}`).join("\n")));
      svg.append(grp);
    });
    host.replaceChildren(
      el("div", {class: "row"}, el("h2", {}, "Rank changes across rules"),
        el("span", {class: "sub"}, `the top ${K} systems of ${base.rule} (sort the leaderboard by another rule's rank to change); ` +
          "rank 1 at the top, '=' tied; filled dot = leader under that rule; hover a line to follow it")),
      svg);
  }

  // ------------------------------------------------------------------ agreement, other groups
  function matrix(agr, key, title, note) {
    const t = el("table", {class: "m"});
    const head = el("tr", {}, el("th", {}, ""));
    agr.rules.forEach(r => head.append(el("th", {}, r)));
    t.append(head);
    agr.rules.forEach((r, i) => {
      const tr = el("tr", {}, el("th", {}, r));
      agr[key][i].forEach((v, j) => {
        const td = el("td", {}, i === j ? "·" : fmt(v));
        td.style.background = i === j ? "#f2f4f7" : tauColor(v);
        if (key === "replicates" && i !== j) td.title = `${agr.common_replicates[i][j]} common replicates`;
        tr.append(td);
      });
      t.append(tr);
    });
    return el("div", {}, el("div", {class: "mtitle"}, title), t, el("div", {class: "sub"}, note));
  }
  function agreementCard(s) {
    const boots = s.groups.filter(g => g.kind === "bootstrap" && g.agreement.rules.length >= 2);
    if (!boots.length) return null;
    const card = el("section", {class: "card", id: "agreement"}, el("h2", {}, "Agreement between rules (Kendall τ-b)"));
    for (const g of boots) {
      card.append(el("h3", {}, `${g.name} (bootstrap over ${overLabel(g)})`),
        el("div", {class: "mats"},
          matrix(g.agreement, "full_data", "full-data rankings", "τ between the rules' rankings of all the scores"),
          matrix(g.agreement, "replicates", "per replicate (mean)",
            "mean τ over up to 10 replicates of every block both rules have done (hover: how many)")));
    }
    return card;
  }
  function head(g, what, done) {
    return el("div", {class: "row"}, el("h2", {}, g.name), el("span", {class: "sub"}, what),
      el("div", {class: "bar small"}, width(el("div"), pct(g.blocks_done, g.blocks_total))), el("span", {class: "sub"}, done));
  }
  // a table of coloured cells: corner and column headers, then one row per [label, [[value, shade, title], ...]]
  function heatTable(corner, columns, rows) {
    const t = el("table", {class: "m"});
    const h = el("tr", {}, el("th", {}, corner));
    columns.forEach(s => h.append(el("th", {}, s)));
    t.append(h);
    rows.forEach(([label, cells]) => {
      const tr = el("tr", {}, el("th", {}, label));
      cells.forEach(([v, shade, title]) => {
        const td = el("td", {}, fmt(v));
        td.style.background = tauColor(shade);
        td.title = title;
        tr.append(td);
      });
      t.append(tr);
    });
    return t;
  }
  function subsetsCard(g) {
    const c = el("section", {class: "card", "data-group": g.name});
    c.append(head(g, `task subsets · ${g.repeats} repeats per size`, `${g.blocks_done} / ${g.blocks_total} blocks`));
    const t = heatTable("rule \\ tasks in the subset", g.sizes, g.rules.map(r => [r.rule, r.mean_tau.map((v, i) =>
      [v, v, `${r.repeats_done[i]} repeats; std ${fmt(r.std_tau[i])}`])]));
    c.append(el("div", {class: "explain"}, "mean Kendall τ-b between the ranking on a random subset of the tasks and the ranking on all of them (1 = same order)"), t);
    return c;
  }
  function curveCard(g) {
    const c = el("section", {class: "card", "data-group": g.name});
    const what = g.kind === "manipulation" ? "corrupted tasks" : "rescaling factor";
    c.append(head(g, `synthetic ${g.kind} (Colombo et al. 2022) · ${g.repeats} replicates`, `${g.blocks_done} / ${g.blocks_total} blocks`));
    const t = heatTable(`rule · φ \\ ${what}`, g.values, g.rows.map(r => [`${r.rule} · ${r.phi}`, r.mean_error.map(v =>
      [v, v === null ? null : 1 - 2 * v, `${r.repeats_done} replicates`])]));
    c.append(el("div", {class: "explain"}, "mean normalized Kendall distance between the aggregated ranking and the ground truth (0 = perfect)"), t);
    return c;
  }
  function gridCard(g) {
    const c = el("section", {class: "card", "data-group": g.name});
    c.append(head(g, `parameter grid of ${g.rule}`, `${g.blocks_done} / ${g.blocks_total} points`));
    const t = el("table", {class: "m"}, el("tr", {}, el("th", {}, "point"), el("th", {}, "leader")));
    g.points.forEach(p => t.append(el("tr", {}, el("td", {}, p.point), el("td", {}, p.done ? p.leader.join(", ") : "…"))));
    c.append(t);
    return c;
  }

  function otherCard(g) {  // a perturbation kind this page has no view of: its progress, and where its numbers are
    const c = el("section", {class: "card", "data-group": g.name});
    c.append(head(g, `perturbation kind ${g.kind}`, `${g.blocks_done} / ${g.blocks_total} blocks`),
             el("div", {class: "explain"}, `this page has no view of kind ${g.kind}; its numbers are in the snapshot (api/snapshot)`));
    return c;
  }
  // the panel of each perturbation kind: a function from the group's state (its kind's GroupState.to_json) to a card;
  // a kind without an entry gets otherCard (its progress).  A new panel is one such function and one entry here.
  const CARDS = {
    subsets: subsetsCard,
    grid: gridCard,
    manipulation: curveCard,
    rescaling: curveCard,
  };

  // ------------------------------------------------------------------ render
  function render(s) {
    ui.snap = s;
    renderHeader(s);
    const main = $("groups");
    if (!s.groups.length) {
      main.replaceChildren(el("div", {class: "empty"}, s.message || "No groups in the store yet."));
      ui.built = false;
      return;
    }
    if (!ui.built) {
      main.replaceChildren(el("div", {id: "top"}), el("section", {class: "card", id: "board"}),
                           el("section", {class: "card", id: "bump"}), el("div", {id: "rest"}));
      ui.built = true;
    }
    const ov = overview(s);
    $("top").replaceChildren(...(ov ? [ov] : []));
    const boardHost = $("board");
    const hasBoot = s.groups.some(g => g.kind === "bootstrap");
    boardHost.hidden = !hasBoot;
    if (hasBoot) {
      if (!$("board-controls")) boardHost.replaceChildren();
      renderBoard();
    }
    renderBump();
    const rest = [agreementCard(s)];
    s.groups.forEach(g => rest.push(g.kind === "bootstrap" ? null : (CARDS[g.kind] || otherCard)(g)));
    $("rest").replaceChildren(...rest.filter(Boolean));
  }

  // ------------------------------------------------------------------ data flow
  function setConn(state, text) {
    const c = $("conn");
    c.className = "conn " + state;
    c.textContent = text;
  }
  async function refresh() {
    if (ui.fetching) { ui.again = true; return; }
    ui.fetching = true;
    try {
      do {
        ui.again = false;
        const r = await fetch("api/snapshot", {cache: "no-store"});
        if (r.status === 401) { setConn("down", "token required: open the URL votebench printed"); return; }
        if (!r.ok) throw new Error(String(r.status));
        const s = await r.json();
        if (s.version !== ui.version) { ui.version = s.version; render(s); }
      } while (ui.again);
    } catch (e) {
      setConn("down", "cannot reach the server");
    } finally {
      ui.fetching = false;
    }
  }
  function connect() {
    if (ui.es) ui.es.close();
    const es = new EventSource("api/stream");
    ui.es = es;
    es.onopen = () => setConn("live", "live");
    es.onmessage = ev => {
      setConn("live", "live");
      let v = null;
      try { v = JSON.parse(ev.data).version; } catch (e) { v = null; }
      if (v === null || v !== ui.version) refresh();
    };
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) {  // refused (e.g. 503: too many streams): try again later
        setConn("down", "disconnected · retrying");
        clearTimeout(ui.retry);
        ui.retry = setTimeout(connect, 5000);
      } else {
        setConn("down", "reconnecting…");
      }
    };
  }
  refresh();
  connect();
})();

/* votebench live dashboard: follows /api/stream, fetches /api/snapshot when the store changes, renders in place. */
"use strict";
(function () {
  const SVGNS = "http://www.w3.org/2000/svg";
  // Okabe & Ito (2008): distinguishable with the common colour-vision deficiencies (yellow left out: too light on white)
  // darkened (at least 4.5:1 on white, AA for text and lines alike) and told apart by dashes after the sixth
  const PALETTE = ["#0072b2", "#b34700", "#007a5a", "#a8417f", "#8a5a00", "#1b1f29"];
  const DASHES = ["", "7 4", "2 3"];
  const TOP_K = 20;
  const BAR_MAX = 100;  // the in-cell rank-interval bars are drawn for at most this many systems
  const PAGE = 1000;  // rows added at a time past the top 20: a table of thousands drawn at once freezes the page
  const BUMP_K = 12;

  const ui = {
    snap: null, version: 0, fetching: false, again: false, group: null, sort: null, desc: false, query: "",
    showAll: false, limit: PAGE, open: new Set(), tasks: new Map(), letters: new Map(), es: null, retry: null, built: false,
    counts: new Map(), skew: 0, finishedAt: null,
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
  // the decimals a rule's score column is printed with, one number for the whole column and the same while running and
  // once finished: 0 for whole scores, 1 for half points, else 1; then more until systems of different ranks print
  // different texts (87.80 and 87.78, not 87.8 twice), at most 6
  function columnDigits(r) {
    const vals = r.score.map((v, i) => [v, r.rank[i]]).filter(([v]) => v !== null && v !== undefined);
    if (!vals.length) return 1;
    if (Math.max(...vals.map(([v]) => Math.abs(v))) >= 1e7) return null;
    const start = vals.every(([v]) => Number.isInteger(v)) ? 0 : 1;
    for (let d = start; d <= 6; d++) {
      const seen = new Map();
      if (vals.every(([v, rk]) => { const t = fmtScore(v, d); const ok = !seen.has(t) || seen.get(t) === rk; seen.set(t, rk); return ok; })) return d;
    }
    return 6;
  }
  function fmtScore(x, d) {
    if (x === null || x === undefined) return "–";
    if (d === null || (d === undefined && Math.abs(x) >= 1e7)) return x.toExponential(4);
    if (d === undefined) return Number(x.toPrecision(6)).toString();
    const t = x.toFixed(d);
    return /^-0(\.0*)?$/.test(t) ? t.slice(1) : t;  // -0.4 at 0 decimals is "0", not "-0"
  }
  function fmtRank(x) {
    if (x === null || x === undefined) return "–";
    const r = Math.round(x * 10) / 10;
    return Number.isInteger(r) ? String(r) : r.toFixed(1);
  }
  function fmtTime(sec) {
    if (sec === null || sec === undefined || !isFinite(sec)) return "–";
    sec = Math.max(0, Math.round(sec));
    const h = Math.floor(sec / 3600), m = Math.floor(sec / 60) % 60, s = sec % 60;
    return h ? `${h} h ${m} min` : m ? `${m} min ${s} s` : `${s} s`;
  }
  function tiedWith(g, r, i) {  // the other systems that share system i's full-data rank under rule r
    const v = r.rank[i];
    if (v === null) return [];
    return g.systems.filter((n, j) => j !== i && r.rank[j] === v);
  }
  function listNames(names, max) {
    return names.length <= max ? names.join(", ") : `${names.slice(0, max).join(", ")} and ${names.length - max} more`;
  }
  // ------------------------------------------------------------------ export (what a table shows) as CSV or JSON
  // a table as machine-readable columns: headers without separators (the column group as a prefix), an interval cell
  // (data-lo / data-hi) as two columns "<header> low" and "<header> high", the text of numbers as numbers
  function tableMatrix(t) {
    const head = [...t.querySelectorAll("thead tr")];
    const bodyRows = [...t.querySelectorAll("tr")].filter(tr => tr.closest("table") === t && !tr.closest("thead") && !tr.classList.contains("detail"));
    const text = c => (c.dataset.x !== undefined ? c.dataset.x : c.textContent).replace(/\s+/g, " ").trim();
    let cols = [];
    if (head.length) {
      const grid = head.map(tr => { const row = []; [...tr.children].forEach(c => { for (let k = 0; k < (c.colSpan || 1); k++) row.push(text(c)); }); return row; });
      cols = grid[grid.length - 1].map((last, j) => grid.slice(0, -1).map(r => r[j] || "").filter(u => u && !last.includes(u)).concat([last]).join(" ").trim());
    } else if (bodyRows.length) {
      cols = [...bodyRows[0].children].map(text);
      bodyRows.shift();
    }
    // a rank cell (data-tied) becomes two columns: "<header>" the rank as a number and "<header> tied" true / false
    const kindOf = c => (c.dataset.lo !== undefined ? "iv" : c.dataset.tied !== undefined ? "tie" : "");
    const split = bodyRows.length ? [...bodyRows[0].children].map(kindOf) : [];
    const first = bodyRows.length ? [...bodyRows[0].children] : [];
    const outCols = cols.flatMap((c, j) => (split[j] === "iv" ? (first[j].dataset.names ? first[j].dataset.names.split("|") : [`${c} low`, `${c} high`])
      : split[j] === "tie" ? [c, `${c} tied`] : [c]));
    const rows = bodyRows.map(tr => [...tr.children].flatMap((c, j) => (split[j] === "iv" ? [c.dataset.lo, c.dataset.hi]
      : split[j] === "tie" ? [c.dataset.n, c.dataset.tied] : [text(c)])));
    return {cols: outCols, rows};
  }
  function asValue(v) {  // "1,234" -> 1234, "0.50" -> 0.5, "true" -> true, "" / "–" -> null; anything else stays text
    if (v === undefined || v === "" || v === "–") return null;
    if (v === "true" || v === "false") return v === "true";
    const t = String(v).replace(/,/g, "");
    return /^-?\d+(\.\d+)?(e-?\d+)?$/.test(t) ? Number(t) : v;
  }
  function download(name, type, data) {
    const a = el("a", {href: URL.createObjectURL(new Blob([data], {type})), download: name});
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }
  function exportButtons(getTable, name, label) {
    const csv = c => (/[",\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c);
    const b1 = el("button", {type: "button", class: "export", "data-export": "csv", "aria-label": `download ${label} as CSV`}, "CSV");
    const b2 = el("button", {type: "button", class: "export", "data-export": "json", "aria-label": `download ${label} as JSON`}, "JSON");
    b1.addEventListener("click", () => {
      const {cols, rows} = tableMatrix(getTable());
      download(`${name}.csv`, "text/csv", [cols, ...rows].map(r => r.map(v => csv(v === undefined || v === "–" ? "" : String(v))).join(",")).join("\n") + "\n");
    });
    b2.addEventListener("click", () => {
      const {cols, rows} = tableMatrix(getTable());
      download(`${name}.json`, "application/json", JSON.stringify(rows.map(r => Object.fromEntries(cols.map((c, j) => [c || `column ${j + 1}`, asValue(r[j])]))), null, 1));
    });
    return el("span", {class: "exports"}, el("span", {class: "sub"}, "download: "), b1, " ", b2);
  }
  function slug(s) { return String(s).replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 80); }
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
  function replicatesText(gs) {  // "3,000 replicates x 3 rules: 9,000 / 9,000 done"
    const boots = gs.filter(g => g.kind === "bootstrap");
    if (!boots.length) return null;
    const done = boots.reduce((a, g) => a + g.replicates_done, 0), total = boots.reduce((a, g) => a + g.replicates_total, 0);
    const shape = [...new Set(boots.map(g => `${g.replicates.toLocaleString()} replicates × ${plural(g.rules.length, "rule")}`))];
    const what = boots.length === 1 ? `bootstrap ${shape[0]}` : `${boots.length} bootstrap groups (${shape.join("; ")})`;
    return `${what}: ${done.toLocaleString()} / ${total.toLocaleString()} rule-replicates done`;
  }
  function renderClock() {
    const s = ui.snap;
    const box = $("clock");
    if (!s || !box || !s.timing) return;
    const t = s.timing;
    const now = Date.now() / 1000 - ui.skew;
    const elapsed = now - t.started;
    const parts = [];
    if (s.status === "partial" || (s.status === "waiting" && t.run)) {
      parts.push(`${t.run ? "running for" : "watched for"} ${fmtTime(elapsed)}`);
      if (t.eta_seconds !== null && t.eta_seconds !== undefined) {
        const left = t.eta_seconds - (now - t.now);
        const basis = `the measured rate of the ${plural(t.blocks_since, "block")} finished ${t.run ? "in this run" : "while watched"}, weighted by their cost`;
        const rough = (t.eta_untimed || []).length ? `; rough until a ${t.eta_untimed.join(" and a ")} block has finished` : "";
        parts.push(left > 0 ? `estimated ${fmtTime(left)} left (${basis}${rough})` : `past the estimate (${basis}); waiting for the next block`);
      } else if (s.status === "partial") parts.push("time left: after the next block");
    } else if (s.status === "complete" && t.run && ui.sawRunning && ui.finishedAt) {
      parts.push(`finished; the run took about ${fmtTime(ui.finishedAt - t.started)}`);
    }
    box.textContent = parts.join(" · ");
  }
  function renderHeader(s) {
    const p = s.progress;
    const status = $("status");
    status.className = "pill " + s.status;
    status.textContent = s.status === "partial" ? "in progress" : s.status;
    announce("status", `run ${status.textContent}`);
    width($("bar-fill"), 100 * p.fraction);
    $("bar").setAttribute("aria-valuenow", String(Math.floor(100 * p.fraction)));
    // one progress measure, labelled: the blocks of every group (what the bar shows); the bootstrap's replicates apart
    const parts = [`progress: ${p.blocks_done.toLocaleString()} / ${p.blocks_total.toLocaleString()} blocks (${Math.floor(100 * p.fraction)}%, all groups)`];
    const reps = replicatesText(s.groups);
    if (reps) parts.push(reps);
    $("progress-text").textContent = parts.join(" · ");
    if (s.timing) {
      ui.skew = Date.now() / 1000 - s.timing.now;
      if (s.status === "complete" && !ui.finishedAt) ui.finishedAt = s.timing.now;
      if (s.status !== "complete") { ui.finishedAt = null; ui.sawRunning = true; }
    }
    renderClock();
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
    const chip = n => el("span", {class: "chip " + cls, title: n}, n.length > 28 ? n.slice(0, 27) + "…" : n);
    const out = list.slice(0, max).map(chip);
    if (list.length > max) {  // the rest behind a native disclosure: keyboard and screen readers reach it, not only hover
      out.push(el("details", {class: "more"}, el("summary", {}, `+${list.length - max} more`), ...list.slice(max).map(chip)));
    }
    return out;
  }
  function degenerateMark(r) {
    return r && r.degenerate ? el("span", {class: "degen", title: `degenerate ranking: ${r.degenerate.why}`}, "⚠ degenerate") : null;
  }
  function scaleFlagged(input, r) {  // the rule averages raw scores of tasks on mixed scales (from /api/counts)
    const c = ui.counts.get(input);
    return Boolean(r && c && c.scale_warning && (c.scale_rules || []).includes(r.rule.split("(")[0]));
  }
  function scaleMark(input, r) {
    return scaleFlagged(input, r) ? el("span", {class: "degen", title: `mixed scales: ${ui.counts.get(input).scale_warning}`}, "⚠ mixed scales") : null;
  }
  function overview(s) {
    const boots = s.groups.filter(g => g.kind === "bootstrap");
    if (!boots.length) return null;
    const card = el("section", {class: "card", id: "overview", "aria-labelledby": "overview-h"});
    card.append(el("div", {class: "row"}, el("h2", {id: "overview-h"}, "Who leads, and how sure"),
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
      const head = el("tr", {}, el("th", {scope: "col"}, inputs.length > 1 ? `${inp}: rule` : "rule"), el("th", {scope: "col"}, "full data"));
      gs.forEach(g => {
        const d = g.rules.map(r => r.replicates_done), lo = Math.min(...d), hi = Math.max(...d);
        head.append(el("th", {scope: "col"}, `bootstrap over ${overLabel(g)}`, el("div", {class: "sub"},
          `${g.replicates.toLocaleString()} replicates per rule, ${lo === hi ? lo.toLocaleString() : `${lo.toLocaleString()}–${hi.toLocaleString()}`} done`)));
      });
      t.append(el("thead", {}, head));
      const body = el("tbody");
      for (const rule of rules) {
        const first = gs.map(g => g.rules.find(r => r.rule === rule)).find(r => r);
        const tr = el("tr", {}, el("th", {scope: "row", "data-x": rule}, rule, " ", degenerateMark(first), " ", scaleMark(inp, first)));
        tr.append(el("td", {"data-x": names(gs[0], first.leader).join("; ")}, ...chips(names(gs[0], first.leader), "lead", 3)));
        for (const g of gs) {
          const r = g.rules.find(x => x.rule === rule);
          if (!r) { tr.append(el("td", {class: "wait"}, "–")); continue; }
          if (!r.replicates_done) { tr.append(el("td", {class: "wait"}, "waiting for replicates")); continue; }
          const led = names(g, r.leader), tied = names(g, r.tied);
          const td = el("td", {"data-x": `leader: ${led.join("; ")}; tied with it: ${tied.join("; ") || "none"}`}, ...chips(led, "lead", 3));
          if (tied.length) td.append(el("div", {}, ...chips(tied, "tied", 4)));
          else td.append(el("div", {class: "sub"}, "no system tied with it"));
          tr.append(td);
        }
        body.append(tr);
      }
      t.append(body);
      card.append(el("div", {class: "row"}, exportButtons(() => t, `overview_${slug(inp)}`, "the overview table")),
                  scrollBox(t, `who leads on ${inp}`, "tablewrap"));
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
    return `Interval: the ${lo}–${hi} percentiles of the system's rank over the replicates done, each bound a ` +
      `replicate rank, never interpolated (the rank at or below the ${lo} percentile, at or above the ${hi}: ` +
      `numpy's "lower" and "higher" methods), so bounds are whole ranks. Bar: interval; tick: full-data rank.`;
  }
  function boardGroup(s) {
    const boots = s.groups.filter(g => g.kind === "bootstrap");
    if (!boots.length) return null;
    let g = boots.find(x => x.name === ui.group);
    if (!g) { g = boots.find(x => x.over !== "systems") || boots[0]; ui.group = g.name; }
    return {g, boots};
  }
  function sortRule() { return ui.sort && ui.sort !== "name" && ui.sort !== "n" ? Number(ui.sort.split(":")[0]) : 0; }
  function sortedRows(g) {
    const S = g.systems.length;
    const key = ui.sort || "0:rank";
    const rows = [...Array(S).keys()];
    const big = Number.POSITIVE_INFINITY;
    const cnt = ui.counts.get(g.input);
    let val;
    if (key === "name") val = i => g.systems[i].toLowerCase();
    else if (key === "n") val = i => (cnt && cnt.byName ? -(cnt.byName.get(g.systems[i]) || [0, 0])[1] : 0);
    else {
      const [ri, what] = key.split(":");
      const r = g.rules[Number(ri)];
      if (what === "rank") val = i => r.rank[i] === null ? big : r.rank[i];
      else if (what === "score") val = i => r.score[i] === null ? big : -r.score[i];
      else if (what === "ub") val = i => r.rank_ub && r.rank_ub[i] !== null ? r.rank_ub[i] * 1e7 + (r.rank[i] === null ? 1e7 - 1 : r.rank[i]) : big;
      else val = i => { const [lo, hi] = intervalOf(g, r, i); return lo === null ? big : lo * 1e6 + hi; };
    }
    rows.sort((a, b) => {
      const va = val(a), vb = val(b);
      // systems without a value (dropped by the missing-score policy) stay last in either direction
      if ((va === big) !== (vb === big)) return va === big ? 1 : -1;
      let c = va < vb ? -1 : va > vb ? 1 : 0;
      if (ui.desc) c = -c;
      return c || g.systems[a].localeCompare(g.systems[b]);
    });
    return rows;
  }
  function ivCell(g, r, i) {
    const [lo, hi] = intervalOf(g, r, i);
    const td = el("td", {class: "iv", "data-x": ivText(lo, hi), "data-lo": lo === null ? "" : String(lo), "data-hi": hi === null ? "" : String(hi)});
    const n = g.n_systems;
    if (n > BAR_MAX) { td.append(ivText(lo, hi)); return td; }  // a 32-px bar of thousands of ranks is a dot: the numbers only
    const bar = el("span", {class: "ivbar" + (r.leader.includes(i) ? " lead" : r.tied.includes(i) ? " tied" : ""), "aria-hidden": "true"});
    if (lo !== null) {
      const x = v => 100 * (n <= 1 ? 0.5 : (v - 1) / (n - 1));
      const seg = el("i"); seg.style.left = x(lo).toFixed(1) + "%"; seg.style.width = Math.max(2, x(hi) - x(lo)).toFixed(1) + "%";
      bar.append(seg);
    }
    if (r.rank[i] !== null) { const tick = el("b"); tick.style.left = (100 * (n <= 1 ? 0.5 : (r.rank[i] - 1) / (n - 1))).toFixed(1) + "%"; bar.append(tick); }
    td.append(bar, ivText(lo, hi));
    return td;
  }
  function rankCell(g, r, i) {
    const v = r.rank[i];
    const mates = tiedWith(g, r, i);
    if (v === null) {
      return el("td", {class: "sub dropped", "data-x": "", "data-n": "", "data-tied": "", title: `not ranked by ${r.rule}: the system was dropped for missing scores (missing-score policy)`},
        "dropped");
    }
    const td = el("td", {"data-x": String(v) + (mates.length ? "=" : ""), "data-n": String(v), "data-tied": mates.length ? "true" : "false"},
      String(v) + (mates.length ? "=" : ""));
    if (mates.length) td.title = `rank ${v} shared with ${listNames(mates, 12)}`;
    if (r.leader.includes(i)) td.append(el("span", {class: "badge lead", title: "leader (rank 1)", "aria-label": "leader"}, "★"));
    else if (r.tied.includes(i)) {
      const lead = names(g, r.leader).join(", ");
      td.append(el("span", {class: "badge tied", "aria-label": `tied with the leader ${lead}`,
        title: `tied with the leader ${lead}: the bootstrap cannot separate them`}, "≈"));
    }
    return td;
  }
  function countsCell(g, i) {
    const c = ui.counts.get(g.input);
    if (!c || !c.byName) return el("td", {class: "n sub"}, c && c.error ? "n/a" : "…");
    const v = c.byName.get(g.systems[i]);
    if (!v) return el("td", {class: "n sub"}, "–");
    return el("td", {class: "n", "data-x": `${v[0]} / ${v[1]}`, "data-lo": String(v[0]), "data-hi": String(v[1]), "data-names": "judges|cells", title: `${v[0]} of ${c.n_tasks} judges (tasks) and ${v[1].toLocaleString()} scored task-instance cells`},
      `${v[0]} · ${v[1].toLocaleString()}`);
  }
  // a phone shows one rule's columns at a time (the rule the table is sorted by; the switcher above picks it)
  function narrowScreen() { return window.matchMedia("(max-width: 600px)").matches; }
  function boardTable(g, allRules) {
    const one = !allRules && narrowScreen() && g.rules.length > 1 ? sortRule() : null;
    const showRule = ri => one === null || ri === one;
    // four or more rules side by side: no in-cell bars and a narrower name column, so that the main columns fit 1440 px
    const t = el("table", {class: g.rules.filter((_, ri) => showRule(ri)).length >= 4 ? "lb many" : "lb"});
    const digits = g.rules.map(columnDigits);
    const hasScoreIv = g.rules.map(r => Array.isArray(r.score_low));
    const h1 = el("tr", {}, el("td", {class: "name corner"}, ""), el("td", {class: "n corner"}, ""));
    const h2 = el("tr", {});
    const th = (label, key, cls, title, short, rule) => {  // short: the label on a phone (an <abbr> of the full one)
      const on = (ui.sort || "0:rank") === key;
      // the direction of the values shown: a score column (and judges · cells) sorts best first = largest first
      const down = on && (ui.desc !== (/:score$/.test(key) || key === "n"));
      const e = el("th", {class: ["sortable", cls, on ? "sorted" : "", down ? "desc" : ""].filter(Boolean).join(" "),
        title, scope: "col", "aria-sort": on ? (down ? "descending" : "ascending") : null, "data-x": rule ? `${rule} ${label}` : label});
      // "Rank(UB)" may break before "(" (a <wbr>: no character added), so that four rules fit 1440 px
      const words = label.includes("(") ? [label.slice(0, label.indexOf("(")), el("wbr"), label.slice(label.indexOf("("))] : [label];
      const text = short ? [el("span", {class: "wide-label"}, ...words), el("abbr", {class: "short-label", title: label}, short)] : [label];
      // the accessible name: the visible label and, read but not shown, the rule of the column
      const b = el("button", {type: "button", class: "sortbtn", "aria-label": rule ? (short ? `${short}, ${label} (${rule})` : `${label} (${rule})`) : null}, ...text);
      b.addEventListener("click", () => {
        if ((ui.sort || "0:rank") === key) ui.desc = !ui.desc; else { ui.sort = key; ui.desc = false; }
        renderBoard(); renderBump();
        const again = document.querySelector(`th[data-key="${key}"] button`);
        if (again) again.focus();
      });
      e.setAttribute("data-key", key);
      e.addEventListener("click", ev => { if (ev.target === e) b.click(); });  // the whole header cell, not only its text
      e.append(b);
      return e;
    };
    h2.append(th("system", "name", "name"), th("judges · cells", "n", "n", "judges (tasks) with a score, and scored task-instance cells, behind the system's rank", "n"));
    const pct = `${Math.round(100 * ui.snap.level)}%`;
    const ivLabel = g.interval === "pairwise" ? "rank range" : `rank ${pct} CI`;
    g.rules.forEach((r, ri) => {
      if (!showRule(ri)) return;
      h1.append(el("th", {colspan: hasScoreIv[ri] ? 5 : 4, class: "group" + (r.degenerate ? " degenerate" : ""), scope: "colgroup",
        "data-x": r.rule, title: r.unit}, r.rule, r.degenerate ? " ⚠" : "", scaleFlagged(g.input, r) ? " " : "", scaleMark(g.input, r)));
      h2.append(th("score", `${ri}:score`, "first", `${r.unit}, on the full data (higher is better)`, "sc.", r.rule));
      if (hasScoreIv[ri]) {
        h2.append(el("th", {class: "siv", scope: "col", title: `${pct} percentile interval of the rule's score over the replicates`, "data-x": `${r.rule} score ${pct} CI`,
          "data-split": "1"}, el("span", {class: "wide-label"}, `score ${pct} CI`), el("abbr", {class: "short-label", title: `score ${pct} CI`}, "sc. CI")));
      }
      h2.append(th("rank", `${ri}:rank`, "", "full-data rank ('=' marks ties: hover or open the row for whom)", "#", r.rule),
        th(ivLabel, `${ri}:iv`, "", explainInterval(g, ui.snap.level), "CI", r.rule),
        th("Rank(UB)", `${ri}:ub`, "", `the best rank this system can claim: 1 + the systems that score above it in at least ${pct} of the bootstrap replicates (LMArena's upper bound on the rank, paired); sorted ties by rank`, "UB", r.rule));
    });
    t.append(el("thead", {}, h1, h2));
    const body = el("tbody");
    const q = ui.query.trim().toLowerCase();
    let rows = sortedRows(g);
    if (q) rows = rows.filter(i => g.systems[i].toLowerCase().includes(q));
    const total = rows.length;
    if (!q && !ui.showAll) rows = rows.slice(0, TOP_K);
    else if (!q) rows = rows.slice(0, ui.limit);
    const rs = sortRule();
    rows.forEach((i, pos) => {
      const name = g.systems[i];
      const lead0 = g.rules.length && g.rules[rs] && g.rules[rs].leader.includes(i);
      const open = ui.open.has(name);
      const tr = el("tr", {class: "sys" + (lead0 ? " is-leader" : "") + (open ? " open" : ""), "data-system": name});
      const btn = el("button", {type: "button", class: "rowbtn", "aria-expanded": open ? "true" : "false",
        title: "per-task scores and ties of " + name}, name);
      btn.addEventListener("click", ev => { ev.stopPropagation(); toggleTasks(g, name); });
      tr.append(el("td", {class: "name", "data-x": name}, el("span", {class: "pos", "aria-hidden": "true", "data-pos": String(pos + 1)}), btn),
                countsCell(g, i));
      g.rules.forEach((r, ri) => {
        if (!showRule(ri)) return;
        const scoreCell = el("td", {class: "first", "data-x": r.score[i] === null ? "" : String(r.score[i])}, fmtScore(r.score[i], digits[ri]));
        tr.append(scoreCell);
        if (hasScoreIv[ri]) {
          const lo = r.score_low[i], hi = r.score_high[i];
          const neg = lo !== null && (fmtScore(lo, digits[ri]).startsWith("-") || fmtScore(hi, digits[ri]).startsWith("-"));
          const txt = lo === null ? "–" : neg ? `${fmtScore(lo, digits[ri])} to ${fmtScore(hi, digits[ri])}` :
            `${fmtScore(lo, digits[ri])}–${fmtScore(hi, digits[ri])}`;
          // a phone shows the interval under the score (its own column is hidden there), so that no number is cut
          if (lo !== null) scoreCell.append(el("span", {class: "ci2", "aria-hidden": "true"}, txt));
          tr.append(el("td", {class: "siv", "data-x": txt, "data-lo": lo === null ? "" : String(lo),
            "data-hi": hi === null ? "" : String(hi)}, txt));
        }
        tr.append(rankCell(g, r, i), ivCell(g, r, i),
          el("td", {class: "ub"}, r.rank_ub && r.rank_ub[i] !== null ? String(r.rank_ub[i]) : "–"));
      });
      tr.addEventListener("click", () => toggleTasks(g, name));
      body.append(tr);
      if (open) {
        const span = 2 + g.rules.reduce((a, r, ri) => a + (showRule(ri) ? (hasScoreIv[ri] ? 5 : 4) : 0), 0);
        body.append(el("tr", {class: "detail"}, el("td", {colspan: span, class: "detail"}, tiesView(g, i), tasksView(g, name))));
      }
    });
    t.append(body);
    return {table: t, shown: rows.length, total};
  }
  function tiesView(g, i) {  // every rule's ties of this system, in full (no hover needed)
    const box = el("ul", {class: "ties"});
    g.rules.forEach(r => {
      const mates = tiedWith(g, r, i);
      const parts = [`${r.rule}: rank ${r.rank[i] === null ? "–" : r.rank[i]}`];
      parts.push(mates.length ? `shared with ${mates.length}: ${mates.join(", ")}` : "not shared");
      if (r.tied.includes(i)) parts.push(`tied with the leader ${names(g, r.leader).join(", ")} (bootstrap)`);
      box.append(el("li", {}, parts.join(" · ")));
    });
    return box;
  }
  function tasksView(g, system) {
    const key = `${g.input}\u0000${system}`;
    const got = ui.tasks.get(key);
    if (!got) return el("span", {class: "sub"}, "loading the per-task scores…");
    if (got.error) return el("span", {class: "note"}, got.error);
    const t = el("table", {class: "tasks"}, el("tr", {}, el("th", {scope: "col"}, "task"), el("th", {scope: "col"}, "score"),
      el("th", {scope: "col"}, "better"), el("th", {scope: "col"}, "rank on the task")));
    // four significant digits per task (tasks have their own scales), not the input's raw digits
    got.tasks.forEach(d => t.append(el("tr", {}, el("td", {}, d.task), el("td", {class: "num", "data-x": d.score === null ? "" : String(d.score)},
      d.score === null ? "–" : Math.abs(d.score) >= 1e7 ? d.score.toExponential(3) : String(Number(d.score.toPrecision(4)))),
      el("td", {title: d.direction_assumed ? "no sidecar or lower_is_better gave this direction: higher is better was assumed" : null},
         (d.higher_is_better ? "↑ higher" : "↓ lower") + (d.direction_assumed ? " (assumed)" : "")),
      el("td", {}, d.rank === null ? "–" : `${d.rank} / ${d.ranked}`))));
    return el("div", {}, el("div", {class: "sub"}, `${system} on ${got.source}: ${got.note}`),
              exportButtons(() => t, `tasks_${slug(system)}`, `the per-task scores of ${system}`), t);
  }
  async function loadCounts(g) {
    // once per input, and again when its systems change (a watch's new entries): the old counts stay shown meanwhile
    const have = ui.counts.get(g.input);
    if (have && (have.loading || have.forN === g.systems.length)) return;
    if (have) have.loading = true; else ui.counts.set(g.input, {loading: true});
    try {
      const r = await fetch(`api/counts?input=${encodeURIComponent(g.input)}`, {cache: "no-store"});
      const d = await r.json();
      if (!d.error) d.byName = new Map(d.systems.map((s, k) => [s, [d.tasks[k], d.cells[k]]]));
      d.forN = g.systems.length;
      ui.counts.set(g.input, d);
    } catch (e) {
      ui.counts.set(g.input, {error: "cannot reach the server", forN: g.systems.length});
    }
    renderBoard();
    if (ui.snap && $("top")) { const ov = overview(ui.snap); $("top").replaceChildren(...(ov ? [ov] : [])); }
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
    g.rules.forEach(r => box.append(el("span", {class: r.degenerate ? "degenerate" : null}, el("b", {}, r.rule), r.degenerate ? " " : "", degenerateMark(r), ": ",
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
  // why the test was chosen, without repeating its name and CD (the method says them): the server's own "why"
  function lettersWhy(d) { return d.why ? ` (${d.why})` : ""; }
  function lettersText(d) {
    const n = d.systems.length, pairs = d.pairs.length, diff = d.pairs.filter(p => p.different).length;
    const who = d.by_rule ? `the ${n} best systems by ${d.by_rule} (the rule the leaderboard is sorted by), listed by its rank` :
      n < d.candidates ? `the ${n} best of ${d.candidates} systems by mean ${d.level === "instance" ? "z-score" : "score"}` : `all ${n} systems`;
    const how = d.level === "instance"
      ? `paired permutation test of the mean difference of per-task z-scores (${d.resamples} sign patterns per pair, seed ${d.seed}), ` +
        `p-values Holm-adjusted over the ${pairs} pairs`
      : `one score per task, over ${d.n_tasks} tasks: ${d.method}${lettersWhy(d)}`;
    return `${who}; ${how}; alpha = ${d.alpha}. ${diff} of ${pairs} pairs differ significantly. ` +
      "Systems sharing a letter are not significantly different; two systems with no letter in common are.";
  }
  function lettersKey(g) { const r = g.rules[sortRule()]; return `${g.input}\u0000${g.name}\u0000${r ? r.rule : ""}`; }
  function lettersView(g) {
    const box = el("div", {class: "letters", id: "letters"});
    const rule = g.rules[sortRule()];
    const got = ui.letters.get(lettersKey(g));
    if (!got) {
      const b = el("button", {type: "button", id: "letters-button"}, `letter groups (paired tests of the best by ${rule ? rule.rule : "mean"})`);
      b.addEventListener("click", () => loadLetters(g));
      box.append(b, el("span", {class: "sub"}, ` · computed once per rule for input ${g.input}, from its scores`));
      return box;
    }
    if (got.loading) return el("div", {class: "letters sub", id: "letters"}, "computing the paired tests…");
    if (got.error) return el("div", {class: "letters note", id: "letters"}, got.error);
    const letters = alignedLetters(got.letters);
    const order = [...got.systems.keys()];
    if (got.rule_rank) order.sort((a, b) => got.rule_rank[a] - got.rule_rank[b]);
    const t = el("table", {class: "tasks"}, el("tr", {}, el("th", {scope: "col"}, "system"),
      got.by_rule ? el("th", {scope: "col"}, `${got.by_rule} rank`) : null, el("th", {scope: "col"}, got.level === "instance" ? "mean z-score" : "mean"), el("th", {scope: "col"}, "letters")));
    const rankOf = name => { const r = g.rules.find(x => x.rule === got.by_rule); const i = g.systems.indexOf(name); return r && i >= 0 ? r.rank[i] : null; };
    // '=' on a rank another system shares under the rule, as in the leaderboard
    const byRule = g.rules.find(x => x.rule === got.by_rule);
    const rankText = v => v === null || v === undefined ? "–" : `${v}${byRule && byRule.rank.filter(w => w === v).length > 1 ? "=" : ""}`;
    const md = columnDigits({score: got.mean, rank: got.mean.map((_, k) => k)});  // one number of decimals: distinct means differ
    order.forEach(i => t.append(el("tr", {}, el("td", {}, got.systems[i]), got.by_rule ? el("td", {}, rankText(rankOf(got.systems[i]))) : null,
      el("td", {class: "num"}, fmtScore(got.mean[i], Math.max(md === null ? 4 : md, 2))), el("td", {class: "cld", "data-x": letters[i].replace(/ /g, "")}, letters[i]))));
    box.append(el("h3", {}, `Letter groups · ${got.input}`), el("div", {class: "explain"}, lettersText(got)),
               ...got.notes.map(n => el("div", {class: "note"}, n)), exportButtons(() => t, `letters_${slug(got.input)}`, "the letter groups"), t);
    return box;
  }
  async function loadLetters(g) {
    const key = lettersKey(g), rule = g.rules[sortRule()];
    ui.letters.set(key, {loading: true});
    renderBoard();
    try {
      const r = await fetch(`api/letters?input=${encodeURIComponent(g.input)}&group=${encodeURIComponent(g.name)}` +
                            `&rule=${encodeURIComponent(rule ? rule.rule : "")}`, {cache: "no-store"});
      ui.letters.set(key, await r.json());
    } catch (e) {
      ui.letters.set(key, {error: "cannot reach the server"});
    }
    renderBoard();
  }
  const LEVELS = {task: "task: the rule over per-task means", one: "one: the rule over every (task, instance) pair as a judge",
                  two: "two: per task over its instances, then across tasks"};
  function usedLevel(g) {  // not set: engine.rank's default, two-level for an input with instances, else task-level
    const c = ui.counts.get(g.input);
    const inst = g.over === "instances" || (c && c.byName && [...c.byName.values()].some(v => v[1] > v[0]));
    if (inst) return `${LEVELS.two} (the default for an input with instances)`;
    if (c && c.byName) return `${LEVELS.task} (the default for one score per task)`;
    return "the default (two-level for an input with instances, else task-level)";
  }
  function settingsLine(s, g) {
    const inp = (s.input || {})[g.input] || {};
    const dflt = k => ((inp.defaults || []).includes(k) ? " (default)" : "");
    const lv = inp.level ? (LEVELS[inp.level] || inp.level) + dflt("level") : usedLevel(g);
    const miss = inp.missing ? `${inp.missing}${dflt("missing")}` + (inp.missing === "error" ? ": the input has no missing score" : "") : "not recorded";
    return el("div", {class: "settings sub"}, `aggregation level ${lv} · missing scores: ${miss} · ` +
      `scores: ` + g.rules.map(r => `${r.rule} = ${r.unit}`).join("; "));
  }
  function degenerateNotes(g) {
    return g.rules.filter(r => r.degenerate).map(r => el("div", {class: "warn", role: "note"},
      el("b", {}, `⚠ ${r.rule} is degenerate here: `), `${r.degenerate.why}. It cannot separate these systems, so its ` +
      `shared rank, rank intervals, ties with the leader and agreement with other rules say little (a system in the tie ` +
      `is not "top-${r.degenerate.rank}" in any useful sense).`));
  }
  function ruleSwitch(g) {  // a phone: buttons choosing the one rule whose columns the table shows (and sorts by)
    if (!narrowScreen() || g.rules.length < 2) return null;
    const on = sortRule();
    const box = el("div", {class: "ruleswitch", role: "group", "aria-label": "rule shown in the table"},
      el("span", {class: "sub"}, "rule shown: "));
    g.rules.forEach((r, ri) => {
      const b = el("button", {type: "button", "aria-pressed": ri === on ? "true" : "false", "data-rule": r.rule},
        r.rule + (r.degenerate ? " ⚠" : ""));
      b.addEventListener("click", () => {
        ui.sort = `${ri}:rank`; ui.desc = false;
        renderBoard(); renderBump();
        const again = $("board").querySelector(`.ruleswitch button[data-rule="${CSS.escape(r.rule)}"]`);
        if (again) again.focus();
      });
      box.append(b);
    });
    return box;
  }
  function scaleNotes(g) {  // a mean over tasks whose scales differ (as the report warns), from /api/counts
    const c = ui.counts.get(g.input);
    if (!c || !c.scale_warning || !g.rules.some(r => (c.scale_rules || []).includes(r.rule.split("(")[0]))) return [];
    return [el("div", {class: "warn", role: "note", id: "scale-warning"}, el("b", {}, "⚠ mixed scales: "), c.scale_warning + ".")];
  }
  function systemsText(g) {  // every system of the store, and how many of them a rule could not rank
    const ranked = g.rules.length ? g.rules[0].rank.filter(v => v !== null).length : g.systems.length;
    const out = plural(g.systems.length, "system");
    return ranked < g.systems.length ? `${out} (${ranked.toLocaleString()} ranked, ${(g.systems.length - ranked).toLocaleString()} dropped for missing scores)` : out;
  }
  function moreRows(shown, total) {  // past the first page: the next rows on demand (never thousands at once)
    if (!ui.showAll || ui.query.trim() || shown >= total) return [];
    const b = el("button", {type: "button", id: "more-rows"},
      `show ${Math.min(PAGE, total - shown).toLocaleString()} more (${shown.toLocaleString()} of ${total.toLocaleString()} shown)`);
    b.addEventListener("click", () => { ui.limit += PAGE; renderBoard(); });
    return [b];
  }
  // the page's one live region (#announce, role=status): said only when what it says changes (the run's status, the
  // leader of the rule the table is sorted by, the number of systems a search matches), never on every poll
  const said = {};
  function announce(what, text) {
    const first = !(what in said);
    if (said[what] === text) return;
    said[what] = text;
    const box = $("announce");
    if (box && !(first && what !== "search")) box.textContent = text;  // the first status and leader are on the page
  }
  function renderBoard() {
    const s = ui.snap;
    const host = $("board");
    if (!s || !host) return;
    const got = boardGroup(s);
    if (!got) { host.replaceChildren(); return; }
    const {g, boots} = got;
    loadCounts(g);
    const head = el("div", {class: "row"}, el("h2", {id: "board-h"}, "Leaderboard"),
      el("span", {class: "sub"}, `${g.name} · bootstrap over ${overLabel(g)} · ${systemsText(g)} · ` +
        `${g.replicates.toLocaleString()} replicates × ${plural(g.rules.length, "rule")}: ` +
        `${g.replicates_done.toLocaleString()} / ${g.replicates_total.toLocaleString()} done`),
      el("div", {class: "bar small", "aria-hidden": "true"}, width(el("div"), pct(g.blocks_done, g.blocks_total))));
    const controls = $("board-controls") || el("div", {class: "controls", id: "board-controls"});
    if (!controls.childElementCount) {
      const search = el("input", {type: "search", id: "search", placeholder: "search systems", "aria-label": "search systems"});
      search.addEventListener("input", () => { ui.query = search.value; renderBoard(); });
      const more = el("button", {id: "show-all", type: "button"});
      more.addEventListener("click", () => { ui.showAll = !ui.showAll; ui.limit = PAGE; renderBoard(); });
      const pick = el("select", {id: "group-select", "aria-label": "bootstrap group"});
      pick.addEventListener("change", () => { ui.group = pick.value; ui.sort = null; ui.open.clear(); renderBoard(); renderBump(); });
      controls.append(search, more, pick, el("span", {class: "sub", id: "shown"}), el("span", {id: "board-export"}));
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
    more.textContent = ui.showAll ? `show the top ${TOP_K}` :
      g.systems.length <= PAGE ? `show all ${g.systems.length.toLocaleString()}` : `show the top ${PAGE.toLocaleString()}`;
    more.hidden = g.systems.length <= TOP_K || Boolean(ui.query.trim());
    if (ui.query.trim()) announce("search", `${total.toLocaleString()} ${total === 1 ? "system matches" : "systems match"} "${ui.query.trim()}"`);
    const lr = g.rules[sortRule()];
    if (lr && lr.leader.length) announce(`leader ${g.name} ${lr.rule}`, `new leader by ${lr.rule}: ${names(g, lr.leader).join(", ")}`);
    controls.querySelector("#shown").textContent = ui.query.trim() ? `${total} matching` :
      `showing ${shown.toLocaleString()} of ${g.systems.length.toLocaleString()} · sort by a column header; open a system for its ties and per-task scores`;
    controls.querySelector("#board-export").replaceChildren(exportButtons(() => boardTable(g, true).table, `leaderboard_${slug(g.name)}`, "the leaderboard (every rule, the rows shown)"));
    const legend = el("div", {class: "legend"},
      el("span", {}, el("span", {class: "badge lead"}, "★"), " leader"),
      el("span", {}, el("span", {class: "badge tied"}, "≈"), ` tied with the leader: the leader scores above it in fewer than ${Math.round(100 * s.level)}% of the replicates`),
      el("span", {}, "'=' shared rank"),
      // the warning marks are explained where a rule of this view carries one
      g.rules.some(r => r.degenerate) ? el("span", {}, "⚠ degenerate ranking") : null,
      g.rules.some(r => scaleFlagged(g.input, r)) ?
        el("span", {}, "⚠ mixed scales: a mean of raw scores whose task scales differ over 10-fold") : null);
    const scoreNotes = [...new Set(g.rules.filter(r => r.score_interval_note).map(r => r.score_interval_note))];
    // how to read the table: open on a wide screen, folded on a phone (the table on the first screen); kept as the user left it
    if (ui.howOpen === undefined) ui.howOpen = !window.matchMedia("(max-width: 600px)").matches;
    const how = el("details", {class: "how"}, el("summary", {}, "How to read this table"), legend,
                   el("div", {class: "explain"}, explainInterval(g, s.level) + ` Rank(UB): the best rank the bootstrap lets a system claim, 1 + the number of ` +
                     `systems that score above it in at least ${Math.round(100 * s.level)}% of the replicates (LMArena's rank upper bound, made ` +
                     "paired, as in the report: score intervals of one system at a time all overlap when the bootstrap moves every " +
                     "score together, as a bootstrap over tasks does). A system without \u2248 has Rank(UB) of 2 or more." +
                     (scoreNotes.length ? ` Score intervals: ${scoreNotes.join("; ")}.` : "") +
                     (g.n_systems > BAR_MAX ? ` The rank intervals are given as numbers only (no bars): a bar ${"of"} ${g.n_systems.toLocaleString()} ranks would be too small to read.` : "")));
    how.open = ui.howOpen;
    how.addEventListener("toggle", () => { ui.howOpen = how.open; });
    const parts = [head, settingsLine(s, g), ...scaleNotes(g), ...degenerateNotes(g), controls, ruleSwitch(g), how,
                   el("div", {class: "tablewrap lbwrap", tabindex: "0", role: "region", "aria-labelledby": "board-h"}, table),
                   ...moreRows(shown, total),
                   stabilityLine(g), lettersView(g)];
    const src = g.rules.find(r => r.ranking_source !== "full data");
    if (src) parts.push(el("div", {class: "note"}, `ranked by ${src.ranking_source} (no full-data ranking in the store)`));
    // a live update redraws the table: keep the keyboard focus on the same header or system (not lost to <body>)
    const act = document.activeElement;
    const inHead = act && host.contains(act) ? act.closest("th[data-key]") : null;
    const inRow = act && host.contains(act) ? act.closest("tr[data-system]") : null;
    host.replaceChildren(...parts.filter(Boolean));
    if (inHead || inRow) {
      const sel = inHead ? `th[data-key="${CSS.escape(inHead.getAttribute("data-key"))}"] button`
        : `tr[data-system="${CSS.escape(inRow.getAttribute("data-system"))}"] button.rowbtn`;
      const again = host.querySelector(sel);
      if (again && !host.contains(document.activeElement)) again.focus();
    }
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
    const base = g.rules[sortRule()];
    const order = [...g.systems.keys()].filter(i => base.rank[i] !== null)
      .sort((a, b) => base.rank[a] - base.rank[b] || g.systems[a].localeCompare(g.systems[b]));
    const shown = order.slice(0, Math.min(BUMP_K, order.length));
    const K = shown.length;
    const R = g.rules.length;
    // a point's height is its rank: systems tied under a rule share one point (drawn as a tie, not as rank moves);
    // the names at both ends take one row each and a thin line leads from a name to its (shared) point.
    // Ranks beyond `cap` go to one row at the bottom
    const worst = Math.max(...shown.flatMap(i => g.rules.map(r => (r.rank[i] === null ? 0 : r.rank[i]))));
    const cap = Math.min(g.n_systems, Math.max(K, Math.min(worst, 2 * K)));
    const rows = Math.max(K, Math.min(worst, cap) + (worst > cap ? 1 : 0));
    const narrow = window.innerWidth < 600;
    // a phone: names cut shorter at both ends (the right end too says whose line ends there), the columns in between
    // shared out over the rest of the screen's width
    const avail = Math.max(300, (host.clientWidth || window.innerWidth) - 24);
    const nameW = narrow ? 108 : 200, endW = nameW, rowH = 21;  // 10 characters (22 on a wide screen) and the rank fit at 12 px
    const colW = narrow ? Math.max(40, Math.min(130, (avail - nameW - endW - 20) / Math.max(1, R - 1)))
      : Math.max(130, Math.min(230, 660 / Math.max(1, R - 1)));
    const stagger = colW < 100, top = stagger ? 44 : 30;  // narrow columns: the rule names on two alternating lines
    const W = nameW + colW * (R - 1) + endW + 20, H = top + rows * rowH + 8;
    const x = ri => nameW + 10 + ri * colW;
    const yOf = slot => top + (slot - 0.5) * rowH;
    const pt = (ri, i) => { const v = g.rules[ri].rank[i]; return yOf(v === null || v > cap ? rows : v); };
    const slots = ri => {  // label rows at an end column: in rank order, one row each
      const m = new Map();
      shown.map(i => [i, g.rules[ri].rank[i]]).sort((a, b) => (a[1] ?? 1e9) - (b[1] ?? 1e9) || g.systems[a[0]].localeCompare(g.systems[b[0]]))
        .forEach(([i], k) => m.set(i, Math.max(pt(ri, i), k === 0 ? 0 : m.get([...m.keys()][k - 1]) + rowH)));
      return m;
    };
    const left = slots(0), right = slots(R - 1);
    const Hs = Math.max(H, ...[...left.values(), ...right.values()].map(v => v + 12));
    const counts = g.rules.map(r => { const m = new Map(); r.rank.forEach(v => m.set(v, (m.get(v) || 0) + 1)); return m; });
    const rankText = (ri, i) => { const v = g.rules[ri].rank[i]; return v === null ? "–" : String(v) + (counts[ri].get(v) > 1 ? "=" : ""); };
    const svg = sv("svg", {class: "bump", viewBox: `0 0 ${W} ${Hs}`, width: W, height: Hs, role: "img",
                           "aria-label": `ranks of the top ${K} systems of ${base.rule} under every rule; tied systems share a point`});
    const axis = sv("g", {class: "axis"});
    for (let k = 1; k <= rows; k++) {
      if (k % 2 === 1) axis.append(sv("rect", {x: x(0) - 6, y: top + (k - 1) * rowH, width: colW * (R - 1) + 12, height: rowH, fill: "#f7f8fa"}));
    }
    g.rules.forEach((r, ri) => {
      axis.append(sv("line", {x1: x(ri), x2: x(ri), y1: top - 4, y2: Hs - 4, stroke: "#c9ced8"}));
      axis.append(sv("text", {x: x(ri), y: stagger && ri % 2 ? 32 : 16, "text-anchor": "middle", "font-weight": 600}, r.rule + (r.degenerate ? " ⚠" : "")));
    });
    if (worst > cap) axis.append(sv("text", {x: x(0) + 4, y: yOf(rows) + 4}, `below rank ${cap}`));
    svg.append(axis);
    // a big tie (at least 3 systems and a quarter of those drawn): the segments into it are greyed, so a fan of
    // lines into one point does not read as rank moves; the note under the chart says who is tied where
    const bigTie = (ri, i) => { const v = g.rules[ri].rank[i]; return v !== null && counts[ri].get(v) >= Math.max(3, Math.ceil(K / 4)); };
    shown.forEach((i, k) => {
      const color = PALETTE[k % PALETTE.length], dash = DASHES[Math.floor(k / PALETTE.length) % DASHES.length];
      const grp = sv("g", {class: "sysline"});
      const pts = g.rules.map((r, ri) => [x(ri), pt(ri, i)]);
      for (let ri = 0; ri + 1 < R; ri++) {
        const grey = bigTie(ri, i) || bigTie(ri + 1, i);
        grp.append(sv("path", {class: "line" + (grey ? " tieseg" : ""), d: `M${pts[ri].join(",")}L${pts[ri + 1].join(",")}`,
                               stroke: grey ? "#767676" : color, "stroke-dasharray": grey ? "2 3" : (dash || null)}));
      }
      g.rules.forEach((r, ri) => grp.append(sv("circle", {cx: pts[ri][0], cy: pts[ri][1], r: r.leader.includes(i) ? 6 : 4,
        fill: r.leader.includes(i) ? color : "#fff", stroke: color, "stroke-width": 2})));
      const cut = narrow ? 10 : 22, name = g.systems[i].length > cut ? g.systems[i].slice(0, cut - 1) + "…" : g.systems[i];
      const ly = left.get(i), ry = right.get(i);
      if (Math.abs(ly - pts[0][1]) > 1) grp.append(sv("path", {d: `M${x(0) - 8},${ly}L${x(0) - 2},${pts[0][1]}`, stroke: color, "stroke-width": 1, fill: "none"}));
      if (Math.abs(ry - pts[R - 1][1]) > 1) grp.append(sv("path", {d: `M${x(R - 1) + 8},${ry}L${x(R - 1) + 2},${pts[R - 1][1]}`, stroke: color, "stroke-width": 1, fill: "none"}));
      grp.append(sv("text", {x: x(0) - 10, y: ly + 4, "text-anchor": "end"}, `${name}  ${rankText(0, i)}`));
      grp.append(sv("text", {x: x(R - 1) + 10, y: ry + 4}, `${rankText(R - 1, i)}  ${name}`));
      grp.append(sv("title", {}, `${g.systems[i]}\n` + g.rules.map((r, ri) => `${r.rule}: rank ${rankText(ri, i)}`).join("\n")));
      svg.append(grp);
    });
    // a tie: one point for every system at that rank, drawn as a circle holding how many share it (all systems, not
    // only those drawn); a point per rank and column, so these never overlap each other or a label
    g.rules.forEach((r, ri) => {
      const seen = new Set();
      shown.forEach(i => {
        const v = r.rank[i];
        if (v === null || v > cap || seen.has(v) || counts[ri].get(v) < 2) return;
        seen.add(v);
        const n = counts[ri].get(v);
        const mark = sv("g", {class: "tie"});
        mark.append(sv("circle", {cx: x(ri), cy: yOf(v), r: 8.5, fill: "#fff", stroke: "#7a3600", "stroke-width": 1.5}),
          sv("text", {x: x(ri), y: yOf(v) + 3.5, "text-anchor": "middle"}, String(n)),
          sv("title", {}, `${r.rule}: ${n} systems tied at rank ${v}`));
        svg.append(mark);
      });
    });
    const tieNotes = [];
    g.rules.forEach((r, ri) => {
      // only ties at a rank some drawn system holds: a tie of undrawn systems is no rank move on this chart
      const drawn = new Set(shown.map(i => r.rank[i]));
      const big = [...counts[ri].entries()].filter(([v, n]) => v !== null && drawn.has(v) && n >= Math.max(3, Math.ceil(K / 4)));
      big.sort((a, b) => a[0] - b[0]).forEach(([v, n]) => tieNotes.push(`${r.rule}: ${n} systems tied at rank ${v}`));
    });
    host.replaceChildren(
      el("div", {class: "row"}, el("h2", {}, "Rank changes across rules"),
        el("span", {class: "sub"}, `the top ${K} systems of ${base.rule} (sort the leaderboard by another rule to change); ` +
          "rank 1 at the top; systems tied under a rule share one point (a number in a circle: how many; '=' after a rank); " +
          "filled dot = leader; every rank is in the table under the chart")),
      el("div", {class: "bumpwrap", tabindex: "0", role: "region", "aria-label": "rank changes chart"}, svg),
      ...(tieNotes.length ? [el("p", {class: "sub tienote"}, `Ties, not rank moves (grey dotted segments lead into them): ${tieNotes.join("; ")}.`)] : []),
      bumpTable(g, shown, counts));
  }

  // the chart's numbers as a table (reachable by keyboard and touch, read by screen readers): the systems drawn,
  // their rank under every rule, how many share it
  function bumpTable(g, shown, counts) {
    const t = el("table", {class: "tasks bumptable"});
    t.append(el("thead", {}, el("tr", {}, el("th", {scope: "col"}, "system"),
      ...g.rules.map(r => el("th", {scope: "col", "data-x": `${r.rule} rank`}, `${r.rule} rank`)))));
    const body = el("tbody");
    shown.forEach(i => body.append(el("tr", {}, el("th", {scope: "row", "data-x": g.systems[i]}, g.systems[i]), ...g.rules.map((r, ri) => {
      const v = r.rank[i], n = v === null ? 0 : counts[ri].get(v);
      return el("td", {"data-n": v === null ? "" : String(v), "data-tied": v === null ? "" : String(n > 1)},
        v === null ? "–" : n > 1 ? `${v}= (${n} tied)` : String(v));
    }))));
    t.append(body);
    const d = el("details", {class: "how", id: "bump-table"}, el("summary", {}, "The chart as a table"),
      exportButtons(() => t, `rank_changes_${slug(g.name)}`, "the rank changes table"), scrollBox(t, `rank changes of ${g.name} as a table`, "tablewrap"));
    if (ui.bumpOpen) d.open = true;
    d.addEventListener("toggle", () => { ui.bumpOpen = d.open; });
    return d;
  }

  // ------------------------------------------------------------------ agreement, other groups
  function matrix(agr, key, title, note, degen, group) {
    const t = el("table", {class: "m"});
    const head = el("tr", {}, el("th", {scope: "col", "data-x": "rule"}, el("span", {class: "vh"}, "rule")));
    agr.rules.forEach(r => head.append(el("th", {scope: "col", "data-x": r}, r + (degen.has(r) ? " ⚠" : ""))));
    t.append(head);
    agr.rules.forEach((r, i) => {
      const tr = el("tr", {}, el("th", {scope: "row", "data-x": r}, r + (degen.has(r) ? " ⚠" : "")));
      agr[key][i].forEach((v, j) => {
        const marked = i !== j && (degen.has(r) || degen.has(agr.rules[j]));
        const waiting = key === "replicates" && i !== j && (agr.pending || []).some(p => p[0] === Math.min(i, j) && p[1] === Math.max(i, j));
        if (waiting && v === null) {  // blocks merged, τ not measured yet: computing, not "no value"
          const td = el("td", {class: "pending", "data-x": "", title: "computing: τ on the blocks both rules have done follows in a moment"}, "…");
          td.style.background = "#f2f4f7";
          tr.append(td);
          return;
        }
        const td = el("td", {class: (marked ? "degen-cell " : "") + (waiting ? "pending" : "") || null, "data-x": i === j ? "" : fmt(v)}, i === j ? "·" : fmt(v) + (marked && v !== null ? "†" : ""));
        td.style.background = i === j ? "#f2f4f7" : tauColor(v);
        const why = marked ? `† involves a degenerate rule (${[r, agr.rules[j]].filter(x => degen.has(x)).map(x => `${x}: ${degen.get(x)}`).join("; ")}): τ here mostly reflects its ties` : "";
        if (key === "replicates" && i !== j) td.title = `${agr.common_replicates[i][j]} common replicates` + (waiting ? " so far (more being measured)" : "") + (why ? `; ${why}` : "");
        else if (why) td.title = why;
        tr.append(td);
      });
      t.append(tr);
    });
    return el("div", {}, el("div", {class: "mtitle"}, title), exportButtons(() => t, `agreement_${slug(key)}`, `the ${title} agreement matrix`),
              scrollBox(t, `${group}: ${title} agreement matrix`), el("div", {class: "sub"}, note));
  }
  function agreementCard(s) {
    const boots = s.groups.filter(g => g.kind === "bootstrap" && g.agreement.rules.length >= 2);
    if (!boots.length) return null;
    const card = el("section", {class: "card", id: "agreement"}, el("h2", {}, "Agreement between rules (Kendall τ-b)"));
    for (const g of boots) {
      const degen = new Map(g.rules.filter(r => r.degenerate).map(r => [r.rule, r.degenerate.why]));
      card.append(el("h3", {}, `${g.name} (bootstrap over ${overLabel(g)})`));
      if (degen.size) card.append(el("div", {class: "warn"}, `† cells involving ${[...degen.keys()].join(", ")}: a degenerate ranking ` +
        `(${[...degen.values()].join("; ")}); τ with it measures mostly its ties, not agreement on an order.`));
      card.append(el("div", {class: "mats"},
          matrix(g.agreement, "full_data", "full-data rankings", "τ between the rules' rankings of all the scores", degen, g.name),
          matrix(g.agreement, "replicates", "per replicate (mean)",
            "mean τ over up to 10 replicates of every block both rules have done (hover: how many)", degen, g.name)));
    }
    return card;
  }
  function head(g, what, done) {
    return el("div", {class: "row"}, el("h2", {}, g.name), el("span", {class: "sub"}, what),
      el("div", {class: "bar small"}, width(el("div"), pct(g.blocks_done, g.blocks_total))), el("span", {class: "sub"}, done));
  }
  // a table in its own sideways-scrolling box: a wide matrix scrolls there, never the page (a phone); the box takes
  // keyboard focus only when it does scroll
  function scrollBox(t, label, cls = "mwrap") {
    const box = el("div", {class: cls, role: "region", "aria-label": label}, t);
    const mark = () => { if (box.scrollWidth > box.clientWidth + 1) box.tabIndex = 0; else box.removeAttribute("tabindex"); };
    new ResizeObserver(mark).observe(box);  // on being shown, and whenever the page's width changes
    return box;
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
    return el("div", {}, exportButtons(() => t, `table_${slug(corner)}`, "this table"), t);
  }
  function subsetsCard(g) {
    const c = el("section", {class: "card", "data-group": g.name});
    c.append(head(g, `task subsets · ${g.repeats} repeats per size`, `${g.blocks_done} / ${g.blocks_total} blocks`));
    const degen = new Map((ui.snap ? ui.snap.groups : []).filter(x => x.kind === "bootstrap" && x.input === g.input)
      .flatMap(x => x.rules.filter(r => r.degenerate).map(r => [r.rule, r.degenerate.why])));
    const t = heatTable("rule \\ tasks in the subset", g.sizes, g.rules.map(r => [degen.has(r.rule) ? `${r.rule} ⚠ degenerate` : r.rule, r.mean_tau.map((v, i) =>
      [v, v, `${r.repeats_done[i]} repeats; std ${fmt(r.std_tau[i])}`])]));
    c.append(el("div", {class: "explain"}, "mean Kendall τ-b between the ranking on a random subset of the tasks and the ranking on all of them (1 = same order)"),
             scrollBox(t, "task-subset agreement"));
    degen.forEach((why, rule) => c.append(el("div", {class: "note"}, `⚠ ${rule} is degenerate on this input (${why}): its τ is high because it ties most systems, not because it is stable`)));
    return c;
  }
  function curveCard(g) {
    const c = el("section", {class: "card", "data-group": g.name});
    const what = g.kind === "manipulation" ? "corrupted tasks" : "rescaling factor";
    c.append(head(g, `synthetic ${g.kind} (Colombo et al. 2022) · ${g.repeats} replicates`, `${g.blocks_done} / ${g.blocks_total} blocks`));
    const t = heatTable(`rule · φ \\ ${what}`, g.values, g.rows.map(r => [`${r.rule} · ${r.phi}`, r.mean_error.map(v =>
      [v, v === null ? null : 1 - 2 * v, `${r.repeats_done} replicates`])]));
    c.append(el("div", {class: "explain"}, "mean normalized Kendall distance between the aggregated ranking and the ground truth (0 = perfect)"),
             scrollBox(t, `synthetic ${g.kind} errors`));
    return c;
  }
  function gridCard(g) {
    const c = el("section", {class: "card", "data-group": g.name});
    c.append(head(g, `parameter grid of ${g.rule}`, `${g.blocks_done} / ${g.blocks_total} points`));
    const t = el("table", {class: "m"}, el("tr", {}, el("th", {}, "point"), el("th", {}, "leader")));
    g.points.forEach(p => t.append(el("tr", {}, el("td", {}, p.point), el("td", {}, p.done ? p.leader.join(", ") : "…"))));
    c.append(scrollBox(t, `parameter grid of ${g.rule}`));
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
      updateSkips();
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
    updateSkips();
  }
  // a skip link only to a section the page shows (one rule: no rank changes, no agreement between rules; nothing
  // ranked yet: no leaderboard)
  function updateSkips() {
    document.querySelectorAll("nav.skip a").forEach(a => {
      const to = document.getElementById(a.getAttribute("href").slice(1));
      a.hidden = !to || to.hidden || !to.childElementCount;
    });
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
  setInterval(renderClock, 1000);
  let wide = window.innerWidth >= 600;
  window.addEventListener("resize", () => { if ((window.innerWidth >= 600) !== wide) { wide = !wide; renderBoard(); renderBump(); } });
})();

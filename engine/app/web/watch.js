// votebench watch: the cards around the dashboard's leaderboard (what changed, bad outputs, waiting, provenance, log).
// The dashboard's script (served before this one) draws the header and the leaderboard from the same /api/snapshot;
// this script fetches it again whenever the dashboard has redrawn (its "updated" line changes), so the page keeps one
// stream to the server.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };
  const pad = (n) => String(n).padStart(2, "0");
  // a short time: "08:53:37" today, "27 Nov 08:53" before
  function when(t) {
    if (typeof t !== "number") return "";
    const d = new Date(t * 1000), now = new Date();
    const hms = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    return d.toDateString() === now.toDateString() ? hms
      : `${d.toLocaleDateString(undefined, {day: "numeric", month: "short"})} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }
  const fullWhen = (t) => (typeof t === "number" ? new Date(t * 1000).toLocaleString() : "");
  const rk = (x) => (typeof x === "number" ? String(Number(x.toPrecision(3))) : "");
  const iv = (lo, hi) => (typeof lo !== "number" || typeof hi !== "number" ? "" : rk(lo) === rk(hi) ? ` [${rk(lo)}]` : ` [${rk(lo)}–${rk(hi)}]`);
  const plural = (n, one, many) => `${n} ${n === 1 ? one : (many || one + "s")}`;
  let shown = -1, saidKey = null, fetching = false, again = false, published = null;
  // "published at 10:18:41, 3 min ago" (the age kept current; not a live region: it is not news)
  function ago(t) {
    const s = Math.max(0, Math.round(Date.now() / 1000 - t));
    return s < 10 ? "just now" : s < 60 ? `${s} s ago` : s < 3600 ? `${Math.floor(s / 60)} min ago` : `${Math.floor(s / 3600)} h ${Math.floor(s / 60) % 60} min ago`;
  }
  function tick() { $("changes-when").textContent = typeof published === "number" ? `published at ${when(published)}, ${ago(published)}` : ""; }

  // a long message (a reader's list of every format it knows): its first clause, the rest behind a disclosure
  function longText(t, cls) {
    const cut = t.length > 140 ? t.slice(0, 120).search(/[;:] [^;:]*$/) : -1;
    if (cut < 20) return el("li", t, cls);
    const li = el("li", undefined, cls), d = el("details");
    d.append(el("summary", t.slice(0, cut + 1) + " …"), t.slice(cut + 2));
    li.appendChild(d);
    return li;
  }
  function list(id, items, render, empty) {
    const ul = $(id); ul.replaceChildren();
    if (!items.length) { ul.appendChild(el("li", empty, "sub")); return; }
    items.forEach((it) => ul.appendChild(render(it)));
  }
  function tagged(kind, tag, ...parts) {
    const li = el("li", undefined, "change " + kind); li.dataset.kind = kind;
    li.appendChild(el("span", tag, "tag"));
    li.appendChild(el("span", ": ", "vh"));
    parts.forEach((p) => li.append(p));
    return li;
  }
  // the change records of a snapshot, or (an older snapshot) its sentences read back
  function records(s) {
    if (Array.isArray(s.change_list)) return s.change_list;
    return (s.changes || []).map((t) => ({kind: t.startsWith("new:") ? "new" : / no longer ranked$/.test(t) ? "gone" : "other", text: t}));
  }
  function renderChanges(s) {
    const recs = records(s);
    const key = JSON.stringify(recs);
    if (key === saidKey) return;  // the same changes: not announced again (the list is a live region)
    saidKey = key;
    published = recs.length ? s.published : null;
    tick();
    const ul = $("changes"); ul.replaceChildren();
    if (!recs.length) { ul.appendChild(el("li", s.ranking && s.ranking.length ? "no system changed place" : "nothing yet", "sub")); return; }
    const by = (k) => recs.filter((c) => c.kind === k);
    const move = (c) => `${c.system} ${c.from}→${c.to}${iv(c.low, c.high)}`;
    by("new").forEach((c) => ul.appendChild(tagged("new", "new", `${c.system} enters at rank ${c.to}${iv(c.low, c.high)}`)));
    // why it moved, in words: the old systems it passed (or now ties), fell behind, and the entries above it
    const why = (c) => {
      const level = c.drew_level || [], past = (c.passed || []).filter((o) => !level.includes(o));
      return [past.length ? `passed ${past.join(", ")}` : "", level.length ? `drew level with ${level.join(", ")}` : "",
        (c.fell_behind || []).length ? `fell behind ${c.fell_behind.join(", ")}` : "",
        c.new_above ? `${c.new_above} new above` : "", c.left_above ? `${c.left_above} gone from above` : ""].filter(Boolean).join("; ");
    };
    const TAGS = {up: "▲ up", down: "▼ down", moved: "↕ moved"};
    for (const k of ["up", "down", "moved"]) by(k).forEach((c) => ul.appendChild(tagged(k, TAGS[k], move(c), el("span", ` (${why(c)})`, "sub"))));
    const shifted = by("shifted");
    if (shifted.length) {  // moved only by systems entering or leaving above them: one line, their order is unchanged
      const one = new Set(shifted.map(why)).size === 1;  // the same cause for all: said once
      const who = shifted.map((c) => `${c.system} ${c.from}→${c.to}` + (one ? "" : ` (${why(c)})`));
      const said = `${one ? `moved only by ${why(shifted[0])}; ` : ""}${shifted.length === 1 ? "its" : "their"} order among the others unchanged`;
      if (who.length <= 8) ul.appendChild(tagged("shifted", "shifted", `${who.join(", ")}: ${said}`));
      else {  // many: the first few, the rest behind a disclosure
        const d = el("details", undefined, "rest");
        d.append(el("summary", `and ${who.length - 6} more`), who.slice(6).join(", "));
        ul.appendChild(tagged("shifted", "shifted", `${plural(who.length, "system")} ${said}: ${who.slice(0, 6).join(", ")}`, d));
      }
    }
    by("gone").forEach((c) => ul.appendChild(tagged("gone", "left", `${c.system} is no longer ranked`)));
    by("other").forEach((c) => ul.appendChild(tagged("other", "changed", c.text)));
  }
  function renderMeta(s) {
    const sz = s.sizes || {};
    const g = (s.groups || [])[0];
    const parts = [];
    if (s.rule) parts.push(`${plural(sz.system || 0, "system")} × ${plural(sz.task || 0, "task")} × ${plural(sz.instance || 0, "instance")}`);
    if (g && g.replicates_done) {
      parts.push(`${Math.round(100 * s.level)}% intervals: bootstrap over ${s.over}, ${s.replicates} replicates, seed ${s.seed}, redone at each ingestion`);
      parts.push(`Rank(UB): 1 + the systems above it in ≥ ${Math.round(100 * s.level)}% of the replicates`);
    }
    if (!(g && g.replicates_done) && s.rule) parts.push("no bootstrap (start the watch with --over tasks, instances or systems for intervals, ties with the leader and Rank(UB))");
    const t = s.timing || {};
    if (typeof t.rank_s === "number") {
      const took = (t.ingest_s || 0) + (t.write_s || 0) + t.rank_s + (t.bootstrap_s || 0);
      parts.push(`last update took ${took.toFixed(1)} s` + (typeof t.bootstrap_s === "number" ? ` (bootstrap ${t.bootstrap_s.toFixed(1)} s)` : ""));
    }
    $("meta").textContent = parts.join(" · ");
    document.body.classList.toggle("no-boot", !(g && g.replicates_done));
  }
  function renderProvenance(s) {
    const prov = s.provenance || {};
    const names = Object.keys(prov).sort();
    const host = $("provenance");
    if (!names.length) { host.replaceChildren(el("span", "nothing ingested yet", "sub")); return; }
    const t = el("table", undefined, "tasks prov");
    const head = el("tr");
    ["system", "from", "ingested", "files (SHA-256)"].forEach((h) => { const th = el("th", h); th.scope = "col"; head.appendChild(th); });
    t.appendChild(el("thead")).appendChild(head);
    const body = t.appendChild(el("tbody"));
    names.forEach((name) => {
      const p = prov[name], tr = el("tr");
      const th = el("th", name); th.scope = "row"; tr.appendChild(th);
      tr.appendChild(el("td", `${p.unit} (${p.kind})`));
      const td = el("td", when(p.ingested)); td.title = fullWhen(p.ingested); tr.appendChild(td);
      const d = el("details"); d.appendChild(el("summary", plural(p.files.length, "file")));
      const ul = el("ul");
      p.files.forEach((f) => { const li = el("li"); li.append(`${f.path} (${f.size.toLocaleString()} bytes) `); li.appendChild(el("code", f.sha256)); ul.appendChild(li); });
      d.appendChild(ul);
      tr.appendChild(el("td")).appendChild(d);
      body.appendChild(tr);
    });
    const box = el("div", undefined, "tablewrap"); box.setAttribute("role", "region");
    box.setAttribute("aria-label", "provenance table"); box.tabIndex = 0; box.appendChild(t);
    host.replaceChildren(box);
  }
  function render(s) {
    $("where").textContent = `watching ${s.dir || ""} into ${s.store || ""}`;
    renderMeta(s);
    renderChanges(s);
    list("rejected", s.rejected || [], (r) => longText(r.error), "none");
    list("waiting", s.waiting || [], (w) => el("li", `${w.unit}: ${w.why}`), "none");
    renderProvenance(s);
    const log = $("log"); log.replaceChildren();
    (s.log || []).slice().reverse().forEach((e) => {
      const li = el("li"); const tm = el("time", when(e.time)); tm.title = fullWhen(e.time);
      li.append(tm, ` ${e.level}: ${e.text}`); log.appendChild(li);
    });
    document.body.dataset.version = String(s.version);
  }
  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      do {
        again = false;
        const r = await fetch("api/snapshot", {cache: "no-store"});
        if (!r.ok) return;
        const s = await r.json();
        if (s.version !== shown) { shown = s.version; render(s); }
      } while (again);
    } catch (e) { /* the dashboard's script says the connection is down */ } finally { fetching = false; }
  }
  // the dashboard's script writes its "updated" line at each new version it draws
  new MutationObserver(refresh).observe($("updated"), {childList: true, characterData: true, subtree: true});
  refresh();
  setInterval(tick, 15000);
})();

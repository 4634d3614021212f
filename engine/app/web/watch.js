// votebench watch: shows /api/snapshot, refetched whenever /api/stream says a new version is out (no reload).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };
  const when = (t) => (typeof t === "number" ? new Date(t * 1000).toLocaleString() : "");
  // one number of decimals for the whole score column: 0 for whole numbers, 1 for halves (Borda points), else 3
  const decimals = (xs) => (xs.every(Number.isInteger) ? 0 : xs.every((x) => Number.isInteger(2 * x)) ? 1 : 3);
  const fmt = (x, d) => (typeof x === "number" ? x.toFixed(d) : "–");
  const bound = (x) => (typeof x === "number" ? String(Number(x.toPrecision(3))) : "");
  let shown = -1;

  function list(id, items, render, empty) {
    const ul = $(id); ul.replaceChildren();
    if (!items.length) { ul.appendChild(el("li", empty, "sub")); return; }
    items.forEach((it) => ul.appendChild(render(it)));
  }

  function provenance(p) {
    if (!p) return el("span", "–", "sub");
    const d = el("details"); d.appendChild(el("summary", `${p.unit} (${p.kind}), ingested ${when(p.ingested)}`));
    const ul = el("ul");
    p.files.forEach((f) => { const li = el("li"); li.appendChild(el("span", `${f.path} (${f.size} bytes) sha256 `));
      li.appendChild(el("code", f.sha256)); ul.appendChild(li); });
    d.appendChild(ul); return d;
  }

  function render(s) {
    $("status").textContent = s.status || "waiting";
    $("status").className = "pill " + (s.ranking && s.ranking.length ? "partial" : "waiting");
    $("updated").textContent = s.published ? `published ${when(s.published)} · version ${s.version}` : "";
    $("where").textContent = `watching ${s.dir || ""} into ${s.store || ""}`;
    const sz = s.sizes || {};
    $("meta").textContent = s.rule ? `rule ${s.rule}, level ${s.level}; ${sz.system || 0} systems x ${sz.task || 0} tasks x ` +
      `${sz.instance || 0} instances` + (s.over ? `; ${Math.round((s.interval || 0) * 100)}% rank intervals over ${s.over}, ` +
      `${s.replicates} replicates, seed ${s.seed}` : "") : "no ranking yet";
    // each change under its kind, named in words (not by colour alone): a system not ranked before is "new", never a move
    const kindOf = (t) => (t.startsWith("new:") ? "new" : / \(up\)$/.test(t) ? "up" : / \(down\)$/.test(t) ? "down"
      : / no longer ranked$/.test(t) ? "gone" : "other");
    const TAG = {new: "new", up: "▲ up", down: "▼ down", gone: "left", other: "changed"};
    const ORDER = {new: 0, up: 1, down: 2, gone: 3, other: 4};
    const said = (s.changes || []).slice().sort((a, b) => ORDER[kindOf(a)] - ORDER[kindOf(b)]);
    list("changes", said, (t) => {
      const k = kindOf(t), li = el("li", undefined, "change " + k);
      li.dataset.kind = k;
      li.appendChild(el("span", TAG[k], "tag"));
      if (k === "new") li.appendChild(el("span", ":", "vh"));  // the text stays "new: X enters at rank 4 [3-6]"
      li.appendChild(document.createTextNode(" " + (k === "new" ? t.slice(4).trim() : k === "up" || k === "down" ? t.replace(/ \((up|down)\)$/, "") : t)));
      return li;
    }, "nothing changed");
    const body = $("ranking").tBodies[0]; body.replaceChildren();
    const scored = (s.ranking || []).filter((r) => typeof r.score === "number");
    const d = decimals(scored.map((r) => r.score));
    const unranked = (s.ranking || []).filter((r) => typeof r.score !== "number").map((r) => r.system);
    if (s.rule && unranked.length) $("meta").textContent += `; ${scored.length} ranked, not ranked (missing scores): ${unranked.join(", ")}`;
    (s.ranking || []).forEach((r) => {
      const tr = el("tr"); tr.dataset.system = r.system;
      tr.appendChild(el("td", String(r.rank), "num")); tr.appendChild(el("td", r.system));
      const said = (s.changes || []).find((t) => t.startsWith(`new: ${r.system} enters at rank `) || t.startsWith(`${r.system}: rank `));
      const k = said ? kindOf(said) : "same";
      const move = el("td", k === "new" ? "new" : k === "up" || k === "down" ? `${k === "up" ? "▲" : "▼"} from ${said.slice(r.system.length + 7).split(" ->")[0]}` : "–",
        "move " + k);
      tr.appendChild(move);
      tr.appendChild(el("td", fmt(r.score, d), "num"));
      const lo = bound(r.rank_low), hi = bound(r.rank_high);
      tr.appendChild(el("td", r.rank_low === undefined ? "–" : (lo === hi ? `[${lo}]` : `[${lo}-${hi}]`), "num"));
      const td = el("td"); td.appendChild(provenance((s.provenance || {})[r.system])); tr.appendChild(td);
      body.appendChild(tr);
    });
    list("rejected", s.rejected || [], (r) => el("li", r.error), "none");
    list("waiting", s.waiting || [], (w) => el("li", `${w.unit}: ${w.why}`), "none");
    const log = $("log"); log.replaceChildren();
    (s.log || []).slice().reverse().forEach((e) => log.appendChild(el("li", `${when(e.time)} ${e.level}: ${e.text}`)));
    document.body.dataset.version = String(s.version);
  }

  async function refresh() {
    try {
      const r = await fetch("api/snapshot", {cache: "no-store"});
      if (r.status === 401) { $("conn").textContent = "token required: open the URL votebench printed"; return; }
      const s = await r.json();
      if (s.version !== shown) { shown = s.version; render(s); }
    } catch (e) { $("conn").textContent = "cannot reach the server"; }
  }

  function listen() {
    const es = new EventSource("api/stream");
    es.onopen = () => { $("conn").textContent = "live"; };
    es.onmessage = () => refresh();
    es.onerror = () => { $("conn").textContent = "reconnecting"; if (es.readyState === EventSource.CLOSED) setTimeout(listen, 3000); };
  }
  refresh(); listen();
})();

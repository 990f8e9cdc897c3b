"use strict";
// The study's atlas page (explorer/_index.html). Everything shown comes from the JSON block #atlas-data
// (workflow_scripts/explorer/atlas_page.py); text from the data is only ever put in the page with textContent or
// setAttribute (never innerHTML). The heads of the chosen role are drawn on one canvas: one row per model, each head
// a mark at its own place in its layer's slice of relative depth, (layer + (head + 0.5) / heads) / layers, so that
// the heads of a layer never share a point; the marks are drawn from the lowest score to the highest, so that where
// a model's heads are narrower than a pixel the highest stays on top, and each model's top head is ringed.
(function () {
  const DATA = JSON.parse(document.getElementById("atlas-data").textContent);
  const ROW = 18, AXIS = 38, PAD = 8, LABELS = 250, SIDE = 560;
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const COLOURS = [];  // 256 steps of viridis, made once: a mark's colour is a lookup
  for (let k = 0; k < 256; k++) {
    const x = k / 255 * (VIRIDIS.length - 1), i = Math.min(VIRIDIS.length - 2, Math.floor(x)), f = x - i;
    const c = [0, 1, 2].map(j => Math.round(VIRIDIS[i][j] + f * (VIRIDIS[i + 1][j] - VIRIDIS[i][j])));
    COLOURS.push("rgb(" + c.join(",") + ")");
  }
  // The change view's 256 steps: blue (a lower score than pretrained) through white (none) to red (higher).
  const DIVERGING = [];
  for (let k = 0; k < 256; k++) {
    const t = k / 255 * 2 - 1, ends = t < 0 ? [33, 102, 172] : [178, 24, 43], f = Math.abs(t);
    DIVERGING.push("rgb(" + ends.map(e => Math.round(255 + f * (e - 255))).join(",") + ")");
  }
  const canvas = document.getElementById("atlas"), tip = document.getElementById("tip");
  // checkpoint: null = every checkpoint a role has, a row each; a name = that checkpoint of every model, on the model's
  // own row. view: "score", or "change" (a fine-tuned checkpoint's score minus the pretrained one's, same head).
  const state = { option: 0, pair: null, shown: null, hover: null, width: 0, drawn: false, checkpoint: null,
                  view: "score" };
  const PRE = "pretrained";

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function fmt(value) {
    if (value === null || value === undefined) return "\u2013";
    return Number(value).toFixed(Math.abs(value) >= 10 ? 1 : 3);
  }
  function size(parameters) {
    for (const [scale, suffix] of [[1e9, "B"], [1e6, "M"], [1e3, "k"]]) {
      if (parameters >= scale) return String(Number((parameters / scale).toPrecision(3))) + suffix;
    }
    return String(parameters);
  }
  const pageHref = page => encodeURIComponent(page);

  // --- the role selector: a role once where its detail only says how it was measured, else once for all its
  // details and once per detail (dependency: per relation) -------------------------------------------------------
  const options = [];
  DATA.roles.forEach((role, r) => {
    if (role.merged) { options.push({ role: r, detail: -1, label: role.label }); return; }
    options.push({ role: r, detail: -1, label: role.label + " (all " + role.details.length + " " + role.detail_name + ")" });
    role.details.forEach((detail, k) => options.push({ role: r, detail: k, label: role.label + " \u2013 " + detail }));
  });
  const optionKey = o => DATA.roles[o.role].role + (o.detail < 0 ? "" : "|" + DATA.roles[o.role].details[o.detail]);
  // The rows of the chosen role: the models' (DATA.rows), each followed by a row per other checkpoint the role has
  // of it (a fine-tuned checkpoint), so that a model's heads on two checkpoints never share a row.
  let rows = [], rowOf = new Map();  // "model/checkpoint index" -> row
  function layRows(role) {
    if (state.checkpoint !== null) {  // one checkpoint: every model on its own row
      const k = role.checkpoints.indexOf(state.checkpoint);
      rows = DATA.rows.slice(); rowOf = new Map();
      rows.forEach((row, r) => { if (row.kind === "model") rowOf.set(row.model + "/" + k, r); });
      return;
    }
    const pretrained = role.checkpoints.indexOf(PRE), others = new Map();
    role.columns.model.forEach((m, i) => {
      const k = role.columns.checkpoint[i];
      if (k !== pretrained) { if (!others.has(m)) others.set(m, new Set()); others.get(m).add(k); }
    });
    rows = []; rowOf = new Map();
    DATA.rows.forEach(row => {
      if (row.kind !== "model") { rows.push(row); return; }
      rowOf.set(row.model + "/" + pretrained, rows.length);
      rows.push(row);
      Array.from(others.get(row.model) || []).sort((a, b) => a - b).forEach(k => {
        rowOf.set(row.model + "/" + k, rows.length);
        rows.push({ kind: "checkpoint", model: row.model, checkpoint: k, text: role.checkpoints[k] });
      });
    });
  }

  function describe(m) {
    const parts = [m.family];
    if (m.parameters !== null) parts.push(size(m.parameters));
    if (m.revision !== null) parts.push("revision " + m.revision);
    if (m.step !== null) parts.push("step " + m.step);
    return parts.join(", ");
  }
  function fillLabels() {
    const labels = document.getElementById("labels");
    clear(labels);
    rows.forEach((row, k) => {
      if (row.kind === "checkpoint") {
        labels.appendChild(el("div", { class: "checkpoint", "data-row": k, "data-model": row.model,
          "data-checkpoint": row.text, title: DATA.models[row.model].name + ", " + row.text }, "\u21b3 " + row.text));
        return;
      }
      if (row.kind !== "model") {
        labels.appendChild(el("div", { class: row.kind, "data-row": k }, row.kind === "series"
          ? row.text + ": revisions by step" : row.text));
        return;
      }
      const m = DATA.models[row.model];
      const text = row.indent ? (m.revision || m.name) + (m.step !== null ? " (step " + m.step + ")" : "")
        : m.name + (m.parameters !== null ? " (" + size(m.parameters) + ")" : "");
      const div = el("div", { class: "model" + (row.indent ? " indent" : ""), "data-row": k, "data-model": row.model,
                              "data-checkpoint": state.checkpoint === null ? PRE : state.checkpoint,
                              title: m.name + " (" + describe(m) + "), " + m.layers + " layers x " + m.heads + " heads" });
      div.appendChild(m.page ? el("a", { href: pageHref(m.page) }, text) : document.createTextNode(text));
      labels.appendChild(div);
    });
  }

  // --- drawing ------------------------------------------------------------------------------------------------
  function changing() { return state.view === "change" && state.checkpoint !== null && state.checkpoint !== PRE; }
  // The pretrained score of each head of a role (model, detail, layer, head), made once per role: the change view's
  // baseline.
  const baselines = new Map();
  function baseline(role) {
    if (baselines.has(role.role)) return baselines.get(role.role);
    const c = role.columns, k = role.checkpoints.indexOf(PRE), found = new Map();
    for (let i = 0; i < c.score.length; i++) {
      if (c.checkpoint[i] === k && c.score[i] !== null) {
        found.set(c.model[i] + "|" + c.detail[i] + "|" + c.layer[i] + "|" + c.head[i], c.score[i]);
      }
    }
    baselines.set(role.role, found);
    return found;
  }
  function selected() {
    const o = options[state.option], role = DATA.roles[o.role], c = role.columns, idx = [];
    const change = changing(), base = change ? baseline(role) : null, value = new Map();
    for (let i = 0; i < c.score.length; i++) {
      if (c.score[i] === null || (o.detail >= 0 && c.detail[i] !== o.detail)) continue;
      if (!rowOf.has(c.model[i] + "/" + c.checkpoint[i])) continue;
      if (change) {
        const before = base.get(c.model[i] + "|" + c.detail[i] + "|" + c.layer[i] + "|" + c.head[i]);
        if (before === undefined) continue;
        value.set(i, c.score[i] - before);
      } else value.set(i, c.score[i]);
    }
    idx.push(...value.keys());
    // The highest last, drawn on top (in the change view the largest change, either way).
    const key = i => change ? Math.abs(value.get(i)) : value.get(i);
    idx.sort((a, b) => key(a) - key(b) || a - b);
    return { o, role, c, idx, value, change };
  }
  function place(c, i) {
    const m = DATA.models[c.model[i]], W = state.width, slice = W / (m.layers * m.heads);
    const left = PAD + W * (c.layer[i] + c.head[i] / m.heads) / m.layers;
    return { left, width: Math.max(1, slice > 3 ? slice - 1 : slice), centre: left + slice / 2, slice };
  }
  function pairedRows(role) {  // the rows of the chosen pair's two subjects (a model's own row if not drawn)
    if (state.pair === null) return new Set();
    const a = DATA.agreement[state.pair], found = new Set();
    [[a.first_model, a.first_checkpoint], [a.second_model, a.second_checkpoint]].forEach(([name, checkpoint]) => {
      const m = DATA.models.findIndex(model => model.name === name);
      if (m < 0) return;
      const k = role.checkpoints.indexOf(checkpoint || "pretrained");
      const row = rowOf.has(m + "/" + k) ? rowOf.get(m + "/" + k) : rows.findIndex(r => r.kind === "model" && r.model === m);
      if (row >= 0) found.add(row);
    });
    return found;
  }
  function draw() {
    const s = selected(), { c, idx } = s, W = state.width, width = W + 2 * PAD;
    const height = rows.length * ROW + AXIS, dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr); canvas.height = Math.round(height * dpr);
    canvas.style.width = width + "px"; canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const paired = pairedRows(s.role);
    rows.forEach((row, k) => {
      const band = paired.has(k) ? "#fff3bf" : row.kind === "family" || row.kind === "series" ? "#f8f9fa"
        : (k % 2 ? "#fcfcfd" : null);
      if (band) { ctx.fillStyle = band; ctx.fillRect(PAD, k * ROW, W, ROW); }
    });
    ctx.strokeStyle = "#dee2e6"; ctx.lineWidth = 1;
    for (let t = 0; t <= 10; t++) {
      const x = Math.round(PAD + W * t / 10) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, rows.length * ROW + 4); ctx.stroke();
    }
    let low = Infinity, high = -Infinity;
    for (const i of idx) { low = Math.min(low, s.value.get(i)); high = Math.max(high, s.value.get(i)); }
    if (s.change) { high = Math.max(Math.abs(low), Math.abs(high)); low = -high; }
    const span = high > low ? high - low : 0, best = new Map(), hover = new Map(), counts = new Map();
    for (const i of idx) {
      const row = rowOf.get(c.model[i] + "/" + c.checkpoint[i]), p = place(c, i), y = row * ROW;
      const step = span > 0 ? Math.round((s.value.get(i) - low) / span * 255) : 128;
      ctx.fillStyle = s.change ? DIVERGING[step] : COLOURS[step];
      ctx.fillRect(p.left, y + 3, p.width, ROW - 6);
      best.set(row, i);  // ascending scores: the last is the row's highest
      if (!hover.has(row)) hover.set(row, []);
      hover.get(row).push([p.centre, i, p.slice]);
      const key = c.model[i] + "/" + c.checkpoint[i] + "/" + c.detail[i];
      counts.set(key, (counts.get(key) || 0) + 1);
    }
    for (const [row, i] of best) {  // ring each row's top head: white under black, seen on any colour
      const p = place(c, i), y = row * ROW + ROW / 2;
      for (const [colour, line] of [["#fff", 3.5], ["#111", 1.6]]) {
        ctx.strokeStyle = colour; ctx.lineWidth = line;
        ctx.beginPath(); ctx.arc(p.centre, y, 6.5, 0, 2 * Math.PI); ctx.stroke();
      }
    }
    hover.forEach(list => list.sort((a, b) => a[0] - b[0]));
    state.shown = s; state.hover = hover; state.counts = counts; state.best = best;
    drawAxis(ctx, W);
    drawLegend(s, low, high, new Set(idx.map(i => c.model[i])).size);
    document.querySelectorAll("#labels div").forEach(div =>
      div.classList.toggle("paired", paired.has(Number(div.getAttribute("data-row")))));
    canvas.setAttribute("data-plot-left", PAD); canvas.setAttribute("data-plot-width", W);
    canvas.setAttribute("data-row-height", ROW); canvas.setAttribute("data-marks", idx.length);
    const top = idx.length ? idx[idx.length - 1] : null;  // the mark drawn last: the highest, or the largest change
    canvas.setAttribute("data-largest", top === null ? "" : DATA.models[c.model[top]].name + " " + (c.layer[top] + 1) +
      "-" + (c.head[top] + 1) + " " + s.role.checkpoints[c.checkpoint[top]]);
    canvas.setAttribute("data-view", s.change ? "change" : "score");
    if (!state.drawn) { state.drawn = true; performance.mark("atlas-drawn"); }
  }
  function drawAxis(ctx, W) {
    const top = rows.length * ROW + 4;
    ctx.fillStyle = "#333"; ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "center";
    for (let t = 0; t <= 4; t++) ctx.fillText(String(t / 4), PAD + W * t / 4, top + 12);
    ctx.fillText("relative depth: (layer + (head + 0.5) / heads) / layers, from the first layer (0) to the last (1)",
                 PAD + W / 2, top + 28);
  }
  function drawLegend(s, low, high, models) {
    const legend = document.getElementById("legend");
    clear(legend);
    if (!s.idx.length) { legend.appendChild(el("span", {}, "No head of this role has a score.")); return; }
    legend.appendChild(el("span", {}, (s.change ? "change " : "score ") + fmt(low)));
    legend.appendChild(el("span", { class: s.change ? "ramp diverging" : "ramp" }));
    legend.appendChild(el("span", {}, fmt(high) + " (" + s.role.unit + ")"));
    legend.appendChild(el("span", { class: "ring" }));
    legend.appendChild(el("span", {}, s.change ? "each row's largest change" : "each row's top head"));
    legend.appendChild(el("span", { class: "span" }, s.change
      ? "Colour: each head's score on " + state.checkpoint + " minus its pretrained score, " + s.idx.length +
        " heads of " + models + (models === 1 ? " model" : " models") + " (white: no change)."
      : "Colour: the lowest to the highest of the " + s.idx.length + " heads shown, " + models +
        (models === 1 ? " model." : " models.")));
  }

  // --- hover and click ---------------------------------------------------------------------------------------
  function markAt(clientX, clientY) {
    const box = canvas.getBoundingClientRect(), x = clientX - box.left, y = clientY - box.top;
    const row = Math.floor(y / ROW);
    if (!state.hover || !state.hover.has(row)) return null;
    const list = state.hover.get(row);
    let lo = 0, hi = list.length - 1;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (list[mid][0] < x) lo = mid + 1; else hi = mid; }
    let pick = null;
    for (const k of [lo - 1, lo]) {
      if (k >= 0 && k < list.length && (pick === null || Math.abs(list[k][0] - x) < Math.abs(pick[0] - x))) pick = list[k];
    }
    if (pick === null || Math.abs(pick[0] - x) > Math.max(4, pick[2] / 2 + 0.5)) return null;
    // A head drawn several times (its best relation in more than one): the highest score, the one on top.
    const c = state.shown.c;
    let chosen = pick[1];
    for (const entry of list) {
      if (entry[0] === pick[0] && c.score[entry[1]] >= c.score[chosen]) chosen = entry[1];
    }
    return chosen;
  }
  function describeMark(i) {
    const { c, role } = state.shown, m = DATA.models[c.model[i]], l = c.layer[i], h = c.head[i];
    const detail = role.details[c.detail[i]], checkpoint = role.checkpoints[c.checkpoint[i]];
    const n = state.counts.get(c.model[i] + "/" + c.checkpoint[i] + "/" + c.detail[i]);
    return [m.name + " (" + describe(m) + ")",
      "layer " + (l + 1) + ", head " + (h + 1) + " (head " + (l + 1) + "-" + (h + 1) + " of " + m.layers + " x " + m.heads + ")",
      role.label + (detail ? " \u2013 " + detail : "") + (checkpoint !== "pretrained" ? ", " + checkpoint : ""),
      "score " + fmt(c.score[i]) + (c.low[i] !== null ? "  95% interval [" + fmt(c.low[i]) + ", " + fmt(c.high[i]) + "]"
        : "  (no interval)") + (state.shown.change ? "\nchange from pretrained " + (state.shown.value.get(i) >= 0 ? "+" : "") +
        fmt(state.shown.value.get(i)) : ""),
      "rank " + (c.rank[i] === null ? "\u2013" : c.rank[i]) + " of the " + n + " heads shown",
      "random-init control " + (c.random[i] === null ? "not measured" : fmt(c.random[i])),
      m.page ? "click: open its explorer page on this head" : "no explorer page for this model"].join("\n");
  }
  function fragment(i) {
    const { c, role } = state.shown;
    const params = new URLSearchParams([["layer", String(c.layer[i] + 1)], ["head", String(c.head[i] + 1)]]);
    (role.measures[c.detail[i]][c.checkpoint[i]] || []).forEach(id => params.append("measure", id));
    return params.toString();
  }
  function openMark(i) {
    const m = DATA.models[state.shown.c.model[i]];
    if (m.page) window.location.href = pageHref(m.page) + "#" + fragment(i);
  }
  canvas.addEventListener("mousemove", e => {
    const i = markAt(e.clientX, e.clientY);
    if (i === null) { tip.hidden = true; canvas.style.cursor = "crosshair"; return; }
    tip.textContent = describeMark(i);
    tip.hidden = false;
    tip.style.left = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 4) + "px";
    tip.style.top = Math.min(e.clientY + 14, window.innerHeight - tip.offsetHeight - 4) + "px";
    canvas.style.cursor = DATA.models[state.shown.c.model[i]].page ? "pointer" : "default";
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  canvas.addEventListener("click", e => { const i = markAt(e.clientX, e.clientY); if (i !== null) openMark(i); });

  // --- role agreement -----------------------------------------------------------------------------------------
  function lost(heads) {  // "layer:head" from 0, as the table writes them, numbered from 1 as on the pages
    if (!heads) return "";
    return "lost: " + heads.split(" ").map(pair => pair.split(":").map(n => Number(n) + 1).join("-")).join(" ");
  }
  function interval(value, low, high) {
    return value === null ? "\u2013" : fmt(value) + (low !== null && high !== null ? " [" + fmt(low) + ", " + fmt(high) + "]" : "");
  }
  function bestHead(a) {  // "1-1 kept, +0.012 [..]" or "1-1 -> 2-3, -0.2 [..]", heads from 1 as on the pages
    if (a.first_best === null) return "\u2013";
    const one = h => h.split(":").map(n => Number(n) + 1).join("-");
    const moved = a.best_change === null ? "" : ", " + (a.best_change >= 0 ? "+" : "") +
      interval(a.best_change, a.best_change_low, a.best_change_high);
    return one(a.first_best) + (a.best_kept ? " kept" : " \u2192 " + one(a.second_best)) + moved;
  }
  // The rows the panel lists: with a fine-tuned checkpoint chosen, every role of each pair with it (pretrained vs it
  // first); otherwise the chosen role's rows of every pair; then the notes of those pairs that hold for every role.
  function agreementRows() {
    const o = options[state.option], role = DATA.roles[o.role], listed = [];
    const byPair = state.checkpoint !== null && state.checkpoint !== PRE;
    DATA.agreement.forEach((a, k) => {
      if (a.role === null) return;
      if (byPair ? a.second_checkpoint === state.checkpoint
        : a.role === role.role && (o.detail < 0 || a.detail === role.details[o.detail])) listed.push(k);
    });
    const pairs = new Set(listed.map(k => DATA.agreement[k].first_model + "/" + DATA.agreement[k].first_checkpoint +
      "/" + DATA.agreement[k].second_model + "/" + DATA.agreement[k].second_checkpoint));
    DATA.agreement.forEach((a, k) => {
      if (a.role === null && (!byPair || a.second_checkpoint === state.checkpoint || pairs.has(
        a.first_model + "/" + a.first_checkpoint + "/" + a.second_model + "/" + a.second_checkpoint))) listed.push(k);
    });
    return { listed, byPair, role, o };
  }
  function drawAgreement() {
    const table = document.getElementById("agreement-table"), note = document.getElementById("agreement-note");
    clear(table);
    if (DATA.agreement === null) {
      note.textContent = "This study has no role agreement table (tables/role_agreement.csv).";
      return;
    }
    const { listed, byPair, role, o } = agreementRows();
    if (!listed.length) {
      note.textContent = byPair ? "No role of " + state.checkpoint + " is compared with another subject."
        : "No pair of related subjects is compared in this role.";
      return;
    }
    note.textContent = (byPair ? "Every role of the pairs with " + state.checkpoint + ". " : "") +
      "Spearman's rho of the pair's per-head scores (95% bootstrap interval over heads) against the first subject's " +
      "split-half floor (Spearman-Brown corrected), the verdict (moved: rho below the floor; kept; noisy: the floor " +
      "itself low; same weights), the first subject's best head and its score's change, the overlap (Jaccard) of the " +
      "top heads and the share of role heads kept. Click a row to " + (byPair ? "show its role in the atlas." :
      "mark its models in the atlas.");
    const head = el("thead"), names = el("tr");
    [byPair ? "role" : "pair", "relation", "heads", "rho [95%]", "floor [95%]", "verdict", "best head",
     "Jaccard of top", "kept share"].forEach(h => names.appendChild(el("th", {}, h)));
    head.appendChild(names);
    table.appendChild(head);
    const subject = (model, checkpoint) => model + (checkpoint && checkpoint !== PRE ? " " + checkpoint : "");
    listed.forEach(k => {  // a row: its numbers, and under them its note and the heads that lose the role
      const a = DATA.agreement[k], body = el("tbody", { class: "pair" + (state.pair === k ? " selected" : ""),
                                                       "data-index": k, "data-verdict": a.verdict || "" }), tr = el("tr");
      const pair = subject(a.first_model, a.first_checkpoint) + " \u2192 " + subject(a.second_model, a.second_checkpoint);
      const what = a.role === null ? "(every role)" : a.role + (a.detail ? " (" + a.detail + ")" : "");
      const cells = [byPair ? what + (DATA.agreement.filter(b => b.role === a.role && b.detail === a.detail &&
          b.second_checkpoint === a.second_checkpoint).length > 1 ? ", " + pair : "") : pair,
        a.relation + (!byPair && a.role === null ? " (every role)" : !byPair && o.detail < 0 && a.detail &&
          role.details.length > 1 ? " (" + a.detail + ")" : ""),
        a.heads === null ? "\u2013" : String(a.heads),
        interval(a.rho, a.rho_low, a.rho_high), interval(a.floor_rho, a.floor_low, a.floor_high),
        a.verdict || "\u2013", bestHead(a),
        fmt(a.jaccard_top) + (a.top_heads !== null ? " (top " + a.top_heads + ")" : ""),
        fmt(a.kept_share) + (a.role_heads !== null ? " (of " + a.role_heads + ")" : "")];
      cells.forEach((text, j) => tr.appendChild(el("td", j >= 2 && j !== 5 ? { class: "num" } : {}, text)));
      if (a.role_rule) tr.children[8].setAttribute("title", "role heads: " + a.role_rule);
      if (a.split_half_rho !== null) tr.children[4].setAttribute("title", "split-half rho " + fmt(a.split_half_rho) +
        " before the Spearman-Brown correction" + (a.seed_rho !== null ? "; seed floor (" + a.seed_checkpoint + ") " +
        interval(a.seed_rho, a.seed_low, a.seed_high) : ""));
      body.appendChild(tr);
      const said = [a.note, lost(a.lost_heads)].filter(Boolean).join("; ");
      if (said) {
        const more = el("tr", { class: "said" });
        more.appendChild(el("td", { colspan: "9" }, said));
        body.appendChild(more);
      }
      body.addEventListener("click", () => {
        if (byPair && a.role !== null) {  // show this role (and relation) in the atlas
          const index = options.findIndex(x => optionKey(x) === a.role + "|" + a.detail);
          const whole = options.findIndex(x => optionKey(x) === a.role);
          if (index >= 0 || whole >= 0) { choose(index >= 0 ? index : whole); return; }
        }
        state.pair = state.pair === k ? null : k; draw(); drawAgreement();
      });
      table.appendChild(body);
    });
  }

  // --- start ----------------------------------------------------------------------------------------------------
  function choose(index, relay) {
    const previous = options[state.option];
    state.option = index; state.pair = null;
    if (relay || !rows.length || previous.role !== options[index].role) {
      layRows(DATA.roles[options[index].role]); fillLabels();
    }
    document.getElementById("role").value = String(index);
    const o = options[index], role = DATA.roles[o.role];
    document.getElementById("role-note").textContent = role.merged && role.details.length > 1
      ? "How each model's " + role.role + " was measured (" + role.details.join(", ") + ") is in the hover." : "";
    try {  // the role in the address, so that going back to the atlas shows it again (not allowed in a data: URI)
      const kept = [["role", optionKey(o)]];
      if (state.checkpoint !== null) kept.push(["checkpoint", state.checkpoint]);
      if (changing()) kept.push(["view", "change"]);
      history.replaceState(null, "", "#" + new URLSearchParams(kept).toString());
    } catch (error) { /* the role is not kept */ }
    draw(); drawAgreement();
  }
  const models = DATA.models.length;
  if (!options.length) {
    document.getElementById("summary").textContent = DATA.has_atlas ? "The atlas (tables/atlas.csv) has no head."
      : "This study makes no atlas (tables/atlas.csv: it measures no head role); every model's page is below.";
    performance.mark("atlas-drawn");
    return;
  }
  document.getElementById("summary").textContent = models + (models === 1 ? " model, " : " models, ") +
    DATA.roles.length + (DATA.roles.length === 1 ? " role " : " roles ") +
    "(tables/atlas.csv). Choose a role; hover a head for its score, interval, rank and random-init control; click " +
    "it to open its model's explorer page on that head.";
  document.getElementById("how").textContent = "Each head is a mark at its own place in its layer's slice of depth " +
    "(layers and heads numbered from 1 in the hover, as on the explorer pages); where a model's marks are narrower " +
    "than a pixel the highest score is drawn on top. One row per model: by family, then size, a series' revisions " +
    "under it by training step.";
  const select = document.getElementById("role");
  options.forEach((o, k) => select.appendChild(el("option", { value: String(k) }, o.label)));
  select.setAttribute("autocomplete", "off");
  select.addEventListener("change", () => choose(Number(select.value)));
  // The checkpoint: every one a role has (a row each), or one of them on every model's row; and the colour's view.
  const pick = document.getElementById("checkpoint"), view = document.getElementById("view");
  pick.appendChild(el("option", { value: "" }, "every checkpoint, a row each"));
  DATA.checkpoints.forEach(name => pick.appendChild(el("option", { value: name }, name)));
  [["score", "score"], ["change", "change from pretrained"]].forEach(([value, text]) =>
    view.appendChild(el("option", { value }, text)));
  [pick, view].forEach(node => node.setAttribute("autocomplete", "off"));
  function setCheckpoint(name, how) {
    state.checkpoint = name === "" || name === null ? null : name;
    state.view = how === "change" ? "change" : "score";
    pick.value = state.checkpoint === null ? "" : state.checkpoint;
    view.disabled = state.checkpoint === null || state.checkpoint === PRE;
    view.value = changing() ? "change" : "score";
  }
  pick.addEventListener("change", () => { setCheckpoint(pick.value, view.value); choose(state.option, true); });
  view.addEventListener("change", () => { setCheckpoint(pick.value, view.value); choose(state.option, true); });
  document.getElementById("controls").hidden = false;
  document.getElementById("atlas-area").hidden = false;
  state.width = Math.max(420, Math.min(1000, window.innerWidth - LABELS - SIDE - 2 * PAD - 40));
  // The legend and notes wrap at the chart's width, so that the role agreement fits beside it.
  document.getElementById("chart-area").style.width = (LABELS + state.width + 2 * PAD) + "px";
  const asked = new URLSearchParams(window.location.hash.slice(1)), wanted = asked.get("role");
  const start = options.findIndex(o => optionKey(o) === wanted);
  setCheckpoint(DATA.checkpoints.includes(asked.get("checkpoint")) ? asked.get("checkpoint") : null, asked.get("view"));
  choose(start >= 0 ? start : 0, true);
})();

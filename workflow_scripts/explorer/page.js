"use strict";
// The head explorer. Everything shown comes from the JSON block #explorer-data; text from the data is only ever
// put in the page with textContent or setAttribute (never innerHTML), so markup in a token, a task or a model
// name shows as the literal text it is and never runs. A map keyed by text from the data (relation labels, measure
// groups, example ids) is a Map, and a lookup in an object from the data reads only its own keys (own()), so a
// relation called __proto__ or constructor is a row like any other, never Object.prototype.
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const DATA = JSON.parse(document.getElementById("explorer-data").textContent);
  const L = DATA.layers, H = DATA.heads;
  const CATEGORY_COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
                            "#ff9da7", "#9c755f", "#bab0ac"];
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const state = { signal: DATA.signal_order[0], measure: null, head: null, example: 0 };

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function svgEl(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  const headName = (l, h) => (l + 1) + "-" + (h + 1);   // 1-based, as the report's figures
  function fmt(value, unit) {
    if (value === null || value === undefined) return "\u2013";
    if (unit === "share" || unit === "accuracy" || unit === "change") return (100 * value).toFixed(1) + "%";
    return Number(value).toFixed(Math.abs(value) >= 10 ? 1 : 3);
  }
  const interval = (low, high, unit) => (low === null || low === undefined) ? "" :
    " [" + fmt(low, unit) + ", " + fmt(high, unit) + "]";
  function viridis(t) {
    const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1), i = Math.min(VIRIDIS.length - 2, Math.floor(x));
    const f = x - i, a = VIRIDIS[i], b = VIRIDIS[i + 1];
    return [0, 1, 2].map(k => Math.round(a[k] + f * (b[k] - a[k])));
  }
  const rgb = c => "rgb(" + c[0] + "," + c[1] + "," + c[2] + ")";
  const own = (object, key) => Object.prototype.hasOwnProperty.call(object, key) ? object[key] : undefined;
  const signal = () => own(DATA.signals, state.signal);

  // --- controls ---------------------------------------------------------------------------------------------
  function fillControls() {
    const signals = document.getElementById("signal");
    DATA.signal_order.forEach(id => signals.appendChild(el("option", { value: id }, own(DATA.signals, id).label)));
    document.getElementById("signal-choice").hidden = DATA.signal_order.length < 2;
    signals.addEventListener("change", () => { state.signal = signals.value; fillMeasures(); drawGrid(); drawPanel(); });
    document.getElementById("measure").addEventListener("change", e => { state.measure = e.target.value; drawGrid(); drawPanel(); });
    fillMeasures();
  }
  function fillMeasures() {
    const select = document.getElementById("measure");
    clear(select);
    const groups = new Map();
    signal().measures.forEach(m => {
      if (!groups.has(m.group)) { groups.set(m.group, el("optgroup", { label: m.group })); select.appendChild(groups.get(m.group)); }
      groups.get(m.group).appendChild(el("option", { value: m.id }, m.label));
    });
    const ids = signal().measures.map(m => m.id);
    // The measure the page opens on is the data's (a decoder's: attention to the first token, page.py).
    const opening = ids.includes(signal().default_measure) ? signal().default_measure : (ids[0] || null);
    state.measure = ids.includes(state.measure) ? state.measure : opening;
    if (state.measure) select.value = state.measure;
  }
  const currentMeasure = () => signal().measures.find(m => m.id === state.measure) || null;

  // --- the grid ------------------------------------------------------------------------------------------------
  function colourOf(measure, value, range) {
    if (value === null || value === undefined) return { fill: "#e9ecef", dark: false };
    if (measure.kind === "category") return { fill: CATEGORY_COLOURS[value % CATEGORY_COLOURS.length], dark: true };
    const t = range[1] > range[0] ? (value - range[0]) / (range[1] - range[0]) : 0.5;
    return { fill: rgb(viridis(t)), dark: t < 0.55 };
  }
  function drawGrid() {
    const grid = document.getElementById("grid"), legend = document.getElementById("legend");
    clear(grid); clear(legend);
    const measure = currentMeasure(), cell = Math.max(26, Math.min(46, Math.floor(560 / H))), left = 58, top = 28;
    grid.setAttribute("width", left + H * cell + 4);
    grid.setAttribute("height", top + L * cell + 4);
    const values = measure ? measure.values : [];
    const finite = values.filter(v => v !== null && v !== undefined);
    const range = finite.length ? [Math.min(...finite), Math.max(...finite)] : [0, 1];
    for (let h = 0; h < H; h++) grid.appendChild(svgEl("text", { x: left + h * cell + cell / 2 - 3, y: top - 8 }, h + 1));
    grid.appendChild(svgEl("text", { x: left, y: 10 }, "head \u2192"));
    for (let l = 0; l < L; l++) {
      grid.appendChild(svgEl("text", { x: 4, y: top + l * cell + cell / 2 + 3 }, "layer " + (l + 1)));
      for (let h = 0; h < H; h++) {
        const index = l * H + h, value = values[index], colour = colourOf(measure || {}, value, range);
        const rect = svgEl("rect", { x: left + h * cell, y: top + l * cell, width: cell, height: cell,
          fill: colour.fill, class: "cell", tabindex: 0, role: "gridcell", "data-layer": l, "data-head": h });
        if (state.head && state.head[0] === l && state.head[1] === h) rect.classList.add("selected");
        const label = measure ? (measure.kind === "category" && value !== null && value !== undefined
          ? measure.categories[value] : fmt(value, measure.unit)) : "";
        const detail = measure && measure.detail && measure.detail[index] ? " (" + measure.detail[index] + ")" : "";
        rect.appendChild(svgEl("title", {}, "head " + headName(l, h) + ": " + label + detail));
        rect.addEventListener("click", () => selectHead(l, h));
        rect.addEventListener("keydown", e => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); selectHead(l, h); } });
        grid.appendChild(rect);
        if (measure && measure.kind === "number" && cell >= 30 && value !== null && value !== undefined) {
          const shown = measure.unit === "nats" || measure.unit === "tokens" ? value.toFixed(1) : Math.round(100 * value);
          grid.appendChild(svgEl("text", { x: left + h * cell + cell / 2, y: top + l * cell + cell / 2,
            class: "value" + (colour.dark ? " dark" : "") }, shown));
        }
      }
    }
    document.getElementById("measure-note").textContent = measure ? measure.label + ": " + measure.note +
      (measure.kind === "number" && (measure.unit === "share" || measure.unit === "accuracy" || measure.unit === "change")
        ? " (cells: percent)" : "") : "The study has no per-head measure of this model.";
    if (!measure) return;
    if (measure.kind === "category") {
      measure.categories.forEach((name, i) => {
        const item = el("span");
        const swatch = el("span", { class: "swatch" });
        swatch.style.background = CATEGORY_COLOURS[i % CATEGORY_COLOURS.length];
        item.appendChild(swatch); item.appendChild(document.createTextNode(name));
        legend.appendChild(item);
      });
    } else {
      legend.appendChild(el("span", {}, fmt(range[0], measure.unit)));
      legend.appendChild(el("span", { class: "ramp" }));
      legend.appendChild(el("span", {}, fmt(range[1], measure.unit)));
    }
  }
  function selectHead(l, h) {
    state.head = [l, h];
    document.querySelectorAll("#grid .cell.selected").forEach(c => c.classList.remove("selected"));
    const cell = document.querySelector('#grid .cell[data-layer="' + l + '"][data-head="' + h + '"]');
    if (cell) cell.classList.add("selected");
    drawPanel();
  }

  // --- the head panel ------------------------------------------------------------------------------------------
  function table(headers, rows, bestRow) {
    const t = el("table"), head = el("tr");
    headers.forEach(h => head.appendChild(el("th", {}, h)));
    t.appendChild(head);
    rows.forEach((row, i) => {
      const tr = el("tr", i === bestRow ? { class: "best" } : {});
      row.forEach((cell, j) => tr.appendChild(el("td", j > 0 ? { class: "num" } : {}, cell)));
      t.appendChild(tr);
    });
    return t;
  }
  function section(panel, title, note) {
    panel.appendChild(el("h3", {}, title));
    if (note) panel.appendChild(el("p", { class: "note" }, note));
  }
  function surface(panel, s, i) {
    section(panel, "Surface statistics", s.note);
    const rows = s.stats.map(st => [st.label, fmt(st.value[i], st.unit) + interval(st.low && st.low[i], st.high && st.high[i], st.unit),
      st.control ? fmt(st.control[i], st.unit) : ""]);
    panel.appendChild(table(["", "pretrained [95% CI]", s.control || ""], rows));
  }
  function dependency(panel, d, i) {
    d.treebanks.forEach(tb => {
      section(panel, "Dependency accuracy: " + tb.treebank, "scored on " + tb.score_split +
        "; share of words whose head (dependent\u2192head) or dependent (head\u2192dependent) gets this head's most attention");
      const byRelation = new Map();  // relation label -> direction -> row, in the data's order
      tb.relations.forEach(r => {
        if (!byRelation.has(r.relation)) byRelation.set(r.relation, new Map());
        byRelation.get(r.relation).set(r.direction, r);
      });
      const names = Array.from(byRelation.keys());
      const cell = r => r ? fmt(r.accuracy[i], "accuracy") + interval(r.low[i], r.high[i], "accuracy") : "";
      const directions = n => Array.from(byRelation.get(n).values());
      // The named relation (not 'all') with the highest accuracy in either direction is shown in bold.
      const best = names.map(n => n === "all" ? -1 :
        Math.max(...directions(n).map(r => r.accuracy[i] === null ? -1 : r.accuracy[i])));
      const rows = names.map(n => [n, cell(byRelation.get(n).get("dependent_to_head")),
        cell(byRelation.get(n).get("head_to_dependent")), String(Math.max(...directions(n).map(r => r.n)))]);
      const bestRow = best.some(v => v >= 0) ? best.indexOf(Math.max(...best)) : -1;
      const headers = ["relation", "dependent\u2192head [95% CI]", "head\u2192dependent [95% CI]", "n"];
      panel.appendChild(table(headers, rows.slice(0, 12), bestRow < 12 ? bestRow : -1));
      if (rows.length > 12) {
        const more = el("details");
        more.appendChild(el("summary", {}, "all " + rows.length + " relations"));
        more.appendChild(table(headers, rows, bestRow));
        panel.appendChild(more);
      }
    });
  }
  function coreference(panel, c, i) {
    section(panel, "Coreference", "share of mentions whose most-attended word is the head word of an antecedent");
    panel.appendChild(table(["mention type", "accuracy [95% CI]", "n"], c.mention_types.map(t =>
      [t.mention_type, fmt(t.accuracy[i], "accuracy") + interval(t.low[i], t.high[i], "accuracy"), String(t.n)])));
  }
  function cluster(panel, c, i) {
    const behaviour = c.behaviour[i];
    section(panel, "Cluster", "behaviour: " + (behaviour === null ? "\u2013" : c.categories[behaviour]) +
      "; mean " + c.distance + " to the other heads " + fmt(c.mean_js[i]) + " (dot: this head, among all heads' 2-D embedding)");
    const xs = c.x.filter(v => v !== null), ys = c.y.filter(v => v !== null), size = 180, pad = 8;
    if (!xs.length) return;
    const sx = v => pad + (v - Math.min(...xs)) / ((Math.max(...xs) - Math.min(...xs)) || 1) * (size - 2 * pad);
    const sy = v => size - pad - (v - Math.min(...ys)) / ((Math.max(...ys) - Math.min(...ys)) || 1) * (size - 2 * pad);
    const plot = svgEl("svg", { width: size, height: size, role: "img" });
    plot.appendChild(svgEl("rect", { x: 0, y: 0, width: size, height: size, fill: "#f8f9fa" }));
    c.x.forEach((x, k) => {
      if (x === null || k === i) return;
      const b = c.behaviour[k];
      plot.appendChild(svgEl("circle", { cx: sx(x), cy: sy(c.y[k]), r: 3,
        fill: b === null ? "#aaa" : CATEGORY_COLOURS[b % CATEGORY_COLOURS.length], opacity: 0.6 }));
    });
    if (c.x[i] !== null) plot.appendChild(svgEl("circle", { cx: sx(c.x[i]), cy: sy(c.y[i]), r: 6, fill: "none", stroke: "#111", "stroke-width": 2 }));
    panel.appendChild(plot);
  }
  function patterns(panel, p, i) {
    section(panel, "Pattern classes per task", "share of the head's maps (dev examples) in each class of the rule labeller");
    panel.appendChild(table(["task", "checkpoint", "dominant", ...p.classes], p.entries.map(e =>
      [e.task, e.stage, e.dominant[i] === null ? "\u2013" : p.classes[e.dominant[i]], ...e.shares.map(s => fmt(s[i], "share"))])));
  }
  function change(panel, c, i) {
    section(panel, "Change after fine-tuning", "cosine of the head's pretrained and fine-tuned maps on the task's dev inputs (1: unchanged)");
    panel.appendChild(table(["task", "seed", "cosine [95% CI]", "1 \u2212 cosine"], c.runs.map(r =>
      [r.task, r.seed, fmt(r.cosine[i]) + interval(r.low[i], r.high[i]), r.cosine[i] === null ? "\u2013" : fmt(1 - r.cosine[i], "change")])));
  }
  function lexical(panel, x, i) {
    section(panel, "Lexical categories of the most-attended words", "share of words whose most-attended word is of each category");
    panel.appendChild(table(["task", "checkpoint", ...x.categories], x.entries.map(e =>
      [e.task, e.checkpoint, ...e.shares.map(s => fmt(s[i], "share"))])));
  }
  const SECTIONS = Object.assign(Object.create(null), { surface, dependency, coreference, cluster, patterns, change, lexical });

  function drawPanel() {
    const panel = document.getElementById("panel");
    if (!state.head) return;
    clear(panel);
    const [l, h] = state.head, i = l * H + h, measure = currentMeasure();
    panel.appendChild(el("h2", {}, "Head " + headName(l, h) + " (layer " + (l + 1) + ", head " + (h + 1) + ")"));
    if (measure) {
      const v = measure.values[i];
      panel.appendChild(el("p", { class: "note" }, measure.label + ": " + (measure.kind === "category"
        ? (v === null ? "\u2013" : measure.categories[v]) : fmt(v, measure.unit)) +
        (measure.detail && measure.detail[i] ? " (" + measure.detail[i] + ")" : "")));
    }
    maps(panel, l, h);  // first: what the head does is seen before it is read
    const sections = signal().sections;
    DATA.section_order.forEach(name => { if (SECTIONS[name] && own(sections, name)) SECTIONS[name](panel, sections[name], i); });
    if (!panel.querySelector("h3")) panel.appendChild(el("p", {}, "The study has no result for this head."));
  }

  // --- maps --------------------------------------------------------------------------------------------------------
  const decoded = new Map();  // "example/checkpoint" -> its weights
  function weights(sentence, checkpoint) {
    const key = sentence.example_id + "/" + checkpoint;
    if (!decoded.has(key)) {
      const text = atob(own(sentence.maps, checkpoint)), bytes = new Uint8Array(text.length);
      for (let k = 0; k < text.length; k++) bytes[k] = text.charCodeAt(k);
      decoded.set(key, bytes);
    }
    return decoded.get(key);
  }
  function mapSvg(sentence, checkpoint, label, l, h) {
    const tokens = sentence.tokens, T = tokens.length, cell = Math.max(6, Math.min(18, Math.floor(400 / T)));
    const margin = 8 + 6 * Math.min(14, Math.max(...tokens.map(t => t.length))), top = 22;
    const width = margin + T * cell + 4, height = top + T * cell + margin;
    const svg = svgEl("svg", { width, height, viewBox: "0 0 " + width + " " + height, role: "img" });
    svg.appendChild(svgEl("text", { x: 4, y: 14, class: "title", "font-family": "sans-serif" },
      label + ", head " + headName(l, h)));
    const bytes = weights(sentence, checkpoint), base = (l * H + h) * T * T, levels = DATA.examples.levels;
    for (let r = 0; r < T; r++) {
      for (let c = 0; c < T; c++) {
        const w = bytes[base + r * T + c] / levels;  // white to dark blue, as the study's map figures
        const square = svgEl("rect", { x: margin + c * cell, y: top + r * cell, width: cell, height: cell,
          fill: rgb([255 - 247 * w, 255 - 207 * w, 255 - 148 * w].map(Math.round)) });
        square.appendChild(svgEl("title", {}, tokens[r] + " \u2192 " + tokens[c] + ": " + w.toFixed(3)));
        svg.appendChild(square);
      }
      svg.appendChild(svgEl("text", { x: margin - 3, y: top + r * cell + cell * 0.75, "text-anchor": "end",
        "font-family": "sans-serif" }, tokens[r]));
    }
    tokens.forEach((t, c) => {
      const x = margin + c * cell + cell * 0.75, y = top + T * cell + 3;
      svg.appendChild(svgEl("text", { x, y, transform: "rotate(90 " + x + " " + y + ")", "font-family": "sans-serif" }, t));
    });
    return svg;
  }
  function maps(panel, l, h) {
    const ex = DATA.examples;
    if (!ex.sentences.length) {
      section(panel, "Maps", "no example inputs in this page (the study dumps none, or none is short enough)");
      return;
    }
    section(panel, "Maps on example inputs", ex.corpus + " " + ex.split + "; " +
      ex.checkpoints.map(c => c.label).join(" beside ") + "; row: attending token, column: attended token; " +
      "darker: more attention");
    const buttons = el("div");
    ex.sentences.forEach((s, k) => {
      const b = el("button", { type: "button", class: k === state.example ? "current" : "" }, "example " + s.example_id +
        " (" + s.tokens.length + " tokens)");
      b.addEventListener("click", () => { state.example = k; drawPanel(); });
      buttons.appendChild(b);
    });
    const sentence = ex.sentences[Math.min(state.example, ex.sentences.length - 1)];
    const download = el("button", { type: "button", id: "download-svg" }, "Download SVG");
    buttons.appendChild(download);
    panel.appendChild(buttons);
    const holder = el("div", { class: "maps" });
    const svgs = ex.checkpoints.map(c => mapSvg(sentence, c.name, c.label, l, h));
    svgs.forEach(s => holder.appendChild(s));
    panel.appendChild(holder);
    download.addEventListener("click", () => exportSvg(svgs, sentence, l, h));
  }
  function exportSvg(svgs, sentence, l, h) {
    // One standalone SVG with the maps side by side, serialised as XML: vector, with the token labels as text.
    let x = 0, height = 0;
    const whole = svgEl("svg", {});  // XMLSerializer writes its xmlns
    svgs.forEach(s => {
      const g = svgEl("g", { transform: "translate(" + x + " 0)" });
      Array.from(s.childNodes).forEach(child => g.appendChild(child.cloneNode(true)));
      whole.appendChild(g);
      x += Number(s.getAttribute("width")) + 16;
      height = Math.max(height, Number(s.getAttribute("height")));
    });
    whole.setAttribute("width", x); whole.setAttribute("height", height);
    whole.setAttribute("viewBox", "0 0 " + x + " " + height);
    const text = new XMLSerializer().serializeToString(whole);
    const url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" }));
    const name = (DATA.model + "_head" + headName(l, h) + "_example" + sentence.example_id).replace(/[^A-Za-z0-9._-]+/g, "_");
    const link = el("a", { href: url, download: name + ".svg" });
    document.body.appendChild(link); link.click(); link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  // --- start -----------------------------------------------------------------------------------------------------
  document.getElementById("title").textContent = "Head explorer: " + DATA.model;
  document.getElementById("summary").textContent = DATA.summary;
  document.getElementById("notes").textContent = DATA.notes.join(" ");
  fillControls();
  drawGrid();
  openFromFragment();
  window.addEventListener("hashchange", openFromFragment);

  // --- the address: #layer=L&head=H&measure=ID[&measure=ID2...] (the atlas page's links; layers and heads from 1)
  // selects that head and the first of the measures this page has --------------------------------------------------
  function openFromFragment() {
    const params = new URLSearchParams(window.location.hash.replace(/^#/, ""));
    const ids = signal().measures.map(m => m.id), asked = params.getAll("measure");
    const measure = asked.find(id => ids.includes(id));
    if (measure) {
      state.measure = measure;
      document.getElementById("measure").value = measure;
      drawGrid();
    } else if (asked.length) {
      document.getElementById("measure-note").textContent += " (This page has no measure " + asked.join(" or ") +
        " of the atlas's role: the study does not show it per head.)";
    }
    const l = parseInt(params.get("layer"), 10) - 1, h = parseInt(params.get("head"), 10) - 1;
    if (l >= 0 && l < L && h >= 0 && h < H) {
      selectHead(l, h);
      const cell = document.querySelector('#grid .cell[data-layer="' + l + '"][data-head="' + h + '"]');
      if (cell) { cell.focus({ preventScroll: true }); cell.scrollIntoView({ block: "nearest" }); }
    }
  }
})();

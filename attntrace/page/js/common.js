// attntrace's explorer page: what every view shares (docs/page.md). The page's scripts
// are these files joined in order into one <script>: common.js, then each view, then
// main.js, which reads the embedded documents and draws the views they call for.
// Plain JavaScript, no library, no network. Text from a document reaches the page
// through textContent only (never as markup), with invisible characters made visible.
"use strict";

const PREC = 4; // decimals, as the terminal's tables
const SUMMARY_ROWS = 16; // a matrix with more rows shows its first and last 8
const SUMMARY_COLS = 12; // likewise columns: first and last 6
const TERMS = 16; // a sum of more terms lists its first and last 8

// ---- text -------------------------------------------------------------------------
// As attntrace/visible.py: what a terminal would act on or not show, escaped.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]|(?! )\p{Zs}/u;
const NAMED_ESCAPES = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };

function visible(text) {
  let out = "";
  let first = true;
  for (const ch of String(text)) {
    const lone = first && /\p{M}/u.test(ch); // an accent on nothing
    out += INVISIBLE.test(ch) || lone ? escapeChar(ch) : ch;
    first = false;
  }
  return out;
}

function escapeChar(ch) {
  if (NAMED_ESCAPES[ch]) return NAMED_ESCAPES[ch];
  const code = ch.codePointAt(0);
  const hex = code.toString(16);
  if (code < 0x100) return "\\x" + hex.padStart(2, "0");
  if (code < 0x10000) return "\\u" + hex.padStart(4, "0");
  return "\\U" + hex.padStart(8, "0");
}

// ---- numbers ----------------------------------------------------------------------
// Python's f"{x:.4f}" (round half to even on the exact binary value), "-0.0000" written
// without its sign, e-notation from 1e8: render/numbers.format_number. A cell is a
// number, null (masked, −∞) or, in a --dtype trace, "inf", "-inf" or "nan".
function fmt(value, prec) {
  const p = prec === undefined ? PREC : prec;
  if (value === undefined) return "–"; // not computed (a skipped tile's block max)
  if (value === null) return "−∞";
  if (value === "inf" || value === Infinity) return "inf";
  if (value === "-inf" || value === -Infinity) return "−inf";
  if (value === "nan" || Number.isNaN(value)) return "NaN";
  const text = Math.abs(value) >= 1e8 ? exponential(value, p) : fixed(value, p);
  return /[1-9]/.test(text) ? text : text.replace(/^-/, "");
}

function fixed(value, p) {
  const exact = Math.abs(value).toFixed(100); // exact: a double below 1e8 has < 100 decimals
  const dot = exact.indexOf(".");
  const kept = exact.slice(0, dot) + exact.slice(dot + 1, dot + 1 + p);
  let digits = BigInt(kept);
  if (roundsUp(exact.slice(dot + 1 + p), digits % 2n === 1n)) digits += 1n;
  let text = digits.toString().padStart(p + 1, "0");
  if (p > 0) text = text.slice(0, text.length - p) + "." + text.slice(text.length - p);
  return (value < 0 || Object.is(value, -0) ? "-" : "") + text;
}

// Whether the dropped digits ``rest`` round the kept ones up: above half, or a tie to even.
function roundsUp(rest, odd) {
  const half = "5".padEnd(rest.length, "0");
  if (rest > half) return true;
  if (rest < half) return false;
  return odd;
}

function exponential(value, p) {
  if (Math.abs(value) >= 1e21) { // toFixed is not exact here: the rare overflow's figure
    return value.toExponential(p).replace(/e([+-])(\d)$/, "e$10$2");
  }
  const exact = Math.abs(value).toFixed(100); // exact below 1e21, no leading zero here
  const all = exact.replace(".", "");
  let e = exact.indexOf(".") - 1;
  let digits = BigInt(all.slice(0, p + 1));
  if (roundsUp(all.slice(p + 1), digits % 2n === 1n)) digits += 1n;
  let text = digits.toString();
  if (text.length > p + 1) { text = text.slice(0, p + 1); e += 1; } // 9.99995e8 -> 1.0000e+09
  const mantissa = p > 0 ? text[0] + "." + text.slice(1) : text;
  return (value < 0 ? "-" : "") + mantissa + "e" + (e < 0 ? "-" : "+") + String(Math.abs(e)).padStart(2, "0");
}

// A cell's every digit, for a tooltip and the arithmetic's last line.
function exactText(value) {
  if (value === null) return "−∞ (masked)";
  return String(value);
}

// ---- elements ---------------------------------------------------------------------
function range(n) { return Array.from({ length: n }, (_, i) => i); }

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  return node;
}

const shapeText = (m) => `[${m.shape[0]} × ${m.shape[1]}]`;
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function line(...parts) { return el("p", { class: "line" }, ...parts); }
function term(label, text) { return el("span", { class: "term", "data-term": label }, text); }

// The indices a summarized axis shows: all, or the first and last half with a gap (null).
function shownIndices(n, limit, expanded) {
  if (expanded || n <= limit) return range(n);
  const half = Math.floor(limit / 2);
  return [...range(half), null, ...range(half).map((i) => n - half + i)];
}

// A sum's terms as a small table, a row a term (the first and last 8 of a long sum):
// ``headers`` name the columns, ``draw(i)`` gives term i's cells (a string or a node).
function termsTable(headers, n, draw) {
  const body = shownIndices(n, TERMS, false).map((i) => (i === null
    ? el("tr", { class: "gap" }, el("td", { colspan: headers.length }, `⋯ ${n - TERMS} more terms`))
    : el("tr", { "data-index": i }, draw(i).map((cell, k) => (k === 0 ? el("th", { scope: "row" }, cell) : el("td", {}, cell))))));
  return el("table", { class: "terms" }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col" }, h)))), el("tbody", {}, body));
}

// ---- the page's header ---------------------------------------------------------------
function modelFacts(model, tokens, extra) {
  const m = model;
  const facts = [plural(tokens.length, "token"), `d_model ${m.d_model}`, `d_k ${m.d_k}`, `d_v ${m.d_v}`, plural(m.heads, "head")];
  if (m.kv_heads !== m.heads) facts.push(plural(m.kv_heads, "K/V head"));
  if (m.causal) facts.push("causal");
  if (m.positions && m.positions !== "none") facts.push(`positions: ${m.positions}`);
  if (m.window !== undefined) facts.push(`window ${m.window}`);
  if (m.sinks !== undefined) facts.push(plural(m.sinks, "sink"));
  if (m.qk_norm !== undefined) facts.push("QK-norm");
  if (m.softcap !== undefined) facts.push(`softcap ${m.softcap}`);
  if (m.sink_logits !== undefined) facts.push("sink logit");
  return facts.concat(extra || []).join(" · ");
}

function tokenBoxes(tokens, label) {
  return el("p", { class: "sentence" + (label ? " context" : "") }, label ? `${label}: ` : null,
    tokens.map((t) => el("span", { class: "token" }, visible(t))));
}

function pageHeader(what, model, tokens, contextTokens, extraFacts) {
  const header = el("header", { class: "header" },
    el("h1", {}, `attntrace${what ? " " + what : ""} · `, el("span", { class: "model-name" }, visible(model.name))),
    el("p", { class: "facts" }, modelFacts(model, tokens, extraFacts)),
    tokenBoxes(tokens));
  if (contextTokens) header.append(tokenBoxes(contextTokens, "context"));
  return header;
}

// ---- a matrix as a table --------------------------------------------------------------
// ``matrix``: {name, shape, rows, cols, data}. Options: key (what "Show all" remembers),
// heat (a heatmap of weights), explain (cells focusable, data-explain set to it), mark
// (r, c) -> a class for a cell or null, redraw (after "Show all").
const expandedTables = new Set();

function matrixTable(matrix, options) {
  const o = options || {};
  const expanded = expandedTables.has(o.key);
  const rows = shownIndices(matrix.shape[0], SUMMARY_ROWS, expanded);
  const cols = shownIndices(matrix.shape[1], SUMMARY_COLS, expanded);
  const table = el("table", { class: "matrix" + (o.heat ? " heat" : ""), "data-stage": matrix.name });
  const headRow = el("tr", {}, el("th", { class: "corner", scope: "col" }, o.corner || ""));
  for (const c of cols) {
    headRow.append(c === null ? el("th", { class: "gap", scope: "col" }, "⋯") : el("th", { scope: "col" }, visible(matrix.cols[c])));
  }
  table.append(el("thead", {}, headRow));
  const body = el("tbody");
  for (const r of rows) {
    if (r === null) {
      body.append(el("tr", { class: "gap" }, el("th", { scope: "row" }, "⋮"), cols.map(() => el("td", { class: "gap" }, "⋮"))));
      continue;
    }
    const tr = el("tr", {}, el("th", { scope: "row" }, visible(matrix.rows[r])));
    for (const c of cols) {
      if (c === null) { tr.append(el("td", { class: "gap" }, "⋯")); continue; }
      tr.append(matrixCell(matrix.data[r][c], r, c, o));
    }
    body.append(tr);
  }
  table.append(body);
  const wrap = el("div", { class: "table-wrap" }, table);
  if (matrix.shape[0] > SUMMARY_ROWS || matrix.shape[1] > SUMMARY_COLS) {
    const label = expanded ? "Summarize" : `Show all ${matrix.shape[0]} × ${matrix.shape[1]}`;
    wrap.append(el("button", { type: "button", class: "expand", onclick: () => {
      if (expanded) expandedTables.delete(o.key); else expandedTables.add(o.key);
      if (o.redraw) o.redraw();
    } }, label));
  }
  return wrap;
}

function matrixCell(value, r, c, o) {
  const td = el("td", { "data-row": r, "data-col": c, title: exactText(value) }, fmt(value));
  if (value === null) td.classList.add("masked");
  if (typeof value === "string") td.classList.add("overflow");
  if (o.heat && typeof value === "number") {
    td.style.setProperty("--w", String(Math.max(0, Math.min(1, value))));
    if (value > 0.55) td.classList.add("dark");
  }
  const mark = o.mark ? o.mark(r, c) : null;
  if (mark) td.classList.add(mark);
  if (o.explain !== undefined && o.explain !== null) { td.tabIndex = 0; td.dataset.explain = String(o.explain); }
  return td;
}

// A row of numbers (one query's scores, a token's k) as a one-row table.
function vectorTable(name, label, values, cols, options) {
  return matrixTable({ name, shape: [1, values.length], rows: [label], cols, data: [values] }, options);
}

// ---- stepping ------------------------------------------------------------------------
// Previous / Next, "k of N: what", and the ← → keys (not while a select or a checkbox has
// focus). One stepper per page drives its main view.
function makeStepper(nav, count, label, show) {
  const state = { index: 0 };
  const prev = el("button", { type: "button", id: "prev", title: "Previous (←)", onclick: () => go(-1) }, "← Previous");
  const next = el("button", { type: "button", id: "next", title: "Next (→)", onclick: () => go(1) }, "Next →");
  const position = el("span", { id: "position", class: "position" });
  nav.prepend(prev, position, next);
  function draw() {
    const n = count();
    state.index = Math.max(0, Math.min(n - 1, state.index));
    position.textContent = label(state.index, n);
    prev.disabled = state.index === 0;
    next.disabled = state.index === n - 1;
    show(state.index);
  }
  function go(step) {
    const to = Math.max(0, Math.min(count() - 1, state.index + step));
    if (to === state.index) return;
    state.index = to;
    draw();
  }
  document.addEventListener("keydown", (event) => {
    const tag = (event.target && event.target.tagName) || "";
    if (tag === "SELECT" || tag === "INPUT" || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "ArrowRight") { go(1); event.preventDefault(); }
    if (event.key === "ArrowLeft") { go(-1); event.preventDefault(); }
  });
  return { state, draw, go };
}

function headSelect(heads, label, onChange) {
  const select = el("select", { id: "head", "aria-label": "Head" }, heads.map((h) => el("option", { value: h }, label(h))));
  select.addEventListener("change", () => onChange(Number(select.value)));
  return select;
}

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

// Longer than ``limit`` characters once escaped, it is cut and ends with "…" (an escape
// is never cut in two), so a 1,000-character token does not take the page's width.
function visible(text, limit) {
  const pieces = [];
  let first = true;
  for (const ch of String(text)) {
    const lone = first && /[\p{Mn}\p{Me}]/u.test(ch); // an accent on nothing (not Mc, as Python)
    pieces.push(INVISIBLE.test(ch) || lone ? escapeChar(ch) : ch);
    first = false;
  }
  const whole = pieces.join("");
  if (limit === undefined || [...whole].length <= limit) return whole;
  let kept = "";
  let length = 0;
  for (const piece of pieces) {
    const size = [...piece].length;
    if (length + size > limit - 1) break;
    kept += piece;
    length += size;
  }
  return kept + "…";
}

const LABEL_LIMIT = 40; // as ui/shown.py: a row or column label, cut past 40
const NAME_LIMIT = 80;

// Labels a reader can tell apart, as kernel/labels.py makes them: a repeated token gets its
// 0-based position (the#4), again until none repeats; past 8 passes, the position alone.
const uniqueCache = new WeakMap();
function uniqueLabels(labels) {
  if (uniqueCache.has(labels)) return uniqueCache.get(labels);
  let shown = labels.slice();
  let parted = false;
  for (let pass = 0; pass < 8; pass += 1) {
    const counts = new Map();
    for (const l of shown) counts.set(l, (counts.get(l) || 0) + 1);
    if (counts.size === shown.length) { parted = true; break; }
    shown = shown.map((l, i) => (counts.get(l) > 1 ? `${l}#${i}` : l));
  }
  if (!parted) shown = labels.map((l, i) => `${l}@${i}`);
  uniqueCache.set(labels, shown);
  return shown;
}
const label = (labels, i) => visible(uniqueLabels(labels)[i], LABEL_LIMIT);
const quoted = (text) => `'${visible(text, LABEL_LIMIT)}'`; // a token named in a sentence

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
// without its sign, e-notation from 1e8, and a nonzero number the digits would write as
// 0 in e-notation with one digit after the point (-3.9e-05): ui/numbers.format_number.
// A cell is a number, null (masked, −∞) or, in a --dtype trace, "inf", "-inf" or "nan".
function fmt(value, prec) {
  const p = prec === undefined ? PREC : prec;
  if (value === undefined) return "–"; // not computed (a skipped tile's block max)
  if (value === null) return "−∞";
  if (value === "inf" || value === "Infinity" || value === Infinity) return "inf";
  if (value === "-inf" || value === "-Infinity" || value === -Infinity) return "−inf";
  if (value === "nan" || value === "NaN" || Number.isNaN(value)) return "NaN";
  const text = Math.abs(value) >= 1e8 ? exponential(value, p) : fixed(value, p);
  if (/[1-9]/.test(text)) return text;
  return value === 0 ? text.replace(/^-/, "") : exponential(value, 1);
}

// Python's f"{x:.{d}g}": a size to d significant digits (ui/numbers.significant).
function significant(value, d) {
  if (!Number.isFinite(value)) return value > 0 ? "∞" : value < 0 ? "−∞" : "NaN";
  if (value === 0) return Object.is(value, -0) ? "-0" : "0";
  const [mantissa, e] = rounded(value, d - 1);
  const strip = (t) => (t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t);
  if (e >= -4 && e < d) return strip(fixed(value, d - 1 - e));
  return (value < 0 ? "-" : "") + strip(mantissa) + exponentText(e);
}

// |x| exactly, as decimal digits: [the digits, how many of them stand before the point].
// A double is m · 2^e; with e < 0 it is m · 5^−e / 10^−e, digits BigInt writes exactly.
const FIVES = new Map();
function exactDigits(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const high = view.getUint32(0);
  const bits = (high >>> 20) & 0x7ff;
  let m = (BigInt(high & 0xfffff) << 32n) | BigInt(view.getUint32(4));
  let e = -1074; // a subnormal
  if (bits !== 0) { m |= 1n << 52n; e = bits - 1075; }
  if (e >= 0) { const whole = (m << BigInt(e)).toString(); return [whole, whole.length]; }
  if (!FIVES.has(-e)) FIVES.set(-e, 5n ** BigInt(-e));
  const digits = (m * FIVES.get(-e)).toString().padStart(-e + 1, "0");
  return [digits, digits.length + e];
}

// The digits kept up to ``upTo`` (an index into ``digits``), rounded half to even on all
// the digits dropped: the kept digits as a BigInt.
function roundedDigits(exact, upTo) {
  const digits = exact.padEnd(upTo, "0");
  const kept = upTo <= 0 ? 0n : BigInt(digits.slice(0, upTo));
  const rest = digits.slice(Math.max(upTo, 0));
  const first = upTo < 0 ? "0" : rest[0] || "0";
  const tail = upTo < 0 ? rest : rest.slice(1);
  const up = first > "5" || (first === "5" && (/[1-9]/.test(tail) || kept % 2n === 1n));
  return kept + (up ? 1n : 0n);
}

function fixed(value, p) {
  // toFixed rounds the exact value correctly but a tie away from zero: it is used where no
  // tie can be (|x|·10^(p+1) not within 0.01 of a whole number ending in 5; below 1e8 the
  // product's own rounding is far less), the exact digits otherwise
  const scaled = Math.abs(value) * 10 ** (p + 1);
  const whole = Math.round(scaled);
  if (p <= 15 && scaled < 1e15 && (Math.abs(scaled - whole) > 0.01 || whole % 10 !== 5)) {
    return (value < 0 || Object.is(value, -0) ? "-" : "") + Math.abs(value).toFixed(p);
  }
  const [digits, point] = exactDigits(value);
  let text = roundedDigits(digits, point + p).toString().padStart(p + 1, "0");
  if (p > 0) text = text.slice(0, text.length - p) + "." + text.slice(text.length - p);
  return (value < 0 || Object.is(value, -0) ? "-" : "") + text;
}

// |value| to p + 1 significant digits: ["d.ddd", its decimal exponent].
function rounded(value, p) {
  const [digits, point] = exactDigits(value);
  const lead = digits.search(/[1-9]/);
  let kept = roundedDigits(digits, lead + p + 1).toString();
  let e = point - lead - 1;
  if (kept.length > p + 1) { kept = kept.slice(0, p + 1); e += 1; } // 9.99995 -> 1.0000e+01
  return [p > 0 ? kept[0] + "." + kept.slice(1) : kept, e];
}

// "≤ 1e-15" for any difference up to it, else the power of ten just above it: how the
// terminal states an agreement that is rounding alone (ui/numbers.difference_bound),
// so that no page pins a float's last bits, which depend on the machine.
function differenceBound(difference) {
  let e = -15;
  if (difference > 1e-15) {
    e = Math.ceil(Math.log10(difference));
    if (10 ** e < difference) e += 1; // log10's own rounding at an exact power
  }
  return `≤ 1e${e}`;
}

const exponentText = (e) => "e" + (e < 0 ? "-" : "+") + String(Math.abs(e)).padStart(2, "0");

function exponential(value, p) {
  const [mantissa, e] = rounded(value, p);
  return (value < 0 ? "-" : "") + mantissa + exponentText(e);
}

// A --dtype stage's error against float64, as forward/views/dtype.error_text writes it:
// "float16 · max |Δ| 1.2e-03 · max rel 4.9e-04 vs float64 · 3 NaN", and where cells
// overflowed to ±inf "float16 · max |Δ| inf: 2 cells inf · the rest max |Δ| 0 · ...".
function errorText(error, dtype) {
  const size = (x) => (x === null || x === undefined ? "—" : x === 0 ? "0" : exponential(x, 1));
  const finite = `max |Δ| ${size(error.max_abs)} · max rel ${size(error.max_rel)} vs float64`;
  const cells = error.inf === 1 ? "1 cell" : `${error.inf} cells`;
  let text = error.inf ? `${dtype} · max |Δ| inf: ${cells} inf · the rest ${finite}` : `${dtype} · ${finite}`;
  if (error.nan) text += ` · ${error.nan} NaN`;
  return text;
}

// A cell's every digit, for a tooltip and the arithmetic's last line.
function exactText(value) {
  if (value === null) return "−∞ (masked)";
  return typeof value === "number" ? String(value) : fmt(value); // a --dtype overflow: inf, NaN
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

// " (K/V head 1)" where K/V heads are shared (GQA, MQA), "" where each head has its own.
function kvNote(model, kvHead) {
  const shared = model.kv_heads !== model.heads && kvHead !== null && kvHead !== undefined;
  return shared ? ` (K/V head ${kvHead})` : "";
}

const dims = (n) => range(n).map((d) => `d${d}`); // a vector's column labels, as the tables'
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

// The tokens as chips, a space between each, so that the sentence reads (and copies) as
// the terminal's header line: ``cat eats fish``, not ``cateatsfish``.
function tokenBoxes(tokens, title) {
  return el("p", { class: "sentence" + (title ? " context" : "") }, title ? `${title}: ` : null,
    tokens.flatMap((t, i) => [i ? " " : null, el("span", { class: "token", title: `position ${i}` }, visible(t, LABEL_LIMIT))]));
}

// The terminal's line on the tokenizer's marks (Ġ, ▁, ##: kernel/labels.marks_note's
// words, which build.py writes into #app), or null where the tokens have none.
function marksNote() {
  const words = document.getElementById("app").dataset.marks || "";
  return words ? el("p", { class: "note", id: "marks" }, words) : null;
}

// ``titles``: what to call the sentence and the context where the terminal names them
// (flash: "queries", "keys"); the sentence unnamed, the context "context" by default.
function pageHeader(what, model, tokens, contextTokens, extraFacts, titles) {
  const named = titles || {};
  const header = el("header", { class: "header" },
    el("h1", {}, `attntrace${what ? " " + what : ""} · `, el("span", { class: "model-name" }, visible(model.name, NAME_LIMIT))),
    el("p", { class: "facts" }, modelFacts(model, tokens, extraFacts)),
    tokenBoxes(tokens, named.tokens));
  if (contextTokens) header.append(tokenBoxes(contextTokens, named.context || "context"));
  const marks = marksNote();
  if (marks) header.append(marks);
  return header;
}

// ---- a matrix as a table --------------------------------------------------------------
// ``matrix``: {name, shape, rows, cols, data}. Options: key (what "Show all" remembers
// when the view is drawn again), heat (a heatmap of weights), explain (cells focusable,
// data-explain set to it), mark (r, c) -> a class for a cell or null, shownCols (the
// columns' labels as shown, made already). matrix.shownRows: likewise the rows'.
// key -> the first row a table shown whole starts at; absent: the table is summarized.
const expandedTables = new Map();
// A table shown whole draws at most this many cells at once (a page of rows, every
// column): the browser lays out 16,384 cells in a fraction of a second, 262,144 in several.
const PAGE_CELLS = 16384;

function matrixTable(matrix, options) {
  const o = options || {};
  const [n, m] = matrix.shape;
  const first = expandedTables.get(o.key);
  const expanded = first !== undefined;
  const perPage = Math.max(1, Math.floor(PAGE_CELLS / Math.max(1, m)));
  const rows = expanded ? range(Math.min(perPage, n - first)).map((i) => first + i) : shownIndices(n, SUMMARY_ROWS, false);
  const cols = shownIndices(m, SUMMARY_COLS, expanded);
  const table = el("table", { class: "matrix" + (o.heat ? " heat" : ""), "data-stage": matrix.name });
  const headRow = el("tr", {}, el("th", { class: "corner", scope: "col" }, o.corner || ""));
  for (const c of cols) {
    headRow.append(c === null ? el("th", { class: "gap", scope: "col" }, "⋯") : el("th", { scope: "col" }, o.shownCols ? o.shownCols[c] : label(matrix.cols, c)));
  }
  table.append(el("thead", {}, headRow));
  const body = el("tbody");
  for (const r of rows) {
    if (r === null) {
      body.append(el("tr", { class: "gap" }, el("th", { scope: "row" }, "⋮"), cols.map(() => el("td", { class: "gap" }, "⋮"))));
      continue;
    }
    const tr = el("tr", {}, el("th", { scope: "row" }, matrix.shownRows ? matrix.shownRows[r] : label(matrix.rows, r)));
    for (const c of cols) {
      if (c === null) { tr.append(el("td", { class: "gap" }, "⋯")); continue; }
      tr.append(matrixCell(matrix.data[r][c], r, c, o));
    }
    body.append(tr);
  }
  table.append(body);
  const wrap = el("div", { class: "table-wrap" }, table);
  if (n <= SUMMARY_ROWS && m <= SUMMARY_COLS) return wrap;
  // the same table again, summarized or shown whole from row ``at``; the focus stays on
  // the button pressed
  const redraw = (at, which) => {
    if (at === undefined) expandedTables.delete(o.key); else expandedTables.set(o.key, at);
    const again = matrixTable(matrix, o);
    wrap.replaceWith(again);
    const order = [which, which === "later" ? "earlier" : "later", "expand"]; // past the end: the other way
    order.map((name) => again.querySelector(`button.${name}:not([disabled])`)).find(Boolean).focus();
  };
  const controls = el("div", { class: "table-controls" });
  controls.append(el("button", { type: "button", class: "expand", onclick: () => redraw(expanded ? undefined : 0, "expand") },
    expanded ? "Summarize" : `Show all ${n} × ${m}`));
  if (expanded && perPage < n) {
    const last = Math.min(n, first + perPage);
    controls.append(
      el("button", { type: "button", class: "earlier", disabled: first === 0, onclick: () => redraw(Math.max(0, first - perPage), "earlier") }, "↑ Earlier rows"),
      el("span", { class: "rows-shown" }, `rows ${first + 1}–${last} of ${n}`),
      el("button", { type: "button", class: "later", disabled: last === n, onclick: () => redraw(first + perPage, "later") }, "Later rows ↓"));
  }
  wrap.append(controls);
  return wrap;
}

function matrixCell(value, r, c, o) {
  const td = el("td", { "data-row": r, "data-col": c, title: exactText(value) }, fmt(value));
  if (value === null) td.classList.add("masked");
  if (typeof value === "string") td.classList.add("overflow");
  if (o.heat && typeof value === "number") {
    const shade = heatShade(value);
    td.style.backgroundColor = `rgb(${shade.rgb.join(", ")})`;
    if (shade.dark) td.classList.add("dark");
  }
  const mark = o.mark ? o.mark(r, c) : null;
  if (mark) td.classList.add(mark);
  if (o.explain !== undefined && o.explain !== null) { td.tabIndex = 0; td.dataset.explain = String(o.explain); }
  return td;
}

// A weight's colour on the heatmap, as the terminal's (kernel/display.py weight_rgb, whose
// stops build.py writes into HEAT): clamped to [0, 1] and rounded to HEAT.decimals as
// Python's round() does (half to even, on the exact value), the stops mixed in a straight
// line, each channel rounded half to even. dark: a dark background, light text.
function heatShade(value) {
  const stops = HEAT.stops;
  const w = Number(fixed(Math.min(Math.max(value, 0), 1), HEAT.decimals));
  const at = w * (stops.length - 1);
  const low = Math.min(Math.floor(at), stops.length - 2);
  const frac = at - low;
  const rgb = stops[low].map((x, k) => halfEven(x + (stops[low + 1][k] - x) * frac));
  return { rgb, dark: !(w > HEAT.dark_text_above) };
}

function halfEven(x) {
  const down = Math.floor(x);
  const rest = x - down;
  return rest > 0.5 || (rest === 0.5 && down % 2 !== 0) ? down + 1 : down;
}

// A row of numbers (one query's scores, a token's k) as a one-row table.
function vectorTable(name, label, values, cols, options) {
  return matrixTable({ name, shape: [1, values.length], rows: [label], cols, data: [values] }, options);
}

// ---- stepping ------------------------------------------------------------------------
// Previous / Next, "k of N: what", and the ← → keys (not while a select or a checkbox has
// focus). One stepper per page drives its main view.
function makeStepper(nav, count, describe, show) {
  const state = { index: 0 };
  const prev = el("button", { type: "button", id: "prev", title: "Previous (←)", onclick: () => go(-1) }, "← Previous");
  const next = el("button", { type: "button", id: "next", title: "Next (→)", onclick: () => go(1) }, "Next →");
  const position = el("span", { id: "position", class: "position" });
  nav.prepend(prev, next, position); // the buttons stay put whatever the label's length
  function draw() {
    const n = count();
    state.index = Math.max(0, Math.min(n - 1, state.index));
    position.textContent = describe(state.index, n);
    const focused = document.activeElement;
    prev.disabled = state.index === 0;
    next.disabled = state.index === n - 1;
    if (focused === prev && prev.disabled) next.focus(); // focus never falls to the page
    if (focused === next && next.disabled) prev.focus();
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

// decode's page: one token at a time, the KV cache growing row by row (and, with a
// window, dropping its oldest row), the new query attending to every cached key.

function decodeView(root, doc) {
  const model = doc.model;
  const steps = doc.steps;
  const group = model.heads / model.kv_heads;
  const state = { head: 0 };
  const kvOf = (h) => Math.floor(h / group);
  const kvLabel = (h) => kvNote(model, kvOf(h));
  const headRow = (h) => `head ${h}${model.kv_heads < model.heads ? ` (K/V ${kvOf(h)})` : ""}`; // as the terminal's rows

  const c = doc.comparison;
  const header = pageHeader("decode", model, doc.tokens, null, doc.precision ? [`computed in ${doc.precision.dtype}`] : []);
  header.append(...verdictLines(doc));
  header.append(el("p", { class: "facts" }, `Multiply-adds over ${plural(steps.length, "step")}: ${doc.totals.cached.toLocaleString("en")} with the cache, ${doc.totals.recomputed.toLocaleString("en")} recomputing every prefix.`));
  const nav = el("nav", { class: "controls", "aria-label": "Decoding steps" });
  const growth = el("section", { id: "cache-growth", class: "growth", "aria-label": "The cache's length at every step" });
  const area = el("section", { id: "steps", "aria-live": "polite" });
  root.append(header, nav, growth, area);
  const stepper = makeStepper(nav, () => steps.length, (i, n) => `Step ${i + 1} of ${n}: ${quoted(steps[i].token)}`, draw);
  if (model.heads > 1) {
    nav.append(el("label", { for: "head" }, "Head "), headSelect(range(model.heads), (h) => `head ${h}${kvLabel(h)}`, (h) => { state.head = h; stepper.draw(); }));
  }

  // a cached position's label, as the terminal's decode writes it
  const unique = uniqueLabels(doc.tokens);
  const windowed = model.window !== null && model.window !== undefined;
  const positionLabel = (p) => (windowed ? `${visible(doc.tokens[p], LABEL_LIMIT)} @${p}` : visible(unique[p], LABEL_LIMIT));

  function drawGrowth(at) {
    const most = Math.max(...steps.map((s) => s.cache_length));
    const width = Math.max(240, Math.min(900, steps.length * 14));
    const bar = width / steps.length;
    const picture = svg("svg", { viewBox: `0 0 ${width} 70`, width, height: 70, role: "img", "aria-label": `The cache holds ${steps[at].cache_length} rows after step ${at + 1}; at most ${most}` });
    steps.forEach((s, i) => {
      const h = (60 * s.cache_length) / most;
      picture.append(svg("rect", { x: i * bar + 1, y: 64 - h, width: Math.max(1, bar - 2), height: h, class: i === at ? "now" : i < at ? "done" : "later", "data-step": i }));
    });
    growth.replaceChildren(el("h2", {}, "The cache's rows, step by step"), picture,
      el("p", { class: "hint" }, `After step ${at + 1}: ${plural(steps[at].cache_length, "row")} of K and of V per K/V head, ${steps[at].cache_bytes.toLocaleString("en")} bytes in ${doc.precision ? doc.precision.dtype : "float64"}.`));
  }

  function draw(at) {
    drawGrowth(at);
    const s = steps[at];
    const h = state.head;
    const g = kvOf(h);
    // the rows as the terminal labels them: the#0 … the#4 (with a window, 'the @4'), the
    // row just appended '◀ new'
    const keys = s.cache_positions.map((p) => positionLabel(p));
    const cached = s.cache_positions.map((p, r) => (p === s.t ? `${keys[r]} ◀ new` : keys[r]));
    const newRow = (r) => (s.cache_positions[r] === s.t ? "new" : null);
    const kCache = { name: "K cache", shape: [cached.length, s.k[g].length], shownRows: cached, rows: cached, cols: dims(s.k[g].length), data: s.cache_positions.map((p) => steps[p].k[g]) };
    const vCache = { name: "V cache", shape: [cached.length, s.v[g].length], shownRows: cached, rows: cached, cols: dims(s.v[g].length), data: s.cache_positions.map((p) => steps[p].v[g]) };
    const token = quoted(s.token);
    const card = el("article", { class: "stage current decode-step", "data-step": at, "aria-current": "step" },
      el("h2", {}, `Step ${at + 1} of ${steps.length} (t = ${s.t}): ${token}`, el("span", { class: "who" }, ` · head ${h}${kvLabel(h)}`)),
      el("p", { class: "caption" }, `appends its k and v to the cache, then its q attends over ${plural(keys.length, "cached key")}`),
    );
    if (s.dropped !== null && s.dropped !== undefined) {
      const dropped = Array.isArray(s.dropped) ? s.dropped : [s.dropped];
      card.append(el("p", { class: "note", id: "dropped" }, `The window dropped position${dropped.length === 1 ? "" : "s"} ${dropped.map((p) => `${p} (${quoted(steps[p].token)})`).join(", ")}: the cache keeps ${plural(s.cache_length, "row")}.`));
    }
    card.append(
      el("div", { class: "side-by-side" },
        el("div", {}, el("h3", {}, `K cache [${kCache.shape[0]} × ${kCache.shape[1]}], the new row marked`),
          matrixTable(kCache, { key: `K-${at}`, mark: newRow })),
        el("div", {}, el("h3", {}, `V cache [${vCache.shape[0]} × ${vCache.shape[1]}]`),
          matrixTable(vCache, { key: `V-${at}`, mark: newRow }))),
      el("h3", {}, `scaled = q·Kᵀ / √${model.d_k} for ${token} over the cache${model.positions === "rope" ? ` (q turned by RoPE at position ${s.t})` : ""}   [1 × ${keys.length}]`),
      vectorTable("scaled", headRow(h), s.scaled[h], keys, { key: `s-${at}`, shownCols: keys }),
      el("h3", {}, `softmax of each row: where ${token} looks`),
      vectorTable("weights", headRow(h), s.weights[h], keys, { key: `w-${at}`, heat: true, shownCols: keys }),
      el("h3", {}, `output = softmax · V cache: the row of ${token}`),
      vectorTable("output", headRow(h), s.output[h], dims(s.output[h].length), { key: `o-${at}` }),
    );
    if (s.projected) card.append(el("h3", {}, "projected = concat of the heads · WO"), vectorTable("projected", "projected", s.projected, dims(s.projected.length), { key: `p-${at}` }));
    card.append(el("p", { class: "facts" }, `This step: ${s.multiply_adds.cached.toLocaleString("en")} multiply-adds with the cache, ${s.multiply_adds.recomputed.toLocaleString("en")} recomputing the prefix.`));
    area.replaceChildren(card);
  }
  stepper.draw();
}

// The verdict in the terminal's words (decode/views/summary.py): the bound it was judged
// against to two digits rounded up, and the difference measured where the page was made.
function verdictLines(doc) {
  const model = doc.model;
  const c = doc.comparison;
  const steps = doc.steps.length;
  const over = `${plural(steps, "step")} × ${plural(model.heads, "head")}`;
  const line = (id, text) => el("p", { class: id === "verdict" ? "verdict" : "facts", id }, text);
  if (doc.precision) {
    const dtype = doc.precision.dtype;
    if (c.matches) {
      return [line("verdict", `decode equals full causal attention in ${dtype} exactly: max |Δ| = 0`),
        line("bound", `${over}, every output cell: the same rounded operations (a masked key adds exp(−∞) = 0 to the sum and 0 · v = 0 to the output)`)];
    }
    const cells = plural(c.differing_cells, "cell").replace(/^(\d+)/, (n) => Number(n).toLocaleString("en"));
    const size = c.max_abs_delta === null ? "—" : c.max_abs_delta === 0 ? "0" : exponential(c.max_abs_delta, 1);
    return [line("verdict", `decode DIFFERS FROM full causal attention in ${dtype}: ${cells} of ${over}; max |Δ| = ${size} over the cells both hold finite`)];
  }
  const bound = `|Δ| ≤ ${roundedUp(c.rounding_bound)} for these numbers`;
  if (!c.matches) {
    return [line("verdict", `decode DIFFERS FROM full causal attention: ${over}`),
      line("bound", `max |Δ| = ${exponential(c.max_abs_delta, 1)}, past float64 rounding: ${bound}`)];
  }
  return [line("verdict", `decode matches full causal attention: ${over}`),
    line("bound", `every output within float64 rounding of it: ${bound}`),
    line("measured", `measured here: max |Δ| = ${exponential(c.max_abs_delta, 1)} (the last bits depend on the CPU's BLAS)`)];
}

// Python's decode/views/summary.rounded_up: two significant digits, rounded up, so that
// what is shown is never less than what was checked.
function roundedUp(bound) {
  if (bound <= 0) return "0";
  let text = exponential(bound, 1);
  if (Number(text) < bound) {
    const [mantissa, exponent] = text.split("e");
    text = `${fixed(Number(mantissa) + 0.1, 1)}e${exponent}`;
    text = exponential(Number(text), 1);
  }
  return text;
}

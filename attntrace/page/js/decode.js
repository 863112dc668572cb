// decode's page: one token at a time, the KV cache growing row by row (and, with a
// window, dropping its oldest row), the new query attending to every cached key.

function decodeView(root, doc) {
  const model = doc.model;
  const steps = doc.steps;
  const group = model.heads / model.kv_heads;
  const state = { head: 0 };
  const kvOf = (h) => Math.floor(h / group);
  const kvLabel = (h) => kvNote(model, kvOf(h));

  const c = doc.comparison;
  const header = pageHeader("decode", model, doc.tokens, null, doc.precision ? [`computed in ${doc.precision.dtype}`] : []);
  // as the terminal says it: judged against float64's rounding bound (a figure of the
  // numbers alone), never the difference's machine-dependent last bits
  const over = `${plural(steps.length, "step")} × ${plural(model.heads, "head")}`;
  header.append(el("p", { class: "verdict", id: "verdict" }, doc.precision
    ? (c.matches ? `decode matches full causal attention in ${doc.precision.dtype}, cell for cell: ${over}`
      : `decode differs from full causal attention in ${doc.precision.dtype} in ${plural(c.differing_cells, "cell")}: ${over}`)
    : (c.matches ? `decode matches full causal attention: ${over}, every output within float64 rounding of it (|Δ| ${differenceBound(c.rounding_bound)})`
      : `decode DIFFERS FROM full causal attention: ${over}, max |Δ| ${significant(c.max_abs_delta, 2)}, past float64 rounding (|Δ| ${differenceBound(c.rounding_bound)})`)));
  header.append(el("p", { class: "facts" }, `Multiply-adds over ${plural(steps.length, "step")}: ${doc.totals.cached.toLocaleString("en")} with the cache, ${doc.totals.recomputed.toLocaleString("en")} recomputing every prefix.`));
  const nav = el("nav", { class: "controls", "aria-label": "Decoding steps" });
  const growth = el("section", { id: "cache-growth", class: "growth", "aria-label": "The cache's length at every step" });
  const area = el("section", { id: "steps", "aria-live": "polite" });
  root.append(header, nav, growth, area);
  const stepper = makeStepper(nav, () => steps.length, (i, n) => `Step ${i + 1} of ${n}: ${quoted(steps[i].token)}`, draw);
  if (model.heads > 1) {
    nav.append(el("label", { for: "head" }, "Head "), headSelect(range(model.heads), (h) => `head ${h}${kvLabel(h)}`, (h) => { state.head = h; stepper.draw(); }));
  }

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
    const cached = s.cache_positions.map((p) => `${visible(steps[p].token, LABEL_LIMIT)} (${p})`);
    const newRow = (r) => (s.cache_positions[r] === s.t ? "new" : null);
    const kCache = { name: "K cache", shape: [cached.length, s.k[g].length], rows: cached, cols: dims(s.k[g].length), data: s.cache_positions.map((p) => steps[p].k[g]) };
    const vCache = { name: "V cache", shape: [cached.length, s.v[g].length], rows: cached, cols: dims(s.v[g].length), data: s.cache_positions.map((p) => steps[p].v[g]) };
    const card = el("article", { class: "stage current decode-step", "data-step": at, "aria-current": "step" },
      el("h2", {}, `Step ${at + 1}: the token ${quoted(s.token)} at position ${s.t}`, el("span", { class: "who" }, ` · head ${h}${kvLabel(h)}`)),
      el("p", { class: "caption" }, "Its query, key and value are computed from its row of X alone; the key and value are appended to the cache; the query attends to every cached key."),
      el("h3", {}, "q, k, v of the new token"),
      el("div", { class: "side-by-side" },
        vectorTable("q", "q", s.q[h], dims(s.q[h].length), { key: `q-${at}` }),
        vectorTable("k", "k", s.k[g], dims(s.k[g].length), { key: `k-${at}` }),
        vectorTable("v", "v", s.v[g], dims(s.v[g].length), { key: `v-${at}` })),
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
      el("h3", {}, "scores = q · Kᵀ and scaled = scores / √d_k, one column per cached key"),
      matrixTable({ name: "scores", shape: [2, cached.length], rows: ["scores", "scaled"], cols: cached, data: [s.scores[h], s.scaled[h]] }, { key: `s-${at}` }),
      el("h3", {}, "weights = softmax(scaled)"),
      vectorTable("weights", "weights", s.weights[h], cached, { key: `w-${at}`, heat: true }),
      el("h3", {}, "output = weights · V cache"),
      vectorTable("output", "output", s.output[h], dims(s.output[h].length), { key: `o-${at}` }),
    );
    if (s.projected) card.append(el("h3", {}, "projected = every head's output · WO"), vectorTable("projected", "projected", s.projected, dims(s.projected.length), { key: `p-${at}` }));
    card.append(el("p", { class: "facts" }, `This step: ${s.multiply_adds.cached.toLocaleString("en")} multiply-adds with the cache, ${s.multiply_adds.recomputed.toLocaleString("en")} recomputing the prefix.`));
    area.replaceChildren(card);
  }
  stepper.draw();
}

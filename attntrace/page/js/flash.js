// flash's page: FlashAttention's grid of tiles filled one tile at a time, each tile's
// block of scores, its running max m, sum ℓ and output O; then the result against
// standard attention and the memory never used.

// A tile's mark in the grid, as flash --step's (kernels/views/flash_step.py)
const TILE_MARKS = Object.freeze({ now: "■", done: "✓", skipped: "·", later: "□", none: "" });

function flashView(root, doc) {
  const model = doc.model;
  const tiles = doc.tiles;
  const n = doc.tokens.length;
  const m = doc.key_tokens.length;
  const rowBlocks = Math.ceil(n / doc.block_q);
  const colBlocks = Math.ceil(m / doc.block_k);
  const kv = kvNote(model, doc.kv_head);
  // the whole sentence's labels, as the terminal's (the#0, the#4): a tile's slice of them
  // would tell nothing apart, or number a repeat by its place in the tile
  const queryLabels = uniqueLabels(doc.tokens);
  const keyLabels = uniqueLabels(doc.key_tokens);
  // the sentence as the terminal's header gives it: "queries: the#0 cat …", and "keys: …"
  const crossed = doc.key_tokens.join("\u0000") !== doc.tokens.join("\u0000");
  const header = pageHeader("flash", model, queryLabels, crossed ? keyLabels : null,
    [`head ${doc.head}${kv}`, `FlashAttention${doc.variant === 2 ? "-2" : ""}`, `tiles of ${doc.block_q} queries × ${doc.block_k} keys`],
    { tokens: "queries", context: "keys" });
  const nav = el("nav", { class: "controls", "aria-label": "Tiles" });
  const grid = el("section", { id: "tile-grid", class: "tile-grid-area", "aria-label": "The grid of tiles" });
  const area = el("section", { id: "tiles", "aria-live": "polite" });
  root.append(header, nav, grid, area);
  // The steps are the computed tiles, as flash --step's screens (kernels/views/flash_step.py):
  // a skipped tile is never visited, so it is no step, and is marked skipped from the start.
  const computed = range(tiles.length).filter((k) => !tiles[k].skipped);
  const stepOf = new Map(computed.map((k, s) => [k, s]));
  const last = computed.length; // one more step: the result
  const stepper = makeStepper(nav, () => computed.length + 1,
    (s) => (s === last ? "The result" : `Tile ${s + 1} of ${computed.length} computed · (${tiles[computed[s]].i}, ${tiles[computed[s]].j})`),
    (s) => draw(s === last ? tiles.length : computed[s]));

  const tokenRange = (labels, [a, b]) => `${quoted(labels[a])} to ${quoted(labels[b - 1])} (${a}–${b - 1})`;

  function drawGrid(at) {
    const onTile = document.activeElement && document.activeElement.classList.contains("tile");
    const order = new Map(tiles.map((t, k) => [`${t.i},${t.j}`, k]));
    const table = el("div", { class: "tile-grid", style: `grid-template-columns: repeat(${colBlocks}, minmax(0.8rem, 2.6rem))` });
    for (let i = 0; i < rowBlocks; i += 1) {
      for (let j = 0; j < colBlocks; j += 1) {
        const k = order.get(`${i},${j}`);
        const tile = k === undefined ? null : tiles[k];
        // the terminal's marks: ■ this tile, ✓ done, · skipped (always), □ not yet
        const state = tile === null ? "none" : tile.skipped ? "skipped" : k === at ? "now" : k < at ? "done" : "later";
        const label = tile === null ? `tile (${i}, ${j}): not in the loop`
          : tile.skipped ? `tile (${i}, ${j}): skipped, ${tile.why}` : `tile (${i}, ${j}): tile ${stepOf.get(k) + 1} of ${computed.length} computed`;
        table.append(el("button", { type: "button", class: `tile ${state}${tile !== null && tile.skipped ? " skip" : ""}`, "data-i": i, "data-j": j, "data-state": state, title: label, "aria-label": label,
          onclick: () => { if (stepOf.has(k)) { stepper.state.index = stepOf.get(k); stepper.draw(); } } }, TILE_MARKS[state]));
      }
    }
    grid.replaceChildren(el("h2", {}, "The tiles: query blocks down, key blocks across"), table,
      el("p", { class: "hint" }, `${TILE_MARKS.now} this tile, ${TILE_MARKS.done} done, ${TILE_MARKS.skipped} skipped, ${TILE_MARKS.later} not yet: the computed tiles in the order FlashAttention${doc.variant === 2 ? "-2" : ""} runs them; a skipped tile (every cell hidden) is never visited. Click a tile to go to it.`));
    if (onTile) (table.querySelector(".tile.now") || table.querySelector(".tile"))?.focus(); // the grid keeps the focus
  }

  function rowTable(t) {
    const rows = range(t.rows[1] - t.rows[0]);
    const cols = ["m old", "block max", "m new", "rescale", "ℓ old", "ℓ new"];
    const data = rows.map((r) => [t.m_old[r], t.block_max ? t.block_max[r] : undefined, t.m_new[r], t.rescale ? t.rescale[r] : undefined, t.l_old[r], t.l_new[r]]);
    return matrixTable({ name: "running", shape: [rows.length, cols.length], rows: rows.map((r) => queryLabels[t.rows[0] + r]), cols, data }, { key: `run-${t.i}-${t.j}` });
  }

  function draw(at) {
    drawGrid(at);
    if (at === tiles.length) { area.replaceChildren(resultCard()); return; }
    const t = tiles[at]; // never a skipped one: those are no step
    const rowsOf = range(t.rows[1] - t.rows[0]).map((r) => queryLabels[t.rows[0] + r]);
    const colsOf = range(t.cols[1] - t.cols[0]).map((c) => keyLabels[t.cols[0] + c]);
    const card = el("article", { class: "stage current tile-step", "data-tile": `${t.i},${t.j}`, "aria-current": "step" },
      el("h2", {}, `Tile (${t.i}, ${t.j}): queries ${tokenRange(queryLabels, t.rows)} × keys ${tokenRange(keyLabels, t.cols)}`));
    card.append(
      el("h3", {}, "S = Q_block · K_blockᵀ / √d_k (hidden cells −∞)"),
      matrixTable({ name: "S", shape: [rowsOf.length, colsOf.length], rows: rowsOf, cols: colsOf, data: t.scores }, { key: `S-${at}` }),
      el("h3", {}, doc.variant === 2 ? "P = exp(S − m new): this tile's weights, before dividing by ℓ"
        : "P = exp(S − block max): this tile's weights against its own max"),
      matrixTable({ name: "P", shape: [rowsOf.length, colsOf.length], rows: rowsOf, cols: colsOf, data: t.weights }, { key: `P-${at}`, heat: true }),
    );
    card.append(
      el("h3", {}, "The running max and sum per query: m new = max(m old, block max), rescale = exp(m old − m new), " +
        (doc.variant === 2 ? "ℓ new = rescale · ℓ old + Σ P" : "ℓ new = rescale · ℓ old + exp(block max − m new) · Σ P")),
      rowTable(t),
      el("h3", {}, doc.variant === 2 ? "O after this tile (rescaled and added to; divided by ℓ only at the end of the row)" : "O after this tile (kept divided by ℓ)"),
      matrixTable({ name: "O", shape: [rowsOf.length, t.output[0].length], rows: rowsOf, cols: dims(t.output[0].length), data: t.output }, { key: `O-${at}` }),
    );
    area.replaceChildren(card);
  }

  // flash's own count (kernels/views/flash.py's summary): one reason unnumbered, several
  // each with its count
  function tileCount() {
    const reasons = [["the future", "every key after every query"], ["out of the window", "every key out of the window"],
      ["the future and out of the window", "every key later or out of the window"]]
      .map(([why, words]) => [tiles.filter((t) => t.skipped && t.why === why).length, words]).filter(([c]) => c > 0);
    const said = reasons.length === 1 ? reasons[0][1] : reasons.map(([c, w]) => `${c.toLocaleString("en")} ${w}`).join("; ");
    const skipped = tiles.length - computed.length;
    return `${computed.length.toLocaleString("en")} computed${skipped ? `, ${skipped.toLocaleString("en")} skipped (${said})` : ""}, of ${tiles.length.toLocaleString("en")}`;
  }

  function resultCard() {
    const dims = range(doc.output[0].length).map((d) => `d${d}`);
    const mem = doc.memory;
    return el("article", { class: "stage current flash-result", "aria-current": "step" },
      el("h2", {}, "The result"),
      el("p", { id: "tile-count" }, el("strong", {}, "tiles: "), tileCount()),
      el("p", { class: "verdict", id: "verdict" }, `matches standard attention: max |Δ| ${differenceBound(doc.max_abs_difference)}, the same numbers up to float64's rounding`),
      el("h3", {}, "output, tile by tile"),
      matrixTable({ name: "output", shape: [n, dims.length], rows: doc.tokens, cols: dims, data: doc.output }, { key: "flash-out" }),
      el("h3", {}, "output of standard attention, softmax(Q·Kᵀ/√d_k)·V"),
      matrixTable({ name: "standard", shape: [n, dims.length], rows: doc.tokens, cols: dims, data: doc.standard_output }, { key: "flash-std" }),
      doc.sink ? el("h3", {}, "each row's weight on the sink logit: exp(s − m) ÷ (ℓ + exp(s − m)), joined at the end of the row") : null,
      doc.sink ? vectorTable("sink", "sink", doc.sink, doc.tokens, { key: "flash-sink", heat: true }) : null,
      el("p", { class: "facts" }, `Memory: the n × n weights standard attention stores take ${mem.standard_bytes.toLocaleString("en")} bytes; one tile at a time takes ${mem.tile_bytes.toLocaleString("en")}.`));
  }
  stepper.draw();
}

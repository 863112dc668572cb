// flash's page: FlashAttention's grid of tiles filled one tile at a time, each tile's
// block of scores, its running max m, sum ℓ and output O; then the result against
// standard attention and the memory never used.

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
  const header = pageHeader("flash", model, doc.tokens, doc.key_tokens !== doc.tokens && doc.key_tokens.join("\u0000") !== doc.tokens.join("\u0000") ? doc.key_tokens : null,
    [`head ${doc.head}${kv}`, `FlashAttention${doc.variant === 2 ? "-2" : ""}`, `tiles of ${doc.block_q} queries × ${doc.block_k} keys`]);
  const nav = el("nav", { class: "controls", "aria-label": "Tiles" });
  const grid = el("section", { id: "tile-grid", class: "tile-grid-area", "aria-label": "The grid of tiles" });
  const area = el("section", { id: "tiles", "aria-live": "polite" });
  root.append(header, nav, grid, area);
  const last = tiles.length; // one more step: the result
  const stepper = makeStepper(nav, () => tiles.length + 1,
    (i, count) => (i === last ? `Step ${count} of ${count}: the result` : `Tile ${i + 1} of ${tiles.length}: (${tiles[i].i}, ${tiles[i].j})${tiles[i].skipped ? ", skipped" : ""}`), draw);

  const tokenRange = (labels, [a, b]) => `${quoted(labels[a])} to ${quoted(labels[b - 1])} (${a}–${b - 1})`;

  function drawGrid(at) {
    const onTile = document.activeElement && document.activeElement.classList.contains("tile");
    const order = new Map(tiles.map((t, k) => [`${t.i},${t.j}`, k]));
    const table = el("div", { class: "tile-grid", style: `grid-template-columns: repeat(${colBlocks}, minmax(0.8rem, 2.6rem))` });
    for (let i = 0; i < rowBlocks; i += 1) {
      for (let j = 0; j < colBlocks; j += 1) {
        const k = order.get(`${i},${j}`);
        const tile = k === undefined ? null : tiles[k];
        const state = tile === null ? "none" : k === at ? "now" : k < at ? (tile.skipped ? "skipped" : "done") : "later";
        const label = tile === null ? `tile (${i}, ${j}): not in the loop` : `tile (${i}, ${j}), step ${k + 1}${tile.skipped ? `: skipped, ${tile.why}` : ""}`;
        const skipShown = tile !== null && tile.skipped && k <= at;
        table.append(el("button", { type: "button", class: `tile ${state}${skipShown ? " skip" : ""}`, "data-i": i, "data-j": j, "data-state": state, title: label, "aria-label": label,
          onclick: () => { if (k !== undefined) { stepper.state.index = k; stepper.draw(); } } }, skipShown ? "×" : k === undefined ? "" : String(k + 1)));
      }
    }
    const done = Math.min(at, tiles.length);
    grid.replaceChildren(el("h2", {}, "The tiles: query blocks down, key blocks across"), table,
      el("p", { class: "hint" }, `${done} of ${tiles.length} tiles done, in the order FlashAttention${doc.variant === 2 ? "-2" : ""} runs them; × a tile skipped whole (every cell hidden). Click a tile to go to it.`));
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
    if (at === last) { area.replaceChildren(resultCard()); return; }
    const t = tiles[at];
    const rowsOf = range(t.rows[1] - t.rows[0]).map((r) => queryLabels[t.rows[0] + r]);
    const colsOf = range(t.cols[1] - t.cols[0]).map((c) => keyLabels[t.cols[0] + c]);
    const card = el("article", { class: "stage current tile-step", "data-tile": `${t.i},${t.j}`, "aria-current": "step" },
      el("h2", {}, `Tile (${t.i}, ${t.j}): queries ${tokenRange(queryLabels, t.rows)} × keys ${tokenRange(keyLabels, t.cols)}`));
    if (t.skipped) {
      card.append(el("p", { class: "note", id: "skipped" }, `Skipped: every cell is hidden (${t.why}). Nothing is loaded or computed; m, ℓ and O stay as they were.`));
    } else {
      card.append(
        el("h3", {}, "S = Q_block · K_blockᵀ / √d_k (hidden cells −∞)"),
        matrixTable({ name: "S", shape: [rowsOf.length, colsOf.length], rows: rowsOf, cols: colsOf, data: t.scores }, { key: `S-${at}` }),
        el("h3", {}, doc.variant === 2 ? "P = exp(S − m new): this tile's weights, before dividing by ℓ"
          : "P = exp(S − block max): this tile's weights against its own max"),
        matrixTable({ name: "P", shape: [rowsOf.length, colsOf.length], rows: rowsOf, cols: colsOf, data: t.weights }, { key: `P-${at}`, heat: true }),
      );
    }
    card.append(
      el("h3", {}, "The running max and sum per query: m new = max(m old, block max), rescale = exp(m old − m new), " +
        (doc.variant === 2 ? "ℓ new = rescale · ℓ old + Σ P" : "ℓ new = rescale · ℓ old + exp(block max − m new) · Σ P")),
      rowTable(t),
      el("h3", {}, doc.variant === 2 ? "O after this tile (rescaled and added to; divided by ℓ only at the end of the row)" : "O after this tile (kept divided by ℓ)"),
      matrixTable({ name: "O", shape: [rowsOf.length, t.output[0].length], rows: rowsOf, cols: dims(t.output[0].length), data: t.output }, { key: `O-${at}` }),
    );
    area.replaceChildren(card);
  }

  function resultCard() {
    const dims = range(doc.output[0].length).map((d) => `d${d}`);
    const mem = doc.memory;
    return el("article", { class: "stage current flash-result", "aria-current": "step" },
      el("h2", {}, "The result"),
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

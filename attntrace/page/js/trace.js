// The trace explorer (run, render; and grad's forward and backward stages): one stage at
// a time with its table, the arithmetic behind a cell, and the head view.
const ALL_LINES = 48; // the head view draws every line up to this many tokens a side

function traceView(root, doc, captions, options) {
  const o = options || {};
  const model = doc.model;
  const heads = doc.heads_traced || range(model.heads);
  const stages = doc.stages.concat(o.moreStages || []); // grad's d_ stages follow
  const allCaptions = captions.concat(o.moreCaptions || []);
  const perHead = stages.some((s) => s.head !== null);
  const state = { head: heads[0], all: false };

  // ---- lookups --------------------------------------------------------------------
  const stagesOf = (head) => stages.map((stage, at) => ({ stage, at }))
    .filter(({ stage }) => stage.head === null || stage.head === head);
  const find = (name, head) => stages.find((s) => s.name === name && s.head === head) || null;
  const lastOf = (names, head) => names.map((n) => find(n, head)).filter(Boolean).pop() || null;
  const kvLabel = (stage) => kvNote(model, stage.kv_head);
  function weightFor(stage) {
    const name = { Q: "WQ", K: "WK", V: "WV" }[stage.name];
    if (!name) return null;
    return doc.weights.find((w) => w.name === name && (w.head === stage.head || (w.head === null && w.kv_head === stage.kv_head))) || null;
  }

  // ---- the page -------------------------------------------------------------------
  const facts = doc.precision ? [`computed in ${doc.precision.dtype}`] : [];
  const header = pageHeader(o.what || "", model, doc.tokens, doc.context_tokens, facts);
  const low = doc.precision; // run --dtype: the stages hold the dtype's values
  if (low) {
    header.append(el("p", { class: "note", id: "dtype" }, `Computed in ${low.dtype}: ${low.rule}. Each stage's error against float64 is under its table.`));
    if (low.first_overflow) header.append(el("p", { class: "note", id: "overflow" }, `First overflow: ${visible(low.first_overflow.explanation, 4 * NAME_LIMIT)}`));
  }
  if (o.leftOut > 0) {
    header.append(el("p", { class: "note", id: "left-out" },
      `This page holds head${heads.length === 1 ? "" : "s"} ${heads.join(", ")} of ${model.heads}: ` +
      `${o.leftOut} more would make it too big to open quickly. To see head H, cut the trace to it: attntrace run … --json --heads H | attntrace render - --export FILE.html`));
  }
  for (const note of o.notes || []) header.append(note);
  const nav = el("nav", { class: "controls", "aria-label": "Stages and heads" });
  const stageArea = el("section", { id: "stages", "aria-live": "polite" });
  const arithmetic = el("aside", { id: "arithmetic", class: "arithmetic", "aria-live": "polite", "aria-label": "The arithmetic behind a cell" },
    el("h2", {}, "The arithmetic"),
    el("p", { class: "hint" }, "Hover over or focus (Tab) a cell of scores, scaled, softmax or output to see how it was computed."));
  const headView = el("section", { id: "head-view", class: "head-view", "aria-label": "Head view" });
  root.append(header, nav, el("div", { class: "body" }, stageArea, arithmetic, headView));

  const stepper = makeStepper(nav, () => stagesOf(state.head).length,
    (i, n) => `Stage ${i + 1} of ${n}: ${stagesOf(state.head)[i].stage.name}`, drawStages);
  if (perHead && heads.length > 1) {
    const select = headSelect(heads, (h) => {
      const any = find("softmax", h) || find("K", h);
      return `head ${h}${any ? kvLabel(any) : ""}`;
    }, (h) => {
      const name = stagesOf(state.head)[stepper.state.index].stage.name;
      state.head = h;
      const same = stagesOf(h).findIndex(({ stage }) => stage.name === name);
      if (same >= 0) stepper.state.index = same;
      stepper.draw();
      drawHeadView();
    });
    nav.append(el("label", { for: "head" }, "Head "), select);
  }
  const every = el("input", { type: "checkbox", id: "all-stages" });
  every.addEventListener("change", () => { state.all = every.checked; stepper.draw(); });
  nav.append(el("label", { class: "all" }, every, " every stage"));

  // ---- stages ---------------------------------------------------------------------
  // Every stage of the head is on the page; on screen only the current one shows (unless
  // "every stage"), on paper all of them, without needing the print event.
  const hint = arithmetic.cloneNode(true);
  function drawStages(index) {
    const list = stagesOf(state.head);
    const current = list[index];
    stageArea.replaceChildren(...list.map(({ stage, at }) => stageCard(stage, at, at === current.at)));
    stageArea.classList.toggle("one", !state.all);
    arithmetic.replaceChildren(...hint.cloneNode(true).childNodes); // no cell of another stage
    delete arithmetic.dataset.stage;
    if (state.all) document.getElementById(`stage-${current.at}`)?.scrollIntoView({ block: "nearest" });
  }
  function stageCard(stage, at, isCurrent) {
    const words = allCaptions[at] || {};
    const who = stage.head === null || stage.head === undefined ? "" : ` · head ${stage.head}${kvLabel(stage)}`;
    const explained = ["scores", "scaled", "softmax", "output"].includes(stage.name) && at < doc.stages.length;
    const card = el("article", { class: "stage" + (isCurrent ? " current" : ""), id: `stage-${at}`, "data-stage": stage.name, "aria-current": isCurrent ? "step" : null },
      el("h2", {}, el("span", { class: "formula" }, visible(stage.formula)), " ", el("span", { class: "shape" }, shapeText(stage)), el("span", { class: "who" }, who)),
      words.one_line ? el("p", { class: "caption" }, words.one_line) : null,
      words.paragraph ? el("p", { class: "paragraph" }, words.paragraph) : null,
      matrixTable(stage, { key: at, heat: stage.name === "softmax" || stage.name === "sink", explain: explained ? at : null }));
    if (stage.error) card.append(el("p", { class: "note" }, errorText(stage.error, low.dtype)));
    const weight = weightFor(stage);
    if (weight) {
      card.append(el("details", { class: "weight" }, el("summary", {}, `${weight.name} ${shapeText(weight)}, the weight it was computed with`),
        matrixTable(weight, { key: `w-${at}` })));
    }
    return card;
  }

  // ---- the arithmetic behind a cell -------------------------------------------------
  function onCell(event) {
    const td = event.target.closest && event.target.closest("td[data-explain]");
    if (!td) return;
    document.querySelectorAll("td.picked").forEach((x) => x.classList.remove("picked"));
    td.classList.add("picked");
    explain(stages[Number(td.dataset.explain)], Number(td.dataset.row), Number(td.dataset.col));
  }
  stageArea.addEventListener("mouseover", onCell);
  stageArea.addEventListener("focusin", onCell);

  function explain(stage, r, c) {
    const value = stage.data[r][c];
    const parts = [el("h2", {}, `${stage.name}[${label(stage.rows, r)}, ${label(stage.cols, c)}]`, perHead && heads.length > 1 ? ` · head ${stage.head}` : "")];
    const how = { scores: explainScores, scaled: explainScaled, softmax: explainSoftmax, output: explainOutput }[stage.name];
    if (low) { // as the terminal refuses --focus with --dtype: hand arithmetic is float64's
      parts.push(line(`This cell holds ${low.dtype}'s result, ${fmt(value)}, by the rule above. The arithmetic by hand is float64's, so it is not written out for a ${low.dtype} trace: trace it without --dtype to see it.`));
    } else {
      parts.push(...how(stage, r, c));
    }
    parts.push(line("exactly: ", el("code", { class: "exact" }, exactText(value))));
    arithmetic.replaceChildren(...parts);
    Object.assign(arithmetic.dataset, { stage: stage.name, row: String(r), col: String(c) });
  }
  const result = (value) => el("strong", { class: "result" }, fmt(value));
  function explainScores(stage, r, c) {
    const qs = lastOf(["Q", "Q_norm", "Q_rope"], stage.head);
    const ks = lastOf(["K", "K_norm", "K_rope"], stage.head);
    if (!qs || !ks) return [line("The queries or keys of this head are not in the page.")];
    const q = qs.data[r];
    const k = ks.data[c];
    return [
      line(`scores = ${qs.name}[${label(qs.rows, r)}] · ${ks.name}[${label(ks.rows, c)}]: the sum over ${q.length} dimensions of q × k`),
      termsTable(["", "q", "k", "q × k"], q.length, (d) => [label(qs.cols, d),
        term("q", fmt(q[d])), term("k", fmt(k[d])), term("product", fmt(q[d] * k[d]))]),
      line("sum = ", result(stage.data[r][c])),
    ];
  }
  function explainScaled(stage, r, c) {
    const scores = find("scores", stage.head);
    const s = scores ? scores.data[r][c] : null;
    return [line("scaled = scores ÷ √d_k = ", term("scores", fmt(s)), ` ÷ √${model.d_k} = `, term("scores", fmt(s)), " ÷ ",
      term("root", fmt(Math.sqrt(model.d_k))), " = ", result(stage.data[r][c]))];
  }
  function explainSoftmax(stage, r, c) {
    const list = stagesOf(stage.head).map(({ stage: s }) => s);
    const before = list[list.indexOf(stage) - 1]; // scaled, biased, capped or masked
    const row = before.data[r];
    const logits = model.sink_logits;
    const sink = logits ? logits[logits.length === 1 ? 0 : stage.head] : null;
    const finite = row.filter((x) => typeof x === "number");
    const top = finite.length ? Math.max(...finite) : -Infinity;
    const M = sink === null ? top : Math.max(top, sink);
    const exps = row.map((x) => (typeof x === "number" ? Math.exp(x - M) : 0));
    const sum = exps.reduce((a, b) => a + b, 0) + (sink === null ? 0 : Math.exp(sink - M));
    const x = row[c];
    const parts = [
      line(`softmax of ${before.name}'s row ${label(before.rows, r)}: exp(x − M) ÷ Σ exp(x − M)`),
      line(sink === null ? "M = the row's max = " : `M = max(the row's max, the sink logit ${fmt(sink)}) = `, term("max", fmt(M))),
    ];
    if (typeof x !== "number") {
      parts.push(line(`x = ${fmt(x)}: hidden, exp(−∞) = 0, so its weight is `, result(stage.data[r][c])));
      return parts;
    }
    parts.push(
      line("exp(x − M) = exp(", term("x", fmt(x)), " − ", term("max", fmt(M)), ") = ", term("exp", fmt(exps[c], 6))),
      el("details", { class: "row-terms" }, el("summary", {}, `the row's ${row.length} terms of the sum`),
        termsTable(["key", "x", "exp(x − M)", "share"], row.length, (j) => [label(before.cols, j),
          fmt(row[j]), fmt(exps[j], 6), fmt(stage.data[r][j])])),
      line(sink === null ? "the row's sum Σ exp(x − M) = " : "the row's sum, with the sink's exp(s − M) = ", term("sum", fmt(sum, 6))),
      line("share = ", term("exp", fmt(exps[c], 6)), " ÷ ", term("sum", fmt(sum, 6)), " = ", result(stage.data[r][c])),
    );
    return parts;
  }
  function explainOutput(stage, r, c) {
    const weights = find("softmax", stage.head);
    const values = find("V", stage.head);
    if (!weights || !values) return [line("The weights or values of this head are not in the page.")];
    const w = weights.data[r];
    return [
      line(`output = the sum over ${w.length} keys of weight × V[key, ${label(stage.cols, c)}]`),
      termsTable(["key", "weight", "V", "weight × V"], w.length, (j) => [label(weights.cols, j), term("weight", fmt(w[j], 6)),
        term("value", fmt(values.data[j][c])), term("product", fmt(typeof w[j] === "number" ? w[j] * values.data[j][c] : 0))]),
      line("sum = ", result(stage.data[r][c])),
    ];
  }

  // ---- the head view ----------------------------------------------------------------
  // BertViz's picture: queries left, keys right, a line's opacity its weight. Hover or
  // focus a token to see its lines alone.
  function drawHeadView() {
    const weights = find("softmax", state.head);
    if (!weights) { headView.replaceChildren(); return; }
    const [n, m] = weights.shape;
    const rowH = 18;
    const height = Math.max(n, m) * rowH + 10;
    const longest = (labels) => Math.max(...labels.map((_, i) => [...label(labels, i)].length));
    const left = 16 + 8 * longest(weights.rows); // 13px monospace: about 8px a character
    const right = left + 140;
    const width = right + 16 + 8 * longest(weights.cols);
    const picture = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
      "aria-label": `Head ${state.head}: a line from each query token to each key it attends to, as dark as its weight` });
    const lines = svg("g", { class: "lines" });
    const y = (i) => 14 + i * rowH;
    const many = n * m > ALL_LINES * ALL_LINES;
    function drawLines(only) {
      lines.replaceChildren();
      for (let i = 0; i < n; i += 1) {
        if (only && only.side === "q" && only.at !== i) continue;
        for (let j = 0; j < m; j += 1) {
          const w = weights.data[i][j];
          if (typeof w !== "number" || w <= 0.001) continue;
          if (only && only.side === "k" && only.at !== j) continue;
          const drawn = svg("line", { x1: left, y1: y(i) - 4, x2: right, y2: y(j) - 4, "stroke-opacity": Math.min(1, w).toFixed(3), "stroke-width": 2, "data-q": i, "data-k": j });
          const tip = svg("title", {});
          tip.textContent = `${label(weights.rows, i)} → ${label(weights.cols, j)}: ${fmt(w)}`; // the weight as text, not only shade
          drawn.append(tip);
          lines.append(drawn);
        }
      }
    }
    drawLines(many ? { side: "q", at: 0 } : null);
    picture.append(lines);
    function tokenLabel(labels, x, at, side) {
      const t = svg("text", { x, y: y(at), "text-anchor": side === "q" ? "end" : "start", tabindex: 0, class: "token-label", "data-side": side, "data-at": at });
      t.textContent = label(labels, at);
      const pick = () => {
        drawLines({ side, at });
        picture.querySelectorAll(".token-label.on").forEach((x) => x.classList.remove("on"));
        t.classList.add("on");
      };
      const drop = () => { if (!many) { drawLines(null); t.classList.remove("on"); } };
      t.addEventListener("mouseenter", pick);
      t.addEventListener("focus", pick);
      t.addEventListener("mouseleave", drop);
      t.addEventListener("blur", drop);
      return t;
    }
    weights.rows.forEach((_, i) => picture.append(tokenLabel(weights.rows, left - 8, i, "q")));
    weights.cols.forEach((_, j) => picture.append(tokenLabel(weights.cols, right + 8, j, "k")));
    headView.replaceChildren(
      el("h2", {}, `Head view · head ${weights.head}${kvLabel(weights)}`),
      el("p", { class: "hint" }, many
        ? `${n} queries × ${m} keys: one token's lines at a time. Hover over or focus (Tab) a token to see its lines.`
        : "Queries on the left, keys on the right; a line's darkness is the attention weight. Hover over or focus a token to see its lines alone."),
      el("div", { class: "svg-wrap" }, picture));
  }

  // On paper every stage is laid out, whatever the screen showed.
  let screenAll = false;
  window.addEventListener("beforeprint", () => {
    screenAll = state.all;
    state.all = true;
    stepper.draw();
    stageArea.querySelectorAll("details").forEach((d) => { d.open = true; }); // the weights too
  });
  window.addEventListener("afterprint", () => { state.all = screenAll; stepper.draw(); });
  stepper.draw();
  drawHeadView();
}

// check's and diff's pages: the report first (a line per stage; where the first
// difference is), then the stages themselves.

const MARKS = { match: "✓", same: "✓", differs: "✗", changed: "Δ", missing: "·" };

function delta(value) {
  if (value === null || value === undefined) return "";
  return `max |Δ| ${value === 0 ? "0" : Number(value).toPrecision(2)}`;
}

function stageLines(stages, describe) {
  return el("table", { class: "report", id: "report" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, ""), el("th", { scope: "col" }, "stage"), el("th", { scope: "col" }, "head"), el("th", { scope: "col" }, "what"))),
    el("tbody", {}, stages.map((s) => el("tr", { class: `status-${s.status}`, "data-stage": s.name, "data-head": s.head === null ? "" : s.head },
      el("td", { class: "mark" }, MARKS[s.status] || "?"),
      el("th", { scope: "row" }, s.name, s.given_as && s.given_as !== s.name ? ` (as ${visible(s.given_as)})` : ""),
      el("td", {}, s.head === null || s.head === undefined ? "" : String(s.head)),
      el("td", {}, describe(s))))));
}

function checkView(root, doc) {
  // counted by stage, as the terminal's report counts them (a stage of every head is one)
  const given = [...new Set(doc.stages.filter((s) => s.status !== "missing").map((s) => s.name))];
  const differ = [...new Set(doc.stages.filter((s) => s.status === "differs").map((s) => s.name))];
  const section = el("section", { class: "check-report", "aria-label": "What check found" },
    el("h1", {}, "attntrace check · ", el("span", { class: "model-name" }, visible(doc.model.name))),
    el("p", { class: "facts" }, `${visible(doc.source || "the given arrays")} against the exact trace of `, el("span", {}, doc.tokens.map(visible).join(" "))),
    el("p", { class: "verdict", id: "verdict" }, doc.ok
      ? `✓ every one of the ${plural(given.length, "given stage")} matches`
      : `✗ ${differ.length} of ${plural(given.length, "given stage")} differ${differ.length === 1 ? "s" : ""}; the first is ${doc.first_divergent ? doc.first_divergent.stage : differ[0]}`),
    stageLines(doc.stages, (s) => (s.status === "missing" ? "not given"
      : s.status === "match" ? delta(s.max_abs_delta)
        : `${delta(s.max_abs_delta)} · ${s.cells_differing} of ${s.cells} cells`)));
  const first = doc.first_divergent;
  if (first) {
    const region = first.region;
    const shown = { name: "region", shape: [region.rows.length, region.cols.length], rows: region.rows, cols: region.cols, data: region.found };
    section.append(
      el("h2", {}, `The first difference: ${first.stage}${first.head === null ? "" : `, head ${first.head}`}, row ${visible(first.row_label)}, column ${visible(first.column_label)}`),
      el("p", { class: "line" }, "expected ", term("expected", fmt(first.expected)), ", found ", term("found", fmt(first.found))),
      el("h3", {}, "Around it, your numbers (✗ where they differ)"),
      matrixTable(shown, { key: "found", mark: (r, c) => (region.wrong[r][c] ? "wrong" : null) }),
      el("h3", {}, "The expected numbers"),
      matrixTable({ ...shown, name: "expected", data: region.expected }, { key: "expected" }));
  }
  if (doc.diagnosis) {
    section.append(el("p", { class: "note", id: "diagnosis" }, `Diagnosis: ${doc.diagnosis.cause} — ${doc.diagnosis.message}`));
  }
  root.append(section);
}

// ``changed``: for each stage, then each weight, of the diff, its changed cells as
// [row, column] pairs (attntrace's own rule, core/trace_diff.py), or null.
function diffView(root, doc, a, b, changed) {
  const find = (t, s) => t.stages.find((x) => x.name === s.name && x.head === s.head) || t.weights.find((x) => x.name === s.name && x.head === s.head && x.kv_head === s.kv_head) || null;
  const rows = doc.stages.concat(doc.weights || []);
  const header = el("header", { class: "header" },
    el("h1", {}, "attntrace diff · ", el("span", { class: "model-name" }, visible(doc.a.model.name)), " → ", el("span", {}, visible(doc.b.model.name))),
    el("p", { class: "facts" }, `a: ${visible(doc.a.source)}${doc.a.edits.length ? ` with ${doc.a.edits.map(visible).join(", ")}` : ""} · b: ${visible(doc.b.source)}${doc.b.edits.length ? ` with ${doc.b.edits.map(visible).join(", ")}` : ""}`),
    el("p", { class: "verdict", id: "verdict" }, doc.changed
      ? `${rows.filter((s) => s.status !== "same").length} of ${rows.length} stages and weights changed (beyond rtol ${doc.tolerance.rtol}, atol ${doc.tolerance.atol})`
      : "Nothing changed: every stage and weight is the same within the tolerance."),
    stageLines(rows, (s) => (s.status === "same" ? "same" : `${s.changed_cells} of ${s.cells} cells · ${delta(s.max_abs_delta)}${s.notes.length ? ` · ${s.notes.join("; ")}` : ""}`)));
  for (const change of doc.model_changes) {
    header.append(el("p", { class: "note" }, `the model's ${visible(change.field)}: ${visible(JSON.stringify(change.a))} → ${visible(JSON.stringify(change.b))}`));
  }
  const nav = el("nav", { class: "controls", "aria-label": "Stages" });
  const area = el("section", { id: "stages", "aria-live": "polite" });
  root.append(header, nav, area);
  const stepper = makeStepper(nav, () => rows.length, (i, n) => `Stage ${i + 1} of ${n}: ${rows[i].name}${rows[i].head === null ? "" : ` (head ${rows[i].head})`}`, draw);
  function draw(at) {
    const s = rows[at];
    const sa = find(a, s);
    const sb = find(b, s);
    const card = el("article", { class: "stage current", "data-stage": s.name, "aria-current": "step" },
      el("h2", {}, sb ? visible(sb.formula || sb.name) : s.name, " ", el("span", { class: "who" }, s.head === null ? "" : ` · head ${s.head}`)),
      el("p", { class: "caption" }, s.status === "same" ? "The same in a and b." : `${s.changed_cells} of ${s.cells} cells changed; largest |Δ| ${fmt(s.max_abs_delta)}.`));
    const cells = new Set((changed[at] || []).map(([r, c]) => `${r},${c}`));
    const mark = (r, c) => (cells.has(`${r},${c}`) ? "changed" : null);
    if (sb) card.append(el("h3", {}, "b, the changed cells marked"), matrixTable(sb, { key: `b-${at}`, heat: s.name === "softmax", mark, redraw: stepper.draw }));
    if (sa) card.append(el("h3", {}, "a"), matrixTable(sa, { key: `a-${at}`, heat: s.name === "softmax", redraw: stepper.draw }));
    area.replaceChildren(card);
  }
  stepper.draw();
}

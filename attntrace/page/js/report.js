// check's and diff's pages: the report first (a line per stage; where the first
// difference is), then the stages themselves.

const MARKS = { match: "✓", same: "✓", differs: "✗", changed: "Δ", "only-in-a": "Δ", "only-in-b": "Δ", missing: "·" };

// A |Δ| as the terminal's report writes it: three significant digits (diff), two (check).
function delta(value, digits) {
  if (value === null || value === undefined) return "";
  return `max |Δ| ${significant(value, digits)}`;
}

// ``head 1``, ``K/V head 0`` (a learned matrix of one K/V head), or "".
function whose(s) {
  if (s.head !== null && s.head !== undefined) return `head ${s.head}`;
  if (s.kv_head !== null && s.kv_head !== undefined) return `K/V head ${s.kv_head}`;
  return "";
}

function stageLines(stages, describe) {
  return el("table", { class: "report", id: "report" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, ""), el("th", { scope: "col" }, "stage"), el("th", { scope: "col" }, "head"), el("th", { scope: "col" }, "what"))),
    el("tbody", {}, stages.map((s) => el("tr", { class: `status-${s.status}`, "data-stage": s.name, "data-head": s.head === null ? "" : s.head },
      el("td", { class: "mark" }, MARKS[s.status] || "?"),
      el("th", { scope: "row" }, s.name, s.given_as && s.given_as !== s.name ? ` (as ${visible(s.given_as, LABEL_LIMIT)})` : ""),
      el("td", {}, whose(s)),
      el("td", {}, describe(s))))));
}

// What diff found of one stage, in the terminal's words.
function diffWords(s) {
  if (s.status === "same") return "same";
  if (s.status === "only-in-a") return "only in A";
  if (s.status === "only-in-b") return "only in B";
  const parts = [];
  if (s.changed_cells !== null) parts.push(`${s.changed_cells} of ${s.cells} cells`, delta(s.max_abs_delta, 3));
  return parts.concat(s.notes.map(visible)).join(" · ");
}

function checkView(root, doc) {
  // counted by stage, as the terminal's report counts them (a stage of every head is one)
  const given = [...new Set(doc.stages.filter((s) => s.status !== "missing").map((s) => s.name))];
  const differ = [...new Set(doc.stages.filter((s) => s.status === "differs").map((s) => s.name))];
  const section = el("section", { class: "check-report", "aria-label": "What check found" },
    el("h1", {}, "attntrace check · ", el("span", { class: "model-name" }, visible(doc.model.name, NAME_LIMIT))),
    el("p", { class: "facts" }, `${visible(doc.source || "the given arrays", NAME_LIMIT)} against the exact trace of `, el("span", {}, `"${doc.tokens.map((t) => visible(t, LABEL_LIMIT)).join(" ")}"`)),
    marksNote(),
    el("p", { class: "verdict", id: "verdict" }, doc.ok
      ? `✓ every one of the ${plural(given.length, "given stage")} matches`
      : `✗ ${differ.length} of ${plural(given.length, "given stage")} differ${differ.length === 1 ? "s" : ""}; the first is ${doc.first_divergent ? doc.first_divergent.stage : differ[0]}`),
    stageLines(doc.stages, (s) => (s.status === "missing" ? "not given"
      : s.status === "match" ? delta(s.max_abs_delta, 2)
        : `${delta(s.max_abs_delta, 2)} · ${s.cells_differing} of ${s.cells} cells`)));
  const first = doc.first_divergent;
  if (first) {
    const region = first.region;
    const shown = { name: "region", shape: [region.rows.length, region.cols.length], rows: region.rows, cols: region.cols, data: region.found };
    // the first in reading order (first_cell, absent from older documents), then the
    // largest, which the region surrounds, where they are two cells
    const spot = first.first_cell || first;
    const apart = spot.row !== first.row || spot.column !== first.column;
    const values = (c) => el("p", { class: "line" }, "expected ", term("expected", fmt(c.expected)), ", found ", term("found", fmt(c.found)));
    section.append(
      el("h2", {}, `The first difference: ${first.stage}${first.head === null ? "" : `, head ${first.head}`}, row ${quoted(spot.row_label)}, column ${quoted(spot.column_label)}`),
      values(spot),
      ...(apart ? [el("h3", {}, `The largest difference: row ${quoted(first.row_label)}, column ${quoted(first.column_label)}`), values(first)] : []),
      el("h3", {}, `Around ${apart ? "the largest" : "it"}, your numbers (✗ where they differ)`),
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
// [row, column] pairs (attntrace's own rule, checking/diff.py), or null.
function diffView(root, doc, a, b, changed) {
  const find = (t, s) => t.stages.find((x) => x.name === s.name && x.head === s.head && (x.head !== null || x.kv_head === s.kv_head))
    || t.weights.find((x) => x.name === s.name && x.head === s.head && x.kv_head === s.kv_head) || null;
  const rows = doc.stages.concat(doc.weights || []);
  const header = el("header", { class: "header" },
    el("h1", {}, "attntrace diff · ", el("span", { class: "model-name" }, visible(doc.a.model.name, NAME_LIMIT)), " → ", el("span", {}, visible(doc.b.model.name, NAME_LIMIT))),
    el("p", { class: "facts" }, `A: ${visible(doc.a.source, NAME_LIMIT)} · B: ${visible(doc.b.source, NAME_LIMIT)}`), // each source names its own edits
    el("p", { class: "verdict", id: "verdict" }, doc.changed
      ? `${rows.filter((s) => s.status !== "same").length} of ${rows.length} stages and weights changed (beyond rtol ${doc.tolerance.rtol}, atol ${doc.tolerance.atol})`
      : "Nothing changed: every stage and weight is the same within the tolerance."),
    stageLines(rows, diffWords));
  for (const change of doc.model_changes) {
    header.append(el("p", { class: "note" }, `the model's ${visible(change.field, NAME_LIMIT)}: ${visible(JSON.stringify(change.a), NAME_LIMIT)} → ${visible(JSON.stringify(change.b), NAME_LIMIT)}`));
  }
  const nav = el("nav", { class: "controls", "aria-label": "Stages" });
  const area = el("section", { id: "stages", "aria-live": "polite" });
  root.append(header, nav, area);
  const stepper = makeStepper(nav, () => rows.length, (i, n) => `Stage ${i + 1} of ${n}: ${rows[i].name}${whose(rows[i]) ? ` (${whose(rows[i])})` : ""}`, draw);
  function draw(at) {
    const s = rows[at];
    const sa = find(a, s);
    const sb = find(b, s);
    const card = el("article", { class: "stage current", "data-stage": s.name, "aria-current": "step" },
      el("h2", {}, visible((sb || sa || s).formula || s.name), " ", el("span", { class: "who" }, whose(s) ? ` · ${whose(s)}` : "")),
      el("p", { class: "caption" }, s.status === "same" ? "The same in A and B." : `${diffWords(s)}.`));
    const cells = new Set((changed[at] || []).map(([r, c]) => `${r},${c}`));
    const mark = (r, c) => (cells.has(`${r},${c}`) ? "changed" : null);
    if (sb) card.append(el("h3", {}, cells.size ? "B, the changed cells marked" : "B"), matrixTable(sb, { key: `b-${at}`, heat: s.name === "softmax", mark }));
    if (sa) card.append(el("h3", {}, "A"), matrixTable(sa, { key: `a-${at}`, heat: s.name === "softmax" }));
    area.replaceChildren(card);
  }
  stepper.draw();
}

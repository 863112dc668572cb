// Reads the documents embedded in the page and draws the view they call for: a command's
// own (decode, flash, check, diff, grad), else the trace explorer.
(async function main() {
  const blocks = {};
  const app = document.getElementById("app");
  try {
    for (const block of document.querySelectorAll('script[type="application/json"]')) {
      blocks[block.id] = await unpackedBlock(JSON.parse(block.textContent)); // packed.js
    }
  } catch (error) {
    app.replaceChildren(el("p", { class: "note", id: "unreadable" }, `This page's documents could not be read: ${error.message}. The file holds them all the same: python -m attntrace.page.packing FILE.html writes them out.`));
    throw error;
  }
  app.replaceChildren();
  const captions = blocks.captions || [];
  if (blocks.decode) decodeView(app, blocks.decode);
  else if (blocks.flash) flashView(app, blocks.flash);
  else if (blocks.check) checkView(app, blocks.check);
  else if (blocks.diff) diffView(app, blocks.diff, blocks.trace, blocks.trace_b, blocks.changed);
  else if (blocks.grad) {
    const loss = blocks.grad.loss;
    traceView(app, blocks.trace, captions, {
      what: "grad", moreStages: blocks.grad.stages, moreCaptions: blocks.grad_captions || [],
      notes: [el("p", { class: "verdict", id: "loss" }, `${visible(loss.formula, 2 * NAME_LIMIT)} = ${fmt(loss.value, 6)}: the forward stages, then the backward pass, gradient by gradient.`)],
    });
  } else {
    traceView(app, blocks.trace, captions, { leftOut: Number(app.dataset.headsLeftOut || "0") });
  }
  // For a console, and for the tests that hold these to attntrace's Python.
  window.attntrace = Object.freeze({ fmt, significant, visible, heatShade, documents: blocks, document: blocks.trace || null });
  document.body.dataset.readyAt = String(performance.now()); // benchmarks/page.py reads it
  document.body.dataset.ready = "true";
})();

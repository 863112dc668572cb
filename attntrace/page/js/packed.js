// A big page's documents come packed (page/packing.py): their arrays of numbers as one
// binary stream, deflated and in base64, the document holding {"$array": k} where each
// stood. Inflated here with the browser's DecompressionStream, each array back as rows of
// numbers (a NaN, JSON's null, back as null), so the views read the document --json writes.

const PACKED = "attntrace/packed/v1";

async function unpackedBlock(block) {
  if (block === null || typeof block !== "object" || block.packed !== PACKED) return block;
  if (typeof DecompressionStream !== "function") {
    throw new Error("this browser cannot inflate the page's numbers (it has no DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or later can)");
  }
  const text = atob(block.data);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i += 1) bytes[i] = text.charCodeAt(i);
  const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  const stream = new DataView(await new Response(inflated).arrayBuffer());
  const arrays = block.arrays.map((entry) => packedArray(stream, entry));
  return restoredArrays(block.document, arrays);
}

// One array of the stream: little-endian float32 or float64, by row (C) or by column (F).
function packedArray(stream, entry) {
  const wide = entry.dtype === "float64";
  const size = wide ? 8 : 4;
  const at = (k) => {
    const x = wide ? stream.getFloat64(entry.offset + k * size, true) : stream.getFloat32(entry.offset + k * size, true);
    return Number.isNaN(x) ? null : x;
  };
  if (entry.shape.length === 1) return range(entry.shape[0]).map(at);
  const [rows, cols] = entry.shape;
  const byRow = entry.order === "C";
  return range(rows).map((r) => range(cols).map((c) => at(byRow ? r * cols + c : c * rows + r)));
}

function restoredArrays(node, arrays) {
  if (Array.isArray(node)) return node.map((item) => restoredArrays(item, arrays));
  if (node === null || typeof node !== "object") return node;
  const keys = Object.keys(node);
  if (keys.length === 1 && keys[0] === "$array") return arrays[node.$array];
  const out = {};
  for (const key of keys) out[key] = restoredArrays(node[key], arrays);
  return out;
}

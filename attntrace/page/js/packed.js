// A big page's documents come packed (page/packing.py, docs/page.md "What the file holds"):
// one binary stream, deflated and in base85, holding the document's JSON with
// {"$array": k} where each array of numbers stood, then the arrays. Inflated here with the
// browser's DecompressionStream, each array back as rows of numbers (a NaN, JSON's null,
// back as null), so the views read the document --json writes.

const PACKED = "attntrace/packed/v2";
// RFC 1924's base85 alphabet, "<" written "," (page/packing.py _text).
const BASE85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;,=>?@^_`{|}~";

async function unpackedBlock(block) {
  if (block === null || typeof block !== "object" || block.packed !== PACKED) return block;
  if (typeof DecompressionStream !== "function") {
    throw new Error("this browser cannot inflate the page's numbers (it has no DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or later can)");
  }
  const bytes = base85Bytes(block.data).subarray(0, block.bytes);
  const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  const buffer = await new Response(inflated).arrayBuffer();
  const stream = new DataView(buffer);
  const doc = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 0, block.document)));
  const arrays = block.arrays.map((entry) => packedArray(stream, entry));
  return restoredArrays(doc, arrays);
}

// Each 5 characters are 4 bytes, big-endian, in base 85.
function base85Bytes(text) {
  const digit = new Int16Array(128).fill(-1);
  for (let i = 0; i < BASE85.length; i += 1) digit[BASE85.charCodeAt(i)] = i;
  if (text.length % 5 !== 0) throw new Error("the page's numbers are cut short");
  const out = new Uint8Array((text.length / 5) * 4);
  for (let i = 0, o = 0; i < text.length; i += 5, o += 4) {
    let word = 0;
    for (let j = 0; j < 5; j += 1) {
      const d = digit[text.charCodeAt(i + j)];
      if (d === undefined || d < 0) throw new Error("the page's numbers hold a character base85 does not");
      word = word * 85 + d;
    }
    out[o] = word >>> 24;
    out[o + 1] = (word >>> 16) & 255;
    out[o + 2] = (word >>> 8) & 255;
    out[o + 3] = word & 255;
  }
  return out;
}

// One array of the stream: its values in stream order, then by row (C) or by column (F).
function packedArray(stream, entry) {
  const count = entry.shape.reduce((a, b) => a * b, 1);
  const flat = entry.codec === "affine" ? affineValues(stream, entry, count) : floatValues(stream, entry, count);
  const at = (k) => (Number.isNaN(flat[k]) ? null : flat[k]);
  if (entry.shape.length === 1) return range(entry.shape[0]).map(at);
  const [rows, cols] = entry.shape;
  const byRow = entry.order === "C";
  return range(rows).map((r) => range(cols).map((c) => at(byRow ? r * cols + c : c * rows + r)));
}

// raw: little-endian float32 or float64 one after another; planes: the same bytes, the
// first byte of every value, then the second, and so on.
function floatValues(stream, entry, count) {
  const size = entry.dtype === "float64" ? 8 : 4;
  let view = stream;
  let start = entry.offset;
  if (entry.codec === "planes") {
    const bytes = new Uint8Array(count * size);
    for (let b = 0; b < size; b += 1) {
      for (let k = 0; k < count; k += 1) bytes[k * size + b] = stream.getUint8(entry.offset + b * count + k);
    }
    view = new DataView(bytes.buffer);
    start = 0;
  }
  const out = new Float64Array(count);
  for (let k = 0; k < count; k += 1) {
    out[k] = size === 8 ? view.getFloat64(start + k * 8, true) : view.getFloat32(start + k * 4, true);
  }
  return out;
}

// affine (page/codecs.py): m = count / block blocks (rounded down): a float32[m], b float32[m],
// q int8[m * block], then as float32 the values of each block whose a is NaN, and the rest.
// A block's value is fround(fround(a * q) - b): float32 arithmetic, as ggml computed it.
function affineValues(stream, entry, count) {
  const block = entry.block;
  const m = Math.floor(count / block);
  const base = entry.offset;
  let kept = base + 8 * m + m * block;
  const out = new Float64Array(count);
  for (let i = 0; i < m; i += 1) {
    const a = stream.getFloat32(base + 4 * i, true);
    const b = stream.getFloat32(base + 4 * m + 4 * i, true);
    for (let j = 0; j < block; j += 1) {
      const k = i * block + j;
      if (Number.isNaN(a)) {
        out[k] = stream.getFloat32(kept, true);
        kept += 4;
      } else {
        out[k] = Math.fround(Math.fround(a * stream.getInt8(base + 8 * m + k)) - b);
      }
    }
  }
  for (let k = m * block; k < count; k += 1, kept += 4) out[k] = stream.getFloat32(kept, true);
  return out;
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

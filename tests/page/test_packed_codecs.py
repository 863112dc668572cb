"""How a packed page lays out its arrays (page/codecs.py, docs/page.md "What the file
holds"): a quantized model's weights as ``a``, ``b`` and small integers per block, full
float32 in byte planes; every value given back bit for bit, in Python and in the
browser, for every sample and each real model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from browser import load, severe_logs
from helpers import invoke

from attntrace.page import codecs, packing
from attntrace.page.packing import is_packed, page_documents
from attntrace.real.catalog import CATALOG
from attntrace.real.weights import ggml

SAMPLES = sorted(p.stem for p in (Path(__file__).parents[2] / "samples").glob("*.yaml"))
# each real model, a layer and a text: the page of issue 30's 12 tokens comes from the
# benchmark; these are short, the weights the same size
REAL = {
    "minilm": ("--layer", "2", "the cat sat"),
    "smollm2": ("--layer", "3", "the cat sat"),
    "gemma3": ("--layer", "5", "the cat sat"),
}
INSTALLED = {model.name: model.installed for model in CATALOG}


def quantized(type_name: str, blocks: int, seed: int, negative: bool = False) -> npt.NDArray[Any]:
    """ggml blocks of random codes and scales, dequantized by attntrace's reader (the
    weights a real model's trace holds); each block's smallest code 0, as a quantizer
    maps a block's minimum (Q4_1, Q4_K)."""
    rng = np.random.default_rng(seed)
    code = next(k for k, (name, _, _) in ggml.GGML_TYPES.items() if name == type_name)
    layout = {"Q4_1": ggml._Q4_1, "Q5_0": ggml._Q5_0, "Q8_0": ggml._Q8_0}
    layout |= {"Q4_K": ggml._Q4_K, "Q6_K": ggml._Q6_K}
    data = np.zeros(blocks, dtype=layout[type_name])
    for field in data.dtype.names or ():
        kind = data.dtype[field].base
        if kind.kind in "iu":
            info = np.iinfo(kind)
            data[field] = rng.integers(info.min, info.max, data[field].shape, endpoint=True)
    scale = rng.uniform(1e-3, 5e-2, blocks).astype(np.float16)
    data["d"] = -scale if negative else scale
    names = data.dtype.names or ()
    if "m" in names:  # Q4_1's minimum
        data["m"] = -rng.uniform(0, 0.5, blocks).astype(np.float16)
        data["qs"][:, 0] &= 0xF0  # code 0 in the block
    if "dmin" in names:  # Q4_K
        data["dmin"] = rng.uniform(1e-3, 5e-2, blocks).astype(np.float16)
        data["qs"][:, 0::32] = 0  # code 0 in each of the 8 sub-blocks
    return ggml.READERS[code](data.tobytes(), 0, blocks).reshape(-1)


def bits(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


@pytest.mark.parametrize(
    ("type_name", "negative", "block"),
    [
        ("Q4_1", False, 32),  # SmolLM2
        ("Q5_0", True, 32),  # Gemma 3's WQ, WK, WV: a zero is −0.0
        ("Q5_0", False, 32),
        ("Q8_0", False, 32),
        ("Q4_K", False, 32),  # Gemma 3's WO
        ("Q6_K", False, 16),
    ],
)
def test_a_quantized_models_weights_are_blocks_of_small_integers(
    type_name: str, negative: bool, block: int
) -> None:
    values = quantized(type_name, 64, seed=len(type_name) + negative, negative=negative)
    if negative:
        assert np.signbit(values[values == 0]).any()  # ggml's −0.0
    found = codecs.affine(values)
    assert found is not None
    assert found[0] == block
    count = len(values) // block
    assert len(found[1]) == 8 * count + len(values)  # every block fitted: none kept as float
    back = codecs.affine_values(found[1], len(values), block)
    assert np.array_equal(bits(back), bits(values))
    assert np.array_equal(back, values.astype(np.float64))


def test_blocks_that_fit_no_scale_keep_their_floats() -> None:
    """Full float32 weights among quantized ones, and a tail shorter than a block."""
    rng = np.random.default_rng(7)
    values = quantized("Q4_1", 8, seed=3)
    values[64:96] = rng.standard_normal(32).astype(np.float32)  # block 2: no a, b, q
    values = np.concatenate([values, np.array([0.1, -0.0, 2.5], dtype=np.float32)])  # the tail
    found = codecs.affine(values)
    assert found is not None
    a = np.frombuffer(found[1], "<f4", 8)
    assert np.isnan(a).tolist() == [False, False, True, False, False, False, False, False]
    back = codecs.affine_values(found[1], len(values), 32)
    assert np.array_equal(bits(back), bits(values))  # −0.0 and all


def test_full_float32_weights_do_not_pass_for_quantized_ones() -> None:
    values = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
    assert codecs.affine(values) is None


@pytest.mark.parametrize("size", [4, 8])
def test_byte_planes_give_the_bytes_back(size: int) -> None:
    data = np.random.default_rng(size).bytes(size * 50)
    planes = codecs.planes(data, size)
    assert planes[:50] == data[0::size]  # every value's first byte, then its second…
    assert planes[50:100] == data[1::size]
    assert codecs.planes_values(planes, size) == data


@pytest.fixture
def pack_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block packed, every array of 4 numbers or more: the samples are small."""
    monkeypatch.setattr(packing, "PACK_AT", 0)
    monkeypatch.setattr(packing, "SMALLEST", 4)


def export(tmp_path: Path, args: tuple[str, ...], name: str = "page.html") -> Path:
    target = tmp_path / name
    result = invoke(*args, "--export", str(target))
    assert result.exit_code == 0, result.output
    return target


@pytest.mark.long  # 15 samples, two runs each
@pytest.mark.usefixtures("pack_everything")
def test_every_samples_packed_page_gives_back_its_json_byte_for_byte(tmp_path: Path) -> None:
    for sample in SAMPLES:
        args = ("run", "-s", sample)
        page = export(tmp_path, args).read_text(encoding="utf-8")
        assert page.count('"packed":"attntrace/packed/v2"') == 1, sample
        assert page_documents(page)["trace"] + b"\n" == invoke(*args, "--json").stdout_bytes


def real_args(model: str) -> tuple[str, ...]:
    if not INSTALLED.get(model, False):
        pytest.skip(f"{model}'s weights are not installed")
    return ("run", "-m", model, *REAL[model])


def block_of(page: str, name: str) -> Any:
    start = page.index(f'<script type="application/json" id="{name}">')
    text = page[page.index(">", start) + 1 : page.index("</script>", start)]
    return json.loads(text)


@pytest.mark.long
@pytest.mark.parametrize("model", REAL)
def test_a_real_models_page_gives_its_json_back_byte_for_byte(tmp_path: Path, model: str) -> None:
    args = real_args(model)
    page = export(tmp_path, args).read_text(encoding="utf-8")
    block = block_of(page, "trace")
    assert is_packed(block)
    codecs_used = {entry["codec"] for entry in block["arrays"]}
    assert ("affine" in codecs_used) == (model != "minilm")  # MiniLM's are full float32
    assert page_documents(page)["trace"] + b"\n" == invoke(*args, "--json").stdout_bytes


# Every number of a document (JSON's null as a NaN) in the document's order, its float64
# as two 32-bit words: the sum of (low ^ high * K) * (2i + 1) over number i, modulo 2**32,
# and how many there were. The page's documents summed in the browser, --json's in
# numpy, without moving 30 MB of numbers between them.
HASH_JS = """
const view = new DataView(new ArrayBuffer(8));
let sum = 0, count = 0;
const fold = (x) => {
  view.setFloat64(0, x === null ? NaN : x, true);
  const mixed = view.getUint32(0, true) ^ Math.imul(view.getUint32(4, true), 0x9e3779b1);
  sum = (sum + Math.imul(mixed, 2 * count + 1)) >>> 0;
  count += 1;
};
const walk = (node) => {
  if (Array.isArray(node)) node.forEach(walk);
  else if (node === null || typeof node === "number") fold(node);
  else if (typeof node === "object") Object.keys(node).forEach((k) => walk(node[k]));
};
walk(window.attntrace.documents[arguments[0]]);
return [sum, count];
"""


def numbers_hash(node: Any) -> tuple[int, int]:
    found: list[float] = []

    def walk(item: Any) -> None:
        if isinstance(item, list):
            for x in item:
                walk(x)
        elif isinstance(item, dict):
            for x in item.values():
                walk(x)
        elif item is None or (isinstance(item, (int, float)) and not isinstance(item, bool)):
            found.append(np.nan if item is None else float(item))

    walk(node)
    words = np.array(found, dtype="<f8").view("<u4").reshape(-1, 2).astype(np.uint64)
    # uint64 constants: numpy 1.24 (the floor) casts uint64 with a Python int to float64
    low = np.uint64(0xFFFFFFFF)
    mixed = (words[:, 0] ^ (words[:, 1] * np.uint64(0x9E3779B1))) & low
    weight = np.uint64(2) * np.arange(len(found), dtype=np.uint64) + np.uint64(1)
    return int(((mixed * weight) & low).sum() & low), len(found)


@pytest.mark.parametrize("model", REAL)
def test_the_browser_reads_a_real_models_packed_page_exactly(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    """The page's script decodes every codec to the very numbers --json wrote, and
    shows what the plain page shows."""
    args = real_args(model)
    packed = export(tmp_path, args, "packed.html")
    monkeypatch.setattr(packing, "PACK_AT", 1 << 62)
    plain = export(tmp_path, args, "plain.html")
    expected = numbers_hash(json.loads(invoke(*args, "--json").stdout_bytes))
    shown = []
    for target in (packed, plain):
        load(browser, target)
        assert severe_logs(browser) == []
        assert tuple(browser.execute_script(HASH_JS, "trace")) == expected, target.name
        shown.append(browser.execute_script("return document.getElementById('app').innerText"))
    assert shown[0] == shown[1]


def rounded() -> npt.NDArray[Any]:
    """Blocks of float32 ``a·q − b`` with a and b of 24 bits: each product and difference
    rounded (ggml's products are exact in float32: Q6_K's take 24 bits, Q4_K's 21)."""
    rng = np.random.default_rng(5)
    a = rng.uniform(0.01, 0.02, (64, 1)).astype(np.float32)
    b = rng.uniform(0.1, 1, (64, 1)).astype(np.float32)
    q = rng.integers(0, 127, (64, 32), endpoint=True).astype(np.float32)
    q[:, 0] = 0
    values = (a * q - b).reshape(-1)
    assert not np.array_equal(values, (a.astype(float) * q - b).reshape(-1))  # rounded
    return values


@pytest.mark.parametrize(
    ("type_name", "negative"), [("Q6_K", False), ("Q5_0", True), ("Q4_K", False), ("", False)]
)
def test_the_pages_script_computes_each_block_as_ggml_did(
    browser: Any, tmp_path: Path, type_name: str, negative: bool
) -> None:
    """Q6_K's a·q takes 25 bits, rounded to float32 as ggml rounds it (the real models'
    products are exact, so their pages cannot show a rounding gone wrong); a −0.0 stays
    one. The page's own decoder, given the bytes Python lays out, returns every float32's
    bits."""
    values = quantized(type_name, 16, seed=11, negative=negative) if type_name else rounded()
    values = np.concatenate(
        [values[:-40], np.array([0.1, -0.0, 3.0], dtype=np.float32)]
    )  # a block, a tail
    found = codecs.affine(values)
    assert found is not None
    assert np.isnan(np.frombuffer(found[1], "<f4", len(values) // found[0])).mean() < 0.5
    load(browser, export(tmp_path, ("run", "-s", "it-animal")))
    got = browser.execute_script(
        """
        const stream = new DataView(Uint8Array.from(arguments[0]).buffer);
        const entry = { block: arguments[1], offset: 0 };
        const view = new DataView(new ArrayBuffer(4));
        return Array.from(affineValues(stream, entry, arguments[2]), (x) => {
          view.setFloat32(0, x, true);
          return view.getUint32(0, true);
        });
        """,
        list(found[1]),
        found[0],
        len(values),
    )
    assert got == bits(values).tolist()

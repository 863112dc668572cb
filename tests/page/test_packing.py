"""A big page's documents packed (page/packing.py, docs/page.md "What the file holds"):
taken back out of the page, each is byte for byte what the command's ``--json`` writes,
and the browser reads the same document from a packed page as from a plain one."""

from __future__ import annotations

import base64
import json
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import load, severe_logs
from helpers import invoke, needs_weights
from pages import hostile_trace

from attntrace.forward.trace_json import dump_bytes
from attntrace.page import packing
from attntrace.page.build import trace_page
from attntrace.page.packing import is_packed, page_documents

GRAD = ("grad", "-s", "it-animal", "--from", "it", "--to", "animal")
DIFF = ("diff", "-s", "cat-eats-fish", "--set", "WQ[0][1]=0.5")
# float16 overflows: cells written "inf" and "nan" among the numbers
LOW = ("run", "-s", "cat-eats-fish", "--dtype", "float16", "--set", "embeddings.cat=[300,300]")
# each page, and the command whose --json each of its blocks is
CASES: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {
    "run": (("run", "-s", "it-animal"), {"trace": ("run", "-s", "it-animal")}),
    "gqa": (("run", "-s", "gqa"), {"trace": ("run", "-s", "gqa")}),
    "dtype": (LOW, {"trace": LOW}),
    "decode": (("decode", "-s", "window"), {"decode": ("decode", "-s", "window")}),
    "flash": (("flash", "-s", "window"), {"flash": ("flash", "-s", "window")}),
    "grad": (GRAD, {"grad": GRAD, "trace": ("run", "-s", "it-animal")}),
    "diff": (
        DIFF,
        {
            "diff": DIFF,
            "trace": ("run", "-s", "cat-eats-fish"),
            "trace_b": ("run", "-s", "cat-eats-fish", "--set", "WQ[0][1]=0.5"),
        },
    ),
}


@pytest.fixture
def pack_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block packed, every array of 4 numbers or more: the samples are small."""
    monkeypatch.setattr(packing, "PACK_AT", 0)
    monkeypatch.setattr(packing, "SMALLEST", 4)


def zlib_bomb() -> str:
    """A deflated stream of 300 MiB of zeros, as base85 with "," for "<"."""
    deflater = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    data = b"".join(deflater.compress(zeros) for _ in range(300)) + deflater.flush()
    return base64.b85encode(data, pad=True).decode().replace("<", ",")


def export(tmp_path: Path, args: tuple[str, ...]) -> str:
    target = tmp_path / "page.html"
    result = invoke(*args, "--export", str(target))
    assert result.exit_code in (0, 1), result.output  # diff: 1, something changed
    return target.read_text(encoding="utf-8")


def raw_block(page: str, name: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', page, re.S)
    assert found is not None, name
    return json.loads(found[1])


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
@pytest.mark.usefixtures("pack_everything")
def test_a_packed_page_gives_back_each_commands_json_byte_for_byte(
    tmp_path: Path, case: str
) -> None:
    args, blocks = CASES[case]
    page = export(tmp_path, args)
    documents = page_documents(page)
    for name, command in blocks.items():
        assert is_packed(raw_block(page, name)) == (name != "diff"), name  # no array in diff's
        assert documents[name] + b"\n" == invoke(*command, "--json").stdout_bytes, name


@pytest.mark.long  # 2 s in all; the packed pages above are the ones to keep fast
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_plain_page_gives_back_each_commands_json_byte_for_byte(
    tmp_path: Path, case: str
) -> None:
    """As written today (the samples are small): diff's and decode's numbers as Python's
    json writes them (1e-09) among them."""
    args, blocks = CASES[case]
    page = export(tmp_path, args)
    documents = page_documents(page)
    for name, command in blocks.items():
        assert not is_packed(raw_block(page, name))
        assert documents[name] + b"\n" == invoke(*command, "--json").stdout_bytes, name


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "packed"])
def test_tokens_the_page_escapes_come_back_as_written(
    monkeypatch: pytest.MonkeyPatch, packed: bool
) -> None:
    """Markup, a terminal's escape, a bidi override: escaped in the page, given back."""
    if packed:
        monkeypatch.setattr(packing, "PACK_AT", 0)
        monkeypatch.setattr(packing, "SMALLEST", 4)
    trace = hostile_trace()
    page = trace_page(trace)
    assert "\x1b" not in page
    assert "\u202e" not in page
    assert is_packed(raw_block(page, "trace")) == packed
    assert page_documents(page)["trace"] == dump_bytes(trace)


def test_a_small_page_is_not_packed(tmp_path: Path) -> None:
    page = export(tmp_path, ("run", "-s", "it-animal"))
    assert raw_block(page, "trace")["schema"] == "attntrace/trace/v1"


def test_packing_keeps_float64_where_float32_would_round() -> None:
    """0.1 is not a float32: a matrix holding it stays float64; one of float32 values
    (as a quantized model's weights) is written in half the bytes, and both come back."""
    import orjson

    narrow = np.arange(96, dtype=np.float32).reshape(8, 12) / 7  # float32 values
    wide = narrow.astype(np.float64) + 0.1
    document = orjson.dumps(
        {"narrow": narrow.astype(np.float64), "wide": wide, "short": [0.5, None]},
        option=orjson.OPT_SERIALIZE_NUMPY,
    )
    packed = json.loads(packing.pack(document))
    assert [a["dtype"] for a in packed["arrays"]] == ["float32", "float64"]
    assert json.loads(stream(packed)[: packed["document"]])["short"] == [0.5, None]  # small
    assert packing.unpack(packed) == document


def stream(block: dict[str, Any]) -> bytes:
    """A packed block's stream, read as docs/page.md says: base85 in RFC 1924's alphabet
    with "," for "<", cut to ``bytes``, inflated."""
    text = block["data"].replace(",", "<").encode()
    return zlib.decompress(base64.b85decode(text)[: block["bytes"]])


def test_the_command_line_writes_the_document_back_out(
    tmp_path: Path, pack_everything: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    target = tmp_path / "page.html"
    target.write_text(export(tmp_path, ("run", "-s", "gqa")), encoding="utf-8")
    assert packing.main([str(target)]) == 0
    assert capsysbinary.readouterr().out == invoke("run", "-s", "gqa", "--json").stdout_bytes
    assert packing.main([str(target), "nothing"]) == 2
    assert capsysbinary.readouterr().err == (
        f"attntrace: error: {target}: no block 'nothing' in the page\n".encode()
    )


@pytest.mark.parametrize("case", ["run", "dtype", "decode", "flash", "diff"])
def test_the_browser_reads_a_packed_page_as_a_plain_one(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    args, blocks = CASES[case]
    plain = export(tmp_path, args)
    monkeypatch.setattr(packing, "PACK_AT", 0)
    monkeypatch.setattr(packing, "SMALLEST", 4)
    packed = export(tmp_path, args)
    assert is_packed(raw_block(packed, list(blocks)[-1]))  # diff: its traces
    read = []
    for page in (plain, packed):
        target = tmp_path / "read.html"
        target.write_text(page, encoding="utf-8")
        load(browser, target)
        assert severe_logs(browser) == []
        read.append(browser.execute_script("return window.attntrace.documents"))
        shown = browser.execute_script("return document.getElementById('app').innerText")
        read.append(shown)
    assert read[2] == read[0]  # the documents
    assert read[3] == read[1]  # and every word and number the page shows
    for name in blocks:
        assert read[2][name] == json.loads(page_documents(plain)[name]), name


@pytest.mark.long
@needs_weights
def test_a_real_models_page_is_packed_and_gives_its_json_back(tmp_path: Path) -> None:
    args = ("run", "-m", "smollm2", "--layer", "3", "The quick brown fox jumps over the lazy dog")
    page = export(tmp_path, args)
    assert is_packed(raw_block(page, "trace"))
    assert page_documents(page)["trace"] + b"\n" == invoke(*args, "--json").stdout_bytes


@pytest.mark.parametrize(
    "data",
    [
        '"bytes":5,"data":"00000"',  # not deflated
        '"data":"00000"',  # no length
        pytest.param("bomb", marks=pytest.mark.long),  # inflates past its limit (1 s)
    ],
    ids=["garbage", "no-length", "bomb"],
)
def test_a_packed_block_not_attntraces_is_one_error_line(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], data: str
) -> None:
    if data == "bomb":
        data = f'"bytes":{1 << 20},"data":"{zlib_bomb()}"'
    page = export(tmp_path, ("run", "-s", "gqa"))
    block = (
        '{"packed":"attntrace/packed/v2","writer":"orjson","encoding":"deflate, base85",'
        f'"document":5,"arrays":[],{data}}}'
    )
    found = re.search(r'(<script type="application/json" id="trace">).*?(</script>)', page, re.S)
    assert found is not None
    target = tmp_path / "bad.html"
    target.write_text(page[: found.end(1)] + block + page[found.start(2) :], encoding="utf-8")
    assert packing.main([str(target)]) == 2
    out = capsysbinary.readouterr()
    assert out.out == b""
    assert out.err.startswith(f"attntrace: error: {target}: cannot read the page: ".encode())
    assert out.err.count(b"\n") == 1
    assert (b"inflate past 256 MiB" in out.err) == ("1048576" in data)  # not inflated whole

"""FlashReport -> the ``attntrace/flash/v1`` document (docs/kernels.md, "attntrace flash").

Plain data, as every document is written: the model as the trace gives it, the head
and the K/V head it reads, every tile in the order the variant runs it, the final
output, m and ℓ beside the standard output, and the memory story. −∞ (a masked score,
the m of a row that has seen no key yet) is ``null``, as orjson writes it from numpy.
Schema: ``attntrace/schema/flash-v1.schema.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attntrace.kernel.documents import StreamedJSON, model_to_dict, texts

if TYPE_CHECKING:
    from attntrace.kernels.flash import Tile, Traffic
    from attntrace.kernels.flash_report import FlashReport

FLASH_SCHEMA_ID = "attntrace/flash/v1"


def flash_to_dict(report: FlashReport) -> dict[str, Any]:
    """The document as plain data; the matrices stay numpy arrays, for orjson (which
    writes −∞ as null)."""
    from attntrace.kernels.flash_report import GPT2_HEAD

    record, trace = report.record, report.trace
    keys = trace.tokens if trace.context_tokens is None else trace.context_tokens
    return {
        "schema": FLASH_SCHEMA_ID,
        "model": model_to_dict(trace.model),
        "head": report.head,
        "kv_head": report.kv_head,
        "variant": record.variant,
        "causal": record.causal,
        "block_q": record.block_q,
        "block_k": record.block_k,
        "tokens": texts(trace.tokens),
        "key_tokens": texts(keys),
        "tiles": [_tile(tile) for tile in record.tiles],
        "output": record.output,
        "m": record.m,
        "l": record.ell,
        **({"sink": record.sink} if record.sink is not None else {}),
        "standard_output": report.standard_output,
        "max_abs_difference": report.max_abs_difference,
        "memory": {
            "standard_bytes": report.standard_bytes,
            "tile_bytes": report.tile_bytes,
            "sram_bytes": report.sram_bytes,
            "traffic": {
                "this_input": _traffic(len(trace.tokens), trace.model.d_k, report.this_input),
                "gpt2_head": _traffic(*GPT2_HEAD, report.gpt2_head),
            },
        },
    }


def _tile(tile: Tile) -> dict[str, Any]:
    return {
        "i": tile.i,
        "j": tile.j,
        "rows": list(tile.rows),
        "cols": list(tile.cols),
        "skipped": tile.skipped,
        **({"why": tile.why} if tile.why is not None else {}),
        "scores": tile.scores,
        "weights": tile.weights,
        "block_max": tile.block_max,
        "rescale": tile.rescale,
        "m_old": tile.m_old,
        "m_new": tile.m_new,
        "l_old": tile.l_old,
        "l_new": tile.l_new,
        "output": tile.output,
    }


def _traffic(n: int, d: int, traffic: Traffic) -> dict[str, int]:
    return {
        "n": n,
        "d": d,
        "standard": traffic.standard,
        "tiled": traffic.tiled,
        "block_q": traffic.block_q,
        "block_k": traffic.block_k,
    }


def flash_dump_bytes(report: FlashReport) -> bytes:
    """The document, compact, as UTF-8 bytes (orjson writes the matrices straight from
    numpy; every number reads back to the same float64, −∞ as null)."""
    import orjson

    return orjson.dumps(flash_to_dict(report), option=orjson.OPT_SERIALIZE_NUMPY)


def flash_stream(report: FlashReport) -> StreamedJSON:
    """:func:`flash_dump_bytes`'s bytes as pieces to write one after another (``flash
    --json``): the tiles' JSON is never held whole beside them."""
    return StreamedJSON(flash_to_dict(report))

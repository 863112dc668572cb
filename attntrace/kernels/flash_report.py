"""`attntrace flash`'s result: one head's tiled pass beside its ordinary trace, and the
memory story (docs/kernels.md, "attntrace flash").

:mod:`attntrace.kernels.flash` records the tiles; this puts beside them what the command
shows and writes about them, computed once so the view and the JSON cannot disagree:
the head's standard output (the ``output`` stage of the trace ``run`` computes), the
largest gap to it, the bytes the tiled pass never stored, and the HBM traffic of both
algorithms for this input and for a GPT-2-sized head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attntrace import arguments
from attntrace.errors import InputError
from attntrace.kernel.frozen import Matrix
from attntrace.kernel.ops import kv_head_of
from attntrace.kernel.trace import Trace
from attntrace.kernels.flash import (
    FLOAT64_BYTES,
    FlashRecord,
    Traffic,
    default_block,
    flash_head,
    hbm_traffic,
)

DEFAULT_SRAM_BYTES = 196_608  # the A100's 192 KiB of SRAM per SM, the paper's example
GPT2_HEAD = (1024, 64)  # N, d of one GPT-2 head: the paper's running example
HBM_ITEMSIZE = 2  # bytes an element: the kernels run in fp16 / bf16


@dataclass(frozen=True, eq=False)
class FlashReport:
    """One head's tiled pass, the ordinary output it must equal, and what it saved."""

    trace: Trace
    head: int
    kv_head: int
    record: FlashRecord
    standard_output: Matrix  # the head's ``output`` stage: [n, d_v]
    max_abs_difference: float
    sram_bytes: int
    this_input: Traffic
    gpt2_head: Traffic

    @property
    def standard_bytes(self) -> int:
        """The float64 bytes of the n × m scores and weights the tiled pass never held."""
        return self.record.standard_bytes

    @property
    def tile_bytes(self) -> int:
        """The float64 bytes of the one tile of scores the tiled pass holds at a time
        (blocks larger than n or m cut to them; P̃ takes its place)."""
        n, m = len(self.record.m), self.record.keys
        return min(self.record.block_q, n) * min(self.record.block_k, m) * FLOAT64_BYTES

    @property
    def computed(self) -> int:
        return len(self.record.tiles) - self.record.skipped


def flash_report(
    trace: Trace,
    head: int,
    block_q: int | None = None,
    block_k: int | None = None,
    variant: int = 2,
    sram_bytes: int = DEFAULT_SRAM_BYTES,
) -> FlashReport:
    """Head ``head`` of ``trace`` tile by tile (:func:`flash_head`), compared with its
    ``output`` stage, with the HBM traffic for an SRAM of ``sram_bytes``. A block size
    not given is :func:`default_block` of the queries (keys). Refuses an SRAM below one
    element (2 bytes), before any tile is computed."""
    sram_bytes = arguments.whole(sram_bytes, "sram_bytes")
    if sram_bytes < HBM_ITEMSIZE:
        raise InputError(
            field="--sram",
            expected=f"at least {HBM_ITEMSIZE} bytes (one fp16 element)",
            found=str(sram_bytes),
        )
    keys = trace.context_tokens if trace.context_tokens is not None else trace.tokens
    block_q = default_block(len(trace.tokens)) if block_q is None else block_q
    block_k = default_block(len(keys)) if block_k is None else block_k
    record = flash_head(trace, head, block_q, block_k, variant)
    standard = trace.stage("output", head=head).data
    gap = float(np.abs(record.output - standard).max()) if standard.size else 0.0
    model = trace.model
    n = len(trace.tokens)
    return FlashReport(
        trace=trace,
        head=head,
        kv_head=kv_head_of(head, model.heads, model.kv_heads),
        record=record,
        standard_output=standard,
        max_abs_difference=gap,
        sram_bytes=sram_bytes,
        this_input=hbm_traffic(n, model.d_k, sram_bytes, HBM_ITEMSIZE),
        gpt2_head=hbm_traffic(*GPT2_HEAD, sram_bytes, HBM_ITEMSIZE),
    )

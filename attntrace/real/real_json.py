"""``models --json`` (attntrace/models/v1) and ``heads --json`` (attntrace/heads/v1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from attntrace.visible import well_formed

if TYPE_CHECKING:
    from attntrace.real.catalog import RealModel
    from attntrace.real.disk.listing import Scan
    from attntrace.real.layer import HeadRanking


MODELS_SCHEMA_ID = "attntrace/models/v1"

HEADS_SCHEMA_ID = "attntrace/heads/v1"


def models_to_dict(catalog: Sequence[RealModel], scan: Scan) -> dict[str, Any]:
    """`attntrace models --json`: each real model's shapes, and whether it is installed;
    then each model found in the stores (its name and reason as well-formed text: they
    come from folder names, which may hold any byte), and where they were looked for."""
    return {
        "schema": MODELS_SCHEMA_ID,
        "models": [
            {
                "name": m.name,
                "title": m.title,
                "architecture": m.architecture,
                "layers": m.layers,
                "heads": m.heads,
                "kv_heads": m.kv_heads,
                "d_model": m.d_model,
                "head_dim": m.head_dim,
                "vocabulary": m.vocabulary,
                "positions": m.positions,
                "causal": m.causal,
                "license": m.license,
                "installed": m.installed,
                "install": m.install,
            }
            for m in catalog
        ],
        "found": [
            {
                "name": well_formed(f.name),
                "store": f.store,
                "format": f.format,
                "size_bytes": f.size,
                "family": None if f.family is None else well_formed(f.family),
                "layers": f.layers,
                "heads": f.heads,
                "kv_heads": f.kv_heads,
                "traceable": f.traceable,
                "why_not": well_formed(f.why_not),
            }
            for f in scan.found
        ],
        "looked_in": [well_formed(str(path)) for path in scan.looked_in],
        "cut_short": scan.cut_short,
    }


def ranking_to_dict(ranking: HeadRanking) -> dict[str, Any]:
    """`attntrace heads --json`: every layer × head, heaviest first."""
    return {
        "schema": HEADS_SCHEMA_ID,
        "model": ranking.model.name,
        "tokens": [well_formed(token) for token in ranking.tokens],
        "query": ranking.query,
        "key": ranking.key,
        "heads": [
            {"layer": r.layer, "head": r.head, "weight": r.weight, "top_key": r.top_key}
            for r in ranking.rows
        ],
    }

"""Writing results: pairs and clusters as CSV, JSON Lines or Parquet, plus the summary.

Files are deterministic: the same run writes the same bytes. Timings, which
change from run to run, go to ``timings.json`` only, never into the others.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

OUTPUT_FORMATS = ("csv", "jsonl", "parquet")


def write_table(table: pa.Table, path: str | os.PathLike, fmt: str | None = None) -> Path:
    """Write ``table`` as csv, jsonl or parquet (from the suffix when ``fmt`` is None)."""
    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower()
    if fmt not in OUTPUT_FORMATS:
        raise ValueError(f"output format must be one of {OUTPUT_FORMATS}, got {fmt!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        pa_csv.write_csv(table, path)
    elif fmt == "parquet":
        pq.write_table(table, path)
    else:
        with open(path, "w", encoding="utf-8") as f:
            for row in table.to_pylist():
                f.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")
    return path


def write_json(obj, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=_jsonable) + "\n",
                    encoding="utf-8")
    return path


def write_result(result, out_dir: str | os.PathLike, fmt: str = "csv") -> dict[str, Path]:
    """pairs, clusters, documents and candidates (.FMT), summary.json, timings.json."""
    out_dir = Path(out_dir)
    return {
        "pairs": write_table(result.pairs_table(), out_dir / f"pairs.{fmt}", fmt),
        "clusters": write_table(result.clusters_table(), out_dir / f"clusters.{fmt}", fmt),
        "documents": write_table(result.documents_table(), out_dir / f"documents.{fmt}", fmt),
        "candidates": write_table(result.candidates_table(), out_dir / f"candidates.{fmt}",
                                  fmt),
        "summary": write_json(result.summary(), out_dir / "summary.json"),
        "timings": write_json({k: round(v, 4) for k, v in result.seconds.items()},
                              out_dir / "timings.json"),
    }


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)

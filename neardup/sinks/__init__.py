"""Writing results: pairs and clusters as CSV, JSON Lines or Parquet, plus the summary.

Files are deterministic: the same run writes the same bytes, whether a table arrives
whole or in batches (Parquet row groups are cut at fixed row counts, not where batches
end). Timings, which change from run to run, go to ``timings.json`` only.

Every format is written column-wise by Arrow, batch by batch, so the pairs of a run
(possibly hundreds of millions of rows) stream to disk in bounded memory. Each format is
one module exporting a :class:`~neardup.sinks.format.TableFormat` (its writer and its
reader back), listed in :mod:`neardup.sinks.registry`: ``csv`` (formulas escaped),
``jsonl`` (rows assembled with Arrow string kernels, escaped as ``json.dumps`` escapes
them), ``parquet`` (fixed row groups).

A results folder has one of two layouts (``LAYOUTS``; :func:`resolve_layout`): ``single``,
one file a table (``pairs.parquet``), or ``parts``, a folder a table of part files
(``pairs/part-00000.parquet``, ...) written by the same code a part at a time
(:func:`write_part`, which Spark's executors run on their partitions). The manifest lists
every file with its rows and SHA-256, and each table's files in row order;
:func:`read_results` reads either layout back, checking what it reads against it.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ..pairs import PAIR_SCHEMA, too_many_pairs
from .format import TableFormat, words
from .jsonl import jsonable
from .parquet import ROW_GROUP_ROWS
from .registry import OUTPUT_FORMATS, STREAMED_FORMATS, sink_named
from .results import (
    MANIFEST,
    STRING_COLUMNS,
    Results,
    load_manifest,
    read_results,
    read_table,
    read_table_bytes,
    table_files,
)
from .staging import file_sha256

# auto: parts on Spark (its executors write them), single on the local engine
LAYOUTS = ("auto", "single", "parts")
PART_ROWS = 1 << 22  # the local engine's parts (layout="parts"): rows a part at most
__all__ = ["LAYOUTS", "MANIFEST", "MANIFEST_VERSION", "OUTPUT_FORMATS", "PART_ROWS",
           "RESULT_TABLES", "ROW_GROUP_ROWS", "STRING_COLUMNS", "PartsTable", "Results",
           "TableFormat", "sink_named", "streamed",
           "load_manifest", "owned", "part_name", "read_manifest", "read_results", "read_table",
           "read_table_bytes", "resolve_layout", "table_files", "write_folder", "write_json",
           "write_pairs_to", "write_part", "write_result", "write_summary", "write_table",
           "write_table_to", "write_tables"]


def write_table(table: pa.Table, path: str | os.PathLike, fmt: str | None = None, *,
                escape_formulas: bool = True) -> Path:
    """Write ``table`` as csv, jsonl or parquet (from the suffix when ``fmt`` is None);
    ``escape_formulas`` (CSV only): see :func:`write_folder`."""
    return write_tables([table], path, fmt, schema=table.schema,
                        escape_formulas=escape_formulas)[0]


def write_tables(tables: Iterable[pa.Table], path: str | os.PathLike, fmt: str | None = None,
                 *, schema: pa.Schema, escape_formulas: bool = False) -> tuple[Path, int]:
    """Write the rows of ``tables`` (each of ``schema``) as one file; returns (path, rows).

    An I/O error names the file. ``escape_formulas`` (CSV only): see :func:`write_folder`.
    """
    try:
        return _write_tables(tables, Path(path), fmt, schema, escape_formulas)
    except OSError as exc:
        if getattr(exc, "filename", None):
            raise
        raise OSError(getattr(exc, "errno", None), f"cannot write {path}: {exc}",
                      os.fspath(path)) from exc


def _write_tables(tables, path: Path, fmt, schema, escape_formulas) -> tuple[Path, int]:
    sink = sink_named(fmt or path.suffix.lstrip(".").lower())
    path.parent.mkdir(parents=True, exist_ok=True)
    return path, sink.write(path, schema, tables, escape_formulas)


def write_json(obj, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_json_text(obj), encoding="utf-8")
    return path


def _json_text(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=jsonable) + "\n"


def write_summary(path: str | os.PathLike | None, command: str, result,
                  inputs: Iterable[str | os.PathLike] = ()) -> Path | None:
    """The summary of a ``command`` ("dedup" or "repeats") as JSON at ``path`` (None:
    nothing), as :func:`write_json` writes a results folder's summary.json, but whole or
    not at all (:class:`~neardup.sinks.staging.StagedFile`): the records read and what
    became of them (:func:`neardup._core.counts.records`; a copy's from its
    ``counts["dedup"]``), then ``result.summary()`` and ``result.seconds``
    (:func:`neardup._core.counts.run_summary`). ``inputs``: never touched."""
    from .._core import counts as counting
    from .staging import StagedFile

    if path is None:
        return None
    copy = result.counts.get("dedup")
    records = counting.records(result.read_report or {}, *(
        (copy["removed"], copy["written"]) if copy is not None else ()))
    summary = counting.run_summary(command, records, result.summary(), result.seconds)
    with StagedFile(path, keep=inputs) as stage:
        stage.write_text(_json_text(summary), encoding="utf-8")
    return Path(path)


RESULT_TABLES = ("pairs", "set_pairs", "identical", "clusters", "documents", "candidates")
MANIFEST_VERSION = 1
_RESULT_FILES = ({f"{name}.{fmt}" for name in RESULT_TABLES for fmt in OUTPUT_FORMATS}
                 | set(RESULT_TABLES)  # the parts layout's folders
                 | {"summary.json", "timings.json", MANIFEST})


def owned(name: str) -> bool:
    """True for the names a results folder may hold at its top (what a run replaces):
    a table's file (single layout) or folder (parts layout), summary, timings, manifest."""
    return name in _RESULT_FILES


def resolve_layout(layout: str, engine: str = "local") -> str:
    """``single`` or ``parts``: ``auto`` is parts on Spark (the executors write their
    partitions, nothing large passes through the driver) and single on the local
    engine (one file a table, as before); ``single`` and ``parts`` stand as given."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if layout == "auto":
        return "parts" if engine == "spark" else "single"
    return layout


@dataclass(frozen=True)
class PartsTable:
    """A table of the parts layout, for :func:`write_folder`: ``write(folder)`` writes its
    parts into the table's folder (each with :func:`write_part`) and returns their
    entries in row order; ``schema`` writes the one empty part of a table with no rows;
    ``expected``: the rows counted for it, or None; ``local``: False where the parts
    are not in the folder but on a store, published beside it by the caller
    (:class:`neardup._core.remote.StoreFolder`), so they are not looked for here."""

    write: Callable[[Path], list[dict]]
    schema: pa.Schema
    expected: int | None = None
    local: bool = True


def part_name(index: int, fmt: str) -> str:
    """The file name of part ``index`` (a partition's number): part-00007.parquet."""
    return f"part-{index:05d}.{fmt}"


def write_part(tables: Iterable[pa.Table], folder: str | os.PathLike, index: int, fmt: str, *,
               schema: pa.Schema, escape_formulas: bool = False, attempt: str = "") -> dict | None:
    """Write the rows of ``tables`` as ``folder/part-INDEX.FMT`` with the writer of a whole
    table (:func:`write_tables`: the same CSV escaping, JSON Lines, Parquet schema and row
    groups); returns its entry (name, rows, bytes, sha256), or None, writing nothing,
    when there are no rows.

    The file is written under a hidden name (``attempt`` in it: a retried or speculative
    task's copy never meets another's), then renamed into place; the same rows give the
    same bytes, so whichever attempt lands last, the entry holds.
    """
    tables = iter(tables)
    first = next((t for t in tables if t.num_rows), None)
    if first is None:
        return None
    folder = Path(folder)
    name = part_name(index, fmt)
    temp = folder / f".{name}.{attempt or os.getpid()}-{secrets.token_hex(4)}"
    try:
        _, rows = write_tables(itertools.chain([first], tables), temp, fmt, schema=schema,
                               escape_formulas=escape_formulas)
        os.replace(temp, folder / name)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    path = folder / name
    return {"name": name, "rows": rows, "bytes": path.stat().st_size,
            "sha256": file_sha256(path)}


def _local_parts(batches: Iterable[pa.Table], schema: pa.Schema, fmt: str,
                 escape_formulas: bool) -> Callable[[Path], list[dict]]:
    """The local engine's parts: ``batches`` cut into parts of PART_ROWS rows."""

    def write(folder: Path) -> list[dict]:
        entries, pending, held = [], [], 0
        for table in itertools.chain(batches, [None]):
            if table is not None:
                pending.append(table)
                held += table.num_rows
            while held >= PART_ROWS or (table is None and held):
                whole = pa.concat_tables(pending)
                entries.append(write_part([whole.slice(0, PART_ROWS)], folder, len(entries),
                                          fmt, schema=schema, escape_formulas=escape_formulas))
                pending, held = [whole.slice(PART_ROWS)], max(0, held - PART_ROWS)
        return entries

    return write


def write_result(result, out_dir: str | os.PathLike, fmt: str = "csv", *,
                 escape_formulas: bool = True, layout: str = "auto") -> dict[str, Path]:
    """pairs (or set_pairs), identical, clusters, documents, candidates (.FMT),
    summary.json, timings.json, manifest.json: one complete results folder.

    ``layout``: ``auto`` and ``single`` write one file a table; ``parts`` a folder a table
    of files of up to PART_ROWS rows (as Spark writes them; :func:`read_results` reads both).

    With ``pairs="all"`` (the default) ``pairs.FMT`` lists every document pair, streamed
    in batches; above ``max_pairs`` nothing is written and a ValueError says how many
    pairs there are and which option to use. With ``pairs="groups"``, ``set_pairs.FMT``
    holds the pairs of distinct sets and ``identical.FMT`` every copy's group
    (:func:`neardup.pairs.expand` lists every pair from them). See :func:`write_folder`
    for what is atomic.
    """
    layout = resolve_layout(layout, "local")
    config = result.config
    if config.pairs == "all":
        message = too_many_pairs(result.counts, config.max_pairs or None)
        if message is not None:
            raise ValueError(message)
    tables = {}
    if config.pairs == "all":
        tables["pairs"] = (result.iter_pairs_tables(), _pairs_schema(result),
                           result.counts["pairs"])
    else:
        table = result.set_pairs_table()
        tables["set_pairs"] = ([table], table.schema, None)
    for name in ("identical", "clusters", "documents", "candidates"):
        if name == "documents":  # a row per document: streamed, never held whole
            first = next(result.iter_documents_tables(1))
            tables[name] = (result.iter_documents_tables(), first.schema, result.n)
            continue
        if name == "candidates":  # as many as tens of millions: streamed too
            first = next(result.iter_candidates_tables(1))
            tables[name] = (result.iter_candidates_tables(), first.schema,
                            len(result.candidates["i"]))
            continue
        table = getattr(result, f"{name}_table")()
        tables[name] = ([table], table.schema, None)
    if layout == "parts":
        tables = {name: PartsTable(_local_parts(batches, schema, fmt, escape_formulas), schema,
                                   expected)
                  for name, (batches, schema, expected) in tables.items()}
    return write_folder(out_dir, fmt, tables, result.summary(), result.seconds,
                        escape_formulas=escape_formulas)


def write_table_to(stream, table: pa.Table, fmt: str = "csv", *,
                   escape_formulas: bool = True) -> int:
    """``table`` as CSV or JSON Lines to a binary ``stream`` (``escape_formulas``: see
    :func:`write_folder`)."""
    sink = streamed(fmt, "standard output takes")
    rows = sink.write(stream, table.schema, [table], escape_formulas)
    stream.flush()
    return rows


def write_pairs_to(stream, result, fmt: str = "csv", *, escape_formulas: bool = True) -> int:
    """Every document pair (or with ``pairs="groups"`` the pairs of distinct sets) as CSV
    or JSON Lines to a binary ``stream`` (standard output), in batches; returns the rows."""
    sink = streamed(fmt, "--out - writes the pairs as")
    config = result.config
    if config.pairs == "all":
        message = too_many_pairs(result.counts, config.max_pairs or None)
        if message is not None:
            raise ValueError(message)
        batches, schema = result.iter_pairs_tables(), _pairs_schema(result)
    else:
        table = result.set_pairs_table()
        batches, schema = [table], table.schema
    rows = sink.write(stream, schema, batches, escape_formulas)
    stream.flush()
    return rows


def streamed(fmt: str, what: str) -> TableFormat:
    """The output format ``fmt`` where it can go to standard output; else ValueError
    saying ``what`` takes ("standard output takes csv or jsonl, not 'parquet'")."""
    if fmt not in STREAMED_FORMATS:
        raise ValueError(f"{what} {words(STREAMED_FORMATS, 'or')}, not {fmt!r}")
    return sink_named(fmt)


def _pairs_schema(result) -> pa.Schema:
    """The pairs' columns: PAIR_SCHEMA, plus a containment column where it was measured."""
    return getattr(result, "pairs_schema", PAIR_SCHEMA)


def write_folder(out_dir: str | os.PathLike, fmt: str, tables: dict, summary: dict,
                 seconds: dict, *, escape_formulas: bool = True) -> dict[str, Path]:
    """Write a results folder all at once: ``tables`` maps a name to (batches, schema,
    expected rows or None), written as one file ``NAME.FMT`` (the single layout), or to
    a :class:`PartsTable`, written as part files in a folder ``NAME/`` (the parts layout).

    Everything is written into a hidden sibling, then swapped in for ``out_dir`` in one
    step (:class:`~neardup.sinks.staging.StagedDirectory`): ``out_dir`` is always the previous
    complete run or this one, and holds no file of an earlier run. ``manifest.json``,
    written last, lists every file with its rows, bytes and SHA-256 (timings.json, which
    changes between identical runs, by name only), each table's files in row order
    (``tables``), the layout, the neardup version and the command. A table's rows are
    those its writer counted as it wrote them, checked against ``expected``.
    A folder holding files neardup did not write is refused, not replaced.
    ``escape_formulas``: CSV string cells that begin with =, +, -, @, tab or CR get a
    leading ' so a spreadsheet shows them as text (OWASP's advice against CSV injection).
    """
    from .._core.version import VERSION
    from .staging import StagedDirectory

    sink = sink_named(fmt)
    started = time.perf_counter()
    final = Path(out_dir)
    entries, listing, written = [], {}, []
    with StagedDirectory(out_dir, owned) as stage:
        for name, spec in tables.items():
            if isinstance(spec, PartsTable):
                parts = _write_parts(stage, name, fmt, spec, escape_formulas)
                expected = spec.expected
            else:
                batches, schema, expected = spec
                path, rows = write_tables(batches, stage / f"{name}.{fmt}", fmt, schema=schema,
                                          escape_formulas=escape_formulas)
                parts = [_file_entry(path, rows)]
            rows = sum(part["rows"] for part in parts)
            if expected is not None and rows != expected:  # the listing and the count agree
                raise RuntimeError(f"wrote {rows:,} rows of {name} where {expected:,} were "
                                   f"counted")
            entries += parts
            listing[name] = {"rows": rows, "files": [part["name"] for part in parts]}
            written.append(name if isinstance(spec, PartsTable) else f"{name}.{fmt}")
        entries.append(_file_entry(write_json(summary, stage / "summary.json"), None))
        seconds["write"] = time.perf_counter() - started
        timings = write_json({k: round(v, 4) for k, v in seconds.items()},
                             stage / "timings.json")
        layout = "parts" if any(isinstance(t, PartsTable) for t in tables.values()) else "single"
        manifest = {
            "manifest_version": MANIFEST_VERSION, "neardup": VERSION,
            "command": [os.path.basename(sys.argv[0]), *sys.argv[1:]] if sys.argv else [],
            "output_format": fmt, "csv_formulas_escaped": escape_formulas and sink.escapes_formulas,
            "layout": layout, "tables": listing,
            "files": entries + [{"name": timings.name,
                                 "note": "seconds per stage; not checksummed"}],
        }
        write_json(manifest, stage / MANIFEST)
    return {Path(name).stem: final / name
            for name in [*written, "summary.json", timings.name, MANIFEST]}


def _write_parts(stage: Path, name: str, fmt: str, spec: PartsTable,
                 escape_formulas: bool) -> list[dict]:
    """A table's parts in ``stage/name/``, entries named from the folder's top, in order.

    What the writers report is checked against what this process sees (every part there,
    at its size: the folder must be one file system for the driver and every executor);
    a file not reported (a failed task attempt's) is removed. A table with no rows gets
    one part with none (a CSV header, an empty JSON Lines file, a Parquet schema), so
    every table is on disk with its columns.
    """
    folder = stage / name
    folder.mkdir()
    parts = [entry for entry in spec.write(folder) if entry is not None]
    reported = {entry["name"] for entry in parts}
    for path in folder.iterdir():
        if path.name not in reported:
            path.unlink()
    for entry in parts if spec.local else []:
        path = folder / entry["name"]
        seen = path.stat().st_size if path.is_file() else None
        if seen != entry["bytes"]:
            raise RuntimeError(
                f"{name}/{entry['name']} was written with {entry['bytes']:,} bytes, but here "
                f"it is {'missing' if seen is None else f'{seen:,} bytes'}: the results "
                f"folder must be on a file system the driver and every executor share")
    if not parts:
        path, _ = write_tables([spec.schema.empty_table()], folder / part_name(0, fmt), fmt,
                               schema=spec.schema, escape_formulas=escape_formulas)
        parts = [{"name": path.name, "rows": 0, "bytes": path.stat().st_size,
                  "sha256": file_sha256(path)}]
    return [{"name": f"{name}/{entry['name']}", "bytes": int(entry["bytes"]),
             "sha256": entry["sha256"], "rows": int(entry["rows"])} for entry in parts]


def _file_entry(path: Path, rows: int | None) -> dict:
    entry = {"name": path.name, "bytes": path.stat().st_size, "sha256": file_sha256(path)}
    if rows is not None:
        entry["rows"] = rows
    return entry


def read_manifest(out_dir: str | os.PathLike) -> dict:
    """The manifest of a complete results folder, after checking every file against it;
    ValueError naming what is missing or differs. (:func:`read_results` checks the files
    it reads as it reads them.)"""
    out_dir = Path(out_dir)
    manifest = load_manifest(out_dir)
    try:
        entries = [e for e in manifest["files"] if "sha256" in e]
    except TypeError as exc:
        raise ValueError(f"{out_dir / MANIFEST} is not a neardup manifest: {exc}") from None
    for entry in entries:
        file = out_dir / entry["name"]
        if not file.is_file():
            raise ValueError(f"{out_dir}: {entry['name']} is listed in {MANIFEST} but missing")
        if file.stat().st_size != entry["bytes"] or file_sha256(file) != entry["sha256"]:
            raise ValueError(f"{out_dir}: {entry['name']} differs from what the run wrote "
                             f"(size or SHA-256 in {MANIFEST}); run find again")
    return manifest

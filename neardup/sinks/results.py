"""Reading a results folder back, in either layout, every byte checked against its manifest.

A results folder (:func:`neardup.sinks.write_folder`) holds each table in one of two
layouts, named by the manifest's ``layout``:

- ``single``: one file a table at the top, ``pairs.parquet`` (the local engine's, and
  Spark's with ``layout="single"``; folders written before the manifest named a layout
  are read as this one);
- ``parts``: a folder a table, ``pairs/part-00000.parquet``, ``pairs/part-00003.parquet``,
  ... (Spark's executors write them, one a partition that has rows); read in the order
  the manifest's ``tables`` lists them, the rows are the single file's, in its order.

:func:`read_results` returns the tables of either as pyarrow Tables, with the summary;
each file it reads is hashed from the bytes it parses, and a size, SHA-256 or row count
that differs from the manifest's is a ValueError, as is a listed file that is missing.
A manifest no run writes is refused before any table is read (:func:`manifest_problem`):
a name that is absolute or climbs out of the folder (``../outside/p.csv``), a file listed
twice (its rows would be read twice), no table, a table with no file, rows that do not
add up, pairs that are not the summary's count.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ..pairs import expand

MANIFEST = "manifest.json"
STRING_COLUMNS = ("id", "id_a", "id_b", "cluster", "group")  # ids stay text in CSV


@dataclass
class Results:
    """The tables of a results folder (name → pyarrow Table, rows in the run's order),
    its summary, timings and manifest; ``results["pairs"]`` is ``results.tables["pairs"]``."""

    folder: Path
    manifest: dict
    summary: dict
    timings: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)

    @property
    def layout(self) -> str:
        """``single`` (one file a table) or ``parts`` (a folder of part files a table)."""
        return manifest_layout(self.manifest)

    @property
    def output_format(self) -> str:
        return self.manifest.get("output_format", "")

    def __getitem__(self, name: str) -> pa.Table:
        return self.tables[name]

    def __contains__(self, name: str) -> bool:
        return name in self.tables

    def pairs(self) -> pa.Table:
        """Every document pair: the pairs table, or with ``pairs="groups"`` the listing
        :func:`neardup.pairs.expand` rebuilds from set_pairs and identical."""
        if "pairs" in self.tables:
            return self.tables["pairs"]
        if "set_pairs" in self.tables and "identical" in self.tables:
            return expand(self.tables["set_pairs"], self.tables["identical"])
        raise KeyError(f"{self.folder}: no pairs, or set_pairs and identical, were read")


def read_results(folder: str | os.PathLike, tables: Iterable[str] | None = None) -> Results:
    """The tables of a ``neardup find --out`` folder, of either layout, as pyarrow Tables.

    ``tables``: the names to read (default: every table the folder holds: pairs or
    set_pairs, identical, clusters, documents, candidates). Each file read is checked
    against the manifest (size, SHA-256 and rows) from the very bytes parsed; a part
    table's parts are read in the manifest's order, so its rows are in the run's order.
    CSV id columns stay strings; CSV cells escaped against formulas keep their '.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"result directory {folder} does not exist")
    manifest = load_manifest(folder)
    entries = {e["name"]: e for e in manifest["files"] if isinstance(e, dict) and "name" in e}
    listing = table_files(manifest)
    wanted = list(listing) if tables is None else list(tables)
    out = {}
    for name in wanted:
        if name not in listing:
            raise KeyError(f"{folder} has no table {name!r} (it has {', '.join(listing)})")
        parts = []
        for file in listing[name]:
            data = _checked_bytes(folder, entries, file)
            table = read_table_bytes(data, Path(file).suffix.lstrip("."))
            if "rows" in entries[file] and table.num_rows != entries[file]["rows"]:
                raise ValueError(f"{folder}: {file} holds {table.num_rows:,} rows where "
                                 f"{MANIFEST} lists {entries[file]['rows']:,}")
            parts.append(table)
        out[name] = concat_parts(parts)
    summary = json.loads(_checked_bytes(folder, entries, "summary.json"))
    counted = (summary.get("counts") or {}).get("pairs") if isinstance(summary, dict) else None
    if "pairs" in out and counted is not None and out["pairs"].num_rows != counted:
        raise ValueError(f"{folder / MANIFEST}: its pairs files hold {out['pairs'].num_rows:,} "
                         f"rows where summary.json counts {counted:,} pairs")
    timings_path = folder / "timings.json"  # seconds, which change between runs: no checksum
    timings = (json.loads(timings_path.read_text(encoding="utf-8"))
               if timings_path.is_file() else {})
    return Results(folder=folder, manifest=manifest, summary=summary, timings=timings,
                   tables=out)


def load_manifest(folder: str | os.PathLike) -> dict:
    """A results folder's manifest, parsed (the files are not checked here)."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not path.is_file():
        raise ValueError(f"{folder} is not a complete neardup results folder: no {MANIFEST} "
                         f"(a run that did not finish, a folder of an older neardup, or not "
                         f"one at all); run `neardup find ... --out {folder}` again")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(manifest["files"], list):
            raise TypeError("files is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a neardup manifest: {exc}") from None
    problem = manifest_problem(manifest)
    if problem is not None:
        raise ValueError(f"{path} is not a neardup manifest: {problem}")
    return manifest


def manifest_problem(manifest: dict) -> str | None:
    """What makes ``manifest`` one no run writes, or None: every file a plain relative
    name under the folder (no ``..``, no absolute path), listed once; at least one
    table, each listing one file or more, no file in two places, and its ``rows`` the
    sum of its files' rows."""
    entries = {}
    for entry in manifest["files"]:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not is_plain_name(name):
            return f"file {name!r} is not a plain relative name under the folder"
        if name in entries:
            return f"file {name!r} is listed twice"
        entries[name] = entry
    tables = manifest.get("tables")
    if tables is not None and not isinstance(tables, dict):
        return "tables is not a mapping"
    listing = table_files(manifest)
    if not listing:
        return "it lists no table"
    seen: set[str] = set()
    for table, files in listing.items():
        if not files:
            return f"table {table!r} lists no file"
        for name in files:
            if not is_plain_name(name):
                return f"table {table!r}: {name!r} is not a plain relative name under the folder"
            if name in seen:
                return f"table {table!r}: {name!r} is listed twice"
            if name not in entries:
                return f"table {table!r}: {name!r} is not among its files"
            seen.add(name)
        listed = (tables or {}).get(table, {}).get("rows")
        rows = [entries[name].get("rows") for name in files]
        if listed is not None and None not in rows and sum(rows) != listed:
            return (f"table {table!r} has {listed:,} rows but its files hold "
                    f"{sum(rows):,}")
    return None


def is_plain_name(name) -> bool:
    """A relative path inside a folder, as a run writes it: ``pairs.csv``,
    ``pairs/part-00000.csv`` (not absolute, no ``..``, ``.`` or empty part, no backslash)."""
    return (isinstance(name, str) and bool(name) and "\\" not in name
            and all(part not in ("", ".", "..") for part in name.split("/")))


def manifest_layout(manifest: dict) -> str:
    return manifest.get("layout", "single")


def table_files(manifest: dict) -> dict[str, list]:
    """Each table's files, relative to the folder, in row order (a manifest written
    before layouts were named: one file a table, the entries with rows)."""
    tables = manifest.get("tables")
    if tables is None:
        return {e["name"].rsplit(".", 1)[0]: [e["name"]] for e in manifest["files"]
                if "rows" in e and "/" not in e["name"]}
    return {name: list(table["files"]) if isinstance(table, dict) and isinstance(
        table.get("files"), list) else [] for name, table in tables.items()}


def _checked_bytes(folder: Path, entries: dict, name: str) -> bytes:
    entry = entries.get(name)
    if entry is None or "sha256" not in entry:
        raise ValueError(f"{folder}: {name} is not listed with a SHA-256 in {MANIFEST}")
    path = folder / name
    if not path.is_file():
        raise ValueError(f"{folder}: {name} is listed in {MANIFEST} but missing")
    data = path.read_bytes()
    if len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ValueError(f"{folder}: {name} differs from what the run wrote "
                         f"(size or SHA-256 in {MANIFEST}); run find again")
    return data


def read_table(path: str | os.PathLike) -> pa.Table:
    """A result table file in any of the formats :mod:`neardup.sinks` writes (from its
    suffix); ids stay strings. Not checked against a manifest: see :func:`read_results`."""
    path = Path(path)
    return read_table_bytes(path.read_bytes(), path.suffix.lstrip("."))


def read_table_bytes(data: bytes, fmt: str) -> pa.Table:
    """A result table from the bytes of a file in one of the output formats
    (:mod:`neardup.sinks.registry`)."""
    from .registry import BY_NAME

    sink = BY_NAME.get(fmt)
    if sink is None:
        raise ValueError(f"not a result table format: {fmt!r}")
    return sink.read(data)


def concat_parts(parts: list[pa.Table]) -> pa.Table:
    """The parts of one table as one, in order; types inferred part by part (CSV, JSON
    Lines) are widened to agree (an all-whole jaccard column read as int64 joins float64)."""
    if len(parts) == 1:
        return parts[0]
    return pa.concat_tables(parts, promote_options="permissive")

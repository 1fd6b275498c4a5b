"""What a report draws from: a run's tables and summary, from a FindResult or a
``find --out`` folder (:class:`ReportData`), and the texts for the pair views."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import cosine, lsh
from ..sinks import OUTPUT_FORMATS, read_results, read_table
from ..sources.registry import DIRECTORY

TABLE_NAMES = ("documents", "pairs", "set_pairs", "identical", "candidates", "clusters",
               "evaluation")


@dataclass
class ReportData:
    """What the report reads, as columns: from a :class:`FindResult` or a result directory."""

    ids: list[str]
    shingles: np.ndarray  # int64[n]
    status: np.ndarray  # object[n]
    cluster: np.ndarray  # object[n]: id of the cluster's first document
    representative: np.ndarray  # bool[n]
    pairs: dict  # doc_a, doc_b, jaccard: the pairs of distinct sets (their groups' heads)
    head: np.ndarray  # int64[n]: first document with the same shingle set (itself if none)
    candidates: dict  # doc_a, doc_b, jaccard, verified
    summary: dict
    timings: dict
    missed: dict | None = None  # doc_a, doc_b, jaccard: true pairs that were not candidates
    origin: str = "in-memory result"
    notes: list[str] = field(default_factory=list)
    # (directory, id prefix) the run read, to re-read texts from: only for a result of
    # this process, whose inputs the caller gave; a folder's summary names no place
    # to read (anyone who edits it can recompute its SHA-256s)
    input_roots: list[tuple[str, str]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def config(self) -> dict:
        return self.summary.get("config") or {}

    @property
    def threshold(self) -> float:
        return float(self.config.get("threshold", self.summary.get("plan", {}).get(
            "threshold", 0.8)))

    @property
    def bands_rows(self) -> tuple[int, int]:
        plan = self.summary.get("plan") or {}
        return int(plan.get("bands", 1)), int(plan.get("rows", 1))

    @property
    def measure(self) -> str:
        """What the similarities are: "cosine" for a run on embeddings, else "Jaccard"."""
        return "cosine" if self.config.get("embeddings") is not None else "Jaccard"

    def s_curve(self, s):
        """P(candidate) at similarity s under the run's b × r (the cosine S-curve for a
        run on embeddings, :func:`neardup.cosine.cosine_curve`)."""
        bands, rows = self.bands_rows
        if self.measure == "cosine":
            return cosine.cosine_curve(s, bands, rows)
        return lsh.s_curve(s, bands, rows)

    @property
    def steep_point(self) -> float:
        """Where the S-curve rises fastest, in the run's similarity."""
        point = lsh.steep_point(*self.bands_rows)
        return cosine.threshold_of_agreement(point) if self.measure == "cosine" else point


def load(result_or_dir) -> ReportData:
    """ReportData from a FindResult, or from a directory written by ``find --out``."""
    if isinstance(result_or_dir, (str, os.PathLike)):
        return _load_dir(Path(result_or_dir))
    result = result_or_dir
    tables = {"documents": result.documents_table(), "set_pairs": result.set_pairs_table(),
              "identical": result.identical_table(), "candidates": result.candidates_table()}
    evaluation = getattr(result, "evaluation", None)
    if evaluation is not None:
        tables["evaluation"] = (evaluation if isinstance(evaluation, pa.Table)
                                else pa.table(evaluation))
    data = _from_tables(tables, result.summary(), dict(result.seconds), "in-memory result")
    data.input_roots = directory_inputs(data.summary)
    return data


def directory_inputs(summary: dict) -> list[tuple[str, str]]:
    """(path, id prefix) of every directory a run's summary says it read."""
    return [(src["path"], f"{src['name']}/" if src.get("prefixed") else "")
            for src in ((summary.get("read") or {}).get("inputs") or [])
            if src.get("format") == DIRECTORY.name]


def _load_dir(directory: Path) -> ReportData:
    if not directory.is_dir():
        raise NotADirectoryError(f"result directory {directory} does not exist")
    # either layout (one file a table, or part files); every file read is checked
    # against the manifest as it is read: a complete run's folder, as the run wrote it
    results = read_results(directory)
    tables = {name: table for name, table in results.tables.items() if name in TABLE_NAMES}
    for fmt in OUTPUT_FORMATS:  # an evaluation table put beside the run's files
        path = directory / f"evaluation.{fmt}"
        if path.exists():
            tables["evaluation"] = read_table(path)
            break
    for needed in ("documents", "candidates", "pairs"):
        if needed not in tables and not (needed == "pairs" and "set_pairs" in tables):
            raise FileNotFoundError(f"{directory} has no {needed} table; "
                                    f"write it with `neardup find ... --out {directory}`")
    return _from_tables(tables, results.summary, results.timings, str(directory))


def _columns(table: pa.Table | None, names: Sequence[str]) -> dict:
    out = {}
    for name in names:
        if table is not None and name in table.column_names:
            out[name] = table.column(name).to_numpy(zero_copy_only=False)
        else:
            out[name] = np.empty(0)
    return out


def _from_tables(tables: dict, summary: dict, timings: dict, origin: str) -> ReportData:
    docs = tables["documents"]
    order = np.argsort(docs.column("doc").to_numpy(zero_copy_only=False), kind="stable")
    d = {name: docs.column(name).to_numpy(zero_copy_only=False)[order]
         for name in ("id", "shingles", "status", "cluster", "representative")}
    pairs = _columns(tables.get("set_pairs", tables.get("pairs")), ("doc_a", "doc_b", "jaccard"))
    candidates = _columns(tables.get("candidates"), ("doc_a", "doc_b", "jaccard", "verified"))
    for cols in (pairs, candidates):
        for k in ("doc_a", "doc_b"):
            cols[k] = cols[k].astype(np.int64)
        cols["jaccard"] = cols["jaccard"].astype(np.float64)
    candidates["verified"] = candidates["verified"].astype(bool)
    for cols, name in ((pairs, "set_pairs"), (candidates, "candidates")):
        table = tables.get(name, tables.get("pairs"))
        if table is not None and "cosine" in table.column_names:  # a run on embeddings
            value = table.column("cosine").to_numpy(zero_copy_only=False).astype(np.float64)
            # a pair without a cosine (either: no vector) is drawn at its Jaccard
            cols["jaccard"] = np.where(np.isnan(value), np.nan_to_num(cols["jaccard"]), value)
    head = np.arange(d["id"].size, dtype=np.int64)
    identical = _columns(tables.get("identical"), ("doc", "head_doc"))
    head[identical["doc"].astype(np.int64)] = identical["head_doc"].astype(np.int64)
    if "set_pairs" not in tables:  # every document pair listed: keep those between heads
        heads = head == np.arange(head.size)
        between = heads[pairs["doc_a"]] & heads[pairs["doc_b"]]
        pairs = {k: v[between] for k, v in pairs.items()}
    missed = None
    evaluation = tables.get("evaluation")
    if evaluation is not None:
        ev = _columns(evaluation, ("doc_a", "doc_b", "jaccard", "candidate"))
        keep = ~ev["candidate"].astype(bool) if ev["candidate"].size else np.ones(
            ev["doc_a"].size, dtype=bool)
        missed = {k: ev[k][keep] for k in ("doc_a", "doc_b", "jaccard")}
        missed["doc_a"] = missed["doc_a"].astype(np.int64)
        missed["doc_b"] = missed["doc_b"].astype(np.int64)
        missed["jaccard"] = missed["jaccard"].astype(np.float64)
    return ReportData(
        ids=[str(x) for x in d["id"]], shingles=d["shingles"].astype(np.int64),
        status=d["status"].astype(object), cluster=d["cluster"].astype(object),
        representative=d["representative"].astype(bool), pairs=pairs, head=head,
        candidates=candidates,
        summary=summary, timings=timings, missed=missed, origin=origin)


def text_lookup(data: ReportData, texts=None, root=None):
    """A function doc -> text or None; and a line saying where texts come from.

    Texts are ``texts`` when given; else files re-read under ``root`` (the caller's
    directory the ids are paths in) and, for a result of this process, under the
    directories it read. A result folder's own summary is never a place to read from.
    Every path is resolved and must stay inside its directory (no absolute id, no
    ``..``, no link leading out)."""
    if texts is not None:
        if isinstance(texts, Mapping):
            return (lambda d: texts.get(data.ids[d])), "texts given by the caller"
        if len(texts) != data.n:
            raise ValueError(f"texts has {len(texts)} entries for {data.n} documents")
        return (lambda d: texts[d]), "texts given by the caller"
    roots = ([(os.fspath(root), "")] if root is not None else []) + list(data.input_roots)
    if not roots:
        return None, ("texts were not re-read: give the directory the ids are paths in "
                      "(`neardup report ... --root DIR`; files are read only under it), or "
                      "run `neardup find ... --report`")

    bases = [(os.path.realpath(base), prefix) for base, prefix in roots]

    def read(d: int):
        doc_id = data.ids[d]
        for base, prefix in bases:
            if prefix and not doc_id.startswith(prefix):
                continue
            path = _file_under(base, doc_id[len(prefix):])
            if path is None:
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    return f.read()
            except OSError:
                continue
        return None

    return read, "texts re-read from " + ", ".join(base for base, _ in roots)


def _file_under(base: str, relative: str) -> str | None:
    """``base/relative`` if it is a regular file under ``base`` once every link is
    resolved, else None: an id such as /etc/passwd, ../../x or a link out reads nothing."""
    parts = relative.replace("\\", "/").split("/")
    if not relative or os.path.isabs(relative) or ".." in parts:
        return None
    path = os.path.realpath(os.path.join(base, relative))
    if os.path.commonpath([path, base]) != base or not os.path.isfile(path):
        return None
    return path

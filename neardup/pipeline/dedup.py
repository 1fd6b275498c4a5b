"""What a whole-document dedup writes from a run: which records stay (``keep``), the
copy with or without the run's annotations (``annotate``), and the removed records
with what each duplicates (``explain``).

Any (FindResult, Documents) pair will do, however the run was made (in memory, a chunk
at a time): :meth:`DedupOutputs.check` runs at the door, before any read, and
:meth:`DedupOutputs.write` after the run. What each document becomes is
:meth:`neardup.result.FindResult.outcomes_table` (see
:func:`neardup.cluster.dedup_outcomes`): its columns are the annotations
(:mod:`neardup.sources.annotations`) and the explain table's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._core import counts as counting
from ..cluster import KEEP_POLICIES
from ..result import FindResult
from ..sinks import OUTPUT_FORMATS, write_table
from ..sinks.staging import refuse_inside_replaced, refuse_touching_inputs
from ..sources import Documents, check_annotation_target, frames, resolve_format
from ..sources.annotations import PREFIX, annotated_rows, annotation_columns
from ..sources.copies import write_deduplicated

DEFAULT_KEEP = KEEP_POLICIES[0]


def check_explain_path(path) -> None:
    """ValueError unless ``path`` ends in a format the explain table is written in."""
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix not in OUTPUT_FORMATS:
        raise ValueError(f"--explain {path}: the file's suffix says its format, one of "
                         f"{', '.join('.' + f for f in OUTPUT_FORMATS)}")


@dataclass(frozen=True)
class DedupOutputs:
    """``keep`` (:data:`neardup.cluster.KEEP_POLICIES`), ``annotate`` (add the run's
    columns to every record written), ``explain`` (a .csv, .jsonl or .parquet file for
    the removed records)."""

    keep: str = DEFAULT_KEEP
    annotate: bool = False
    explain: str | os.PathLike | None = None

    def check(self, inputs, out, fmt: str = "auto", cosine: bool = False) -> None:
        """ValueError, before any read, where these outputs cannot be written for
        ``inputs`` (a list of paths, or data in memory) and ``out``; ``cosine``: a run on
        embeddings, which annotates the cosine too."""
        if self.keep not in KEEP_POLICIES:
            raise ValueError(f"keep must be one of {KEEP_POLICIES}, got {self.keep!r}")
        if self.keep == "all" and not self.annotate:
            raise ValueError("keep='all' (--keep all) writes every record: give "
                             "annotate=True (--annotate) to mark the duplicates")
        in_memory = frames.is_in_memory(inputs)
        paths = [] if in_memory else [os.fspath(p) for p in inputs]
        if self.explain is not None:
            check_explain_path(self.explain)
            refuse_touching_inputs(paths, {"--explain": self.explain}, replaced=())
            if out is not None and out != "-" and \
                    os.path.realpath(self.explain) == os.path.realpath(out):
                raise ValueError(f"--explain {self.explain} is the --out path: choose "
                                 f"another file")
            if out != "-":  # a folder of copies (Spark's, a directory's) is replaced whole
                refuse_inside_replaced("--out", out, {"--explain": self.explain})
        if self.annotate and not in_memory:
            check_annotation_target(paths, [resolve_format(p, fmt) for p in paths],
                                    [PREFIX + name for name in annotation_columns(cosine)])

    def check_against(self) -> None:
        """Against an index the kept documents are the anchored cover's, unannotated."""
        if self.keep != DEFAULT_KEEP or self.annotate:
            raise ValueError("keep= (--keep) and annotate= (--annotate) apply to a dedup "
                             "without an index (against=)")

    def write(self, result: FindResult, documents: Documents, inputs, out):
        """The copy of ``inputs`` (files: to ``out``, its counts in
        ``result.counts["dedup"]``, and ``result`` returned; data in memory: returned)
        and the explain file, from the run's ``result`` over ``documents``."""
        outcomes = result.outcomes_table(self.keep)
        kept = outcomes.column("written").to_numpy(zero_copy_only=False).astype(bool)
        names = annotation_columns("cosine" in outcomes.column_names)
        annotations = outcomes.select(list(names)) if self.annotate else None
        if frames.is_in_memory(inputs):
            rows = result.read_report["records_seen"]
            keep_row = frames.kept_row_mask(documents, kept, rows)
            if annotations is None:
                copy = frames.keep_rows(inputs, keep_row)
            else:
                document_at = np.full(rows, -1, dtype=np.int64)
                document_at[documents.record] = np.arange(len(documents))
                copy = annotated_rows(inputs, keep_row, annotations, document_at)
        else:
            written = write_deduplicated(documents, kept, inputs, out, annotate=annotations)
            counting.add(result.counts, dedup=self.copy_counts(written))
            copy = result
        if self.explain is not None:
            self.write_explain(result.explain_table(self.keep), result.counts)
        return copy

    def copy_counts(self, written: dict) -> dict:
        """The ``dedup`` count of a copy the writer says is ``written``."""
        return {**written, "keep": self.keep, "annotated": self.annotate}

    def write_explain(self, table, counts: dict) -> None:
        """The explain ``table`` (:meth:`~neardup.result.FindResult.explain_table`)
        written to the explain file, and its count added to ``counts``: every engine
        writes it here."""
        write_table(table, self.explain, escape_formulas=True)  # as every CSV output
        counting.add(counts, explain={"path": str(self.explain), "rows": table.num_rows})

"""The dedup copy: each input written again in its format, minus the removed records.

:func:`write_deduplicated` writes the inputs :func:`~neardup.sources.read_documents` read,
leaving out exactly the documents whose ``keep`` is False. Skipped and failed records are
written back. With ``edits`` a record's text is replaced (repeated units removed inside
it); with ``annotate`` fields are added to every record written
(:mod:`neardup.sources.annotations`). Each format's own writer is its
:class:`~neardup.sources.format.Format`'s ``copy``:

* lines and JSON Lines are copied byte for byte, directories file for file;
* CSV/TSV is rewritten by the csv module in the input's delimiter and line ending (a row
  it cannot parse copied as it is);
* JSON arrays element by element (each kept element's text as it was, the array's layout
  kept; a malformed file copied whole);
* Parquet and Arrow IPC are filtered as an Arrow table.

The copy is compressed as its name says (``out.jsonl.gz``: gzip); standard output (``"-"``)
takes it uncompressed. File inputs are read again for the copy, and a file that changed
since it was read is refused. :func:`check_copy_target` refuses, before any read, an
output that cannot take the copy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

import numpy as np

from .._core import remote
from ..sinks.format import words
from ..sinks.staging import StagedDirectory, refuse_touching_inputs, standard_output
from .annotations import Annotations, check_annotation_target
from .compression import _open_output, _zstandard, compression_of
from .directory import DEDUP_MARKER
from .documents import STDIN, STDOUT, Documents, InputSource
from .frames import is_in_memory
from .options import as_paths
from .registry import FORMATS, format_named, resolve_format

__all__ = ["LazyEdits", "check_copy_target", "check_dedup_out", "write_deduplicated"]


def write_deduplicated(
    documents: Documents,
    keep: np.ndarray,
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    edits: dict[int, str] | None = None,
    text_field: str = "text",
    annotate=None,
) -> dict:
    """Write the inputs minus the documents whose ``keep[d]`` is False, each in its format.

    ``annotate``: a pyarrow Table with one row per document whose columns are added to
    every record written, named ``neardup_`` + the column's name, in the input's format
    (JSON Lines, CSV/TSV, Parquet; see :mod:`neardup.sources.annotations`: an input
    that already has such a field is refused before its copy is written).

    ``edits``: document -> its new text (repeated units removed inside it, see
    :mod:`neardup.units`), written in place of the old one in ``text_field`` (JSON
    Lines, CSV/TSV, Parquet), as the line (lines) or as the file (directories); a JSON
    file input is refused. Records not edited are copied as without ``edits``.

    One input: ``out`` is the output file (a directory for a directory input);
    "-" writes it to standard output, uncompressed (one file input only).
    Several inputs: ``out`` is a directory holding one output per input, named
    after the input's unique basename (``Documents.inputs[i].name``).
    A file copy is compressed as its name says (``.gz``, ``.zst``, ``.bz2``,
    ``.xz``; none: plain), whatever the input's compression; several inputs' copies
    keep their input's names, so their compression too.
    Only documents are ever removed: skipped and failed records are written back
    (a directory copy leaves out only files that could not be read or that the
    scan skipped as ignored; the rest of a compressed file past a break cannot be
    copied). File inputs are read again; one that changed since
    :func:`read_documents` is refused.

    Returns ``{"written": records written, "removed": documents removed,
    "outputs": [{"input", "output", "format", "written", "removed", "not_copied"}]}``.
    """
    given = [os.fspath(p) for p in inputs]
    if given != [src.given for src in documents.inputs]:
        raise ValueError(
            f"inputs {given} are not the inputs the documents were read from "
            f"{[src.given for src in documents.inputs]}"
        )
    check_copy_target(given, out, documents.inputs[0].fmt if len(given) == 1 else "auto")
    keep = np.asarray(keep)
    if keep.dtype != np.bool_ or keep.shape != (len(documents),):
        raise ValueError(
            f"keep must be a bool array of shape ({len(documents)},), "
            f"got {keep.dtype} {keep.shape}"
        )
    out = os.fspath(out)
    single = len(documents.inputs) == 1
    annotations = None
    if annotate is not None:
        if edits:
            raise ValueError("a copy either edits texts (units) or annotates records")
        annotations = Annotations(annotate, documents)
        check_annotation_target([src.given for src in documents.inputs],
                                [src.fmt for src in documents.inputs], annotations.names,
                                scan=False)
    unedited = next((spec for spec in map(format_named, (src.fmt for src in documents.inputs))
                     if not spec.edits), None)
    if edits and unedited is not None:
        raise ValueError(f"units inside documents are not removed from "
                         f"{unedited.refusing_fields()}; give "
                         f"{words([s.title for s in FORMATS if s.edits], 'or')}")
    refuse_touching_inputs(given, {"--out": out})
    targets = [out if single else os.path.join(out, src.name) for src in documents.inputs]
    for src, target in zip(documents.inputs, targets):
        if target != STDOUT:
            _refuse_overwriting_input(src, target)
    if single and not format_named(documents.inputs[0].fmt).directory:
        return _write_copies(documents, keep, targets, targets, edits, text_field,
                             annotations)
    # a folder of copies is replaced whole: a second run leaves exactly its own files

    marked = os.path.isfile(os.path.join(out, DEDUP_MARKER))
    with StagedDirectory(out, lambda name: marked, option="--out") as stage:
        staged = [str(stage) if single else os.path.join(stage, src.name)
                  for src in documents.inputs]
        written = _write_copies(documents, keep, staged, targets, edits, text_field,
                                annotations)
        with open(os.path.join(stage, DEDUP_MARKER), "w", encoding="utf-8") as f:
            json.dump({"written by": "neardup dedup", "inputs": [src.display for src in
                                                                 documents.inputs],
                       "written": written["written"], "removed": written["removed"]}, f)
    return written


def check_dedup_out(inputs, out, fmt: str = "auto", *, also_read: Sequence = (),
                    also_written: Mapping[str, str | os.PathLike | None] | None = None
                    ) -> None:
    """A dedup's ``out``, checked before any read. Data in memory takes none (its copy is
    returned); files need one, which is neither an input nor in ``also_read`` (an index
    read alongside), nor one of ``also_written`` (option -> path: ``--work-dir``), and
    which can take the copy (:func:`check_copy_target`)."""
    if is_in_memory(inputs):
        if out is not None:
            raise ValueError("dedup of data in memory returns the deduplicated data; "
                             "out= is for files")
        return
    if out is None:
        raise ValueError("dedup of files needs out= (the path of the copy)")
    paths = as_paths(inputs)
    refuse_touching_inputs([*paths, *also_read], {"--out": out, **(also_written or {})})
    check_copy_target(paths, out, fmt)


def check_copy_target(inputs: Sequence[str | os.PathLike], out: str | os.PathLike,
                      fmt: str = "auto") -> None:
    """ValueError where ``out`` cannot take the dedup copy of ``inputs`` read as ``fmt``,
    checked before any read: standard output ("-") takes one file's records, and a
    copy's compression suffix needs a format it can wrap (not Parquet) and, for zstd,
    its package."""
    paths = [os.fspath(p) for p in inputs]
    out = os.fspath(out)
    formats = [format_named(resolve_format(p, fmt)) for p in paths]
    if out == STDOUT:
        standard_output("the copy")  # started closed (`>&-`): a failure, not a usage error
        if len(paths) != 1:
            raise ValueError(f"the dedup copy goes to standard output (-o -) for one input "
                             f"only, got {len(paths)}; give a directory for several")
        if formats[0].directory:
            raise ValueError(f"{paths[0]} is a directory: its dedup copy is a directory of "
                             f"files and cannot go to standard output (-o -); give -o DIR")
        return
    if len(paths) != 1 or formats[0].directory:
        return  # copies named after their inputs, which were read: they can be written
    compression = compression_of(out)
    if compression is not None and formats[0].self_compressed:
        raise ValueError(f"{out}: {formats[0].self_compressed}; name the copy "
                         f"{formats[0].copy_suffix}, without the .{out.rsplit('.', 1)[-1]}")
    if compression == "zstd":
        _zstandard(out)


def _write_copies(documents: Documents, keep: np.ndarray, paths: list[str],
                  shown: list[str], edits: dict[int, str] | None = None,
                  text_field: str = "text", annotations: Annotations | None = None) -> dict:
    """Each input's copy written to ``paths[i]`` (reported as ``shown[i]``); ``edits``:
    document -> new text, ``annotations``: fields added (see :func:`write_deduplicated`)."""
    source = np.asarray(documents.source)
    outputs = []
    lazy = isinstance(edits, LazyEdits)
    edited = [] if lazy else sorted((edits or {}).items())
    for index, (src, path, target) in enumerate(zip(documents.inputs, paths, shown)):
        removed = _RecordSet(documents.record[(source == index) & ~keep])
        changed = (_RecordEdits(edits, documents.record, source, index) if lazy else
                   {int(documents.record[d]): text for d, text in edited
                    if source[d] == index})
        spec = format_named(src.fmt)
        if spec.directory:
            counts = spec.copy(src, removed, path, changed)
        else:
            _check_unchanged(src)
            with _open_output(path, [s.given for s in documents.inputs]) as out:
                if annotations is not None:
                    counts = spec.copy(src, removed, out,
                                       annotations=annotations.of_input(index))
                elif changed:
                    counts = spec.copy(src, removed, out, changed, text_field)
                else:
                    counts = spec.copy(src, removed, out)
        outputs.append({"input": src.display, "output": target, "format": src.fmt,
                        "written": counts[0], "removed": len(removed),
                        "not_copied": counts[1]})
    return {
        "written": sum(o["written"] for o in outputs),
        "removed": sum(o["removed"] for o in outputs),
        "outputs": outputs,
    }


class _RecordSet(AbstractSet):
    """The removed records of one input (record numbers, >= 0), as the writers test
    them (``record in removed``, ``len``, iteration in order): a byte a record up to the
    last one removed, instead of a Python int and a set slot each (a copy of 10M
    documents); a test costs about what a set's does."""

    def __init__(self, records: np.ndarray):
        records = np.asarray(records, dtype=np.int64)
        mask = np.zeros(int(records.max()) + 1 if records.size else 0, dtype=np.uint8)
        mask[records] = 1
        self._mask = mask.tobytes()
        self._count = int(np.count_nonzero(mask))

    def __contains__(self, record) -> bool:
        try:
            return self._mask[record] == 1
        except IndexError:  # past the last record removed
            return False

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        return iter(np.flatnonzero(np.frombuffer(self._mask, dtype=np.uint8)).tolist())


class LazyEdits(Mapping):
    """``edits`` for :func:`write_deduplicated` that make each text when it is asked for
    (a copy under a memory limit): document -> new text, and ``documents``, the
    documents it holds (int64, sorted)."""

    @property
    def documents(self) -> np.ndarray:
        raise NotImplementedError

    def __iter__(self):
        return iter(self.documents.tolist())

    def __len__(self) -> int:
        return int(self.documents.size)


class _RecordEdits(Mapping):
    """Lazy ``edits`` of one input, by record: the writers look each record up as they
    copy it (records of an input are read in order, so they are sorted)."""

    def __init__(self, edits: LazyEdits, record: np.ndarray, source: np.ndarray, index: int):
        docs = np.flatnonzero(source == index)
        self.edits, self.lo = edits, int(docs[0]) if docs.size else 0
        self.records = record[self.lo:self.lo + docs.size]
        if np.any(np.diff(self.records) <= 0):
            raise AssertionError("records of an input are not in reading order")
        mine = edits.documents
        self.mine = mine[(mine >= self.lo) & (mine < self.lo + docs.size)]

    def _document(self, record) -> int:
        """The document of ``record`` if it is edited, else -1."""
        k = int(np.searchsorted(self.records, record))
        found = k < self.records.size and self.records[k] == record
        return self.lo + k if found and self.lo + k in self.edits else -1

    def __getitem__(self, record) -> str:
        d = self._document(record)
        if d < 0:
            raise KeyError(record)
        return self.edits[d]

    def __contains__(self, record) -> bool:
        return self._document(record) >= 0

    def __iter__(self):
        return iter(self.records[self.mine - self.lo].tolist())

    def __len__(self) -> int:
        return int(self.mine.size)


def _refuse_overwriting_input(src: InputSource, target: str) -> None:
    """A file input's copy is a file (onto or into an input: see refuse_touching_inputs)."""
    if src.given == STDIN:
        return
    if not format_named(src.fmt).directory and os.path.isdir(target):
        raise ValueError(f"{target} is a directory; the dedup copy of {src.given} is a file")


def _check_unchanged(src: InputSource) -> None:
    if src.stat is None:
        return
    if remote.is_url(src.given):
        if remote.stat_token(src.given) != src.stat:
            raise RuntimeError(f"{src.display} changed since it was read; read it again")
        return
    st = os.stat(src.given)
    if (st.st_size, st.st_mtime_ns) != src.stat:
        raise RuntimeError(f"{src.given} changed since it was read; read it again")

"""What reading produces: :class:`Documents`, and the :class:`ReadReport` that accounts
for every record.

The types every format reader fills (:mod:`neardup.sources` is the entry point; each
format's reader is its own module: :mod:`~neardup.sources.directory`,
:mod:`~neardup.sources.lines`, :mod:`~neardup.sources.jsonfile`,
:mod:`~neardup.sources.delimited`, :mod:`~neardup.sources.parquet`):

* :class:`Documents`: n documents, column-wise: ``ids``, ``texts`` (lists of str),
  ``source`` (int32[n]: the input), ``record`` (int64[n]: the record within it);
* :class:`ReadReport`: every record seen is exactly one of processed, skipped (with its
  reason) or failed (with its reason); :meth:`ReadReport.check` verifies it. Routine
  skips (blank lines, empty texts, ignored files) are counted but not listed;
* :class:`InputSource`: one input as read, enough to find its records again for the
  dedup copy;
* ``_DocumentsBuilder``: gathers the documents; a repeated id is renamed (``x#2``) and
  noted, never dropped (every id so far is looked up in a
  :class:`~neardup.sources.seen_ids.SeenIds`); read in chunks, it says where a block's
  records fill a chunk;
* ``_ReadContext``: what a format reader gets for one input (where to add documents,
  how to decode, which fields hold the text and the id).

And the text rules the readers share: a lone surrogate (which no UTF-8 output can hold)
is found by :func:`has_surrogates` and escaped for messages by :func:`printable`.
"""

from __future__ import annotations

import codecs
import itertools
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from .._core import remote
from .seen_ids import SeenIds, first_uses

STDIN = "-"
STDOUT = "-"  # write_deduplicated's out: the copy to standard output
STDIN_NAME = "<stdin>"
IGNORED = "ignored (.gitignore)"  # skip reasons of a directory scan
VCS_FOLDER = "VCS folder"
# Routine skips are counted but not listed as problems, so real errors stay in view.
ROUTINE_SKIPS = frozenset({"empty line", "empty text", IGNORED, VCS_FOLDER})
NOTHING_READ_REASONS = 3  # a read that processed nothing names this many failure reasons


@dataclass
class Problem:
    source: str  # file path, or "<stdin>"
    location: str  # "row 17 (line 20)", "line 3", "column 'text'", "" for a whole file
    reason: str


@dataclass
class ReadReport:
    """What happened to every record: processed, skipped (with reason) or failed (with reason)."""

    records_seen: int = 0
    processed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)  # the first max_problems
    problems_total: int = 0
    max_problems: int = 100

    def check(self) -> None:
        """Raise AssertionError unless every record seen is accounted for exactly once."""
        accounted = self.processed + sum(self.skipped.values()) + sum(self.failed.values())
        if self.records_seen != accounted:
            raise AssertionError(
                f"read accounting broken: {self.records_seen} records seen but "
                f"{self.processed} processed + {sum(self.skipped.values())} skipped + "
                f"{sum(self.failed.values())} failed = {accounted}"
            )

    def refuse_nothing_processed(self, hints: Iterable[str] = ()) -> None:
        """Raise ValueError when no record was processed and some failed (a wrong
        ``text_fields`` or ``id_field``, a file in another format than its name says):
        a run would go on with no documents and, for dedup, copy every record. The
        message names the reasons (with the fields the records do have, where a field
        is missing) and ``hints``, e.g. the format an input's content looks like."""
        if self.processed or not self.failed:
            return
        failed = sum(self.failed.values())
        reasons = sorted(self.failed.items(), key=lambda kv: (-kv[1], kv[0]))
        named = "; ".join(f"{count:,} {reason}"
                          for reason, count in reasons[:NOTHING_READ_REASONS])
        if len(reasons) > NOTHING_READ_REASONS:
            named += f"; {len(reasons) - NOTHING_READ_REASONS} more reasons"
        where = ""
        if self.problems:
            first = self.problems[0]
            where = f" (first: {first.source}{' ' + first.location if first.location else ''})"
        message = (f"no record was read as a document: {failed:,} of {self.records_seen:,} "
                   f"failed{where}: {named}")
        for hint in hints:
            message += f"; {hint}"
        raise ValueError(f"{message}. Nothing was written; allow_empty=True (--allow-empty) "
                         f"runs on with no documents")

    def as_dict(self) -> dict:
        return {
            "records_seen": self.records_seen,
            "processed": self.processed,
            "skipped": dict(sorted(self.skipped.items())),
            "failed": dict(sorted(self.failed.items())),
            "problems": [asdict(p) for p in self.problems],
            "problems_total": self.problems_total,
        }

    def _note(self, source: str, location: str, reason: str) -> None:
        self.problems_total += 1
        if len(self.problems) < self.max_problems:
            self.problems.append(Problem(source, location, reason))

    def _skip(self, source: str, location: str, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if reason not in ROUTINE_SKIPS:
            self._note(source, location, reason)

    def _fail(self, source: str, location: str, reason: str) -> None:
        self.failed[reason] = self.failed.get(reason, 0) + 1
        self._note(source, location, reason)


@dataclass
class InputSource:
    """One input as read: enough to find its records again for the dedup copy."""

    given: str  # the path as given ("-" for standard input)
    fmt: str  # resolved format, never "auto"
    name: str  # basename, unique among the inputs: output name and id prefix
    encoding: str
    delimiter: str | None = None  # csv/tsv
    line_terminator: str = "\n"  # csv/tsv: the input's, reused for the copy
    entries: list[str] = field(default_factory=list)  # dir: relative path of each record
    # dir: records the copy leaves out (unreadable, not a regular file, ignored)
    not_copied: set[int] = field(default_factory=set)
    data: bytes | None = None  # standard input, kept for the copy
    stat: tuple[int, int] | None = None  # file: (size, mtime_ns) when read
    compression: str | None = None  # "gzip", "zstd", "bz2", "xz" (from the suffix) or None
    damaged: str | None = None  # a compressed file's stream broke: why (its last record)
    record_bound: int | None = None  # csv/tsv: the longest row read; the copy copies a
    # longer one (skipped) as it was, a piece at a time

    @property
    def display(self) -> str:
        # a URL without its query (a signed URL's signature): what reports and summaries keep
        return STDIN_NAME if self.given == STDIN else printable(remote.shown(self.given))


@dataclass
class Documents:
    """n documents, column-wise; document d came from ``inputs[source[d]]``, record ``record[d]``.

    ``record`` is the 0-based position within the input: the index in the sorted
    file list (dir), the physical line index (lines, jsonl: line number - 1), the
    element index (json), or the data row index (csv/tsv without the header, parquet).
    """

    ids: list[str]
    texts: list[str] | None  # None: let go once shingled (see neardup.pipeline.run)
    source: np.ndarray  # int32[n]
    record: np.ndarray  # int64[n]
    inputs: list[InputSource] = field(default_factory=list)
    start: int = 0  # a chunk's first document number (see read_document_chunks)
    # extra_fields asked of the reader: name -> one value per document (None: missing)
    fields: dict[str, list] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)


class _DocumentsBuilder:
    def __init__(self, report: ReadReport, extra_fields: Sequence[str] = ()):
        self.report = report
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.source: list[int] = []
        self.record: list[int] = []
        self.fields: dict[str, list] = {name: [] for name in extra_fields}
        self.id_uses = SeenIds()  # every id so far, chunks included: renames stay global
        self.pending_chars = 0  # characters of text held since the last take()
        self.taken = 0  # documents handed out by take()
        self.chunk_chars: int | None = None  # read in chunks: a chunk closes at this size
        self.chunk_docs = sys.maxsize  # ... or at this many documents

    def records_until_full(self, chars: np.ndarray, docs: np.ndarray, lo: int) -> int:
        """Where the next run of a block's records should end: after the record that fills
        the chunk (``chars``, ``docs``: the block's running totals of text and documents),
        or at the block's end when reading is not in chunks."""
        if self.chunk_chars is None:
            return chars.size
        before_chars = int(chars[lo - 1]) if lo else 0
        before_docs = int(docs[lo - 1]) if lo else 0
        docs_left = min(self.chunk_docs - len(self.texts), chars.size + 1)  # no overflow
        full = min(np.searchsorted(chars, before_chars + self.chunk_chars - self.pending_chars),
                   np.searchsorted(docs, before_docs + docs_left))
        return int(min(max(full + 1, lo + 1), chars.size))

    def add(self, source: int, record: int, doc_id: str, text: str,
            display: str, unit: str, number: int, values: Sequence = ()) -> None:
        """Append one document; ``unit number`` ("line 3", "row 2") locates it for messages;
        ``values``: its extra fields' values, in the order asked (missing: None)."""
        uses = self.id_uses.uses(doc_id)
        self.id_uses.give(doc_id, uses + 1)
        if uses:
            renamed = doc_id
            while renamed in self.id_uses:
                uses += 1
                renamed = f"{doc_id}#{uses}"
            self.id_uses.give(renamed, 1)
            reason = f"duplicate id {doc_id!r} (renamed to {renamed!r})"
            self.report._note(display, f"{unit} {number}" if unit else "", reason)
            doc_id = renamed
        self.ids.append(doc_id)
        self.texts.append(text)
        self.source.append(source)
        self.record.append(record)
        for column, value in itertools.zip_longest(self.fields.values(), values):
            column.append(value)
        self.pending_chars += len(text)
        self.report.processed += 1

    def extend(self, source: int, records: list[int], ids: list[str], texts: list[str],
               display: str, unit: str, values: dict[str, list] | None = None) -> None:
        """Append many documents; one set operation when no id repeats (the usual case).
        ``values``: each extra field's values (absent: every value missing)."""
        values = values or {}
        new_ids = first_uses(ids)
        if len(new_ids) != len(ids) or self.id_uses.any_given(new_ids):
            for k, (record, doc_id, text) in enumerate(zip(records, ids, texts, strict=True)):
                self.add(source, record, doc_id, text, display, unit, record + 1,
                         [values[name][k] if name in values else None for name in self.fields])
            return
        self.id_uses.add_new(new_ids)
        self.ids.extend(ids)
        self.texts.extend(texts)
        self.source.extend([source] * len(ids))
        self.record.extend(records)
        for name, column in self.fields.items():
            column.extend(values[name] if name in values else [None] * len(ids))
        self.pending_chars += sum(map(len, texts))
        self.report.processed += len(ids)

    def build(self, inputs: list[InputSource]) -> Documents:
        return Documents(
            ids=self.ids,
            texts=self.texts,
            source=np.asarray(self.source, dtype=np.int32),
            record=np.asarray(self.record, dtype=np.int64),
            inputs=inputs,
            start=self.taken,
            fields=self.fields,
        )

    def take(self, inputs: list[InputSource]) -> Documents:
        """The documents added since the last take, as a chunk; the builder lets go of them."""
        chunk = self.build(inputs)
        self.taken += len(chunk)
        self.id_uses.seal()  # the chunk's ids as bytes, off the Python heap
        self.ids, self.texts, self.source, self.record = [], [], [], []
        self.fields = {name: [] for name in self.fields}
        self.pending_chars = 0
        return chunk


def text_codec(encoding: str) -> str:
    # A UTF-8 byte-order mark is not text: "utf-8-sig" drops it where it leads.
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


def as_text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def not_a_string(name: str, value) -> str | None:
    """The skip reason of a record whose text field ``name`` holds ``value`` when only
    strings are read as text (``text_strings``: a units run writes the text back into
    the field, which would turn a number into a string); None for a string."""
    if isinstance(value, (str, bytes)):
        return None
    kind = ("a boolean" if isinstance(value, bool) else "a number"
            if isinstance(value, (int, float)) else "a list" if isinstance(value, list)
            else "an object" if isinstance(value, dict) else f"a {type(value).__name__}")
    return f"field {name!r} holds {kind}, not a string (--unit edits strings only)"


def text_not_strings(names: Sequence[str], values: Sequence) -> str | None:
    """The skip reason of the first text field (``names``, their ``values``) that holds
    no string (:func:`not_a_string`); None when they all do."""
    return next((r for name, value in zip(names, values, strict=True)
                 if (r := not_a_string(name, value)) is not None), None)


def has_surrogates(text: str) -> bool:
    """Whether text holds a lone surrogate, which no UTF-8 output can hold.

    Undecodable bytes survive "surrogateescape" decoding (file names, CSV) as lone
    surrogates; JSON's "\\ud800" escapes and a few codecs (utf-7, unicode_escape)
    make them too.
    """
    if text.isascii():  # O(1): CPython flags ASCII strings
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def printable(text: str) -> str:
    """text, or where it holds lone surrogates a form any output can hold.

    A surrogate-escaped byte (a file name that is not UTF-8, as ``os.fsdecode``
    gives it) becomes ``\\xff``; any other lone surrogate becomes ``\\ud800``.
    """
    if not has_surrogates(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate outside the escaped-byte range
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass
class _ReadContext:
    index: int
    src: InputSource
    builder: _DocumentsBuilder
    report: ReadReport
    codec: str
    not_decodable: str
    text_fields: list[str]
    id_field: str | None
    id_prefix: str
    extra_fields: list[str] = field(default_factory=list)
    max_record_bytes: int | None = None  # a longer record is skipped unread (bounded.py)
    max_stream_bytes: int | None = None  # a stream or file kept whole may hold this many
    text_strings: bool = False  # a text field holding another value is skipped (not_a_string)
    text_optional: bool = False  # a record without any text field: an empty text, kept
    # directories: the walk's options (see neardup.sources.read_documents)
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    progress: bool = False
    respect_ignore: bool = True
    follow_links: bool = False

    def add(self, record: int, doc_id: str, text: str, unit: str, number: int,
            values: Sequence = ()) -> None:
        self.builder.add(self.index, record, doc_id, text, self.src.display, unit, number,
                         values)

    def add_row(self, record: int, doc_id: str, text: str, location: str, number: int,
                values: Sequence = ()) -> None:
        """A table's row (CSV/TSV, Parquet; row ``number``, at ``location``) as a document,
        unless its text or id holds undecodable bytes (lone surrogates) or its text is
        blank: then skipped, with that reason."""
        if has_surrogates(text) or has_surrogates(doc_id):
            self.report._skip(self.src.display, location, self.not_decodable)
            return
        if not text.strip():
            self.report._skip(self.src.display, location, "empty text")
            return
        self.add(record, doc_id, text, "row", number, values)

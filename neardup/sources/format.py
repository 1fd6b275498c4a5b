"""What neardup knows about an input format, in one object: :class:`Format`.

Each format's module (``sources/jsonl.py``, ``sources/parquet.py``, ...) exports its
``Format``; :mod:`neardup.sources.registry` lists them, one line a format, and everything
that depends on the format (guessing it from a path, reading, the dedup copy, ``dedup
--annotate``, the out-of-core plan's record count, the Spark engine's readers, the CLI's
``--format`` choices) looks it up there instead of naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .documents import InputSource, _ReadContext


@dataclass(frozen=True)
class RecordCount:
    """What a format's counter finds before a read: ``records``, an upper bound on the
    documents; ``how``, in words ("lines counted"); for a line format, ``longest``, the
    bytes of the longest line, and ``longest_line``, its 1-based number."""

    records: int
    how: str
    longest: int = 0
    longest_line: int = 0


@dataclass(frozen=True)
class SparkReader:
    """How the Spark engine reads a format on its executors: ``frame``, the Spark reader
    that cuts the file into records ("text": its lines as bytes, "csv": Spark's CSV
    parser, "parquet": its rows), and ``parser``, the ``mapInArrow`` body that sorts them
    as the local reader does, named as ``module:function`` and imported by the Spark
    engine only (pyspark stays optional; sources never import an engine)."""

    frame: str
    parser: str
    copies: bool = False  # a dedup copy is written on the executors, from the same frame


@dataclass(frozen=True)
class Format:
    """One input format.

    ``name``: the value of ``fmt``/``--format``. ``title``: the format in a message
    ("JSON Lines"); ``described``: an input of it ("a JSON Lines file"), with ``shape``,
    why it has no fields to add where it has none ("an array"). ``suffixes``: what
    ``fmt="auto"`` guesses it from (lower case, before a compression suffix); the first
    also names a copy of standard input read as it (``stdin.jsonl``).

    ``read(ctx)``: the reader, a generator over one input's records that yields between
    them (see :func:`neardup.sources.read_document_chunks`). ``copy``: the dedup copy's
    writer, ``copy(src, removed, out, edits=None, text_field="text", annotations=None)``
    -> (records written, records not copied), ``out`` a binary stream (a directory: the
    target folder's path); ``edits`` only where ``edits`` is True, ``annotations`` only
    where ``annotates`` is True.

    ``directory``: an input is a folder whose files are the records. ``fields``: records
    have fields (``text_fields``, ``id_field``, ``extra_fields`` name them).
    ``check_annotations(path, added, shown)``: ValueError before any read where the
    input already has a field of an added name (None: the writer checks as it copies).
    ``self_compressed``: why the format is never read or written through a compression
    suffix (Parquet compresses its own columns), else None. ``delimiter``: the default
    field delimiter (CSV/TSV). ``record_unit``: what a record is called in a message.

    ``count(path)``: a :class:`RecordCount` for a regular, uncompressed file, cheaply,
    or None when it cannot be counted (None here: never counted; the memory plan then
    leaves room for it). ``line_records``: no record is longer than its line, so the
    longest line bounds the documents. ``spark``: how Spark reads it (None: the local
    reader reads it on the driver and hands the documents to Spark).
    ``read_column(src, name)``: one column of every row, whole, as an Arrow array (a
    format that stores columns; embeddings are read this way, :mod:`neardup.sources.vectors`),
    or None: the field is read with each record.

    ``looks_like(lines)``: whether a file's first non-blank lines look like this format
    (the first format in the registry's order that says so is named in the hint of a
    read where every record failed; :mod:`neardup.sources.sniff`). ``hinted``: a read of
    this format where every record failed looks for that hint (its records fail on
    another format's content). ``title``: the format in that hint ("reads as CSV").
    """

    name: str
    title: str
    described: str
    read: Callable[[_ReadContext], Iterator[None]]
    copy: Callable[..., tuple[int, int]]
    suffixes: tuple[str, ...] = ()
    shape: str | None = None
    directory: bool = False
    fields: bool = True
    edits: bool = True
    annotates: bool = False
    check_annotations: Callable[[str, Sequence[str], str], None] | None = None
    self_compressed: str | None = None
    delimiter: str | None = None
    record_unit: str = "record"
    count: Callable[[str], RecordCount | None] | None = None
    line_records: bool = False
    spark: SparkReader | None = None
    looks_like: Callable[[list[str]], bool] | None = None
    hinted: bool = False
    read_column: Callable[[InputSource, str], object] | None = None

    @property
    def copy_suffix(self) -> str:
        """The suffix of a copy of standard input read as this format."""
        return self.suffixes[0] if self.suffixes else ""

    def refusing_fields(self) -> str:
        """The input in a message that says it has no fields: "a JSON file (an array)"."""
        return f"{self.described} ({self.shape})" if self.shape else self.described


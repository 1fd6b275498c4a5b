"""The local engine's runs from inputs: documents read, shingled and found in memory, or
item sets; the records a summary previews and the ranks of a representative field.

:func:`find_documents` is ``neardup find`` without ``--memory-limit`` (see
:mod:`neardup.pipeline.chunked` for the run a chunk at a time) and without an index (see
:mod:`neardup.index.against`). Every function takes the options already split into their
groups (:func:`neardup.options.split_options`, called once by :mod:`neardup.api`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._core import counts as counting
from .._core import remote
from .._core.heap import release_freed_memory
from .._core.prefetch import prefetched
from .._core.progress import StageTimer
from ..config import FindConfig
from ..options import OptionGroups
from ..result import FindResult
from ..shingling import ShingleSets
from ..sources import (
    Documents,
    ReadReport,
    as_text,
    find_format,
    frames,
    itemsets,
    read_document_chunks,
    vectors,
)
from ..sources.options import as_paths
from ..text import prepare
from ..text.batches import ShingleSetsBuilder
from . import find_sets, kernels_for
from .embedded import find_unit, normalised

PREVIEW_CLUSTERS = 100  # the largest clusters whose members of a line file get a preview
PREVIEW_MEMBERS = 6  # per cluster: its first members in input order (and the one kept)
PREVIEW_CHARS = 80
PREVIEW_HEAD = 4 * PREVIEW_CHARS  # what a preview reads of a text (see _shorten)
# Files are read and shingled this many characters of text at a time: the texts of two
# chunks are held (the one shingled, the next one read meanwhile), not the corpus's; about
# 40 MB of Python strings a chunk for ASCII text. Two chunks of 2^25 hold what one of 2^26
# held before the read-ahead, and the wall time is within 5 % of 2^26's (1M documents).
READ_CHUNK_CHARS = 1 << 25


def representative_config(groups: OptionGroups, representative_field: str | None
                          ) -> FindConfig:
    """The run's FindConfig: a representative field means ``representative="field"``
    unless another policy was asked for, and "field" needs a field."""
    similarity = dict(groups.similarity)
    if representative_field is not None:
        similarity.setdefault("representative", "field")
    config = FindConfig(**similarity)  # checked before anything is read
    if config.representative == "field" and representative_field is None:
        raise ValueError("representative='field' needs representative_field")
    return config


def find_documents(inputs, groups: OptionGroups, *, quiet: bool,
                   representative_field: str | None, keep_arrays: bool = False,
                   keep_texts: bool = False):
    """(FindResult, Documents) of ``inputs`` (paths, or data in memory).

    Files are read and shingled a chunk at a time (:func:`read_and_shingle`): the
    Documents returned hold every id, source and record (all the dedup copy needs) and
    no texts unless ``keep_texts`` (the report shows them). Data in memory is shingled
    whole and its texts kept (they are the caller's)."""
    config = representative_config(groups, representative_field)
    if representative_field is not None and config.representative != "field":
        raise ValueError(f"representative_field ranks documents for representative='field', "
                         f"not {config.representative!r}")
    source, prep = groups.source, groups.prepare
    key = None
    extra = [representative_field] if representative_field not in (None, "id") else []
    timer = StageTimer(quiet)
    table = None
    if config.embeddings is not None:
        if frames.is_in_memory(inputs):  # read once: its vector column is taken after
            inputs = table = frames.to_arrow(inputs)
        else:
            field = vectors.read_with_records(config.embeddings, as_paths(inputs), source.fmt)
            extra += [field] if field is not None and field not in extra else []
    text_optional = config.embeddings is not None and config.also_jaccard is None
    if frames.is_in_memory(inputs):
        with texts_needed(config, source.text_fields):
            documents, report, fields = frames.read_frame(
                inputs, text_fields=source.text_fields, id_field=source.id_field,
                extra_fields=extra, text_optional=text_optional)
        if extra:
            key = field_ranks(list(fields[representative_field]), representative_field)
        texts = documents.texts
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        kernels, heads = kernels_for(texts), None
        with timer.stage("shingle", f"{len(texts):,} documents"), kernels_for(texts):
            prepared = prepare.shingle_documents(texts, documents.ids,
                                                 config.shingle_options(), prep, timer)
        sets, generated, counts = prepared.sets, prepared.generated, prepared.counts
        del prepared
    else:
        with texts_needed(config, source.text_fields):
            read = read_and_shingle(as_paths(inputs), groups, config, timer, quiet=quiet,
                                    extra_fields=extra, keep_texts=keep_texts,
                                    text_optional=text_optional)
        documents, report, sets, generated = read.documents, read.report, read.sets, read.generated
        counts, lengths, heads, kernels = read.counts, read.lengths, read.heads, read.kernels
        del read
    if representative_field is not None and key is None:
        key = _field_values(documents, representative_field)
    if key is None:
        key = lengths
    aside = {"generated": generated} if prep.generated == "exclude" else None
    if config.embeddings is not None:
        found, why, shown = vectors.of_documents(
            config.embeddings, documents, report.records_seen, table=table,
            fields=getattr(documents, "fields", None))
        release_freed_memory()  # the column's chunks, combined into the vectors
        unit, why = normalised(found, why, sets.n, timer)
        del found  # the vectors as read: only their unit copy is searched
        release_freed_memory()  # and Arrow's buffers of their column
        with kernels:
            result = find_unit(unit, why, sets.sizes, documents.ids, config, source=shown,
                               timer=timer, sets=sets, representative_key=key,
                               keep_arrays=keep_arrays)
        del unit
    else:
        with kernels:
            result = find_sets(sets, documents.ids, config, timer=timer,
                               representative_key=key, set_aside=aside,
                               keep_arrays=keep_arrays)
    if prep.generated == "flag":
        result.status[generated & (result.status == "ok")] = "ok (generated)"
    result.counts.update(counts)
    result.read_report = report.as_dict()
    # where the documents came from, as the caller named them (summary.json is shared:
    # no absolute path of this machine), so a report of this run can re-read a directory
    result.read_report["inputs"] = [
        {"path": remote.shown(os.fspath(src.given)), "format": src.fmt, "name": src.name,
         "prefixed": len(documents.inputs) > 1}
        for src in documents.inputs]
    result.previews = _line_previews(result, documents,
                                     documents.texts if heads is None else heads)
    return result, documents


@dataclass
class ReadShingled:
    """Files read and shingled a chunk at a time (:func:`read_and_shingle`)."""

    documents: Documents  # every id, source and record; texts only if kept
    report: ReadReport
    sets: ShingleSets
    generated: np.ndarray  # bool[n]
    counts: dict  # shingling's counts, added over the chunks
    lengths: np.ndarray  # int64[n]: characters of each text
    heads: dict[int, str] | None  # line inputs' documents: their first PREVIEW_HEAD characters
    kernels: contextlib.AbstractContextManager  # see kernels_for


@contextlib.contextmanager
def texts_needed(config: FindConfig, text_fields: Sequence[str]):
    """A run on embeddings with ``also_jaccard`` compares texts too: a read that fails
    for want of the text field says that this option needs it. (On embeddings alone
    the text is optional: a record without one is read with an empty text.)"""
    try:
        yield
    except ValueError as err:
        if config.embeddings is None or config.also_jaccard is None or not any(
                repr(name) in str(err) for name in text_fields):
            raise
        option = "--also-jaccard with --either" if config.either else "--also-jaccard"
        raise ValueError(f"{option} compares the records' texts (--text-field "
                         f"{' '.join(text_fields)}) as well as their vectors: "
                         f"{err}") from err


def read_and_shingle(paths, groups: OptionGroups, config: FindConfig, timer: StageTimer, *,
                     quiet: bool, extra_fields: Sequence[str], keep_texts: bool,
                     text_optional: bool = False) -> ReadShingled:
    """Read ``paths`` READ_CHUNK_CHARS characters at a time and shingle each chunk as it
    comes, so that only two chunks' texts are held: the next chunk is read in a thread
    (:func:`~neardup._core.prefetch.prefetched`) while this one is shingled, Arrow's
    parser and the file reads overlapping the kernels. The same sets, ids and report as
    :func:`~neardup.sources.read_documents` then one
    :func:`~neardup.text.prepare.shingle_documents` over every text: each document is
    shingled on its own, on the route its own text takes; counts are added up.

    The texts are kept only if ``keep_texts``; otherwise, of the documents of line
    inputs, the first PREVIEW_HEAD characters (all :func:`_line_previews` reads). The
    kernels are interpreted for a tiny input (:func:`kernels_for`): a first chunk short
    of READ_CHUNK_CHARS is the whole input. ``text_optional``: see
    :func:`~neardup.sources.read_documents`.
    """
    prep = groups.prepare
    chunks, report, sources = read_document_chunks(
        paths, chunk_chars=READ_CHUNK_CHARS, progress=not quiet, extra_fields=extra_fields,
        text_optional=text_optional, **groups.source.given())
    chunk_timer = StageTimer(quiet)  # one "shingle" stage, added over the chunks
    sets = ShingleSetsBuilder()
    ids, texts, source, record, lengths, generated = [], [], [], [], [], []
    fields: dict[str, list] = {name: [] for name in extra_fields}
    heads: dict[int, str] = {}
    counts: dict = {}
    kernels = None
    with contextlib.ExitStack() as stack:
        chunks = stack.enter_context(prefetched(chunks))
        for k, chunk in enumerate(chunks):
            if kernels is None:  # the first chunk
                kernels = kernels_for(chunk.texts)
                stack.enter_context(kernels_for(chunk.texts))
            with chunk_timer.stage("shingle", f"{len(chunk.texts):,} documents (chunk "
                                              f"{k + 1} of the input)",
                                   documents=len(chunk.texts)):
                prepared = prepare.shingle_documents(chunk.texts, chunk.ids,
                                                     config.shingle_options(), prep,
                                                     chunk_timer)
            sets.append(prepared.sets)
            generated.append(prepared.generated)
            add_counts(counts, prepared.counts)
            del prepared
            ids.extend(chunk.ids)
            source.append(chunk.source)
            record.append(chunk.record)
            lengths.append(np.fromiter(map(len, chunk.texts), dtype=np.int64,
                                       count=len(chunk.texts)))
            for name, column in fields.items():
                column.extend(chunk.fields[name])
            if keep_texts:
                texts.extend(chunk.texts)
            else:
                lines = line_inputs(sources)
                for d in np.flatnonzero(np.isin(chunk.source, lines)).tolist():
                    heads[chunk.start + d] = chunk.texts[d][:PREVIEW_HEAD]
            del chunk  # its texts go here
    if kernels is None:  # no document: the counts of shingling nothing
        nothing = prepare.shingle_documents([], [], config.shingle_options(), prep)
        sets.append(nothing.sets)
        counts = nothing.counts
    timer.seconds.update(chunk_timer.seconds)
    timer.compile_seconds += chunk_timer.compile_seconds
    release_freed_memory()  # the texts' and shingling's heap, before the next stages
    if "languages" in counts:  # in route order, as one call over every text has them
        counting.add(counts, languages=dict(sorted(counts["languages"].items())))
    documents = Documents(
        ids=ids, texts=texts if keep_texts else None,
        source=np.concatenate(source) if source else np.empty(0, dtype=np.int32),
        record=np.concatenate(record) if record else np.empty(0, dtype=np.int64),
        inputs=sources, fields=fields)
    return ReadShingled(
        documents, report, sets.build(),
        np.concatenate(generated) if generated else np.zeros(0, dtype=bool), counts,
        np.concatenate(lengths) if lengths else np.empty(0, dtype=np.int64),
        None if keep_texts else heads, kernels or contextlib.nullcontext())


def add_counts(total: dict, counts: dict) -> None:
    """Add a chunk's counts (numbers, or dicts of numbers) into ``total``."""
    for key, value in counts.items():
        if isinstance(value, dict):
            add_counts(total.setdefault(key, {}), value)
        else:
            total[key] = total.get(key, 0) + value


def find_item_sets(inputs, groups: OptionGroups, *, quiet: bool) -> FindResult:
    """Near-duplicate sets among records that already are sets (see
    :mod:`neardup.sources.itemsets`): ``groups.items`` holds ``items=(user_col,
    item_col)`` for a CSV/TSV/Parquet table, or ``items_field`` for JSON Lines."""
    items = groups.items.get("items")
    items_field = groups.items.get("items_field")
    transpose = groups.items.get("transpose", False)
    if (items is None) == (items_field is None):
        raise ValueError("give one of items=(user_col, item_col) or items_field=")
    config = groups.config()
    paths = as_paths(inputs)
    if len(paths) != 1:
        raise ValueError(f"item sets read one file, got {len(paths)}")
    if items is not None:
        if isinstance(items, str):
            items = tuple(items.split(","))
        if len(items) != 2 or not all(items):
            raise ValueError(f"items must be two column names (user, item), got {items!r}")
        sets, ids, report = itemsets.read_item_pairs(paths[0], user_col=items[0],
                                                     item_col=items[1],
                                                     delimiter=groups.source.delimiter,
                                                     transpose=transpose)
    else:
        if transpose:
            raise ValueError("transpose needs items=(user_col, item_col)")
        sets, ids, report = itemsets.read_item_lists(paths[0], items_field=items_field,
                                                     id_field=groups.source.id_field)
    result = find_sets(sets, ids, config, timer=StageTimer(quiet))
    result.read_report = report
    return result


def line_inputs(inputs) -> list[int]:
    """The inputs whose records are bare lines of text (ids: line numbers, no fields)."""
    specs = [find_format(src.fmt) for src in inputs]  # (data in memory has none)
    return [k for k, spec in enumerate(specs)
            if spec is not None and not spec.fields and spec.record_unit == "line"]


def _line_previews(result, documents, texts) -> dict[int, str]:
    """{document: its text shortened to ``PREVIEW_CHARS``} for the documents of line
    inputs (a line file, standard input) that a summary of the largest clusters names:
    in the ``PREVIEW_CLUSTERS`` largest clusters (size descending, then first document),
    the kept one and the first ``PREVIEW_MEMBERS``. A line file's ids are line numbers,
    which say nothing by themselves; the texts are not kept in the result, so these few
    are, at most PREVIEW_CLUSTERS * (PREVIEW_MEMBERS + 1) of them. ``texts``: every
    text, or {document: its first PREVIEW_HEAD characters} of the line inputs' ones."""
    lines = line_inputs(documents.inputs)
    labels = getattr(result, "labels", None)
    if not lines or not isinstance(labels, np.ndarray) or labels.size == 0:
        return {}
    sizes = np.bincount(labels, minlength=labels.size)
    heads = np.flatnonzero(sizes > 1)  # a cluster's label is its first document
    largest = heads[np.lexsort((heads, -sizes[heads]))][:PREVIEW_CLUSTERS]
    members = np.flatnonzero(np.isin(labels, largest))  # ascending: input order
    grouped = members[np.argsort(labels[members], kind="stable")]
    _, first = np.unique(labels[grouped], return_index=True)
    ends = np.r_[first[1:], grouped.size]
    chosen = [grouped[start:min(end, start + PREVIEW_MEMBERS)] for start, end in zip(first, ends)]
    chosen.append(members[result.representative[members]])
    from_lines = np.isin(documents.source, lines)
    previews = {}
    for d in np.unique(np.concatenate(chosen)).tolist():
        if from_lines[d]:
            previews[d] = _shorten(texts[d])
    return previews


def _shorten(text: str) -> str:
    """A line as one short printable line: whitespace runs and control characters one
    space, at most PREVIEW_CHARS characters ("…" where cut)."""
    text = " ".join("".join(c if c.isprintable() else " " for c in text[:4 * PREVIEW_CHARS])
                    .split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"




def _field_values(documents, name: str) -> np.ndarray:
    """The representative key of each document: its id for "id", else the rank of its
    value of field ``name`` (:func:`field_ranks`)."""
    if name == "id":
        return np.asarray(documents.ids)
    values = getattr(documents, "fields", {}).get(name)
    if values is None:
        raise ValueError(f"representative field {name!r} was not read")
    return field_ranks(values, name)


_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def field_ranks(values: Sequence, name: str = "field") -> np.ndarray:
    """int64 ranks of ``values`` (equal values, equal ranks), smallest first: the
    representative of a cluster is its document with the smallest value.

    Numbers compare as numbers when every present value is one (a JSON or Parquet
    number, or a text that reads as a decimal number, as CSV cells do: "9" < "10");
    otherwise every value compares as text (numbers by their decimal form, lists and
    objects as JSON). A missing value (None, an empty text, NaN) ranks last. No value
    present at all is a ValueError (most likely a misspelt field).
    """
    present = []
    numeric = True
    for value in values:
        if isinstance(value, np.generic):
            value = value.item()
        if value is None or (isinstance(value, float) and value != value):
            present.append(None)
            continue
        if isinstance(value, str):
            if not value.strip():
                present.append(None)
                continue
            if numeric and not _DECIMAL.fullmatch(value.strip()):
                numeric = False
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            numeric = False
        present.append(value)
    if present and all(v is None for v in present):
        raise ValueError(f"representative field {name!r}: no document has a value "
                         f"(misspelt?)")
    if numeric:
        keys = [None if v is None else _number(v) for v in present]
    else:
        keys = [None if v is None else as_text(v) for v in present]
    distinct = sorted({k for k in keys if k is not None})
    rank = {k: r for r, k in enumerate(distinct)}
    missing = len(distinct)
    return np.fromiter((missing if k is None else rank[k] for k in keys), dtype=np.int64,
                       count=len(keys))


def _number(value) -> int | float:
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)



"""Units on files: read the inputs, find the repeated units, write the copy without them
(:func:`dedup_units`) or list them (:func:`repeats_of`, :func:`repeats_table`).

The copy is the input's format with the units removed in place
(:func:`neardup.sources.copies.write_deduplicated` with ``edits``); a document that units were
removed from and that is left with fewer than ``min_chars`` characters is removed
whole (a document nothing was removed from stays as it was, however short). Every
record read is accounted for: ``records_seen`` = ``documents_kept`` +
``documents_dropped`` (min_chars) + ``skipped`` + ``failed``.

Under a memory limit (:func:`analysed` with ``memory_limit``) the units are found with
sorted runs on disk (:mod:`neardup.units.sorted_runs`) and the copy is the same.
"""

from __future__ import annotations

import json
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._core import counts as counting
from .._core.jit import njit
from ..sources import read_documents
from ..sources.copies import write_deduplicated
from . import UnitAnalysis, UnitOptions, characters_left, find_repeated_units, remaining_texts
from .hashing import gather

REPEAT_COLUMNS = ("text", "count", "documents", "first_id", "first_offset", "bytes")
DEFAULT_MAX_CHARS = 200
FIND_STAGE = "read and find"  # one stage: under a memory limit the two interleave
SPARED_KEY = b"neardup.spared"  # the listing's metadata: the repeats the minimum kept
SPARED_SHOWN = 5


@dataclass
class UnitResult:
    """What a units run did: ``counts`` (see :func:`dedup_units`), the read report, and
    the repeated units (:func:`repeats_of`) as a table."""

    counts: dict
    read_report: dict
    repeats: pa.Table | None = None
    seconds: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """Counts, options and the read report, as a results folder's summary.json holds
        them (see :func:`neardup.sinks.write_summary`)."""
        config = {f.name: self.counts[f.name] for f in fields(UnitOptions)
                  if f.name in self.counts}
        return {"counts": self.counts, "config": config, "read": self.read_report}

    def describe(self) -> str:
        """What the run read, found and wrote, in sentences (what ``neardup dedup --unit``
        and ``neardup repeats`` print)."""
        c = self.counts
        lines = [describe_read(self.read_report)]
        name = unit_name(c["unit"], c.get("min_tokens"))
        # repeats removes nothing: its counts are what dedup --unit would remove
        removed = "removed" if "dedup" in c else "a dedup would remove"
        if "units" in c:
            repeated = (f" ({c['units_distinct']:,} distinct texts, {c['units_repeated']:,} "
                        f"of them repeated)" if "units_repeated" in c else "")
            lines.append(f"{name}: {c['units']:,} seen{repeated}; {c['units_removed']:,} "
                         f"{removed} (keep {c['keep']}), {c['units_kept']:,} kept")
        if "tokens" in c:
            lines.append(f"tokens: {c['tokens']:,} seen, {c.get('tokens_removed', 0):,} "
                         f"{removed}, in {c['spans_repeated']:,} repeated spans")
        if "bytes_removed" in c:
            lines.append(f"bytes: {c['bytes_removed']:,} {removed}, from "
                         f"{c['documents_changed']:,} documents")
        if "documents_kept" in c:
            lines.append(f"documents: {c['documents_kept']:,} kept, "
                         f"{c['documents_dropped']:,} dropped (left with fewer than "
                         f"{c['min_chars']:,} character{'s' * (c['min_chars'] != 1)} once "
                         f"their repeated units were removed)")
        if c.get("units_short_spared") and "dedup" in c:  # repeats: describe_spared's line
            lines.append(f"{c['units_short_spared']:,} repeated units kept as shorter than "
                         f"the minimum ({minimum_words(c['min_unit_chars'], c['min_unit_words'])}"
                         f"; {c['units_short_repeated']:,} distinct texts)")
        if "dedup" in c:
            copied = c["records_seen"] - c["documents"]
            lines.append(f"dedup: {c['dedup']['written']:,} records written "
                         f"({c['documents_kept']:,} documents and {copied:,} skipped or "
                         f"failed records copied unchanged)")
        if self.seconds:
            lines.append("time: " + ", ".join(f"{stage} {s:.2f} s"
                                              for stage, s in self.seconds.items()))
        return "\n".join(lines)


def describe_read(read: dict) -> str:
    """The read report in a sentence: records read, documents, skipped and failed by
    reason."""
    line = f"read {read['records_seen']:,} records: {read['processed']:,} documents"
    for what in ("skipped", "failed"):
        reasons = read.get(what) or {}
        if reasons:
            line += (f"; {sum(reasons.values()):,} {what} ("
                     + ", ".join(f"{n:,} {reason}" for reason, n in reasons.items()) + ")")
    return line


def unit_name(unit: str, min_tokens: int | None = None) -> str:
    """What a unit's counts count, in words: "lines", "windows of 3 sentences", ..."""
    kind, _, number = unit.partition(":")
    if kind == "sentences":
        return f"windows of {number} sentence{'s' * (number != '1')}"
    if kind == "span":
        return f"windows of {min_tokens} tokens"
    return f"{kind}s"


@contextmanager
def analysed(inputs, groups, options: UnitOptions, *, quiet: bool = True,
             memory_limit: int | None = None, work_dir=None, chunk_chars: int | None = None,
             hash_pieces=None, text_strings: bool = False):
    """(documents, read report, analysis, spilled) of the inputs under the run's
    normalization, for the ``with`` block: in memory, or with ``memory_limit`` (bytes)
    in chunks with sorted runs in a work directory under ``work_dir``, removed when the
    block ends (:mod:`neardup.units.sorted_runs`; ``spilled`` is None in memory).
    ``chunk_chars`` and ``hash_pieces``: the bounded run's chunk size and hash, for
    tests (the chunk size is otherwise the limit's). ``text_strings``: a text field that
    holds no string is skipped (a copy writes the text back into the field)."""
    prep = groups.prepare
    check_unit_groups(groups)
    if memory_limit is None and chunk_chars is None:
        documents, report = read_documents(inputs, progress=not quiet,
                                           text_strings=text_strings,
                                           **groups.source.given())
        yield documents, report, find_repeated_units(documents.texts, options,
                                                     prep.normalize), None
        return
    from ..pipeline.outofcore import WorkDirectory
    from . import sorted_runs

    reading: dict = {"text_strings": text_strings}
    if memory_limit is not None:
        chunking = sorted_runs.chunking_for(memory_limit, options.kind)
        chunk_chars = chunk_chars or chunking.chunk_chars
        reading.update(chunking.reading())
        _warn_of_long_records(inputs, groups.source.given().get("fmt", "auto"), chunking)
    with WorkDirectory(work_dir) as directory:
        extra = {} if hash_pieces is None else {"hash_pieces": hash_pieces}
        yield sorted_runs.find_repeated_units_bounded(
            inputs, {**groups.source.given(), **reading}, options, prep.normalize,
            directory, chunk_chars=chunk_chars, progress=not quiet, **extra)


def _warn_of_long_records(inputs, fmt: str, chunking) -> None:
    """A warning before reading when the longest line of the inputs' line files, counted
    first (as ``find --memory-limit`` counts them), is longer than a chunk can take."""
    from ..pipeline.outofcore import survey_inputs
    from ..sources import as_paths

    survey = survey_inputs(as_paths(inputs), fmt)
    if (message := chunking.skip_warning(survey.longest, survey.where)) is not None:
        warnings.warn(message, stacklevel=4)


def check_unit_groups(groups, *, copy: bool = False) -> None:
    """ValueError, naming the option, for option groups a units run cannot take (both
    engines); ``copy``: the run writes the text back (dedup)."""
    if groups.prepare.code is not None:
        raise ValueError("--unit applies to prose: --code tokenizes source code, which has "
                         "no lines-as-units normalization here; drop --code")
    if groups.items:
        raise ValueError("--unit needs texts; item sets have no units")
    if copy and len(groups.source.text_fields) != 1:
        raise ValueError("--unit writes the text back into its field: give one "
                         "--text-field, not several joined")


def dedup_units(inputs, out, groups, options: UnitOptions, *, quiet: bool = True,
                memory_limit: int | None = None, work_dir=None, **bounded) -> UnitResult:
    """Write ``inputs`` to ``out`` without their repeated units; see the module docstring.
    ``memory_limit``, ``work_dir`` (and a test's ``bounded`` options): see
    :func:`analysed`; the same copy."""
    check_unit_groups(groups, copy=True)
    started = time.perf_counter()
    with analysed(inputs, groups, options, quiet=quiet, memory_limit=memory_limit,
                  work_dir=work_dir, text_strings=True, **bounded
                  ) as (documents, report, analysis, spilled):
        found = time.perf_counter()
        if spilled is None:
            texts = remaining_texts(analysis)
            touched = analysis.removals.bytes_per_document > 0
            keep = ~touched | (characters_left(texts) >= options.min_chars)
            changed = np.flatnonzero(keep & touched)
            edits = dict(zip(changed.tolist(), texts.take(pa.array(changed)).to_pylist(),
                             strict=True))
        else:
            from .sorted_runs import EditedTexts, kept_documents

            keep = kept_documents(analysis, spilled, options.min_chars)
            edits = EditedTexts(analysis, spilled, keep)
        written = write_deduplicated(documents, keep, inputs, out, edits=edits,
                                     text_field=groups.source.text_fields[0])
    counts = _counts(options, report, analysis, keep)
    counting.add(counts, dedup=written)
    return UnitResult(counts, report.as_dict(), seconds={
        FIND_STAGE: found - started, "write": time.perf_counter() - found})


def repeats_run(inputs, groups, options: UnitOptions, *, top: int | None = None,
                max_chars: int = DEFAULT_MAX_CHARS, quiet: bool = True,
                memory_limit: int | None = None, work_dir=None) -> UnitResult:
    """``neardup repeats`` on the local engine: the repeated units of ``inputs`` in
    ``repeats`` (:func:`repeats_of`, ``top`` and ``max_chars`` as there), with the
    counts of the units found (``units_removed``: what ``dedup --unit`` with the same
    ``keep`` would remove) and of the records read; ``memory_limit``, ``work_dir``: see
    :func:`analysed`."""
    started = time.perf_counter()
    with analysed(inputs, groups, options, quiet=quiet, memory_limit=memory_limit,
                  work_dir=work_dir) as (documents, report, analysis, _):
        found = time.perf_counter()
        table = repeats_of(analysis, documents.ids, top=top, max_chars=max_chars)
        if analysis.short_repeats is not None:  # what the minimum kept, in the metadata
            table = with_spared(table, options, repeats_of(
                analysis, documents.ids, top=SPARED_SHOWN, max_chars=max_chars, short=True),
                analysis.counts["units_short_repeated"])
        counts = repeats_counts(options, report.as_dict(), analysis.counts)
    return UnitResult(counts, report.as_dict(), table, seconds={
        FIND_STAGE: found - started, "list": time.perf_counter() - found})


def _counts(options: UnitOptions, report, analysis: UnitAnalysis, keep: np.ndarray) -> dict:
    return run_counts(options, report.as_dict(), analysis.counts, int(keep.sum()),
                      int(keep.size))


def run_counts(options: UnitOptions, report: dict, unit_counts: dict, documents_kept: int,
               documents: int) -> dict:
    """A units run's counts (the local and the Spark engine's):
    :func:`neardup._core.counts.unit_run_counts` with the run's options."""
    minimum = ({"min_tokens": options.min_tokens} if options.kind == "span" else
               dict(zip(("min_unit_chars", "min_unit_words"), options.minimum, strict=True)))
    return counting.unit_run_counts(
        {"unit": options.unit, "keep": options.keep, "min_chars": options.min_chars,
         **minimum}, report, unit_counts, documents_kept=documents_kept, documents=documents)


def repeats_counts(options: UnitOptions, report: dict, unit_counts: dict) -> dict:
    """A repeats run's counts: as :func:`run_counts`' without a copy's (no documents
    kept or dropped, no ``min_chars``)."""
    counts = run_counts(options, report, unit_counts, report["processed"],
                        report["processed"])
    for key in ("min_chars", "documents_kept", "documents_dropped"):
        del counts[key]
    return counts


def repeats_of(analysis: UnitAnalysis, ids, *, top: int | None = None,
               max_chars: int = DEFAULT_MAX_CHARS, short: bool = False) -> pa.Table:
    """The repeated units, most repeated first (ties: first occurrence first): ``text``
    (its first occurrence's original text, at most ``max_chars`` characters), ``count``
    (occurrences), ``documents`` (distinct documents holding it), ``first_id`` and
    ``first_offset`` (the character where it starts in that document's text),
    ``bytes`` (its UTF-8 length). ``short``: those under the minimum instead (kept,
    not listed by default)."""
    r = analysis.short_repeats if short else analysis.repeats
    order = np.lexsort((np.arange(r.count.size), -r.count))
    if top is not None:
        order = order[:top]
    doc = r.doc[order]
    ids = np.asarray(ids, dtype=object)
    return repeats_table(analysis.data, analysis.doc_offsets, doc, r.start[order],
                         r.end[order], r.count[order], r.documents[order],
                         ids[doc].tolist() if doc.size else [], max_chars)


def repeats_table(data, doc_offsets, doc, start, end, count, documents, first_ids,
                  max_chars: int) -> pa.Table:
    """The rows of :func:`repeats_of`'s table, in the order given: repeated text i lies at
    bytes [start[i], end[i]) of document ``doc[i]`` of the UTF-8 buffer (``data``,
    ``doc_offsets``), occurs ``count[i]`` times in ``documents[i]`` documents; its
    document's id is ``first_ids[i]`` (the engines call this one function)."""
    base = doc_offsets[doc]
    values, offsets = gather(data, base + start, base + end, np.empty(0, np.uint8))
    text = pa.LargeStringArray.from_buffers(len(doc), pa.py_buffer(offsets),
                                            pa.py_buffer(values))
    text = pc.utf8_slice_codeunits(text, 0, max_chars).cast(pa.string())
    first_offset = _char_offsets(data, base, base + start)
    return pa.table({"text": text, "count": np.asarray(count, np.int64),
                     "documents": np.asarray(documents, np.int64),
                     "first_id": pa.array(list(first_ids), pa.string()),
                     "first_offset": first_offset, "bytes": np.asarray(end - start, np.int64)})


def minimum_words(chars: int, words: int) -> str:
    """The minimum in words: "3 words", "20 characters", "3 words and 20 characters"."""
    parts = [f"{words} word{'s' if words != 1 else ''}"] if words else []
    parts += [f"{chars} character{'s' if chars != 1 else ''}"] if chars else []
    return " and ".join(parts) or "none"


def with_spared(table: pa.Table, options: UnitOptions, spared: pa.Table, repeated: int
                ) -> pa.Table:
    """The listing ``table`` with what the minimum kept in its schema metadata (key
    :data:`SPARED_KEY`, JSON; :func:`spared_of` reads it): the minimum, ``repeated``
    (the short texts seen more than once), and the :data:`SPARED_SHOWN` most frequent of
    them (``spared``: rows of :func:`repeats_of` with ``short=True``, most frequent
    first)."""
    chars, words = options.minimum
    rows = spared.slice(0, SPARED_SHOWN).select(["text", "count", "documents"]).to_pylist()
    found = {"min_unit_chars": chars, "min_unit_words": words, "repeated": int(repeated),
             "most_frequent": rows}
    return table.replace_schema_metadata({**(table.schema.metadata or {}),
                                          SPARED_KEY: json.dumps(found).encode()})


def spared_of(table: pa.Table) -> dict | None:
    """What :func:`with_spared` put in the listing's metadata, or None."""
    raw = (table.schema.metadata or {}).get(SPARED_KEY)
    return None if raw is None else json.loads(raw)


def describe_spared(table: pa.Table, unit: str) -> str | None:
    """A sentence for the repeated units the minimum kept, None when there are none."""
    spared = spared_of(table)
    if not spared or not spared["repeated"]:
        return None
    shown = ", ".join(f"{json.dumps(row['text'].strip(), ensure_ascii=False)} "
                      f"({row['count']:,})"
                      for row in spared["most_frequent"])
    minimum = minimum_words(spared["min_unit_chars"], spared["min_unit_words"])
    return (f"{spared['repeated']:,} repeated {unit} units shorter than the minimum "
            f"({minimum}) were kept and are not listed; the most frequent: {shown} "
            f"(--min-unit-words 0 --min-unit-chars 0 lists them)")


@njit(cache=True)
def _char_offsets(data, doc_start, at):
    """Characters (UTF-8 lead bytes) between each document's start and a byte in it."""
    out = np.zeros(at.size, np.int64)
    for i in range(at.size):
        for p in range(doc_start[i], at[i]):
            out[i] += (data[p] & 0xC0) != 0x80
    return out

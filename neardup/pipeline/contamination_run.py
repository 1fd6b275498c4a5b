"""``neardup contamination`` on the local engine: the training corpus streamed once, a
batch of documents at a time (a chunk sized for ``memory_limit`` when one is given),
each batch matched against the evaluation sets held in memory
(:func:`neardup.pipeline.contamination.match_documents`); then the report, the matches,
and the clean copy (``clean``: without the matching documents, the dedup copy's
machinery; ``clean_spans``: the matching spans cut out of them, the ``--unit span``
copy's byte ranges).

Span removal: each window of a matching field found in a matching document is cut from
[its first word's first byte, its last word's last byte); overlapping or touching windows
merge. The words are placed in the document's bytes by their ``\\w+`` runs in the
original text; a document where those runs, cleaned, are not the words it was matched on
(a cleaning that changes words, such as NFKC of a ligature) is removed whole instead,
and counted so.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .._core import counts as counting
from ..shingling import WORD_PATTERN, fold_light, normalize_light, word_tokens
from ..sources import frames, read_document_chunks, read_documents, write_deduplicated
from ..sources.documents import Documents
from ..units.ranges import RemovalRanges
from .contamination import (
    EvalSets,
    Matches,
    benchmark_report,
    match_documents,
    matches_table,
    sorted_matches,
)

BATCH_DOCUMENTS = 10_000  # in memory: documents matched at a time (temporaries bounded)
BYTES_PER_CHAR = 48  # --memory-limit: the chunk's text, words and windows, per character
MIN_CHUNK_CHARS = 1 << 16


@dataclass
class ContaminationResult:
    """What a contamination run found: ``report`` (benchmark -> its figures), ``matches``
    (one row per matching (item, training document): benchmark, item_id, training_id,
    rule, overlap, ngram), ``counts`` of the training records
    (:data:`neardup._core.counts.CONTAMINATION_COUNTS`), the training read report and the
    seconds per stage."""

    report: dict
    matches: pa.Table
    counts: dict
    read_report: dict
    seconds: dict = field(default_factory=dict)
    eval_reports: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """The report file's JSON: per benchmark, then the training counts and read."""
        return {"benchmarks": self.report, "training": self.counts,
                "read": self.read_report, "eval_read": self.eval_reports}

    def describe(self) -> str:
        """The printed table: a row per benchmark, then the training counts."""
        rows = [("benchmark", "items", "contaminated", "share", "training docs")]
        for name, r in self.report.items():
            rows.append((name, f"{r['items']:,}", f"{r['contaminated_items']:,}",
                         f"{100 * r['share']:.2f} %", f"{r['training_documents']:,}"))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                           for i, (cell, w) in enumerate(zip(row, widths)))
                 for row in rows]
        any_report = next(iter(self.report.values()), None)
        if any_report is not None:
            rule = any_report["rule"]
            detail = (f"{any_report['ngram']}-grams" + (
                f", containment >= {any_report['containment']}"
                if rule == "containment" else "") + (
                f", needs {' and '.join(any_report['require'])}"
                if any_report["require"] else ""))
            lines.append(f"rule: {rule} ({detail})")
        c = self.counts
        lines.append(f"training: {c['records_seen']:,} records read: {c['documents']:,} "
                     f"documents, {c['skipped']:,} skipped, {c['failed']:,} failed; "
                     f"documents holding an evaluation item: {c['documents_matched']:,}")
        if "clean" in c:
            cut = (f"; documents cut: {c['documents_changed']:,} ({c['bytes_removed']:,} "
                   f"bytes)" if "documents_changed" in c else "")
            lines.append(f"clean copy: {c['clean']['written']:,} records written; documents "
                         f"removed: {c['documents_removed']:,}{cut}")
        return "\n".join(lines)


def contamination_local(inputs, evals: EvalSets, source: dict, *, quiet: bool = True,
                        memory_limit: int | None = None, clean=None,
                        clean_spans: bool = False) -> ContaminationResult:
    """The run on the local engine (module docstring); ``source``: the source options
    as given (:meth:`neardup.sources.SourceOptions.given`)."""
    started = time.perf_counter()
    parts, item_parts, doc_parts = [], [], []
    edits: dict[int, str] = {}
    bytes_cut: dict[int, int] = {}
    whole: list[np.ndarray] = []
    records, sources_of, lengths = [], [], []
    n_docs = 0
    chunks, report, inputs_read = _chunks(inputs, source, quiet, memory_limit)
    for chunk in chunks:
        for lo in range(0, len(chunk), BATCH_DOCUMENTS):
            texts = chunk.texts[lo:lo + BATCH_DOCUMENTS]
            matches = match_documents(texts, evals)
            ids = chunk.ids[lo:lo + BATCH_DOCUMENTS]
            if matches.doc.size:
                parts.append(matches_table(evals, matches, ids))
                doc_parts.append(matches.doc + n_docs)
                item_parts.append(matches.item)
                if clean_spans:
                    cut, removed, cut_bytes = spans_cut(texts, matches, evals)
                    edits.update({n_docs + d: t for d, t in cut.items()})
                    bytes_cut.update({n_docs + d: b for d, b in cut_bytes.items()})
                    whole.append(removed + n_docs)
            n_docs += len(texts)
        records.append(np.asarray(chunk.record))
        sources_of.append(np.asarray(chunk.source))
        lengths.append(len(chunk))
    matched_at = time.perf_counter()
    doc = np.concatenate(doc_parts) if doc_parts else np.empty(0, np.int64)
    item = np.concatenate(item_parts) if item_parts else np.empty(0, np.int64)
    table = (pa.concat_tables(parts) if parts else
             matches_table(evals, _no_matches(), []))
    matches = sorted_matches(table, evals, doc)
    read = report.as_dict()
    counts = counting.contamination_counts(read, documents=n_docs,
                                           matched=int(np.unique(doc).size))
    if clean is not None:
        documents = Documents(ids=_Numbered(n_docs), texts=None,
                              source=np.concatenate(sources_of) if sources_of else
                              np.empty(0, np.int32),
                              record=np.concatenate(records) if records else
                              np.empty(0, np.int64), inputs=inputs_read)
        keep = np.ones(n_docs, dtype=bool)
        if clean_spans:
            removed = np.concatenate(whole) if whole else np.empty(0, np.int64)
            keep[removed] = False
            changed = {d: t for d, t in edits.items() if keep[d]}
            written = write_deduplicated(documents, keep, [s.given for s in inputs_read],
                                         clean, edits=changed,
                                         text_field=source.get("text_fields", ("text",))[0])
            counting.add_contamination_counts(
                counts, documents_removed=int((~keep).sum()), documents_changed=len(changed),
                bytes_removed=sum(bytes_cut[d] for d in changed), clean=written)
        else:
            keep[doc] = False
            written = write_deduplicated(documents, keep, [s.given for s in inputs_read],
                                         clean)
            counting.add_contamination_counts(counts, documents_removed=int((~keep).sum()),
                                              clean=written)
    return ContaminationResult(
        benchmark_report(evals, item, doc), matches, counts, read,
        {"read and match": matched_at - started, "write": time.perf_counter() - matched_at},
        {s.name: s.read_report for s in evals.sets})


class _Numbered(Sequence):
    """The clean copy's documents by number: the copy needs their count, not their ids."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return str(range(self.n)[i])


def _no_matches() -> Matches:
    from ..overlap import Hits

    empty = np.empty(0, np.int64)
    return Matches(empty, empty, np.empty(0), empty, empty, Hits(*([empty] * 8)),
                   np.empty(0, dtype=bool))


def _chunks(inputs, source: dict, quiet: bool, memory_limit: int | None):
    """(iterator of Documents, read report, inputs read): the training corpus whole, or
    in chunks sized for ``memory_limit``."""
    if frames.is_in_memory(inputs):
        documents, report, _ = frames.read_frame(
            inputs, text_fields=source.get("text_fields", ("text",)),
            id_field=source.get("id_field"))
        return iter([documents]), report, []
    if memory_limit is None:
        documents, report = read_documents(inputs, progress=not quiet, **source)
        return iter([documents]), report, documents.inputs
    chunk_chars = max(memory_limit // BYTES_PER_CHAR, MIN_CHUNK_CHARS)
    # a record longer than a chunk is read whole, a chunk of its own: never skipped
    chunks, report, read_inputs = read_document_chunks(
        inputs, chunk_chars=chunk_chars, progress=not quiet, **source)
    return chunks, report, read_inputs


def memory_floor() -> int:
    """The smallest ``memory_limit`` a run takes: one chunk of the smallest size."""
    return MIN_CHUNK_CHARS * BYTES_PER_CHAR


def spans_cut(texts: Sequence[str], matches: Matches, evals: EvalSets
              ) -> tuple[dict[int, str], np.ndarray, dict[int, int]]:
    """({document: its text with the matching windows cut}, documents to remove whole,
    {document: bytes cut}) of one batch (module docstring)."""
    hits = matches.hits
    kept = matches.window_kept
    w_doc, w_start, w_len = hits.window_doc[kept], hits.window_start[kept], \
        hits.window_length[kept]
    order = np.lexsort((w_start, w_doc))
    w_doc, w_start, w_len = w_doc[order], w_start[order], w_len[order]
    docs, first = np.unique(w_doc, return_index=True)
    bounds = np.append(first, w_doc.size)
    cut, whole, cut_bytes = {}, [], {}
    for k, d in enumerate(docs.tolist()):
        text = texts[d]
        placed = word_bytes(text, evals.settings.normalize)
        if placed is None:
            whole.append(d)
            continue
        starts_b, ends_b = placed
        lo, hi = bounds[k], bounds[k + 1]
        s = starts_b[w_start[lo:hi]]
        e = ends_b[w_start[lo:hi] + w_len[lo:hi] - 1]
        ranges = RemovalRanges.from_units(1, np.zeros(s.size, np.int64), s, e)
        data = text.encode("utf-8", "surrogatepass")
        pieces, at = [], 0
        for a, b in zip(ranges.starts.tolist(), ranges.ends.tolist()):
            pieces.append(data[at:a])
            at = b
        pieces.append(data[at:])
        cut[d] = b"".join(pieces).decode("utf-8", "surrogatepass")
        cut_bytes[d] = int((ranges.ends - ranges.starts).sum())
    return cut, np.asarray(whole, dtype=np.int64), cut_bytes


def word_bytes(text: str, normalize) -> tuple[np.ndarray, np.ndarray] | None:
    """(start, end) UTF-8 byte offsets of each word of ``text`` as the run's cleaning
    reads it, or None where its ``\\w+`` runs, cleaned one by one, are not those words."""
    runs = list(WORD_PATTERN.finditer(text))
    expected = word_tokens(normalize(text) if normalize is not None else text)
    if text.isascii():
        cleaned = [m.group().lower() for m in runs] if normalize is not None else \
            [m.group() for m in runs]
        if normalize not in (None, normalize_light, fold_light):
            cleaned = [t for m in runs for t in word_tokens(normalize(m.group()))]
    else:
        cleaned = [t for m in runs for t in word_tokens(
            normalize(m.group()) if normalize is not None else m.group())]
    if len(cleaned) != len(runs) or cleaned != expected:
        return None
    widths = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    widths = 1 + (widths >= 0x80) + (widths >= 0x800) + (widths >= 0x10000)
    at = np.zeros(widths.size + 1, np.int64)
    np.cumsum(widths, out=at[1:])
    starts = at[np.fromiter((m.start() for m in runs), np.int64, len(runs))]
    ends = at[np.fromiter((m.end() for m in runs), np.int64, len(runs))]
    return starts, ends

"""``find`` under a memory limit: read, shingle and sign a chunk of documents at a time,
spill sets, signatures and band keys to files, then find on the mapped files.

The stages are the in-memory run's (:mod:`neardup.pipeline.run`); only where their
arrays live differs (:mod:`neardup.pipeline.outofcore` holds the files, the chunk plan
and what a limit can hold), so the pairs, clusters and representatives are the same.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from .._core import columns, remote
from .._core import counts as counting
from .._core.heap import release_freed_memory
from .._core.progress import StageTimer, say
from ..options import OptionGroups
from ..result import FindResult
from ..shingling import set_fingerprints
from ..sources import Documents, StreamTooLarge, read_document_chunks
from ..sources.options import as_paths
from ..text import prepare
from . import find_sets, outofcore, sign
from .run import add_counts, representative_config


def find_chunked(inputs, groups: OptionGroups, *, quiet: bool,
                 representative_field: str | None, limit: int, work_dir) -> FindResult:
    """:func:`~neardup.pipeline.run.find_documents` a chunk at a time under ``limit``
    bytes; the same pairs, clusters and representatives. What a memory limit cannot run
    (:mod:`neardup.pipeline.refusals`) was refused at the door."""
    return find_chunked_documents(inputs, groups, quiet=quiet,
                                  representative_field=representative_field, limit=limit,
                                  work_dir=work_dir)[0]


def find_chunked_documents(inputs, groups: OptionGroups, *, quiet: bool,
                           representative_field: str | None, limit: int, work_dir
                           ) -> tuple[FindResult, Documents]:
    """(FindResult, Documents) as :func:`~neardup.pipeline.run.find_documents` returns
    them for files, under ``limit`` bytes: the Documents hold what the dedup copy needs
    (:func:`~neardup.sources.copies.write_deduplicated`), each document's id, input and record,
    mapped from the spilled files (no heap), and no texts. A run on embeddings keeps its
    vectors in files instead (:mod:`neardup.pipeline.embedded_chunked`)."""
    if groups.similarity.get("embeddings") is not None:
        from .embedded_chunked import find_chunked_vectors

        return find_chunked_vectors(inputs, groups, quiet=quiet,
                                    representative_field=representative_field, limit=limit,
                                    work_dir=work_dir)
    config = representative_config(groups, representative_field)
    prep, source_options = groups.prepare, groups.source.given()
    plan = config.band_plan()
    chunking = outofcore.ChunkPlan.for_run(limit, config, as_paths(inputs), source_options)
    if (skipping := chunking.skip_warning()) is not None:
        warnings.warn(skipping, stacklevel=3)
    chunks, report, sources = read_document_chunks(
        as_paths(inputs), chunk_chars=chunking.chunk_chars, chunk_docs=chunking.chunk_docs,
        max_record_bytes=chunking.record_bytes, max_stream_bytes=chunking.stream_bytes,
        progress=not quiet, **source_options)
    timer = StageTimer(quiet)
    chunk_timer = StageTimer(quiet=True)  # per-chunk stages add up without a line each
    count = chunks_read = 0
    lengths, generated, counts = [], [], {}
    with outofcore.WorkDirectory(work_dir) as directory:
        writer = outofcore.SpillWriter(directory, plan.bands, plan.rows)
        while True:
            with chunk_timer.stage("read"):
                try:
                    chunk = next(chunks, None)
                except StreamTooLarge as err:  # an input kept whole outgrew the limit
                    raise outofcore.MemoryLimitError(str(err)) from None
            if chunk is None:
                break
            chunking.admit(chunk)  # a document or a count the limit cannot hold ends the run
            with chunk_timer.stage("shingle"):
                prepared = prepare.shingle_documents(chunk.texts, chunk.ids,
                                                     config.shingle_options(), prep)
            with chunk_timer.stage("minhash"):
                signatures = sign(prepared.sets, config)
                prints = set_fingerprints(prepared.sets, config.seed)
            with chunk_timer.stage("spill"):  # band keys, then appended to the files
                writer.append(prepared.sets, signatures, prints)
            writer.append_ids(chunk.ids)  # spilled: the ids' bytes are mapped, not held
            writer.append_records(chunk.source, chunk.record)
            count += len(chunk)
            if config.representative in ("longest", "shortest"):  # the key: text lengths
                lengths.append(np.fromiter(map(len, chunk.texts), dtype=np.int64,
                                           count=len(chunk.texts)))
            chunks_read += 1
            generated.append(prepared.generated)
            add_counts(counts, prepared.counts)
            if not quiet:
                say(f"[neardup] chunk of {len(chunk):,} documents read, shingled and "
                    f"signed ({count:,} so far)")
            del chunk, prepared, signatures, prints  # the texts go here
        spilled = writer.finish()
        release_freed_memory()  # the chunks' texts and temporaries, before the find
        timer.seconds.update(chunk_timer.seconds)
        ids = spilled.ids if spilled.ids is not None else columns.IdColumn(columns.strings([]))
        key = np.concatenate(lengths) if lengths else None  # None: no policy ranks by it
        if representative_field == "id":
            key = np.asarray(ids.to_list())
        generated = np.concatenate(generated) if generated else np.empty(0, dtype=bool)
        aside = {"generated": generated} if prep.generated == "exclude" else None
        result = find_sets(spilled.sets, ids, config, timer=timer, representative_key=key,
                           set_aside=aside, spilled=spilled)
        # mapped: their pages outlive the folder's removal, until the copy lets them go
        documents = Documents(ids=ids, texts=None, source=spilled.source,
                              record=spilled.record, inputs=sources)
        del spilled
    if prep.generated == "flag":
        result.status[generated & (result.status == "ok")] = "ok (generated)"
    result.counts.update(counts)
    counting.add(result.counts, chunks={**chunking.as_dict(), "chunks_read": chunks_read})
    result.read_report = report.as_dict()
    result.read_report["inputs"] = [
        {"path": remote.shown(os.fspath(src.given)), "format": src.fmt, "name": src.name,
         "prefixed": len(sources) > 1}  # as the caller named them: no absolute path
        for src in sources]
    return result, documents


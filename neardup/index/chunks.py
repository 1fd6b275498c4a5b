"""Reading an index's inputs a chunk at a time, with or without a memory limit.

``index build`` and ``index add`` read, shingle and sign a chunk of documents at a time
(:func:`signed_chunks`); a full index writes each chunk as a segment, sorted by band,
and merges those sorted runs into one segment a block of keys at a time
(:func:`write_segments`, :func:`neardup.index.store.merge_sorted_band`). Without a
limit a chunk holds :data:`CHUNK_DOCUMENTS` documents or :data:`CHUNK_CHARACTERS`
characters; with ``memory_limit`` the chunks are sized by the limit as ``find``'s
(:class:`~neardup.pipeline.outofcore.ChunkPlan`), the runs are written under the work
directory, and a limit below what the build needs is refused with the floor, before
reading. The index's files do not depend on the chunks: the same documents and options
give the same files, byte for byte, whatever the limit.

Where a build's anonymous memory goes (measured with ``RssAnon`` sampled in a fresh
process; the costs are :data:`COSTS`):

- fixed: the interpreter and the kernels, as for ``find`` (128 MiB);
- per chunk: its texts, their shingling and signatures, as for ``find``: the chunk is
  the peak of a build (about 450 MiB for the default chunk of 100,000 documents of 60
  words, whatever the corpus's size);
- per document, for the whole run: only what renames repeated ids while reading
  (:class:`~neardup.sources.seen_ids.SeenIds`: a hash, a number and an offset, 24
  bytes, and the id's bytes, twice while a chunk's ids are merged in; measured: 42 bytes
  a document retained for ids of 10 characters): ``per_document`` + ``per_id_char`` × id
  length. The segments' ids, sets, signatures and band keys are
  on disk and mapped (file-backed, outside the limit);
- the merge: ``merge_rows`` band keys at a time, about 44 bytes each (the blocks of
  every run, their order, what is written), within the chunks' budget (they are done
  by then). Without a limit 2^20 keys: about 44 MiB;
- a Bloom index: its filters, held whole (:attr:`~neardup.index.bloomfilter.Generations.
  total_bytes`), sized for the documents counted before reading when no ``capacity`` is
  given; an add holds them once (read under the lock and filled in place), with the
  generations the counted documents would open (:meth:`~neardup.index.bloomfilter.
  Generations.bytes_after`). A build inserts a block of up to 100,000 documents' keys at
  a time (8 × (b + 1) bytes a document, about three copies while inserted). The keys of
  a build without ``capacity`` wait on disk under the limit, in memory without one.

Measured (documents of 60 words, word 1-shingles, the CLI in a fresh process): without
a limit the build peaks at about 450 MiB from 100,000 documents on (the chunk); under
``--memory-limit 300M`` builds of 20,000 to 300,000 documents peaked at 183 to 240 MiB
(full) and 179 to 213 MiB (Bloom), the same files.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np

from .._core.heap import release_freed_memory
from ..options import split_options
from ..pipeline import FindConfig, refusals, sign
from ..pipeline.outofcore import ChunkPlan, MemoryCosts, MemoryLimitError, WorkDirectory
from ..sinks.staging import refuse_touching_inputs
from ..sources import StreamTooLarge, frames, read_document_chunks
from ..sources.options import as_paths
from ..text import prepare
from .store import MERGE_ROWS, SEGMENTS, Segment, SegmentPiece, write_segment

# build and add read, shingle and sign this many documents (or characters) at a time
CHUNK_DOCUMENTS = 100_000
CHUNK_CHARACTERS = 256 << 20
MERGE_BYTES_PER_KEY = 44
# a build holds, for the whole run, only the ids read so far (to rename repeated ones)
COSTS = MemoryCosts(per_document=48, per_id_char=2)


def split_index_options(options: dict):
    """(source options as given, PrepareOptions, FindConfig) from :func:`neardup.find`'s
    keywords, split as find splits them."""
    groups = split_options(options)
    if any(v for v in groups.items.values()):
        raise ValueError("an index holds documents; item sets are not supported")
    return groups.source.given(), groups.prepare, groups.config()


def check_limit(command: str, inputs, memory_limit, work_dir, outputs: dict) -> None:
    """Before anything is read: what a memory limit refuses (data in memory), a
    ``work_dir`` without a limit, and inputs that are also an output or the work
    directory."""
    in_memory = frames.is_in_memory(inputs)
    if memory_limit is not None:
        refusals.check(refusals.MEMORY_LIMIT, command, {"in_memory": in_memory})
    elif work_dir is not None:
        raise ValueError("work_dir (--work-dir) is where --memory-limit spills; give "
                         "memory_limit too")
    if not in_memory:
        refuse_touching_inputs(as_paths(inputs), {**outputs, "--work-dir": work_dir},
                               replaced=[k for k in outputs if k == "--out"])


def chunk_plan(memory_limit, inputs, source: dict, config: FindConfig,
               held: tuple[tuple[str, int], ...] = ()) -> ChunkPlan | None:
    """The chunks of a build or add under ``memory_limit`` (None: no limit), the records
    of ``inputs`` counted first; refused (:class:`MemoryLimitError`, naming the floor)
    below what the run needs. ``held``: what the index holds whole besides (a Bloom
    index's filters), named in the refusal."""
    if memory_limit is None:
        return None
    from ..pipeline.outofcore import parse_size

    plan = ChunkPlan.for_run(parse_size(memory_limit), config, as_paths(inputs), source,
                             costs=COSTS, held=held)
    if (skipping := plan.skip_warning()) is not None:
        warnings.warn(skipping, stacklevel=4)
    return plan


def merge_rows(plan: ChunkPlan | None) -> int:
    """Band keys the merge of the runs holds at a time: within the chunks' budget."""
    if plan is None:
        return MERGE_ROWS
    return int(min(MERGE_ROWS, max(1 << 12, plan.budget // MERGE_BYTES_PER_KEY)))


def signed_chunks(inputs, source: dict, prep, config: FindConfig, quiet: bool,
                  plan: ChunkPlan | None = None):
    """(ids, sets, signatures, set aside) of consecutive chunks of ``inputs``: the
    documents that can pair, their shingle sets and signatures, and how many were set
    aside (too few shingles, or generated and excluded). ``plan``: chunks sized for a
    memory limit, each admitted (:meth:`ChunkPlan.admit`) before it is shingled."""
    count = 0
    for chunk_ids, texts in _chunks(inputs, source, quiet, plan):
        count += len(chunk_ids)
        if plan is not None and not quiet:
            print(f"[neardup] chunk of {len(chunk_ids):,} documents read ({count:,} so "
                  f"far)", file=sys.stderr, flush=True)
        # not kept here: while the next chunk is read, only the caller holds this one
        yield sign_documents(chunk_ids, texts, prep, config)
        del chunk_ids, texts


def _chunks(inputs, source: dict, quiet: bool, plan: ChunkPlan | None):
    """(ids, texts) of consecutive documents of ``inputs``, a chunk at a time; together
    what :func:`neardup.sources.read_documents` reads (or a frame holds)."""
    if frames.is_in_memory(inputs):
        documents, _, _ = frames.read_frame(inputs,
                                            text_fields=source.get("text_fields", ("text",)),
                                            id_field=source.get("id_field"))
        for lo in range(0, len(documents.ids), CHUNK_DOCUMENTS):
            yield (documents.ids[lo:lo + CHUNK_DOCUMENTS],
                   documents.texts[lo:lo + CHUNK_DOCUMENTS])
        return
    sizes = {"chunk_chars": CHUNK_CHARACTERS, "chunk_docs": CHUNK_DOCUMENTS}
    if plan is not None:
        sizes = {"chunk_chars": plan.chunk_chars, "chunk_docs": plan.chunk_docs,
                 "max_record_bytes": plan.record_bytes, "max_stream_bytes": plan.stream_bytes}
    chunks, _, _ = read_document_chunks(as_paths(inputs), progress=not quiet, **sizes,
                                        **source)
    while True:
        try:
            chunk = next(chunks, None)
        except StreamTooLarge as err:  # an input kept whole outgrew the limit
            raise MemoryLimitError(str(err)) from None
        if chunk is None:
            return
        if plan is not None:
            plan.admit(chunk)  # a chunk or a count the limit cannot hold ends the run
        yield chunk.ids, chunk.texts
        del chunk


def sign_documents(ids: list[str], texts: list[str], prep, config: FindConfig):
    """(ids, sets, signatures, set aside) of the documents that can pair."""
    prepared = prepare.shingle_documents(texts, ids, config.shingle_options(), prep)
    usable = prepared.sets.sizes >= config.min_shingles
    if prep.generated == "exclude":
        usable &= ~prepared.generated
    rows = np.flatnonzero(usable)
    sets = prepared.sets.subset(rows)
    signatures = sign(sets, config).matrix
    return np.asarray(ids, dtype=object)[rows], sets, signatures, int(len(ids) - rows.size)


def write_segments(root: Path, manifest: dict, chunks, *, plan: ChunkPlan | None = None,
                   work_dir=None) -> int:
    """Write the documents of ``chunks`` (:func:`signed_chunks`) as one segment appended
    to ``manifest`` (not written), named as the manifest's next: a segment per chunk
    (a sorted run: under ``work_dir`` with a limit, else in ``root``), merged into one;
    returns the documents set aside. The segment and the manifest do not depend on the
    chunks: the runs are named from the manifest's next name on, only for the while they
    exist, and the segment takes that name, using up one number however many runs."""
    if plan is None:
        return _write_runs(root, root, manifest, chunks, MERGE_ROWS)
    with WorkDirectory(work_dir) as scratch:
        return _write_runs(root, scratch, manifest, chunks, merge_rows(plan))


def _write_runs(root: Path, scratch: Path, manifest: dict, chunks, rows: int) -> int:
    name = f"seg-{manifest['next_segment']:06d}"
    bands, band_rows = manifest["bands"], manifest["rows"]
    parts, set_aside, entry = [], 0, None
    try:
        for ids, sets, signatures, aside in chunks:
            set_aside += aside
            if len(ids):  # without a limit, the first in root: the segment if it is the only
                at = scratch if parts or root != scratch else root
                run = f"seg-{manifest['next_segment'] + len(parts):06d}"
                parts.append((at, write_segment(at, run, [SegmentPiece.from_ids(
                    ids, sets, signatures)], bands, band_rows)))
            del ids, sets, signatures
        if len(parts) == 1 and parts[0][0] == root:
            entry = parts.pop()[1]
        elif parts:
            if parts[0][0] == root:  # out of the merged segment's way
                moved = f"seg-{manifest['next_segment'] + len(parts):06d}"
                os.rename(root / SEGMENTS / name, root / SEGMENTS / moved)
                parts[0] = (root, {**parts[0][1], "name": moved})
            release_freed_memory()  # the chunks' texts and temporaries, before the merge
            runs = [Segment.open(at, manifest, part, written=True).piece()
                    for at, part in parts]
            entry = write_segment(root, name, runs, bands, band_rows, merge_rows=rows)
    finally:
        for at, part in parts:
            shutil.rmtree(at / SEGMENTS / part["name"], ignore_errors=True)
    if entry is not None:
        manifest["next_segment"] += 1
        manifest["segments"].append(entry)
        manifest["documents"] += entry["documents"]
    return set_aside

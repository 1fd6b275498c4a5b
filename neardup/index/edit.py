"""Editing an index: removing documents by id, and merging indexes built apart.

Removing (:meth:`neardup.Index.remove`): the documents whose id is one given are listed
in a tombstones file (:func:`neardup.index.store.write_tombstones`); queries drop them
from their candidates before anything is verified, so a removed document never pairs
again, and ``compact`` drops their rows. Ids are not keys: every document with a given
id is removed. The answer after a removal is that of an index built without those
documents (tests/index/test_edit.py checks it).

Merging (:meth:`neardup.Index.merge`): indexes with the same options (everything that
makes a set, a signature or a band key, the band plan and the tuned threshold) become
one whose documents are A's, then B's, ...: their segments are copied as they are (no
document is read, shingled or signed again) and renamed in order, their tombstones
carried with the documents renumbered. Its queries answer as one build over A's inputs,
then B's, would (less what was removed). Ids may repeat across the inputs, as they may
within one index: both documents are kept.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..sinks.staging import StagedDirectory, refuse_touching_inputs
from . import store
from .store import SEGMENTS, WriteLock, copy_segment, write_manifest, write_tombstones

EXAMPLES = 5  # ids not in the index named in a report


def distinct_ids(ids) -> pa.Array:
    """The ids given (any iterable of strings, or an Arrow array), each once, in order."""
    array = ids if isinstance(ids, pa.Array | pa.ChunkedArray) else pa.array(list(ids),
                                                                           type=pa.string())
    array = array.cast(pa.string())
    if array.null_count:
        raise ValueError("ids to remove must not be missing (None)")
    return pc.unique(array)


def documents_with_ids(index, wanted: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(the numbers of the documents whose id is in ``wanted``, ascending; bool per id of
    ``wanted``: some document has it), a segment's ids at a time."""
    documents, found = [], np.zeros(len(wanted), dtype=bool)
    for base, segment in zip(index.bases, index.segments):
        ids = segment.ids()
        documents.append(np.flatnonzero(pc.is_in(ids, value_set=wanted).to_numpy(
            zero_copy_only=False)) + base)
        found |= pc.is_in(wanted, value_set=ids).to_numpy(zero_copy_only=False)
    return (np.concatenate(documents) if documents else np.empty(0, dtype=np.int64)), found


def removal_report(wanted: pa.Array, found: np.ndarray, matched: int, fresh: int) -> dict:
    missing = wanted.filter(pa.array(~found))
    return {"ids": len(wanted), "removed": fresh, "already_removed": matched - fresh,
            "not_found": len(missing), "not_found_examples": missing[:EXAMPLES].to_pylist()}


def option_differences(mine: dict, theirs: dict, keys, labels: tuple[str, str]) -> list[str]:
    """``key (label0 value, label1 value)`` for each of ``keys`` whose values differ."""
    return [f"{k} ({labels[0]} {mine.get(k)!r}, {labels[1]} {theirs.get(k)!r})"
            for k in keys if mine.get(k) != theirs.get(k)]


def merge_into(indexes: list, out, fixed: tuple[str, ...]) -> None:
    """Write the merge of ``indexes`` (open :class:`neardup.Index` objects, in order) as
    the new index ``out`` (a new or empty folder), as the module docstring says;
    ``fixed``: the options that must be equal (the threshold is compared too)."""
    if len(indexes) < 2:
        raise ValueError("merge needs at least two indexes")
    refuse_touching_inputs([i.path for i in indexes], {"--out": out})
    first = indexes[0]
    keys = (*fixed, "threshold")
    for other in indexes[1:]:
        differ = option_differences(fixed_options(first), fixed_options(other), keys,
                                    (str(first.path), str(other.path)))
        if differ:
            raise ValueError(f"indexes with different options cannot be merged: "
                             f"{'; '.join(differ)}")
    head = first.manifest
    manifest = {
        "format": store.FORMAT, "format_version": store.FORMAT_VERSION, "version": 1,
        "threshold": head["threshold"], "bands": head["bands"], "rows": head["rows"],
        "weights": head["weights"], "options": head["options"], "documents": 0,
        "set_aside": sum(i.manifest["set_aside"] for i in indexes), "next_segment": 1,
        "segments": [],
    }
    with StagedDirectory(out, lambda name: False, option="--out") as stage:
        (stage / SEGMENTS).mkdir()
        with WriteLock(stage):
            removed, base = [], 0
            for index in indexes:
                for entry in index.manifest["segments"]:
                    name = f"seg-{manifest['next_segment']:06d}"
                    manifest["segments"].append(copy_segment(index.path, entry, stage, name))
                    manifest["documents"] += entry["documents"]
                    manifest["next_segment"] += 1
                removed.append(index.tombstones + base)
                base += index.stored
            tombstones = np.concatenate(removed)
            if tombstones.size:
                manifest[store.TOMBSTONES] = write_tombstones(stage, 1, tombstones)
            write_manifest(stage, manifest)


def fixed_options(index) -> dict:
    """What an index fixes, as its manifest holds it (the query check's keys)."""
    return {**index.options, "bands": index.bands, "rows": index.rows,
            "threshold": index.threshold}


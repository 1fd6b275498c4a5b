"""``find`` and ``dedup`` against an index: the new documents' run, then every pair new ×
indexed (:mod:`neardup.index.query`), and for dedup the copy without the documents that
duplicate an indexed one or are not kept among themselves."""

from __future__ import annotations

from contextlib import nullcontext

from ..options import OptionGroups, split_options
from ..pipeline.run import find_documents
from ..sinks.staging import refuse_touching_inputs
from ..sources import check_copy_target, frames, write_deduplicated
from ..sources.options import as_paths
from . import Index, query
from .store import WriteLock, read_manifest


def find_against(inputs, against, groups: OptionGroups, *, quiet: bool,
                 representative_field: str | None, force: bool):
    """(index, result against it, the new documents' own result, documents); options the
    index fixes take its values (one given with another value is refused by name)."""
    index, groups = query_groups(against, groups, force=force)
    new, documents = find_documents(inputs, groups, quiet=quiet,
                                    representative_field=representative_field,
                                    keep_arrays=True)
    return index, query.against(index, new), new, documents


def query_groups(against, groups: OptionGroups, *, force: bool):
    """(the index at ``against``, opened and checked; the query's option groups): options
    the index fixes take its values, one given with another value is refused by name.
    Both engines' runs against an index start here (Spark's gets
    :class:`~neardup.index.query.IndexProbe` of the index)."""
    index = Index(against)
    given = index.query_options(groups.given, force=force)
    return index, split_options(given, source=groups.source)


def dedup_against(inputs, out, against, groups: OptionGroups, *, add: bool, force: bool,
                  quiet: bool, representative_field: str | None):
    """:func:`neardup.dedup` against an index, the kept documents added to it if ``add``
    (holding its write lock throughout: no add in between, seen is seen)."""
    read_manifest(against)  # not an index: said before anything is read or locked
    in_memory = frames.is_in_memory(inputs)
    if in_memory and out is not None:
        raise ValueError("dedup of data in memory returns the deduplicated data; "
                         "out= is for files")
    if not in_memory:
        if out is None:
            raise ValueError("dedup of files needs out= (the path of the copy)")
        refuse_touching_inputs([*as_paths(inputs), against], {"--out": out})
        check_copy_target(as_paths(inputs), out, groups.source.fmt)
    with WriteLock(against) if add else nullcontext():
        index, result, new, documents = find_against(
            inputs, against, groups, quiet=quiet, force=force,
            representative_field=representative_field)
        if in_memory:
            rows = result.read_report["records_seen"]
            kept = frames.keep_rows(inputs, frames.kept_row_mask(documents, result.kept_new,
                                                                 rows))
        else:
            result.counts["dedup"] = write_deduplicated(documents, result.kept_new,
                                                        as_paths(inputs), out)
        if add:
            result.counts["index"]["added"] = query.add_kept(index, new, result)
    return kept if in_memory else result

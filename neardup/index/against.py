"""``find`` and ``dedup`` against an index: the new documents' run, then every pair new ×
indexed (:mod:`neardup.index.query`), and for dedup the copy without the documents that
duplicate an indexed one or are not kept among themselves."""

from __future__ import annotations

import os
from contextlib import nullcontext

from .._core import counts as counting
from ..options import OptionGroups, split_options
from ..pipeline.dedup import check_explain_path
from ..pipeline.run import find_documents
from ..sinks import write_table
from ..sinks.staging import refuse_touching_inputs
from ..sources import frames
from ..sources.copies import check_dedup_out, write_deduplicated
from ..sources.options import as_paths
from . import Index, bloom, query
from .store import WriteLock, read_manifest


def find_against(inputs, against, groups: OptionGroups, *, quiet: bool,
                 representative_field: str | None, force: bool):
    """(index, result against it, the new documents' own result, documents); options the
    index fixes take its values (one given with another value is refused by name)."""
    bloom.refuse_find(against)  # no pairs to list
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
                  quiet: bool, representative_field: str | None, explain=None):
    """:func:`neardup.dedup` against an index, the kept documents added to it if ``add``
    (holding its write lock throughout: no add in between, seen is seen); ``explain``: a
    file for :meth:`~neardup.index.query.IndexFindResult.explain_table`."""
    is_bloom = bloom.is_bloom(against)
    if is_bloom and explain is not None:
        raise ValueError(f"--explain needs a full index: {against} is a Bloom index, which "
                         f"holds no documents to name")
    if not is_bloom:
        read_manifest(against)  # not an index: said before anything is read or locked
    in_memory = frames.is_in_memory(inputs)
    if explain is not None:
        check_explain_path(explain)
        sources = [] if in_memory else as_paths(inputs)
        refuse_touching_inputs([*sources, against], {"--explain": explain}, replaced=())
        if out is not None and os.path.realpath(explain) == os.path.realpath(out):
            raise ValueError(f"--explain {explain} is the --out path: choose another file")
    check_dedup_out(inputs, out, groups.source.fmt, also_read=[against])
    with WriteLock(against) if add else nullcontext():
        if is_bloom:
            index, result, new, documents = bloom.dedup_against(
                inputs, against, groups, quiet=quiet, force=force,
                representative_field=representative_field)
        else:
            index, result, new, documents = find_against(
                inputs, against, groups, quiet=quiet, force=force,
                representative_field=representative_field)
        if in_memory:
            rows = result.read_report["records_seen"]
            kept = frames.keep_rows(inputs, frames.kept_row_mask(documents, result.kept_new,
                                                                 rows))
        else:
            counting.add(result.counts, dedup=write_deduplicated(
                documents, result.kept_new, as_paths(inputs), out))
        if explain is not None:
            table = result.explain_table()
            write_table(table, explain, escape_formulas=True)  # as every CSV output
            counting.add(result.counts, explain={"path": str(explain), "rows": table.num_rows})
        if add:
            result.counts["index"]["added"] = (index.add_kept(new, result) if is_bloom
                                               else query.add_kept(index, new, result))
    return kept if in_memory else result

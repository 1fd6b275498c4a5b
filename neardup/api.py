"""The library's entry points, the door: options checked and split into their groups
once (:func:`neardup.options.split_options`), then one engine picked and called.

The CLI is a thin layer over these (``neardup find`` ≡ :func:`find`). No engine loop
runs here: the local engine is :mod:`neardup.pipeline` (in memory:
:mod:`~neardup.pipeline.run`; under a memory limit: :mod:`~neardup.pipeline.chunked`),
runs against an index are :mod:`neardup.index.against`, Spark is :mod:`neardup.spark`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, TypeVar, overload

import pyarrow as pa

from . import cluster, cosine, lsh, sinks
from ._core import counts as counting
from ._core import remote
from ._core.choices import not_one_of
from ._core.progress import StageTimer
from .config import FindConfig, check_hyperplanes, check_num_perm
from .options import EvaluateOptions, FindOptions, OptionGroups, column_names, split_options
from .pipeline import outofcore, refusals
from .pipeline.dedup import DedupOutputs
from .pipeline.remote_paths import with_remote_paths
from .pipeline.run import field_ranks, find_documents, find_item_sets
from .result import FindResult
from .sinks.staging import refuse_inside_replaced, refuse_touching_inputs, standard_output
from .sources import frames, read_documents
from .sources.copies import check_copy_target, check_dedup_out
from .sources.options import SourceOptions, as_paths
from .sources.urls import expand_inputs
from .text import prepare
from .text.cleaning import PRESETS
from .units import DEFAULT_MIN_CHARS, DEFAULT_MIN_TOKENS, UnitOptions
from .units import KEEP_POLICIES as UNIT_KEEP_POLICIES

if TYPE_CHECKING:  # PEP 692: typed **options (typing.Unpack from Python 3.11)
    from typing_extensions import Unpack

    from .evaluate import Evaluation
    from .index import Index
    from .index.bloom import BloomIndex
    from .pipeline.contamination_run import ContaminationResult
    from .spark import SparkFindResult
    from .units.run import UnitResult

_Entry = TypeVar("_Entry", bound=Callable)
_Data = TypeVar("_Data")  # data in memory: dedup returns the same kind

SOURCE_OPTIONS = SourceOptions.keys()
ENGINES = ("local", "spark")
STDOUT = "-"
__all__ = ["ENGINES", "SOURCE_OPTIONS", "STDOUT", "build_index", "contamination", "dedup",
           "evaluate", "explain",
           "field_ranks", "find", "find_items", "repeats", "repeats_run", "tune"]


def _remote_paths(command: str):
    """``command``'s entry point with URLs among its paths: see
    :func:`neardup.pipeline.remote_paths.with_remote_paths`."""
    return with_remote_paths(command, lambda *args: _check_summary_path(*args))


# the engine decides the result's kind: tables in memory (local) or DataFrames (spark)
@overload
def find(inputs, *, out=..., output_format: str = ..., quiet: bool = ...,
         representative_field: str | None = ..., report=..., engine: Literal["local"] = ...,
         memory_limit=..., work_dir=..., escape_formulas: bool = ..., layout: str = ...,
         text: str | Sequence[str] | None = ..., id: str | None = ..., against=...,
         force: bool = ..., unit: str = ..., **options: Unpack[FindOptions]) -> FindResult: ...
@overload
def find(inputs, *, out=..., output_format: str = ..., quiet: bool = ...,
         representative_field: str | None = ..., report=..., engine: Literal["spark"],
         memory_limit=..., work_dir=..., escape_formulas: bool = ..., layout: str = ...,
         text: str | Sequence[str] | None = ..., id: str | None = ..., against=...,
         force: bool = ..., unit: str = ...,
         **options: Unpack[FindOptions]) -> SparkFindResult: ...
@overload
def find(inputs, *, out=..., output_format: str = ..., quiet: bool = ...,
         representative_field: str | None = ..., report=..., engine: str,
         memory_limit=..., work_dir=..., escape_formulas: bool = ..., layout: str = ...,
         text: str | Sequence[str] | None = ..., id: str | None = ..., against=...,
         force: bool = ..., unit: str = ...,
         **options: Unpack[FindOptions]) -> FindResult | SparkFindResult: ...
@_remote_paths("find")
def find(inputs, *, out=None, output_format: str = "csv", quiet: bool = True,
         representative_field: str | None = None, report=None, engine: str = "local",
         memory_limit=None, work_dir=None, escape_formulas: bool = True,
         layout: str = "auto", text: str | Sequence[str] | None = None, id: str | None = None,
         against=None, force: bool = False, unit: str = "document",
         **options: Unpack[FindOptions]) -> FindResult | SparkFindResult:
    """Read ``inputs``, find near-duplicate pairs and clusters; write them to ``out`` if given.

    ``inputs``: a path or a list of paths, or data already in memory: a pandas or polars
    DataFrame, a pyarrow Table or RecordBatchReader, a DuckDB relation, a Hugging Face
    ``Dataset``, a list of dicts or of strings (see :mod:`neardup.sources.frames`). ``text``
    (a column name or several, joined by a newline; default "text") and ``id`` (default:
    the row number) name the columns; they are the same as ``text_fields``/``id_field``.

    ``options`` are source options (fmt, text_fields, id_field, include, exclude,
    delimiter, encoding), :class:`~neardup.config.FindConfig` fields
    (threshold, num_perm, shingle_kind, shingle_size, ...) and
    :class:`~neardup.text.prepare.PrepareOptions` fields (clean, language, stem, ...,
    code, type2, generated).

    Item sets instead of texts: ``items=(user_col, item_col)`` reads a two-column
    table, ``items_field=NAME`` a JSON Lines list field; ``transpose=True`` swaps
    users and items (see :mod:`neardup.sources.itemsets`).

    ``report``: write the HTML report there (see :func:`neardup.report.write_report`),
    with the texts still in memory for the side-by-side pair views; what it drew
    lands in ``result.counts["report"]``. A report inside ``out`` is refused: that
    folder holds what its manifest lists and the next run replaces it whole.

    ``out="-"`` writes the pairs to standard output (csv or jsonl) instead of a folder.
    ``out`` is written all at once with a manifest (see :func:`neardup.sinks.write_folder`);
    ``escape_formulas``: CSV string cells beginning with =, +, -, @, tab or CR get a
    leading ' (OWASP); False writes them raw. JSONL and Parquet are always raw.

    ``layout`` (:data:`neardup.sinks.LAYOUTS`), how ``out`` holds each table: ``single``,
    one file (``pairs.csv``); ``parts``, a folder of part files (``pairs/part-00000.csv``,
    ...), listed in order in the manifest; ``auto`` (the default): parts with
    ``engine="spark"`` (its executors write them; the driver holds no table), single on
    the local engine. :func:`neardup.read_results` reads either.

    ``engine="spark"`` runs the same stages on Spark (:func:`neardup.spark.find_sources`)
    and returns a :class:`~neardup.spark.SparkFindResult` (DataFrames).

    ``memory_limit`` (bytes, or a size such as "4G"): read, shingle and sign a chunk
    of documents at a time and keep shingle sets, signatures and band keys in files
    under ``work_dir`` (default: the system's temporary directory; removed after the
    run); see :mod:`neardup.pipeline.outofcore`. Same pairs and clusters as without it;
    method "auto" becomes "lsh"; no ``report`` (it needs the texts: run
    ``neardup report`` on ``out`` instead) and no item sets. With ``embeddings``, the
    vectors are read a chunk at a time and kept in files
    (:mod:`neardup.pipeline.embedded_chunked`); no ``also_jaccard``.

    ``against``: the path of an index (:class:`neardup.Index`): every pair new × indexed
    and new × new, as a batch run over both would find them
    (:mod:`neardup.index.query`); options the index fixes take its values, and one given
    with another value is refused. ``force``: run at a threshold where the index's
    bands find fewer than half of the pairs (P(t) < 0.5). With ``engine="spark"`` the
    executors search the index's memory-mapped segments (:mod:`neardup.spark.against`):
    the same pairs, tables and counts.
    """
    if engine not in ENGINES:
        raise not_one_of("engine", engine, ENGINES)
    if unit != "document":
        UnitOptions(unit)  # an unknown unit is named as such
        raise ValueError(f"find reports pairs of near-duplicate documents; a repeated "
                         f"{unit} is an exact repeat with no pair or Jaccard to report: "
                         f"list them with `neardup repeats --unit {unit}` "
                         f"(neardup.repeats) and remove them with `neardup dedup --unit "
                         f"{unit}`")
    sinks.resolve_layout(layout, engine)  # an unknown layout, before any reading
    if out == STDOUT and layout == "parts":
        raise ValueError("--layout parts writes a results folder, not standard output")
    if out == STDOUT:
        standard_output("the pairs")  # closed (`>&-`): said before any reading
    groups = split_options(column_names(options, text, id))
    in_memory = frames.is_in_memory(inputs)
    _refuse(engine, "find", groups, memory_limit=memory_limit, in_memory=in_memory,
            items=bool(groups.items), report=report, against=against,
            representative_field=representative_field)
    refuse_touching_inputs([] if in_memory else as_paths(inputs),
                           {"--out": out, "--report": report, "--work-dir": work_dir})
    refuse_inside_replaced("--out", out, {"--report": report})
    if engine == "spark":
        from . import spark

        probe, groups = _spark_against(against, groups, {"--out": out}, force)
        return spark.find_sources(inputs, out=out, output_format=output_format,
                                  escape_formulas=escape_formulas, layout=layout, quiet=quiet,
                                  against=probe, **_spark_keywords(groups))
    documents = None
    if against is not None:
        if report is not None or groups.items:
            raise ValueError("--against runs on documents: no --report or item sets")
        refuse_touching_inputs([against], {"--out": out, "--report": report})
        from .index.against import find_against

        result = find_against(inputs, against, groups, quiet=quiet, force=force,
                              representative_field=representative_field)[1]
    elif memory_limit is not None:
        limit = outofcore.parse_size(memory_limit)
        from .pipeline.chunked import find_chunked

        result = find_chunked(inputs, groups, quiet=quiet,
                              representative_field=representative_field, limit=limit,
                              work_dir=work_dir)
    elif groups.items:
        result = find_item_sets(inputs, groups, quiet=quiet)
    else:
        result, documents = find_documents(inputs, groups, quiet=quiet,
                                           representative_field=representative_field,
                                           keep_texts=report is not None)
    if out == STDOUT:  # the pairs, to standard output; everything else stays on stderr
        sinks.write_pairs_to(standard_output("the pairs"), result, output_format,
                             escape_formulas=escape_formulas)
    elif out is not None:
        sinks.write_result(result, out, output_format, escape_formulas=escape_formulas,
                           layout=layout)
    if report is not None:
        from .report import write_report  # matplotlib and difflib only when asked

        drawn = write_report(result, report,
                             texts=documents.texts if documents is not None else None,
                             repeats=_most_repeated_lines(documents, groups))
        counting.add(result.counts, report={k: v for k, v in drawn.items() if k != "notes"})
    return result


def _writes_summary(command: str) -> Callable[[_Entry], _Entry]:
    """``command``'s entry point with ``summary=PATH``: the paths checked before the run,
    the result's summary written after it (:func:`neardup.sinks.write_summary`), whichever
    engine and path ran; the entry point itself never sees ``summary`` (it names it for
    its signature and docstring)."""
    def wrap(run):
        @functools.wraps(run)
        def run_and_summarize(inputs, out=None, *, summary=None, **keywords):
            if summary is None:
                return run(inputs, out, **keywords)
            _check_summary_path(summary, inputs, {"--out": out, **{
                option: keywords.get(key) for option, key in (("--explain", "explain"),
                                                              ("--work-dir", "work_dir"))}})
            result = run(inputs, out, **keywords)
            sinks.write_summary(summary, command, result, as_paths(inputs))
            return result
        return run_and_summarize  # type: ignore[return-value]  # the same signature
    return wrap


def _check_summary_path(summary, inputs, outputs: dict) -> None:
    """ValueError, before any reading, for a ``summary`` path that cannot be written: data
    in memory (no run on files to summarize), standard output, an input or a path
    inside one, another output of the run (``outputs``: option -> path) or inside the
    folder ``--out`` replaces."""
    if frames.is_in_memory(inputs):
        raise ValueError("summary= (--summary) summarizes a run on files; a dedup of data "
                         "in memory returns the data (neardup.find gives its counts)")
    if summary == STDOUT:
        raise ValueError("--summary takes the path of a JSON file, not standard output")
    refuse_touching_inputs(as_paths(inputs), {"--summary": summary}, replaced=())
    for option, path in outputs.items():
        if path is not None and path != STDOUT and (
                os.path.realpath(path) == os.path.realpath(summary)):
            raise ValueError(f"--summary {summary} is {option}'s path too: choose another")
    refuse_inside_replaced("--out", outputs.get("--out"), {"--summary": summary})


# data in memory (no out=) comes back deduplicated, as the same kind of object; files
# give the run's result (whole documents, units inside them, or Spark's)
@overload
def dedup(inputs: _Data, out: None = ..., *, quiet: bool = ...,
          representative_field: str | None = ...,
          text: str | Sequence[str] | None = ..., id: str | None = ..., against=...,
          add: bool = ..., force: bool = ..., engine: str = ..., explain=..., unit: str = ...,
          min_tokens: int = ..., keep: str | None = ..., min_chars: int = ...,
          memory_limit=..., work_dir=..., annotate: bool = ..., summary=...,
          min_unit_chars: int | None = ..., min_unit_words: int | None = ...,
          **options: Unpack[FindOptions]) -> _Data: ...
@overload
def dedup(inputs, out: str | os.PathLike[str], *, quiet: bool = ...,
          representative_field: str | None = ...,
          text: str | Sequence[str] | None = ..., id: str | None = ..., against=...,
          add: bool = ..., force: bool = ..., engine: str = ..., explain=..., unit: str = ...,
          min_tokens: int = ..., keep: str | None = ..., min_chars: int = ...,
          memory_limit=..., work_dir=..., annotate: bool = ..., summary=...,
          min_unit_chars: int | None = ..., min_unit_words: int | None = ...,
          **options: Unpack[FindOptions]
          ) -> FindResult | UnitResult | SparkFindResult: ...
@_remote_paths("dedup")
@_writes_summary("dedup")
def dedup(inputs, out=None, *, quiet: bool = True, representative_field: str | None = None,
          text: str | Sequence[str] | None = None, id: str | None = None,
          against=None, add: bool = False, force: bool = False, engine: str = "local",
          explain=None, unit: str = "document", min_tokens: int = DEFAULT_MIN_TOKENS,
          keep: str | None = None, min_chars: int = DEFAULT_MIN_CHARS, memory_limit=None,
          work_dir=None, annotate: bool = False, summary=None,
          min_unit_chars: int | None = None, min_unit_words: int | None = None,
          **options: Unpack[FindOptions]) -> object:
    """Write ``inputs`` minus every document that has a near-duplicate kept in its place.

    ``keep`` (whole documents, :data:`neardup.cluster.KEEP_POLICIES`): "representative"
    (the default: each cluster's representative stays), "all" (every record stays: with
    ``annotate``, whose ``neardup_kept`` then marks the representatives), "none" (every
    document of a cluster of two or more goes). ``annotate``:
    every record written gets ``neardup_cluster``, ``neardup_cluster_size``,
    ``neardup_kept``, ``neardup_duplicate_of`` and ``neardup_jaccard`` (JSON Lines fields,
    CSV/TSV or Parquet columns, columns of data in memory; records that are not documents
    get none, or empty cells and nulls; see :mod:`neardup.sources.annotations`); an input
    that already has one of these names is refused before anything is written. Both on the
    local engine and on Spark (:mod:`neardup.pipeline.dedup`; the values are
    :meth:`~neardup.result.FindResult.outcomes_table`'s).

    ``summary``: a path that gets the run's summary as JSON, written whole after the
    run (every engine and unit; not for data in memory): the records read, processed,
    skipped, failed, kept, removed and written, then the counts, options, read report
    and seconds per stage (:func:`neardup.sinks.write_summary`).

    ``unit`` other than "document" (:data:`neardup.units.UNITS`: "line", "paragraph",
    "sentences:N", "span"): the copy keeps every document but removes, inside them, each
    unit whose normalized text occurred before (``keep="first"``, the default for units;
    ``keep="none"``: every copy of a repeated unit), and drops the documents left with fewer than
    ``min_chars`` characters; ``min_tokens``: the span unit's shortest run;
    ``min_unit_chars``, ``min_unit_words`` (line, paragraph, sentences:N; None: the
    defaults, 0 characters and 3 words): a unit with fewer characters or words (of its
    normalized text) is never removed. Returns a
    :class:`neardup.units.run.UnitResult` (``counts`` add up to the records read); the
    similarity options do not apply. See :mod:`neardup.units`. ``engine="spark"`` runs
    every unit (:func:`neardup.spark.dedup_units_sources`: the layout of a Spark dedup
    copy, the local copy's bytes and counts).
    ``memory_limit`` (bytes, or a size such as "4G"; on the local engine): whole
    documents are found as :func:`find` finds them under a limit (read, shingled and
    signed a chunk at a time, sets, signatures and band keys in files under
    ``work_dir``; see :mod:`neardup.pipeline.outofcore`), then the inputs are read again
    for the copy: the same copy and counts as without it, or a limit below the run's
    floor refused, naming it. Not with ``against`` or data in memory; ``representative_field``
    only "id"; method "auto" becomes "lsh". Units inside documents (line, paragraph,
    sentences:N, span): read in chunks, the units' hashes sorted in runs on disk under
    ``work_dir`` (default: the system's temporary directory; removed after the run) and
    merged; the same copy (:mod:`neardup.units.sorted_runs`).

    Files: the copy goes to ``out`` in the input's format and the FindResult is returned
    (its ``counts["dedup"]`` says what was written). ``out`` is compressed as its name
    says (``out.jsonl.gz``); ``out="-"`` writes the kept records of one file input to
    standard output, uncompressed (a directory input is refused: its copy is a folder).
    Data in memory (a DataFrame, a table, a list; see :func:`find`): the same kind of
    object minus the removed rows is returned, and ``out`` is not used; rows without
    text are kept as they were.

    ``against``: an index (see :func:`find`): the new documents minus those that
    duplicate an indexed document or are not kept among themselves; ``add=True`` adds
    the kept ones to the index in the same step, holding its write lock throughout
    (the local engine only: Spark refuses ``add``).
    A new document is removed only for one that stays (indexed, or a new one kept before
    it) at Jaccard ≥ ``threshold``.

    ``explain``: a file (.csv, .jsonl or .parquet) that gets one row per removed
    document: ``id``, ``matched_id`` (the kept document it duplicates), ``matched_source``
    ("new"; against an index "index" or "new"), ``jaccard``, and without an index its
    ``cluster`` (:meth:`~neardup.result.FindResult.explain_table`;
    :meth:`~neardup.index.query.IndexFindResult.explain_table`).

    Clusters are star clusters unless ``clusters`` says otherwise
    (:data:`neardup.cluster.DEDUP_CLUSTERS`): a document is removed only for a kept one
    whose similarity to it is >= ``threshold``, and ``counts["min_member_similarity"]``
    is the lowest such similarity. Against an index the indexed documents are fixed
    centres (:func:`neardup.cluster.anchored_cover`): a new document is removed only for
    an indexed one or a new one kept before it.

    ``engine="spark"``: :func:`neardup.spark.dedup_sources`; a JSON Lines or Parquet
    input's copy is a folder of part files written by the executors (JSON Lines parts,
    concatenated in order, are the local copy byte for byte; Parquet parts hold its
    rows), other inputs are read and copied on the driver as locally; CSV/TSV files are
    refused (the local engine copies them). ``keep``, ``annotate`` and ``explain`` give
    the local engine's records, fields and explain file (not against an index).
    """
    if engine not in ENGINES:
        raise not_one_of("engine", engine, ENGINES)
    document = UnitOptions(unit).kind == "document"  # an unknown unit named as such
    keep = _keep_policy(keep, document)
    units = UnitOptions(unit, min_tokens=min_tokens, min_chars=min_chars,
                        min_unit_chars=min_unit_chars, min_unit_words=min_unit_words,
                        **({} if document else {"keep": keep}))
    limit = _units_memory_limit(memory_limit, work_dir, units)
    if not document:
        return _dedup_units(inputs, out, units, quiet=quiet, engine=engine,
                            memory_limit=limit, work_dir=work_dir,
                            refused={"against=": against is not None, "add=True": add,
                                     "explain=": explain is not None,
                                     "annotate=True": annotate,
                                     "representative_field=": representative_field is not None},
                            **column_names(options, text, id))
    if min_chars != DEFAULT_MIN_CHARS or min_tokens != DEFAULT_MIN_TOKENS \
            or min_unit_chars is not None or min_unit_words is not None:
        raise ValueError("min_chars, min_tokens, min_unit_chars and min_unit_words apply to "
                         "units inside documents: give unit= (line, paragraph, "
                         "sentences:N, span)")
    if against is None:
        options = {"clusters": cluster.DEDUP_CLUSTERS, **options}
    groups = split_options(column_names(options, text, id))
    in_memory = frames.is_in_memory(inputs)
    _refuse(engine, "dedup", groups, memory_limit=limit, in_memory=in_memory, out=out,
            add=add, explain=explain, annotate=annotate, keep=keep, against=against,
            representative_field=representative_field)
    if against is not None:
        _refuse(engine, "dedup --against", groups, memory_limit=limit, explain=explain)
    outputs = DedupOutputs(keep, annotate, explain)
    if engine == "spark":
        if out is None:
            raise ValueError("dedup of files needs out= (the path of the copy)")
        refuse_touching_inputs(as_paths(inputs), {"--out": out})
        from . import spark

        probe, groups = _spark_against(against, groups, {"--out": out}, force)
        return spark.dedup_sources(as_paths(inputs), out, quiet=quiet, against=probe,
                                   keep=keep, annotate=annotate, explain=explain,
                                   **_spark_keywords(groups))
    if against is not None:
        from .index.against import dedup_against

        outputs.check_against()
        return dedup_against(inputs, out, against, groups, add=add, force=force, quiet=quiet,
                             representative_field=representative_field, explain=explain)
    if add:
        raise ValueError("add=True (--add) needs against= (the index to add to)")
    check_dedup_out(inputs, out, groups.source.fmt, also_written={"--work-dir": work_dir})
    if not in_memory:
        inputs = as_paths(inputs)
    outputs.check(inputs, out, groups.source.fmt,
                  cosine=groups.similarity.get("embeddings") is not None)
    result, documents = _find_for_copy(inputs, groups, quiet=quiet,
                                       representative_field=representative_field,
                                       memory_limit=limit, work_dir=work_dir)
    return outputs.write(result, documents, inputs, out)


def _keep_policy(keep: str | None, document: bool) -> str:
    """``keep`` checked for the unit: whole documents keep one of
    :data:`neardup.cluster.KEEP_POLICIES` (default: the representative), units inside
    them one of :data:`neardup.units.KEEP_POLICIES` (default: the first)."""
    policies = cluster.KEEP_POLICIES if document else UNIT_KEEP_POLICIES
    if keep is None:
        return policies[0]
    if keep in policies:
        return keep
    if keep in (UNIT_KEEP_POLICIES if document else cluster.KEEP_POLICIES):
        where = ("units inside documents (unit= line, paragraph, sentences:N, span)"
                 if document else "whole-document dedup (unit='document')")
        raise ValueError(f"keep={keep!r} (--keep {keep}) applies to {where}; "
                         f"{'whole-document dedup keeps' if document else 'units keep'} "
                         f"one of {', '.join(policies)}")
    raise ValueError(f"keep must be one of {policies}, got {keep!r}")


REPORT_REPEATS = 20  # the report's "most repeated lines"


def _most_repeated_lines(documents, groups: OptionGroups) -> list[dict] | None:
    """The report's most repeated lines, under the run's normalization (None without the
    texts)."""
    if documents is None:
        return None
    from .units import find_repeated_units
    from .units.run import repeats_of

    analysis = find_repeated_units(documents.texts, UnitOptions("line"),
                                   groups.prepare.normalize)
    return repeats_of(analysis, documents.ids, top=REPORT_REPEATS, max_chars=120).to_pylist()


def _find_for_copy(inputs, groups: OptionGroups, *, quiet: bool,
                   representative_field: str | None, memory_limit: int | None, work_dir
                   ) -> tuple[FindResult, object]:
    """(FindResult, Documents) of files for the dedup copy: in memory, or under
    ``memory_limit`` bytes a chunk at a time (the Documents' ids, sources and records
    mapped from the spilled files); the same representatives either way."""
    if memory_limit is None:
        return find_documents(inputs, groups, quiet=quiet,
                              representative_field=representative_field)
    from .pipeline.chunked import find_chunked_documents

    return find_chunked_documents(inputs, groups, quiet=quiet,
                                  representative_field=representative_field,
                                  limit=memory_limit, work_dir=work_dir)


def _units_memory_limit(memory_limit, work_dir, units: UnitOptions) -> int | None:
    """The limit in bytes, checked at the door: for units inside documents against
    their floor; whole documents' floor is the chunk plan's, checked before reading
    (:meth:`~neardup.pipeline.outofcore.ChunkPlan.for_run`)."""
    if memory_limit is None:
        if work_dir is not None:
            raise ValueError("work_dir (--work-dir) is where --memory-limit spills; give "
                             "memory_limit too")
        return None
    limit = outofcore.parse_size(memory_limit)
    if units.kind == "document":
        return limit
    from .units.sorted_runs import chunk_chars_for

    chunk_chars_for(limit, units.kind)  # a limit below the floor, named before any reading
    return limit


def _dedup_units(inputs, out, units: UnitOptions, *, quiet: bool, engine: str, refused: dict,
                 memory_limit: int | None = None, work_dir=None, **options):
    """dedup with a unit inside documents (see :func:`dedup`): files to files, on the
    local engine (in memory or under ``memory_limit``) or on Spark."""
    named = [name for name, given in refused.items() if given]
    if named:
        raise ValueError(f"--unit {units.unit} runs on files; "
                         f"{', '.join(named)} apply to whole-document dedup")
    refusals.check(engine, "dedup --unit", {"out": out, "memory_limit": memory_limit})
    if frames.is_in_memory(inputs):
        raise ValueError("--unit removes units from files; data in memory is not "
                         "supported yet (write it as JSON Lines or Parquet first)")
    if out is None:
        raise ValueError("dedup of files needs out= (the path of the copy)")
    groups = split_options(options)
    paths = as_paths(inputs)
    refuse_touching_inputs(paths, {"--out": out, "--work-dir": work_dir})
    from .units.run import check_unit_groups, dedup_units

    check_unit_groups(groups, copy=True)
    if engine == "spark":
        from .spark.units import check_spark_unit, dedup_units_sources

        check_spark_unit(units)
        return dedup_units_sources(paths, out, units, quiet=quiet,
                                   normalize=groups.prepare.normalize,
                                   **groups.source.given())
    check_copy_target(paths, out, groups.source.fmt)  # before reading
    return dedup_units(paths, out, groups, units, quiet=quiet, memory_limit=memory_limit,
                       work_dir=work_dir)


def repeats(inputs, out=None, **keywords) -> pa.Table:
    """The repeated units of ``inputs``, most repeated first, as a pyarrow Table (see
    :func:`repeats_run`, which takes the same options and gives the counts too)."""
    return repeats_run(inputs, out, **keywords).repeats


@_remote_paths("repeats")
def repeats_run(inputs, out=None, *, unit: str = "line",
                min_tokens: int = DEFAULT_MIN_TOKENS, top: int | None = None,
                max_chars: int = 200, output_format: str | None = None, quiet: bool = True,
                escape_formulas: bool = True, text: str | Sequence[str] | None = None,
                id: str | None = None, memory_limit=None, work_dir=None,
                engine: str = "local", summary=None, min_unit_chars: int | None = None,
                min_unit_words: int | None = None,
                **options: Unpack[FindOptions]) -> UnitResult:
    """The repeated units of ``inputs`` (a unit: see :func:`dedup`), most repeated first,
    in a table (``result.repeats``, the table :func:`repeats` returns): ``text`` (its
    first occurrence, at most ``max_chars`` characters), ``count``, ``documents`` (how
    many hold it), ``first_id``, ``first_offset`` (the character it starts at there),
    ``bytes``; ``top``: the first N rows only. ``out``: also write it there (csv, jsonl
    or parquet, from the suffix unless ``output_format`` says; "-": csv or jsonl to
    standard output; ``escape_formulas``: as :func:`find`'s, for CSV). The source and
    text options are those of :func:`find`; the similarity options do not apply.
    ``memory_limit``, ``work_dir``, ``min_unit_chars``, ``min_unit_words``: as
    :func:`dedup`'s (the same table): units under the minimum are not listed; the
    table's schema metadata says how many repeated texts that left out and the most
    frequent of them (:func:`neardup.units.run.spared_of`).
    ``engine="spark"``: :func:`neardup.spark.repeats_sources`, the same table (the
    driver collects the listing only; with ``top``, its first N rows).
    ``summary``: as :func:`dedup`'s (the records read and, on the local engine, the
    units' totals). Returns a :class:`neardup.units.run.UnitResult`: the table in
    ``repeats``, the counts (:func:`neardup.units.run.repeats_counts`), the read report
    and the seconds per stage.
    """
    if engine not in ENGINES:
        raise not_one_of("engine", engine, ENGINES)
    refusals.check(engine, "repeats", {"memory_limit": memory_limit})
    units = UnitOptions(unit, min_tokens=min_tokens, min_unit_chars=min_unit_chars,
                        min_unit_words=min_unit_words)
    if units.kind == "document":
        raise ValueError("repeats lists units inside documents: give unit= line, "
                         "paragraph, sentences:N or span (repeated whole documents are "
                         "find's identical groups)")
    limit = _units_memory_limit(memory_limit, work_dir, units)
    if top is not None and (not isinstance(top, int) or top < 1):
        raise ValueError(f"top must be a whole number >= 1, got {top!r}")
    if not isinstance(max_chars, int) or max_chars < 1:
        raise ValueError(f"max_chars must be a whole number >= 1, got {max_chars!r}")
    if output_format is not None and output_format not in sinks.OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {sinks.OUTPUT_FORMATS}, "
                         f"got {output_format!r}")
    if out == STDOUT and output_format is not None:
        sinks.streamed(output_format, "--out - writes")
    if out == STDOUT:
        standard_output("the listing")
    groups = split_options(column_names(options, text, id))
    if frames.is_in_memory(inputs):
        raise ValueError("repeats reads files; data in memory is not supported yet")
    paths = as_paths(inputs)
    refuse_touching_inputs(paths, {"--out": None if out == STDOUT else out})
    if summary is not None:
        _check_summary_path(summary, paths, {"--out": out, "--work-dir": work_dir})
    from .units.run import check_unit_groups
    from .units.run import repeats_run as local_repeats_run

    if engine == "spark":
        from .spark.repeats import repeats_run as spark_repeats_run

        check_unit_groups(groups)
        result = spark_repeats_run(paths, units, normalize=groups.prepare.normalize,
                                   top=top, max_chars=max_chars, quiet=quiet,
                                   **groups.source.given())
    else:
        result = local_repeats_run(paths, groups, units, top=top, max_chars=max_chars,
                                   quiet=quiet, memory_limit=limit, work_dir=work_dir)
    table = result.repeats
    if out == STDOUT:
        sinks.write_table_to(standard_output("the listing"), table, output_format or "csv",
                             escape_formulas=escape_formulas)
    elif out is not None:
        sinks.write_tables([table], out, output_format, schema=table.schema,
                           escape_formulas=escape_formulas)
    sinks.write_summary(summary, "repeats", result, paths)
    return result


def contamination(inputs, eval, *, fields: str | Sequence[str] | None = None,
                  eval_text: str | None = None, eval_id: str | None = None,
                  rule: str = "ngram", ngram: int = 13, containment: float = 0.8,
                  require: str | Sequence[str] | None = None, report=None, matches=None,
                  clean=None, clean_spans: bool = False, flag_eval=None,
                  engine: str = "local", memory_limit=None, quiet: bool = True,
                  text: str | Sequence[str] | None = None, id: str | None = None,
                  clean_preset: str | None = None, **options) -> ContaminationResult:
    """Which items of the evaluation sets ``eval`` the training corpus ``inputs``
    contains, per benchmark (see :mod:`neardup.pipeline.contamination` for the rules).

    ``eval``: {name: path or data in memory}, a list of paths or ``NAME=PATH`` strings (a
    path alone is named after its file); JSON Lines, CSV, Parquet, ... (any format
    ``find`` reads). Each record is an item; ``fields`` (a list or "question,answer")
    names its texts, or ``eval_text`` its one text field (default "text"); ``eval_id``
    its id field (default: the record number). ``inputs``: anything :func:`find` reads
    (paths, directories, data in memory); ``text``, ``id`` and ``options`` (source and
    cleaning options) as :func:`find`'s, but for the cleaning preset, ``clean_preset``
    here (``clean`` is the clean copy, as on the command line).

    ``rule``: "ngram" (one shared word ``ngram``-gram) or "containment" (the share of
    the field's n-grams found in one training document >= ``containment``);
    ``require``: fields that must all match in the same document (default: any field).

    Writes ``report`` (JSON: per benchmark items, contaminated items, share, training
    documents, rule and parameters; the training counts), ``matches`` (a table by its
    suffix, .csv by default, "-": CSV to standard output: benchmark, item_id,
    training_id, rule, overlap, ngram),
    ``clean`` (the training files minus the documents that hold an item, in their
    format; ``clean_spans``: minus the matching spans only) and ``flag_eval`` (a folder:
    each evaluation file, named after its benchmark with its suffixes, with a
    ``neardup_contaminated`` field). ``engine="spark"``:
    the same report, matches and counts from Spark (:mod:`neardup.spark.contamination`),
    and ``clean`` a folder of part files as ``dedup --engine spark`` writes (a JSON Lines
    copy's parts, concatenated, are the local clean copy);
    ``memory_limit``: the local engine reads the training corpus a chunk at a time.
    Returns a :class:`~neardup.pipeline.contamination_run.ContaminationResult`.
    """
    from .pipeline import contamination as contam
    from .pipeline.contamination_run import contamination_local, flag_eval_sets, memory_floor

    if engine not in ENGINES:
        raise not_one_of("engine", engine, ENGINES)
    if rule not in contam.RULES:
        raise not_one_of("rule", rule, contam.RULES)
    if fields is not None and eval_text is not None:
        raise ValueError("give the evaluation texts as fields= (--eval-fields) or "
                         "eval_text= (--eval-text), not both")
    fields = _names(fields) if fields is not None else (eval_text or "text",)
    required = _names(require) if require else ()
    if isinstance(clean, str) and clean in PRESETS:
        raise ValueError(f"clean={clean!r} (--clean) is the path of the clean copy; for the "
                         f"cleaning preset give clean_preset={clean!r} (--clean-preset)")
    if clean_preset is not None:
        options["clean"] = clean_preset
    groups = split_options(column_names(options, text, id))
    if groups.items or groups.prepare.code is not None:
        raise ValueError("contamination compares word n-grams of prose: no --code or item "
                         "sets")
    settings = contam.Settings(rule, ngram, containment, tuple(fields), tuple(required),
                               groups.prepare.normalize)
    in_memory = frames.is_in_memory(inputs)
    limit = None if memory_limit is None else outofcore.parse_size(memory_limit)
    refusals.check(refusals.engine_of(engine, limit), "contamination", {
        "memory_limit": limit, "clean": None if clean is None else os.fspath(clean),
        "in_memory": in_memory or None})
    if limit is not None and limit < memory_floor():
        raise outofcore.MemoryLimitError(
            f"--memory-limit {outofcore.format_size(limit)} is below what a contamination "
            f"run needs: at least {outofcore.as_option(memory_floor())}")
    if clean_spans and clean is None:
        raise ValueError("clean_spans (--clean-spans) cuts spans in the clean copy: give "
                         "clean= (--clean OUT) too")
    if clean is not None and in_memory:
        raise ValueError("clean= (--clean) writes a copy of files; for data in memory, "
                         "drop the rows of result.matches' training_id")
    if clean_spans and len(groups.source.text_fields) != 1:
        raise ValueError("--clean-spans writes the text back into its field: give one "
                         "--text-field, not several joined")
    if clean_spans and settings.normalize not in _SPAN_CLEANINGS:
        raise ValueError("--clean-spans places words in the original bytes: it takes the "
                         "default cleaning only (no --clean or cleaning steps)")
    paths = [] if in_memory else as_paths(inputs)
    specs = [contam.parse_eval(e) for e in (eval.items() if isinstance(eval, dict)
                                            else [eval] if isinstance(eval, (str, os.PathLike))
                                            else eval)]
    if not specs:
        raise ValueError("contamination needs at least one evaluation set (--eval)")
    if matches == STDOUT:
        standard_output("the matches")  # closed (`>&-`): said before any reading
    refuse_touching_inputs(paths + [p for _, p in specs if not frames.is_in_memory(p)],
                           {"--report": report,
                            "--matches": None if matches == STDOUT else matches,
                            "--clean": clean,
                            "--flag-eval": flag_eval})
    if clean is not None:
        check_copy_target(paths, clean, groups.source.fmt)
    sets = [contam.read_eval(name, data, settings, id_field=eval_id)
            for name, data in specs]
    evals = contam.EvalSets(sets, settings)
    if engine == "spark":
        from .spark.contamination import contamination_sources

        result = contamination_sources(paths, evals, groups.source.given(), quiet=quiet,
                                       clean=clean, clean_spans=clean_spans)
    else:
        result = contamination_local(inputs if in_memory else paths, evals,
                                     groups.source.given(), quiet=quiet, memory_limit=limit,
                                     clean=clean, clean_spans=clean_spans)
    if report is not None:
        sinks.write_json(result.as_dict(), report)
    if matches == STDOUT:
        sinks.write_table_to(standard_output("the matches"), result.matches, "csv")
    elif matches is not None:
        sinks.write_tables([result.matches], matches, None, schema=result.matches.schema,
                           escape_formulas=True)
    if flag_eval is not None:
        flag_eval_sets(evals, result, flag_eval)
    return result


_SPAN_CLEANINGS = (prepare.PrepareOptions().normalize,)


def _names(value) -> tuple[str, ...]:
    """Field names from "a,b" or a sequence."""
    if isinstance(value, str):
        value = value.split(",")
    names = tuple(v.strip() for v in value)
    if not names or not all(names):
        raise ValueError(f"field names must not be empty, got {value!r}")
    return names



def evaluate(inputs, *, quiet: bool = True, sweep=False, curve_from: float | None = None,
             plot=None, json_path=None, truth: str = "exact", engine: str = "local",
             compare_sketches: bool = False, text: str | Sequence[str] | None = None,
             id: str | None = None, **options: Unpack[EvaluateOptions]) -> Evaluation:
    """LSH against the truth on the same input, in document pairs; see :mod:`neardup.evaluate`.

    ``truth``: "exact" (the exact join over distinct sets, weighted by their copies) or
    "brute" (the exact Jaccard of every document pair, for small inputs).
    ``compare_sketches``: also MinHash + LSH and SimHash side by side against the same
    truth (candidates, recall, precision, seconds each) in ``result.sketches``.

    ``engine="spark"``: :func:`neardup.spark.evaluate_sources`, the same counts; its truth
    is always a cartesian join of the documents (brute force, at most
    ``BRUTE_MAX_DOCUMENTS``), and it computes no S-curve, so no ``sweep``, ``plot`` or
    ``curve_from``. ``result.read_report`` says how the input was read.
    """
    from . import evaluate as evaluation

    if engine not in ENGINES:
        raise not_one_of("engine", engine, ENGINES)
    if truth not in evaluation.TRUTHS:
        raise ValueError(f"truth must be one of {evaluation.TRUTHS}, got {truth!r}")
    refuse_touching_inputs(as_paths(inputs), {"--plot": plot, "--json": json_path})
    options.pop("representative", None)
    groups = split_options(column_names(options, text, id))
    _refuse(engine, "evaluate", groups, sweep=sweep, plot=plot, curve_from=curve_from,
            compare_sketches=compare_sketches)
    if engine == "spark":
        from . import spark

        result = spark.evaluate_sources(as_paths(inputs), **_spark_keywords(groups))
    else:
        config = groups.config()
        if config.embeddings is not None:
            result = _evaluate_vectors(inputs, groups, config, quiet=quiet, sweep=sweep,
                                       curve_from=curve_from,
                                       compare_sketches=compare_sketches)
        else:
            documents, report = read_documents(as_paths(inputs), progress=not quiet,
                                               **groups.source.given())
            prepared = prepare.shingle_documents(documents.texts, documents.ids,
                                                 config.shingle_options(), groups.prepare,
                                                 StageTimer(quiet))
            result = evaluation.evaluate_sets(prepared.sets, config, sweep=sweep,
                                              curve_from=curve_from, truth=truth,
                                              compare_sketches=compare_sketches)
            result.read_report = report.as_dict()
    if plot is not None:
        evaluation.plot_curve(result, plot)
    if json_path is not None:
        sinks.write_json(result.as_dict(), json_path)
    return result


def _evaluate_vectors(inputs, groups: OptionGroups, config: FindConfig, *, quiet: bool,
                      sweep, curve_from, compare_sketches) -> Evaluation:
    """:func:`evaluate` of a run on embeddings: the vectors of ``inputs`` read as
    :func:`find` reads them, cosine LSH against all pairs
    (:func:`neardup.evaluate.evaluate_vectors`)."""
    from . import evaluate as evaluation
    from .sources import vectors

    if sweep or compare_sketches:
        raise ValueError("sweep and compare_sketches try MinHash and SimHash shapes; with "
                         "embeddings, give --bands/--rows or --hyperplanes to another run")
    paths = as_paths(inputs)
    field = vectors.read_with_records(config.embeddings, paths, groups.source.fmt)
    documents, report = read_documents(paths, progress=not quiet,
                                       extra_fields=[field] if field else [],
                                       text_optional=True, **groups.source.given())
    found, why, _ = vectors.of_documents(config.embeddings, documents, report.records_seen,
                                         fields=documents.fields)
    result = evaluation.evaluate_vectors(found, why, config, curve_from=curve_from)
    result.read_report = report.as_dict()
    return result


def tune(threshold: float, num_perm: int = 128, *, bands: int | None = None,
         rows: int | None = None, weights=lsh.DEFAULT_WEIGHTS,
         hyperplanes: int | None = None) -> lsh.BandPlan:
    """The b × r for ``threshold`` and K, with its S-curve (see :mod:`neardup.lsh`); K is
    checked as :func:`find` checks it. ``hyperplanes``: the plan of a run on embeddings
    instead, ``threshold`` a cosine, over that many sign bits (see :mod:`neardup.cosine`:
    the plan's threshold is the per-bit agreement p(t))."""
    if hyperplanes is not None:
        check_hyperplanes(hyperplanes)
        return cosine.band_plan(threshold, hyperplanes, weights=weights, bands=bands,
                                rows=rows)
    check_num_perm(num_perm)
    return lsh.choose_bands(threshold, num_perm, weights=weights, bands=bands, rows=rows)


def explain(inputs, doc_id: str, *, text: str | Sequence[str] | None = None,
            id: str | None = None, **options) -> dict:
    """What the document ``doc_id`` of ``inputs`` becomes under ``options``: the text
    after each cleaning step and its first 20 shingles as strings (no pipeline run);
    ``text`` and ``id`` name the columns, as in :func:`find`."""
    groups = split_options(column_names(options, text, id))
    config = groups.config()
    documents, _ = read_documents(expand_inputs(as_paths(inputs), groups.source.fmt),
                                  **groups.source.given())
    try:
        index = documents.ids.index(str(doc_id))
    except ValueError:
        raise ValueError(f"no document with id {doc_id!r} in the input") from None
    return prepare.shingle_strings(documents.texts[index], documents.ids[index],
                                   config.shingle_options(), groups.prepare)


def find_items(inputs, *, quiet: bool = True, items=None, items_field: str | None = None,
               transpose: bool = False, id_field: str | None = None,
               delimiter: str | None = None, **options) -> FindResult:
    """Near-duplicate sets among records that already are sets (see
    :mod:`neardup.sources.itemsets`).

    ``items=(user_col, item_col)`` for a CSV/TSV/Parquet table, or ``items_field`` for
    JSON Lines; ``options`` are :class:`~neardup.config.FindConfig` fields.
    """
    keywords = dict(options, items=items, items_field=items_field, transpose=transpose,
                    id_field=id_field, delimiter=delimiter)
    groups = split_options({k: v for k, v in keywords.items() if v is not None})
    return find_item_sets(inputs, groups, quiet=quiet)


def build_index(inputs, path, *, engine: str = "local", quiet: bool = True, text=None,
                id=None, memory_limit=None, work_dir=None, **options) -> Index | BloomIndex:
    """``neardup index build``: :meth:`neardup.Index.build` on ``engine`` ``local``
    (Bloom mode included), or on ``spark``: the executors read, shingle and sign as
    ``find --engine spark`` does and write the segments themselves
    (:mod:`neardup.spark.segments`; ``path`` on a file system the driver and executors
    share), the driver lists them. The rows, ids and options are the local build's (in
    several segments; after ``compact`` the same files). With ``bloom=True`` on Spark
    the executors set the Bloom filters and the driver ORs them
    (:mod:`neardup.spark.bloom`): the local Bloom build's files. Returns the
    :class:`~neardup.Index` (or :class:`~neardup.index.bloom.BloomIndex`); on Spark
    ``index.build_report`` holds the read report and the documents read and set aside.
    ``memory_limit``, ``work_dir`` (local engine): chunks sized for the limit, a limit
    below what the build needs refused naming its floor; the same files
    (:mod:`neardup.index.chunks`)."""
    from .index import Index, SegmentWriter
    from .index.bloom import BloomIndex, build_rate

    if engine not in ENGINES:
        raise not_one_of("engine", engine, ENGINES)
    remote.refuse_local_only("index build", path, remote.INDEX_WRITES)
    if not frames.is_in_memory(inputs):  # a remote folder or glob: its data files
        inputs = expand_inputs(as_paths(inputs), options.get("fmt", "auto"))
    if engine == "local":
        refusals.check(refusals.INDEX, "index build", {"embeddings": options.get("embeddings")})
        return Index.build(inputs, path, quiet=quiet, text=text, id=id,
                           memory_limit=memory_limit, work_dir=work_dir, **options)
    bloom, capacity = options.pop("bloom", False), options.pop("capacity", None)
    rate = build_rate(bloom, options.pop("fp", None), capacity)
    groups = split_options(column_names(options, text, id))
    in_memory = frames.is_in_memory(inputs)
    _refuse(engine, "index build", groups, memory_limit=memory_limit, in_memory=in_memory,
            items=bool(groups.items))
    refuse_touching_inputs(as_paths(inputs), {"--out": path})
    keywords = _spark_keywords(groups)
    from . import spark

    done = {}

    def fill(stage, manifest) -> int:
        writer = SegmentWriter.of(stage, manifest)
        done.update(spark.index_sources(inputs, writer, quiet=quiet, **keywords))
        writer.append(manifest, done["entries"], done["names"])
        return done["set_aside"]

    def fill_filters(size) -> list:
        done.update(spark.index_sources(inputs, size, quiet=quiet, bloom=True, **keywords))
        return done["filters"]

    if rate is not None:
        index = BloomIndex.build_by(path, groups.prepare, groups.config(), fill_filters,
                                    fp=rate, capacity=capacity)
    else:
        index = Index.build_by(path, groups.prepare, groups.config(), fill)
    index.build_report = {k: done[k] for k in ("documents", "set_aside", "read_report")}
    return index


def _refuse(engine: str, command: str, groups: OptionGroups, memory_limit=None,
            **given) -> None:
    """What ``engine`` (under ``memory_limit``) refuses of ``command``'s options, checked
    in :data:`neardup.pipeline.refusals.REFUSALS` before any work: ``given`` are the entry
    point's keywords, then the similarity options as given, their defaults and the text
    options (the config is built later, once)."""
    options = {**given, "memory_limit": memory_limit, **groups.similarity}
    table_engine = refusals.engine_of(engine, memory_limit, given.get("against"))
    refusals.check(table_engine, command, options, FindConfig, groups.prepare)
    if table_engine == refusals.SPARK and given.get("against") is not None:
        refusals.check(refusals.INDEX, command, options, FindConfig, groups.prepare)


def _spark_against(against, groups: OptionGroups, outputs: dict, force: bool):
    """(the probe the Spark engine queries the index ``against`` with, or None; the option
    groups, the index's where it fixes them): the index opened and checked here, its
    files and the query's options, before Spark starts (see :mod:`neardup.spark.against`)."""
    if against is None:
        return None, groups
    if groups.items:
        raise ValueError("--against runs on documents: no item sets")
    refuse_touching_inputs([against], outputs)
    from .index import bloom
    from .index.against import query_groups
    from .index.query import IndexProbe

    if bloom.is_bloom(against):
        raise ValueError(f"{against} is a Bloom index: it is queried on the local engine, "
                         f"not on Spark (its filters are read whole by one process)")

    index, groups = query_groups(against, groups, force=force)
    return IndexProbe.of(index), groups


def _spark_keywords(groups: OptionGroups) -> dict:
    """The keywords of the Spark engine's entry points: the source group as given, the
    text group as a normalizer and a tokenizer, the similarity keywords."""
    prep = groups.prepare
    tokenize = prep.code_tokenizer(prep.code) if prep.code is not None else None
    return {**groups.source.given(), "normalize": prep.normalize, "tokenize": tokenize,
            **groups.similarity}

"""The library's entry points; the CLI is a thin layer over these (``neardup find`` ≡ ``find``)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from . import lsh, sinks
from .options import EvaluateOptions, FindOptions
from .pipeline import outofcore
from .sources import frames, itemsets
from .text import prepare

if TYPE_CHECKING:  # PEP 692: typed **options (typing.Unpack from Python 3.11)
    from typing_extensions import Unpack
from ._core.progress import StageTimer
from .pipeline import FindConfig, FindResult, find_sets, sign
from .shingling import set_fingerprints
from .sinks.staging import refuse_touching_inputs
from .sources import (
    as_text,
    check_copy_target,
    read_document_chunks,
    read_documents,
    write_deduplicated,
)

SOURCE_OPTIONS = ("fmt", "text_fields", "id_field", "include", "exclude", "delimiter",
                  "encoding", "respect_ignore")
ENGINES = ("local", "spark")
STDOUT = "-"


def find(inputs, *, out=None, output_format: str = "csv", quiet: bool = True,
         representative_field: str | None = None, report=None, engine: str = "local",
         memory_limit=None, work_dir=None, escape_formulas: bool = True,
         text: str | Sequence[str] | None = None, id: str | None = None,
         against=None, force: bool = False, **options: Unpack[FindOptions]):
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
    lands in ``result.counts["report"]``.

    ``out="-"`` writes the pairs to standard output (csv or jsonl) instead of a folder.
    ``out`` is written all at once with a manifest (see :func:`neardup.sinks.write_folder`);
    ``escape_formulas``: CSV string cells beginning with =, +, -, @, tab or CR get a
    leading ' (OWASP); False writes them raw. JSONL and Parquet are always raw.

    ``engine="spark"`` runs the same stages on Spark (:func:`neardup.spark.find_sources`)
    and returns a :class:`~neardup.spark.SparkFindResult` (DataFrames).

    ``memory_limit`` (bytes, or a size such as "4G"): read, shingle and sign a chunk
    of documents at a time and keep shingle sets, signatures and band keys in files
    under ``work_dir`` (default: the system's temporary directory; removed after the
    run); see :mod:`neardup.pipeline.outofcore`. Same pairs and clusters as without it;
    method "auto" becomes "lsh"; no ``report`` (it needs the texts: run
    ``neardup report`` on ``out`` instead) and no item sets.

    ``against``: the path of an index (:class:`neardup.Index`): every pair new × indexed
    and new × new, as a batch run over both would find them
    (:mod:`neardup.index.query`); options the index fixes take its values, and one given
    with another value is refused. ``force``: run at a threshold where the index's
    bands find fewer than half of the pairs (P(t) < 0.5).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    _column_names(options, text, id)
    in_memory = frames.is_in_memory(inputs)
    refuse_touching_inputs([] if in_memory else _as_list(inputs),
                           {"--out": out, "--report": report, "--work-dir": work_dir})
    if in_memory and (engine == "spark" or memory_limit is not None):
        raise ValueError("data already in memory runs on the local engine without "
                         "memory_limit (for a Spark DataFrame: neardup.spark.find)")
    if engine == "spark":
        if against is not None:
            raise ValueError("--against (an index) runs on the local engine, not on Spark")
        if representative_field is not None or report is not None or memory_limit is not None:
            raise ValueError("--representative-field, --report and --memory-limit are not "
                             "supported by the Spark engine (write the result with --out, "
                             "then neardup report; Spark spills by itself)")
        from . import spark

        prep, tokenize = _spark_text_options(options)
        return spark.find_sources(inputs, out=out, output_format=output_format,
                                  normalize=prep.normalize, tokenize=tokenize,
                                  escape_formulas=escape_formulas,
                                  **_code_defaults(prep, options))
    documents = None
    if against is not None:
        if memory_limit is not None or report is not None or "items" in options \
                or "items_field" in options:
            raise ValueError("--against runs in memory on documents: no --memory-limit, "
                             "--report or item sets")
        refuse_touching_inputs([against], {"--out": out, "--report": report})
        result = _find_against(inputs, against, quiet=quiet, force=force,
                               representative_field=representative_field, **options)[1]
    elif memory_limit is not None:
        limit = outofcore.parse_size(memory_limit)
        if "items" in options or "items_field" in options:
            raise ValueError("memory_limit applies to documents; item sets are read whole")
        if report is not None:
            raise ValueError("report needs every text in memory; with memory_limit write "
                             "--out and run `neardup report` on it")
        result = _find_chunked(inputs, quiet=quiet, representative_field=representative_field,
                               limit=limit, work_dir=work_dir, **options)
    elif "items" in options or "items_field" in options:
        result = find_items(inputs, quiet=quiet, **options)
    else:
        result, documents = _find(inputs, quiet=quiet,
                                  representative_field=representative_field, **options)
    if out == STDOUT:  # the pairs, to standard output; everything else stays on stderr
        sinks.write_pairs_to(sys.stdout.buffer, result, output_format,
                             escape_formulas=escape_formulas)
    elif out is not None:
        sinks.write_result(result, out, output_format, escape_formulas=escape_formulas)
    if report is not None:
        from .report import write_report  # matplotlib and difflib only when asked

        drawn = write_report(result, report,
                             texts=documents.texts if documents is not None else None)
        result.counts["report"] = {k: v for k, v in drawn.items() if k != "notes"}
    return result


def dedup(inputs, out=None, *, quiet: bool = True, representative_field: str | None = None,
          text: str | Sequence[str] | None = None, id: str | None = None,
          against=None, add: bool = False, force: bool = False,
          **options: Unpack[FindOptions]):
    """Write ``inputs`` minus every document that has a near-duplicate kept in its place.

    Files: the copy goes to ``out`` in the input's format and the FindResult is returned
    (its ``counts["dedup"]`` says what was written). ``out`` is compressed as its name
    says (``out.jsonl.gz``); ``out="-"`` writes the kept records of one file input to
    standard output, uncompressed (a directory input is refused: its copy is a folder).
    Data in memory (a DataFrame, a table, a list; see :func:`find`): the same kind of
    object minus the removed rows is returned, and ``out`` is not used; rows without
    text are kept as they were.

    ``against``: an index (see :func:`find`): the new documents minus those that
    duplicate an indexed document or are not kept among themselves; ``add=True`` adds
    the kept ones to the index in the same step, holding its write lock throughout.
    """
    _column_names(options, text, id)
    if against is not None:
        return _dedup_against(inputs, out, against, add=add, force=force, quiet=quiet,
                              representative_field=representative_field, **options)
    if add:
        raise ValueError("add=True (--add) needs against= (the index to add to)")
    if frames.is_in_memory(inputs):
        if out is not None:
            raise ValueError("dedup of data in memory returns the deduplicated data; "
                             "out= is for files")
        result, documents = _find(inputs, quiet=quiet,
                                  representative_field=representative_field, **options)
        rows = result.read_report["records_seen"]
        return frames.keep_rows(inputs, frames.kept_row_mask(documents, result.representative,
                                                             rows))
    if out is None:
        raise ValueError("dedup of files needs out= (the path of the copy)")
    refuse_touching_inputs(_as_list(inputs), {"--out": out})
    check_copy_target(_as_list(inputs), out, options.get("fmt", "auto"))  # before reading
    result, documents = _find(inputs, quiet=quiet, representative_field=representative_field,
                              **options)
    written = write_deduplicated(documents, result.representative, _as_list(inputs), out)
    result.counts["dedup"] = written
    return result


def evaluate(inputs, *, quiet: bool = True, sweep=False, curve_from: float | None = None,
             plot=None, json_path=None, truth: str = "exact", engine: str = "local",
             compare_sketches: bool = False, **options: Unpack[EvaluateOptions]):
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
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if truth not in evaluation.TRUTHS:
        raise ValueError(f"truth must be one of {evaluation.TRUTHS}, got {truth!r}")
    refuse_touching_inputs(_as_list(inputs), {"--plot": plot, "--json": json_path})

    if engine == "spark":
        if sweep or plot is not None or curve_from is not None:
            raise ValueError("--sweep, --plot and --curve-from are not supported by the Spark "
                             "engine, which computes no S-curve; use the local engine for them")
        if compare_sketches:
            raise ValueError("--compare-sketches is not supported by the Spark engine, which "
                             "runs one sketch a run; use the local engine for it")
        from . import spark

        prep, tokenize = _spark_text_options(options)
        options.pop("representative", None)
        result = spark.evaluate_sources(_as_list(inputs), normalize=prep.normalize,
                                        tokenize=tokenize, **_code_defaults(prep, options))
    else:
        source_options = {k: options.pop(k) for k in SOURCE_OPTIONS if k in options}
        prep = prepare.PrepareOptions.pop_from(options)
        options.pop("representative", None)
        config = FindConfig.from_options(**_code_defaults(prep, options))
        documents, report = read_documents(_as_list(inputs), progress=not quiet,
                                           **source_options)
        prepared = prepare.shingle_documents(documents.texts, documents.ids,
                                             config.shingle_options(), prep, StageTimer(quiet))
        result = evaluation.evaluate_sets(prepared.sets, config, sweep=sweep,
                                          curve_from=curve_from, truth=truth,
                                          compare_sketches=compare_sketches)
        result.read_report = report.as_dict()
    if plot is not None:
        evaluation.plot_curve(result, plot)
    if json_path is not None:
        sinks.write_json(result.as_dict(), json_path)
    return result


def tune(threshold: float, num_perm: int = 128, *, bands: int | None = None,
         rows: int | None = None, weights=lsh.DEFAULT_WEIGHTS) -> lsh.BandPlan:
    """The b × r for ``threshold`` and K, with its S-curve (see :mod:`neardup.lsh`)."""
    return lsh.choose_bands(threshold, num_perm, weights=weights, bands=bands, rows=rows)


def _as_list(inputs) -> list[str]:
    if isinstance(inputs, (str, os.PathLike)):
        return [os.fspath(inputs)]
    return [os.fspath(x) for x in inputs]


def explain(inputs, doc_id: str, **options) -> dict:
    """What the document ``doc_id`` of ``inputs`` becomes under ``options``: the text
    after each cleaning step and its first 20 shingles as strings (no pipeline run)."""
    source_options = {k: options.pop(k) for k in SOURCE_OPTIONS if k in options}
    prep = prepare.PrepareOptions.pop_from(options)
    config = FindConfig.from_options(**_code_defaults(prep, options))
    documents, _ = read_documents(_as_list(inputs), **source_options)
    try:
        index = documents.ids.index(str(doc_id))
    except ValueError:
        raise ValueError(f"no document with id {doc_id!r} in the input") from None
    return prepare.shingle_strings(documents.texts[index], documents.ids[index],
                                   config.shingle_options(), prep)


def find_items(inputs, *, quiet: bool = True, items=None, items_field: str | None = None,
               transpose: bool = False, id_field: str | None = None,
               delimiter: str | None = None, **options) -> FindResult:
    """Near-duplicate sets among records that already are sets (see
    :mod:`neardup.sources.itemsets`).

    ``items=(user_col, item_col)`` for a CSV/TSV/Parquet table, or ``items_field`` for
    JSON Lines; ``options`` are :class:`~neardup.config.FindConfig` fields.
    """
    if (items is None) == (items_field is None):
        raise ValueError("give one of items=(user_col, item_col) or items_field=")
    config = FindConfig.from_options(**options)
    paths = _as_list(inputs)
    if len(paths) != 1:
        raise ValueError(f"item sets read one file, got {len(paths)}")
    if items is not None:
        if isinstance(items, str):
            items = tuple(items.split(","))
        if len(items) != 2 or not all(items):
            raise ValueError(f"items must be two column names (user, item), got {items!r}")
        sets, ids, report = itemsets.read_item_pairs(paths[0], user_col=items[0],
                                                     item_col=items[1], delimiter=delimiter,
                                                     transpose=transpose)
    else:
        if transpose:
            raise ValueError("transpose needs items=(user_col, item_col)")
        sets, ids, report = itemsets.read_item_lists(paths[0], items_field=items_field,
                                                     id_field=id_field)
    result = find_sets(sets, ids, config, timer=StageTimer(quiet))
    result.read_report = report
    return result


def _code_defaults(prep, options: dict) -> dict:
    if prep.code is not None:  # code is tokens: word shingles, 5 tokens unless said
        options["shingle_kind"] = "word"
        options.setdefault("shingle_size", prepare.CODE_SHINGLE_SIZE)
    return options


def _find_against(inputs, against, *, quiet, representative_field, force, **options):
    """(index, result against it, the new documents' own result, documents)."""
    from .index import Index
    from .index import query as index_query

    index = Index(against)
    source_options = {k: options.pop(k) for k in SOURCE_OPTIONS if k in options}
    options = index.query_options(options, force=force)
    new, documents = _find(inputs, quiet=quiet, representative_field=representative_field,
                           keep_arrays=True, **source_options, **options)
    return index, index_query.against(index, new), new, documents


def _dedup_against(inputs, out, against, *, add, force, quiet, representative_field,
                   **options):
    """:func:`dedup` against an index, the kept documents added to it if ``add``."""
    from contextlib import nullcontext

    from .index import query as index_query
    from .index.store import WriteLock, read_manifest

    read_manifest(against)  # not an index: said before anything is read or locked
    in_memory = frames.is_in_memory(inputs)
    if in_memory and out is not None:
        raise ValueError("dedup of data in memory returns the deduplicated data; "
                         "out= is for files")
    if not in_memory:
        if out is None:
            raise ValueError("dedup of files needs out= (the path of the copy)")
        refuse_touching_inputs([*_as_list(inputs), against], {"--out": out})
        check_copy_target(_as_list(inputs), out, options.get("fmt", "auto"))
    with WriteLock(against) if add else nullcontext():  # no add in between: seen is seen
        index, result, new, documents = _find_against(
            inputs, against, quiet=quiet, force=force,
            representative_field=representative_field, **options)
        if in_memory:
            rows = result.read_report["records_seen"]
            kept = frames.keep_rows(inputs, frames.kept_row_mask(documents, result.kept_new,
                                                                 rows))
        else:
            result.counts["dedup"] = write_deduplicated(documents, result.kept_new,
                                                        _as_list(inputs), out)
        if add:
            result.counts["index"]["added"] = index_query.add_kept(index, new, result)
    return kept if in_memory else result


def _find(inputs, *, quiet, representative_field, keep_arrays=False, **options):
    source_options = {k: options.pop(k) for k in SOURCE_OPTIONS if k in options}
    prep = prepare.PrepareOptions.pop_from(options)
    if representative_field is not None:
        options.setdefault("representative", "field")
    config = FindConfig.from_options(**_code_defaults(prep, options))  # checked before reading
    if config.representative == "field" and representative_field is None:
        raise ValueError("representative='field' needs representative_field")
    if representative_field is not None and config.representative != "field":
        raise ValueError(f"representative_field ranks documents for representative='field', "
                         f"not {config.representative!r}")
    key = None
    extra = [representative_field] if representative_field not in (None, "id") else []
    if frames.is_in_memory(inputs):
        documents, report, fields = frames.read_frame(
            inputs, text_fields=source_options.get("text_fields", ("text",)),
            id_field=source_options.get("id_field"), extra_fields=extra)
        if extra:
            key = field_ranks(list(fields[representative_field]), representative_field)
    else:
        documents, report = read_documents(_as_list(inputs), progress=not quiet,
                                           extra_fields=extra, **source_options)
    if representative_field is not None and key is None:
        key = _field_values(documents, representative_field)
    texts = documents.texts
    if key is None:
        key = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    timer = StageTimer(quiet)
    with timer.stage("shingle", f"{len(texts):,} documents"):
        prepared = prepare.shingle_documents(texts, documents.ids, config.shingle_options(),
                                             prep, timer)
    aside = {"generated": prepared.generated} if prep.generated == "exclude" else None
    result = find_sets(prepared.sets, documents.ids, config, timer=timer,
                       representative_key=key, set_aside=aside, keep_arrays=keep_arrays)
    if prep.generated == "flag":
        result.status[prepared.generated & (result.status == "ok")] = "ok (generated)"
    result.counts.update(prepared.counts)
    result.read_report = report.as_dict()
    # where the documents came from, so a report can re-read a directory's files
    result.read_report["inputs"] = [
        {"path": src.given if src.given in ("-", frames.MEMORY) else os.path.abspath(src.given),
         "format": src.fmt, "name": src.name, "prefixed": len(documents.inputs) > 1}
        for src in documents.inputs]
    result.previews = _line_previews(result, documents)
    return result, documents


PREVIEW_CLUSTERS = 100  # the largest clusters whose members of a line file get a preview
PREVIEW_MEMBERS = 6  # per cluster: its first members in input order (and the one kept)
PREVIEW_CHARS = 80


def _line_previews(result, documents) -> dict[int, str]:
    """{document: its text shortened to ``PREVIEW_CHARS``} for the documents of line
    inputs (a line file, standard input) that a summary of the largest clusters names:
    in the ``PREVIEW_CLUSTERS`` largest clusters (size descending, then first document),
    the kept one and the first ``PREVIEW_MEMBERS``. A line file's ids are line numbers,
    which say nothing by themselves; the texts are not kept in the result, so these few
    are, at most PREVIEW_CLUSTERS * (PREVIEW_MEMBERS + 1) of them."""
    lines = [k for k, src in enumerate(documents.inputs) if src.fmt == "lines"]
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
            previews[d] = _shorten(documents.texts[d])
    return previews


def _shorten(text: str) -> str:
    """A line as one short printable line: whitespace runs and control characters one
    space, at most PREVIEW_CHARS characters ("…" where cut)."""
    text = " ".join("".join(c if c.isprintable() else " " for c in text[:4 * PREVIEW_CHARS])
                    .split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"


def _spark_text_options(options: dict):
    """The text options taken out of ``options``, and the tokenizer, as Spark runs them."""
    prep = prepare.PrepareOptions.pop_from(options)
    if prep.code == "auto" or prep.generated != "keep":
        raise ValueError("the Spark engine takes --code LANG (one language), not --code "
                         "auto or --generated; use the local engine for those")
    return prep, prep.code_tokenizer(prep.code) if prep.code is not None else None


def _column_names(options: dict, text, id) -> None:
    """``text``/``id`` are the short names of ``text_fields``/``id_field``."""
    if text is not None:
        if "text_fields" in options:
            raise ValueError("give text= or text_fields=, not both")
        options["text_fields"] = (text,) if isinstance(text, str) else tuple(text)
    if id is not None:
        if "id_field" in options:
            raise ValueError("give id= or id_field=, not both")
        options["id_field"] = id


def _find_chunked(inputs, *, quiet, representative_field, limit: int, work_dir, **options):
    """:func:`_find` a chunk at a time under ``limit`` bytes (see
    :mod:`neardup.pipeline.outofcore`)."""
    source_options = {k: options.pop(k) for k in SOURCE_OPTIONS if k in options}
    prep = prepare.PrepareOptions.pop_from(options)
    if representative_field is not None:
        options.setdefault("representative", "field")
    config = FindConfig.from_options(**_code_defaults(prep, options))
    if config.representative == "field" and representative_field not in ("id", None):
        raise ValueError(f"with memory_limit the representative field can only be 'id', "
                         f"got {representative_field!r}")
    if config.representative == "field" and representative_field is None:
        raise ValueError("representative='field' needs representative_field")
    if config.method == "exact":
        raise ValueError("method 'exact' holds every set in memory; use 'lsh' or 'auto' "
                         "with memory_limit")
    if config.measure != "jaccard":
        raise ValueError(f"measure {config.measure!r} holds every set in memory (its exact "
                         f"join, and with method 'lsh' its size classes); leave out "
                         f"memory_limit")
    if config.sketch != "minhash":
        raise ValueError(f"sketch {config.sketch!r} is not supported with memory_limit "
                         f"(the spilled files hold MinHash signatures)")
    plan = config.band_plan()
    chunking = outofcore.ChunkPlan.for_run(limit, config, _as_list(inputs), source_options)
    chunks, report, sources = read_document_chunks(
        _as_list(inputs), chunk_chars=chunking.chunk_chars, chunk_docs=chunking.chunk_docs,
        progress=not quiet, **source_options)
    timer = StageTimer(quiet)
    chunk_timer = StageTimer(quiet=True)  # per-chunk stages add up without a line each
    ids: list[str] = []
    lengths, generated, counts = [], [], {}
    with outofcore.WorkDirectory(work_dir) as directory:
        writer = outofcore.SpillWriter(directory, plan.bands, plan.rows)
        while True:
            with chunk_timer.stage("read"):
                chunk = next(chunks, None)
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
            ids.extend(chunk.ids)
            lengths.append(np.fromiter(map(len, chunk.texts), dtype=np.int64,
                                       count=len(chunk.texts)))
            generated.append(prepared.generated)
            _add_counts(counts, prepared.counts)
            if not quiet:
                print(f"[neardup] chunk of {len(chunk):,} documents read, shingled and "
                      f"signed ({len(ids):,} so far)", file=sys.stderr, flush=True)
            del chunk, prepared, signatures, prints  # the texts go here
        spilled = writer.finish()
        timer.seconds.update(chunk_timer.seconds)
        key = np.concatenate(lengths) if lengths else np.empty(0, dtype=np.int64)
        if representative_field == "id":
            key = np.asarray(ids)
        generated = np.concatenate(generated) if generated else np.empty(0, dtype=bool)
        aside = {"generated": generated} if prep.generated == "exclude" else None
        result = find_sets(spilled.sets, ids, config, timer=timer, representative_key=key,
                           set_aside=aside, spilled=spilled)
        del spilled
    if prep.generated == "flag":
        result.status[generated & (result.status == "ok")] = "ok (generated)"
    result.counts.update(counts)
    result.counts["chunks"] = {**chunking.as_dict(), "chunks_read": len(lengths)}
    result.read_report = report.as_dict()
    result.read_report["inputs"] = [
        {"path": src.given if src.given == "-" else os.path.abspath(src.given),
         "format": src.fmt, "name": src.name, "prefixed": len(sources) > 1}
        for src in sources]
    return result


def _add_counts(total: dict, counts: dict) -> None:
    """Add a chunk's counts (numbers, or dicts of numbers) into ``total``."""
    for key, value in counts.items():
        if isinstance(value, dict):
            _add_counts(total.setdefault(key, {}), value)
        else:
            total[key] = total.get(key, 0) + value


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



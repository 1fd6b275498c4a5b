"""What a ``find`` counts: the keys of ``result.counts`` (the ``"counts"`` of a results
folder's ``summary.json``, what ``neardup find`` prints), their order and their meaning.

This module is the only place the keys are written: every engine measures its
quantities and hands them to :func:`find_counts` (the local engine, in memory and
under ``--memory-limit``, and the Spark engine), a run against an index to
:func:`against_index`, shingling to :func:`shingling_counts`, and what a run adds
afterwards (a dedup copy, a report, the chunk plan) goes in with :func:`add`. So one
run's counts have the same keys in the same order whichever engine ran it, and
``tests/test_architecture.py`` fails if a count key builds a dict anywhere else.

A run over units inside documents (``dedup --unit``, ``repeats``) counts its units
with :func:`unit_counts` or :func:`span_counts` and :func:`unit_run_counts`
(:data:`UNIT_COUNTS`). The summary a ``dedup`` or ``repeats`` writes with ``--summary``
(:data:`SUMMARY`) is built here too: its ``records`` (:func:`records`, what became of
every record read) and the run's counts, options and seconds around them
(:func:`run_summary`).

All document counts are of documents as read (one a record with a text), in the
input's order; pair counts are of document pairs, counted from the sizes of the
identical groups, never by listing (see :mod:`neardup.pairs`).
"""

from __future__ import annotations

from collections.abc import Mapping

# the counts of every find, in this order
FIND_COUNTS: dict[str, str] = {
    "documents": "documents read",
    "too_few_shingles": "documents with fewer than min_shingles shingles: in no pair, each "
                        "its own cluster (status 'too few shingles')",
    "shingled": "documents with at least min_shingles shingles (not set aside): those "
                "compared",
    "shingles": "the shingles of the shingled documents, added up (a set counts each "
                "distinct shingle once)",
    "distinct_sets": "distinct shingle sets among the shingled documents: identical sets "
                     "are grouped exactly before any sketch, and only one of each is "
                     "sketched and compared",
    "identical_copies": "shingled documents whose set equals an earlier one's "
                        "(shingled - distinct_sets)",
    "candidates": "pairs of distinct sets the search proposed (LSH buckets, the SimHash "
                  "search or the exact join), before verification",
    "pairs": "document pairs reported: identical_pairs + near_duplicate_pairs (with "
             "verification every one has similarity >= threshold)",
    "identical_pairs": "document pairs inside identical groups (Jaccard 1): g(g - 1)/2 "
                       "for a group of g",
    "near_duplicate_pairs": "document pairs between different sets: g_A * g_B for each "
                            "pair of distinct sets (A, B)",
    "set_pairs": "pairs of distinct sets reported (each stands for g_A * g_B document "
                 "pairs)",
    "clusters": "clusters of two or more documents",
    "documents_in_clusters": "documents in those clusters",
    "removable": "documents a dedup removes: those not kept as their cluster's "
                 "representative",
    "min_member_similarity": "with clusters 'center' only: the lowest exact similarity of "
                             "a removed document to the one kept for it (null: no "
                             "cluster)",
    "buckets": "LSH's oversized buckets: buckets_over_limit, largest_bucket, pairs_avoided "
               "(zeros when LSH did not run)",
    "simhash": "with sketch 'simhash' only: the Hamming search's distance, blocks, block "
               "pairs compared and largest block bucket",
    "containment_search": "with measure 'containment' and method 'lsh' only: the size "
                          "classes and how each pair of classes was searched",
    "method": "how candidates were found: lsh, exact or simhash",
    "method_choice": "the method and why (chosen by the user, by the planner with its "
                     "estimates, or forced by the run)",
    "vectors": "with embeddings only: where the vectors came from, their dimensions, the "
               "vectors read and those set aside by reason (read = usable + skipped), and "
               "the hyperplane bits banded (then 'shingled' counts the documents compared)",
}

# what shingling counts, after the find counts, where it applies
SHINGLING_COUNTS: dict[str, str] = {
    "languages": "with --code: documents per language tokenized",
    "unknown_language": "with --code: documents no lexer claimed (shingled as words)",
    "char_fallback": "word shingles: documents mostly in scripts without spaces, shingled "
                     "by characters instead",
    "generated_excluded": "--generated exclude: documents found generated, set aside",
    "generated_flagged": "--generated flag: documents found generated, flagged in their "
                         "status",
}

# what a run adds after that, in the order it adds them
RUN_COUNTS: dict[str, str] = {
    "chunks": "under --memory-limit: the chunk plan and the chunks read",
    "new_documents": "against an index: the new documents (numbered first; the indexed "
                     "ones of the result follow)",
    "index": "against an index: what the query read and found there",
    "dedup": "dedup: what the copy holds (records written and removed, its path)",
    "explain": "dedup --explain: the file naming each removed document's match",
    "report": "--report: what the HTML report drew",
}

COUNTS: dict[str, str] = {**FIND_COUNTS, **SHINGLING_COUNTS, **RUN_COUNTS}
NOT_CENTER = object()  # min_member_similarity's default: not a "center" run

# the "index" section of a run against a full index, in this order
INDEX_COUNTS: dict[str, str] = {
    "path": "the index",
    "documents": "documents in the index",
    "segments": "its segments",
    "candidates": "(new set, indexed document) candidates the index's buckets gave",
    "documents_listed": "indexed documents in the result (those that were candidates)",
    "documents_in_pairs": "indexed documents in a verified pair",
    "pairs_with_index": "document pairs new x indexed",
    "identical_pairs_with_index": "of those, pairs of equal sets",
    "new_in_clusters_with_index": "new documents in a cluster that holds an indexed one",
}


def pair_counts(identical_pairs: int, near_duplicate_pairs: int, set_pairs: int) -> dict:
    """The four pair counts (pairs, identical_pairs, near_duplicate_pairs, set_pairs)."""
    return {"pairs": int(identical_pairs) + int(near_duplicate_pairs),
            "identical_pairs": int(identical_pairs),
            "near_duplicate_pairs": int(near_duplicate_pairs), "set_pairs": int(set_pairs)}


def search_counts(buckets, simhash=None, containment_search: dict | None = None) -> dict:
    """The candidate search's counts: ``buckets`` (:class:`neardup.lsh.CandidateStats`),
    ``simhash`` (:class:`neardup.simhash.SearchStats`, when it ran) and
    ``containment_search`` (a dict, when the size classes ran)."""
    return {"buckets": buckets.as_dict(),
            **({"simhash": simhash.as_dict()} if simhash is not None else {}),
            **({"containment_search": containment_search}
               if containment_search is not None else {})}


def find_counts(*, documents: int, shingled: int, shingles: int, identical_copies: int,
                candidates: int, pairs: Mapping, clusters: int, documents_in_clusters: int,
                removable: int, search: Mapping, method: str, method_choice: dict,
                set_aside: int = 0, min_member_similarity=NOT_CENTER,
                vectors: dict | None = None) -> dict:
    """The counts of a find, from what an engine measured (see :data:`FIND_COUNTS`).

    ``set_aside``: documents kept out of every pair for another reason (``--generated
    exclude``), counted neither as shingled nor as too few shingles; ``pairs``: from
    :func:`pair_counts`; ``search``: from :func:`search_counts`;
    ``min_member_similarity``: given (a float, or None for no cluster) by a run with
    clusters "center" only; ``vectors``: from :func:`vector_counts` (embeddings)."""
    center = ({} if min_member_similarity is NOT_CENTER
              else {"min_member_similarity": min_member_similarity})
    return {
        "documents": int(documents),
        "too_few_shingles": int(documents) - int(shingled) - int(set_aside),
        "shingled": int(shingled),
        "shingles": int(shingles),
        "distinct_sets": int(shingled) - int(identical_copies),
        "identical_copies": int(identical_copies),
        "candidates": int(candidates),
        **pair_counts(pairs["identical_pairs"], pairs["near_duplicate_pairs"],
                      pairs["set_pairs"]),
        "clusters": int(clusters),
        "documents_in_clusters": int(documents_in_clusters),
        "removable": int(removable),
        **center,
        **search,
        "method": method,
        "method_choice": method_choice,
        **({"vectors": vectors} if vectors is not None else {}),
    }


def vector_counts(*, source: str, dimensions: int, reasons: Mapping, usable: int,
                  hyperplanes: int, bands: int, rows: int) -> dict:
    """The ``vectors`` count of a run on embeddings: ``reasons`` maps each reason a
    vector was set aside for to how many; every vector read is usable or skipped."""
    skipped = {str(reason): int(count) for reason, count in reasons.items() if count}
    return {"source": str(source), "dimensions": int(dimensions),
            "read": int(usable) + sum(skipped.values()), "usable": int(usable),
            "skipped": sum(skipped.values()), "skipped_by_reason": skipped,
            "hyperplanes": int(hyperplanes), "bands": int(bands), "rows": int(rows)}


def cluster_counts(cluster_sizes) -> dict:
    """(clusters, documents_in_clusters) keywords of :func:`find_counts` from the size of
    each cluster label (int[n], as ``np.bincount(labels)``)."""
    big = cluster_sizes[cluster_sizes > 1]
    return {"clusters": int(big.size), "documents_in_clusters": int(big.sum())}


def shingling_counts(*, languages: dict | None = None, unknown_language: int | None = None,
                     char_fallback: int | None = None, generated: int | None = None,
                     generated_mode: str = "exclude") -> dict:
    """Shingling's counts (:data:`SHINGLING_COUNTS`), each where it was counted (None:
    not counted); ``generated``: the documents found generated, under ``generated_mode``
    ("exclude" or "flag")."""
    out = {}
    if languages is not None:
        out["languages"] = languages
    if unknown_language is not None:
        out["unknown_language"] = int(unknown_language)
    if char_fallback is not None:
        out["char_fallback"] = int(char_fallback)
    if generated is not None:
        key = "generated_excluded" if generated_mode == "exclude" else "generated_flagged"
        out[key] = int(generated)
    return out


def index_section(*, path: str, documents: int, segments: int, candidates: int,
                  documents_listed: int, documents_in_pairs: int, pairs_with_index: int,
                  identical_pairs_with_index: int, new_in_clusters_with_index: int) -> dict:
    """The ``index`` count of a run against a full index (:data:`INDEX_COUNTS`)."""
    return {"path": str(path), "documents": int(documents), "segments": int(segments),
            "candidates": int(candidates), "documents_listed": int(documents_listed),
            "documents_in_pairs": int(documents_in_pairs),
            "pairs_with_index": int(pairs_with_index),
            "identical_pairs_with_index": int(identical_pairs_with_index),
            "new_in_clusters_with_index": int(new_in_clusters_with_index)}


def against_index(new_counts: Mapping, *, removable: int, new_documents: int, index: dict,
                  pairs: Mapping | None = None, candidates: int | None = None,
                  clusters: int | None = None,
                  documents_in_clusters: int | None = None) -> dict:
    """The counts of a run against an index: the new documents' own counts
    (``new_counts``, from :func:`find_counts`) with those the index changes, in their
    places (a Bloom index changes only ``removable``), then ``new_documents`` and
    ``index`` (:func:`index_section`, or a Bloom index's)."""
    counts = dict(new_counts)
    if pairs is not None:
        counts.update(pair_counts(pairs["identical_pairs"], pairs["near_duplicate_pairs"],
                                  pairs["set_pairs"]))
    changed = {"candidates": candidates, "clusters": clusters,
               "documents_in_clusters": documents_in_clusters, "removable": removable}
    counts.update({key: int(value) for key, value in changed.items() if value is not None})
    counts["new_documents"] = int(new_documents)
    counts["index"] = index
    return counts


def add(counts: dict, **added) -> dict:
    """``counts`` with what a run adds after the find (:data:`RUN_COUNTS`, or shingling's
    counts added up over chunks), in the order given; an unknown key is refused."""
    _refuse_unknown(added, COUNTS, "count")
    counts.update(added)
    return counts


def _refuse_unknown(added: Mapping, table: Mapping, what: str) -> None:
    """KeyError naming the keys of ``added`` that ``table`` does not define."""
    unknown = set(added) - set(table)
    if unknown:
        raise KeyError(f"no {what} {sorted(unknown)}; they are {list(table)}")


# ---------------------------------------------------------------- units inside documents

# what a run over units inside documents (dedup --unit, repeats) counts, after its
# options (unit, keep, min_chars, min_tokens or min_unit_chars and min_unit_words), in
# this order where they apply (both engines, in memory and under --memory-limit)
UNIT_COUNTS: dict[str, str] = {
    "records_seen": "records read",
    "documents": "records read as documents (a record with a text)",
    "documents_kept": "dedup --unit: documents written, their repeated units removed",
    "documents_dropped": "dedup --unit: documents left with fewer than min_chars "
                         "characters once their repeated units were removed",
    "skipped": "records read but not documents, all reasons",
    "failed": "records that could not be read, all reasons",
    "units": "the units seen (lines, paragraphs, windows of sentences or of min_tokens "
             "tokens); a unit that normalizes to nothing is none",
    "units_distinct": "distinct normalized texts among the units",
    "units_repeated": "distinct texts seen more than once, at or over the minimum length "
                      "(the listing's rows)",
    "units_removed": "units the keep policy removes (first: every copy after the first; "
                     "none: every copy), units under the minimum length spared",
    "units_kept": "units - units_removed",
    "units_short": "units shorter than the minimum length (min_unit_chars, "
                   "min_unit_words): never removed",
    "units_short_repeated": "distinct texts under the minimum seen more than once",
    "units_short_spared": "units the keep policy would remove but the minimum kept",
    "sentences": "sentences:N: the sentences seen",
    "sentences_removed": "sentences:N: sentences inside a removed window",
    "tokens": "span: the tokens seen",
    "spans_repeated": "span: repeated runs of at least min_tokens tokens",
    "tokens_removed": "span: tokens inside a removed run",
    "hash_collisions": "distinct texts that shared a 64-bit hash (told apart on their "
                       "bytes)",
    "bytes_removed": "bytes of the units removed, overlaps merged",
    "documents_changed": "documents that lost at least one unit",
    "dedup": "dedup --unit: what the copy holds (records written, per input)",
}


def unit_counts(*, units: int, distinct: int, repeated: int, removed: int, short: int = 0,
                short_repeated: int = 0, short_spared: int = 0) -> dict:
    """The units' counts of a line, paragraph or sentences:N run (:data:`UNIT_COUNTS`)."""
    return {"units": int(units), "units_distinct": int(distinct),
            "units_repeated": int(repeated), "units_removed": int(removed),
            "units_kept": int(units) - int(removed), "units_short": int(short),
            "units_short_repeated": int(short_repeated),
            "units_short_spared": int(short_spared)}


def span_counts(*, tokens: int, spans_repeated: int, windows: int | None = None,
                windows_removed: int | None = None, tokens_removed: int | None = None
                ) -> dict:
    """The span unit's counts: tokens and repeated runs, and where the run counted them,
    its windows of min_tokens tokens as its units and the tokens removed."""
    counts = {"tokens": int(tokens), "spans_repeated": int(spans_repeated)}
    if windows is not None:
        counts.update(units=int(windows), units_removed=int(windows_removed),
                      units_kept=int(windows) - int(windows_removed))
    if tokens_removed is not None:
        counts["tokens_removed"] = int(tokens_removed)
    return counts


def add_unit_counts(counts: dict, **added) -> dict:
    """``counts`` of a units run with more of :data:`UNIT_COUNTS` (sentences, collisions,
    the removal's bytes and documents, the copy), in the order given; an unknown key is
    refused."""
    _refuse_unknown(added, UNIT_COUNTS, "unit count")
    counts.update({key: value if isinstance(value, dict) else int(value)
                   for key, value in added.items()})
    return counts


def unit_run_counts(options: Mapping, report: Mapping, units: Mapping, *,
                    documents_kept: int, documents: int) -> dict:
    """A units run's counts: its ``options`` (unit, keep, min_chars, and min_tokens or
    min_unit_chars and min_unit_words), the read report's records
    (``ReadReport.as_dict()``), the documents kept and dropped and the ``units``' counts;
    AssertionError unless every record read is accounted for."""
    skipped, failed = sum(report["skipped"].values()), sum(report["failed"].values())
    counts = {**options, "records_seen": report["records_seen"], "documents": documents,
              "documents_kept": documents_kept, "documents_dropped": documents - documents_kept,
              "skipped": skipped, "failed": failed, **units}
    accounted = documents + skipped + failed
    if accounted != report["records_seen"]:  # the accounting is closed, or the run fails
        raise AssertionError(f"{report['records_seen']} records read but {accounted} accounted")
    return counts


# ---------------------------------------------------------------- dedup's and repeats' summary

# the JSON a dedup or repeats writes with --summary, in this order (find's summary.json
# holds counts, config, plan and read; the version is its manifest's)
SUMMARY: dict[str, str] = {
    "neardup": "the version that ran",
    "command": "dedup or repeats",
    "records": "every record read, accounted for (RECORD_COUNTS)",
    "counts": "the run's counts: a whole-document dedup's are find's (COUNTS, with "
              "'dedup'); a unit run's are its units' (neardup.units.run)",
    "config": "the options: find's similarity options, or the unit options",
    "plan": "whole-document dedup: LSH's bands and rows",
    "read": "the read report: records seen, processed, skipped and failed by reason, the "
            "first problems with where they are",
    "seconds": "seconds per stage",
}

# the "records" of a summary, in this order
RECORD_COUNTS: dict[str, str] = {
    "read": "records read: read = processed + skipped + failed",
    "processed": "records read as documents (a record with a text)",
    "skipped": "records read but not documents (an empty text, ...), all reasons",
    "failed": "records that could not be read (malformed, a field missing, ...), all "
              "reasons",
    "skipped_by_reason": "skipped, per reason",
    "failed_by_reason": "failed, per reason",
    "kept": "dedup: documents in the copy (kept + removed = processed); whole documents: "
            "the one kept of each cluster and every document in none; units: documents "
            "not dropped, their repeated units removed",
    "removed": "dedup: documents left out of the copy; whole documents: near-duplicates of "
               "a kept one; units: documents left with fewer than min_chars characters",
    "written": "dedup: records written to the copy: the kept documents, and the skipped "
               "and failed records copied unchanged (a directory copy leaves out the files "
               "it could not read)",
}


def records(read: Mapping, removed: int | None = None,
            written: int | None = None) -> dict:
    """The ``records`` of a summary (:data:`RECORD_COUNTS`) from the read report
    (``ReadReport.as_dict()``) and, for a dedup, the documents ``removed`` and the
    records ``written``; AssertionError unless read = processed + skipped + failed and
    removed <= processed."""
    skipped, failed = dict(read.get("skipped") or {}), dict(read.get("failed") or {})
    out = {"read": int(read["records_seen"]), "processed": int(read["processed"]),
           "skipped": sum(skipped.values()), "failed": sum(failed.values()),
           "skipped_by_reason": skipped, "failed_by_reason": failed}
    if out["read"] != out["processed"] + out["skipped"] + out["failed"]:
        raise AssertionError(f"{out['read']} records read but {out['processed']} processed "
                             f"+ {out['skipped']} skipped + {out['failed']} failed")
    if removed is not None:
        if not 0 <= removed <= out["processed"]:
            raise AssertionError(f"{removed} documents removed of {out['processed']}")
        out.update(kept=out["processed"] - int(removed), removed=int(removed))
    if written is not None:
        out["written"] = int(written)
    return out


def run_summary(command: str, records: dict, summary: Mapping, seconds: Mapping) -> dict:
    """A dedup's or repeats' summary (:data:`SUMMARY`): ``records`` (:func:`records`),
    the result's own ``summary`` (counts, config, plan where there is one, read) and the
    ``seconds`` per stage."""
    from .version import VERSION

    return {"neardup": VERSION, "command": command, "records": records,
            **{key: summary[key] for key in ("counts", "config", "plan", "read")
               if key in summary},
            "seconds": {stage: round(float(s), 4) for stage, s in seconds.items()}}

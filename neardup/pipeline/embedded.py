"""The local engine on embeddings: vectors → cosine candidates → exact cosine → pairs →
clusters, alone or with the shingle Jaccard.

The stages are :mod:`neardup.cosine` (normalising, hyperplane bits, banding, exact
cosine) and, for the Jaccard, the shingle pipeline's own (:mod:`neardup.lsh`,
:mod:`neardup.allpairs`, :mod:`neardup.verify`); the clusters and the pair set are
:func:`neardup.pipeline.cluster_pairs`'s, so dedup copies and annotations follow as for
shingle runs.

The rule a pair is kept by (t: ``threshold``, a cosine; T2: ``also_jaccard``):

- embeddings alone: cosine ≥ t;
- ``also_jaccard``: cosine ≥ t and Jaccard ≥ T2 (candidates from the cosine search);
- ``either``: cosine ≥ t or Jaccard ≥ T2 (candidates from both searches).

Which documents take part: a document with a usable vector takes part in the cosine
side; one with at least ``min_shingles`` shingles in the Jaccard side. Alone and with
``also_jaccard`` a document needs what every side needs; with ``either`` one side is
enough. Every other document is set aside with its reason as its status (the vector's
reason first, else "too few shingles").

What is exact: the ``cosine`` of a pair is exact (:func:`neardup.cosine.exact_cosine`)
and so is its ``jaccard`` (from the shingle sets); every reported pair meets the rule
on the numbers reported. (A candidate whose float32 cosine is below t - 0.001 keeps
that float32 value in the candidates table: it cannot reach t, see
:func:`neardup.cosine.screened_cosine`; one that ``either`` keeps by its Jaccard gets
its exact cosine.) ``cosine`` is null for a pair whose document has no usable
vector (``either``), ``jaccard`` is null in a run on embeddings alone (not computed)
and for a pair whose document has too few shingles (``either``). With method "lsh"
which pairs are found is probabilistic (:mod:`neardup.cosine`: P(t) ≥ 0.995 at the
cosine threshold, MinHash's S-curve at T2); method "exact" finds every pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .. import allpairs, cluster, cosine, lsh, planner, verify
from .._core import columns
from .._core import counts as counting
from .._core.progress import StageTimer
from ..config import FindConfig
from ..result import FindResult
from ..shingling import ShingleSets
from . import band_in_batches, cluster_pairs, ranking_key


def find_vectors(sets: ShingleSets, vectors: np.ndarray, reasons: np.ndarray,
                 ids: Sequence[str], config: FindConfig, *, source: str,
                 timer: StageTimer | None = None, representative_key=None,
                 keep_arrays: bool = False) -> FindResult:
    """Pairs and clusters of ``n`` documents by their vectors (``vectors`` (n, d), row d
    for document d; ``reasons``: the reader's reason a row has no vector, "" where it
    has one) and, with ``config.also_jaccard``, their shingle ``sets``. ``source``:
    what the counts name as the vectors' origin."""
    timer = timer or StageTimer(quiet=True)
    unit, reasons = normalised(vectors, reasons, sets.n, timer)
    return find_unit(unit, reasons, sets.sizes, ids, config, source=source, timer=timer,
                     sets=sets, representative_key=representative_key,
                     keep_arrays=keep_arrays)


def normalised(vectors: np.ndarray, reasons: np.ndarray, n: int, timer: StageTimer
               ) -> tuple[np.ndarray, np.ndarray]:
    """The "normalise" stage of :func:`find_vectors` (:func:`neardup.cosine.normalise`)
    for ``n`` documents: a caller that drops ``vectors`` after it and calls
    :func:`find_unit` holds one copy of them, not two, while they are searched."""
    if vectors.shape[0] != n:
        raise ValueError(f"{vectors.shape[0]} vectors for {n} documents")
    with timer.stage("normalise", f"{n:,} vectors of {vectors.shape[1]} dimensions"):
        return cosine.normalise(vectors, reasons)


@dataclass
class SpilledVectors:
    """Where a run under a memory limit keeps its vectors (:mod:`neardup.pipeline.
    embedded_chunked`): ``at`` (int64[n]) is each document's row of the unit vectors
    (-1: none), ``search(positions, plan)`` finds the cosine candidates among the rows
    ``positions`` (their band keys spilled to files, one band grouped at a time) and
    ``pair_batch`` bounds the verification's gathers."""

    at: np.ndarray
    search: Callable
    pair_batch: int


def find_unit(unit: np.ndarray, reasons: np.ndarray, sizes: np.ndarray, ids: Sequence[str],
              config: FindConfig, *, source: str, timer: StageTimer,
              sets: ShingleSets | None = None, representative_key=None,
              keep_arrays: bool = False, spilled: SpilledVectors | None = None
              ) -> FindResult:
    """:func:`find_vectors` of the normalised vectors ``unit`` and ``reasons``
    (:func:`neardup.cosine.normalise`'s) of ``n`` documents of ``sizes`` shingles: row d
    of ``unit`` is document d's, or, with ``spilled``, row ``spilled.at[d]`` of a mapped
    file (the search then bands from the file and method "auto" runs LSH)."""
    n = sizes.size
    at = spilled.at if spilled is not None else None
    pair_batch = spilled.pair_batch if spilled is not None else cosine.PAIR_BATCH

    def row(docs: np.ndarray) -> np.ndarray:  # documents → rows of ``unit``
        return docs if at is None else at[docs]

    has_vector = reasons == ""
    jaccard_side = config.also_jaccard is not None
    shingled = sizes >= config.min_shingles
    if config.either:
        usable_mask = has_vector | shingled
    elif jaccard_side:
        usable_mask = has_vector & shingled
    else:
        usable_mask = has_vector
    usable = np.flatnonzero(usable_mask)
    rows = np.flatnonzero(has_vector & usable_mask)  # the cosine side's documents
    plan = config.cosine_plan(rows.size)

    method, method_choice = config.method, {"method": config.method,
                                            "reason": "chosen by the user"}
    if spilled is not None and method == "auto":
        method, method_choice = "lsh", {
            "method": "lsh", "reason": "memory limit: the vectors are banded from their "
                                       "file; all pairs would hold every vector"}
    side = None
    if spilled is None:
        side = unit if rows.size == n else unit[rows]  # no copy when every vector is usable
    if method == "auto":
        with timer.stage("plan"):
            choice = planner.choose_cosine_method(side, config.threshold, plan,
                                                  seed=config.seed)
        method, method_choice = choice.method, choice.as_dict()

    stats = lsh.CandidateStats()
    with timer.stage("cosine " + method, f"{rows.size:,} vectors"):
        if spilled is not None:
            ci, cj, stats = spilled.search(row(rows), plan)
        elif method == "exact":
            ci, cj, _ = cosine.all_pairs(side, config.threshold)
        else:
            ci, cj, stats = cosine.candidate_pairs(side, plan, config.seed,
                                                   max_bucket=config.max_bucket,
                                                   policy=config.bucket_policy)
        candidates = ci.size
        # rows is 0..n-1 when every document has a vector: no copies of the candidates
        doc_i, doc_j = (ci, cj) if rows.size == n else (rows[ci], rows[cj])
        del side
    if config.either:
        with timer.stage("jaccard " + method):
            ji, jj, found = _jaccard_candidates(sets, np.flatnonzero(shingled & usable_mask),
                                                config, method)
            candidates += found
            codes = np.union1d(doc_i * n + doc_j, ji * n + jj)
            doc_i, doc_j = codes // n, codes % n

    with timer.stage("verify", f"{doc_i.size:,} candidates"):
        cos = np.full(doc_i.size, np.nan)
        both = has_vector[doc_i] & has_vector[doc_j]
        if both.all():  # no copies of the candidates (as a mask takes)
            cosine.screened_cosine(unit, row(doc_i), row(doc_j), config.threshold,
                                   batch=pair_batch, out=cos)
        else:
            cos[both] = cosine.screened_cosine(unit, row(doc_i[both]), row(doc_j[both]),
                                               config.threshold, batch=pair_batch)
        # NaN columns, one read-only value each where nothing fills them (not 8 bytes a
        # candidate each: 550 MB at 69M candidates)
        unmeasured = np.broadcast_to(np.float64(np.nan), doc_i.shape)
        jac = np.full(doc_i.size, np.nan) if jaccard_side else unmeasured
        if jaccard_side:
            counted = shingled[doc_i] & shingled[doc_j]
            jac[counted] = verify.exact_jaccard(sets, doc_i[counted], doc_j[counted])
        keep = keep_rule(cos, jac, config)
        if config.either:  # kept by Jaccard, below t by far: its cosine exact all the same
            again = np.flatnonzero(keep & both & (cos < config.threshold))
            cos[again] = cosine.exact_cosine(unit, row(doc_i[again]), row(doc_j[again]))
        candidate_arrays = {"i": doc_i, "j": doc_j, "jaccard": jac,
                            "estimate": unmeasured, "cosine": cos,
                            "verified": keep}
        if config.verify:
            doc_i, doc_j, cos, jac = doc_i[keep], doc_j[keep], cos[keep], jac[keep]
        order = np.lexsort((doc_j, doc_i))
        doc_i, doc_j, cos, jac = doc_i[order], doc_j[order], cos[order], jac[order]

    with timer.stage("cluster"):
        key = ranking_key(config, sizes, representative_key)
        none = np.empty(0, dtype=np.int64)
        pair_set, labels, representative = cluster_pairs(
            n, usable, none, none, doc_i, doc_j, jac, np.full(doc_i.size, np.nan), config,
            key)

    status = np.empty(n, dtype=object)
    status.fill("ok")
    status[~usable_mask & ~shingled] = "too few shingles"
    missing = ~usable_mask & ~has_vector
    status[missing] = reasons[missing]
    skipped, counts_of = np.unique(reasons[~has_vector], return_counts=True)
    lowest = counting.NOT_CENTER
    if config.clusters == "center":  # the lowest cosine of a removed document to its centre
        member, kept_for, _ = cluster.member_similarities(None, labels, representative,
                                                          measure=None)
        value = cosine.exact_cosine(unit, row(member), row(kept_for), batch=pair_batch)
        value = value[~np.isnan(value)]
        lowest = round(float(value.min()), 6) if value.size else None
    counts = counting.find_counts(
        documents=n, set_aside=n - usable.size, shingled=usable.size,
        shingles=sizes[usable].sum(), identical_copies=0, candidates=candidates,
        pairs=pair_set.counts(), **counting.cluster_counts(np.bincount(labels, minlength=n)),
        removable=n - representative.sum(), min_member_similarity=lowest,
        search=counting.search_counts(stats), method=method, method_choice=method_choice,
        vectors=counting.vector_counts(
            source=source, dimensions=unit.shape[1],
            reasons=dict(zip(skipped.tolist(), counts_of.tolist())),
            usable=int(has_vector.sum()), hyperplanes=plan.num_perm, bands=plan.bands,
            rows=plan.rows))
    return FindResult(
        ids=ids if isinstance(ids, columns.IdColumn) else list(ids), config=config, plan=plan,
        shingle_counts=sizes, status=status, pair_set=pair_set, labels=labels,
        representative=representative, candidates=candidate_arrays, counts=counts,
        seconds=dict(timer.seconds), sets=sets if keep_arrays else None, cosine=cos)


def keep_rule(cos: np.ndarray, jac: np.ndarray, config: FindConfig) -> np.ndarray:
    """bool: the pairs the rule keeps (see the module docstring); NaN passes nothing."""
    by_cosine = cos >= config.threshold
    if config.also_jaccard is None:
        return by_cosine
    by_jaccard = jac >= config.also_jaccard
    return (by_cosine | by_jaccard) if config.either else (by_cosine & by_jaccard)


def _jaccard_candidates(sets: ShingleSets, members: np.ndarray, config: FindConfig,
                        method: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(i, j, candidates): pairs of documents ``members`` whose shingle Jaccard is ≥
    ``also_jaccard``, from the exact join (method "exact") or MinHash + LSH banded at
    ``also_jaccard`` (:meth:`FindConfig.band_plan`), verified exactly."""
    threshold = config.also_jaccard
    if members.size < 2:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), 0
    if method == "exact":
        i, j, _ = allpairs.all_pairs(sets.subset(members), threshold)
        return members[i], members[j], i.size
    plan = config.band_plan()
    keys = band_in_batches(sets, members, config, plan)
    i, j, _ = lsh.candidate_pairs(keys, max_bucket=config.max_bucket,
                                  policy=config.bucket_policy)
    i, j = members[i], members[j]
    real = verify.exact_jaccard(sets, i, j) >= threshold
    return i[real], j[real], int(real.size)

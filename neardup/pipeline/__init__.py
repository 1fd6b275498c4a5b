"""The local engine: documents → shingle sets → signatures → candidates → pairs → clusters.

Each stage is a function of arrays in its own module (shingling, minhash, lsh,
verify, cluster); this module only composes them, so another engine (Spark)
can call the same functions on partitions and get the same results.

What is exact and what is estimated:
- a reported pair's ``jaccard`` is exact (computed from the shingle sets);
  with ``verify=True`` (the default) every reported pair has jaccard ≥ t;
- ``estimate`` is the MinHash estimate, error about sqrt(J(1-J)/K);
- which pairs are found is probabilistic: a pair of similarity s is a
  candidate with probability P(s) = 1 - (1 - s^r)^b (see :mod:`neardup.lsh`),
  except identical sets, which are grouped exactly before LSH and always found;
- with ``sketch="simhash"`` a pair is found when its fingerprints are within Hamming
  distance k (exactly: the block search misses none), about Binomial(64, θ/π) at
  similarity J (see :mod:`neardup.simhash`); ``estimate`` is the J that distance means;
- with ``measure="containment"`` pairs are verified on |A ∩ B| / min(|A|, |B|) ≥ t;
  both that value and the exact Jaccard are reported. The exact join finds them all;
  method "lsh" bands by size class (P per class pair: the S-curve at the pair's
  Jaccard) and joins exactly where sizes are too far apart (see :mod:`neardup.containment`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np

from .. import allpairs, cluster, containment, lsh, minhash, planner, simhash, verify
from .._core import columns, jit, kernels
from .._core import counts as counting
from .._core.progress import StageTimer
from ..config import CONTAINMENT_METHODS, SKETCHES, FindConfig  # noqa: F401 (re-exported)
from ..pairs import PairSet
from ..result import FindResult
from ..shingling import ShingleSets, set_fingerprints
from ..text.batches import shingle_in_batches  # noqa: F401 (re-exported)

# At most this many documents, of at most INTERPRETED_CHARACTERS characters in all, run
# the kernels' Python source (jit.interpreted): at most ~0.3 s for such an input (LSH,
# K = 128: ~0.2 ms a character interpreted), where a first run would compile 13 kernels
# for 10+ s (BENCHMARKS.md, first run); warm, the compiled kernels take milliseconds.
INTERPRETED_DOCUMENTS = 50
INTERPRETED_CHARACTERS = 2_000
SIGN_BATCH = 1 << 16  # distinct sets signed, then banded, at a time (32 MiB of signatures)


def kernels_for(texts: Sequence[str]):
    """A context for running the pipeline on ``texts``: interpreted kernels if tiny."""
    if len(texts) <= INTERPRETED_DOCUMENTS and sum(map(len, texts)) <= INTERPRETED_CHARACTERS:
        return jit.interpreted()
    return contextlib.nullcontext()


def find_texts(texts: Sequence[str], ids: Sequence[str] | None = None,
               config: FindConfig | None = None, *, quiet: bool = True,
               normalize=None, tokenize=None, keep_arrays: bool = False,
               representative_key=None, workers: int | None = None,
               **options) -> FindResult:
    """Near-duplicate pairs and clusters among ``texts`` (the library's core call).

    ``options`` are :class:`FindConfig` fields; ``normalize``/``tokenize`` plug
    cleaners and tokenizers into the shingler (default: light normalization, words).
    ``representative_key`` ranks documents for the "field" policy (default for
    "longest"/"shortest": text length). ``workers``: processes that shingle (see
    :func:`shingle_in_batches`).
    """
    config = config or FindConfig.from_options(**options)
    ids = [str(k + 1) for k in range(len(texts))] if ids is None else [str(x) for x in ids]
    if len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
    timer = StageTimer(quiet)
    plugins = {"tokenize": tokenize}
    if normalize is not None:
        plugins["normalize"] = normalize
    options_ = config.shingle_options(**plugins)
    if representative_key is None:
        representative_key = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    with kernels_for(texts):
        with timer.stage("shingle", f"{len(texts):,} documents"):
            sets = shingle_in_batches(texts, options_, timer, workers=workers)
        return find_sets(sets, ids, config, timer=timer, representative_key=representative_key,
                         keep_arrays=keep_arrays)


def sign(sets: ShingleSets, config: FindConfig) -> minhash.Signatures:
    """The MinHash signatures of ``sets`` under ``config`` (family, K, seed, b-bit)."""
    signatures = minhash.minhash(sets, config.num_perm, config.seed, config.family)
    return signatures.b_bit(config.bits) if config.bits is not None else signatures


def band_in_batches(sets: ShingleSets, rows_of: np.ndarray, config: FindConfig,
                    plan: lsh.BandPlan) -> np.ndarray:
    """(len(rows_of), bands) uint64: ``lsh.band_keys`` of ``sign(sets.subset(rows_of))``,
    signed SIGN_BATCH sets at a time so that the n × K signatures are never held (keys
    and signatures are per-set functions: the same keys)."""
    keys = np.empty((rows_of.size, plan.bands), dtype=np.uint64)
    # each batch runs the kernels' form (plain or parallel) the whole input would
    with kernels.work_scaled(max(1.0, rows_of.size / SIGN_BATCH)):
        for lo in range(0, rows_of.size, SIGN_BATCH):
            batch = sign(sets.subset(rows_of[lo:lo + SIGN_BATCH]), config)
            keys[lo:lo + batch.n] = lsh.band_keys(batch.matrix, plan.bands, plan.rows)
    return keys


def estimate_pairs(sets: ShingleSets, rows_of: np.ndarray, ci: np.ndarray, cj: np.ndarray,
                   config: FindConfig) -> np.ndarray:
    """The MinHash estimate of each pair (rows ``ci[k]``, ``cj[k]`` of ``rows_of``): the
    candidates' sets signed again, the same figures as from every set's signature."""
    rows = np.union1d(ci, cj)
    signatures = sign(sets.subset(rows_of[rows]), config)
    return signatures.estimate(np.searchsorted(rows, ci), np.searchsorted(rows, cj))


def fixed_method(config: FindConfig, scheduler: str) -> tuple[str, dict | None]:
    """(method, method_choice) a run uses before any planning, and the reason it reports:
    the one place the choice and its wording live, for every engine.

    ``scheduler``: "memory" (the local engine in memory: method "auto" is returned as
    such, with no choice yet, for the planner to decide), "spilled" (under a memory
    limit: the exact join and the planner hold every set in memory, so "auto" bands) or
    "spark" (which never plans: it runs MinHash + LSH, or SimHash's search)."""
    method = config.method
    choice: dict | None = {"method": method, "reason": "chosen by the user"}
    if config.measure == "containment" and method == "auto" and scheduler == "memory":
        method = "exact"  # containment is refused under a limit (pipeline.refusals)
        choice = {"method": method, "reason": "measure containment: the exact join "
                                              "(method 'lsh' to band by size class)"}
    if config.sketch == "simhash":  # refused under a memory limit, as method "exact"
        return "simhash", {"method": "simhash",
                           "reason": "chosen by the user" if method == "lsh" else
                           "sketch simhash: its search, chosen by the user"}
    if scheduler == "spilled" and method != "lsh":  # "auto"
        return "lsh", {"method": "lsh", "reason": "memory limit: the exact join and the "
                                                  "planner hold every set in memory"}
    if scheduler == "spark":
        runs = "cosine LSH" if config.embeddings is not None else "MinHash + LSH"
        return "lsh", {"method": "lsh", "reason": "chosen by the user" if method == "lsh"
                       else f"the Spark engine runs {runs}"}
    return method, (None if method == "auto" else choice)


def find_sets(sets: ShingleSets, ids: Sequence[str], config: FindConfig, *,
              timer: StageTimer | None = None, representative_key=None,
              keep_arrays: bool = False, set_aside: dict | None = None,
              spilled=None) -> FindResult:
    """The pipeline from shingle sets on: group, sign, band, verify, cluster.

    ``set_aside`` maps a status ("generated") to a bool[n] mask of documents kept out
    of every pair; they get that status in the documents table.
    ``spilled``: fingerprints, signatures and band keys of all n documents already
    computed a chunk at a time (a :class:`neardup.pipeline.outofcore.Spilled`); they are read
    instead of computed, so only the plumbing differs and the result is the same.
    Method "auto" is then "lsh" (the planner and the exact join hold every set in memory).
    """
    if config.embeddings is not None:  # vectors are read with the records, not from sets
        raise ValueError("embeddings compare the records' vectors: run neardup.find or "
                         "neardup.dedup on the records (or pipeline.embedded.find_vectors "
                         "with the vectors)")
    timer = timer or StageTimer(quiet=True)
    n = sets.n
    plan = config.band_plan()
    sizes = sets.sizes
    aside = np.zeros(n, dtype=bool)
    for mask in (set_aside or {}).values():
        aside |= mask
    usable = np.flatnonzero((sizes >= config.min_shingles) & ~aside)

    with timer.stage("group identical sets"):
        group_first, copies_of, copies = identical_groups(
            sets, usable, config.seed,
            prints=spilled.fingerprints if spilled is not None else None)

    method, method_choice = fixed_method(config, "spilled" if spilled is not None else "memory")
    if method == "auto":
        with timer.stage("plan"):
            choice = planner.choose_method(sets, config.threshold, config.num_perm, plan,
                                           seed=config.seed, family=config.family,
                                           members=group_first)
            method = choice.method
            method_choice = choice.as_dict()
    if method == "lsh" and config.method != "lsh":  # auto, or a memory limit, bands after all
        config.warn_if_bands_fall_short()

    signatures, bucket_stats, search_stats = None, lsh.CandidateStats(), None
    containment_search = None
    if method == "simhash":
        k = config.hamming_distance()
        with timer.stage("simhash", f"{group_first.size:,} distinct sets, 64 bits"):
            prints = simhash.fingerprints(sets.subset(group_first), config.seed)
        with timer.stage("hamming search", f"distance <= {k}, {k + 1} blocks"):
            ci, cj, distance, search_stats = simhash.hamming_pairs(prints, k)
        with timer.stage("verify", f"{ci.size:,} candidates"):
            doc_i, doc_j = group_first[ci], group_first[cj]
            jaccard = similarity = verify.exact_jaccard(sets, doc_i, doc_j)
            estimate = simhash.jaccard_estimate(distance)
    elif method == "exact":
        with timer.stage("exact join", f"{group_first.size:,} distinct sets"):
            ci, cj, similarity = allpairs.all_pairs(sets.subset(group_first),
                                                    config.threshold, config.measure)
            doc_i, doc_j = group_first[ci], group_first[cj]
            jaccard = (similarity if config.measure == "jaccard"
                       else verify.exact_jaccard(sets, doc_i, doc_j))
            estimate = np.full(ci.size, np.nan)  # no signatures: nothing is estimated
    else:
        # without the arrays asked for, each batch's signatures go once banded; the
        # estimates are then taken from the candidates' signatures, signed again
        banded = spilled is None and config.measure == "jaccard" and not keep_arrays
        with timer.stage("minhash", f"{group_first.size:,} distinct sets, K = {config.num_perm}"):
            if banded:
                keys = band_in_batches(sets, group_first, config, plan)
            elif spilled is None:  # row k: document group_first[k]
                signatures = sign(sets.subset(group_first), config)
            else:  # row d: document d, on disk
                signatures = spilled.signatures
        if banded:
            with timer.stage("lsh", f"{plan.bands} bands x {plan.rows} rows"):
                ci, cj, bucket_stats = lsh.candidate_pairs(keys, max_bucket=config.max_bucket,
                                                           policy=config.bucket_policy)
                del keys
        elif config.measure == "containment":  # spilled is refused above
            with timer.stage("lsh", "by size class (containment)"):
                ci, cj, search = containment.candidate_pairs(
                    sets.subset(group_first), signatures.matrix, config.threshold,
                    weights=config.weights, max_bucket=config.max_bucket,
                    policy=config.bucket_policy)
                bucket_stats, containment_search = search.stats, search.as_dict()
        elif spilled is None:
            with timer.stage("lsh", f"{plan.bands} bands x {plan.rows} rows"):
                keys = lsh.band_keys(signatures.matrix, plan.bands, plan.rows)
                ci, cj, bucket_stats = lsh.candidate_pairs(keys, max_bucket=config.max_bucket,
                                                           policy=config.bucket_policy)
        else:
            with timer.stage("lsh", f"{plan.bands} bands x {plan.rows} rows"):
                ci, cj, bucket_stats = lsh.candidate_pairs_by_band(
                    spilled.band_columns(group_first), group_first.size,
                    max_bucket=config.max_bucket, policy=config.bucket_policy)
        with timer.stage("verify", f"{ci.size:,} candidates"):
            doc_i, doc_j = group_first[ci], group_first[cj]
            jaccard = verify.exact_jaccard(sets, doc_i, doc_j)
            similarity = (jaccard if config.measure == "jaccard"
                          else verify.exact_similarity(sets, doc_i, doc_j, config.measure))
            if banded:
                estimate = estimate_pairs(sets, group_first, ci, cj, config)
            else:
                estimate = (signatures.estimate(ci, cj) if spilled is None
                            else signatures.estimate(doc_i, doc_j))
    candidates = {"i": doc_i, "j": doc_j, "jaccard": jaccard, "estimate": estimate}
    if config.measure != "jaccard":
        candidates[config.measure] = similarity
    if config.verify:
        real = similarity >= config.threshold
        doc_i, doc_j, jaccard, estimate = (doc_i[real], doc_j[real], jaccard[real],
                                           estimate[real])

    with timer.stage("cluster"):
        key = ranking_key(config, sizes, representative_key)
        pair_set, labels, representative = cluster_pairs(
            n, usable, copies_of, copies, doc_i, doc_j, jaccard, estimate, config, key)

    status = np.empty(n, dtype=object)
    status.fill("ok")  # one str for all: np.full would make one of 51 bytes a document
    status[sizes < config.min_shingles] = "too few shingles"
    for reason, mask in (set_aside or {}).items():
        status[mask] = reason
    lowest = (_min_member_similarity(sets, labels, representative, config.measure)
              if config.clusters == "center" else counting.NOT_CENTER)
    counts = counting.find_counts(
        documents=n, set_aside=aside.sum(),
        shingled=usable.size, shingles=sizes[usable].sum(), identical_copies=copies.size,
        candidates=ci.size, pairs=pair_set.counts(),
        **counting.cluster_counts(np.bincount(labels, minlength=n)),
        removable=n - representative.sum(), min_member_similarity=lowest,
        search=counting.search_counts(bucket_stats, search_stats, containment_search),
        method=method, method_choice=method_choice)
    return FindResult(
        ids=ids if isinstance(ids, columns.IdColumn) else list(ids), config=config, plan=plan,
        shingle_counts=sizes, status=status, pair_set=pair_set, labels=labels,
        representative=representative, candidates=candidates, counts=counts,
        seconds=dict(timer.seconds),
        sets=sets if keep_arrays else None, signatures=signatures if keep_arrays else None,
    )



def ranking_key(config: FindConfig, sizes: np.ndarray, representative_key=None):
    """What ranks a cluster's documents for its representative: None (the first), the
    sizes or ``representative_key`` ("longest"/"shortest"), or the field's values
    ("field", which needs ``representative_key``)."""
    if config.representative in ("longest", "shortest"):
        return sizes if representative_key is None else representative_key
    if config.representative == "field":
        if representative_key is None:
            raise ValueError("representative='field' needs a field value per document")
        return representative_key
    return None


def cluster_pairs(n: int, usable: np.ndarray, copies_of: np.ndarray, copies: np.ndarray,
                  doc_i: np.ndarray, doc_j: np.ndarray, jaccard: np.ndarray,
                  estimate: np.ndarray, config: FindConfig, key: np.ndarray | None = None
                  ) -> tuple[PairSet, np.ndarray, np.ndarray]:
    """The cluster stage, shared by both engines: the pairs of distinct sets (``doc_i`` <
    ``doc_j``, any order, verified) and the identical groups (``copies_of[k]`` the head of
    ``copies[k]``) of ``n`` documents → (pair set, labels: smallest document of each
    cluster, representative: bool[n]) by ``config.clusters`` and
    ``config.representative`` (``key``: the value "longest"/"shortest" compare). The
    Spark engine runs it on the driver over the documents on an edge, numbered in order
    (a renumbering that keeps the order keeps every label and tie)."""
    order = np.lexsort((doc_j, doc_i))
    pair_set = PairSet.from_copies(n, usable, copies_of, copies, doc_i[order],
                                   doc_j[order], jaccard[order], estimate[order])
    if config.clusters == "center":  # stars over the pairs of distinct sets
        labels, centre = cluster.center_clusters(pair_set.head, pair_set.set_i,
                                                 pair_set.set_j)
        representative = cluster.center_representatives(pair_set.head, centre,
                                                        config.representative, key)
    else:
        # the components of the set pairs and each copy's edge to its head are those
        # of every document pair: listing them all is not needed here
        labels = cluster.cluster_labels(n, np.concatenate([doc_i, copies_of]),
                                        np.concatenate([doc_j, copies]))
        representative = cluster.choose_representatives(labels, config.representative, key)
    return pair_set, labels, representative


def _min_member_similarity(sets: ShingleSets, labels: np.ndarray,
                           representative: np.ndarray, measure: str) -> float | None:
    """The lowest exact similarity between a document and the one kept for it (None: no
    cluster of two or more), rounded to 6 decimals as the tables are."""
    _, _, similarity = cluster.member_similarities(sets, labels, representative, measure)
    return round(float(similarity.min()), 6) if similarity.size else None


def identical_groups(sets: ShingleSets, usable: np.ndarray, seed: int = 0,
                     prints: np.ndarray | None = None):
    """Group the ``usable`` documents whose shingle sets are identical.

    ``prints``: the sets' :func:`~neardup.shingling.set_fingerprints` (uint64[n]) when
    already computed, e.g. a chunk at a time.

    Returns (group_first, copies_of, copies): the first document of each distinct
    set (ascending), and for every other member of a group the pair (its group's
    first document, the member). Matches of the fingerprint are confirmed on the
    sets, so a hash collision can never merge different sets.
    """
    usable = np.asarray(usable, dtype=np.int64)
    if usable.size == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    prints = (set_fingerprints(sets, seed) if prints is None else prints)[usable]
    _, first_index, inverse = np.unique(prints, return_index=True, return_inverse=True)
    first_of = usable[first_index][inverse]  # each usable doc's group head
    member = first_of != usable
    copies_of, copies = first_of[member], usable[member]
    confirmed = verify.exact_jaccard(sets, copies_of, copies) == 1.0
    if not confirmed.all():  # a fingerprint collision: the member stands on its own
        copies_of, copies = copies_of[confirmed], copies[confirmed]
    group_first = np.setdiff1d(usable, copies, assume_unique=True)
    return group_first, copies_of, copies

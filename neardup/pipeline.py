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

import multiprocessing
import pickle
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, fields

import numpy as np
import pyarrow as pa

from . import allpairs, cluster, columns, containment, lsh, minhash, planner, simhash, verify
from .pairs import (
    DEFAULT_MAX_PAIRS,
    PAIR_FORMS,
    PAIR_SCHEMA,
    PairSet,
    identical_table,
    pair_table,
    too_many_pairs,
)
from .progress import StageTimer
from .shingling import ShingleOptions, ShingleSets, set_fingerprints, shingle, word_tokens

SHINGLE_BATCH = 20_000
SLOW_BATCH_CHARS = 1 << 21  # a batch for a code lexer or a token cleaner: about a second
# Shingling runs in this process unless workers are asked for: the kernels are already
# parallel over documents, and spawned workers each import numba and rebuild tables.
# Measured on 2 shared cores: the Go tree (72M characters) 1.9 s here vs 6.9 s with 2
# workers; 1 M generated documents 15.2-15.7 s here vs 23.4-24.2 s with 2 workers (the
# old automatic switch above 400M characters); the standard library as code 8.1-9.6 s
# vs 14.5-17.4 s.
# spawn, not fork: a forked child of a process that ran numba's parallel kernels
# (GNU OpenMP threads) is killed ("fork() called from a process already using GNU OpenMP")
WORKER_START = "spawn"
# containment: pairs of sets of size ratio r = |B|/|A| with C = t have J = t / (1 + r - t),
# without bound as r grows, so method "lsh" partitions by size to bound r, as LSH Ensemble
# (Zhu, Nargesian, Pu, Miller 2016) does (neardup.containment); "auto" keeps the exact join
CONTAINMENT_METHODS = ("auto", "lsh", "exact")
SKETCHES = ("minhash", "simhash")


@dataclass(frozen=True)
class FindConfig:
    """Every option of a run, checked once here.

    threshold: report pairs with exact Jaccard ≥ threshold (and tune LSH for it).
    num_perm: K, minima per signature. seed: seeds the MinHash family.
    shingle_kind, shingle_size, hash_bits: see :class:`~neardup.shingling.ShingleOptions`.
    min_shingles: documents with fewer shingles are set aside (reported, never paired).
    bands, rows: force b × r instead of the optimized choice; weights: (w_fp, w_fn).
    bits: keep b low bits of each minimum (b-bit MinHash), None keeps 32.
    max_bucket, bucket_policy: see :func:`~neardup.lsh.candidate_pairs`.
    verify: if False, report every candidate with its estimate and exact Jaccard.
    representative: "first", "longest", "shortest" (by text length) or "field".
    method: "lsh" (MinHash + LSH: fast, may miss pairs near t), "exact" (all-pairs
        join with prefix filtering: every pair ≥ t, no estimate), or "auto" (the
        planner estimates both costs from a sample and says which and why).
    family: the MinHash hash family, one of :data:`~neardup.minhash.HASH_FAMILIES`
        ("affine32": K hashes per shingle; "oph": one, with densification;
        "superminhash": K registers per shingle sampled without replacement).
    pairs: how the document pairs are listed: "all" (every document pair, copies of one
        set included) or "groups" (pairs of distinct sets plus each copy's identical
        group, from which :func:`neardup.pairs.expand` lists them all).
    max_pairs: listing every pair stops with a clear error above this many (None or 0:
        no limit); counts are exact either way.
    clusters: "components" (connected components: near-duplicate chains join) or
        "center" (star clusters: every member ≥ t to its cluster's centre, which is
        kept), see :mod:`neardup.cluster`.
    measure: "jaccard" or "containment" (|A ∩ B| / min(|A|, |B|) ≥ t, a document inside
        a longer one; see :mod:`neardup.verify`); method "auto" runs it on the exact
        join, "lsh" bands by size class (:mod:`neardup.containment`, b × r chosen per
        class pair, so ``bands``/``rows`` are refused with it).
    sketch: how method "lsh" finds candidates: "minhash" (MinHash + LSH banding) or
        "simhash" (64-bit SimHash fingerprints, every pair within Hamming distance
        ``simhash_distance``; see :mod:`neardup.simhash`); method "auto" with "simhash"
        runs the SimHash search.
    simhash_distance: k, the largest Hamming distance searched (0-63); None: chosen
        from the threshold (:func:`neardup.simhash.distance_for_threshold`).
    """

    threshold: float = 0.8
    num_perm: int = 128
    seed: int = 1
    shingle_kind: str = "char"
    shingle_size: int = 5
    hash_bits: int = 32
    min_shingles: int = 5
    bands: int | None = None
    rows: int | None = None
    weights: tuple[float, float] = lsh.DEFAULT_WEIGHTS
    bits: int | None = None
    max_bucket: int = 1000
    bucket_policy: str = "star"
    verify: bool = True
    representative: str = "first"
    method: str = "auto"
    family: str = minhash.DEFAULT_FAMILY
    pairs: str = "all"
    max_pairs: int | None = DEFAULT_MAX_PAIRS
    clusters: str = "components"
    measure: str = "jaccard"
    sketch: str = "minhash"
    simhash_distance: int | None = None

    def __post_init__(self) -> None:
        if self.sketch not in SKETCHES:
            raise ValueError(f"sketch must be one of {SKETCHES}, got {self.sketch!r}")
        if self.simhash_distance is not None:
            if self.sketch != "simhash":
                raise ValueError("simhash_distance applies to sketch='simhash'")
            k = self.simhash_distance
            if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= 63:
                raise ValueError(f"simhash_distance must be an integer in 0..63, got "
                                 f"{self.simhash_distance!r}")
        if self.sketch == "simhash" and self.method == "exact":
            raise ValueError("sketch='simhash' is a candidate search; method 'exact' uses "
                             "none (use method 'lsh' or 'auto' with it)")
        if self.sketch == "simhash" and self.measure != "jaccard":
            raise ValueError(f"sketch='simhash' searches by Jaccard; measure "
                             f"{self.measure!r} needs sketch 'minhash' (size classes) or "
                             f"method 'exact'")
        if self.clusters not in cluster.CLUSTER_POLICIES:
            raise ValueError(f"clusters must be one of {cluster.CLUSTER_POLICIES}, "
                             f"got {self.clusters!r}")
        if self.measure not in verify.MEASURES:
            raise ValueError(f"measure must be one of {verify.MEASURES}, got {self.measure!r}")
        if self.measure == "containment" and self.method not in CONTAINMENT_METHODS:
            raise ValueError(f"measure 'containment': method must be one of "
                             f"{CONTAINMENT_METHODS}, got {self.method!r}")
        if (self.measure == "containment" and self.method == "lsh"
                and (self.bands is not None or self.rows is not None)):
            raise ValueError("measure 'containment' with method 'lsh' chooses bands x rows "
                             "for each pair of size classes (neardup.containment); leave "
                             "bands and rows out")
        if self.pairs not in PAIR_FORMS:
            raise ValueError(f"pairs must be one of {PAIR_FORMS}, got {self.pairs!r}")
        if self.max_pairs is not None and (not isinstance(self.max_pairs, int)
                                           or self.max_pairs < 0):
            raise ValueError(f"max_pairs must be a non-negative integer (0 or None: no "
                             f"limit), got {self.max_pairs!r}")
        if not isinstance(self.threshold, (int, float)) or not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold!r}")
        if not isinstance(self.num_perm, int) or not 1 <= self.num_perm <= 4096:
            raise ValueError(f"num_perm must be an integer in 1..4096, got {self.num_perm!r}")
        if not isinstance(self.min_shingles, int) or self.min_shingles < 1:
            raise ValueError(f"min_shingles must be a positive integer, got {self.min_shingles!r}")
        if self.bits is not None and not 1 <= self.bits <= 16:
            raise ValueError(f"bits must be between 1 and 16, got {self.bits!r}")
        if self.bucket_policy not in lsh.BUCKET_POLICIES:
            raise ValueError(f"bucket_policy must be one of {lsh.BUCKET_POLICIES}, "
                             f"got {self.bucket_policy!r}")
        if self.representative not in cluster.REPRESENTATIVE_POLICIES:
            raise ValueError(f"representative must be one of {cluster.REPRESENTATIVE_POLICIES},"
                             f" got {self.representative!r}")
        if self.method not in planner.METHODS:
            raise ValueError(f"method must be one of {planner.METHODS}, got {self.method!r}")
        if self.family not in minhash.HASH_FAMILIES:
            raise ValueError(f"family must be one of {minhash.HASH_FAMILIES}, "
                             f"got {self.family!r}")
        self.shingle_options()  # validates kind, size, hash_bits
        plan = self.band_plan()  # validates bands, rows
        found = float(lsh.s_curve(self.threshold, plan.bands, plan.rows))
        if plan.chosen == "user" and found < 0.5 and self.method != "exact":
            warnings.warn(f"bands x rows = {plan.bands} x {plan.rows} finds a pair at the "
                          f"threshold {self.threshold} with probability P(t) = {found:.3f}: "
                          f"most pairs near t will be lost (leave --bands/--rows out for a "
                          f"choice tuned to t, or see `neardup tune`)", stacklevel=3)

    def shingle_options(self, **plugins) -> ShingleOptions:
        return ShingleOptions(kind=self.shingle_kind, size=self.shingle_size,
                              hash_bits=self.hash_bits, **plugins)

    def hamming_distance(self) -> int:
        """k of the SimHash search: the user's, or chosen from the threshold."""
        if self.simhash_distance is not None:
            return self.simhash_distance
        return simhash.distance_for_threshold(self.threshold)

    def band_plan(self) -> lsh.BandPlan:
        return lsh.choose_bands(self.threshold, self.num_perm, weights=self.weights,
                                bands=self.bands, rows=self.rows)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_options(cls, **options) -> FindConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown option(s) {unknown}; known: {sorted(known)}")
        return cls(**options)


@dataclass
class FindResult:
    """What a run found, as columns indexed by document number (input order).

    ``pair_set`` holds every document pair in compact form (identical groups plus pairs
    of distinct sets, see :mod:`neardup.pairs`); ``counts["pairs"]`` is their exact
    number. ``pair_i``, ``pair_j``, ``jaccard``, ``estimate`` list them all (doc_a < doc_b,
    sorted), built on first use and refused above ``config.max_pairs``;
    :meth:`iter_pairs_tables` streams them in bounded batches instead.
    """

    ids: list[str]
    config: FindConfig
    plan: lsh.BandPlan
    shingle_counts: np.ndarray  # int64[n]
    status: np.ndarray  # object[n]: "ok" or "too few shingles"
    pair_set: PairSet
    labels: np.ndarray  # int64[n], smallest document index in the cluster
    representative: np.ndarray  # bool[n]
    candidates: dict = field(default_factory=dict)  # i, j, jaccard, estimate: every candidate
    counts: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    read_report: dict | None = None
    sets: ShingleSets | None = None
    signatures: minhash.Signatures | None = None
    previews: dict | None = None  # document -> its line, shortened (line inputs, for display)
    _listed: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _id_arrow: pa.Array | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def removable(self) -> np.ndarray:
        """bool[n]: documents that have a near-duplicate kept in their place."""
        return ~self.representative

    def __repr__(self) -> str:  # one line, whatever the size of the arrays
        c = self.counts
        return (f"FindResult({self.n:,} documents, {c.get('pairs', 0):,} pairs "
                f"({c.get('identical_pairs', 0):,} identical), {c.get('clusters', 0):,} "
                f"clusters, method {c.get('method', '?')}, t = {self.config.threshold})")

    def _all_pairs(self) -> tuple:
        if self._listed is None:
            message = too_many_pairs(self.pair_set.counts(), self.config.max_pairs or None)
            if message is not None:
                raise ValueError(message + "; or stream them with result.iter_pairs_tables()")
            self._listed = self.pair_set.arrays()
        return self._listed

    @property
    def pair_i(self) -> np.ndarray:
        """int64: the first document of every document pair (ascending, then pair_j)."""
        return self._all_pairs()[0]

    @property
    def pair_j(self) -> np.ndarray:
        return self._all_pairs()[1]

    @property
    def jaccard(self) -> np.ndarray:
        """float64: exact Jaccard of every document pair (1.0 inside identical groups)."""
        return self._all_pairs()[2]

    @property
    def estimate(self) -> np.ndarray:
        """float64: MinHash estimate of every document pair (NaN from the exact join; with
        sketch "simhash" the Jaccard its Hamming distance means for sets of equal size)."""
        return self._all_pairs()[3]

    @property
    def id_array(self) -> pa.Array:
        """The ids as one Arrow string array (built once; tables take from it)."""
        if self._id_arrow is None:
            self._id_arrow = columns.strings(self.ids)
        return self._id_arrow

    def pairs_table(self) -> pa.Table:
        """Every document pair: id_a, id_b, jaccard, estimate, doc_a, doc_b (with
        measure "containment", a containment column after jaccard)."""
        return self._pair_table(*self._all_pairs())

    def iter_pairs_tables(self, max_rows: int | None = None):
        """The rows of :meth:`pairs_table` in batches of about ``max_rows`` (no limit)."""
        for batch in self.pair_set.batches(max_rows or (1 << 20)):
            yield self._pair_table(*batch)

    @property
    def pairs_schema(self) -> pa.Schema:
        """The schema of :meth:`pairs_table` (PAIR_SCHEMA, plus containment if measured)."""
        if self.config.measure == "jaccard":
            return PAIR_SCHEMA
        return PAIR_SCHEMA.insert(3, pa.field(self.config.measure, pa.float64()))

    def set_pairs_table(self) -> pa.Table:
        """The pairs of distinct sets (doc_a, doc_b: their groups' heads), pairs' columns."""
        p = self.pair_set
        return self._pair_table(p.set_i, p.set_j, p.jaccard, p.estimate)

    def _pair_table(self, doc_a, doc_b, jaccard, estimate) -> pa.Table:
        table = pair_table(self.id_array, doc_a, doc_b, jaccard, estimate)
        if self.config.measure == "jaccard":
            return table
        # exact, from J and the set sizes (see verify.containment_from_jaccard)
        value = verify.containment_from_jaccard(jaccard, self.shingle_counts[doc_a],
                                                self.shingle_counts[doc_b])
        return table.add_column(3, self.config.measure, pa.array(np.round(value, 6)))

    def identical_table(self) -> pa.Table:
        """Every document in an identical group of two or more: group, id, group_size,
        doc, head_doc (see :func:`neardup.pairs.identical_table`)."""
        return identical_table(self.id_array, self.pair_set)

    def candidates_table(self) -> pa.Table:
        """Every LSH candidate (distinct sets only) with its exact Jaccard and estimate."""
        c = self.candidates
        measure = self.config.measure
        extra = {} if measure == "jaccard" else {measure: c[measure].round(6)}
        return columns.table({"doc_a": c["i"], "doc_b": c["j"],
                              "jaccard": c["jaccard"].round(6), **extra,
                              "estimate": c["estimate"].round(6),
                              "verified": c[measure] >= self.config.threshold})

    def documents_table(self) -> pa.Table:
        """One row per document: id, shingle count, status, cluster, kept or removable."""
        ids = np.asarray(self.ids, dtype=object)
        return columns.table({
            "doc": np.arange(self.n),
            "id": ids,
            "shingles": self.shingle_counts,
            "status": self.status,
            "cluster": ids[self.labels],
            "representative": self.representative,
        })

    def clusters_table(self, include_singletons: bool = False) -> pa.Table:
        """One row per document in a cluster of two or more, largest clusters first."""
        sizes = np.bincount(self.labels, minlength=self.n)[self.labels]
        members = np.arange(self.n) if include_singletons else np.flatnonzero(sizes > 1)
        order = np.lexsort((members, self.labels[members], -sizes[members]))
        members = members[order]
        ids = np.asarray(self.ids, dtype=object)
        return columns.table({
            "cluster": ids[self.labels[members]],
            "id": ids[members],
            "cluster_size": sizes[members],
            "representative": self.representative[members],
            "shingles": self.shingle_counts[members],
            "doc": members,
        })

    def summary(self) -> dict:
        """Counts, parameters and the band plan; deterministic (no timings)."""
        return {"counts": self.counts, "config": self.config.as_dict(),
                "plan": self.plan.as_dict(), "read": self.read_report}


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
    with timer.stage("shingle", f"{len(texts):,} documents"):
        sets = shingle_in_batches(texts, options_, timer, workers=workers)
    if representative_key is None:
        representative_key = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return find_sets(sets, ids, config, timer=timer, representative_key=representative_key,
                     keep_arrays=keep_arrays)


def shingle_in_batches(texts: Sequence[str], options: ShingleOptions,
                       timer: StageTimer | None = None, workers: int | None = None
                       ) -> ShingleSets:
    """:func:`~neardup.shingling.shingle` over batches, bounding the temporary memory.

    ``workers``: processes that shingle batches side by side; None or 1 is in-process
    (faster on the machines measured, see above). The sets are the same whatever the
    number of workers (each document is shingled on its own; batches come back in
    order). Options that cannot be pickled (a lambda as ``tokenize``) keep the work
    in-process.
    """
    workers = _worker_count(texts, options, workers)
    if workers > 1:
        return _shingle_in_workers(texts, options, workers, timer)
    bounds = _batch_bounds(texts, options)
    batches = zip(bounds[:-1], bounds[1:])
    if timer is not None and len(bounds) > 2:
        batches = timer.bar(batches, total=len(bounds) - 1, desc="shingle")
    return ShingleSets.concat([shingle(texts[lo:hi], options) for lo, hi in batches])


def _batch_bounds(texts: Sequence[str], options: ShingleOptions) -> list[int]:
    """Where batches start: every SHINGLE_BATCH documents, and for a tokenizer other than
    the word kernel (code lexers at 2-20 MB/s, cleaners' token steps) every
    SLOW_BATCH_CHARS characters too, so a long run shows its progress and time left."""
    starts = list(range(0, len(texts), SHINGLE_BATCH))
    slow = options.kind == "word" and options.tokenize not in (None, word_tokens)
    if slow and texts:
        ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
        cuts = np.searchsorted(ends, np.arange(SLOW_BATCH_CHARS, int(ends[-1]),
                                               SLOW_BATCH_CHARS), side="right")
        starts = sorted(set(starts) | {int(c) for c in cuts if 0 < c < len(texts)})
    return [*starts, len(texts)]


def sign(sets: ShingleSets, config: FindConfig) -> minhash.Signatures:
    """The MinHash signatures of ``sets`` under ``config`` (family, K, seed, b-bit)."""
    signatures = minhash.minhash(sets, config.num_perm, config.seed, config.family)
    return signatures.b_bit(config.bits) if config.bits is not None else signatures


def _worker_count(texts: Sequence[str], options: ShingleOptions, workers: int | None) -> int:
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
    if workers is None:
        return 1
    workers = min(workers, len(texts))
    if workers > 1:
        try:
            pickle.dumps(options)
        except Exception:  # lambdas, closures: shingle here
            return 1
    return workers


def _shingle_in_workers(texts: Sequence[str], options: ShingleOptions, workers: int,
                        timer: StageTimer | None) -> ShingleSets:
    # batches of about equal characters, several per worker so that none waits long
    sizes = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    n_batches = max(workers * 4, -(-len(texts) // SHINGLE_BATCH))
    ends = np.searchsorted(np.cumsum(sizes), np.linspace(0, sizes.sum(), n_batches + 1)[1:],
                           side="left") + 1
    bounds = np.unique(np.concatenate([[0], np.minimum(ends, len(texts))])).tolist()
    batches = [list(texts[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    context = multiprocessing.get_context(WORKER_START)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        results = pool.map(_shingle_arrays, batches, [options] * len(batches))
        if timer is not None:
            results = timer.bar(results, total=len(batches), desc="shingle")
        parts = [ShingleSets(offsets, values) for offsets, values in results]
    return ShingleSets.concat(parts)


def _shingle_arrays(texts: list[str], options: ShingleOptions):
    """A worker's task: one batch's sets as plain arrays (offsets, values)."""
    sets = shingle(texts, options)
    return sets.offsets, sets.values


def find_sets(sets: ShingleSets, ids: Sequence[str], config: FindConfig, *,
              timer: StageTimer | None = None, representative_key=None,
              keep_arrays: bool = False, set_aside: dict | None = None,
              spilled=None) -> FindResult:
    """The pipeline from shingle sets on: group, sign, band, verify, cluster.

    ``set_aside`` maps a status ("generated") to a bool[n] mask of documents kept out
    of every pair; they get that status in the documents table.
    ``spilled``: fingerprints, signatures and band keys of all n documents already
    computed a chunk at a time (a :class:`neardup.outofcore.Spilled`); they are read
    instead of computed, so only the plumbing differs and the result is the same.
    Method "auto" is then "lsh" (the planner and the exact join hold every set in memory).
    """
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

    method = config.method
    method_choice = {"method": method, "reason": "chosen by the user"}
    if config.measure == "containment":
        if spilled is not None:
            raise ValueError("measure 'containment' holds every set in memory (its size "
                             "classes and exact join); leave out the memory limit")
        if method == "auto":
            method = "exact"
            method_choice = {"method": method, "reason": "measure containment: the exact "
                                                         "join (method 'lsh' to band by size "
                                                         "class)"}
    if config.sketch == "simhash":
        if spilled is not None:
            raise ValueError("sketch 'simhash' is not supported with a memory limit")
        method_choice = {"method": "simhash",
                         "reason": "chosen by the user" if method == "lsh" else
                         "sketch simhash: its search, chosen by the user"}
        method = "simhash"
    if spilled is not None and method != "lsh":
        if method == "exact":
            raise ValueError("method 'exact' holds every set in memory; use 'lsh' or "
                             "'auto' with a memory limit")
        method = "lsh"
        method_choice = {"method": method, "reason": "memory limit: the exact join and the "
                                                     "planner hold every set in memory"}
    if method == "auto":
        with timer.stage("plan"):
            choice = planner.choose_method(sets.subset(group_first), config.threshold,
                                           config.num_perm, plan, seed=config.seed,
                                           family=config.family)
            method = choice.method
            method_choice = choice.as_dict()

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
        with timer.stage("minhash", f"{group_first.size:,} distinct sets, K = {config.num_perm}"):
            if spilled is None:  # row k: document group_first[k]
                signatures = sign(sets.subset(group_first), config)
            else:  # row d: document d, on disk
                signatures = spilled.signatures
        if config.measure == "containment":  # spilled is refused above
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
        order = np.lexsort((doc_j, doc_i))
        pair_set = PairSet.from_copies(n, usable, copies_of, copies, doc_i[order],
                                       doc_j[order], jaccard[order], estimate[order])
        key = None
        if config.representative in ("longest", "shortest"):
            key = sizes if representative_key is None else representative_key
        elif config.representative == "field":
            if representative_key is None:
                raise ValueError("representative='field' needs a field value per document")
            key = representative_key
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
            representative = cluster.choose_representatives(labels, config.representative,
                                                            key)

    status = np.full(n, "ok", dtype=object)
    status[sizes < config.min_shingles] = "too few shingles"
    for reason, mask in (set_aside or {}).items():
        status[mask] = reason
    cluster_sizes = np.bincount(labels, minlength=n)
    counts = {
        "documents": n,
        "too_few_shingles": int(((sizes < config.min_shingles) & ~aside).sum()),
        "shingled": int(usable.size),
        "shingles": int(sizes[usable].sum()),
        "distinct_sets": int(group_first.size),
        "identical_copies": int(copies.size),
        "candidates": int(ci.size),
        **pair_set.counts(),
        "clusters": int((cluster_sizes > 1).sum()),
        "documents_in_clusters": int(cluster_sizes[cluster_sizes > 1].sum()),
        "removable": int(n - representative.sum()),
        **({"min_member_similarity": _min_member_similarity(sets, labels, representative,
                                                            config.measure)}
           if config.clusters == "center" else {}),
        "buckets": bucket_stats.as_dict(),
        **({"simhash": search_stats.as_dict()} if search_stats is not None else {}),
        **({"containment_search": containment_search}
           if containment_search is not None else {}),
        "method": method,
        "method_choice": method_choice,
    }
    return FindResult(
        ids=list(ids), config=config, plan=plan, shingle_counts=sizes, status=status,
        pair_set=pair_set, labels=labels,
        representative=representative, candidates=candidates, counts=counts,
        seconds=dict(timer.seconds),
        sets=sets if keep_arrays else None, signatures=signatures if keep_arrays else None,
    )


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

"""Every option of a run, checked once, at the door: :class:`FindConfig`.

The engines (local, Spark, the index) take a FindConfig; its ``__post_init__`` refuses a
bad value or a combination that cannot run, naming the option and the allowed values.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields

from . import cluster, cosine, lsh, minhash, planner, simhash, verify
from .pairs import DEFAULT_MAX_PAIRS, PAIR_FORMS
from .shingling import ShingleOptions

# containment: pairs of sets of size ratio r = |B|/|A| with C = t have J = t / (1 + r - t),
# without bound as r grows, so method "lsh" partitions by size to bound r, as LSH Ensemble
# (Zhu, Nargesian, Pu, Miller 2016) does (neardup.containment); "auto" keeps the exact join
CONTAINMENT_METHODS = ("auto", "lsh", "exact")
SKETCHES = ("minhash", "simhash")
MAX_NUM_PERM = lsh.MAX_NUM_PERM


def check_num_perm(num_perm) -> None:
    """K, as every command takes it (find, tune, index): an integer in 1..MAX_NUM_PERM."""
    if isinstance(num_perm, bool) or not isinstance(num_perm, int) or \
            not 1 <= num_perm <= MAX_NUM_PERM:
        raise ValueError(f"num_perm must be an integer in 1..{MAX_NUM_PERM}, got {num_perm!r}")


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
    embeddings: compare vectors instead of shingle sets: the column holding each
        record's vector, a ``.npy`` file (row i: record i) or, in the library, a 2-D
        array; ``threshold`` is then a cosine and ``bands``/``rows`` cut the
        hyperplane bits (see :mod:`neardup.cosine`, :mod:`neardup.pipeline.embedded`).
    hyperplanes: with embeddings, K random hyperplanes (sign bits) per vector; None:
        chosen from the number of vectors (:func:`neardup.cosine.hyperplanes_for`).
    also_jaccard: with embeddings, a pair must also have exact shingle Jaccard ≥ this.
    either: with also_jaccard, a pair is kept when one of the two holds (cosine ≥
        threshold or Jaccard ≥ also_jaccard); candidates come from both searches.
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
    embeddings: object = None  # a column name, a .npy path or a 2-D array
    hyperplanes: int | None = None
    also_jaccard: float | None = None
    either: bool = False

    def __post_init__(self) -> None:
        self._check_embeddings()
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
        check_num_perm(self.num_perm)
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
        if self.method == "lsh":
            self.warn_if_bands_fall_short()

    def _check_embeddings(self) -> None:
        """The options of a run on vectors (see :mod:`neardup.cosine`)."""
        if self.embeddings is None:
            for name in ("hyperplanes", "also_jaccard"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} applies to a run on embeddings (give "
                                     f"embeddings=COLUMN, --embeddings)")
            if self.either:
                raise ValueError("either applies to embeddings with also_jaccard")
            return
        if isinstance(self.embeddings, str) and not self.embeddings:
            raise ValueError("embeddings must name a column or a .npy file")
        if self.hyperplanes is not None and (
                isinstance(self.hyperplanes, bool) or not isinstance(self.hyperplanes, int)
                or not 1 <= self.hyperplanes <= cosine.MAX_HYPERPLANES):
            raise ValueError(f"hyperplanes must be an integer in 1..{cosine.MAX_HYPERPLANES}, "
                             f"got {self.hyperplanes!r}")
        if self.also_jaccard is not None and (
                isinstance(self.also_jaccard, bool)
                or not isinstance(self.also_jaccard, (int, float))
                or not 0.0 < self.also_jaccard <= 1.0):
            raise ValueError(f"also_jaccard must be in (0, 1], got {self.also_jaccard!r}")
        if self.either and self.also_jaccard is None:
            raise ValueError("either needs also_jaccard: the Jaccard threshold a pair may "
                             "pass instead of the cosine one")
        for name, value, allowed in (("measure", self.measure, "jaccard"),
                                     ("sketch", self.sketch, "minhash")):
            if value != allowed:
                raise ValueError(f"{name} {value!r} does not apply to embeddings (cosine "
                                 f"between vectors; leave {name} at {allowed!r})")
        if self.bands is not None or self.rows is not None:
            count = self.hyperplanes or cosine.MAX_HYPERPLANES
            cosine.band_plan(self.threshold, count, bands=self.bands, rows=self.rows)

    def cosine_plan(self, n: int) -> lsh.BandPlan:
        """b × r over the hyperplane bits for ``n`` vectors (:func:`neardup.cosine.band_plan`;
        K from :func:`neardup.cosine.hyperplanes_for` unless ``hyperplanes`` is given)."""
        count = self.hyperplanes or cosine.hyperplanes_for(n, self.threshold, self.weights)
        if self.hyperplanes is None and self.bands is not None and self.rows is not None:
            count = max(count, self.bands * self.rows)
        return cosine.band_plan(self.threshold, count, weights=self.weights,
                                bands=self.bands, rows=self.rows)

    def warn_if_bands_fall_short(self) -> None:
        """Warn when the engine bands MinHash signatures with a b × r chosen for t that
        cannot find a pair at t with P(t) ≥ 0.995 (see :meth:`neardup.lsh.BandPlan.
        shortfall`): at the door for method "lsh", where "auto" turns into it otherwise."""
        if self.sketch != "minhash" or self.measure != "jaccard":
            return  # SimHash has no bands; containment bands by size class
        if self.embeddings is not None and not self.either:
            return  # the cosine bands are planned for the vectors read
        message = self.band_plan().shortfall()
        if message is not None:
            warnings.warn(message, stacklevel=3)

    def shingle_options(self, **plugins) -> ShingleOptions:
        return ShingleOptions(kind=self.shingle_kind, size=self.shingle_size,
                              hash_bits=self.hash_bits, **plugins)

    def hamming_distance(self) -> int:
        """k of the SimHash search: the user's, or chosen from the threshold."""
        if self.simhash_distance is not None:
            return self.simhash_distance
        return simhash.distance_for_threshold(self.threshold)

    def band_plan(self) -> lsh.BandPlan:
        """MinHash's b × r. With embeddings, ``bands``/``rows`` cut the hyperplane bits
        (:meth:`cosine_plan`), and this is the plan of ``either``'s MinHash search, at
        ``also_jaccard``."""
        if self.embeddings is not None:
            return lsh.choose_bands(self.also_jaccard or self.threshold, self.num_perm,
                                    weights=self.weights)
        return lsh.choose_bands(self.threshold, self.num_perm, weights=self.weights,
                                bands=self.bands, rows=self.rows)

    def as_dict(self) -> dict:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        if values["embeddings"] is not None and not isinstance(values["embeddings"], str):
            shape = getattr(values["embeddings"], "shape", None)
            values["embeddings"] = (f"an array of shape {tuple(shape)}" if shape is not None
                                    else str(values["embeddings"]))
        return values

    @classmethod
    def from_options(cls, **options) -> FindConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown option(s) {unknown}; known: {sorted(known)}")
        return cls(**options)

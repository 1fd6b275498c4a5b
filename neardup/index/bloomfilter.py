"""Bloom filters in generations: sizing, probes and growth of a Bloom index's filters
(:mod:`neardup.index.bloom` keeps them on disk and answers queries with them).

What is exact, what is estimated:

- **Sizing.** A filter of m bits holding n keys with k probes each answers "present" for
  an absent key with probability ≈ (1 - (1 - 1/m)^(kn))^k, exactly fill^k for the
  filter as it is (fill: the fraction of its bits set), the probes being independent.
  A query is falsely flagged if any of the b band filters is: 1 - (1 - p)^b, so each is
  sized for p = 1 - (1 - RATE)^(1/b). :meth:`FilterPlan.for_rate` solves the formula
  for m in closed form at each whole k near the optimum -log2 p and keeps the smallest
  (m a multiple of 64): no search, any capacity. A filter has at least
  :data:`MIN_BITS` bits; when that holds more keys than asked, the plan says so (its
  ``capacity`` is what the floor holds at p).
- **Growth, never past the rate.** A generation's capacity is a promise: it takes at
  most that many documents. The next document opens a new generation (a scalable Bloom
  filter, Almeida et al. 2007) holding :data:`GROWTH` times the last one's capacity (or
  what is left to insert, if more) at :data:`TIGHTENING` times its false-positive
  budget: generation g gets RATE (1 - r) r^g, and the budgets of all generations sum to
  RATE, so the per-query rate of all of them together, 1 - ∏(1 - rate_g), stays within
  RATE however many documents are added. A query checks every generation.
- **The probes are independent.** The i-th probe of a key in band j of generation g is
  mix64(h + i·φ) mod m with h = mix64(key ⊕ salt_jg): splitmix64's sequence seeded by the
  key. Double hashing ((h1 + i·h2) mod m) shares whole probe sequences between keys in
  small filters (m² pairs (h1, h2) only), and measured up to 30 times its formula there.
- **The estimate.** :func:`estimated_rate` is 1 - ∏_gj (1 - fill_gj^k_g): exact for the
  filters as they are (the rate an absent key meets), whatever was inserted.
- **A filter of the earlier layout** (one filter per band for the whole RATE, probed by
  double hashing: (h1 + i·h2) mod m with h1 = mix64(key ⊕ salt_j), h2 = mix64(h1 ⊕ φ) | 1)
  is read as generation 0 with those probes (:data:`DOUBLE_HASHING`), its rate estimated
  from its bits as any filter's. It takes no new key: new documents open generations
  with the independent probes, which share what its bits leave of RATE
  (:meth:`Generations.budget_after_closed`), so the rate asked for holds from then on.

Inserting is setting bits, so filters built apart with the same plans and OR-ed
(:func:`merge_filters`) are the filters of one build over both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._core.hashing import GOLDEN, mix64
from .._core.jit import njit

MIN_BITS = 4096  # a filter's floor: below it fill^k is far from E[fill^k] (few bits)
GROWTH = 2  # each new generation holds at least twice the last one's capacity
TIGHTENING = 0.5  # at half its false-positive budget
SPLITMIX = "splitmix64"  # independent probes: every generation written now
DOUBLE_HASHING = "double-hashing"  # the earlier layout's probes: read, never written to
PROBES = (SPLITMIX, DOUBLE_HASHING)


def per_band_rate(rate: float, bands: int) -> float:
    """p such that a query hits falsely in at least one of ``bands`` filters with
    probability 1 - (1 - p)^bands = ``rate``."""
    return -math.expm1(math.log1p(-rate) / bands)


def generation_rate(rate: float, generation: int) -> float:
    """Generation g's share of the per-query ``rate``: rate (1 - r) r^g (they sum to it)."""
    return rate * (1 - TIGHTENING) * TIGHTENING ** generation


def check_rate(rate) -> None:
    if not isinstance(rate, int | float) or not 0.0 < rate < 1.0:
        raise ValueError(f"--fp (the false-positive rate per query) must be in (0, 1), "
                         f"got {rate!r}")


def check_capacity(capacity) -> None:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"--capacity (the documents the filters are sized for) must be "
                         f"a positive integer, got {capacity!r}")


@dataclass(frozen=True)
class FilterPlan:
    """The size of one generation's filters: ``bits`` each (a multiple of 64, at least
    :data:`MIN_BITS`), ``hashes`` probes a key, for ``capacity`` documents at ``rate``
    per query over ``bands`` filters; ``probes``: how a key's bits are found (one of
    :data:`PROBES`; only :data:`SPLITMIX` filters take new keys)."""

    bands: int
    capacity: int
    rate: float
    bits: int
    hashes: int
    probes: str = SPLITMIX

    def __post_init__(self):
        if self.probes not in PROBES:
            raise ValueError(f"unknown Bloom probe scheme {self.probes!r} (known: "
                             f"{', '.join(PROBES)})")

    @property
    def takes_keys(self) -> bool:
        """Whether keys may be inserted (filters of the earlier layout are closed)."""
        return self.probes == SPLITMIX

    @classmethod
    def for_rate(cls, rate: float, capacity: int, bands: int) -> FilterPlan:
        check_rate(rate)
        check_capacity(capacity)
        p = per_band_rate(rate, bands)
        bits, hashes = min((_bits_for(p, capacity, k), k) for k in _hash_counts(p))
        if bits < MIN_BITS:  # the floor holds more keys at p than asked: say how many
            capacity, hashes = max((_keys_within(MIN_BITS, p, k), k) for k in _hash_counts(p))
            bits = MIN_BITS
        return cls(bands, capacity, rate, bits, hashes)

    @property
    def expected_rate(self) -> float:
        """The per-query false-positive rate expected at capacity (at most ``rate``)."""
        return -math.expm1(self.bands * math.log1p(
            -band_rate(self.bits, self.hashes, self.capacity)))

    @property
    def words(self) -> int:
        return self.bits // 64

    @property
    def total_bytes(self) -> int:
        """The bytes of the b band filters and the exact-copy filter."""
        return (self.bands + 1) * self.bits // 8

    @property
    def bytes_per_document(self) -> float:
        """Bytes per document at capacity: all filters' bits / 8 / capacity."""
        return self.total_bytes / self.capacity

    def as_dict(self) -> dict:
        return {"capacity": self.capacity, "bits": self.bits, "hashes": self.hashes,
                "probes": self.probes}


def band_rate(bits: int, hashes: int, keys: int) -> float:
    """A filter's expected false-positive rate: (1 - (1 - 1/m)^(k n))^k."""
    return (-math.expm1(hashes * keys * math.log1p(-1 / bits))) ** hashes


def _hash_counts(p: float) -> range:
    """The whole k worth trying: around the optimum -log2 p (= (m/n) ln 2 at the best m)."""
    best = -math.log2(p)
    return range(max(1, math.floor(best) - 1), math.ceil(best) + 2)


def _bits_for(p: float, keys: int, hashes: int) -> int:
    """The fewest bits (a multiple of 64) at which ``keys`` keys of ``hashes`` probes meet
    p: (1 - (1 - 1/m)^(kn))^k ≤ p  ⟺  m ≥ -1 / expm1(log1p(-p^(1/k)) / (kn))."""
    words = math.ceil(-1 / math.expm1(math.log1p(-p ** (1 / hashes)) / (hashes * keys)) / 64)
    if band_rate(words * 64, hashes, keys) > p:  # the last float's rounding
        words += 1
    return words * 64


def _keys_within(bits: int, p: float, hashes: int) -> int:
    """The most keys of ``hashes`` probes that ``bits`` bits hold at p (the same bound)."""
    keys = math.floor(math.log1p(-p ** (1 / hashes)) / (hashes * math.log1p(-1 / bits)))
    if keys > 1 and band_rate(bits, hashes, keys) > p:
        keys -= 1
    return max(keys, 1)


def fill_fraction(filters: np.ndarray) -> np.ndarray:
    """float64[...]: the fraction of bits set in each filter (the last axis: words)."""
    return np.bitwise_count(filters).sum(axis=-1, dtype=np.int64) / (filters.shape[-1] * 64)


def estimated_rate(fill: np.ndarray, hashes) -> float:
    """The probability that an absent key hits at least one filter: 1 - ∏(1 - fill^k)
    (``hashes``: k, or one k per filter)."""
    with np.errstate(divide="ignore"):  # a full filter: log 0 = -inf, a rate of 1
        return float(-np.expm1(np.log1p(-np.asarray(fill, dtype=np.float64)
                                        ** np.asarray(hashes, dtype=np.float64)).sum()))


def merge_filters(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The OR of two filters of the same shape: the filter of both key sets (exact:
    inserting is setting bits, so order and partition do not matter)."""
    if a.shape != b.shape or a.dtype != np.uint64 or b.dtype != np.uint64:
        raise ValueError(f"filters merge only with the same shape of uint64 words: "
                         f"{a.shape} {a.dtype} vs {b.shape} {b.dtype}")
    return np.bitwise_or(a, b)


# ---- the kernels ----

@njit(inline="always")
def _seed(key, band, generation):
    salt = mix64(np.uint64(band + 1) * GOLDEN ^ mix64(np.uint64(generation + 1)))
    return mix64(key ^ salt)


@njit(cache=True)
def _insert(filters, keys, bits, hashes, generation):
    """Set the probes of ``keys`` (n, b) in ``filters`` (b, words): band j's keys in j."""
    m = np.uint64(bits)
    for j in range(keys.shape[1]):
        row = filters[j]
        for d in range(keys.shape[0]):
            h = _seed(keys[d, j], j, generation)
            for _ in range(hashes):
                h += GOLDEN
                p = mix64(h) % m
                row[p >> np.uint64(6)] |= np.uint64(1) << (p & np.uint64(63))


@njit(cache=True)
def _hits(filters, keys, bits, hashes, generation, out):
    """Add to ``out`` (int32[n]) the bands of each row of ``keys`` whose filter holds it."""
    m = np.uint64(bits)
    for j in range(keys.shape[1]):
        row = filters[j]
        for d in range(keys.shape[0]):
            h = _seed(keys[d, j], j, generation)
            present = True
            for _ in range(hashes):
                h += GOLDEN
                p = mix64(h) % m
                if not (row[p >> np.uint64(6)] >> (p & np.uint64(63))) & np.uint64(1):
                    present = False
                    break
            if present:
                out[d] += 1


@njit(cache=True)
def _hits_double(filters, keys, bits, hashes, generation, out):
    """:func:`_hits` with the earlier layout's probes, (h1 + i·h2) mod m (one generation:
    ``generation`` is not mixed in)."""
    m = np.uint64(bits)
    for j in range(keys.shape[1]):
        salt = mix64(np.uint64(j + 1) * GOLDEN)
        row = filters[j]
        for d in range(keys.shape[0]):
            h1 = mix64(keys[d, j] ^ salt)
            h2 = mix64(h1 ^ GOLDEN) | np.uint64(1)
            present = True
            for i in range(hashes):
                p = (h1 + np.uint64(i) * h2) % m
                if not (row[p >> np.uint64(6)] >> (p & np.uint64(63))) & np.uint64(1):
                    present = False
                    break
            if present:
                out[d] += 1


_HITS = {SPLITMIX: _hits, DOUBLE_HASHING: _hits_double}


def insert(filters: np.ndarray, keys: np.ndarray, plan: FilterPlan,
           generation: int = 0) -> None:
    """Insert ``keys`` (n, k) into ``filters`` (k, words) of ``generation``, in place."""
    if not plan.takes_keys:
        raise ValueError(f"filters probed by {plan.probes} (a Bloom index of an earlier "
                         f"layout) take no new keys: they go into a new generation")
    if len(keys):
        _insert(filters, np.ascontiguousarray(keys, dtype=np.uint64), plan.bits, plan.hashes,
                generation)


def add_hits(filters: np.ndarray, keys: np.ndarray, plan: FilterPlan, generation: int,
             out: np.ndarray) -> None:
    """Add to ``out`` (int32[n]) the filters of ``generation`` that hold each row's key,
    probed as ``plan`` says (``keys`` contiguous uint64)."""
    _HITS[plan.probes](filters, keys, plan.bits, plan.hashes, generation, out)


def hits(filters: np.ndarray, keys: np.ndarray, plan: FilterPlan,
         generation: int = 0) -> np.ndarray:
    """int32[n]: how many of the filters hold each row's key (0: certainly absent)."""
    out = np.zeros(len(keys), dtype=np.int32)
    add_hits(filters, np.ascontiguousarray(keys, dtype=np.uint64), plan, generation, out)
    return out


# ---- generations ----

@dataclass
class Generation:
    """One generation: its plan, band filters (b, words), exact-copy filter (1, words)
    and the documents inserted into it (at most ``plan.capacity``)."""

    plan: FilterPlan
    bands: np.ndarray
    exact: np.ndarray
    documents: int = 0

    @classmethod
    def empty(cls, plan: FilterPlan) -> Generation:
        return cls(plan, np.zeros((plan.bands, plan.words), dtype=np.uint64),
                   np.zeros((1, plan.words), dtype=np.uint64))

    @property
    def room(self) -> int:
        """The documents it still takes (none for a filter of the earlier layout)."""
        return self.plan.capacity - self.documents if self.plan.takes_keys else 0

    def estimated_rate(self) -> float:
        """Its per-query rate from its bits: 1 - ∏_j (1 - fill_j^k)."""
        return estimated_rate(fill_fraction(self.bands), self.plan.hashes)


class Generations:
    """The filters of a Bloom index: generations sized for ``rate`` in all, the last one
    taking the documents inserted until it is full (then a new one opens)."""

    def __init__(self, rate: float, generations: list[Generation]):
        check_rate(rate)
        self.rate = rate
        self.generations = generations
        self.plan_only = False  # bytes_after: generations planned, no filters made

    @classmethod
    def sized(cls, rate: float, capacity: int, bands: int) -> Generations:
        """One empty generation for ``capacity`` documents (the first's share of rate)."""
        return cls(rate, [Generation.empty(first_plan(rate, capacity, bands))])

    @property
    def bands(self) -> int:
        return self.generations[0].plan.bands

    @property
    def capacity(self) -> int:
        """The documents the generations take before a new one opens."""
        return sum(g.plan.capacity for g in self.generations)

    @property
    def documents(self) -> int:
        return sum(g.documents for g in self.generations)

    @property
    def total_bytes(self) -> int:
        return sum(g.plan.total_bytes for g in self.generations)

    def insert(self, band_keys: np.ndarray, exact_keys: np.ndarray) -> None:
        """Insert the documents' band keys (n, b) and set keys (n,): into the last
        generation while it has room, the rest into a new one (never past a capacity)."""
        for g, start, stop in self.take(len(band_keys)):
            gen = self.generations[g]
            insert(gen.bands, band_keys[start:stop], gen.plan, g)
            insert(gen.exact, np.asarray(exact_keys[start:stop])[:, None], gen.plan, g)

    def take(self, n: int) -> list[tuple[int, int, int]]:
        """Room for the next ``n`` documents, counted in: (generation, start, stop), the
        rows of them each generation takes, in order. The last generation takes them
        while it has room, then a new one opens (:meth:`insert` sets their bits; an
        engine that sets them elsewhere plans with this)."""
        spans, start = [], 0
        while start < n:
            last = self.generations[-1]
            if last.room <= 0:
                self._open(n - start)
                continue
            stop = start + min(last.room, n - start)
            spans.append((len(self.generations) - 1, start, stop))
            last.documents += stop - start
            start = stop
        return spans

    def _open(self, left: int) -> None:
        g = len(self.generations)
        capacity = max(GROWTH * self.generations[-1].plan.capacity, left)
        closed = sum(not gen.plan.takes_keys for gen in self.generations)
        rate = (generation_rate(self.rate, g) if not closed else
                generation_rate(self.budget_after_closed(), g - closed))
        plan = FilterPlan.for_rate(rate, capacity, self.bands)
        self.generations.append(Generation(plan, None, None) if self.plan_only
                                else Generation.empty(plan))

    def budget_after_closed(self) -> float:
        """The share of RATE for the generations after those of the earlier layout (sized
        for the whole RATE, closed): what their bits leave of it, RATE - r0 with r0 their
        estimate (exact, and fixed: they take no key), kept between RATE r^3 (r:
        :data:`TIGHTENING`; a filter at or past its rate leaves nothing, and nothing
        cannot be sized) and RATE (1 - r), the share of the generations after the first
        in an index written now. Those generations get it (1 - r) r^i, i = 0, 1, ..."""
        closed = [g for g in self.generations if not g.plan.takes_keys]
        left = self.rate - estimated_rate(
            np.concatenate([fill_fraction(g.bands) for g in closed]),
            np.concatenate([np.full(g.plan.bands, g.plan.hashes) for g in closed]))
        return min(max(left, self.rate * TIGHTENING ** 3), self.rate * (1 - TIGHTENING))

    def hits(self, band_keys: np.ndarray) -> np.ndarray:
        """int32[n]: the band filters of all generations that hold each row's key."""
        out = np.zeros(len(band_keys), dtype=np.int32)
        keys = np.ascontiguousarray(band_keys, dtype=np.uint64)
        for g, gen in enumerate(self.generations):
            add_hits(gen.bands, keys, gen.plan, g, out)
        return out

    def exact_hits(self, exact_keys: np.ndarray) -> np.ndarray:
        """bool[n]: some generation's exact-copy filter holds the set key."""
        out = np.zeros(len(exact_keys), dtype=np.int32)
        keys = np.ascontiguousarray(np.asarray(exact_keys)[:, None], dtype=np.uint64)
        for g, gen in enumerate(self.generations):
            add_hits(gen.exact, keys, gen.plan, g, out)
        return out > 0

    def fill(self) -> list[np.ndarray]:
        """The fraction of bits set in each band filter: float64[b] per generation."""
        return [fill_fraction(g.bands) for g in self.generations]

    def estimated_rate(self) -> float:
        """The per-query false-positive rate of all generations together, from their bits."""
        fills = self.fill()
        return estimated_rate(np.concatenate(fills), np.concatenate(
            [np.full(f.size, g.plan.hashes) for f, g in zip(fills, self.generations)]))

    def bytes_after(self, n: int) -> int:
        """Bytes of the filters once ``n`` more documents are inserted: these and the
        generations they would open (planned, not filled)."""
        trial = Generations(self.rate, [Generation(g.plan, g.bands, g.exact, g.documents)
                                        for g in self.generations])
        trial.plan_only = True
        trial.take(n)
        return trial.total_bytes

    def copy(self) -> Generations:
        return Generations(self.rate, [Generation(g.plan, g.bands.copy(), g.exact.copy(),
                                                  g.documents) for g in self.generations])


def first_plan(rate: float, capacity: int, bands: int) -> FilterPlan:
    """The first generation's plan: ``capacity`` documents at its share of ``rate``."""
    check_rate(rate)
    return FilterPlan.for_rate(generation_rate(rate, 0), capacity, bands)

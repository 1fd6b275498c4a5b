"""Cosine similarity of vectors the user brings: checks, random-hyperplane LSH, exact cosine.

Shapes: vectors (n, d) float → unit vectors (n, d) float32 and a reason per row (why a
row is unusable, "" when it is usable) → candidate pairs (i < j, int64) → their cosine
(float64).

**Normalising** (:func:`normalise`): each usable row is divided by its norm once, in
float64, and stored as float32. A row is unusable, with its reason, when it has no vector
(``NO_VECTOR``), a length other than the others' (``WRONG_LENGTH``, set by the reader),
a NaN or an infinity (``NOT_FINITE``) or a norm of zero (``ZERO_NORM``).

**Signatures** (Charikar 2002, "Similarity estimation techniques from rounding
algorithms", STOC): K random hyperplanes with Gaussian normals, drawn from ``seed``
(the same seed, the same planes, on any machine); bit k of a vector is 1 when its dot
product with normal k is ≥ 0. Two vectors at angle θ differ in a bit with probability
exactly θ/π, so they agree on one bit with

    p(c) = 1 - arccos(c) / π            (c: their cosine)

and on all r bits of a band with p^r. Banding b × r of the K bits is then MinHash's
banding with p in place of the Jaccard: a pair of cosine c becomes a candidate with
P = 1 - (1 - p(c)^r)^b, and :func:`band_plan` chooses b × r with
:func:`neardup.lsh.choose_bands` at p(t): the same S-curve areas, the same floor
P(t) ≥ :data:`neardup.lsh.MIN_P_AT_THRESHOLD` and the same steep-point guard, in p. The
bits are packed 8 to a byte (``np.packbits``) where they are kept; the band keys and
the candidate search are :func:`neardup.lsh.band_keys` and
:func:`neardup.lsh.candidate_pairs` run on the bit matrix, a band at a time
(:func:`candidate_pairs`: each band's bits packed, its keys made as it is grouped).

**What is exact** (:func:`exact_cosine`): a reported cosine is the cosine of the two
normalised float32 vectors computed in float64, ``dot(u, v) / (|u| · |v|)`` with every
product and sum in float64, clipped to [-1, 1], and exactly 1.0 for two equal vectors.
A pair is kept when that number is ≥ t, so every reported pair has its reported cosine
≥ t, with no tolerance. (float32 dot products only screen: a pair whose float32 cosine
is below t - :data:`SCREEN_MARGIN` is dropped without the float64 one, which cannot be
≥ t: the float32 error of a dot product of d unit terms is below d · 2^-24, under the
margin for d ≤ 16,000.) What is estimated is only which pairs are found by LSH; the
exact method (:func:`all_pairs`) finds every pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import lsh
from ._core.jit import prange
from ._core.kernels import sized_kernel

DEFAULT_HYPERPLANES = 256
MAX_HYPERPLANES = 4096
CANDIDATES_PER_VECTOR = 10
SCREEN_MARGIN = 1e-3  # float32 cosines this far below t are checked in float64
SIGN_BATCH = 1 << 15  # rows projected at a time: (batch, K) float32 and (batch, K) bits
NORMALISE_BYTES = 1 << 24  # normalise: a batch's float64 copy (rows, d) within this
PAIR_BATCH = 1 << 18  # candidate pairs verified at a time: two (batch, d) gathers
EXACT_BLOCK = 2048  # rows per block of the all-pairs products: (block, block) float32

NO_VECTOR = "no vector"
WRONG_LENGTH = "vector of the wrong length"
NOT_FINITE = "vector with NaN or infinity"
ZERO_NORM = "vector of zero norm"
REASONS = (NO_VECTOR, WRONG_LENGTH, NOT_FINITE, ZERO_NORM)


def bit_agreement(cosine) -> np.ndarray:
    """p(c) = 1 - arccos(c)/π: the chance that one random hyperplane puts two vectors of
    cosine c on the same side."""
    c = np.clip(np.asarray(cosine, dtype=np.float64), -1.0, 1.0)
    return 1.0 - np.arccos(c) / np.pi


def band_plan(threshold: float, hyperplanes: int = DEFAULT_HYPERPLANES, *,
              weights=lsh.DEFAULT_WEIGHTS, bands: int | None = None,
              rows: int | None = None) -> lsh.BandPlan:
    """b × r for cosine ``threshold`` over K = ``hyperplanes`` bits: MinHash's choice
    (:func:`neardup.lsh.choose_bands`) at the per-bit agreement p(t); the plan's
    ``threshold`` is p(t) and its S-curve is over p (:func:`cosine_curve` maps it back)."""
    return lsh.choose_bands(float(bit_agreement(threshold)), hyperplanes, weights=weights,
                            bands=bands, rows=rows)


def hyperplanes_for(n: int, threshold: float, weights=lsh.DEFAULT_WEIGHTS) -> int:
    """K when the user gives none: the fewest of 256, 512, ..., MAX_HYPERPLANES whose
    plan (:func:`band_plan`) expects at most CANDIDATES_PER_VECTOR · n candidates among
    n vectors of cosine 0 to each other (p = 1/2: n²/2 · P(0) of them), so that the
    bands stay selective as n grows; the largest when none does."""
    count = DEFAULT_HYPERPLANES
    while count < MAX_HYPERPLANES:
        plan = band_plan(threshold, count, weights=weights)
        if n * (n - 1) / 2 * float(lsh.s_curve(0.5, plan.bands, plan.rows)) \
                <= CANDIDATES_PER_VECTOR * n:
            break
        count *= 2
    return count


def cosine_curve(cosine, bands: int, rows: int) -> np.ndarray:
    """P(candidate) of a pair of cosine c under b × r: 1 - (1 - p(c)^r)^b."""
    return lsh.s_curve(bit_agreement(cosine), bands, rows)


def normalise(vectors: np.ndarray, reasons: np.ndarray | None = None, *,
              batch: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(unit float32 (n, d), reasons object[n]): each row divided by its float64 norm;
    ``reasons`` (the reader's, "" where it found a vector) gain :data:`NOT_FINITE` and
    :data:`ZERO_NORM`. An unusable row is left as zeros. ``batch`` rows at a time (three
    float64 copies of a batch, each within NORMALISE_BYTES when ``batch`` is None; a
    row's result does not depend on it)."""
    vectors = np.asarray(vectors)
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array (n, d), got shape {vectors.shape}")
    batch = batch or max(1, min(SIGN_BATCH, NORMALISE_BYTES // (8 * max(vectors.shape[1], 1))))
    n = vectors.shape[0]
    if reasons is None:
        reasons = np.full(n, "", dtype=object)
    reasons = np.array(reasons, dtype=object)
    unit = np.zeros(vectors.shape, dtype=np.float32)
    for lo in range(0, n, batch):  # bounded float64 copies
        block = vectors[lo:lo + batch].astype(np.float64)
        open_ = reasons[lo:lo + batch] == ""
        finite = np.isfinite(block).all(axis=1)
        norms = np.sqrt(np.einsum("ij,ij->i", np.where(finite[:, None], block, 0.0),
                                  np.where(finite[:, None], block, 0.0)))
        bad_values = open_ & ~finite
        zero = open_ & finite & ~(norms > 0)
        reasons[lo:lo + batch][bad_values] = NOT_FINITE
        reasons[lo:lo + batch][zero] = ZERO_NORM
        good = open_ & finite & (norms > 0)
        unit[lo:lo + batch][good] = (block[good] / norms[good, None]).astype(np.float32)
    return unit, reasons


def hyperplanes(dimensions: int, count: int, seed: int) -> np.ndarray:
    """(d, K) float32: K Gaussian normals, from ``seed`` alone (numpy's PCG64), drawn one
    normal after another, so the first k of K are the k drawn alone."""
    rng = np.random.default_rng([seed, 0x436F73])  # "Cos": apart from other seeds
    return np.ascontiguousarray(rng.standard_normal((count, dimensions)).astype(np.float32).T)


def signature_bits(unit: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """(n, K) uint8, 0 or 1: the side of each hyperplane each row lies on (≥ 0: 1)."""
    return (unit @ planes >= 0).astype(np.uint8)


@dataclass
class Signatures:
    """Packed sign bits: ``packed`` (n, ceil(K/8)) uint8 (``np.packbits`` of the bits),
    ``bits`` = K."""

    packed: np.ndarray
    bits: int

    def unpacked(self) -> np.ndarray:
        return np.unpackbits(self.packed, axis=1, count=self.bits)


def sign(unit: np.ndarray, count: int, seed: int) -> Signatures:
    """The K-bit signatures of ``unit`` rows, packed."""
    planes = hyperplanes(unit.shape[1], count, seed)
    packed = np.empty((unit.shape[0], (count + 7) // 8), dtype=np.uint8)
    for lo in range(0, unit.shape[0], SIGN_BATCH):
        packed[lo:lo + SIGN_BATCH] = np.packbits(
            signature_bits(unit[lo:lo + SIGN_BATCH], planes), axis=1)
    return Signatures(packed, count)


def band_keys(unit: np.ndarray, plan: lsh.BandPlan, seed: int, planes: np.ndarray | None = None
              ) -> np.ndarray:
    """(n, b) uint64: :func:`neardup.lsh.band_keys` of each row's bits, each band's r
    bits packed to bytes, SIGN_BATCH rows signed at a time so the (n, K) bits are never
    held. Only the b·r bits the bands use are drawn: the first b·r hyperplanes of
    :func:`hyperplanes` (K - b·r are left unused, as MinHash leaves its spare minima);
    ``planes``: those hyperplanes drawn already (a caller that bands batch by batch)."""
    if planes is None:
        planes = hyperplanes(unit.shape[1], plan.bands * plan.rows, seed)
    keys = np.empty((unit.shape[0], plan.bands), dtype=np.uint64)
    per_band = (plan.rows + 7) // 8
    for lo in range(0, unit.shape[0], SIGN_BATCH):
        bits = signature_bits(unit[lo:lo + SIGN_BATCH], planes)
        # each band's r bits packed into ceil(r/8) bytes: equal bytes iff equal bits, and
        # the kernel mixes a few bytes a band instead of r bits
        packed = np.packbits(bits.reshape(bits.shape[0], plan.bands, plan.rows), axis=2)
        keys[lo:lo + bits.shape[0]] = lsh.band_keys(
            packed.reshape(bits.shape[0], plan.bands * per_band), plan.bands, per_band)
    return keys


def band_bytes(unit: np.ndarray, plan: lsh.BandPlan, seed: int, *,
               batch: int | None = None) -> np.ndarray:
    """(b, n, ceil(r/8)) uint8: each band's r bits of each row packed to bytes, as
    :func:`band_keys` hashes them, band by band (a band's bytes contiguous): ceil(r/8)
    bytes a band and row where its key takes 8. ``batch`` rows (SIGN_BATCH when None)
    are signed at a time, as :func:`band_keys` signs them: the matrix product's rounding
    may depend on its shape, and a product within rounding of 0 decides a bit (at 1M
    vectors, batches of 4,826 rows made 3 of 69M candidates other than these do)."""
    used = plan.bands * plan.rows
    batch = batch or SIGN_BATCH
    planes = hyperplanes(unit.shape[1], used, seed)
    per_band = (plan.rows + 7) // 8
    out = np.empty((plan.bands, unit.shape[0], per_band), dtype=np.uint8)
    for lo in range(0, unit.shape[0], batch):
        sides = unit[lo:lo + batch] @ planes >= 0  # signature_bits, packed from the bools
        packed = np.packbits(sides.reshape(sides.shape[0], plan.bands, plan.rows), axis=2)
        out[:, lo:lo + sides.shape[0]] = packed.transpose(1, 0, 2)
    return out


def band_columns(unit: np.ndarray, plan: lsh.BandPlan, seed: int, *,
                 batch: int | None = None):
    """The columns of :func:`band_keys` (uint64[n] each) one band at a time, from
    :func:`band_bytes`: the same keys, without the (n, b) of them held at once."""
    packed = band_bytes(unit, plan, seed, batch=batch)
    for band in range(plan.bands):
        yield lsh.band_key_column(packed[band], band)


def candidate_pairs(unit: np.ndarray, plan: lsh.BandPlan, seed: int, *,
                    max_bucket: int = 1000, policy: str = "star", batch: int | None = None):
    """(i, j, stats) of :func:`neardup.lsh.candidate_pairs` over the rows' band keys,
    grouped a band at a time (:func:`band_columns`,
    :func:`neardup.lsh.candidate_pairs_by_band`)."""
    return lsh.candidate_pairs_by_band(band_columns(unit, plan, seed, batch=batch),
                                       unit.shape[0], max_bucket=max_bucket, policy=policy)


def exact_cosine(unit: np.ndarray, i: np.ndarray, j: np.ndarray, *,
                 batch: int = PAIR_BATCH) -> np.ndarray:
    """float64[P]: the cosine of rows i[p], j[p] of ``unit`` as the module docstring says
    (float64 products of the float32 vectors, clipped; 1.0 for equal vectors), ``batch``
    pairs at a time (two (batch, d) float64 gathers; a pair's value does not depend on it)."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    out = np.empty(i.size, dtype=np.float64)
    for lo in range(0, i.size, batch):
        a = unit[i[lo:lo + batch]].astype(np.float64)
        b = unit[j[lo:lo + batch]].astype(np.float64)
        dot = np.einsum("ij,ij->i", a, b)
        norms = np.sqrt(np.einsum("ij,ij->i", a, a) * np.einsum("ij,ij->i", b, b))
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.clip(dot / norms, -1.0, 1.0)
        value[(a == b).all(axis=1) & (norms > 0)] = 1.0
        out[lo:lo + batch] = value
    return out


def screened_cosine(unit: np.ndarray, i: np.ndarray, j: np.ndarray, threshold: float, *,
                    batch: int = PAIR_BATCH, out: np.ndarray | None = None) -> np.ndarray:
    """float64[P]: the cosine of each pair, exact (:func:`exact_cosine`) where its float32
    dot product is ≥ ``threshold`` - SCREEN_MARGIN, else that float32 value (a pair that
    far below t cannot reach it: see the module docstring). ``out``: a float64[P] to
    write them into (and return), rather than a new one."""
    i = np.ascontiguousarray(i, dtype=np.int64)
    j = np.ascontiguousarray(j, dtype=np.int64)
    dot = np.empty(i.size, dtype=np.float32)
    _pair_dots(np.ascontiguousarray(unit), i, j, dot)  # no (P, d) gathers
    value = np.empty(i.size, dtype=np.float64) if out is None else out
    value[:] = dot
    near = np.flatnonzero(dot >= threshold - SCREEN_MARGIN)
    value[near] = exact_cosine(unit, i[near], j[near], batch=batch)
    return value


def verify(unit: np.ndarray, i: np.ndarray, j: np.ndarray, threshold: float
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidates (i, j) with exact cosine ≥ ``threshold``: (i, j, cosine), in the
    candidates' order (:func:`screened_cosine`)."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    cosine = screened_cosine(unit, i, j, threshold)
    keep = cosine >= threshold
    return i[keep], j[keep], cosine[keep]


def all_pairs(unit: np.ndarray, threshold: float, block: int = EXACT_BLOCK
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) of rows with exact cosine ≥ ``threshold``: (i, j, cosine),
    sorted by (i, j). The products are taken a (block × block) float32 tile at a time,
    so memory is bounded by a tile and the pairs found; each kept pair is then checked
    in float64 (:func:`verify`)."""
    n = unit.shape[0]
    found_i, found_j = [], []
    for lo in range(0, n, block):
        rows = unit[lo:lo + block]
        for lo_b in range(lo, n, block):
            products = rows @ unit[lo_b:lo_b + block].T
            a, b = np.nonzero(products >= threshold - SCREEN_MARGIN)
            a, b = a + lo, b + lo_b
            above = a < b
            found_i.append(a[above])
            found_j.append(b[above])
    if not found_i:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), np.empty(0)
    i, j, cosine = verify(unit, np.concatenate(found_i), np.concatenate(found_j), threshold)
    order = np.lexsort((j, i))
    return i[order], j[order], cosine[order]


def brute_force_seconds(n: int, dimensions: int) -> float:
    """Roughly what :func:`all_pairs` takes: n²/2 · d multiply-adds at ~1 GFLOP/s on one
    core (float32 matrix products), used by :mod:`neardup.planner` to weigh it."""
    return n * max(n - 1, 0) / 2 * dimensions * 1e-9


def sign_seconds(n: int, dimensions: int, bits: int, bands: int) -> float:
    """Roughly what signing and banding n rows costs (see :func:`brute_force_seconds`)."""
    return n * dimensions * bits * 1e-9 + n * bands * 2e-7


def describe(plan: lsh.BandPlan, threshold: float) -> str:
    """The plan of a cosine run in words, with P(candidate) at a few cosines."""
    lines = [f"cosine LSH: {plan.bands} bands x {plan.rows} bits of {plan.num_perm} "
             f"hyperplanes ({plan.chosen}); per-bit agreement p(t) = {plan.threshold:.4f} "
             f"at cosine t = {threshold}",
             "  cosine   P(candidate)"]
    for c in (0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99):
        lines.append(f"  {c:5.2f}    {float(cosine_curve(c, plan.bands, plan.rows)):.4f}")
    return "\n".join(lines)


def threshold_of_agreement(p: float) -> float:
    """The cosine whose per-bit agreement is ``p`` (the inverse of :func:`bit_agreement`)."""
    return math.cos(math.pi * (1.0 - p))


@sized_kernel(work=lambda unit, i, j, out: i.size * unit.shape[1])
def _pair_dots(unit, i, j, out):
    """out[p] = the float32 dot product of rows i[p] and j[p] of ``unit``."""
    d = unit.shape[1]
    for p in prange(i.size):
        a, b = unit[i[p]], unit[j[p]]
        total = np.float32(0.0)
        for k in range(d):
            total += a[k] * b[k]
        out[p] = total

"""Choosing between the exact all-pairs join and MinHash + LSH, from a sample.

Both costs are estimated in seconds on this kind of machine from a sample of
the distinct sets (2,000 by default, fewer for long sets: at most a million
elements; the exact join's rarest-first order too is taken from the sample's own
frequencies), so the choice and its reason can be shown to the user:

- exact: ranking all S elements, then about C_exact pair-element meetings let
  through by the prefix filter (:func:`neardup.allpairs.estimate_exact_cost`),
  each a partial merge of about the mean set size:
  seconds ≈ S·1.7e-7 + C_exact · mean_size · 1e-8. When the ranking alone costs
  more than 1.5 × LSH (long documents), C_exact is not estimated.
- LSH: signatures cost one hash per shingle and a fill of the n · K registers
  (superminhash, oph) or S · K multiply-min steps (affine32), banding n · b
  keys, the R pairs emitted by all bands (duplicates included) a sort each, and
  the C_lsh distinct candidates a merge each; R and C_lsh are counted on the
  sample's own band collisions and scaled by n(n-1)/(m(m-1)):
  seconds ≈ S·3e-9 + n·K·2.5e-8 + n·b·2e-7 + R·1e-7 + C_lsh · mean_size · 1e-8
  for superminhash (affine32: S·K·1.5e-10 for the signatures; two threads).

The constants were fitted on the Python standard library (word 5-grams), a
generated corpus of 200-word documents and 50,000 short strings (character
2-grams), t = 0.5 and 0.8; they rank the two methods, not predict to the
second. Exact is chosen when it is estimated no slower than 1.5 × LSH: losing
no pair is worth that much.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import allpairs, cosine, lsh, minhash
from ._core import kernels
from .shingling import ShingleSets

METHODS = ("auto", "lsh", "exact")
EXACT_PREFERENCE = 1.5
SMALL_INPUT_SECONDS = 0.01  # below this, every pair of the input is checked: no planning
SAMPLE_ELEMENTS = 1_000_000
_MERGE_STEP = 1e-8
_MINHASH_STEP = 1.5e-10  # affine32, per shingle and hash function (16 lanes, two threads)
# oph and superminhash: (seconds per shingle, per register of each set): one hash per
# shingle, then filling the registers a shingle did not reach (measured on the Go tree
# and 20,000 200-word documents, K = 128)
_ONE_PASS_STEPS = {"oph": (3e-9, 4e-9), "superminhash": (3e-9, 2.5e-8)}
_BAND_STEP = 2e-7
_RANK_STEP = 1.7e-7
_EMIT_STEP = 1e-7


@dataclass(frozen=True)
class MethodChoice:
    method: str
    reason: str
    exact_seconds: float  # a lower bound (ranking only) when exact_candidates is None
    lsh_seconds: float
    exact_candidates: float | None  # None: not estimated, ranking alone lost to LSH
    lsh_candidates: float

    def as_dict(self) -> dict:
        return {"method": self.method, "reason": self.reason,
                "exact_seconds_estimate": round(self.exact_seconds, 3),
                "lsh_seconds_estimate": round(self.lsh_seconds, 3),
                "exact_candidates_estimate": (None if self.exact_candidates is None
                                              else round(self.exact_candidates)),
                "lsh_candidates_estimate": round(self.lsh_candidates)}


def choose_method(sets: ShingleSets, threshold: float, num_perm: int, plan: lsh.BandPlan,
                  sample: int = 2000, seed: int = 0,
                  family: str = minhash.DEFAULT_FAMILY,
                  members: np.ndarray | None = None) -> MethodChoice:
    """Estimate both costs on ``sets`` (distinct, non-empty sets) and pick one.

    ``members``: plan for ``sets.subset(members)`` without copying it (only the sample's
    sets are gathered); the same choice."""
    sizes = sets.sizes if members is None else sets.sizes[members]
    n = sizes.size
    if n < 2:
        return MethodChoice("exact", "fewer than two sets", 0.0, 0.0, 0.0, 0.0)
    mean_size = float(sizes.mean())
    total_size = int(sizes.sum())
    del sizes
    brute = n * (n - 1) / 2 * 2 * mean_size * _MERGE_STEP  # merging every pair, no filter
    if brute <= SMALL_INPUT_SECONDS:
        # nothing to estimate: even checking every pair is instant, and estimating LSH
        # would cost more (on a first run, its kernels compile for seconds)
        return MethodChoice("exact", f"small input: all {n * (n - 1) // 2:,} pairs of {n:,} "
                            f"distinct sets take ~{brute:.1g} s to check; exact loses no pair",
                            brute, 0.0, None, 0.0)
    # at most SAMPLE_ELEMENTS elements, so that planning stays a small part of the run
    m = min(sample, n, max(200, int(SAMPLE_ELEMENTS / max(mean_size, 1.0))))
    picked = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
    scale = n * (n - 1) / (m * (m - 1)) if m > 1 else 0.0
    # the sample's kernels run in the form (plain or parallel) the whole input's will:
    # on a first run, compiling the other form too would cost seconds
    with kernels.work_scaled(n / m):
        sampled = sets.subset(picked if members is None else members[picked])
        signatures = minhash.minhash(sampled, num_perm, seed=seed + 1, family=family)
        keys = lsh.band_keys(signatures.matrix, plan.bands, plan.rows)
        sample_i, _, stats = lsh.candidate_pairs(keys)
    lsh_candidates = sample_i.size * scale
    emitted = sum(stats.per_band) * scale
    if family in _ONE_PASS_STEPS:
        per_shingle, per_register = _ONE_PASS_STEPS[family]
        signing = total_size * per_shingle + n * num_perm * per_register
    else:
        signing = total_size * num_perm * _MINHASH_STEP
    lsh_seconds = (signing + n * plan.bands * _BAND_STEP
                   + emitted * _EMIT_STEP + lsh_candidates * mean_size * _MERGE_STEP)

    ranking = total_size * _RANK_STEP
    if ranking > EXACT_PREFERENCE * lsh_seconds:
        # the join's first step alone loses: its prefix candidates need not be estimated
        reason = (f"LSH estimated at {lsh_seconds:.2g} s; the exact join's first step "
                  f"alone, ranking {total_size:,} elements, at {ranking:.2g} s")
        return MethodChoice("lsh", reason, ranking, lsh_seconds, None, lsh_candidates)

    # the global order is estimated from the sample too: within 20 % of the order from
    # all sets on the corpora above, at a fraction of the cost (ranking all S elements
    # took longer than signing them)
    exact = allpairs.estimate_exact_cost(sampled, threshold, sample=m, seed=seed)
    exact_candidates = exact["expected_candidates"] * scale
    exact_seconds = ranking + exact_candidates * mean_size * _MERGE_STEP

    if exact_seconds <= EXACT_PREFERENCE * lsh_seconds:
        method = "exact"
        reason = (f"exact join estimated at {exact_seconds:.2g} s vs LSH {lsh_seconds:.2g} s "
                  f"(prefix filter: ~{exact_candidates:.3g} candidates): "
                  f"exact loses no pair at a similar cost")
    else:
        method = "lsh"
        reason = (f"LSH estimated at {lsh_seconds:.2g} s vs exact join {exact_seconds:.2g} s: "
                  f"prefixes hold {exact['prefix_fraction']:.0%} of each set at t = "
                  f"{threshold}, ~{exact_candidates:.3g} prefix candidates")
    return MethodChoice(method, reason, exact_seconds, lsh_seconds, exact_candidates,
                        lsh_candidates)


def choose_cosine_method(unit: np.ndarray, threshold: float, plan: lsh.BandPlan,
                         sample: int = 2000, seed: int = 0) -> MethodChoice:
    """Exact all pairs or cosine LSH for the usable unit vectors ``unit`` (n, d), as
    :func:`choose_method` weighs them for sets: the exact products cost n²/2 · d
    (:func:`neardup.cosine.brute_force_seconds`); LSH costs signing and banding
    (:func:`neardup.cosine.sign_seconds`) plus the d-long check of each candidate,
    whose number is counted on a sample's own band collisions and scaled by
    n(n-1)/(m(m-1)). Exact is chosen when it is estimated no slower than
    EXACT_PREFERENCE × LSH."""
    n, d = unit.shape
    if n < 2:
        return MethodChoice("exact", "fewer than two vectors", 0.0, 0.0, 0.0, 0.0)
    exact_seconds = cosine.brute_force_seconds(n, d)
    if exact_seconds <= SMALL_INPUT_SECONDS:
        return MethodChoice("exact", f"small input: all {n * (n - 1) // 2:,} pairs of {n:,} "
                            f"vectors take ~{exact_seconds:.1g} s to compare; exact loses "
                            f"no pair", exact_seconds, 0.0, n * (n - 1) / 2, 0.0)
    m = min(sample, n)
    picked = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
    scale = n * (n - 1) / (m * (m - 1))
    sample_i, _, _ = cosine.candidate_pairs(unit[picked], plan, seed + 1)
    lsh_candidates = sample_i.size * scale
    lsh_seconds = (cosine.sign_seconds(n, d, plan.num_perm, plan.bands)
                   + lsh_candidates * (d * 2e-9 + _EMIT_STEP))
    if exact_seconds <= EXACT_PREFERENCE * lsh_seconds:
        method, reason = "exact", (f"all pairs estimated at {exact_seconds:.2g} s vs cosine "
                                   f"LSH {lsh_seconds:.2g} s: exact loses no pair at a "
                                   f"similar cost")
    else:
        method, reason = "lsh", (f"cosine LSH estimated at {lsh_seconds:.2g} s "
                                 f"(~{lsh_candidates:.3g} candidates) vs all pairs "
                                 f"{exact_seconds:.2g} s")
    return MethodChoice(method, reason, exact_seconds, lsh_seconds, n * (n - 1) / 2,
                        lsh_candidates)

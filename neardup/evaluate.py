"""What LSH cost: LSH against the exact join on the same input.

The truth is :func:`neardup.allpairs.all_pairs` at the threshold t (every pair
with J ≥ t, exact). LSH runs on the same distinct shingle sets; identical sets
are grouped before both and left out of the comparison (both always find them).

Reported: recall (true pairs found), precision before verification (share of
candidates that are true pairs) and after (1.0 by construction), F1, false
positives and negatives, candidates against all pairs, the time of each method,
and the empirical S-curve: for pairs with J ≥ ``curve_from`` (found by a second
exact join at that lower threshold), the share that became candidates per
similarity bin next to the mean P(s) of the bin. ``sweep`` re-bands the same
signatures with other b × r at the same K.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import allpairs, lsh, minhash
from .pipeline import FindConfig, identical_groups, shingle_in_batches
from .shingling import ShingleSets


@dataclass
class Evaluation:
    threshold: float
    bands: int
    rows: int
    metrics: dict
    curve: list[dict]  # bin_low, bin_high, pairs, found_share, predicted
    sweep: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"threshold": self.threshold, "bands": self.bands, "rows": self.rows,
                "metrics": self.metrics, "curve": self.curve, "sweep": self.sweep}

    def describe(self) -> str:
        m = self.metrics
        lines = [
            f"t = {self.threshold}, LSH {self.bands} x {self.rows}, {m['sets']:,} distinct sets "
            f"({m['all_pairs']:,} pairs in all)",
            f"true pairs (exact join) {m['true_pairs']:,}; LSH candidates "
            f"{m['candidates']:,} ({m['candidate_share']:.4%} of all pairs)",
            f"recall {m['recall']:.4f}  precision before verification "
            f"{m['precision_before']:.4f}, after {m['precision_after']:.4f}  F1 {m['f1']:.4f}",
            f"false negatives {m['false_negatives']:,}; false positives (candidates below t) "
            f"{m['false_positives']:,}",
            f"time: LSH {m['lsh_seconds']:.2f} s (signatures, bands, verification), exact join "
            f"{m['exact_seconds']:.2f} s",
            "empirical S-curve (share of pairs that became candidates):",
            "   s from  s to   pairs   found   P(s)",
        ]
        lines += [f"   {c['bin_low']:.2f}   {c['bin_high']:.2f}  {c['pairs']:6d}  "
                  f"{c['found_share']:.3f}  {c['predicted']:.3f}" for c in self.curve]
        if self.sweep:
            lines.append("sweep at the same K:   b x r   candidates   recall   steep point")
            lines += [f"   {s['bands']:>4} x {s['rows']:<4} {s['candidates']:>10,}   "
                      f"{s['recall']:.4f}   {s['steep_point']:.3f}" for s in self.sweep]
        return "\n".join(lines)


def evaluate_texts(texts, config: FindConfig | None = None, *, curve_from: float | None = None,
                   sweep: list[tuple[int, int]] | bool = False, bin_width: float = 0.05,
                   **options) -> Evaluation:
    """Shingle ``texts`` as :func:`neardup.find_texts` would, then :func:`evaluate_sets`."""
    config = config or FindConfig.from_options(**options)
    sets = shingle_in_batches(texts, config.shingle_options())
    return evaluate_sets(sets, config, curve_from=curve_from, sweep=sweep, bin_width=bin_width)


def evaluate_sets(sets: ShingleSets, config: FindConfig, *, curve_from: float | None = None,
                  sweep: list[tuple[int, int]] | bool = False,
                  bin_width: float = 0.05) -> Evaluation:
    t = config.threshold
    usable = np.flatnonzero(sets.sizes >= config.min_shingles)
    heads, _, _ = identical_groups(sets, usable, config.seed)
    distinct = sets.subset(heads)
    u = distinct.n
    plan = config.band_plan()

    start = time.perf_counter()
    signatures = minhash.minhash(distinct, config.num_perm, config.seed, config.family)
    if config.bits is not None:
        signatures = signatures.b_bit(config.bits)
    keys = lsh.band_keys(signatures.matrix, plan.bands, plan.rows)
    ci, cj, _ = lsh.candidate_pairs(keys, max_bucket=config.max_bucket,
                                    policy=config.bucket_policy)
    candidate_j = _jaccard_of(distinct, ci, cj)
    lsh_seconds = time.perf_counter() - start

    start = time.perf_counter()
    ti, tj, _ = allpairs.all_pairs(distinct, t)
    exact_seconds = time.perf_counter() - start

    candidate_codes = ci * u + cj
    true_codes = ti * u + tj
    found = np.isin(true_codes, candidate_codes)
    verified = candidate_j >= t
    true_pairs = int(true_codes.size)
    tp = int(found.sum())
    recall = tp / true_pairs if true_pairs else 1.0
    precision_before = int(verified.sum()) / ci.size if ci.size else 1.0
    precision_after = 1.0  # verification keeps exactly the candidates with J >= t
    f1 = 2 * precision_after * recall / (precision_after + recall) if recall else 0.0
    all_pairs_count = u * (u - 1) // 2
    metrics = {
        "sets": int(u), "all_pairs": int(all_pairs_count), "true_pairs": true_pairs,
        "candidates": int(ci.size),
        "candidate_share": ci.size / all_pairs_count if all_pairs_count else 0.0,
        "recall": recall, "precision_before": precision_before,
        "precision_after": precision_after, "f1": f1,
        "false_negatives": true_pairs - tp, "false_positives": int((~verified).sum()),
        "lsh_seconds": lsh_seconds, "exact_seconds": exact_seconds,
    }

    curve_from = max(0.05, t - 0.3) if curve_from is None else curve_from
    li, lj, lj_jac = allpairs.all_pairs(distinct, min(curve_from, t))
    low_found = np.isin(li * u + lj, candidate_codes)
    curve = _empirical_curve(lj_jac, low_found, plan, min(curve_from, t), bin_width)

    rows = []
    if sweep:
        options = sweep if isinstance(sweep, list) else default_sweep(config.num_perm)
        for bands, rows_ in options:
            k = lsh.band_keys(signatures.matrix, bands, rows_)
            si, sj, _ = lsh.candidate_pairs(k, max_bucket=config.max_bucket,
                                            policy=config.bucket_policy)
            hit = np.isin(true_codes, si * u + sj).sum()
            rows.append({"bands": bands, "rows": rows_, "candidates": int(si.size),
                         "recall": hit / true_pairs if true_pairs else 1.0,
                         "steep_point": lsh.steep_point(bands, rows_)})
    return Evaluation(t, plan.bands, plan.rows, metrics, curve, rows)


def default_sweep(num_perm: int) -> list[tuple[int, int]]:
    """Every b × r = K with 2 ≤ r ≤ K/2 (the course project's 10x10, 20x5, 25x4, 50x2 at K=100)."""
    return [(num_perm // r, r) for r in range(num_perm // 2, 1, -1) if num_perm % r == 0]


def _jaccard_of(sets, i, j):
    from .verify import exact_jaccard

    return exact_jaccard(sets, i, j)


def _empirical_curve(jaccard, found, plan, low, width) -> list[dict]:
    edges = np.arange(low, 1.0 + 1e-9, width)
    if edges[-1] < 1.0:
        edges = np.append(edges, 1.0)
    which = np.clip(np.searchsorted(edges, jaccard, side="right") - 1, 0, edges.size - 2)
    curve = []
    for b in range(edges.size - 1):
        inside = which == b
        count = int(inside.sum())
        if count == 0:
            continue
        curve.append({"bin_low": float(edges[b]), "bin_high": float(edges[b + 1]),
                      "pairs": count, "found_share": float(found[inside].mean()),
                      "predicted": float(lsh.s_curve(jaccard[inside], plan.bands,
                                                     plan.rows).mean())})
    return curve


def plot_curve(evaluation: Evaluation, path) -> None:
    """The empirical S-curve (dots) over the theoretical P(s) (line), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = np.linspace(0, 1, 201)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    ax.plot(s, lsh.s_curve(s, evaluation.bands, evaluation.rows), label=(
        f"P(s) = 1 - (1 - s^{evaluation.rows})^{evaluation.bands}"))
    mids = [(c["bin_low"] + c["bin_high"]) / 2 for c in evaluation.curve]
    ax.scatter(mids, [c["found_share"] for c in evaluation.curve], color="C1", zorder=3,
               label="share of true pairs found")
    ax.axvline(evaluation.threshold, color="grey", linestyle="--", label="threshold")
    ax.set_xlabel("exact Jaccard similarity s")
    ax.set_ylabel("probability of becoming a candidate")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

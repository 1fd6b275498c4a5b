"""What LSH cost: LSH against the truth on the same input, counted in document pairs.

The truth is every pair of documents with J ≥ t, by one of two methods:

- ``truth="exact"`` (default): :func:`neardup.allpairs.all_pairs` over the distinct
  shingle sets; a pair of sets stands for g_A · g_B document pairs and a group of g
  identical documents for g(g - 1)/2 (see :mod:`neardup.pairs`), so the counts are
  exact for any input size;
- ``truth="brute"``: the exact Jaccard of every pair of documents, copies included,
  with no grouping, filter or index (a sparse product of the document × shingle
  matrix, a block of rows at a time), as the course project computes it; O(n²), for
  inputs of at most ``BRUTE_MAX_DOCUMENTS`` documents.

LSH runs as ``neardup find`` runs it: identical sets grouped (their pairs are always
found), signatures, bands, candidates, verification. Reported, in document pairs: LSH
candidates (before verification), true pairs, their intersection, false positives and
negatives with their rates, recall, precision before and after verification (1.0 by
construction), F1, the time of LSH and of the truth; the same at the level of distinct
sets under ``set_*`` keys. The empirical S-curve and ``sweep`` (other b × r at the same
K) are about distinct sets: for pairs with J ≥ ``curve_from`` (a second exact join at
that lower threshold), the share that became candidates per similarity bin next to the
mean P(s) of the bin. Documents with fewer than ``min_shingles`` shingles are set aside
by both sides, as ``find`` sets them aside.

With ``sketch="simhash"`` the candidates are SimHash's (every pair of distinct sets
within Hamming distance k, :mod:`neardup.simhash`) and the curve's P(s) is
P[Binomial(64, θ/π) ≤ k]; ``compare_sketches`` adds a row per sketch (MinHash + LSH
and SimHash, each timed from grouping to verification) and one for the truth, against
the same truth, in ``Evaluation.sketches``.

The Spark engine (:func:`neardup.spark.evaluate`) gives the same counts and metrics, its
truth a cartesian join of the documents (``truth="brute"``), but no S-curve or sweep:
its ``Evaluation`` has them empty and says so in ``notes``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from . import allpairs, cosine, lsh, minhash, simhash
from ._core.jit import njit, prange
from .config import SKETCHES, FindConfig
from .pipeline import identical_groups
from .shingling import ShingleSets
from .text.batches import shingle_in_batches

TRUTHS = ("exact", "brute")
BRUTE_MAX_DOCUMENTS = 20_000


@dataclass
class Evaluation:
    threshold: float
    bands: int
    rows: int
    metrics: dict
    curve: list[dict]  # bin_low, bin_high, pairs, found_share, predicted
    sweep: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was not computed, and why
    read_report: dict | None = None  # how the input was read (ReadReport.as_dict())
    sketch: str = "minhash"  # whose candidates: "minhash" (LSH b x r), "simhash", "cosine"
    distance: int | None = None  # simhash: the Hamming distance k searched
    sketches: list[dict] = field(default_factory=list)  # compare_sketches: a row each

    def as_dict(self) -> dict:
        out = {"threshold": self.threshold, "bands": self.bands, "rows": self.rows,
               "metrics": self.metrics, "curve": self.curve, "sweep": self.sweep}
        if self.sketch != "minhash":
            out.update(sketch=self.sketch, distance=self.distance)
        if self.sketches:
            out["sketches"] = self.sketches
        if self.notes:
            out["notes"] = self.notes
        if self.read_report is not None:
            out["read"] = self.read_report
        return out

    def describe(self) -> str:
        m = self.metrics
        truth = ("brute force over every document pair" if m["truth"] == "brute"
                 else "exact join over distinct sets")
        search = (f"SimHash, Hamming distance <= {self.distance}" if self.sketch == "simhash"
                  else f"LSH {self.bands} x {self.rows}")
        measure, unit = "J", "distinct sets"
        if self.sketch == "cosine":
            truth, measure, unit = "every pair of vectors compared", "cosine", "vectors"
            search = f"cosine LSH {self.bands} x {self.rows} hyperplane bits"
        candidates, steps = (("SimHash", "fingerprints, search") if self.sketch == "simhash"
                             else ("LSH", "signatures, bands"))
        lines = [
            f"t = {self.threshold}, {search}: {m['documents']:,} documents "
            f"({m['sets']:,} distinct sets), {m['all_pairs']:,} document pairs in all",
            f"true pairs ({measure} >= {self.threshold}, {truth}): {m['true_pairs']:,} in "
            f"{m['truth_seconds']:.2f} s ({m['identical_pairs']:,} inside identical groups)",
            f"{candidates}: {m['candidates']:,} candidate pairs in {m['lsh_seconds']:.2f} s "
            f"({m['candidate_share']:.4%} of all pairs; {steps}, verification); "
            f"after verification {m['found']:,}",
            f"intersection {m['found']:,}: recall {m['recall']:.6f}, precision before "
            f"verification {m['precision_before']:.6f}, after {m['precision_after']:.6f}, "
            f"F1 {m['f1']:.6f}",
            f"false negatives {m['false_negatives']:,} (rate {m['false_negative_rate']:.4f} of "
            f"the true pairs); false positives {m['false_positives']:,} (rate "
            f"{m['false_positive_rate']:.6f} of the pairs below t), removed by verification",
            f"distinct sets: {m['set_true_pairs']:,} true pairs, {m['set_candidates']:,} "
            f"candidates, recall {m['set_recall']:.4f}",
        ]
        if self.curve or not self.notes:  # the Spark engine computes no curve: notes say so
            lines += [f"empirical S-curve over {unit} (share of pairs that became "
                      "candidates):", "   s from  s to   pairs   found   P(s)"]
            lines += [f"   {c['bin_low']:.2f}   {c['bin_high']:.2f}  {c['pairs']:6d}  "
                      f"{c['found_share']:.3f}  {c['predicted']:.3f}" for c in self.curve]
        if self.sweep:
            lines.append("sweep at the same K:   b x r   candidates   recall   steep point "
                         "(document pairs)")
            lines += [f"   {s['bands']:>4} x {s['rows']:<4} {s['candidates']:>10,}   "
                      f"{s['recall']:.4f}   {s['steep_point']:.3f}" for s in self.sweep]
        if self.sketches:
            lines.append("sketches against the same truth (document pairs; seconds from "
                         "grouping to verification):")
            lines.append(f"   {'sketch':<22} {'candidates':>12} {'found':>10} {'recall':>8} "
                         f"{'precision':>9} {'seconds':>8}")
            lines += [f"   {r['sketch'] + ' ' + r['parameters']:<22} {r['candidates']:>12,} "
                      f"{r['found']:>10,} {r['recall']:>8.4f} {r['precision_before']:>9.4f} "
                      f"{r['seconds']:>8.2f}" for r in self.sketches]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def evaluate_texts(texts, config: FindConfig | None = None, *, curve_from: float | None = None,
                   sweep: list[tuple[int, int]] | bool = False, bin_width: float = 0.05,
                   truth: str = "exact", **options) -> Evaluation:
    """Shingle ``texts`` as :func:`neardup.find_texts` would, then :func:`evaluate_sets`."""
    config = config or FindConfig.from_options(**options)
    sets = shingle_in_batches(texts, config.shingle_options())
    return evaluate_sets(sets, config, curve_from=curve_from, sweep=sweep, bin_width=bin_width,
                         truth=truth)


def evaluate_sets(sets: ShingleSets, config: FindConfig, *, curve_from: float | None = None,
                  sweep: list[tuple[int, int]] | bool = False,
                  bin_width: float = 0.05, truth: str = "exact",
                  compare_sketches: bool = False) -> Evaluation:
    if sweep and config.sketch != "minhash":
        raise ValueError("sweep tries other b x r of MinHash LSH; it does not apply to "
                         f"sketch {config.sketch!r}")
    if truth not in TRUTHS:
        raise ValueError(f"truth must be one of {TRUTHS}, got {truth!r}")
    if config.measure != "jaccard":
        raise ValueError(f"evaluate measures LSH against the exact join by Jaccard; measure "
                         f"{config.measure!r} is not compared here (find with method 'lsh' "
                         f"against method 'exact', as bench/bench_sketches.py does)")
    t = config.threshold
    usable = np.flatnonzero(sets.sizes >= config.min_shingles)
    if truth == "brute" and usable.size > BRUTE_MAX_DOCUMENTS:
        raise ValueError(f"truth 'brute' compares every pair of documents: {usable.size:,} "
                         f"documents are over its limit of {BRUTE_MAX_DOCUMENTS:,}; use truth "
                         f"'exact' (the exact join: every pair >= t, same counts)")
    plan = config.band_plan()

    start = time.perf_counter()
    heads, copies_of, copies = identical_groups(sets, usable, config.seed)
    distinct = sets.subset(heads)
    u = distinct.n
    group = np.searchsorted(heads, np.concatenate([heads, copies_of]))
    weight = np.bincount(group, minlength=u).astype(np.int64)  # documents per distinct set
    group_seconds = time.perf_counter() - start
    ci, cj, signatures, search_seconds = _sketch_candidates(distinct, config, plan)
    start = time.perf_counter()
    candidate_j = _jaccard_of(distinct, ci, cj)
    lsh_seconds = group_seconds + search_seconds + time.perf_counter() - start
    candidate_codes = np.sort(ci * u + cj)
    identical = int((weight * (weight - 1) // 2).sum())

    start = time.perf_counter()
    if truth == "exact":
        ti, tj, _ = allpairs.all_pairs(distinct, t)
        true_pairs = identical + int((weight[ti] * weight[tj]).sum())
        hit = _contains(candidate_codes, ti * u + tj)
        found = identical + int((weight[ti[hit]] * weight[tj[hit]]).sum())
    else:
        da, db, _ = brute_force_document_pairs(sets, usable, t)
        doc_group = np.full(sets.n, -1, dtype=np.int64)
        doc_group[heads] = np.arange(u)
        doc_group[copies] = np.searchsorted(heads, copies_of)
        ga, gb = doc_group[da], doc_group[db]
        low, high = np.minimum(ga, gb), np.maximum(ga, gb)
        hit = (ga == gb) | _contains(candidate_codes, low * u + high)
        true_pairs, found = int(da.size), int(hit.sum())
        ti, tj, _ = allpairs.all_pairs(distinct, t)  # for the set-level figures and sweep
    truth_seconds = time.perf_counter() - start

    true_codes = ti * u + tj
    set_found = int(_contains(candidate_codes, true_codes).sum())
    metrics = document_pair_metrics(
        truth=truth, documents=int(usable.size), sets=int(u), identical_pairs=identical,
        true_pairs=true_pairs, candidates=identical + int((weight[ci] * weight[cj]).sum()),
        found=found, set_true_pairs=int(true_codes.size), set_candidates=int(ci.size),
        set_found=set_found, set_false_positives=int((candidate_j < t).sum()),
        lsh_seconds=lsh_seconds, truth_seconds=truth_seconds)

    curve_from = max(0.05, t - 0.3) if curve_from is None else curve_from
    li, lj, lj_jac = allpairs.all_pairs(distinct, min(curve_from, t))
    low_found = _contains(candidate_codes, li * u + lj)
    if config.sketch == "simhash":
        k = config.hamming_distance()

        def predicted(s):
            return simhash.found_probability(s, k)
    else:
        def predicted(s):
            return lsh.s_curve(s, plan.bands, plan.rows)
    curve = _empirical_curve(lj_jac, low_found, predicted, min(curve_from, t), bin_width)

    rows = []
    if sweep:
        options = sweep if isinstance(sweep, list) else default_sweep(config.num_perm)
        true_weight = weight[ti] * weight[tj]
        for bands, rows_ in options:
            k = lsh.band_keys(signatures.matrix, bands, rows_)
            si, sj, _ = lsh.candidate_pairs(k, max_bucket=config.max_bucket,
                                            policy=config.bucket_policy)
            swept = _contains(np.sort(si * u + sj), true_codes)
            hit_pairs = identical + int(true_weight[swept].sum())
            set_true = identical + int(true_weight.sum())
            rows.append({"bands": bands, "rows": rows_,
                         "candidates": identical + int((weight[si] * weight[sj]).sum()),
                         "recall": hit_pairs / set_true if set_true else 1.0,
                         "steep_point": lsh.steep_point(bands, rows_)})
    sketches = []
    if compare_sketches:
        true_weight = weight[ti] * weight[tj]
        for sketch in SKETCHES:
            if sketch == config.sketch:
                si, sj, seconds = ci, cj, lsh_seconds
                used = config
            else:
                used = replace(config, sketch=sketch, simhash_distance=None)
                si, sj, _, seconds = _sketch_candidates(distinct, used, plan)
                start = time.perf_counter()
                _jaccard_of(distinct, si, sj)  # verification, timed as find runs it
                seconds += group_seconds + time.perf_counter() - start
            hit = _contains(np.sort(si * u + sj), true_codes)
            found_pairs = identical + int(true_weight[hit].sum())
            candidate_pairs = identical + int((weight[si] * weight[sj]).sum())
            sketches.append({
                "sketch": sketch,
                "parameters": (f"k={used.hamming_distance()}" if sketch == "simhash"
                               else f"{plan.bands}x{plan.rows}"),
                "candidates": candidate_pairs, "found": found_pairs,
                "recall": found_pairs / true_pairs if true_pairs else 1.0,
                "precision_before": found_pairs / candidate_pairs if candidate_pairs else 1.0,
                "seconds": seconds})
        sketches.append({"sketch": "truth", "parameters": truth, "candidates": true_pairs,
                         "found": true_pairs, "recall": 1.0, "precision_before": 1.0,
                         "seconds": truth_seconds})
    return Evaluation(t, plan.bands, plan.rows, metrics, curve, rows,
                      sketch=config.sketch,
                      distance=config.hamming_distance() if config.sketch == "simhash" else None,
                      sketches=sketches)


def evaluate_vectors(vectors: np.ndarray, reasons: np.ndarray | None, config: FindConfig, *,
                     curve_from: float | None = None, bin_width: float = 0.05
                     ) -> Evaluation:
    """Cosine LSH against the truth on vectors (``config.embeddings`` runs): the
    candidates of :func:`neardup.cosine.candidate_pairs` against every pair with cosine
    ≥ t (:func:`neardup.cosine.all_pairs`, which compares all pairs: the truth), in
    document pairs over the usable vectors (``reasons``: the reader's, see
    :func:`neardup.cosine.normalise`). No identical grouping: each vector is its own set,
    so the set-level figures are the document-level ones. The curve bins by cosine, its
    P(c) the cosine S-curve (:func:`neardup.cosine.cosine_curve`)."""
    t = config.threshold
    unit, reasons = cosine.normalise(vectors, reasons)
    rows = np.flatnonzero(reasons == "")
    unit = unit[rows]
    n = rows.size
    plan = config.cosine_plan(n)
    start = time.perf_counter()
    ci, cj, _ = cosine.candidate_pairs(unit, plan, config.seed, max_bucket=config.max_bucket,
                                       policy=config.bucket_policy)
    candidate_cos = cosine.exact_cosine(unit, ci, cj)
    lsh_seconds = time.perf_counter() - start
    candidate_codes = np.sort(ci * n + cj)
    start = time.perf_counter()
    ti, tj, _ = cosine.all_pairs(unit, t)
    truth_seconds = time.perf_counter() - start
    true_codes = ti * n + tj
    found = int(_contains(candidate_codes, true_codes).sum())
    metrics = document_pair_metrics(
        truth="exact", documents=int(n), sets=int(n), identical_pairs=0,
        true_pairs=int(ti.size), candidates=int(ci.size), found=found,
        set_true_pairs=int(ti.size), set_candidates=int(ci.size), set_found=found,
        set_false_positives=int((candidate_cos < t).sum()), lsh_seconds=lsh_seconds,
        truth_seconds=truth_seconds)
    low = max(0.05, t - 0.3) if curve_from is None else min(curve_from, t)
    li, lj, low_cos = cosine.all_pairs(unit, low)
    low_found = _contains(candidate_codes, li * n + lj)
    curve = _empirical_curve(low_cos, low_found,
                             lambda c: cosine.cosine_curve(c, plan.bands, plan.rows), low,
                             bin_width)
    return Evaluation(t, plan.bands, plan.rows, metrics, curve, sketch="cosine")


def _sketch_candidates(distinct: ShingleSets, config: FindConfig, plan: lsh.BandPlan):
    """(i, j, signatures, seconds): the candidate pairs of ``config.sketch`` among the
    distinct sets, as ``find`` computes them (signatures None for SimHash)."""
    start = time.perf_counter()
    if config.sketch == "simhash":
        prints = simhash.fingerprints(distinct, config.seed)
        ci, cj, _, _ = simhash.hamming_pairs(prints, config.hamming_distance())
        return ci, cj, None, time.perf_counter() - start
    signatures = minhash.minhash(distinct, config.num_perm, config.seed, config.family)
    if config.bits is not None:
        signatures = signatures.b_bit(config.bits)
    keys = lsh.band_keys(signatures.matrix, plan.bands, plan.rows)
    ci, cj, _ = lsh.candidate_pairs(keys, max_bucket=config.max_bucket,
                                    policy=config.bucket_policy)
    return ci, cj, signatures, time.perf_counter() - start


def document_pair_metrics(*, truth: str, documents: int, sets: int, identical_pairs: int,
                          true_pairs: int, candidates: int, found: int, set_true_pairs: int,
                          set_candidates: int, set_found: int, set_false_positives: int,
                          lsh_seconds: float, truth_seconds: float) -> dict:
    """The metrics of an :class:`Evaluation` from its counts (the local and the Spark
    engine's both): ``candidates`` and ``found`` in document pairs, ``set_*`` in pairs
    of distinct sets."""
    all_pairs_count = documents * (documents - 1) // 2
    false_positives = candidates - found
    false_negatives = true_pairs - found
    recall = found / true_pairs if true_pairs else 1.0
    precision_after = 1.0  # verification keeps exactly the candidates with J >= t
    negatives = all_pairs_count - true_pairs
    return {
        "truth": truth, "documents": documents, "sets": sets,
        "all_pairs": int(all_pairs_count), "identical_pairs": identical_pairs,
        "true_pairs": true_pairs, "candidates": candidates, "found": found,
        "candidate_share": candidates / all_pairs_count if all_pairs_count else 0.0,
        "recall": recall,
        "precision_before": found / candidates if candidates else 1.0,
        "precision_after": precision_after,
        "f1": 2 * precision_after * recall / (precision_after + recall) if recall else 0.0,
        "false_negatives": false_negatives, "false_positives": false_positives,
        "false_negative_rate": false_negatives / true_pairs if true_pairs else 0.0,
        "false_positive_rate": false_positives / negatives if negatives else 0.0,
        "set_true_pairs": set_true_pairs, "set_candidates": set_candidates,
        "set_recall": set_found / set_true_pairs if set_true_pairs else 1.0,
        "set_false_positives": set_false_positives,
        "lsh_seconds": lsh_seconds, "truth_seconds": truth_seconds,
    }


def brute_force_document_pairs(sets: ShingleSets, docs: np.ndarray, threshold: float):
    """Every pair of ``docs`` (a < b) with exact Jaccard ≥ threshold, and that Jaccard.

    The exact Jaccard of every pair, nothing grouped or filtered: for each document a,
    the intersection with every later document b is counted through the shingles'
    posting lists (the sparse product of the document × shingle matrix, row by row, in
    numba, parallel over a). Work: the sum over shingles of (documents holding it)²/2;
    memory: one count per document per thread, and the pairs found.
    """
    docs = np.asarray(docs, dtype=np.int64)
    sub = sets.subset(docs)
    n = sub.n
    empty = np.empty(0, dtype=np.int64)
    if n < 2:
        return empty, empty.copy(), np.empty(0)
    _, codes = np.unique(sub.values, return_inverse=True)
    codes = codes.ravel().astype(np.int64)
    owner = np.repeat(np.arange(n, dtype=np.int64), sub.sizes)
    order = np.argsort(codes, kind="stable")  # postings: documents ascending per shingle
    posting_offsets = np.zeros(int(codes.max()) + 2, dtype=np.int64)
    np.cumsum(np.bincount(codes), out=posting_offsets[1:])
    postings = owner[order]
    sizes = sub.sizes.astype(np.int64)
    found = np.zeros(n, dtype=np.int64)
    _brute_rows(sub.offsets, codes, posting_offsets, postings, sizes, float(threshold), found,
                np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0),
                False)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(found, out=starts[1:])
    b = np.empty(int(starts[-1]), dtype=np.int64)
    jaccard = np.empty(int(starts[-1]))
    _brute_rows(sub.offsets, codes, posting_offsets, postings, sizes, float(threshold), found,
                starts, b, jaccard, True)
    a = np.repeat(np.arange(n, dtype=np.int64), found)
    return docs[a], docs[b], jaccard


@njit(cache=True, parallel=True)
def _brute_rows(offsets, codes, posting_offsets, postings, sizes, threshold, found, starts,
                out_b, out_jaccard, fill):
    """Pass 1 (``fill`` False): how many later documents reach the threshold with each a.
    Pass 2: those documents, ascending, and their Jaccard, at ``starts[a]``."""
    n = sizes.size
    for a in prange(n):
        common = np.zeros(n, dtype=np.int64)
        for s in range(offsets[a], offsets[a + 1]):
            c = codes[s]
            lo, hi = posting_offsets[c], posting_offsets[c + 1]
            for p in range(lo + np.searchsorted(postings[lo:hi], a, side="right"), hi):
                common[postings[p]] += 1
        pos = starts[a] if fill else 0
        count = 0
        for b in range(a + 1, n):
            if common[b] == 0:
                continue
            jaccard = common[b] / (sizes[a] + sizes[b] - common[b])
            if jaccard >= threshold:
                if fill:
                    out_b[pos] = b
                    out_jaccard[pos] = jaccard
                    pos += 1
                count += 1
        if not fill:
            found[a] = count


def _contains(sorted_codes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """bool per code: is it in ``sorted_codes`` (ascending)?"""
    if sorted_codes.size == 0:
        return np.zeros(codes.size, dtype=bool)
    where = np.minimum(np.searchsorted(sorted_codes, codes), sorted_codes.size - 1)
    return sorted_codes[where] == codes


def default_sweep(num_perm: int) -> list[tuple[int, int]]:
    """Every b × r = K with 2 ≤ r ≤ K/2 (the course project's 10x10, 20x5, 25x4, 50x2 at K=100)."""
    return [(num_perm // r, r) for r in range(num_perm // 2, 1, -1) if num_perm % r == 0]


def _jaccard_of(sets, i, j):
    from .verify import exact_jaccard

    return exact_jaccard(sets, i, j)


def _empirical_curve(jaccard, found, predicted, low, width) -> list[dict]:
    """Per bin of similarity: the pairs, the share found, and the mean of
    ``predicted(s)`` (the S-curve of the search) over them."""
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
                      "predicted": float(predicted(jaccard[inside]).mean())})
    return curve


def plot_curve(evaluation: Evaluation, path) -> None:
    """The empirical S-curve (dots) over the theoretical P(s) (line), as a PNG."""
    from ._core.extras import require

    matplotlib = require("matplotlib", "--plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = np.linspace(0, 1, 201)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    if evaluation.sketch == "simhash":
        ax.plot(s, simhash.found_probability(s, evaluation.distance),
                label=f"P(Hamming <= {evaluation.distance}), equal sizes")
    else:
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

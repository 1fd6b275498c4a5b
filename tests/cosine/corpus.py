"""A planted corpus for the cosine tests: vectors with near-copies at several cosines,
exact duplicates and bad rows; texts with near-copies at several Jaccards; and the
brute-force truth, computed here independently of neardup's kernels."""

from __future__ import annotations

import numpy as np

WORDS = [f"w{k}" for k in range(400)]


def planted_vectors(n: int, d: int, seed: int) -> np.ndarray:
    """(n, d) float32: groups of a base vector and copies at noise levels spread so that
    their cosines to the base run from about 0.6 to 1, and exact duplicates."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    for start in range(0, n - 5, 6):
        base = x[start]
        for k, noise in enumerate((0.05, 0.2, 0.35, 0.5, 0.8), start=1):
            x[start + k] = base + noise * rng.standard_normal(d) * np.sqrt(1.0)
        x[start + 5] = base if start % 12 == 0 else x[start + 5]  # some exact duplicates
    return x.astype(np.float32)


def spoil(x: np.ndarray) -> dict[int, str]:
    """Bad rows written into ``x`` (NaN, infinity, zero): row -> the reason expected."""
    from neardup import cosine

    x[3] = 0.0
    x[8, 1] = np.nan
    x[15, 0] = np.inf
    return {3: cosine.ZERO_NORM, 8: cosine.NOT_FINITE, 15: cosine.NOT_FINITE}


def planted_texts(n: int, seed: int) -> list[str]:
    """n texts of 40 words: groups of 4 whose members differ from the first by 0 to 12
    replaced words (Jaccard of word 1-shingles from 1 down to about 0.5)."""
    rng = np.random.default_rng(seed + 100)
    texts = []
    base = None
    for k in range(n):
        if k % 4 == 0:
            base = list(rng.choice(WORDS, size=40, replace=False))
            texts.append(" ".join(base))
            continue
        words = list(base)
        for position in rng.choice(40, size=4 * (k % 4) - 2 + int(rng.integers(0, 3)),
                                   replace=False):
            words[position] = f"x{int(rng.integers(0, 10**6))}"
        texts.append(" ".join(words))
    return texts


def cosine_truth(x: np.ndarray, threshold: float, usable: np.ndarray) -> dict:
    """{(i, j): cosine} of every pair of usable rows with cosine >= threshold, i < j, by
    a float64 matrix product of the rows normalised as neardup does (float64 division,
    stored as float32)."""
    rows = np.flatnonzero(usable)
    v = x[rows].astype(np.float64)
    unit = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32).astype(np.float64)
    norms = np.linalg.norm(unit, axis=1)
    c = (unit @ unit.T) / np.outer(norms, norms)
    c = np.clip(c, -1.0, 1.0)
    same = (unit[:, None, :] == unit[None, :, :]).all(axis=2)
    c[same] = 1.0
    a, b = np.nonzero(np.triu(c >= threshold, k=1))
    return {(int(rows[i]), int(rows[j])): float(c[i, j]) for i, j in zip(a, b)}


def jaccard_truth(texts: list[str]) -> dict:
    """{(i, j): Jaccard} of every pair of texts by their word sets (Python sets)."""
    sets = [set(t.split()) for t in texts]
    out = {}
    for i in range(len(sets)):
        for j in range(i + 1, len(sets)):
            out[(i, j)] = len(sets[i] & sets[j]) / len(sets[i] | sets[j])
    return out

"""The planner's choice between the exact join and LSH, and what choosing costs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from neardup import lsh, planner
from neardup.allpairs import rank_sets, rank_sets_numpy
from neardup.shingling import ShingleOptions, ShingleSets, shingle
from neardup.synthetic import planted_corpus


def short_strings(n: int, seed: int) -> list[str]:
    """Names of 6-14 letters, a tenth of them copies with one letter changed."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    names = ["".join(rng.choice(letters, rng.integers(6, 15))) for _ in range(n)]
    for k in rng.choice(n, n // 10, replace=False):
        chars = list(names[rng.integers(n)])
        chars[rng.integers(len(chars))] = "z"
        names[k] = "".join(chars)
    return names


def distinct(sets: ShingleSets) -> ShingleSets:
    """The planner's input: distinct non-empty sets (as the pipeline hands them on)."""
    seen: dict[bytes, int] = {}
    for d in range(sets.n):
        row = sets.values[sets.offsets[d]:sets.offsets[d + 1]]
        if row.size:
            seen.setdefault(row.tobytes(), d)
    return sets.subset(np.fromiter(seen.values(), dtype=np.int64))


def corpus(name: str) -> ShingleSets:
    if name in ("documents", "words"):  # 200-word documents, word 5-grams or words
        texts = planted_corpus(3000, vocabulary=20_000, seed=3).texts
        size = 5 if name == "documents" else 1
        return distinct(shingle(texts, ShingleOptions(kind="word", size=size)))
    if name == "short words":  # 2-word documents, word 1-grams: tiny sets
        texts = [" ".join(pair) for pair in zip(short_strings(6000, 4), short_strings(6000, 5))]
        return distinct(shingle(texts, ShingleOptions(kind="word", size=1)))
    texts = short_strings(8000, 6)  # names, character 3-grams
    return distinct(shingle(texts, ShingleOptions(kind="char", size=3)))


# (corpus, threshold) -> the method chosen when the join's ranks came from its kernel
# (recorded before the estimate moved to numpy; the ranks below are equal, so it holds)
CHOICES = {
    ("documents", 0.8): "lsh",
    ("documents", 0.5): "lsh",  # the join's ranking alone loses
    ("words", 0.3): "lsh",  # prefix candidates estimated: too many
    ("short words", 0.8): "exact",
    ("short words", 0.5): "exact",
    ("names", 0.8): "exact",
    ("names", 0.5): "exact",
    ("names", 0.2): "exact",
}


@pytest.mark.parametrize(("name", "threshold"), sorted(CHOICES))
def test_numpy_estimate_ranks_the_sample_as_the_join_does_and_keeps_the_choice(name, threshold):
    sets = corpus(name)
    plan = lsh.choose_bands(threshold, 128)
    choice = planner.choose_method(sets, threshold, 128, plan)
    assert choice.method == CHOICES[name, threshold], choice.reason
    # the planner's own sample: the numpy ranks are the kernel's, set by set
    m = min(2000, sets.n, max(200, int(planner.SAMPLE_ELEMENTS / float(sets.sizes.mean()))))
    picked = np.sort(np.random.default_rng(0).choice(sets.n, size=m, replace=False))
    sampled = sets.subset(picked)
    compiled, plain = rank_sets(sampled), rank_sets_numpy(sampled)
    assert plain.n_elements == compiled.n_elements
    assert np.array_equal(plain.offsets, compiled.offsets)
    assert plain.values.dtype == compiled.values.dtype
    assert np.array_equal(plain.values, compiled.values)


@pytest.mark.parametrize("seed", range(6))
def test_numpy_ranks_equal_the_kernels_on_random_collections(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    high = [20, 2_000, 2**40][seed % 3]  # many ties, few, 64-bit values
    dtype = np.uint64 if high > 2**32 else np.uint32
    sets = ShingleSets.from_sets([rng.integers(0, high, rng.integers(0, 50)) for _ in range(n)],
                                 dtype=dtype)
    for order in (None, np.sort(rng.choice(n, size=max(1, n // 3), replace=False)),
                  rng.permutation(n)):
        compiled, plain = rank_sets(sets, order), rank_sets_numpy(sets, order)
        assert plain.n_elements == compiled.n_elements
        assert np.array_equal(plain.offsets, compiled.offsets)
        assert np.array_equal(plain.values, compiled.values)


CHOOSE_IN_A_FRESH_PROCESS = """
import numpy as np
from neardup import allpairs, lsh, planner
from neardup.shingling import ShingleSets
rng = np.random.default_rng(0)
sets = ShingleSets.from_sets([rng.integers(0, 5000, 8) for _ in range(3000)])
choice = planner.choose_method(sets, 0.8, 128, lsh.choose_bands(0.8, 128))
assert choice.exact_candidates is not None, choice.reason  # the join was estimated
print(choice.method, allpairs._distribute_ranks.signatures, allpairs._fill_postings.signatures,
      allpairs._join.signatures)
"""


def test_choosing_the_method_compiles_none_of_the_joins_kernels():
    # a fresh process: in this one earlier tests may have run the join
    out = subprocess.run([sys.executable, "-c", CHOOSE_IN_A_FRESH_PROCESS], check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[0] in ("exact", "lsh")
    assert out[1:] == ["[]", "[]", "[]"]

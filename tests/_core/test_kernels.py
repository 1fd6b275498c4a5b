"""The plain and parallel forms of each sized kernel give the same results."""

import importlib

import numpy as np
import pytest

from neardup._core import kernels
from neardup.pipeline import find_texts
from neardup.synthetic import planted_corpus

MODULES = ("neardup.shingling", "neardup.text.cleaning", "neardup.minhash", "neardup.pairs",
           "neardup.verify", "neardup.units.spans")


def sized_kernels():
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        found += [k for k in vars(module).values() if isinstance(k, kernels.SizedKernel)]
    return found


def test_each_form_has_its_own_cache_name():
    found = sized_kernels()
    assert len(found) >= 10
    for kernel in found:
        assert kernel.plain.py_func.__qualname__ == kernel.__qualname__ + "_plain"
        assert kernel.parallel.py_func.__qualname__ == kernel.__qualname__
        assert kernel.plain.py_func.__code__ is kernel.py_func.__code__


def test_form_follows_the_work(monkeypatch):
    kernel = importlib.import_module("neardup.shingling")._fingerprints
    offsets = np.array([0, 3], dtype=np.int64)
    values = np.array([1, 2, 3], dtype=np.uint32)
    out = np.empty(1, dtype=np.uint64)
    assert kernel.form(offsets, values, np.uint64(0), out) is kernel.plain
    monkeypatch.setattr(kernels, "PARALLEL_FROM", 3)
    assert kernel.form(offsets, values, np.uint64(0), out) is kernel.parallel


def _run(texts, monkeypatch, parallel_from, **options):
    monkeypatch.setattr(kernels, "PARALLEL_FROM", parallel_from)
    return find_texts(texts, keep_arrays=True, **options)


@pytest.mark.parametrize("options", [
    {"shingle_kind": "word", "shingle_size": 3, "method": "lsh"},
    {"shingle_kind": "char", "shingle_size": 5, "method": "lsh", "family": "affine32"},
    {"shingle_kind": "char", "shingle_size": 4, "method": "lsh", "family": "oph",
     "hash_bits": 64},
])
def test_plain_and_parallel_runs_are_identical(monkeypatch, options):
    corpus = planted_corpus(300, doc_words=60, dup_fraction=0.2, exact_copies=5, seed=5)
    texts = list(corpus.texts) + ["Ünïcödé café naïve " * 5, "日本語のテキスト" * 4]
    plain = _run(texts, monkeypatch, 10**18, **options)
    parallel = _run(texts, monkeypatch, 0, **options)
    np.testing.assert_array_equal(plain.sets.offsets, parallel.sets.offsets)
    np.testing.assert_array_equal(plain.sets.values, parallel.sets.values)
    np.testing.assert_array_equal(plain.signatures.matrix, parallel.signatures.matrix)
    np.testing.assert_array_equal(plain.pair_i, parallel.pair_i)
    np.testing.assert_array_equal(plain.pair_j, parallel.pair_j)
    np.testing.assert_array_equal(plain.jaccard, parallel.jaccard)
    assert plain.counts == parallel.counts

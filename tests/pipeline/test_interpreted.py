"""A tiny input runs the kernels' Python source: the same results as the compiled kernels."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from neardup import pipeline
from neardup.pipeline import find_texts
from neardup.synthetic import planted_corpus


def texts() -> list[str]:
    """14 short documents (under the size that runs interpreted), a fifth planted
    near-duplicates, two exact copies, and text outside ASCII."""
    corpus = planted_corpus(14, doc_words=16, dup_fraction=0.25, exact_copies=2,
                            vocabulary=200, seed=9)
    return list(corpus.texts) + ["Ünïcödé café naïve " * 3, "日本語のテキスト" * 3]


OPTIONS = [
    {},  # the default: exact join (a small input)
    {"shingle_kind": "word", "shingle_size": 3, "method": "lsh"},
    {"shingle_kind": "char", "shingle_size": 5, "method": "lsh", "family": "affine32"},
    {"shingle_kind": "char", "shingle_size": 4, "method": "lsh", "family": "oph",
     "hash_bits": 64},
    {"shingle_kind": "word", "shingle_size": 2, "method": "lsh", "sketch": "simhash"},
    {"shingle_kind": "word", "shingle_size": 1, "method": "exact", "measure": "containment",
     "threshold": 0.6},
]


@pytest.mark.parametrize("options", OPTIONS)
def test_interpreted_kernels_give_the_compiled_results(monkeypatch, options):
    docs = texts()
    assert sum(map(len, docs)) <= pipeline.INTERPRETED_CHARACTERS
    interpreted = find_texts(docs, keep_arrays=True, **options)
    monkeypatch.setattr(pipeline, "INTERPRETED_DOCUMENTS", 0)  # the same input, compiled
    compiled = find_texts(docs, keep_arrays=True, **options)
    np.testing.assert_array_equal(interpreted.sets.offsets, compiled.sets.offsets)
    np.testing.assert_array_equal(interpreted.sets.values, compiled.sets.values)
    if compiled.signatures is not None:
        np.testing.assert_array_equal(interpreted.signatures.matrix, compiled.signatures.matrix)
    np.testing.assert_array_equal(interpreted.pair_i, compiled.pair_i)
    np.testing.assert_array_equal(interpreted.pair_j, compiled.pair_j)
    np.testing.assert_array_equal(interpreted.jaccard, compiled.jaccard)
    np.testing.assert_array_equal(interpreted.labels, compiled.labels)
    assert interpreted.counts == compiled.counts
    assert compiled.pair_i.size > 0


def test_a_tiny_file_runs_without_numba(tmp_path):
    path = tmp_path / "three.txt"
    path.write_text("a b c d e f g h i j\na b c d e f g h i k\nsomething else entirely\n")
    code = ("import sys, neardup\n"
            f"r = neardup.find({str(path)!r}, threshold=0.8, out={str(tmp_path / 'out')!r})\n"
            "print(r.counts['pairs'], 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout.split()
    assert out == ["1", "False"]


GO = """package main

import "fmt"

// Sum adds the numbers %d
func Sum(values []int) int {
\ttotal := 0
\tfor _, v := range values {
\t\ttotal += v
\t}
\tfmt.Println("total", total, `raw`, 'x', 0x1F)
\treturn total
}
"""


@pytest.mark.parametrize("options", [
    {"code": "go", "shingle_kind": "word", "shingle_size": 3},
    {"clean": "web", "shingle_kind": "word", "shingle_size": 2},
])
def test_interpreted_and_compiled_runs_write_the_same_files(monkeypatch, tmp_path, options):
    import neardup

    src = tmp_path / "src"
    src.mkdir()
    for k in range(6):  # near-copies: one identifier renamed in each
        text = GO.replace("total", f"total{k % 3}") if options.get("code") else (
            f"<p>Caf\u00e9 na\u00efve {k % 2} &amp; <b>the same words</b> again and again</p>"
            f" <script>x = {k}</script> more of the same text here")
        (src / f"f{k}.go" if options.get("code") else src / f"f{k}.txt").write_text(text)
    assert sum(len(p.read_text()) for p in src.iterdir()) <= pipeline.INTERPRETED_CHARACTERS
    outs = []
    for documents in (pipeline.INTERPRETED_DOCUMENTS, 0):  # interpreted, then compiled
        monkeypatch.setattr(pipeline, "INTERPRETED_DOCUMENTS", documents)
        out = tmp_path / f"out{documents}"
        result = neardup.find(str(src), out=str(out), threshold=0.5, **options)
        assert result.counts["pairs"] > 0
        outs.append(out)
    written = sorted(p.name for p in outs[0].iterdir())
    assert written == sorted(p.name for p in outs[1].iterdir())
    for name in written:
        if name not in ("timings.json", "manifest.json"):  # times; the rest byte for byte
            assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name

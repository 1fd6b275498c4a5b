#!/usr/bin/env python3
"""The LSH stage alone at 100k to 3M documents: does its time grow with the corpus?

Signatures are generated in numpy (K = 128 uniform 32-bit minima per document, 1 % of
the documents near copies of another: each minimum kept with a probability drawn
uniform in [0.75, 1.0], so their buckets are the sizes a real corpus makes), then cut
into 18 x 6 bands (:func:`neardup.lsh.band_keys`, the bands ``neardup find`` picks at
t = 0.8, K = 128) and paired (:func:`neardup.lsh.candidate_pairs`, max_bucket 1000,
star). In the same run, alternating, the stage's earlier algorithm: a
global argsort of each band's n keys, a lexsort of the repeated ones, every band's
pairs sorted, then all of them (``sorted_pairs`` below); both must give the same pairs
and counts. Times are in-process medians of ``--repeats`` runs; the exponent is
log(t(3M) / t(1M)) / log 3 (1.0 is linear).

Run: ``python bench/bench_lsh.py`` (3M documents hold ~2 GB: the signatures, then
the band keys).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
from common import machine_lines
from sections import BENCHMARKS, update_section

from neardup import lsh

BANDS, ROWS, NUM_PERM = 18, 6, 128
COPIES = 0.01


def signatures(n: int, seed: int = 0) -> np.ndarray:
    """(n, 128) uint32 minima, 1 % of the rows near copies of another row."""
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 2**32, size=(n, NUM_PERM), dtype=np.uint32)
    copies = int(n * COPIES)
    target = rng.choice(n, size=copies, replace=False)
    source = (target + rng.integers(1, n, size=copies)) % n
    kept = rng.random((copies, NUM_PERM)) < rng.uniform(0.75, 1.0, size=copies)[:, None]
    matrix[target] = np.where(kept, matrix[source], matrix[target])
    return matrix


def sorted_pairs(keys: np.ndarray, max_bucket: int = 1000, star: bool = True):
    """The stage's earlier algorithm (its numpy, the same pair kernel): (i, j, stats)."""
    n = keys.shape[0]
    stats, codes = lsh.CandidateStats(), []
    for band in range(keys.shape[1]):
        column = keys[:, band]
        order = np.argsort(column)
        sorted_keys = column[order]
        edges = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1], True])
        sizes = np.diff(edges)
        repeated = sizes > 1
        run = np.repeat(np.arange(repeated.size), sizes)
        sizes = sizes[repeated]
        in_repeated = repeated[run]
        members, run = order[in_repeated], run[in_repeated]
        members = members[np.lexsort((members, run))].astype(np.int64)
        starts = np.zeros(sizes.size, dtype=np.int64)
        np.cumsum(sizes[:-1], out=starts[1:])
        if sizes.size:
            stats.largest_bucket = max(stats.largest_bucket, int(sizes.max()))
            big = sizes > max_bucket
            stats.buckets_over_limit += int(big.sum())
            full = (sizes[big] * (sizes[big] - 1)) // 2
            stats.pairs_avoided += int((full - (sizes[big] - 1 if star else 0)).sum())
        band_codes = lsh._bucket_pairs(members, starts, sizes, max_bucket, star, n)
        stats.per_band.append(band_codes.size)
        codes.append(lsh.sorted_unique(band_codes))
    unique = lsh.sorted_unique(np.concatenate(codes))
    return unique // n, unique % n, stats


def timed(work):
    """(work's result, CPU seconds, wall seconds): on a shared machine the process's CPU
    time moves far less with the load than the wall does (every step is one thread)."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = work()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def measure(n: int, repeats: int) -> dict:
    matrix = signatures(n)
    lsh.candidate_pairs(lsh.band_keys(matrix[:1000], BANDS, ROWS))  # compiled outside
    keying = [timed(partial(lsh.band_keys, matrix, BANDS, ROWS))]
    for _ in range(repeats - 1):
        keying.append((None, *timed(partial(lsh.band_keys, matrix, BANDS, ROWS))[1:]))
    keys = keying[0][0]
    del matrix
    linear, sorting = [], []
    for _ in range(repeats):  # alternating, so contention hits both alike
        linear.append(timed(partial(lsh.candidate_pairs, keys)))
        sorting.append(timed(partial(sorted_pairs, keys)))
        (i, j, stats), (si, sj, sstats) = linear[-1][0], sorting[-1][0]
        if not (np.array_equal(i, si) and np.array_equal(j, sj) and stats == sstats):
            raise AssertionError(f"n = {n:,}: the two algorithms disagree")
    row = {"n": n, "candidates": int(i.size), "band_pairs": sum(stats.per_band)}
    for name, runs in (("band_keys", keying), ("pairs", linear), ("sorted", sorting)):
        row[name] = statistics.median(cpu for _, cpu, _ in runs)
        row[name + "_wall"] = statistics.median(wall for *_, wall in runs)
    return row


def exponent(rows: list[dict], field: str) -> str:
    by_n = {r["n"]: r[field] for r in rows}
    if 1_000_000 not in by_n or 3_000_000 not in by_n:
        return "n/a"
    return f"{math.log(by_n[3_000_000] / by_n[1_000_000]) / math.log(3):.2f}"


def report(rows: list[dict], repeats: int, load: str) -> str:
    lines = ["# LSH stage: linear in the corpus", "",
             "<!-- written by bench/bench_lsh.py -->", "",
             f"{BANDS} x {ROWS} bands of K = {NUM_PERM} generated minima, 1 % near copies; "
             f"CPU-seconds of the process (one thread), medians of {repeats} alternating "
             "runs, with the stage's wall seconds beside them. *grouped*: "
             "`lsh.candidate_pairs` (keys cut by their top bits into L2-sized pieces, "
             "grouped by a hash table in each; pairs merged by a counting sort on their "
             "first document); *sorted*: the stage's earlier algorithm (a global argsort "
             "per band, every pair sorted). Both give the same pairs and counts (checked in "
             "the run). The stage `neardup find` times as `lsh` is band keys (unchanged) + "
             "pairs.", "",
             "| documents | band keys | pairs, grouped | pairs, sorted | sorted / grouped "
             "| stage, now | stage, before | stage wall, now | stage wall, before "
             "| candidates | band pairs |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['n']:,} | {r['band_keys']:.3f} | {r['pairs']:.3f} | "
                     f"{r['sorted']:.3f} | {r['sorted'] / r['pairs']:.2f}x | "
                     f"{r['band_keys'] + r['pairs']:.3f} | {r['band_keys'] + r['sorted']:.3f} "
                     f"| {r['band_keys_wall'] + r['pairs_wall']:.3f} | "
                     f"{r['band_keys_wall'] + r['sorted_wall']:.3f} "
                     f"| {r['candidates']:,} | {r['band_pairs']:,} |")
    for r in rows:
        r["stage"], r["stage_before"] = r["band_keys"] + r["pairs"], r["band_keys"] + r["sorted"]
    lines += ["", "Exponent from 1M to 3M documents (log(t(3M) / t(1M)) / log 3; 1.0 is "
              f"linear): pairs grouped **{exponent(rows, 'pairs')}**, sorted "
              f"{exponent(rows, 'sorted')}; band keys {exponent(rows, 'band_keys')}; the stage "
              f"now **{exponent(rows, 'stage')}**, before {exponent(rows, 'stage_before')}.",
              "",
              *machine_lines(), f"- load average while measuring: {load}",
              f"- reproduce: `python bench/bench_lsh.py --repeats {repeats}`"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[100_000, 300_000, 1_000_000, 3_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=BENCHMARKS)
    args = parser.parse_args()
    rows, loads = [], []
    for n in args.sizes:
        rows.append(measure(n, args.repeats))
        loads.append(Path("/proc/loadavg").read_text().split()[0])
        print(rows[-1], f"load {loads[-1]}", file=sys.stderr, flush=True)
    text = report(rows, args.repeats, " / ".join(loads) + " (after each size; 2 cores)")
    update_section("lsh", text, args.out)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

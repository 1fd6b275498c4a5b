"""neardup find NEW --against IDX on Spark (local mode, neardup's own session) and on the local
engine, end to end.

    python bench/bench_spark_against.py --corpus /work/data/scale_100000.jsonl --every 5

The corpus is bench_scale's generated JSON Lines (200 words a document, 1 % planted
near-duplicates, each a few lines after its source); every ``--every``-th line is NEW,
the others are indexed once (``neardup index build``, word 5-grams, t = 0.8, K = 128, on
the local engine), so planted pairs fall across the split. Each run is a fresh
process as a user starts it, ``neardup find NEW --against IDX --out OUT`` with and without
``--engine spark`` (no Spark option), alternating, timed under ``/usr/bin/time -v`` (wall
seconds, peak RSS of the largest process: on Spark the driver's Python, not the JVM). The
pair tables of both engines are compared row for row (they must be equal).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import run_timed, write_engine_section  # noqa: E402

OPTIONS = ["--id-field", "id", "--shingle", "word", "--ngram", "5", "--threshold", "0.8"]


def split(corpus: Path, every: int, folder: Path) -> tuple[Path, Path]:
    """(OLD, NEW): NEW every ``every``-th line of the corpus, OLD the others."""
    folder.mkdir(parents=True, exist_ok=True)
    old, new = folder / "old.jsonl", folder / "new.jsonl"
    with open(corpus, "rb") as source, open(old, "wb") as a, open(new, "wb") as b:
        for k, line in enumerate(source):
            (b if k % every == every - 1 else a).write(line)
    return old, new


def run(new: Path, index: Path, out: Path, engine: str) -> dict:
    command = [sys.executable, "-m", "neardup", "find", str(new), "--against", str(index),
               *OPTIONS[:2], "--quiet", "--top", "0", "--out", str(out),
               "--output-format", "parquet", "--engine", engine]
    _, wall, peak_mib = run_timed(command)
    return {"wall_s": wall, "peak_gib": peak_mib / 1024}


def pairs(out: Path) -> list:
    import neardup

    return neardup.read_results(out, tables=["pairs"])["pairs"].to_pylist()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/data/scale_100000.jsonl"))
    parser.add_argument("--every", type=int, default=5, help="every N-th line is new")
    parser.add_argument("--runs", type=int, default=2, help="alternating runs of each engine")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "against")
    parser.add_argument("--no-write", action="store_true",
                        help="do not update the 'spark-against' section of BENCHMARKS.md")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    old, new = split(args.corpus, args.every, args.cache)
    index = args.cache / "idx"
    if not (index / "manifest.json").is_file():
        _, build_s, _ = run_timed([sys.executable, "-m", "neardup", "index", "build", str(old),
                                   *OPTIONS, "--quiet", "-o", str(index)])
        print(json.dumps({"index build s": build_s}), flush=True)
    times: dict[str, list[dict]] = {"local": [], "spark": []}
    for k in range(args.runs):
        for engine in ("local", "spark"):
            times[engine].append(run(new, index, args.cache / f"out_{engine}", engine))
            print(json.dumps({"engine": engine, "run": k, **times[engine][-1]}), flush=True)
    local_pairs, spark_pairs = (pairs(args.cache / f"out_{e}") for e in ("local", "spark"))
    wall = {e: statistics.median(t["wall_s"] for t in times[e]) for e in times}
    ratios = [s["wall_s"] / loc["wall_s"] for loc, s in zip(times["local"], times["spark"])]
    with_index = sum(row["source_b"] == "index" for row in local_pairs)
    n_new = sum(1 for _ in open(new, "rb"))
    n_old = sum(1 for _ in open(old, "rb"))
    text = "\n".join([
        "| indexed | new | local s | Spark s | Spark / local (per pair) | peak RSS GiB "
        "(local, Spark driver) | pairs (with the index) | same pair rows |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
        f"| {n_old:,} | {n_new:,} | {wall['local']:.1f} | {wall['spark']:.1f} | "
        f"{statistics.median(ratios):.2f}x ({', '.join(f'{r:.1f}' for r in ratios)}) | "
        f"{max(t['peak_gib'] for t in times['local']):.2f}, "
        f"{max(t['peak_gib'] for t in times['spark']):.2f} | {len(local_pairs):,} "
        f"({with_index:,}) | {'yes' if local_pairs == spark_pairs else 'NO'} |",
        "",
        f"Medians of {args.runs} alternating runs; {cores} cores for both engines."])
    print(text)
    if not args.no_write:
        write_engine_section("spark-against", "Spark against an index, end to end",
                             "bench_spark_against.py", __doc__, cores, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

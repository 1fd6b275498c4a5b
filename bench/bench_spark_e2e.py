"""neardup find on Spark (local mode, neardup's own session) against the local engine, end to end.

    python bench/bench_spark_e2e.py --sizes 100000 1000000 --runs 2

Each run is a fresh process as a user starts it: ``neardup find CORPUS --out OUT`` on the
local engine and with ``--engine spark`` (no Spark option: the session sizes itself),
alternating, timed under ``/usr/bin/time -v`` (wall seconds, peak RSS of the largest
process: the JVM on Spark). The corpus is bench_scale's generated JSON Lines (200 words a
document from a Zipf vocabulary, 1 % planted near-duplicates); word 5-grams, t = 0.8,
K = 128. Recall is against the exact join's pairs (``--method exact`` on the local
engine: every pair with J >= t on the same 5-gram sets); the pair sets of both engines
are compared (they must be equal). Per-core throughput is documents per second divided
by the cores both engines use (the machine's). MLlib's join is bench_spark.py's.
``neardup dedup`` on both engines: bench_spark_dedup.py.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import corpus  # noqa: E402
from common import engine_comparison_arguments, run_timed, write_engine_section  # noqa: E402

THRESHOLD = 0.8


def run(path: Path, out: Path, engine: str) -> dict:
    """``engine``: "local", "spark", or "exact" (the local engine's exact join: the truth)."""
    method = "exact" if engine == "exact" else "lsh"
    command = [sys.executable, "-m", "neardup", "find", str(path), "--id-field", "id",
               "--shingle", "word", "--ngram", "5", "--threshold", str(THRESHOLD),
               "--method", method, "--quiet", "--top", "0", "--out", str(out),
               "--output-format", "parquet"]
    if engine == "spark":
        command += ["--engine", "spark"]
    _, wall, peak_mib = run_timed(command)
    return {"wall_s": wall, "peak_gib": peak_mib / 1024}


def pair_set(out: Path) -> set:
    import neardup

    pairs = neardup.read_results(out, tables=["pairs"])["pairs"]
    return set(zip(pairs["doc_a"].to_numpy().tolist(), pairs["doc_b"].to_numpy().tolist()))


def recall(found: set, truth: set) -> float:
    return len(found & truth) / len(truth) if truth else float("nan")


def main() -> int:
    args = engine_comparison_arguments(__doc__.split("\n\n")[0], "spark-e2e").parse_args()
    cores = os.cpu_count() or 1
    rows = []
    for n in args.sizes:
        path, _, _ = corpus(args.cache, n)
        run(path, args.cache / f"e2e_exact_{n}", "exact")
        truth = pair_set(args.cache / f"e2e_exact_{n}")
        times: dict[str, list[dict]] = {"local": [], "spark": []}
        for k in range(args.runs):
            for engine in ("local", "spark"):
                out = args.cache / f"e2e_{engine}_{n}"
                times[engine].append(run(path, out, engine))
                print(json.dumps({"n": n, "engine": engine, "run": k, **times[engine][-1]}),
                      flush=True)
        local_pairs = pair_set(args.cache / f"e2e_local_{n}")
        spark_pairs = pair_set(args.cache / f"e2e_spark_{n}")
        wall = {e: statistics.median(t["wall_s"] for t in times[e]) for e in times}
        rows.append({
            "n": n, "runs": args.runs, "local_s": wall["local"], "spark_s": wall["spark"],
            "ratio": wall["spark"] / wall["local"],
            "local_docs_per_core_s": n / wall["local"] / cores,
            "spark_docs_per_core_s": n / wall["spark"] / cores,
            "local_peak_gib": max(t["peak_gib"] for t in times["local"]),
            "spark_peak_gib": max(t["peak_gib"] for t in times["spark"]),
            "same_pairs": local_pairs == spark_pairs, "pairs": len(local_pairs),
            "recall": recall(spark_pairs, truth), "truth": len(truth),
        })
    text = table(rows, cores)
    print(text)
    if not args.no_write:
        write_engine_section("spark-e2e", "Spark against the local engine, end to end",
                             "bench_spark_e2e.py", __doc__, cores, text)
    return 0


def table(rows: list[dict], cores: int) -> str:
    lines = ["| documents | local s | Spark s | Spark / local | docs/s a core (local, Spark) "
             "| peak RSS GiB (local, Spark driver) | pairs | same pairs | recall (of the exact "
             "join's) |",
             "|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['local_s']:.1f} | {r['spark_s']:.1f} | {r['ratio']:.2f}x | "
            f"{r['local_docs_per_core_s']:,.0f}, {r['spark_docs_per_core_s']:,.0f} | "
            f"{r['local_peak_gib']:.2f}, {r['spark_peak_gib']:.2f} | {r['pairs']:,} | "
            f"{'yes' if r['same_pairs'] else 'NO'} | {r['recall']:.4f} of {r['truth']:,} |")
    lines.append("")
    lines.append(f"Medians of {rows[0]['runs'] if rows else 0} alternating runs; {cores} cores "
                 "for both engines. Peak RSS is the largest process `/usr/bin/time` saw: on "
                 "Spark the driver's Python process, not the JVM it starts (not counted).")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())

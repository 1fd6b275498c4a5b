"""neardup find on Spark (local mode, neardup's own session) against the local engine, end to end.

    python bench/bench_spark_e2e.py --sizes 100000 1000000 --runs 2

Each run is a fresh process as a user starts it: ``neardup find CORPUS --out OUT`` on the
local engine and with ``--engine spark`` (no Spark option: the session sizes itself),
alternating (wall seconds; peak memory: the largest sum of the anonymous resident
memory, RssAnon, of the whole process tree, sampled every 50 ms: on Spark the driver's
Python, the JVM, its executors in local mode, and the Python workers it starts). The
corpus is bench_scale's generated JSON Lines (200 words a
document from a Zipf vocabulary, 1 % planted near-duplicates); word 5-grams, t = 0.8,
K = 128. Recall is against the exact join's pairs (``--method exact`` on the local
engine: every pair with J >= t on the same 5-gram sets); the pair sets of both engines
are compared (they must be equal). Per-core throughput is documents per second divided
by the cores both engines use (the machine's). ``--mllib TABLES`` also runs MLlib's
``MinHashLSH.approxSimilarityJoin`` (bench_spark.py's runner, ``numHashTables=TABLES``, local
mode on the same cores) once per size in a fresh process, on the same word 5-gram sets
(shingled by neardup, the distinct hashes as vector indices): its wall time includes the
session and building its vectors on the driver, its join time does not; its recall is
against the same exact join.
``neardup dedup`` on both engines: bench_spark_dedup.py.
``--before TREE`` also runs the Spark engine of another checkout (its neardup on
``PYTHONPATH``), in the same alternation, for a before/after column; the load average
(1 min) before each run is kept, its median shown.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import corpus  # noqa: E402
from common import engine_comparison_arguments, measure, write_engine_section  # noqa: E402

THRESHOLD = 0.8
EVENT_LOG: list = [None]  # --event-log: the folder Spark's event logs go to


def run(path: Path, out: Path, engine: str, tree: str | None = None) -> dict:
    """``engine``: "local", "spark", or "exact" (the local engine's exact join: the truth);
    ``tree``: a checkout whose neardup runs (on ``PYTHONPATH``), else this one."""
    method = "exact" if engine == "exact" else "lsh"
    command = [sys.executable, "-m", "neardup", "find", str(path.resolve()), "--id-field", "id",
               "--shingle", "word", "--ngram", "5", "--threshold", str(THRESHOLD),
               "--method", method, "--quiet", "--top", "0", "--out", str(out.resolve()),
               "--output-format", "parquet"]
    if engine == "spark":
        command += ["--engine", "spark"]
    load = os.getloadavg()[0]
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = tree
    if engine == "spark" and EVENT_LOG[0] is not None:  # Spark's own record of every job
        env["PYSPARK_SUBMIT_ARGS"] = (f"--conf spark.eventLog.enabled=true --conf "
                                      f"spark.eventLog.dir=file://{EVENT_LOG[0]} pyspark-shell")
    # ``python -m`` puts the working directory first on sys.path, ahead of PYTHONPATH: run
    # in the tree whose neardup is meant (else a --before run imports this checkout's)
    done = measure(command, interval=0.05, env=env, cwd=tree or HERE.parent)
    if done["exit"] != 0:
        raise RuntimeError(f"{command[:4]} failed ({done['exit']}):\n{done['output'][-3000:]}")
    return {"wall_s": done["wall_s"], "peak_gib": done["anon_peak"] / 2**30, "load": load}


def run_mllib(path: Path, out: Path, tables: int) -> dict:
    """MLlib's join on ``path`` in a fresh process (:func:`mllib_main`), timed as ``run``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--mllib-run", str(path),
               str(out), str(tables)]
    load = os.getloadavg()[0]
    timed = measure(command, interval=0.05)
    if timed["exit"] != 0:
        raise RuntimeError(f"MLlib's run failed ({timed['exit']}):\n{timed['output'][-3000:]}")
    done = json.loads(out.read_text())
    return {"wall_s": timed["wall_s"], "peak_gib": timed["anon_peak"] / 2**30, "load": load,
            "join_s": done["join_s"], "pairs": {tuple(p) for p in done["pairs"]}}


def mllib_main(path: str, out: str, tables: int) -> int:
    """The body of ``--mllib-run``: the corpus's word 5-gram sets (documents numbered by line,
    as neardup numbers them), MLlib's join at distance < 1 - t, its pairs written to ``out``."""
    from bench_spark import run_mllib as mllib_join
    from bench_spark import session

    from neardup.shingling import ShingleOptions, shingle

    with open(path, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    sets = shingle(texts, ShingleOptions(kind="word", size=5))
    spark = session(os.cpu_count() or 1)
    found, seconds = mllib_join(spark, sets, THRESHOLD, tables, seed=1)
    spark.stop()
    Path(out).write_text(json.dumps({"join_s": seconds, "pairs": sorted(found)}))
    return 0


def pair_set(out: Path) -> set:
    import neardup

    pairs = neardup.read_results(out, tables=["pairs"])["pairs"]
    return set(zip(pairs["doc_a"].to_numpy().tolist(), pairs["doc_b"].to_numpy().tolist()))


def recall(found: set, truth: set) -> float:
    return len(found & truth) / len(truth) if truth else float("nan")


def main() -> int:
    if sys.argv[1:2] == ["--mllib-run"]:
        return mllib_main(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    parser = engine_comparison_arguments(__doc__.split("\n\n")[0], "spark-e2e")
    parser.add_argument("--before", help="a checkout whose Spark engine runs too (before)")
    parser.add_argument("--mllib", type=int, metavar="TABLES",
                        help="also run MLlib's approxSimilarityJoin with this many hash tables")
    parser.add_argument("--event-log", type=Path,
                        help="write Spark's event logs (every job's times) into this folder")
    args = parser.parse_args()
    if args.event_log is not None:
        args.event_log.mkdir(parents=True, exist_ok=True)
        EVENT_LOG[0] = args.event_log.resolve()
    cores = os.cpu_count() or 1
    rows = []
    for n in args.sizes:
        path, _, _ = corpus(args.cache, n)
        run(path, args.cache / f"e2e_exact_{n}", "exact")
        truth = pair_set(args.cache / f"e2e_exact_{n}")
        variants = ["local", "spark"] + (["before"] if args.before else [])
        times: dict[str, list[dict]] = {v: [] for v in variants}
        for k in range(args.runs):
            for variant in (variants if k % 2 == 0 else variants[::-1]):
                out = args.cache / f"e2e_{variant}_{n}"
                engine, tree = ("spark", args.before) if variant == "before" else (variant, None)
                times[variant].append(run(path, out, engine, tree))
                print(json.dumps({"n": n, "variant": variant, "run": k,
                                  **times[variant][-1]}), flush=True)
        mllib = None
        if args.mllib:
            mllib = run_mllib(path, args.cache / f"e2e_mllib_{n}.json", args.mllib)
            print(json.dumps({"n": n, "variant": "mllib", **{k: v for k, v in mllib.items()
                                                              if k != "pairs"}}), flush=True)
        local_pairs = pair_set(args.cache / f"e2e_local_{n}")
        spark_pairs = pair_set(args.cache / f"e2e_spark_{n}")
        wall = {e: statistics.median(t["wall_s"] for t in times[e]) for e in times}
        ratios = [s["wall_s"] / loc["wall_s"] for s, loc in zip(times["spark"], times["local"])]
        rows.append({
            "n": n, "runs": args.runs, "local_s": wall["local"], "spark_s": wall["spark"],
            "ratio": wall["spark"] / wall["local"], "pair_ratios": ratios,
            "before_s": wall.get("before"),
            "before_same": (pair_set(args.cache / f"e2e_before_{n}") == local_pairs
                            if args.before else None),
            "load": statistics.median(t["load"] for v in times.values() for t in v),
            "local_docs_per_core_s": n / wall["local"] / cores,
            "spark_docs_per_core_s": n / wall["spark"] / cores,
            "local_peak_gib": max(t["peak_gib"] for t in times["local"]),
            "spark_peak_gib": max(t["peak_gib"] for t in times["spark"]),
            "same_pairs": local_pairs == spark_pairs, "pairs": len(local_pairs),
            "recall": recall(spark_pairs, truth), "truth": len(truth),
            "mllib": None if mllib is None else {
                "wall_s": mllib["wall_s"], "join_s": mllib["join_s"], "load": mllib["load"],
                "tables": args.mllib, "pairs": len(mllib["pairs"]),
                "recall": recall(mllib["pairs"], truth),
                "precision": len(mllib["pairs"] & truth) / max(1, len(mllib["pairs"]))},
        })
    before = None
    if args.before:  # named by its commit: the path is this machine's
        commit = subprocess.run(["git", "-C", args.before, "log", "-1", "--format=%h %s"],
                                capture_output=True, text=True).stdout.strip()
        before = f"commit {commit.split(' ')[0]}" if commit else "the given checkout"
    text = table(rows, cores, before)
    print(text)
    if not args.no_write:
        write_engine_section("spark-e2e", "Spark against the local engine, end to end",
                             "bench_spark_e2e.py", __doc__, cores, text)
    return 0


def table(rows: list[dict], cores: int, before: str | None = None) -> str:
    lines = ["| documents | load | local s | Spark s | Spark / local (per pair) | "
             + ("Spark s before | " if before else "")
             + "docs/s a core (local, Spark) | peak memory GiB (local, Spark: every "
             "process) | pairs | "
             "same pairs | recall (of the exact join's) |",
             "|---:|---:|---:|---:|---:|" + ("---:|" if before else "")
             + "---:|---:|---:|---|---:|"]
    for r in rows:
        pairs = ", ".join(f"{x:.2f}" for x in r["pair_ratios"])
        was = (f"{r['before_s']:.1f}{'' if r['before_same'] else ' (pairs differ)'} | "
               if before else "")
        lines.append(
            f"| {r['n']:,} | {r['load']:.1f} | {r['local_s']:.1f} | {r['spark_s']:.1f} | "
            f"{r['ratio']:.2f}x ({pairs}) | {was}"
            f"{r['local_docs_per_core_s']:,.0f}, {r['spark_docs_per_core_s']:,.0f} | "
            f"{r['local_peak_gib']:.2f}, {r['spark_peak_gib']:.2f} | {r['pairs']:,} | "
            f"{'yes' if r['same_pairs'] else 'NO'} | {r['recall']:.4f} of {r['truth']:,} |")
    mllib = [r for r in rows if r.get("mllib")]
    if mllib:
        lines += ["", "| documents | MLlib numHashTables | load | MLlib wall s (join s) | "
                  "MLlib / local | pairs | recall | precision |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in mllib:
            m = r["mllib"]
            lines.append(f"| {r['n']:,} | {m['tables']} | {m['load']:.1f} | "
                         f"{m['wall_s']:.1f} ({m['join_s']:.1f}) | "
                         f"{m['wall_s'] / r['local_s']:.2f}x | {m['pairs']:,} | "
                         f"{m['recall']:.4f} | {m['precision']:.4f} |")
    lines.append("")
    lines.append(f"Medians of {rows[0]['runs'] if rows else 0} alternating runs; {cores} cores "
                 "for both engines; load: the median 1-minute load average before a run "
                 "(the machine is shared: above the core count, every figure is stretched). "
                 + (f"*Spark s before*: the Spark engine of {before} in the same "
                    "alternation. " if before else "")
                 + "Peak memory: the largest sum of RssAnon over the run's process tree, "
                 "sampled every 50 ms (on Spark the driver's Python, the JVM with its "
                 "executors, and the Python workers)."
                 + (" MLlib: one run a size, in a fresh process after the alternation; wall "
                    "includes its session and building its vectors on the driver (a Python "
                    "loop), join s only the fit, the join and collecting its pairs; recall "
                    "and precision against the exact join." if mllib else ""))
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())

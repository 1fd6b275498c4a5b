"""neardup find on Spark (local mode, neardup's own session) against the local engine, end to end.

    python bench/bench_spark_e2e.py --sizes 200000 1000000 --runs 2 --mllib 5 \
        --text-dedup PATH/minhash_spark.py

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
against the same exact join. ``--text-dedup PATH`` also runs text-dedup's Spark script
(``minhash_spark.py`` of github.com/ChenghaoMou/text-dedup at commit 6bb8e89, its last form
with its own connected components in plain PySpark; not part of neardup nor of its published
package, so it is given by path, and the comparison skipped without it) once per size in a
fresh process: ``spark-submit --master local[cores]`` on the corpus written as Parquet, word
5-grams, t, ``--num_perm 128`` (``--text-dedup-perm``) and its own bands for them. For every
tool the table gives CPU-seconds of the whole process tree, and what a dedup by it removes
against the exact join's clusters: documents removed, recall of the removable ones, wrong
removals. ``neardup dedup`` on both engines: bench_spark_dedup.py.
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

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import corpus  # noqa: E402
from common import engine_comparison_arguments, measure, write_engine_section  # noqa: E402

THRESHOLD = 0.8
# MLlib's runner builds every document's vector on the driver: at 1M documents it grew past
# 22 GiB and was killed by the kernel on a 24 GiB machine, so by default it runs up to 200k
MLLIB_MAX = 200_000
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
        # one plain JSON file a run (Spark 4 writes zstd, rolled into a folder, by default)
        env["PYSPARK_SUBMIT_ARGS"] = (f"--conf spark.eventLog.enabled=true --conf "
                                      f"spark.eventLog.dir=file://{EVENT_LOG[0]} --conf "
                                      f"spark.eventLog.compress=false --conf "
                                      f"spark.eventLog.rolling.enabled=false pyspark-shell")
    # ``python -m`` puts the working directory first on sys.path, ahead of PYTHONPATH: run
    # in the tree whose neardup is meant (else a --before run imports this checkout's)
    done = measure(command, interval=0.05, env=env, cwd=tree or HERE.parent)
    if done["exit"] != 0:
        raise RuntimeError(f"{command[:4]} failed ({done['exit']}):\n{done['output'][-3000:]}")
    return {"wall_s": done["wall_s"], "cpu_s": done["tree_cpu_s"],
            "peak_gib": done["anon_peak"] / 2**30, "load": load}


def run_mllib(path: Path, out: Path, tables: int) -> dict:
    """MLlib's join on ``path`` in a fresh process (:func:`mllib_main`), timed as ``run``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--mllib-run", str(path),
               str(out), str(tables)]
    load = os.getloadavg()[0]
    timed = measure(command, interval=0.05)
    if timed["exit"] != 0:
        raise RuntimeError(f"MLlib's run failed ({timed['exit']}):\n{timed['output'][-3000:]}")
    done = json.loads(out.read_text())
    return {"wall_s": timed["wall_s"], "cpu_s": timed["tree_cpu_s"],
            "peak_gib": timed["anon_peak"] / 2**30, "load": load,
            "join_s": done["join_s"], "pairs": {tuple(p) for p in done["pairs"]}}


def parquet_corpus(path: Path, cores: int) -> Path:
    """The JSON Lines corpus ``path`` as a folder of Parquet files (columns id, text, in
    the file's order), written once next to it: at least two files a core and at most
    100,000 rows a file, so a reader of files has a split per core as Spark gives the
    JSON Lines file."""
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    folder = path.with_suffix(".parquet")
    done = folder / "_COMPLETE"
    if done.exists():
        return folder
    table = pj.read_json(path).select(["id", "text"])
    files = max(2 * cores, -(-table.num_rows // 100_000))
    size = -(-table.num_rows // files)
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(files):
        pq.write_table(table.slice(k * size, size), folder / f"part-{k:05d}.parquet")
    done.write_text(f"{table.num_rows}\n")
    return folder


def run_text_dedup(script: Path, parquet: Path, out: Path, cores: int, perm: int) -> dict:
    """text-dedup's ``minhash_spark.py`` as its README runs it, with spark-submit in local
    mode on ``cores`` cores and the settings neardup's own session takes on this machine
    (``local_settings``), on the Parquet copy of the corpus: word 5-grams, t, ``perm``
    permutations and its own bands for them. Its output is the kept rows; their ids."""
    import shutil

    import pyarrow.dataset as ds
    import pyspark

    from neardup._core.machine import machine_memory
    from neardup.spark.session import local_settings

    if out.exists():
        shutil.rmtree(out)
    submit = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"
    settings = [f"--conf={k}={v}" for k, v in local_settings(machine_memory(), cores).items()]
    command = [str(submit), "--master", f"local[{cores}]", *settings,
               "--conf=spark.ui.showConsoleProgress=false", str(script),
               "--input", str(parquet), "--output", str(out), "--column", "text",
               "--threshold", str(THRESHOLD), "--ngram_size", "5", "--num_perm", str(perm)]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    load = os.getloadavg()[0]
    timed = measure(command, interval=0.05, env=env, cwd=out.parent)
    if timed["exit"] != 0:
        raise RuntimeError(f"text-dedup's run failed ({timed['exit']}):\n"
                           f"{timed['output'][-3000:]}")
    # its parts lie in __pid__=K/ folders, which a reader skips by default (leading _)
    parts = [str(p) for p in sorted(out.rglob("part-*.parquet"))]
    if not parts:
        raise RuntimeError(f"text-dedup's run wrote no part file into {out}")
    kept = ds.dataset(parts, format="parquet").to_table(columns=["id"])
    return {"wall_s": timed["wall_s"], "cpu_s": timed["tree_cpu_s"],
            "peak_gib": timed["anon_peak"] / 2**30, "load": load,
            "kept": kept["id"].to_pylist()}


def text_dedup_bands(script: Path, perm: int) -> tuple[int, int]:
    """(bands, rows) text-dedup chooses for t and ``perm``: its ``optimal_param``, read
    from the script (run as its own code, not copied)."""
    import ast

    from scipy.integrate import quad

    tree = ast.parse(script.read_text(encoding="utf-8"))
    (function,) = [node for node in tree.body
                   if isinstance(node, ast.FunctionDef) and node.name == "optimal_param"]
    scope = {"integrate": quad}
    exec(compile(ast.Module([function], []), str(script), "exec"), scope)
    return scope["optimal_param"](THRESHOLD, perm)


def removal(removed: np.ndarray, truth_labels: np.ndarray) -> dict:
    """What a tool's removals (bool[n]) are worth against the exact clusters' labels:
    documents removed; recall of the removable ones (each exact cluster of s documents
    has s - 1 removable; a cluster is credited with the removals among its members, at
    most s - 1, whichever member is kept); wrong removals (a removed document with no
    near-duplicate at t in the exact join)."""
    sizes = np.bincount(truth_labels, minlength=truth_labels.size)
    removed_in = np.bincount(truth_labels[removed], minlength=truth_labels.size)
    removable = int((sizes[sizes > 1] - 1).sum())
    credited = int(np.minimum(removed_in, np.maximum(sizes - 1, 0)).sum())
    wrong = int((removed & (sizes[truth_labels] == 1)).sum())
    return {"removed": int(removed.sum()), "removable": removable,
            "recall": credited / removable if removable else float("nan"), "wrong": wrong}


def removed_by_pairs(n: int, pairs: set) -> np.ndarray:
    """bool[n]: the documents a dedup on these pairs removes: connected components, the
    first document of each kept (neardup's default clusters and representatives)."""
    from neardup.cluster import choose_representatives, cluster_labels

    i, j = (np.array(side, dtype=np.int64) for side in zip(*pairs)) if pairs else (
        np.zeros(0, np.int64), np.zeros(0, np.int64))
    return ~choose_representatives(cluster_labels(n, i, j), "first")


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


def truth_clusters(n: int, truth: set) -> np.ndarray:
    """int64[n]: the exact join's connected components (each document's smallest member)."""
    from neardup.cluster import cluster_labels

    i, j = (np.array(side, dtype=np.int64) for side in zip(*truth)) if truth else (
        np.zeros(0, np.int64), np.zeros(0, np.int64))
    return cluster_labels(n, i, j)


def kept_to_removed(n: int, kept_ids: list) -> np.ndarray:
    """bool[n]: the documents missing from a kept-rows output, by the corpus's ids
    (``d`` and the line number); a kept id twice, or one not in the corpus, is an error."""
    numbers = np.array([int(i[1:]) for i in kept_ids], dtype=np.int64)
    if numbers.size and (numbers.min() < 0 or numbers.max() >= n):
        raise ValueError("the kept rows hold an id that is not the corpus's")
    if np.unique(numbers).size != numbers.size:
        raise ValueError("the kept rows hold an id twice")
    removed = np.ones(n, dtype=bool)
    removed[numbers] = False
    return removed


def recall(found: set, truth: set) -> float:
    return len(found & truth) / len(truth) if truth else float("nan")


def main() -> int:
    if sys.argv[1:2] == ["--mllib-run"]:
        return mllib_main(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    parser = engine_comparison_arguments(__doc__.split("\n\n")[0], "spark-e2e")
    parser.add_argument("--before", help="a checkout whose Spark engine runs too (before)")
    parser.add_argument("--mllib", type=int, metavar="TABLES",
                        help="also run MLlib's approxSimilarityJoin with this many hash tables")
    parser.add_argument("--mllib-max", type=int, default=MLLIB_MAX, metavar="N",
                        help="run MLlib at sizes up to N documents only (its runner builds "
                        "the vectors on the driver)")
    parser.add_argument("--text-dedup", type=Path, metavar="PATH",
                        help="also run text-dedup's Spark script (minhash_spark.py of its "
                        "repository at commit 6bb8e89) from this path")
    parser.add_argument("--text-dedup-perm", type=int, default=128, metavar="K",
                        help="its --num_perm (default 128, the K of the others; its bands "
                        "are its own choice for t and K)")
    parser.add_argument("--event-log", type=Path,
                        help="write Spark's event logs (every job's times) into this folder")
    args = parser.parse_args()
    if args.event_log is not None:
        args.event_log.mkdir(parents=True, exist_ok=True)
        EVENT_LOG[0] = args.event_log.resolve()
    if args.text_dedup is not None and not args.text_dedup.is_file():
        parser.error(f"--text-dedup: no file {args.text_dedup}")
    cores = os.cpu_count() or 1
    rows = []
    for n in args.sizes:
        path, _, _ = corpus(args.cache, n)
        run(path, args.cache / f"e2e_exact_{n}", "exact")
        truth = pair_set(args.cache / f"e2e_exact_{n}")
        truth_labels = truth_clusters(n, truth)
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
        if args.mllib and n <= args.mllib_max:
            mllib = run_mllib(path, args.cache / f"e2e_mllib_{n}.json", args.mllib)
            print(json.dumps({"n": n, "variant": "mllib", **{k: v for k, v in mllib.items()
                                                              if k != "pairs"}}), flush=True)
        text_dedup = None
        if args.text_dedup is not None:
            text_dedup = run_text_dedup(args.text_dedup.resolve(),
                                        parquet_corpus(path, cores),
                                        args.cache / f"e2e_textdedup_{n}", cores,
                                        args.text_dedup_perm)
            print(json.dumps({"n": n, "variant": "text-dedup", **{
                k: v for k, v in text_dedup.items() if k != "kept"}}), flush=True)
        local_pairs = pair_set(args.cache / f"e2e_local_{n}")
        spark_pairs = pair_set(args.cache / f"e2e_spark_{n}")
        removals = {"local": removal(removed_by_pairs(n, local_pairs), truth_labels),
                    "spark": removal(removed_by_pairs(n, spark_pairs), truth_labels)}
        if mllib is not None:
            removals["mllib"] = removal(removed_by_pairs(n, mllib["pairs"]), truth_labels)
        if text_dedup is not None:
            removals["text-dedup"] = removal(kept_to_removed(n, text_dedup["kept"]),
                                             truth_labels)
        cpu = {e: statistics.median(t["cpu_s"] for t in times[e]) for e in times}
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
            "cpu": cpu, "removals": removals,
            "text_dedup": None if text_dedup is None else {
                "wall_s": text_dedup["wall_s"], "cpu_s": text_dedup["cpu_s"],
                "load": text_dedup["load"], "perm": args.text_dedup_perm,
                "bands": text_dedup_bands(args.text_dedup, args.text_dedup_perm)},
            "mllib": None if mllib is None else {
                "wall_s": mllib["wall_s"], "join_s": mllib["join_s"], "load": mllib["load"],
                "cpu_s": mllib["cpu_s"],
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
    lines += removal_table(rows)
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


def removal_table(rows: list[dict]) -> list[str]:
    """Each tool's CPU and what a dedup by it removes, against the exact clusters."""
    lines = ["", "| documents | tool | load | wall s | CPU s (process tree) | "
             "CPU / neardup Spark | removed | recall of removable | wrong removals |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        spark_cpu = r["cpu"]["spark"]
        tools = [("neardup local", "local", r["load"], r["local_s"], r["cpu"]["local"]),
                 ("neardup Spark", "spark", r["load"], r["spark_s"], spark_cpu)]
        if r.get("mllib"):
            m = r["mllib"]
            tools.append((f"MLlib MinHashLSH (T = {m['tables']})", "mllib", m["load"],
                          m["wall_s"], m["cpu_s"]))
        if r.get("text_dedup"):
            t = r["text_dedup"]
            bands, rows_ = t["bands"]
            tools.append((f"text-dedup (K = {t['perm']}, {bands} x {rows_} bands)",
                          "text-dedup", t["load"], t["wall_s"], t["cpu_s"]))
        for name, key, load, wall, cpu in tools:
            got = r["removals"][key]
            lines.append(f"| {r['n']:,} | {name} | {load:.1f} | {wall:.1f} | {cpu:.1f} | "
                         f"{cpu / spark_cpu:.2f}x | {got['removed']:,} | {got['recall']:.4f} "
                         f"of {got['removable']:,} | {got['wrong']:,} |")
    lines.append("")
    lines.append(
        "CPU s: user + system seconds of every process of the run's tree (the driver's "
        "Python, the JVM, its Python workers), each sampled every 50 ms (neardup: the "
        "median of the alternating runs; MLlib and text-dedup: one run). Removed: the "
        "documents a dedup by the tool drops; for the tools that give pairs (neardup, "
        "MLlib), connected components of their pairs with the first document of each kept "
        "(neardup's default); text-dedup writes only the rows it keeps (its own components "
        "of its LSH buckets, unverified, the smallest id kept). Recall of removable: each "
        "cluster of s documents of the exact join (every pair with J >= t) has s - 1 "
        "removable, credited with the tool's removals among its members, at most s - 1. "
        "Wrong removals: removed documents with no near-duplicate at t. text-dedup runs "
        "with spark-submit in local mode on the same cores and the settings neardup's "
        "session gives itself on this machine, on the corpus as Parquet files (id, text).")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())

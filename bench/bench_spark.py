"""neardup on Spark vs MLlib's MinHashLSH.approxSimilarityJoin, same data, same threshold.

Both run in one local SparkSession on the same shingle sets (word 1-grams of a
planted corpus; for MLlib the distinct shingle hashes become consecutive
vector indices, so the sets are identical). MLlib works in Jaccard *distance*:
pairs with 1 - J < 1 - t, and its numHashTables are OR-ed bands of one row
each. Truth is brute force (:func:`neardup.synthetic.brute_force_pairs`).

    python bench/bench_spark.py --docs 5000 --threshold 0.7 [--out BENCHMARKS-spark.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
from sections import update_section

import neardup
from neardup import spark as neardup_spark
from neardup.synthetic import brute_force_pairs, planted_corpus


def session(cores: int):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(f"local[{cores}]").appName("bench-spark")
             .config("spark.sql.shuffle.partitions", str(2 * cores))
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def score(found: set, truth: set) -> tuple[float, float]:
    hit = len(found & truth)
    return hit / max(len(truth), 1), hit / max(len(found), 1)


def run_neardup(spark, texts, ids, options) -> tuple[set, float]:
    df = spark.createDataFrame(list(zip(range(len(texts)), ids, texts)),
                               "position long, id string, text string").persist()
    df.count()
    started = time.perf_counter()
    result = neardup_spark.find(df, order_col="position", **options)
    rows = result.pairs.select("doc_a", "doc_b").collect()
    return {(r[0], r[1]) for r in rows}, time.perf_counter() - started


def run_mllib(spark, sets, threshold: float, tables: int, seed: int) -> tuple[set, float]:
    from pyspark.ml.feature import MinHashLSH
    from pyspark.ml.linalg import SparseVector

    _, columns = np.unique(sets.values, return_inverse=True)
    width = int(columns.max()) + 1
    rows = []
    for d in range(sets.n):
        index = np.sort(columns[sets.offsets[d]:sets.offsets[d + 1]])
        if index.size:  # MLlib refuses empty vectors
            rows.append((d, SparseVector(width, index.tolist(), [1.0] * index.size)))
    df = spark.createDataFrame(rows, ["doc", "features"]).persist()
    df.count()
    started = time.perf_counter()
    model = MinHashLSH(inputCol="features", outputCol="hashes", numHashTables=tables,
                       seed=seed).fit(df)
    joined = model.approxSimilarityJoin(df, df, 1.0 - threshold, distCol="distance")
    pairs = joined.where("datasetA.doc < datasetB.doc").select("datasetA.doc", "datasetB.doc")
    found = {(r[0], r[1]) for r in pairs.collect()}
    return found, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--threshold", type=float, default=0.7)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--tables", type=int, nargs="+", default=[5, 20],
                        help="MLlib numHashTables to try")
    parser.add_argument("--out", help="also write the table to this markdown file")
    parser.add_argument("--no-write", action="store_true",
                        help="do not update the 'spark' section of BENCHMARKS.md")
    args = parser.parse_args(argv)

    corpus = planted_corpus(args.docs, dup_fraction=0.08, similarity=(0.4, 1.0),
                            exact_copies=args.docs // 100, seed=11)
    options = dict(shingle_kind="word", shingle_size=1, threshold=args.threshold, method="lsh")
    started = time.perf_counter()
    local = neardup.find_texts(corpus.texts, corpus.ids, keep_arrays=True, **options)
    local_seconds = time.perf_counter() - started
    bi, bj, _ = brute_force_pairs(local.sets, args.threshold)
    truth = set(zip(bi.tolist(), bj.tolist()))

    spark = session(args.cores)
    rows = []
    found = set(zip(local.pair_i.tolist(), local.pair_j.tolist()))
    rows.append(("neardup, local engine (reference)", f"K=128, {local.plan.bands}x"
                 f"{local.plan.rows}", local_seconds, *score(found, truth), len(found)))
    found, seconds = run_neardup(spark, corpus.texts, corpus.ids, options)
    rows.append(("neardup on Spark", f"K=128, {local.plan.bands}x{local.plan.rows}", seconds,
                 *score(found, truth), len(found)))
    for tables in args.tables:
        found, seconds = run_mllib(spark, local.sets, args.threshold, tables, seed=1)
        rows.append(("MLlib MinHashLSH.approxSimilarityJoin", f"numHashTables={tables}",
                     seconds, *score(found, truth), len(found)))
    spark.stop()

    lines = [f"{args.docs:,} documents (planted near-duplicates, word 1-grams), "
             f"threshold J >= {args.threshold}, {len(truth):,} true pairs; Spark local"
             f"[{args.cores}]; time excludes session start and input creation.", "",
             "| engine | LSH | time (s) | recall | precision | pairs |",
             "|---|---|---:|---:|---:|---:|"]
    lines += [f"| {name} | {lsh} | {sec:.1f} | {rec:.4f} | {prec:.4f} | {n:,} |"
              for name, lsh, sec, rec, prec, n in rows]
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    if not args.no_write:
        update_section("spark", "## Spark engine against MLlib `MinHashLSH`\n\n"
                       f"`python bench/bench_spark.py --docs {args.docs} --threshold "
                       f"{args.threshold}` ({machine()}).\n\n" + table)
    return 0


def machine() -> str:
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"pyspark {pyspark_version()}; shared machine")


def pyspark_version() -> str:
    import pyspark

    return pyspark.__version__


if __name__ == "__main__":
    sys.exit(main())

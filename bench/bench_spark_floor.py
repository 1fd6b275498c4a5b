"""What any Spark run costs on this machine before it does near-duplicate work.

    python bench/bench_spark_floor.py CORPUS.jsonl [--runs 2]

In a fresh process each run (as ``neardup find --engine spark`` starts): a local[cores]
session (no UI), one trivial job (``range(10).count()``: the first job's own start), the
JSON Lines file read as lines by Spark and counted (no Python), then the same lines handed
to Python workers in Arrow batches (``mapInArrow``), each worker returning one row, and
summed. Seconds of each step, printed as one JSON line a run. This is the floor of a
Spark design that reads the file with Spark and touches each line in Python once; the
end-to-end comparison is bench_spark_e2e.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def one_run(path: str) -> dict:
    started = time.perf_counter()
    import pyarrow as pa
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{os.cpu_count() or 1}]")
             .config("spark.ui.enabled", "false").getOrCreate())
    session = time.perf_counter()
    spark.range(10).count()
    first_job = time.perf_counter()
    lines = spark.read.text(path)
    n = lines.count()
    counted = time.perf_counter()

    def body(batches):
        rows = 0
        for batch in batches:
            rows += batch.num_rows
        yield pa.RecordBatch.from_pydict({"rows": [rows]})

    seen = lines.mapInArrow(body, "rows long").agg({"rows": "sum"}).first()[0]
    handed = time.perf_counter()
    spark.stop()
    return {"lines": n, "seen_by_python": seen, "session_s": round(session - started, 2),
            "first_job_s": round(first_job - session, 2),
            "count_lines_s": round(counted - first_job, 2),
            "to_python_and_back_s": round(handed - counted, 2),
            "total_s": round(handed - started, 2)}


def main() -> int:
    if sys.argv[1:2] == ["--one-run"]:
        print(json.dumps(one_run(sys.argv[2])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}  # the workers run this Python
    for _ in range(args.runs):
        done = subprocess.run([sys.executable, __file__, "--one-run", args.corpus], env=env,
                              capture_output=True, text=True, check=True)
        print(done.stdout.strip().splitlines()[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

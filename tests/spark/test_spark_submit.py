"""The cluster recipe of the README and docs/spark.md, end to end: a wheel built from this
checkout, shipped as a zip (``spark-submit --py-files neardup.zip``), imported from it by
the driver and by the Python workers of an interpreter that has neardup's dependencies but
not neardup, and giving ``find_texts``'s counts and pairs. Slow (a JVM, two Spark jobs,
the kernels compiled from the archive): about a minute on two cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import neardup

OPTIONS = dict(shingle_kind="word", shingle_size=2, threshold=0.7, method="lsh")

JOB = """\
import json
import sys

import neardup
import neardup.spark
from pyspark.sql import SparkSession

texts_path, archive, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if not neardup.__file__.startswith(archive):  # the shipped zip, not an installed copy
    sys.exit(f"neardup imported from {neardup.__file__}, not from {archive}")
spark = SparkSession.builder.appName("neardup-from-a-wheel").getOrCreate()
with open(texts_path, encoding="utf-8") as f:
    texts = json.load(f)
df = spark.createDataFrame([(k, str(k + 1), t) for k, t in enumerate(texts)],
                           "doc long, id string, text string")
result = neardup.spark.find(df, text_col="text", id_col="id", order_col="doc", **options)


def where(_):
    import neardup

    yield neardup.__file__


workers = spark.sparkContext.parallelize(range(2), 2).mapPartitions(where).collect()
pairs = sorted(tuple(row) for row in result.pairs.select("id_a", "id_b").collect())
print(json.dumps({"driver": neardup.__file__, "workers": sorted(set(workers)),
                  "counts": result.counts, "pairs": pairs}))
spark.stop()
"""


def corpus() -> list[str]:
    """50 texts: 36 different, 7 copies (one of them twice) and 7 near copies."""
    topics = ["rivers", "engines", "gardens", "markets", "storms", "museums"]
    base = [f"note {k} on {topics[k % 6]}: the {k * 7 % 11}th survey counted {k * 37 % 101} "
            f"sites, {k * 13 % 17} of them new, across district {k % 9} this spring"
            for k in range(36)]
    copies = [base[k] for k in (0, 3, 3, 8, 15, 21, 30)]
    near = [base[k].replace("this spring", "this autumn") for k in (1, 5, 9, 14, 22, 27, 33)]
    texts = base + copies + near
    assert len(texts) == 50
    return texts


@pytest.mark.spark
@pytest.mark.slow
def test_spark_submit_py_files_runs_the_wheel_on_driver_and_workers(
        tmp_path, spark_home, neardup_zip, python_without_neardup, submit_env):
    archive, python = neardup_zip, python_without_neardup
    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(corpus()))
    (tmp_path / "job.py").write_text(JOB)
    env = submit_env(PYSPARK_PYTHON=str(python), NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    run = subprocess.run(
        [str(spark_home / "bin" / "spark-submit"), "--master", "local[2]",
         "--py-files", str(archive),
         "--conf", "spark.sql.shuffle.partitions=4", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.ui.showConsoleProgress=false",
         "job.py", str(texts), str(archive), json.dumps(OPTIONS)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])

    assert got["driver"].startswith(str(archive))
    assert got["workers"] and all(f"{os.sep}neardup.zip{os.sep}neardup{os.sep}" in path
                                  for path in got["workers"]), got["workers"]
    local = neardup.find_texts(corpus(), [str(k + 1) for k in range(50)], **OPTIONS)
    assert got["counts"] == json.loads(json.dumps(local.counts))
    assert local.counts["identical_pairs"] == 8 and local.counts["near_duplicate_pairs"] >= 7
    table = local.pairs_table()
    assert got["pairs"] == sorted(map(list, zip(table.column("id_a").to_pylist(),
                                                table.column("id_b").to_pylist())))


@pytest.mark.spark
@pytest.mark.slow
def test_quiet_spark_run_prints_nothing_on_stderr(tmp_path, write_lines, spark_home):
    """``--engine spark -q`` in local mode: neither Spark's log (WARN lines, the log4j
    profile and log level banners) nor the JVM's incubator-module warning reaches stderr."""
    corpus_file = tmp_path / "texts.txt"
    write_lines(corpus_file, corpus())
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_CONF_DIR",
                        "LOG4J_CONFIGURATION_FILE", "PYSPARK_SUBMIT_ARGS")}
    env["SPARK_HOME"] = str(spark_home)
    run = subprocess.run([sys.executable, "-m", "neardup", "find", str(corpus_file),
                          "--engine", "spark", "-t", "0.7", "--shingle", "word", "--ngram", "2",
                          "--out", str(tmp_path / "out"), "-q"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr == ""
    assert "pairs 15 document pairs" in run.stdout, run.stdout

"""The cluster recipe of the README and docs/spark.md, end to end: a wheel built from this
checkout, shipped as a zip (``spark-submit --py-files neardup.zip``), imported from it by
the driver and by the Python workers of an interpreter that has neardup's dependencies but
not neardup, and giving ``find_texts``'s counts and pairs. Slow (a JVM, two Spark jobs,
the kernels compiled from the archive): about a minute on two cores."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import neardup

try:
    import pyspark
except ImportError:  # pragma: no cover - without the spark extra
    pyspark = None

SPARK_HOME = Path(pyspark.__file__).resolve().parent if pyspark else None
SPARK_SUBMIT = SPARK_HOME / "bin" / "spark-submit" if SPARK_HOME else None


# pyspark and Java: the spark marker (tests/conftest.py); spark-submit itself: here
needs_spark_submit = pytest.mark.skipif(
    pyspark is not None and not os.access(SPARK_SUBMIT, os.X_OK),
    reason=f"no spark-submit at {SPARK_SUBMIT}")
ROOT = Path(__file__).resolve().parents[2]
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


def dependencies_only(where: Path) -> Path:
    """An interpreter with this one's packages (numpy, numba, pyarrow, pyspark) but no
    neardup: a venv whose .pth lists this interpreter's site-packages. Their own .pth files
    (an editable install of neardup among them) are not read from there."""
    venv.create(where, with_pip=False, symlinks=os.name != "nt")
    python = where / "bin" / "python"
    target = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    Path(target, "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


@pytest.mark.spark
@pytest.mark.slow
@needs_spark_submit
def test_spark_submit_py_files_runs_the_wheel_on_driver_and_workers(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                    "-w", str(dist)], check=True)
    (wheel,) = dist.glob("neardup-*.whl")
    archive = dist / "neardup.zip"  # --py-files puts .zip, .egg, .jar on the workers' path
    shutil.copyfile(wheel, archive)
    python = dependencies_only(tmp_path / "env")
    found = subprocess.run([str(python), "-c", "import neardup"], capture_output=True,
                           cwd=tmp_path)
    assert found.returncode != 0, "the job's interpreter must not have neardup of its own"

    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(corpus()))
    (tmp_path / "job.py").write_text(JOB)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_DRIVER_PYTHON", "SPARK_CONF_DIR")}
    env.update(PYSPARK_PYTHON=str(python), SPARK_HOME=str(SPARK_HOME),
               NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    run = subprocess.run(
        [str(SPARK_SUBMIT), "--master", "local[2]", "--py-files", str(archive),
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
@needs_spark_submit
def test_quiet_spark_run_prints_nothing_on_stderr(tmp_path, write_lines):
    """``--engine spark -q`` in local mode: neither Spark's log (WARN lines, the log4j
    profile and log level banners) nor the JVM's incubator-module warning reaches stderr."""
    corpus_file = tmp_path / "texts.txt"
    write_lines(corpus_file, corpus())
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_CONF_DIR",
                        "LOG4J_CONFIGURATION_FILE", "PYSPARK_SUBMIT_ARGS")}
    env["SPARK_HOME"] = str(SPARK_HOME)
    run = subprocess.run([sys.executable, "-m", "neardup", "find", str(corpus_file),
                          "--engine", "spark", "-t", "0.7", "--shingle", "word", "--ngram", "2",
                          "--out", str(tmp_path / "out"), "-q"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr == ""
    assert "pairs 15 document pairs" in run.stdout, run.stdout

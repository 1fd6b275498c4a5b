"""What the Spark tests share: the local[2] session (``spark``), and for the tests that run
Spark's own launchers (test_spark_submit.py, test_cluster.py) pyspark's Spark home, the
wheel of this checkout zipped for ``--py-files``, an interpreter
with neardup's dependencies but not neardup, and the environment those launchers get.

Session-scoped: the wheel is built once (seconds) for every test that ships it."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spark_home() -> Path:
    """pyspark's package folder, Spark's home (bin/spark-submit, bin/spark-class); skips the
    test where pyspark ships no runnable spark-submit (pyspark and Java themselves: the
    spark marker, tests/conftest.py)."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not os.access(home / "bin" / "spark-submit", os.X_OK):
        pytest.skip(f"no spark-submit at {home / 'bin' / 'spark-submit'}")
    return home


@pytest.fixture(scope="session")
def neardup_zip(tmp_path_factory) -> Path:
    """A wheel built from this checkout, copied to ``neardup.zip``: --py-files puts .zip,
    .egg and .jar files on the Python workers' path, not .whl (docs/spark.md)."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                    "-w", str(dist)], check=True)
    (wheel,) = dist.glob("neardup-*.whl")
    archive = dist / "neardup.zip"
    shutil.copyfile(wheel, archive)
    return archive


@pytest.fixture(scope="session")
def python_without_neardup(tmp_path_factory) -> Path:
    """An interpreter with this one's packages (numpy, numba, pyarrow, pyspark) but no
    neardup: a venv whose .pth lists this interpreter's site-packages. Their own .pth files
    (an editable install of neardup among them) are not read from there, so a job run by it
    imports neardup from the shipped zip or fails."""
    where = tmp_path_factory.mktemp("env")
    venv.create(where, with_pip=False, symlinks=os.name != "nt")
    python = where / "bin" / "python"
    target = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    Path(target, "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    found = subprocess.run([str(python), "-c", "import neardup"], capture_output=True,
                           cwd=where, env=env)
    assert found.returncode != 0, "the job's interpreter must not have neardup of its own"
    return python


@pytest.fixture(scope="session")
def submit_env(spark_home):
    """``submit_env(**extra)``: this process's environment for Spark's launchers, without
    what would bring neardup or settings from elsewhere (PYTHONPATH, PYSPARK_DRIVER_PYTHON,
    SPARK_CONF_DIR), with SPARK_HOME and ``extra``."""

    def env(**extra: str) -> dict[str, str]:
        out = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYSPARK_DRIVER_PYTHON", "SPARK_CONF_DIR")}
        out.update(SPARK_HOME=str(spark_home), **extra)
        return out

    return env


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers import neardup from this env
    # 6 GiB: fixtures keep results alive with their broadcast joins (2 GiB ran out of heap
    # once the dedup tests joined them, 3 and 4 GiB of memory for aggregation and for a
    # broadcast in fresh-clone CI runs; caches are now dropped after each test,
    # release_caches); one run needs far less (a new JVM only: an earlier test's session is
    # reused as is)
    session = (SparkSession.builder.master("local[2]").appName("neardup-tests")
               .config("spark.driver.memory", "6g")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def release_caches():
    """After each test, the DataFrames its runs persisted are dropped: results are cached
    for the life of a run, and a session shared by every module would otherwise hold them
    all (memory for aggregation ran out once several modules' caches were kept)."""
    yield
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # no pyspark: the spark tests skipped
        return
    session = SparkSession.getActiveSession()
    if session is not None:
        session.catalog.clearCache()


@pytest.fixture(autouse=True)
def small_parts(monkeypatch):
    """Parts of a few dozen rows (the defaults hold millions), so the test corpora's
    tables and copies are written as several parts, by several tasks."""
    try:
        from neardup.spark import dedup, write
    except ImportError:  # no pyspark: the spark tests skipped
        return
    monkeypatch.setattr(write, "PART_ROWS", 40)
    monkeypatch.setattr(dedup, "COPY_PART_ROWS", 16)


@pytest.fixture
def many_parts(spark):
    """Spark's adaptive execution keeps its partitions (it would join a small table's into
    one), so a table is written as several parts."""
    key = "spark.sql.adaptive.coalescePartitions.enabled"
    before = spark.conf.get(key)
    spark.conf.set(key, "false")
    yield
    spark.conf.set(key, before)


@pytest.fixture
def small_splits(spark, many_parts):
    """Input files split into several partitions, so copies are several parts."""
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, "4096")
    yield
    spark.conf.set(key, before)

"""The daemon of neardup's local sessions imports pyspark from its installed package, not
from the zip Spark puts first on the workers' path (neardup._core.spark_daemon)."""

from __future__ import annotations

from pathlib import Path

from neardup._core.spark_daemon import installed_first


def _package(root: Path) -> Path:
    """A pyspark package under ``root`` with its own python/lib/pyspark.zip; the zip."""
    (root / "pyspark" / "python" / "lib").mkdir(parents=True)
    (root / "pyspark" / "__init__.py").write_text("")
    zipped = root / "pyspark" / "python" / "lib" / "pyspark.zip"
    zipped.write_bytes(b"")
    return zipped


def test_the_installed_package_s_own_zip_is_dropped_and_the_rest_of_the_path_kept(tmp_path):
    zipped = _package(tmp_path / "site")
    py4j = str(zipped.with_name("py4j-0.10.9.9-src.zip"))
    path = [str(zipped), py4j, "/work/x", str(tmp_path / "site")]
    assert installed_first(path) == [py4j, "/work/x", str(tmp_path / "site")]


def test_a_zip_of_another_spark_or_with_no_installed_pyspark_is_kept(tmp_path):
    _package(tmp_path / "site")
    other = _package(tmp_path / "spark-home")  # a Spark home whose pyspark is not on the path
    path = [str(other), str(tmp_path / "site")]
    assert installed_first(path) == path
    alone = [str(other), "/nowhere"]
    assert installed_first(alone) == alone


PRELOAD_CHILD = r"""
import os, sys
from neardup._core import spark_daemon
missing = spark_daemon.preload()
loaded = [m for m in ("numba", "pyarrow", "pyspark.worker", "neardup.spark.read",
                      "neardup.spark.stages", "numba.np.arraymath") if m in sys.modules]
print("missing", missing, "loaded", loaded, flush=True)
import pyarrow as pa
from neardup.config import FindConfig
from neardup.spark.stages import _signer

config = FindConfig(threshold=0.8, shingle_kind="word", shingle_size=2)
texts = [f"w{k} w{k + 1} w{k + 2} w{k + 3} shared words here" for k in range(300)]
child = os.fork()
if child == 0:  # a worker: forked by the daemon, its kernels run there
    signed = _signer(config, config.band_plan(), None, None)(texts)
    with pa.OSFile(sys.argv[1], "wb") as f:
        f.write(signed[4].to_pylist().__repr__().encode())
    os._exit(0)
assert os.waitpid(child, 0)[1] == 0
signed = _signer(config, config.band_plan(), None, None)(texts)
print("same", open(sys.argv[1]).read() == repr(signed[4].to_pylist()))
"""


def test_the_daemon_preloads_what_workers_import_and_its_forked_workers_sign(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", PRELOAD_CHILD, str(tmp_path / "signed")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert ("missing [] loaded ['numba', 'pyarrow', 'pyspark.worker', 'neardup.spark.read', "
            "'neardup.spark.stages', 'numba.np.arraymath']") in done.stdout
    assert "same True" in done.stdout

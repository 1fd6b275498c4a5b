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

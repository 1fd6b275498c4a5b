"""repeats on Spark: the same table as the local engine's (rows, order, columns, types)
and the same output file bytes, for every unit, with and without --top, on planted
corpora read in several partitions, and with hash collisions forced."""

from __future__ import annotations

import os

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from neardup.cli import main  # noqa: E402
from neardup.shingling import normalize_light  # noqa: E402
from neardup.spark.repeats import repeats_sources  # noqa: E402
from neardup.units import UnitOptions  # noqa: E402
from tests.spark import test_spans, test_units  # noqa: E402
from tests.spark.settings import split_inputs  # noqa: E402


@pytest.fixture
def small_splits(spark):
    with split_inputs(spark, 8192):
        yield


@pytest.mark.parametrize(("corpus", "unit", "min_tokens", "top"), [
    ("units", "line", 50, None), ("units", "paragraph", 50, 3),
    ("units", "sentences:2", 50, None), ("units", "sentences:3", 50, 5),
    ("spans", "span", 3, None), ("spans", "span", 50, None), ("spans", "span", 5, 4)])
def test_spark_table_is_the_local_table(spark, tmp_path, small_splits, corpus, unit,
                                        min_tokens, top):
    path = (test_units if corpus == "units" else test_spans)._corpus(tmp_path)
    options = dict(unit=unit, min_tokens=min_tokens, top=top, id="id", max_chars=40)
    local = neardup.repeats(path, tmp_path / "local.csv", **options)
    table = neardup.repeats(path, tmp_path / "spark.csv", engine="spark", **options)
    assert table.equals(local) and table.schema == local.schema
    assert (tmp_path / "spark.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert local.num_rows == (top or local.num_rows) and local.num_rows >= 3
    full = neardup.repeats(path, unit=unit, min_tokens=min_tokens, id="id")
    assert local.num_rows == min(top or full.num_rows, full.num_rows)


@pytest.mark.parametrize(("unit", "min_tokens"), [("line", 50), ("span", 4)])
def test_forced_hash_collisions_list_the_true_repeats(spark, tmp_path, small_splits, unit,
                                                      min_tokens):
    """Pieces (lines; span: tokens) hashed by their length mod 2: the bytes decide, and the
    table is the local one (computed with the real hash)."""
    def weak(values, offsets):
        return (np.diff(offsets) % 2).astype(np.uint64)

    path = (test_units if unit == "line" else test_spans)._corpus(tmp_path)
    local = neardup.repeats(path, unit=unit, min_tokens=min_tokens)
    table = repeats_sources([os.fspath(path)], UnitOptions(unit, min_tokens=min_tokens),
                            spark=spark, normalize=normalize_light, hashes=weak)
    assert table.equals(local) and local.num_rows > 3


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_cli_repeats_engine_spark_writes_the_local_file(spark, tmp_path, small_splits,
                                                        suffix):
    path = test_spans._corpus(tmp_path)
    args = ["repeats", str(path), "--unit", "span", "--min-tokens", "6", "--top", "10"]
    assert main([*args, "-o", str(tmp_path / f"local.{suffix}")]) == 0
    assert main([*args, "--engine", "spark", "-o", str(tmp_path / f"spark.{suffix}")]) == 0
    assert (tmp_path / f"spark.{suffix}").read_bytes() == \
        (tmp_path / f"local.{suffix}").read_bytes()


def test_memory_limit_with_spark_is_refused_by_name(tmp_path):
    path = test_spans._corpus(tmp_path, ["a b"])
    with pytest.raises(ValueError, match="^--memory-limit is not supported by the Spark "
                                         "engine: it bounds the local engine"):
        neardup.repeats(path, engine="spark", memory_limit="1G")

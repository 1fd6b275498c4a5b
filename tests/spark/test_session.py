"""The local session neardup starts sizes itself from the machine: a pure function of
(memory, cores), checked here without starting Spark."""

from __future__ import annotations

import pytest

from neardup.spark import session

GIB = 1 << 30
KEYS = ["spark.driver.memory", "spark.driver.maxResultSize", "spark.sql.shuffle.partitions",
        "spark.sql.execution.arrow.maxRecordsPerBatch"]


def _mib(value: str) -> int:
    assert value.endswith("m")  # a size Spark reads: whole MiB
    return int(value[:-1])


@pytest.mark.parametrize(("memory", "cores", "heap", "partitions", "batch"), [
    (8 * GIB, 4, 4096, 16, 8000),  # a laptop: half the memory
    (24 * GIB, 2, 12288, 8, 10_000),  # Spark's 10,000 rows at most
    (512 * GIB, 64, 31 * 1024, 256, 10_000),  # the heap stops at 31 GiB (compressed oops)
    (GIB, 16, 1024, 64, 1_000),  # at least Spark's 1 GiB heap, batches of 1,000 rows
    (3 * GIB, 0, 1536, 4, 10_000),  # no core count: one
])
def test_settings_from_memory_and_cores(memory, cores, heap, partitions, batch):
    settings = session.local_settings(memory, cores)
    assert list(settings) == KEYS
    assert _mib(settings["spark.driver.memory"]) == heap
    assert _mib(settings["spark.driver.maxResultSize"]) == max(1024, heap // 2)
    assert int(settings["spark.sql.shuffle.partitions"]) == partitions
    assert int(settings["spark.sql.execution.arrow.maxRecordsPerBatch"]) == batch


def test_settings_grow_with_the_machine_and_leave_room_for_the_python_workers():
    previous = 0
    for gib in (1, 2, 4, 16, 64, 256, 1024):
        heap = _mib(session.local_settings(gib * GIB, 8)["spark.driver.memory"])
        assert heap >= previous and heap * (1 << 20) <= max(GIB, gib * GIB // 2)
        previous = heap
    batches = [int(session.local_settings(16 * GIB, cores)
                   ["spark.sql.execution.arrow.maxRecordsPerBatch"]) for cores in (1, 8, 32, 128)]
    assert batches == sorted(batches, reverse=True)  # less memory a core: smaller batches
    assert all(b % 1000 == 0 and 1000 <= b <= 10_000 for b in batches)


def test_the_machine_is_measured():
    assert session.machine_memory() > 256 * (1 << 20)
    assert session.machine_cores() >= 1


def test_a_users_own_settings_are_kept(tmp_path, monkeypatch):
    (tmp_path / "spark-defaults.conf").write_text(
        "# comment\nspark.driver.memory 3g\nspark.executor.cores=2\n\n")
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS",
                       "--conf spark.sql.shuffle.partitions=7 --driver-memory 2g pyspark-shell")
    assert session._configured_keys(str(tmp_path)) == {
        "spark.driver.memory", "spark.executor.cores", "spark.sql.shuffle.partitions"}


def test_java_options_given_to_the_driver_are_the_users_own(tmp_path, monkeypatch):
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-java-options -Xss4m pyspark-shell")
    assert session._configured_keys(str(tmp_path)) == {"spark.driver.extraJavaOptions"}

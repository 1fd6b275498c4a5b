"""The Spark engine says its stages as the local engine does, and the Spark jobs and tasks
each ran: the figures are those of Spark's status tracker, every job counted once."""

import re

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

from neardup import spark as neardup_spark  # noqa: E402
from neardup.spark.progress import SparkStageTimer  # noqa: E402

DONE = re.compile(r"^\[neardup\] (.+?) done in [0-9.]+ s \((?:(\d+) Spark jobs?, ([\d,]+) tasks?"
                  r"|no Spark job)\)$")
TOTAL = re.compile(r"^\[neardup\] Spark ran ([\d,]+) jobs? and ([\d,]+) tasks? in all$")


def _corpus(path, n=120):
    import json

    words = [f"w{k}" for k in range(400)]
    with open(path, "w") as f:
        for i in range(n):
            text = " ".join(words[(i // 3 * 7 + k) % 400] for k in range(40))  # triples alike
            f.write(json.dumps({"id": f"d{i}", "text": text}) + "\n")


def test_find_says_each_stage_and_counts_every_spark_job_once(spark, tmp_path, capsys):
    _corpus(tmp_path / "c.jsonl")
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    result = neardup_spark.find_sources([str(tmp_path / "c.jsonl")], out=tmp_path / "out",
                                        spark=spark, id_field="id", shingle_kind="word",
                                        shingle_size=3, threshold=0.8, method="lsh",
                                        quiet=False)
    ran = set(tracker.getJobIdsForGroup()) - before
    lines = capsys.readouterr().err.splitlines()
    done = [m for m in map(DONE.match, lines) if m]
    stages = [m.group(1) for m in done]
    for name in ("read, shingle and sign", "group identical sets", "lsh", "verify", "cluster",
                 "count", "write"):
        assert name in stages and f"[neardup] {name}" in "\n".join(lines)
    jobs = sum(int(m.group(2) or 0) for m in done)
    tasks = sum(int((m.group(3) or "0").replace(",", "")) for m in done)
    (total,) = [m for m in map(TOTAL.match, lines) if m]
    assert jobs == int(total.group(1).replace(",", "")) == len(ran) > 0
    assert tasks == int(total.group(2).replace(",", "")) == sum(
        result.timer.tasks.values()) > 0
    assert result.timer.totals() == (len(ran), tasks)
    # the results folder's own write time, not the stage's added to it
    assert set(result.seconds) >= {"read, shingle and sign", "lsh", "write"}


def test_a_quiet_run_prints_no_stage(spark, tmp_path, capsys):
    _corpus(tmp_path / "c.jsonl", n=30)
    neardup_spark.find_sources([str(tmp_path / "c.jsonl")], spark=spark, id_field="id",
                               shingle_kind="word", shingle_size=3, threshold=0.8,
                               method="lsh", quiet=True)
    assert "[neardup]" not in capsys.readouterr().err


def test_a_long_stage_says_its_tasks_as_they_run(spark, capsys):
    timer = SparkStageTimer(spark, quiet=False, every=0.05)
    with timer.stage("slow"):
        spark.sparkContext.parallelize(range(4), 2).map(_sleepy).collect()
    err = capsys.readouterr().err
    assert re.search(r"\[neardup\] slow: \d+ of 2 tasks done in 1 running Spark stage", err)
    assert timer.jobs == {"slow": 1} and timer.tasks == {"slow": 2}


def _sleepy(x):
    import time

    time.sleep(0.5)
    return x

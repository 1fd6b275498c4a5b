"""A find on Spark runs in a handful of wide stages: its Spark jobs counted in Spark's own
event log, of a ``neardup find --engine spark`` in a process of its own (about 30 s)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")
pytestmark = [pytest.mark.spark, pytest.mark.slow]

MAX_JOBS = 12


def _corpus(path: Path) -> None:
    """3,000 documents: 300 texts, each ten times with one word changed."""
    rng = random.Random(1)
    base = [[f"w{rng.randrange(5000)}" for _ in range(60)] for _ in range(300)]
    with path.open("w") as f:
        for i in range(3000):
            words = list(base[i % 300])
            words[rng.randrange(60)] = "x"
            f.write(json.dumps({"id": str(i), "text": " ".join(words)}) + "\n")


def test_find_runs_in_at_most_twelve_spark_jobs_by_the_event_log(tmp_path):
    _corpus(tmp_path / "c.jsonl")
    logs = tmp_path / "events"
    logs.mkdir()
    env = dict(os.environ, PYSPARK_SUBMIT_ARGS=(
        f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://{logs} "
        "--conf spark.eventLog.compress=false --conf spark.eventLog.rolling.enabled=false "
        "pyspark-shell"))
    done = subprocess.run([sys.executable, "-m", "neardup", "find", str(tmp_path / "c.jsonl"),
                           "--id-field", "id", "--engine", "spark", "--out",
                           str(tmp_path / "out")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (log,) = [p for p in logs.iterdir() if p.is_file()]
    events = [json.loads(line)["Event"] for line in log.read_text().splitlines() if line]
    jobs = events.count("SparkListenerJobStart")
    assert events.count("SparkListenerJobEnd") == jobs
    assert 0 < jobs <= MAX_JOBS, f"{jobs} Spark jobs"
    # the session neardup started: its worker daemon and its JVM's quick compiler
    (environment,) = [json.loads(line) for line in log.read_text().splitlines()
                      if '"SparkListenerEnvironmentUpdate"' in line]
    properties = dict(environment["Spark Properties"])
    assert properties["spark.python.daemon.module"] == "neardup._core.spark_daemon"
    assert "-XX:TieredStopAtLevel=1" in properties["spark.driver.extraJavaOptions"].split()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counts"]["documents"] == 3000
    assert summary["counts"]["pairs"] == 300 * 45  # ten near-copies of each text

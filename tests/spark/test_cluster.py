"""neardup on a real Spark cluster: a standalone master and two workers on 127.0.0.1
(pyspark's ``bin/spark-class``), a job submitted to it with ``spark-submit --master
spark://127.0.0.1:PORT --py-files neardup.zip`` (docs/spark.md, "A standalone cluster on
one machine"), run by an interpreter without neardup of its own. Two executors, one per
worker, both run tasks of ``neardup.spark.find_sources`` on a JSON Lines corpus read in
several partitions, and the pairs are the local engine's. Every process started here (the
three daemons, the driver, the executors and their Python workers) is stopped at the end,
failed or not, and checked gone. Slow: six JVMs and the kernels compiled on each
executor, about two minutes on two cores shared with other Spark runs."""

from __future__ import annotations

import json
import os
import time

import pytest

import neardup
from neardup.spark.standalone import HOST, StandaloneCluster
from neardup.synthetic import planted_corpus

pytestmark = [pytest.mark.spark, pytest.mark.slow]

OPTIONS = dict(shingle_kind="word", shingle_size=2, threshold=0.7, method="lsh")
WORKERS = 2
# short-lived JVMs on two cores: the quick JIT compiler only, a serial collector (no
# compiler or GC threads competing for the cores); a third less CPU for the whole test
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
READY_S = 120  # the master and both workers up; the job
JOB_S = 300

JOB = """\
import json
import sys
import time
import urllib.request

import neardup.spark
from pyspark.sql import SparkSession

corpus, out, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spark = SparkSession.builder.appName("neardup-on-a-standalone-cluster").getOrCreate()
sc = spark.sparkContext
partitions = spark.read.text(corpus).rdd.getNumPartitions()  # planned only: no task
result = neardup.spark.find_sources([corpus], spark=spark, id_field="id", **options)
pairs = sorted([r.id_a, r.id_b, r.jaccard]
               for r in result.pairs.select("id_a", "id_b", "jaccard").collect())

# the executors' task totals from the driver's status API; task ends reach it through the
# listener bus, after collect() returns: read until no task is running and totals settle
api = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/executors"
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
seen, deadline = None, time.monotonic() + 30
while time.monotonic() < deadline:
    executors = [{k: e[k] for k in ("id", "hostPort", "totalCores", "activeTasks",
                                    "completedTasks", "failedTasks")}
                 for e in json.load(opener.open(api, timeout=10)) if e["id"] != "driver"]
    if executors == seen and not any(e["activeTasks"] for e in executors):
        break
    seen = executors
    time.sleep(0.5)
with open(out, "w", encoding="utf-8") as f:
    json.dump({"master": sc.master, "neardup": neardup.__file__, "partitions": partitions,
               "counts": result.counts, "pairs": pairs, "executors": executors}, f)
spark.stop()
"""


@pytest.fixture
def cluster(tmp_path, spark_home, submit_env, python_without_neardup):
    """A standalone master and two one-core workers on 127.0.0.1, ready (the master's JSON
    says both workers are alive). Everything started, the job too, is stopped at teardown
    and checked gone."""
    root = tmp_path / "cluster"
    env = submit_env(PYSPARK_PYTHON=str(python_without_neardup),
                     NUMBA_CACHE_DIR=str(root / "numba-cache"))
    with StandaloneCluster(root, env, workers=WORKERS, worker_memory="1g", scope=[tmp_path],
                           spark_home=spark_home, daemon_java=JVM_OPTIONS,
                           ready_s=READY_S) as cluster:
        yield cluster
    assert not cluster.left, f"still running after the cluster stopped: {cluster.left}"


def test_a_standalone_cluster_of_two_workers_finds_the_local_pairs(
        tmp_path, cluster, spark_home, neardup_zip):
    url, processes = cluster.url, cluster.processes
    c = planted_corpus(3000, doc_words=60, dup_fraction=0.05, similarity=(0.6, 1.0),
                       exact_copies=15, seed=21)
    corpus = tmp_path / "corpus.jsonl"
    with open(corpus, "w", encoding="utf-8") as f:
        for doc_id, text in zip(c.ids, c.texts):
            f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    (tmp_path / "job.py").write_text(JOB)
    out = tmp_path / "got.json"
    driver = processes.start("driver", [
        str(spark_home / "bin" / "spark-submit"), "--master", url,
        "--py-files", str(neardup_zip), "--driver-java-options", JVM_OPTIONS,
        "--conf", f"spark.executor.extraJavaOptions={JVM_OPTIONS}",
        "--conf", f"spark.driver.host={HOST}", "--conf", f"spark.driver.bindAddress={HOST}",
        "--conf", "spark.ui.port=0",  # a free port: the job reads its status API
        "--conf", "spark.ui.showConsoleProgress=false",
        "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1",
        "--conf", f"spark.cores.max={WORKERS}",
        # tasks wait for both executors (cores.max of them registered), not the first
        "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=120s",
        "--conf", "spark.sql.shuffle.partitions=4",
        "--conf", "spark.sql.files.maxPartitionBytes=262144",  # the corpus in several splits
        "job.py", str(corpus), str(out), json.dumps(OPTIONS)], cluster.env, tmp_path)
    deadline = time.monotonic() + JOB_S
    while driver.poll() is None:  # what the job starts is tracked as it starts
        assert time.monotonic() < deadline, (
            f"the job ran past {JOB_S} s:\n{processes.log('driver')}")
        processes.track()
        time.sleep(1)
    assert driver.returncode == 0, processes.log("driver", 6000)
    got = json.loads(out.read_text())

    assert got["master"] == url
    assert f"{os.sep}neardup.zip{os.sep}neardup{os.sep}" in got["neardup"], got["neardup"]
    assert got["partitions"] >= 2
    ran = [e for e in got["executors"] if e["completedTasks"] > 0]
    assert len(got["executors"]) == WORKERS and len(ran) == WORKERS, got["executors"]
    assert all(e["hostPort"].startswith(f"{HOST}:") and e["failedTasks"] == 0
               for e in ran), ran

    local = neardup.find(str(corpus), id="id", **OPTIONS)
    table = local.pairs_table()
    expected = sorted(map(list, zip(table.column("id_a").to_pylist(),
                                    table.column("id_b").to_pylist(),
                                    table.column("jaccard").to_pylist())))
    # exact copies and planted near-duplicates (word 2-grams at 0.7: 60 of the 150)
    assert local.counts["identical_pairs"] >= 15 and local.counts["near_duplicate_pairs"] >= 50
    assert got["pairs"] == expected
    assert local.counts["char_fallback"] == 0  # no text here without spaces
    assert got["counts"] == json.loads(json.dumps(local.counts))

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
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

import neardup
from neardup.synthetic import planted_corpus

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HOST = "127.0.0.1"  # the only address used: CI has loopback and nothing else
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def process_table() -> dict[int, tuple[int, str]]:
    """pid: (parent pid, start time in clock ticks) of every running process, from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path("/proc", entry, "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            fields = stat[stat.rindex(")") + 2:].split()  # after "pid (name) "
            if fields[0] != "Z":  # exited, not yet reaped
                table[int(entry)] = (int(fields[1]), fields[19])
    return table


def running_in(folder: Path) -> dict[int, str]:
    """pid: start time of every process of this user working in ``folder`` or below it."""
    table, found = process_table(), {}
    for pid, (_, started) in table.items():
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:  # another user's, or gone
            continue
        if cwd == folder or folder in cwd.parents:
            found[pid] = started
    return found


class Processes:
    """Processes started here in sessions of their own, working in ``folder``, and everything
    they start: found by parent pid while they run (the executors start Python daemons in
    process groups of their own) and by working folder (the executors work in the workers'
    folders). :meth:`stop` ends them all."""

    def __init__(self, folder: Path, logs: Path):
        self.folder, self.logs = folder, logs
        self.started: dict[str, subprocess.Popen] = {}
        self.known: dict[int, str] = {}  # pid: its start time, so a reused pid is left alone

    def start(self, name: str, args: list[str], env: dict[str, str], cwd: Path):
        with open(self.logs / f"{name}.log", "wb") as log:
            self.started[name] = subprocess.Popen(
                args, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.track()
        return self.started[name]

    def log(self, name: str, tail: int = 3000) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-tail:]

    def track(self) -> None:
        """Add the descendants of the processes started here to those known."""
        table = process_table()
        roots = {p.pid for p in self.started.values()}
        for pid in roots:
            if pid in table:
                self.known.setdefault(pid, table[pid][1])
        for pid, started in running_in(self.folder).items():
            self.known.setdefault(pid, started)
        grew = True
        while grew:
            grew = False
            for pid, (parent, started) in table.items():
                if parent in self.known and pid not in self.known:
                    self.known[pid] = started
                    grew = True

    def alive(self) -> list[int]:
        table = process_table()
        return [pid for pid, started in self.known.items()
                if pid in table and table[pid][1] == started]

    def stop(self, wait_s: float = 20) -> list[int]:
        """SIGTERM to the processes started here (their groups), SIGKILL after ``wait_s``
        to whatever is left of them and their descendants; what is still alive after that."""
        self.track()
        for process in reversed(self.started.values()):  # the driver, workers, master last
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        self.wait(wait_s)
        for _ in range(2):  # again for any found meanwhile (reparented, in the folder)
            self.track()
            for pid in self.alive():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.wait(10)
        return self.alive()

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for process in self.started.values():
                process.poll()  # reaped: not a zombie among the living
            if not self.alive():
                return
            time.sleep(0.2)


def master_state(webui: int) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    with opener.open(f"http://{HOST}:{webui}/json/", timeout=5) as answer:
        return json.load(answer)


@pytest.fixture
def cluster(tmp_path, spark_home, submit_env, python_without_neardup):
    """A standalone master and two one-core workers on 127.0.0.1, ready (the master's JSON
    says both workers are alive); yields (master URL, the environment the job runs in, the
    processes, to which the job is added). Everything started is stopped at teardown."""
    root = tmp_path / "cluster"
    for folder in ("logs", "pids", "work", "local"):
        (root / folder).mkdir(parents=True)
    env = submit_env(SPARK_LOCAL_IP=HOST, SPARK_LOCAL_HOSTNAME=HOST,
                     SPARK_WORKER_DIR=str(root / "work"), SPARK_LOG_DIR=str(root / "logs"),
                     SPARK_PID_DIR=str(root / "pids"), SPARK_LOCAL_DIRS=str(root / "local"),
                     PYSPARK_PYTHON=str(python_without_neardup),
                     NUMBA_CACHE_DIR=str(root / "numba-cache"),
                     SPARK_DAEMON_JAVA_OPTS=JVM_OPTIONS)
    spark_class = str(spark_home / "bin" / "spark-class")
    port, webui = free_port(), free_port()
    url = f"spark://{HOST}:{port}"
    processes = Processes(tmp_path, root / "logs")
    try:
        processes.start("master", [spark_class, "org.apache.spark.deploy.master.Master",
                                   "--host", HOST, "--port", str(port),
                                   "--webui-port", str(webui)], env, root)
        for k in range(1, WORKERS + 1):
            processes.start(f"worker-{k}", [
                spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", HOST,
                "--cores", "1", "--memory", "1g", "--webui-port", str(free_port())], env, root)
        deadline, state = time.monotonic() + READY_S, {}
        while state.get("aliveworkers") != WORKERS:
            for name, process in processes.started.items():
                assert process.poll() is None, f"{name} exited:\n{processes.log(name)}"
            assert time.monotonic() < deadline, (
                f"no {WORKERS} workers alive after {READY_S} s: {state}\n"
                + "\n".join(processes.log(name) for name in processes.started))
            time.sleep(0.5)
            try:
                state = master_state(webui)
            except OSError:  # the master's web UI is not up yet
                state = {}
        yield url, env, processes
    finally:
        left = processes.stop()
        assert not left, f"still running after the cluster stopped: {left}"


def test_a_standalone_cluster_of_two_workers_finds_the_local_pairs(
        tmp_path, cluster, spark_home, neardup_zip):
    url, env, processes = cluster
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
        "job.py", str(corpus), str(out), json.dumps(OPTIONS)], env, tmp_path)
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

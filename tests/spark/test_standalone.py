"""The standalone cluster's process keeping (neardup.spark.standalone), without Java: what
it starts, what those start, and what works in its folders is stopped and checked gone;
a process elsewhere is left alone; a daemon that exits or never gets ready is an error
that leaves nothing running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from neardup.spark.standalone import Processes, StandaloneCluster, process_table

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

SLEEP = [sys.executable, "-c", "import time; time.sleep(300)"]


def running(pid: int) -> bool:
    return pid in process_table()


def test_stop_ends_the_started_their_children_and_what_works_in_the_folder(tmp_path):
    folder, elsewhere = tmp_path / "cluster", tmp_path / "elsewhere"
    (folder / "logs").mkdir(parents=True)
    elsewhere.mkdir()
    processes = Processes([folder], folder / "logs")
    # a daemon that starts a child in a process group of its own, as an executor's
    # Python daemon does: SIGTERM to the daemon's group does not reach it
    daemon = processes.start("daemon", [sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
        " start_new_session=True)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(300)\n")], os.environ, folder)
    # one started elsewhere but working in the folder (an executor in a worker's folder)
    stray = subprocess.Popen(SLEEP, cwd=folder, start_new_session=True)
    other = subprocess.Popen(SLEEP, cwd=elsewhere, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not processes.log("daemon").strip():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        child = int(processes.log("daemon").split()[0])
        processes.track()
        assert {daemon.pid, child, stray.pid} <= set(processes.alive())
        assert other.pid not in processes.known

        assert processes.stop(wait_s=5) == []
        stray.wait(10)
        assert not running(daemon.pid) and not running(child) and stray.returncode is not None
        assert running(other.pid)  # not ours to stop
    finally:
        for process in (other, stray):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()


def fake_spark_home(tmp_path, script: str):
    home = tmp_path / "spark-home"
    (home / "bin").mkdir(parents=True)
    spark_class = home / "bin" / "spark-class"
    spark_class.write_text("#!/bin/sh\n" + script)
    spark_class.chmod(0o755)
    return home


@pytest.mark.parametrize("script, message", [
    ("echo 'no java here' >&2; exit 1\n", r"exited:\nno java here"),
    ("exec sleep 300\n", r"no 2 workers alive after 1 s"),
])
def test_a_cluster_that_never_gets_ready_is_an_error_that_leaves_nothing(
        tmp_path, script, message):
    cluster = StandaloneCluster(tmp_path / "cluster", os.environ, workers=2,
                                spark_home=fake_spark_home(tmp_path, script), ready_s=1)
    with pytest.raises(RuntimeError, match=message):
        with cluster:
            pass
    assert cluster.left == []
    started = [p.pid for p in cluster.processes.started.values()]
    assert started and not any(map(running, started))

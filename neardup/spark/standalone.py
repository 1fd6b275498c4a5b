"""A Spark standalone cluster on one machine, started and stopped from Python.

:class:`StandaloneCluster` starts a master and one-core workers on 127.0.0.1 with pyspark's
``bin/spark-class``, as docs/spark/cluster.md does by hand, and waits until the master
says every worker is alive. Jobs are submitted to :attr:`StandaloneCluster.url`. On
leaving, every process it started is stopped, and so is every process those started
(executors, their Python workers, a driver run in one of its folders): nothing is left
running, failed or not. The tests and the benchmarks run their cluster jobs on it.

Processes are found in ``/proc`` (Linux): by parent while they run, and by working
folder (executors work in the workers' folders, which the daemons' own process groups do
not hold).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

HOST = "127.0.0.1"  # the only address used: nothing listens elsewhere
READY_S = 120  # the master and every worker up
FOLDERS = ("logs", "pids", "work", "local")  # under the cluster's root


def free_port() -> int:
    """A TCP port free on :data:`HOST` now."""
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


def running_in(folders: Iterable[Path]) -> dict[int, str]:
    """pid: start time of every process of this user working in one of ``folders`` or
    below it."""
    folders = [Path(f) for f in folders]
    found = {}
    for pid, (_, started) in process_table().items():
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:  # another user's, or gone
            continue
        if any(cwd == f or f in cwd.parents for f in folders):
            found[pid] = started
    return found


class Processes:
    """Processes started here, each in a session of its own with its output in
    ``logs/NAME.log``, and everything they start: found by parent pid while they run and
    by working folder (``folders`` or below). :meth:`stop` ends them all."""

    def __init__(self, folders: Iterable[Path], logs: Path):
        self.folders, self.logs = [Path(f) for f in folders], Path(logs)
        self.started: dict[str, subprocess.Popen] = {}
        self.known: dict[int, str] = {}  # pid: its start time, so a reused pid is left alone

    def start(self, name: str, args: list[str], env: Mapping[str, str],
              cwd: Path) -> subprocess.Popen:
        with open(self.logs / f"{name}.log", "wb") as log:
            self.started[name] = subprocess.Popen(
                args, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.track()
        return self.started[name]

    def log(self, name: str, tail: int = 3000) -> str:
        """The last ``tail`` characters of what ``name`` printed."""
        return (self.logs / f"{name}.log").read_text(errors="replace")[-tail:]

    def track(self) -> None:
        """Add the processes started here, those working in the folders, and their
        descendants, to those known."""
        table = process_table()
        for process in self.started.values():
            if process.pid in table:
                self.known.setdefault(process.pid, table[process.pid][1])
        for pid, started in running_in(self.folders).items():
            self.known.setdefault(pid, started)
        grew = True
        while grew:
            grew = False
            for pid, (parent, started) in table.items():
                if parent in self.known and pid not in self.known:
                    self.known[pid] = started
                    grew = True

    def alive(self) -> list[int]:
        """The known processes still running."""
        table = process_table()
        return [pid for pid, started in self.known.items()
                if pid in table and table[pid][1] == started]

    def stop(self, wait_s: float = 20) -> list[int]:
        """SIGTERM to the process groups started here (the last started first), SIGKILL
        after ``wait_s`` to whatever is left of them and their descendants; returns what
        is still alive after that."""
        self.track()
        for process in reversed(self.started.values()):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        self.wait(wait_s)
        for _ in range(2):  # again for any found meanwhile (reparented, in a folder)
            self.track()
            for pid in self.alive():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.wait(10)
        return self.alive()

    def wait(self, seconds: float) -> None:
        """Until no known process runs, or ``seconds`` have passed."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for process in self.started.values():
                process.poll()  # reaped: not a zombie among the living
            if not self.alive():
                return
            time.sleep(0.2)


class StandaloneCluster:
    """A master and ``workers`` one-core workers of ``worker_memory`` on 127.0.0.1, their
    folders and logs under ``root``; a context manager.

    ``env``: the environment the daemons start from (SPARK_HOME, SPARK_LOCAL_IP and the
    folders are set here; :attr:`env` is the result, for the jobs submitted to it).
    ``scope``: further folders whose processes are stopped with the cluster (where the
    drivers run). ``spark_home``: pyspark's package folder unless given. ``daemon_java``:
    SPARK_DAEMON_JAVA_OPTS of the master and workers.

    Entering starts the daemons and waits up to ``ready_s`` for every worker (RuntimeError
    with the logs' ends if a daemon exits or the time passes, everything stopped).
    Leaving stops every process started, and those they started; :attr:`left` lists any
    still running after that (none, normally)."""

    def __init__(self, root: Path, env: Mapping[str, str], *, workers: int = 2,
                 worker_memory: str = "1g", scope: Iterable[Path] = (),
                 spark_home: Path | None = None, daemon_java: str | None = None,
                 ready_s: float = READY_S):
        if spark_home is None:
            import pyspark

            spark_home = Path(pyspark.__file__).resolve().parent
        self.root, self.home = Path(root), Path(spark_home)
        self.workers, self.worker_memory, self.ready_s = workers, worker_memory, ready_s
        self.port, self.webui = free_port(), free_port()
        self.url = f"spark://{HOST}:{self.port}"
        self.env = dict(env)
        self.env.update(
            SPARK_HOME=str(self.home), SPARK_LOCAL_IP=HOST, SPARK_LOCAL_HOSTNAME=HOST,
            SPARK_WORKER_DIR=str(self.root / "work"), SPARK_LOG_DIR=str(self.root / "logs"),
            SPARK_PID_DIR=str(self.root / "pids"), SPARK_LOCAL_DIRS=str(self.root / "local"))
        if daemon_java:
            self.env["SPARK_DAEMON_JAVA_OPTS"] = daemon_java
        self.processes = Processes([self.root, *scope], self.root / "logs")
        self.left: list[int] = []

    def __enter__(self) -> StandaloneCluster:
        for folder in FOLDERS:
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        try:
            spark_class = str(self.home / "bin" / "spark-class")
            self.processes.start("master", [
                spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST,
                "--port", str(self.port), "--webui-port", str(self.webui)],
                self.env, self.root)
            for k in range(1, self.workers + 1):
                self.processes.start(f"worker-{k}", [
                    spark_class, "org.apache.spark.deploy.worker.Worker", self.url,
                    "--host", HOST, "--cores", "1", "--memory", self.worker_memory,
                    "--webui-port", str(free_port())], self.env, self.root)
            self._wait_ready()
        except BaseException:
            self.left = self.processes.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.left = self.processes.stop()

    def start(self, name: str, args: list[str], env: Mapping[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen:
        """Start a process stopped with the cluster (a driver: ``spark-submit``)."""
        return self.processes.start(name, args, self.env if env is None else env,
                                    self.root if cwd is None else cwd)

    def track(self) -> None:
        """Note the processes started since (executors, drivers), to stop them too."""
        self.processes.track()

    def state(self) -> dict:
        """The master's state (its web UI's JSON: ``aliveworkers``, ``workers``, ...)."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback
        with opener.open(f"http://{HOST}:{self.webui}/json/", timeout=5) as answer:
            return json.load(answer)

    def _wait_ready(self) -> None:
        deadline, state = time.monotonic() + self.ready_s, {}
        while state.get("aliveworkers") != self.workers:
            for name, process in self.processes.started.items():
                if process.poll() is not None:
                    raise RuntimeError(f"the cluster's {name} exited:\n"
                                       f"{self.processes.log(name)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"no {self.workers} workers alive after {self.ready_s:g} s: {state}\n"
                    + "\n".join(self.processes.log(name) for name in self.processes.started))
            time.sleep(0.5)
            try:
                state = self.state()
            except OSError:  # the master's web UI is not up yet
                state = {}

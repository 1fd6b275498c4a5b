"""Spark itself: the guard for the optional pyspark, and the session the engine runs in.

pyspark is an optional dependency (extra ``spark``): every Spark module imports it in a
``try`` and holds None without it, so ``import neardup.spark`` works anywhere;
:func:`_require_spark`, called first by every entry point, names the extra to install.
:func:`_session` joins the active session or spark-submit's, else starts local mode with
neardup's defaults (Python workers in this interpreter, a quiet log) and settings sized
from the machine (:func:`local_settings`: memory and cores).
"""

from __future__ import annotations

import os
import sys

from .._core.machine import machine_cores, machine_memory
from .._core.progress import say

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    SparkSession = F = None


GIB = 1 << 30
MIB = 1 << 20
MAX_HEAP = 31 * GIB  # past 32 GiB the JVM loses compressed object pointers
ROW_BUDGET = 64 * 1024  # bytes an Arrow row may cost a Python worker (text, shingles, sketch)
# a local run's JVM lives seconds to minutes: its code compiled by C1 alone, not recompiled
# by C2, whose compiler threads took a third of the run's CPU on two cores
QUICK_JIT = "-XX:TieredStopAtLevel=1"


def _require_spark() -> None:
    if F is None:
        raise ImportError("the Spark engine needs pyspark: pip install 'neardup[spark]'")


def local_settings(memory: int, cores: int) -> dict[str, str]:
    """The settings of the local-mode session neardup starts on a machine of ``memory``
    bytes and ``cores`` cores (a pure function of the two).

    - ``spark.driver.memory``: half the memory, at least 1 GiB, at most 31 GiB. In local
      mode the JVM is driver and executors at once, so this is the executors' memory
      too; the other half is left to the Python workers (one a core) and this process.
    - ``spark.driver.maxResultSize``: half the heap (Spark's default is 1 GiB), what a
      collect may bring back; the parts layout collects a row a part, ``single`` more.
    - ``spark.sql.shuffle.partitions``: 4 a core (Spark's 200 is many tasks of nothing on
      a laptop, and too few parts to spread a large table's rows on a big machine).
    - ``spark.sql.execution.arrow.maxRecordsPerBatch``: the rows a Python worker holds
      at once: a quarter of a core's share of the memory at 64 KiB a row, between 1,000
      and Spark's 10,000, in thousands.
    """
    cores = max(1, int(cores))
    heap = min(MAX_HEAP, max(GIB, memory // 2)) // MIB
    batch = memory // cores // 4 // ROW_BUDGET
    return {
        "spark.driver.memory": f"{heap}m",
        "spark.driver.maxResultSize": f"{max(1024, heap // 2)}m",
        "spark.sql.shuffle.partitions": str(4 * cores),
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(min(10_000,
                                                                max(1_000, batch // 1000 * 1000))),
    }


def _configured_keys(conf_dir: str) -> set[str]:
    """The settings a user already gave local mode: in ``spark-defaults.conf``, or as
    ``--driver-memory``/``--conf k=v`` in ``PYSPARK_SUBMIT_ARGS`` (kept, not overridden)."""
    keys = set()
    try:
        with open(os.path.join(conf_dir, "spark-defaults.conf"), encoding="utf-8") as f:
            for line in f:
                words = line.split()
                if words and not words[0].startswith("#"):
                    keys.add(words[0].split("=", 1)[0])
    except OSError:
        pass
    words = os.environ.get("PYSPARK_SUBMIT_ARGS", "").split()
    for flag, value in zip(words, words[1:] + [""]):
        if flag == "--driver-memory":
            keys.add("spark.driver.memory")
        elif flag == "--driver-java-options":
            keys.add("spark.driver.extraJavaOptions")
        elif flag == "--conf":
            keys.add(value.split("=", 1)[0])
    return keys


def _session(quiet: bool = True) -> SparkSession:
    """The active session; else one from spark-submit's settings; else local mode on all cores.

    Only a session started here in local mode gets neardup's defaults: Python workers in
    this interpreter (it has neardup and numba), memory, shuffle partitions, Arrow batch
    and result sizes from the machine (:func:`local_settings`; a key set in
    ``spark-defaults.conf`` or ``PYSPARK_SUBMIT_ARGS`` is kept), said in one line on
    standard error unless ``quiet``, no progress bars and no web UI (unless configured),
    Python workers forked by :mod:`neardup._core.spark_daemon` (pyspark's daemon, with the
    installed pyspark's compiled modules rather than Spark's zip of their sources, unless
    ``spark.python.daemon.module`` is configured), the JVM's quick compiler only
    (:data:`QUICK_JIT`, unless ``spark.driver.extraJavaOptions`` or
    ``--driver-java-options`` is given),
    and a quiet log, since neardup reports its own progress:
    Spark logs errors only, without its start-up banners (a log4j2 configuration of
    neardup's, unless Spark's conf folder has a ``log4j2.properties`` or
    ``LOG4J_CONFIGURATION_FILE`` names one), the JVM's "WARNING: Using incubator modules"
    line is left out of its standard error (the rest passes through), and PySpark's
    warning about pandas >= 3 is ignored (the engine hands Spark Arrow, not pandas).
    Under spark-submit (or with ``spark.master`` set), its configuration stands.
    """
    import tempfile
    import threading
    import warnings

    import pyspark
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # spark-submit starts Python with PYSPARK_GATEWAY_PORT set, before a SparkConf can see
    # its settings; once a JVM is up, a SparkConf sees spark.master
    if "PYSPARK_GATEWAY_PORT" in os.environ or SparkConf().contains("spark.master"):
        return SparkSession.builder.appName("neardup").getOrCreate()
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                            category=FutureWarning)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(
        os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__), "conf")
    memory, cores = machine_memory(), machine_cores()
    sized = local_settings(memory, cores)
    configured = _configured_keys(conf_dir)
    given = configured & set(sized)
    chosen = {k: v for k, v in sized.items() if k not in given}
    conf = (SparkConf().setMaster("local[*]").setAppName("neardup")
            .setAll(list(chosen.items()))
            .set("spark.ui.showConsoleProgress", "false"))
    if "spark.ui.enabled" not in configured:  # no web UI to start (a server, its threads)
        conf.set("spark.ui.enabled", "false")
    if "spark.python.daemon.module" not in configured:  # pyspark's modules compiled once
        conf.set("spark.python.daemon.module", "neardup._core.spark_daemon")
    if "spark.driver.extraJavaOptions" not in configured:  # the JVM's quick compiler only
        conf.set("spark.driver.extraJavaOptions", QUICK_JIT)
    if getattr(SparkContext, "_gateway", None) is not None:  # a JVM from an earlier session
        return SparkSession.builder.config(conf=conf).getOrCreate()  # its heap stays
    if not quiet:
        settings = ", ".join(f"{k}={v}" for k, v in chosen.items())
        kept = f"; kept yours: {', '.join(sorted(given))}" if given else ""
        say(f"neardup: Spark local mode, {cores} cores, {memory / GIB:.1f} GiB: "
            f"{settings}{kept}")

    own_log = ("LOG4J_CONFIGURATION_FILE" in os.environ
               or os.path.exists(os.path.join(conf_dir, "log4j2.properties")))
    config = None
    if not own_log:  # log4j2 reads it as the JVM starts
        handle, config = tempfile.mkstemp(prefix="neardup-log4j2-", suffix=".properties")
        with os.fdopen(handle, "w") as f:
            f.write("rootLogger.level = error\n"
                    "rootLogger.appenderRef.stderr.ref = console\n"
                    "appender.console.type = Console\n"
                    "appender.console.name = console\n"
                    "appender.console.target = SYSTEM_ERR\n"
                    "appender.console.layout.type = PatternLayout\n"
                    "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n"
                    # PySpark's gateway logger at the root's level: no "Setting default log
                    # level" banner
                    "logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer\n"
                    "logger.gateway.level = error\n")
        os.environ["LOG4J_CONFIGURATION_FILE"] = config

    def forward(fd: int) -> None:  # the JVM's standard error, less the incubator line
        with os.fdopen(fd, "rb") as stream:
            for line in stream:
                if line.startswith(b"WARNING: Using incubator modules"):
                    continue
                try:
                    while line:
                        line = line[os.write(2, line):]
                except OSError:  # standard error closed: the JVM still needs its pipe read
                    pass

    read_end, write_end = os.pipe()
    forwarder = threading.Thread(target=forward, args=(read_end,), daemon=True,
                                 name="neardup-spark-stderr")
    forwarder.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})
    except BaseException:
        os.close(write_end)
        forwarder.join(timeout=5)  # the JVM has exited: what it said is shown first
        raise
    finally:
        if config is not None:
            del os.environ["LOG4J_CONFIGURATION_FILE"]
            os.unlink(config)
    os.close(write_end)
    SparkContext(conf=conf, gateway=gateway)
    return SparkSession.builder.getOrCreate()

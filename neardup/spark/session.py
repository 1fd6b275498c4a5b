"""Spark itself: the guard for the optional pyspark, and the session the engine runs in.

pyspark is an optional dependency (extra ``spark``): every Spark module imports it in a
``try`` and holds None without it, so ``import neardup.spark`` works anywhere;
:func:`_require_spark`, called first by every entry point, names the extra to install.
:func:`_session` joins the active session or spark-submit's, else starts local mode with
neardup's defaults (Python workers in this interpreter, a quiet log).
"""

from __future__ import annotations

import os
import sys

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    SparkSession = F = None


def _require_spark() -> None:
    if F is None:
        raise ImportError("the Spark engine needs pyspark: pip install 'neardup[spark]'")


def _session() -> SparkSession:
    """The active session; else one from spark-submit's settings; else local mode on all cores.

    Only a session started here in local mode gets neardup's defaults: Python workers in
    this interpreter (it has neardup and numba), a few shuffle partitions per core instead
    of 200, no progress bars, and a quiet log, since neardup reports its own progress:
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
    cores = os.cpu_count() or 1
    conf = (SparkConf().setMaster("local[*]").setAppName("neardup")
            .set("spark.sql.shuffle.partitions", str(4 * cores))
            .set("spark.ui.showConsoleProgress", "false"))
    if getattr(SparkContext, "_gateway", None) is not None:  # a JVM from an earlier session
        return SparkSession.builder.config(conf=conf).getOrCreate()

    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(
        os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__), "conf")
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

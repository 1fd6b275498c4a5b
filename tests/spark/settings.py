"""Session settings a Spark test holds for its body."""

import contextlib


@contextlib.contextmanager
def split_inputs(spark, max_partition_bytes: int):
    """Input files read in partitions of at most ``max_partition_bytes`` (and kept so:
    adaptive coalescing off) for the ``with`` block; the session's settings after."""
    settings = {"spark.sql.files.maxPartitionBytes": str(max_partition_bytes),
                "spark.sql.adaptive.coalescePartitions.enabled": "false"}
    before = {key: spark.conf.get(key) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)

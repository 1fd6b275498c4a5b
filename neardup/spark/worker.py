"""What a Python worker does around a task's body.

PySpark's daemon reuses a Python worker for task after task, and after each one it calls
``gc.collect()``: a full collection, which walks every object the worker holds. A worker
that has imported pyarrow, numba and neardup and loaded the kernels holds a few hundred
thousand of them, so each collection costs a tenth of a second or more, and a find runs
some 150 tasks on two workers: measured at a million documents, about 9 s of each
worker's time went to these collections. :func:`settled` wraps a ``mapInArrow`` body so
that what is alive when a task starts (modules, kernels, caches; the previous task's
garbage was collected just before) is moved out of the collector's sight
(``gc.freeze``): later collections walk only what tasks create. Frozen objects are still
freed by their reference counts; only a cycle among them would stay.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pyarrow as pa

Body = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def settled(body: Body) -> Body:
    """``body`` with the worker's heap frozen (``gc.freeze``) as the task starts."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        gc.freeze()
        yield from body(batches)
    return run


def warming(spark, body: Callable[[], object]):
    """A started thread whose one small job runs a task per core, each calling ``body()``
    in a Python worker and returning nothing: Spark's worker daemon starts, and each
    worker loads what ``body`` uses (numba's kernels from their cache) while the driver
    plans the first pass, whose first tasks then reuse these workers instead of loading
    it all themselves. The thread's ``join()`` waits for the job; an error there is
    left to the real tasks, which would meet it again."""
    import threading

    cores = max(1, spark.sparkContext.defaultParallelism)

    def warm(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            pass
        body()
        return iter(())

    def run() -> None:
        try:
            spark.range(cores, numPartitions=cores).mapInArrow(warm, "id long").collect()
        except Exception:  # the first pass runs the same code and reports what fails
            pass

    thread = threading.Thread(target=run, name="neardup-spark-warm", daemon=True)
    thread.start()
    return thread

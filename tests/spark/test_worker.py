"""A Python worker's heap frozen as each task starts (neardup.spark.worker): the daemon's
full collection after every task then walks only what the task made."""

from __future__ import annotations

import gc

import pyarrow as pa

from neardup.spark.worker import settled


def test_a_settled_body_yields_the_body_s_batches_with_the_heap_frozen_before_its_first():
    batches = [pa.record_batch({"x": [1, 2]}), pa.record_batch({"x": [3]})]
    frozen_at_start = []

    def body(given):
        frozen_at_start.append(gc.get_freeze_count())
        for batch in given:
            yield batch.set_column(0, "x", pa.compute.multiply(batch.column(0), 2))

    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        out = list(settled(body)(iter(batches)))
        assert frozen_at_start[0] > 0  # what was alive as the task began
    finally:
        gc.unfreeze()
    assert [b.column(0).to_pylist() for b in out] == [[2, 4], [6]]

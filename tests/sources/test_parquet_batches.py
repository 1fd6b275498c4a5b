"""A Parquet input read a chunk at a time holds its columns a batch at a time: what
Arrow has allocated while the chunks are read stays far below the column's size (a
pre-buffered reader kept every batch it had read until it was closed)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from neardup.sources import read_document_chunks
from neardup.sources.documents import InputSource
from neardup.sources.parquet import column_batches

ROWS, CHARS = 48_000, 500  # 24 MB of text, in row groups of 2,000 rows


def _write(path) -> int:
    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"abcdefghij klmnopqrstuvwxyz", dtype=np.uint8)
    texts = [rng.choice(letters, CHARS).tobytes().decode() for _ in range(ROWS)]
    table = pa.table({"id": [f"r{k}" for k in range(ROWS)], "text": texts})
    pq.write_table(table, path, row_group_size=2_000, compression="none")
    return ROWS * CHARS


def test_documents_read_in_chunks_hold_a_batch(tmp_path):
    size = _write(tmp_path / "t.parquet")
    chunks, _, _ = read_document_chunks([str(tmp_path / "t.parquet")], chunk_chars=200_000,
                                        id_field="id")
    most = read = 0
    for chunk in chunks:
        read += len(chunk)
        most = max(most, pa.total_allocated_bytes())
    assert read == ROWS
    assert most < size / 2


def test_a_vector_column_read_forward_holds_a_batch(tmp_path):
    rows, width = 150_000, 64  # 38 MB of vectors
    vectors = np.random.default_rng(1).standard_normal((rows, width)).astype(np.float32)
    pq.write_table(pa.table({"vec": pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.ravel()), width)}), tmp_path / "v.parquet", row_group_size=5_000,
        compression="none")
    del vectors
    src = InputSource(given=str(tmp_path / "v.parquet"), fmt="parquet", name="v",
                      encoding="utf-8")
    most = read = 0
    for batch in column_batches(src, "vec"):
        read += len(batch)
        most = max(most, pa.total_allocated_bytes())
    assert read == rows
    assert most < rows * width * 4 / 2

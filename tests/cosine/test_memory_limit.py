"""find and dedup on embeddings under --memory-limit: the vectors read a chunk at a time
(Parquet and Arrow columns read forward, JSON Lines fields, a .npy file's rows), spilled,
banded and verified from the files, give the in-memory run's pairs, cosines, statuses,
counts and dedup copy; what a limit cannot run is refused by name."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.pipeline import outofcore
from neardup.pipeline.outofcore import MemoryCosts, MemoryLimitError

from .corpus import planted_vectors, spoil

N, D, T = 150, 12, 0.8
LIMIT = "64k"  # with MemoryCosts.chunks_only(): chunks of about 15 vectors


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(outofcore, "COSTS", MemoryCosts.chunks_only())


@pytest.fixture(scope="module")
def vectors():
    x = planted_vectors(N, D, 9)
    spoil(x)
    return x


def rows_of(x: np.ndarray) -> list:
    """One value per record: a list, with a null, a short vector and a long one."""
    rows = [list(map(float, v)) for v in x]
    rows[20] = None
    rows[33] = rows[33][:-2]
    rows[40] = rows[40] + [0.5]
    return rows


def ids():
    return [f"d{k}" for k in range(N)]


def write(kind: str, x: np.ndarray, path, with_text: bool = True) -> str:
    rows = rows_of(x)
    texts = [f"record number {k} " + "word " * (k % 7) for k in range(N)]
    if kind in ("parquet", "arrow"):
        columns = {"id": ids(), "vec": pa.array(rows, type=pa.list_(pa.float32()))}
        if with_text:
            columns["text"] = texts
        table = pa.table(columns)
        if kind == "parquet":
            pq.write_table(table, path, row_group_size=40)
        else:
            feather.write_feather(table, path, chunksize=25)
    else:
        with open(path, "w") as f:
            for k in range(N):
                record = {"id": f"d{k}", "vec": rows[k]}
                if with_text:
                    record["text"] = texts[k]
                f.write(json.dumps(record) + "\n")
    return str(path)


def outcome(result):
    table = result.pairs_table()
    return (list(zip(table.column("id_a").to_pylist(), table.column("id_b").to_pylist(),
                     table.column("cosine").to_pylist())),
            list(result.status), list(result.labels), list(result.representative),
            result.counts["vectors"])


def both_runs(path, **options):
    options = {"embeddings": "vec", "threshold": T, "method": "lsh", "id_field": "id",
               **options}
    held = neardup.find(path, **options)
    limited = neardup.find(path, memory_limit=LIMIT, **options)
    return held, limited


@pytest.mark.parametrize("kind", ["parquet", "arrow", "jsonl"])
@pytest.mark.parametrize("with_text", [True, False])
def test_the_same_pairs_as_in_memory(kind, with_text, vectors, tmp_path):
    path = write(kind, vectors, tmp_path / f"v.{kind}", with_text)
    held, limited = both_runs(path)
    assert len(held.pairs_table()) > 10
    assert outcome(limited) == outcome(held)
    assert limited.counts["chunks"]["chunks_read"] > 3
    assert {k: v for k, v in limited.counts.items() if k != "chunks"} == held.counts
    reasons = held.counts["vectors"]["skipped_by_reason"]
    assert reasons == {"no vector": 1, "vector of the wrong length": 2,
                       "vector of zero norm": 1, "vector with NaN or infinity": 2}


def test_inputs_of_other_lengths(vectors, tmp_path):
    """Two inputs of one length and one of another: that input's vectors are of the
    wrong length, as in memory."""
    paths = []
    for k, width in enumerate((D, D, D + 3)):
        x = planted_vectors(40, width, 30 + k)
        table = pa.table({"id": [f"i{k}-{j}" for j in range(40)],
                          "vec": pa.array(list(x), type=pa.list_(pa.float32()))})
        paths.append(str(tmp_path / f"p{k}.parquet"))
        pq.write_table(table, paths[-1], row_group_size=16)
    held, limited = both_runs(paths)
    assert outcome(limited) == outcome(held)
    assert held.counts["vectors"]["skipped_by_reason"] == {"vector of the wrong length": 40}


def test_npy_beside_the_records(vectors, tmp_path):
    path = tmp_path / "v.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{k}", "text": f"t {k}"}) + "\n"
                            for k in range(N)))
    np.save(tmp_path / "v.npy", vectors)
    held, limited = both_runs(str(path), embeddings=str(tmp_path / "v.npy"))
    assert outcome(limited) == outcome(held)
    np.save(tmp_path / "short.npy", vectors[:-5])
    with pytest.raises(ValueError, match="rows but the input has"):
        neardup.find(str(path), embeddings=str(tmp_path / "short.npy"), threshold=T,
                     memory_limit=LIMIT)


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
def test_dedup_copy_as_in_memory(kind, vectors, tmp_path):
    path = write(kind, vectors, tmp_path / f"v.{kind}")
    held = tmp_path / f"held.{kind}"
    limited = tmp_path / f"limited.{kind}"
    options = {"embeddings": "vec", "threshold": T, "method": "lsh", "id_field": "id"}
    neardup.dedup(path, str(held), **options)
    neardup.dedup(path, str(limited), memory_limit=LIMIT, **options)
    assert limited.read_bytes() == held.read_bytes()
    assert len(pq.read_table(held) if kind == "parquet" else held.read_text().splitlines()) \
        < N


def test_also_jaccard_is_refused_by_name(vectors, tmp_path):
    path = write("parquet", vectors, tmp_path / "v.parquet")
    with pytest.raises(ValueError, match="^--also-jaccard is not supported with "
                                         "memory_limit"):
        neardup.find(path, embeddings="vec", threshold=T, also_jaccard=0.5,
                     memory_limit=LIMIT)


def test_a_chunk_of_longer_vectors_than_declared_is_refused(tmp_path):
    """The chunk was sized for the first record's length: vectors far longer end the
    run, naming the limit they need, instead of exceeding it."""
    path = tmp_path / "v.jsonl"
    rng = np.random.default_rng(3)
    lines = [json.dumps({"vec": [1.0, 2.0]})]
    lines += [json.dumps({"vec": rng.standard_normal(3000).tolist()}) for _ in range(40)]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MemoryLimitError, match="vectors of 3,000 dimensions.*--memory-limit"):
        neardup.find(str(path), embeddings="vec", threshold=T, memory_limit="6M")

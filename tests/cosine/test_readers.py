"""Vectors read from Parquet (fixed-size lists, lists of float16/32/64), Arrow IPC, JSON
Lines, pandas columns of arrays, 2-D arrays and .npy files give the same pairs; a .npy
file of another row count is a clear error; the CLI writes what the library finds."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import neardup

from .corpus import planted_vectors

N, D, T = 120, 12, 0.9


def pairs_of(result) -> list[tuple[str, str, float]]:
    table = result.pairs_table()
    return list(zip(table.column("id_a").to_pylist(), table.column("id_b").to_pylist(),
                    table.column("cosine").to_pylist()))


@pytest.fixture(scope="module")
def vectors():
    x = planted_vectors(N, D, 21)
    x[7] = 0.0  # set aside everywhere
    return x.astype(np.float16).astype(np.float32)  # exact in every float width


@pytest.fixture(scope="module")
def expected(vectors):
    data = pd.DataFrame({"text": [f"record {k}" for k in range(N)], "vec": list(vectors)})
    result = neardup.find(data, embeddings="vec", threshold=T, method="exact")
    assert result.counts["vectors"]["skipped"] == 1 and len(pairs_of(result)) > 10
    return pairs_of(result)


def texts():
    return [f"record {k}" for k in range(N)]


@pytest.mark.parametrize("kind", ["fixed16", "fixed32", "list64", "list32"])
def test_parquet_lists_of_any_float_width(kind, vectors, expected, tmp_path):
    dtype = {"fixed16": pa.float16(), "fixed32": pa.float32(), "list64": pa.float64(),
             "list32": pa.float32()}[kind]
    width = D if kind.startswith("fixed") else -1
    as_numpy = vectors.astype(dtype.to_pandas_dtype())
    column = pa.array(list(as_numpy), type=pa.list_(dtype, width))
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"text": texts(), "vec": column}), path)
    result = neardup.find(str(path), embeddings="vec", threshold=T, method="exact")
    assert pairs_of(result) == expected


def test_arrow_ipc_jsonl_array_and_npy_give_the_same_pairs(vectors, expected, tmp_path):
    arrow = tmp_path / "v.arrow"
    feather.write_feather(pa.table({"text": texts(), "vec": pa.array(
        list(vectors), type=pa.list_(pa.float32(), D))}), arrow)
    jsonl = tmp_path / "v.jsonl"
    with open(jsonl, "w") as f:
        for k, row in enumerate(vectors):
            f.write(json.dumps({"text": f"record {k}", "vec": row.tolist()}) + "\n")
    npy = tmp_path / "v.npy"
    np.save(npy, vectors)
    for inputs, embeddings in ((str(arrow), "vec"), (str(jsonl), "vec"),
                               (str(jsonl), str(npy)), (str(jsonl), vectors)):
        result = neardup.find(inputs, embeddings=embeddings, threshold=T, method="exact")
        assert pairs_of(result) == expected, (inputs, type(embeddings))


def test_a_npy_file_of_another_row_count_is_refused(vectors, tmp_path):
    jsonl = tmp_path / "v.jsonl"
    jsonl.write_text("".join(json.dumps({"text": f"r {k}"}) + "\n" for k in range(N)))
    npy = tmp_path / "short.npy"
    np.save(npy, vectors[:-2])
    with pytest.raises(ValueError, match=f"has {N - 2} rows but the input has {N} records"):
        neardup.find(str(jsonl), embeddings=str(npy), threshold=T)
    with pytest.raises(ValueError, match="no column 'nope'"):
        neardup.find(pd.DataFrame({"text": texts()}), embeddings="nope", threshold=T)


def test_the_cli_writes_the_library_pairs_with_a_cosine_column(vectors, expected, tmp_path,
                                                                run_cli):
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"text": texts(), "vec": pa.array(
        list(vectors), type=pa.list_(pa.float32(), D))}), path)
    out = tmp_path / "out"
    done = run_cli("find", str(path), "--embeddings", "vec", "-t", str(T), "-o", str(out),
                   "--method", "exact", "-q")
    assert done.returncode == 0, done.stderr
    assert "exact cosine >= 0.9" in done.stdout
    with open(out / "pairs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["id_a", "id_b", "jaccard", "cosine", "estimate", "doc_a", "doc_b"]
    assert [(r["id_a"], r["id_b"], float(r["cosine"])) for r in rows] == expected
    assert all(r["jaccard"] == "" for r in rows)  # not computed: empty
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["vectors"]["skipped_by_reason"] == {"vector of zero norm": 1}


def test_dedup_removes_the_cosine_duplicates(vectors, expected, tmp_path):
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"text": texts(), "vec": pa.array(
        list(vectors), type=pa.list_(pa.float32(), D))}), path)
    result = neardup.find(str(path), embeddings="vec", threshold=T, method="exact",
                          clusters="center")
    out = tmp_path / "copy.parquet"
    neardup.dedup(str(path), str(out), embeddings="vec", threshold=T, method="exact",
                  annotate=True)
    copy = pq.read_table(out)
    assert copy.num_rows == N - int(result.counts["removable"])
    assert "neardup_duplicate_of" in copy.column_names
    data = pd.DataFrame({"text": texts(), "vec": list(vectors)})
    kept = neardup.dedup(data, embeddings="vec", threshold=T, method="exact")
    assert kept["text"].tolist() == copy.column("text").to_pylist()

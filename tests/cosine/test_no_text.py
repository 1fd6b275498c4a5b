"""Records with an id and a vector and no text: a Parquet, Arrow IPC or JSON Lines file
or a DataFrame without a text column runs find and dedup on its vectors, every record a
document, the pairs those of brute force; --also-jaccard (and --either) need the texts
and say so, naming the option."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import neardup
from neardup import api

from .corpus import cosine_truth, planted_vectors, spoil

N, D, T = 96, 10, 0.85


@pytest.fixture(scope="module")
def vectors():
    x = planted_vectors(N, D, 5)
    bad = spoil(x)
    return x, bad


@pytest.fixture(scope="module")
def truth(vectors):
    x, bad = vectors
    usable = np.ones(N, dtype=bool)
    usable[list(bad)] = False
    found = cosine_truth(x, T, usable)
    assert len(found) > 10
    return {(f"d{i}", f"d{j}") for i, j in found}


def ids():
    return [f"d{k}" for k in range(N)]


def write(kind: str, x: np.ndarray, path) -> str:
    column = pa.array(list(x), type=pa.list_(pa.float32()))
    table = pa.table({"id": ids(), "vec": column})
    if kind == "parquet":
        pq.write_table(table, path)
    elif kind == "arrow":
        feather.write_feather(table, path)
    else:
        with open(path, "w") as f:
            for k in range(N):  # NaN and Infinity as Python's json writes them
                f.write(json.dumps({"id": f"d{k}", "vec": x[k].tolist()}) + "\n")
    return str(path)


def pair_ids(result) -> set[tuple[str, str]]:
    table = result.pairs_table()
    return set(zip(table.column("id_a").to_pylist(), table.column("id_b").to_pylist()))


@pytest.mark.parametrize("kind", ["parquet", "arrow", "jsonl"])
@pytest.mark.parametrize("method", ["exact", "lsh"])
def test_files_without_text_find_the_brute_force_pairs(kind, method, vectors, truth,
                                                       tmp_path):
    x, bad = vectors
    path = write(kind, x, tmp_path / f"v.{kind}")
    result = neardup.find(path, embeddings="vec", threshold=T, method=method,
                          id_field="id")
    assert pair_ids(result) == truth
    assert result.counts["documents"] == N  # every record a document, none failed
    assert result.read_report["processed"] == N
    assert result.counts["vectors"]["skipped"] == len(bad)


def test_dataframe_without_text(vectors, truth):
    x, _ = vectors
    frame = pd.DataFrame({"id": ids(), "vec": list(x)})
    result = neardup.find(frame, embeddings="vec", threshold=T, method="exact",
                          id_field="id")
    assert pair_ids(result) == truth
    kept = neardup.dedup(frame, embeddings="vec", threshold=T, id_field="id")
    centred = neardup.find(frame, embeddings="vec", threshold=T, id_field="id",
                           clusters="center")  # dedup's clusters
    assert kept["id"].tolist() == [d for d, keep in zip(centred.ids, centred.representative)
                                   if keep]


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
def test_dedup_copy_without_text(kind, vectors, tmp_path):
    x, _ = vectors
    path = write(kind, x, tmp_path / f"v.{kind}")
    result = neardup.find(path, embeddings="vec", threshold=T, id_field="id",
                          clusters="center")  # dedup's clusters
    kept_ids = {doc for doc, keep in zip(result.ids, result.representative) if keep}
    out = tmp_path / f"kept.{kind}"
    proc = subprocess.run([sys.executable, "-m", "neardup", "dedup", path, "--embeddings",
                           "vec", "-t", str(T), "--id-field", "id", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    if kind == "parquet":
        written = pq.read_table(out).column("id").to_pylist()
    else:
        written = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert set(written) == kept_ids and len(written) == N - result.counts["removable"]


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
@pytest.mark.parametrize("either", [False, True])
def test_also_jaccard_needs_the_texts(kind, either, vectors, tmp_path):
    x, _ = vectors
    path = write(kind, x, tmp_path / f"v.{kind}")
    option = "--also-jaccard with --either" if either else "--also-jaccard"
    with pytest.raises(ValueError, match=f"^{option} compares the records' texts"):
        neardup.find(path, embeddings="vec", threshold=T, also_jaccard=0.5, either=either,
                     id_field="id")


def test_a_text_column_is_still_read(vectors):
    """Where the text column is there, a blank text is skipped as in any run."""
    x, _ = vectors
    texts = [f"record {k}" if k != 4 else "" for k in range(N)]
    frame = pd.DataFrame({"text": texts, "vec": list(x)})
    result = neardup.find(frame, embeddings="vec", threshold=T)
    assert result.read_report["processed"] == N - 1


def test_evaluate_without_text(vectors, truth, tmp_path):
    x, _ = vectors
    path = write("parquet", x, tmp_path / "v.parquet")
    evaluation = api.evaluate(path, embeddings="vec", threshold=T)
    assert evaluation.metrics["true_pairs"] == len(truth)
    assert evaluation.metrics["documents"] == N - 3  # the spoilt vectors set aside

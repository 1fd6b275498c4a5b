"""``find`` and ``dedup --engine spark --embeddings COL``: the local engine's pairs (with
their cosines, to the bit), clusters, documents, counts and dedup copy, from JSON Lines
and Parquet, bad vectors and duplicate vectors included.

The corpus (tests/cosine/corpus.py's) plants near-copies at several cosines, exact
duplicate vectors, a zero vector, NaN and infinity; the files add a record without the
field, a null vector, vectors of the wrong length and records that fail or are skipped
before their vector is read. Both engines run LSH (Spark runs no all-pairs comparison),
so the same candidates, the same pairs."""

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402

from ..cosine.corpus import planted_texts, planted_vectors, spoil  # noqa: E402
from .copies import joined, parts, same_counts  # noqa: E402

N, D = 150, 12
OPTIONS = {"embeddings": "emb", "threshold": 0.8, "method": "lsh", "id": "id",
           "shingle_kind": "word", "shingle_size": 1}


def _vectors() -> tuple[list, list[str]]:
    """The records' vectors (lists, None for no vector) and texts."""
    x = planted_vectors(N, D, seed=5)
    spoil(x)
    rows = [v.tolist() for v in x.astype(np.float64)]
    rows[20] = None  # a null vector
    rows[33] = rows[33][:-1]  # the wrong length
    rows[34] = rows[34] + [0.5]
    rows[40] = [int(round(v * 10)) for v in rows[40]]  # integers are numbers too
    return rows, planted_texts(N, seed=5)


def _write_jsonl(path) -> None:
    rows, texts = _vectors()
    lines = []
    for k, (vec, text) in enumerate(zip(rows, texts)):
        record = {"id": f"d{k}", "text": text}
        if k != 50:  # no field at all: no vector
            record["emb"] = vec
        lines.append(json.dumps(record))
    lines[60] = '{"id": "d60", "text": '  # malformed: no document, no vector
    lines[61] = json.dumps({"id": "d61", "text": "   ", "emb": rows[61]})  # empty text
    lines.insert(70, "")  # a blank line
    path.write_text("\n".join(lines) + "\n")


def _write_parquet(path, value_type=None) -> None:
    value_type = value_type or pa.float32()
    rows, texts = _vectors()
    texts[61] = None  # null text: skipped, its vector with it
    pq.write_table(pa.table({"id": [f"d{k}" for k in range(N)], "text": texts,
                             "emb": pa.array(rows, pa.list_(value_type))}),
                   path, row_group_size=16)


def _same_find(src, tmp_path, **options):
    local = neardup.find(src, **OPTIONS, **options)
    result = neardup.find(src, engine="spark", **OPTIONS, **options)
    pairs = result.pairs.orderBy("doc_a", "doc_b").toArrow()
    want = local.pairs_table()
    assert pairs.column_names == want.column_names
    assert pairs.to_pylist() == want.to_pylist()
    order = result.orders["clusters"]
    clusters = order.frame.orderBy(*order.by).select(*result.clusters.columns)
    assert clusters.toArrow().to_pylist() == local.clusters_table().to_pylist()
    assert result.documents.toArrow().to_pylist() == local.documents_table().to_pylist()
    assert result.counts == local.counts
    assert result.read_report == local.read_report
    return local, result


def test_jsonl_pairs_cosines_clusters_and_counts_are_the_local_ones(spark, tmp_path,
                                                                      small_splits):
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    local, result = _same_find(src, tmp_path)
    vectors = local.counts["vectors"]
    assert vectors["skipped_by_reason"] == {"no vector": 2, "vector of the wrong length": 2,
                                            "vector of zero norm": 1,
                                            "vector with NaN or infinity": 2}
    assert vectors["source"] == "field emb"
    cosines = local.pairs_table().column("cosine").to_numpy()
    assert cosines.size > 10 and (cosines >= 0.8).all() and (cosines == 1.0).any()
    statuses = set(local.documents_table().column("status").to_pylist())
    assert "vector of zero norm" in statuses


@pytest.mark.parametrize("value_type", [pa.float32(), pa.float64()])
def test_parquet_pairs_cosines_clusters_and_counts_are_the_local_ones(spark, tmp_path,
                                                                        small_splits,
                                                                        value_type):
    src = tmp_path / "in.parquet"
    _write_parquet(src, value_type)
    local, _ = _same_find(src, tmp_path, clusters="center", representative="longest")
    assert local.counts["vectors"]["source"] == "column emb"
    assert local.counts["vectors"]["skipped_by_reason"]["vector of the wrong length"] == 2


def test_two_inputs_of_different_lengths_as_the_local_engine_counts_them(spark, tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    _write_parquet(a)
    short = pa.table({"id": ["s1", "s2"], "text": ["one text", "another text"],
                      "emb": pa.array([[1.0, 2.0], [1.0, 2.0]], pa.list_(pa.float32()))})
    pq.write_table(short, b)
    local, _ = _same_find([a, b], tmp_path)
    # one input each way: the smaller length, and every vector of the other input wrong
    assert local.counts["vectors"]["dimensions"] == 2
    assert local.counts["vectors"]["usable"] == 2


def test_jsonl_annotated_copy_is_the_local_one_byte_for_byte(spark, tmp_path, small_splits):
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    local = neardup.dedup(src, tmp_path / "local.jsonl", annotate=True, keep="all",
                          **OPTIONS)
    result = neardup.dedup(src, tmp_path / "spark", engine="spark", annotate=True,
                           keep="all", **OPTIONS)
    assert len(parts(tmp_path / "spark")) >= 2
    assert joined(tmp_path / "spark") == (tmp_path / "local.jsonl").read_bytes()
    same_counts(result, local, tmp_path / "spark")
    assert local.counts["dedup"]["removed"] == 0  # keep all: annotated, none removed
    assert b'"neardup_cosine": 1.0' in (tmp_path / "local.jsonl").read_bytes()


def test_parquet_dedup_copy_holds_the_local_rows(spark, tmp_path, small_splits):
    src = tmp_path / "in.parquet"
    _write_parquet(src)
    local = neardup.dedup(src, tmp_path / "local.parquet", annotate=True, **OPTIONS)
    result = neardup.dedup(src, tmp_path / "spark", engine="spark", annotate=True, **OPTIONS)
    got = pa.concat_tables([pq.read_table(p) for p in parts(tmp_path / "spark")])
    want = pq.read_table(tmp_path / "local.parquet")
    assert got.schema == want.schema and "neardup_cosine" in got.column_names
    assert got.drop(["emb"]).to_pylist() == want.drop(["emb"]).to_pylist()
    flat = [pa.compute.list_flatten(t.column("emb")).to_numpy(zero_copy_only=False)
            for t in (got, want)]
    assert np.array_equal(*flat, equal_nan=True)  # NaN is a value the copy keeps
    same_counts(result, local, tmp_path / "spark")


def test_what_spark_does_not_run_on_embeddings_is_refused_by_name(spark, tmp_path):
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    with pytest.raises(ValueError, match="^--also-jaccard is not supported by the Spark"):
        neardup.find(src, engine="spark", also_jaccard=0.5, **OPTIONS)
    with pytest.raises(ValueError, match="^--embeddings v.npy is not supported by the Spark"):
        neardup.find(src, engine="spark", **{**OPTIONS, "embeddings": "v.npy"})
    with pytest.raises(ValueError, match="^--embeddings is not supported with an index"):
        neardup.find(src, engine="spark", against=tmp_path / "some.index", **OPTIONS)
    packed = tmp_path / "in.jsonl.gz"
    packed.write_bytes(gzip.compress(src.read_bytes()))
    with pytest.raises(ValueError, match="reads embeddings from JSON Lines and Parquet files"):
        neardup.find(packed, engine="spark", **OPTIONS)
    frame = spark.createDataFrame([("a", "one text")], "id string, text string")
    with pytest.raises(ValueError, match="^embeddings is not supported by the Spark"):
        neardup.spark.find(frame, embeddings="emb")


def test_records_without_a_text_are_documents_on_embeddings_alone(spark, tmp_path):
    """A JSON object without the text field, a Parquet file without a text column: a
    document with an empty text, as the local reader reads it (a blank text is skipped
    all the same)."""
    rows, texts = _vectors()
    lines = [json.dumps({"id": f"d{k}", "emb": vec} if k % 3 else
                        {"id": f"d{k}", "text": text, "emb": vec})
             for k, (vec, text) in enumerate(zip(rows, texts))]
    lines[9] = json.dumps({"id": "d9", "text": " ", "emb": rows[9]})  # blank: skipped
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    local, _ = _same_find(src, tmp_path)
    assert local.counts["documents"] == N - 1
    table = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [f"d{k}" for k in range(N)],
                             "emb": pa.array(rows, pa.list_(pa.float32()))}), table)
    local, _ = _same_find(table, tmp_path)
    assert local.counts["documents"] == N and local.counts["shingles"] == 0


def test_result_folders_are_the_local_ones(spark, tmp_path, small_splits):
    """The single layout writes the local files byte for byte (summary.json too); the
    parts hold the local pairs, with their cosines."""
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    neardup.find(src, out=tmp_path / "local", **OPTIONS)
    neardup.find(src, out=tmp_path / "single", engine="spark", layout="single", **OPTIONS)
    for name in ("pairs", "clusters", "documents", "identical", "candidates"):
        assert ((tmp_path / "single" / f"{name}.csv").read_bytes()
                == (tmp_path / "local" / f"{name}.csv").read_bytes()), name
    assert ((tmp_path / "single" / "summary.json").read_bytes()
            == (tmp_path / "local" / "summary.json").read_bytes())
    neardup.find(src, out=tmp_path / "parts", engine="spark", layout="parts",
                 output_format="parquet", **OPTIONS)
    got = pq.read_table(tmp_path / "parts" / "pairs")
    local = neardup.find(src, **OPTIONS).pairs_table()
    assert got.column_names == local.column_names
    assert got.to_pylist() == local.to_pylist()


def test_method_auto_runs_cosine_lsh_and_says_so(spark, tmp_path):
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    options = {**OPTIONS, "method": "auto"}
    result = neardup.find(src, engine="spark", **options)
    local = neardup.find(src, **OPTIONS)  # LSH, as Spark runs it
    assert result.counts["method_choice"] == {"method": "lsh",
                                              "reason": "the Spark engine runs cosine LSH"}
    pairs = result.pairs.orderBy("doc_a", "doc_b").toArrow()
    assert pairs.to_pylist() == local.pairs_table().to_pylist()

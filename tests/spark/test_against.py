"""find/dedup --against IDX --engine spark give the local engine's answer against an index:
the same pairs new x indexed and new x new, tables, counts and copy, byte for byte."""

import json
import os

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from neardup import cli  # noqa: E402
from neardup.synthetic import planted_corpus  # noqa: E402
from tests.spark.settings import split_inputs  # noqa: E402

OPTIONS = dict(threshold=0.7, shingle_kind="char", shingle_size=5)


@pytest.fixture
def small_partitions(spark):
    """Inputs split into several partitions (several tasks query the index) and tables
    written as several parts."""
    with split_inputs(spark, 65536):
        yield


def _lines(texts, ids):
    return [json.dumps({"id": i, "text": t}) for i, t in zip(ids, texts)]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """OLD (indexed in two segments: a build and an add) and NEW: planted near-duplicates
    on both sides of the split and within NEW, NEW documents identical to indexed ones
    (J = 1 with the index, some in an identical group of NEW), copies within NEW, and
    NEW lines the reader sets aside (malformed, too few shingles)."""
    root = tmp_path_factory.mktemp("against")
    c = planted_corpus(900, dup_fraction=0.15, similarity=(0.5, 1.0), exact_copies=20, seed=21)
    lines = _lines(c.texts, c.ids)
    old, new = lines[:550], lines[550:]
    for k, source in enumerate((3, 40, 40, 200, 549)):  # copies of indexed documents
        new.insert(7 * k + 1, json.dumps({"id": f"again{k}", "text": c.texts[source]}))
    new[20:20] = ['{"text": "never closed', json.dumps({"id": "tiny", "text": "w1"}), ""]
    paths = {name: root / f"{name}.jsonl" for name in ("old1", "old2", "new")}
    paths["old1"].write_text("\n".join(old[:300]) + "\n")
    paths["old2"].write_text("\n".join(old[300:]) + "\n")
    paths["new"].write_text("\n".join(new) + "\n")
    index = neardup.Index.build(paths["old1"], root / "idx", **OPTIONS)
    index.add(paths["old2"])
    return paths["new"], root / "idx"


def _same_files(local_dir, spark_dir):
    names = sorted(p.name for p in local_dir.iterdir())
    assert names == sorted(p.name for p in spark_dir.iterdir())
    for name in names:
        if name != "timings.json":  # seconds differ from run to run
            assert (spark_dir / name).read_bytes() == (local_dir / name).read_bytes(), name


def test_find_against_index_same_files_and_counts_as_local(spark, planted, tmp_path,
                                                           small_partitions):
    new, idx = planted
    local = neardup.find(new, against=idx, out=tmp_path / "local", output_format="parquet")
    result = neardup.find(new, against=idx, engine="spark", out=tmp_path / "spark",
                          output_format="parquet", layout="single")
    assert result.counts == local.counts
    c = local.counts
    assert c["index"]["segments"] == 2 and c["index"]["pairs_with_index"] >= 20
    assert c["index"]["identical_pairs_with_index"] >= 5 and c["identical_pairs"] > 0
    assert c["pairs"] > c["index"]["pairs_with_index"]  # new x new too
    _same_files(tmp_path / "local", tmp_path / "spark")  # every table, summary included
    pairs = local.pairs_table()
    assert pairs.column_names[-2:] == ["source_a", "source_b"]
    assert set(pairs.column("source_b").to_pylist()) == {"new", "index"}


def _key_sharing_pairs_at_least_t(new, idx) -> set:
    """(new id, indexed id, J to 6 decimals) of every (new, indexed) document pair whose
    sets share a band key and have exact Jaccard >= t: brute force over the two sides."""
    from neardup.index import Index
    from neardup.lsh import band_keys
    from neardup.options import split_options
    from neardup.pipeline.run import find_documents
    from neardup.shingling import ShingleSets
    from neardup.verify import exact_jaccard

    index = Index(idx)
    groups = split_options(index.query_options({}))
    run, _ = find_documents(new, groups, quiet=True, representative_field=None,
                            keep_arrays=True)
    usable = np.flatnonzero(run.pair_set.head >= 0)
    sets = run.sets.subset(usable)  # the sets of every document that can pair
    heads = np.flatnonzero(run.pair_set.head == np.arange(run.n))
    signatures = run.signatures.matrix[np.searchsorted(heads, run.pair_set.head[usable])]
    new_keys = band_keys(signatures, index.bands, index.rows)
    old_keys = band_keys(np.concatenate([s.signatures for s in index.segments]), index.bands,
                         index.rows)
    i, j = np.nonzero((new_keys[:, None, :] == old_keys[None, :, :]).any(axis=2))
    both = ShingleSets.concat([sets, *(s.sets for s in index.segments)])
    jaccard = exact_jaccard(both, i, j + sets.n)
    real = jaccard >= OPTIONS["threshold"]
    ids_new = np.asarray(run.ids, dtype=object)[usable]
    ids_old = index.ids(np.arange(index.n)).to_pylist()
    return {(ids_new[a], ids_old[b], round(float(v), 6))
            for a, b, v in zip(i[real], j[real], jaccard[real])}


def test_cli_parts_same_rows_as_local_and_pairs_with_index_as_brute_force(spark, planted,
                                                                          tmp_path):
    new, idx = planted
    for engine in ("local", "spark"):  # Spark's default layout: parts by the executors
        assert cli.main(["find", str(new), "--against", str(idx), "--engine", engine,
                         "-o", str(tmp_path / engine), "-q"]) == 0
    assert ((tmp_path / "spark" / "summary.json").read_bytes()
            == (tmp_path / "local" / "summary.json").read_bytes())
    single, parts = (neardup.read_results(tmp_path / e) for e in ("local", "spark"))
    assert parts.layout == "parts" and list(parts.tables) == list(single.tables)
    for name in single.tables:  # in order, read back through the same reader
        assert parts[name].to_pylist() == single[name].to_pylist(), name
    rows = [r for r in parts["pairs"].to_pylist() if r["source_b"] == "index"]
    expected = _key_sharing_pairs_at_least_t(new, idx)
    assert {(r["id_a"], r["id_b"], r["jaccard"]) for r in rows} == expected
    assert len(rows) == len(expected) >= 20


def test_dedup_against_index_copy_is_the_local_copy_byte_for_byte(spark, planted, tmp_path,
                                                                  small_partitions):
    new, idx = planted
    local = neardup.dedup(new, tmp_path / "local.jsonl", against=idx)
    result = neardup.dedup(new, tmp_path / "spark", against=idx, engine="spark")
    written = local.counts["dedup"]
    assert result.counts["dedup"] == written | {
        "outputs": [dict(written["outputs"][0], output=str(tmp_path / "spark") + os.sep)]}
    assert written["removed"] >= local.counts["index"]["new_in_clusters_with_index"] > 0
    assert result.counts | {"dedup": written} == local.counts  # dedup: checked above
    manifest = json.loads((tmp_path / "spark" / "manifest.json").read_text())
    assert len(manifest["files"]) > 1  # written by several tasks
    copy = b"".join((tmp_path / "spark" / f["name"]).read_bytes() for f in manifest["files"])
    assert copy == (tmp_path / "local.jsonl").read_bytes()


def test_refusals_name_the_option(spark, planted, tmp_path):
    new, idx = planted
    with pytest.raises(ValueError, match="--add is not supported by the Spark engine"):
        neardup.dedup(new, tmp_path / "out", against=idx, add=True, engine="spark")
    with pytest.raises(ValueError, match=r"shingle_size \(index 5, query 3\)"):
        neardup.find(new, against=idx, engine="spark", shingle_size=3)
    with pytest.raises(ValueError, match="not a neardup index"):
        neardup.find(new, against=tmp_path, engine="spark")
    assert not (tmp_path / "out").exists()


def test_a_chain_through_a_removed_document_keeps_its_far_end_as_locally(spark, tmp_path):
    """Indexed x; new a with J(a, x) = 0.905; new b with J(b, a) = 0.905, J(b, x) = 0.818
    at t = 0.85: a goes for x, b stays (nothing it duplicates stays), on both engines."""
    def words(lo):
        return " ".join(f"w{k}" for k in range(lo, lo + 100))

    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(json.dumps({"id": "x", "text": words(0)}) + "\n")
    new.write_text("".join(json.dumps({"id": i, "text": words(lo)}) + "\n"
                           for i, lo in (("a", 5), ("b", 10))))
    options = dict(threshold=0.85, shingle_kind="word", shingle_size=1)
    neardup.Index.build(old, tmp_path / "idx", **options)
    local = neardup.dedup(new, tmp_path / "local.jsonl", against=tmp_path / "idx")
    result = neardup.dedup(new, tmp_path / "spark", against=tmp_path / "idx", engine="spark")
    manifest = json.loads((tmp_path / "spark" / "manifest.json").read_text())
    copy = b"".join((tmp_path / "spark" / f["name"]).read_bytes() for f in manifest["files"])
    assert copy == (tmp_path / "local.jsonl").read_bytes() == new.read_text().splitlines(
        keepends=True)[1].encode()
    assert result.counts["removable"] == local.counts["removable"] == 1
    with pytest.raises(ValueError, match="--explain is not supported by the Spark engine"):
        neardup.dedup(new, tmp_path / "out", against=tmp_path / "idx", engine="spark",
                      explain=tmp_path / "why.csv")

"""``--engine spark`` on URLs, against the real S3 API server of ``s3_server`` (moto's
server mode on 127.0.0.1, s3fs as the client): the executors read JSON Lines byte ranges
and write their parts through fsspec, with the credentials of their own environment
(here the session's worker environment, as ``spark.executorEnv.*`` would set it on a
cluster); the driver lists the inputs and publishes the outputs, the manifest last.

Each run is compared with the local engine's run on the same files from local disk."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")
s3fs = pytest.importorskip("s3fs")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

from neardup import api  # noqa: E402
from neardup._core import remote  # noqa: E402
from neardup.cli import main  # noqa: E402

from ..stores import jsonl, records  # noqa: E402

THRESHOLD = 0.8


@pytest.fixture()
def s3(s3_server, spark, tmp_path, request, small_splits):
    """(filesystem, bucket, local folder): a fresh bucket holding corpus/a.jsonl (two
    seeds' records: several splits) and corpus.parquet, the same files on disk; the
    Spark workers see the server's variables in their environment."""
    context = spark.sparkContext
    before = dict(context.environment)
    context.environment.update(s3_server)  # the workers' environment, not the tasks'
    fs = s3fs.S3FileSystem()
    bucket = "s-" + request.node.name.lower().replace("_", "-")[:50]
    fs.mkdir(bucket)
    local = tmp_path / "local"
    local.mkdir()
    (local / "a.jsonl").write_bytes(jsonl(records(1) + records(2)))
    pq.write_table(pa.Table.from_pylist(records(3)), local / "corpus.parquet")
    fs.put_file(str(local / "a.jsonl"), f"{bucket}/corpus/a.jsonl")
    fs.put_file(str(local / "corpus.parquet"), f"{bucket}/corpus.parquet")
    yield fs, bucket, local
    fs.rm(bucket, recursive=True)
    context.environment.clear()
    context.environment.update(before)


def _pairs(rows) -> list[tuple]:
    return sorted((row["id_a"], row["id_b"], round(row["jaccard"], 9)) for row in rows)


def _keys(fs, bucket: str) -> list[str]:
    fs.invalidate_cache()
    return sorted(fs.find(bucket))


@pytest.fixture()
def publishing(monkeypatch, s3):
    """What the bucket held when each remote folder began to be published: a list of
    (the keys under the output's name, the keys of the executors' side folder)."""
    fs, bucket, _ = s3
    seen = []
    publish = remote.StoreFolder.publish

    def observed(self):
        side = self.side.split("://", 1)[1]
        keys = _keys(fs, bucket)
        out = self.url.split("://", 1)[1]
        seen.append(([k for k in keys if k.startswith(out + "/")],
                     [k for k in keys if k.startswith(side + "/")]))
        return publish(self)

    monkeypatch.setattr(remote.StoreFolder, "publish", observed)
    return seen


def test_find_on_s3_gives_the_local_pairs_and_a_whole_results_folder(s3, publishing,
                                                                     monkeypatch):
    from neardup.spark import found

    # the documents table written by the executors (the driver writes it up to
    # DRIVER_DOCUMENTS documents): their parts go up to the store beside the output
    monkeypatch.setattr(found, "DRIVER_DOCUMENTS", 0)
    fs, bucket, local = s3
    result = api.find(f"s3://{bucket}/corpus/a.jsonl", out=f"s3://{bucket}/run/",
                      engine="spark", threshold=THRESHOLD)
    on_disk = api.find(str(local / "a.jsonl"), threshold=THRESHOLD)
    assert _pairs(result.pairs.collect()) == _pairs(on_disk.pairs_table().to_pylist())
    assert len(_pairs(on_disk.pairs_table().to_pylist())) == 40
    assert result.read_report["records_seen"] == 80
    # nothing under the output's name until the run was done: the executors' parts
    # were on the store beside it
    (under_name, side), = publishing
    assert under_name == [] and any("/documents/part-" in k for k in side), side
    manifest = json.loads(fs.cat(f"{bucket}/run/manifest.json"))
    checked = [entry for entry in manifest["files"] if "sha256" in entry]
    assert sum("/part-" in entry["name"] for entry in checked) >= 5
    for entry in checked:  # every file the manifest lists, whole on the store
        data = fs.cat(f"{bucket}/run/{entry['name']}")
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["bytes"],
                                                                 entry["sha256"])
    assert not [k for k in _keys(fs, bucket) if "/." in k]  # the side folder removed


def test_dedup_on_s3_writes_the_local_copy_bytes(s3, publishing, tmp_path):
    fs, bucket, local = s3
    result = api.dedup(f"s3://{bucket}/corpus/a.jsonl", f"s3://{bucket}/copy/",
                       engine="spark", threshold=THRESHOLD)
    api.dedup(str(local / "a.jsonl"), str(tmp_path / "a.jsonl"), threshold=THRESHOLD)
    manifest = json.loads(fs.cat(f"{bucket}/copy/manifest.json"))
    assert len(manifest["files"]) >= 2  # parts written by several tasks
    copy = b"".join(fs.cat(f"{bucket}/copy/{entry['name']}") for entry in manifest["files"])
    assert copy == (tmp_path / "a.jsonl").read_bytes()
    assert result.counts["dedup"]["removed"] == 40
    assert publishing[0][0] == []  # nothing under the name before the manifest's run ended
    # Parquet is read on the driver (Spark's reader takes no s3:// URL here): the copy is
    # the local engine's file, uploaded whole
    api.dedup(f"s3://{bucket}/corpus.parquet", f"s3://{bucket}/c.parquet", engine="spark",
              threshold=THRESHOLD)
    api.dedup(str(local / "corpus.parquet"), str(tmp_path / "c.parquet"), threshold=THRESHOLD)
    assert fs.cat(f"{bucket}/c.parquet") == (tmp_path / "c.parquet").read_bytes()


def test_a_failed_spark_run_leaves_nothing_on_the_store(s3, monkeypatch):
    fs, bucket, _ = s3

    def cut_short(self):
        raise ConnectionError("connection dropped")

    monkeypatch.setattr(remote.StoreFolder, "publish", cut_short)
    with pytest.raises(ConnectionError):
        api.dedup(f"s3://{bucket}/corpus/a.jsonl", f"s3://{bucket}/copy/", engine="spark",
                  threshold=THRESHOLD)
    assert _keys(fs, bucket) == [f"{bucket}/corpus.parquet", f"{bucket}/corpus/a.jsonl"]


def test_a_missing_bucket_is_named_in_one_line(s3, capsys):
    fs, bucket, _ = s3
    for argv, said in (
            (["find", "s3://no-such-bucket/x.jsonl"], "s3://no-such-bucket/x.jsonl: no bucket"),
            (["dedup", f"s3://{bucket}/corpus/a.jsonl", "-o", "s3://no-such-bucket/copy/"],
             "s3://no-such-bucket/copy/: no bucket 'no-such-bucket'")):
        assert main([*argv, "--engine", "spark", "-q"]) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_an_input_changed_before_its_copy_is_refused(s3, monkeypatch):
    fs, bucket, _ = s3
    from neardup.spark import dedup

    write_copies = dedup.write_copies

    def then_changed(*args, **keywords):
        fs.pipe(f"{bucket}/corpus/a.jsonl", jsonl(records(9) + records(8)))  # a new version
        return write_copies(*args, **keywords)

    monkeypatch.setattr(dedup, "write_copies", then_changed)
    with pytest.raises(RuntimeError, match="a.jsonl changed since it was read"):
        api.dedup(f"s3://{bucket}/corpus/a.jsonl", f"s3://{bucket}/copy/", engine="spark",
                  threshold=THRESHOLD)
    assert not fs.exists(f"{bucket}/copy")


def test_a_hub_dataset_gives_the_local_pairs(spark, hub):
    """A Hub dataset by name: its split files (Parquet, read on the driver through the
    fake Hub, which only this process has)."""
    files = sorted(str(p) for p in hub.iterdir())
    result = api.find("hf://datasets/org/name", engine="spark", threshold=THRESHOLD)
    on_disk = api.find(files, threshold=THRESHOLD)
    assert _pairs(result.pairs.collect()) == _pairs(on_disk.pairs_table().to_pylist())
    assert len(_pairs(on_disk.pairs_table().to_pylist())) == 60


def test_repeats_and_an_index_build_read_s3_on_spark(s3, tmp_path):
    fs, bucket, local = s3
    api.repeats_run(f"s3://{bucket}/corpus/", f"s3://{bucket}/repeats.csv", unit="line",
                    engine="spark")
    api.repeats_run(str(local / "a.jsonl"), str(tmp_path / "repeats.csv"), unit="line")
    assert fs.cat(f"{bucket}/repeats.csv") == (tmp_path / "repeats.csv").read_bytes()
    built = api.build_index(f"s3://{bucket}/corpus/*.jsonl", str(tmp_path / "index"),
                            engine="spark", threshold=THRESHOLD)
    assert built.info()["documents"] == 80

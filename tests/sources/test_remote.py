"""Remote paths (s3://, hf://, http://) read and written through fsspec, against a real S3
API server started here on 127.0.0.1 (moto's server mode, with s3fs as the client), a
local HTTP server, and a fake of the Hub's file layout.

The Hub's fake is fsspec's local file system registered under ``hf://`` and rooted at a
folder laid out as the Hub lays a dataset out (``datasets/ORG/NAME/data/<split>-*.parquet``
beside a README and ``.gitattributes``): it runs neardup's own path through fsspec (the
protocol, the folder listed, the split files chosen, each read with random access), not
huggingface_hub's HTTP client, its revisions or its tokens.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import hashlib
import http.server
import json
import os
import sys
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup import api
from neardup.cli import main

from ..stores import jsonl as _jsonl
from ..stores import records as _records

moto_server = pytest.importorskip("moto.server")

s3fs = pytest.importorskip("s3fs")
fsspec = pytest.importorskip("fsspec")

THRESHOLD = 0.8


def _parquet(records, path) -> None:
    pq.write_table(pa.Table.from_pylist(records), path)


@pytest.fixture()
def s3(s3_server, tmp_path, request):
    """(filesystem, bucket name, local folder): a fresh bucket holding the corpus as
    corpus/a.jsonl, corpus/b.jsonl.gz and corpus.parquet, and the same files on disk."""
    fs = s3fs.S3FileSystem()
    bucket = "b-" + request.node.name.lower().replace("_", "-")[:50]
    fs.mkdir(bucket)
    local = tmp_path / "local"
    local.mkdir()
    (local / "a.jsonl").write_bytes(_jsonl(_records(1)))
    (local / "b.jsonl.gz").write_bytes(gzip.compress(_jsonl(_records(2)), mtime=0))
    _parquet(_records(3), local / "corpus.parquet")
    for name, key in (("a.jsonl", "corpus/a.jsonl"), ("b.jsonl.gz", "corpus/b.jsonl.gz"),
                      ("corpus.parquet", "corpus.parquet")):
        fs.put_file(str(local / name), f"{bucket}/{key}")
    yield fs, bucket, local
    fs.rm(bucket, recursive=True)


def _pairs(result) -> list[tuple]:
    table = result.pairs_table().to_pylist()
    return sorted((row["id_a"], row["id_b"], round(row["jaccard"], 9)) for row in table)


def test_find_on_s3_gives_the_local_pairs(s3):
    fs, bucket, local = s3
    for key, name in (("corpus/a.jsonl", "a.jsonl"), ("corpus/b.jsonl.gz", "b.jsonl.gz"),
                      ("corpus.parquet", "corpus.parquet")):
        remote = api.find(f"s3://{bucket}/{key}", threshold=THRESHOLD)
        on_disk = api.find(str(local / name), threshold=THRESHOLD)
        assert _pairs(remote) == _pairs(on_disk)
        assert len(_pairs(remote)) == 20  # each planted pair, found from the stream


def test_a_remote_folder_is_its_data_files_in_path_order(s3):
    fs, bucket, local = s3
    remote = api.find(f"s3://{bucket}/corpus/", threshold=THRESHOLD)
    on_disk = api.find([str(local / "a.jsonl"), str(local / "b.jsonl.gz")],
                       threshold=THRESHOLD)
    assert _pairs(remote) == _pairs(on_disk)
    globbed = api.find(f"s3://{bucket}/corpus/*.jsonl", threshold=THRESHOLD)
    assert _pairs(globbed) == _pairs(api.find(str(local / "a.jsonl"), threshold=THRESHOLD))


def test_find_out_to_s3_is_a_results_folder_with_its_manifest(s3, tmp_path, capsys):
    fs, bucket, local = s3
    assert main(["find", f"s3://{bucket}/corpus/a.jsonl", "-t", str(THRESHOLD), "-q",
                 "--out", f"s3://{bucket}/run/"]) == 0
    assert main(["find", str(local / "a.jsonl"), "-t", str(THRESHOLD), "-q",
                 "--out", str(tmp_path / "run")]) == 0
    assert f"written to s3://{bucket}/run/" in capsys.readouterr().out
    keys = sorted(k.rsplit("/", 1)[1] for k in fs.find(f"{bucket}/run"))
    assert keys == sorted(os.listdir(tmp_path / "run"))
    manifest = json.loads(fs.cat(f"{bucket}/run/manifest.json"))
    checked = [entry for entry in manifest["files"] if "sha256" in entry]
    assert len(checked) == len(manifest["files"]) - 1  # all but timings.json
    for entry in checked:  # the manifest describes the parts as uploaded
        data = fs.cat(f"{bucket}/run/{entry['name']}")
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["bytes"],
                                                                 entry["sha256"])
    for table in ("pairs.csv", "clusters.csv", "documents.csv"):  # the local run's tables
        assert fs.cat(f"{bucket}/run/{table}") == (tmp_path / "run" / table).read_bytes()
    # a second run replaces its own folder; a folder of other files is refused untouched
    fs.pipe(f"{bucket}/theirs/data.txt", b"mine")
    assert main(["find", f"s3://{bucket}/corpus/a.jsonl", "-q",
                 "--out", f"s3://{bucket}/theirs/"]) == 2
    assert "no neardup run wrote" in capsys.readouterr().err
    assert fs.find(f"{bucket}/theirs") == [f"{bucket}/theirs/data.txt"]


def test_dedup_to_s3_writes_the_local_copy_byte_for_byte(s3, tmp_path):
    fs, bucket, local = s3
    for key, name, out in (("corpus/a.jsonl", "a.jsonl", "a.dedup.jsonl"),
                           ("corpus/b.jsonl.gz", "b.jsonl.gz", "b.dedup.jsonl.gz"),
                           ("corpus.parquet", "corpus.parquet", "c.dedup.parquet")):
        result = api.dedup(f"s3://{bucket}/{key}", f"s3://{bucket}/out/{out}",
                           threshold=THRESHOLD, summary=f"s3://{bucket}/out/{out}.json")
        api.dedup(str(local / name), str(tmp_path / out), threshold=THRESHOLD)
        assert fs.cat(f"{bucket}/out/{out}") == (tmp_path / out).read_bytes()
        assert result.counts["dedup"]["removed"] == 20
        summary = fs.cat(f"{bucket}/out/{out}.json").decode()
        # the summary names the URLs, never the local stand-in the copy was staged in
        assert json.loads(summary)["counts"]["dedup"]["outputs"][0]["output"] == \
            f"s3://{bucket}/out/{out}"
        assert "neardup-remote-" not in summary


def test_dedup_of_a_remote_folder_writes_a_folder_of_copies(s3, tmp_path):
    fs, bucket, local = s3
    api.dedup(f"s3://{bucket}/corpus/", f"s3://{bucket}/copies/", threshold=THRESHOLD)
    api.dedup([str(local / "a.jsonl"), str(local / "b.jsonl.gz")], str(tmp_path / "copies"),
              threshold=THRESHOLD)
    for name in ("a.jsonl", "b.jsonl.gz"):
        assert fs.cat(f"{bucket}/copies/{name}") == (tmp_path / "copies" / name).read_bytes()
    names = {k.rsplit("/", 1)[1] for k in fs.find(f"{bucket}/copies")}
    assert names == set(os.listdir(tmp_path / "copies"))


def test_a_failed_run_leaves_nothing_under_the_outputs_name(s3, monkeypatch):
    fs, bucket, _ = s3
    from neardup import sources
    from neardup.sources import registry

    def half_then_fail(src, removed, out, *rest, **keywords):
        out.write(b'{"id": "partial"}\n')
        raise RuntimeError("disk gone mid-write")

    jsonl = sources.format_named("jsonl")
    monkeypatch.setitem(registry.BY_NAME, "jsonl", dataclasses.replace(jsonl,
                                                                       copy=half_then_fail))
    with pytest.raises(RuntimeError, match="mid-write"):
        api.dedup(f"s3://{bucket}/corpus/a.jsonl", f"s3://{bucket}/copy.jsonl",
                  threshold=THRESHOLD, summary=f"s3://{bucket}/summary.json")
    assert not fs.exists(f"{bucket}/copy.jsonl")
    assert not fs.exists(f"{bucket}/summary.json")


def test_a_folder_upload_cut_short_leaves_no_manifest(s3, monkeypatch):
    fs, bucket, _ = s3
    put = s3fs.S3FileSystem._put_file

    async def put_until_the_manifest(self, lpath, rpath, *args, **kwargs):
        if rpath.endswith("manifest.json"):
            raise ConnectionError("connection dropped")
        return await put(self, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_put_file", put_until_the_manifest)
    s3fs.S3FileSystem.clear_instance_cache()  # a new instance takes the patched upload
    try:
        with pytest.raises(ValueError, match="connection dropped"):
            api.find(f"s3://{bucket}/corpus/a.jsonl", out=f"s3://{bucket}/run/",
                     threshold=THRESHOLD)
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    written = {k.rsplit("/", 1)[1] for k in fs.find(f"{bucket}/run")}
    assert "pairs.csv" in written and "manifest.json" not in written  # the manifest last


def _error(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_a_missing_bucket_or_key_is_named_in_one_line(s3, capsys):
    fs, bucket, _ = s3
    err = _error(["find", "s3://no-such-bucket/x.jsonl", "-q"], capsys)
    assert "s3://no-such-bucket/x.jsonl" in err and "no bucket 'no-such-bucket'" in err
    err = _error(["find", f"s3://{bucket}/missing.jsonl", "-q"], capsys)
    assert f"s3://{bucket}/missing.jsonl: no such file or folder" in err
    err = _error(["dedup", f"s3://{bucket}/corpus/a.jsonl", "-q",
                  "-o", "s3://no-such-bucket/copy.jsonl"], capsys)
    assert "no bucket 'no-such-bucket'" in err


def test_no_credentials_is_named_with_what_to_set(s3, capsys, monkeypatch):
    fs, bucket, _ = s3
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        err = _error(["find", f"s3://{bucket}/corpus/a.jsonl", "-q"], capsys)
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    assert f"s3://{bucket}/corpus/a.jsonl" in err
    assert "no credentials" in err and "AWS_ACCESS_KEY_ID" in err


def test_unknown_protocols_missing_extras_and_credentials_in_urls(capsys, monkeypatch):
    err = _error(["find", "xyz://bucket/c.jsonl", "-q"], capsys)
    assert "xyz://bucket/c.jsonl: unknown protocol xyz://" in err
    monkeypatch.setitem(sys.modules, "gcsfs", None)  # the gcs extra not installed
    err = _error(["find", "gs://bucket/c.jsonl", "-q"], capsys)
    assert "gs://bucket/c.jsonl" in err and "pip install 'neardup[gcs]'" in err
    err = _error(["find", "https://user:secret@example.org/c.jsonl", "-q"], capsys)
    assert "may not carry credentials" in err and "secret" not in err


def test_what_must_stay_local_is_refused_by_name(s3, tmp_path, capsys):
    fs, bucket, local = s3
    err = _error(["dedup", f"s3://{bucket}/corpus/a.jsonl", "-o", str(tmp_path / "c.jsonl"),
                  "--memory-limit", "1G", "--work-dir", f"s3://{bucket}/spill"], capsys)
    assert f"--work-dir s3://{bucket}/spill: spill files" in err
    err = _error(["find", str(local / "a.jsonl"), "--out", "https://example.org/run/"],
                 capsys)
    assert "https:// is read only" in err
    with pytest.raises(ValueError, match="no atomic rename"):
        api.build_index(str(local / "a.jsonl"), f"s3://{bucket}/index")
    for command in (["add", f"s3://{bucket}/index", str(local / "a.jsonl")],
                    ["compact", f"s3://{bucket}/index"]):
        err = _error(["index", *command], capsys)
        assert f"index {command[0]} s3://{bucket}/index: an index is written only" in err
    with pytest.raises(ValueError, match="no atomic rename"):
        api.dedup(str(local / "a.jsonl"), str(tmp_path / "c.jsonl"),
                  against=f"s3://{bucket}/index", add=True)
    assert not fs.exists(f"{bucket}/index")


def test_an_index_is_read_from_s3(s3, tmp_path):
    fs, bucket, local = s3
    api.build_index(str(local / "a.jsonl"), str(tmp_path / "index"), threshold=THRESHOLD)
    built = api.build_index(f"s3://{bucket}/corpus/*.jsonl", str(tmp_path / "from-s3"),
                            threshold=THRESHOLD)  # an index built from remote files
    assert built.info()["documents"] == 40
    fs.put(str(tmp_path / "index") + "/", f"{bucket}/index/", recursive=True)
    remote = api.dedup(str(local / "b.jsonl.gz"), str(tmp_path / "r.jsonl"),
                       against=f"s3://{bucket}/index")
    on_disk = api.dedup(str(local / "b.jsonl.gz"), str(tmp_path / "l.jsonl"),
                        against=str(tmp_path / "index"))
    assert (tmp_path / "r.jsonl").read_bytes() == (tmp_path / "l.jsonl").read_bytes()
    assert remote.counts["dedup"] == {**on_disk.counts["dedup"], "outputs": [
        {**o, "output": str(tmp_path / "r.jsonl")} for o in on_disk.counts["dedup"]["outputs"]]}


def test_http_inputs_are_read_like_local_files(tmp_path):
    pytest.importorskip("aiohttp")
    (tmp_path / "a.jsonl").write_bytes(_jsonl(_records(4)))
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/a.jsonl"
        assert _pairs(api.find(url, threshold=THRESHOLD)) == \
            _pairs(api.find(str(tmp_path / "a.jsonl"), threshold=THRESHOLD))
        # a signed URL: read as a.jsonl, its signature kept out of the ids and the summary
        result = api.dedup(url + "?X-Amz-Signature=secret", str(tmp_path / "copy.jsonl"),
                           threshold=THRESHOLD, summary=str(tmp_path / "summary.json"))
        api.dedup(str(tmp_path / "a.jsonl"), str(tmp_path / "local.jsonl"),
                  threshold=THRESHOLD)
        assert (tmp_path / "copy.jsonl").read_bytes() == \
            (tmp_path / "local.jsonl").read_bytes()
        assert result.counts["dedup"]["outputs"][0]["input"] == url
        assert "secret" not in (tmp_path / "summary.json").read_text()
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_a_hub_dataset_is_read_by_name_as_its_split_files(hub):
    files = sorted(str(p) for p in hub.iterdir())  # test-..., train-..., train-...
    remote = api.find("hf://datasets/org/name", threshold=THRESHOLD)
    assert _pairs(remote) == _pairs(api.find(files, threshold=THRESHOLD))
    assert len(_pairs(remote)) == 60
    train = api.find("hf://datasets/org/name/data/train-*.parquet", threshold=THRESHOLD)
    assert _pairs(train) == _pairs(api.find(files[1:], threshold=THRESHOLD))
    one = "hf://datasets/org/name/data/test-00000-of-00001.parquet"
    assert api.explain(one, "s7-0", id_field="id") == \
        api.explain(files[0], "s7-0", id_field="id")  # find --explain ID


def test_a_run_under_a_memory_limit_reads_s3_as_local_disk(s3, tmp_path):
    fs, bucket, local = s3
    for key, name in (("corpus/a.jsonl", "a.jsonl"), ("corpus.parquet", "corpus.parquet")):
        suffix = name.rsplit(".", 1)[1]
        api.dedup(f"s3://{bucket}/{key}", f"s3://{bucket}/bounded.{suffix}",
                  threshold=THRESHOLD, memory_limit="256M")
        api.dedup(str(local / name), str(tmp_path / f"bounded.{suffix}"), threshold=THRESHOLD,
                  memory_limit="256M")
        assert fs.cat(f"{bucket}/bounded.{suffix}") == \
            (tmp_path / f"bounded.{suffix}").read_bytes()


def test_repeats_reads_and_writes_s3(s3, tmp_path):
    fs, bucket, local = s3
    api.repeats_run(f"s3://{bucket}/corpus/a.jsonl", f"s3://{bucket}/repeats.csv", unit="line",
                    summary=f"s3://{bucket}/repeats.json")
    api.repeats_run(str(local / "a.jsonl"), str(tmp_path / "repeats.csv"), unit="line")
    assert fs.cat(f"{bucket}/repeats.csv") == (tmp_path / "repeats.csv").read_bytes()
    assert json.loads(fs.cat(f"{bucket}/repeats.json"))["command"] == "repeats"


def test_a_remote_input_changed_before_its_copy_is_refused(s3, monkeypatch):
    fs, bucket, _ = s3
    find_for_copy = api._find_for_copy

    def then_changed(*args, **keywords):
        found = find_for_copy(*args, **keywords)
        fs.pipe(f"{bucket}/corpus/a.jsonl", _jsonl(_records(9)))  # a new version, same size
        return found

    monkeypatch.setattr(api, "_find_for_copy", then_changed)
    with pytest.raises(RuntimeError, match="changed since it was read"):
        api.dedup(f"s3://{bucket}/corpus/", f"s3://{bucket}/copies/", threshold=THRESHOLD)
    assert not fs.exists(f"{bucket}/copies")

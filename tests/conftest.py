"""Fixtures and hooks shared by every test package.

Markers (registered in pyproject.toml): ``spark`` tests skip here where pyspark or a
working Java runtime is missing, whichever folder they live in; ``browser`` and ``slow``
only select (``make test-fast`` leaves all three out)."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

import pytest


@pytest.fixture(scope="session")
def write_lines():
    """``write_lines(path, texts)``: one text a line, each line ended; the path."""

    def write(path, texts):
        path.write_text("\n".join(texts) + "\n")
        return path

    return write


@pytest.fixture(scope="session")
def write_jsonl():
    """``write_jsonl(path, texts, ids=None)``: one ``{"id", "text"}`` record a line (ids
    ``d0``, ``d1``, ... unless given, UTF-8 unescaped); the path as a string."""

    def write(path, texts, ids=None) -> str:
        with open(path, "w", encoding="utf-8") as f:
            for k, text in enumerate(texts):
                f.write(json.dumps({"id": ids[k] if ids else f"d{k}", "text": text},
                                   ensure_ascii=False) + "\n")
        return str(path)

    return write


@pytest.fixture(scope="session")
def run_cli():
    """``run_cli(*args, **options)``: ``python -m neardup ARGS`` in a fresh process, its
    output captured as text (``options`` go to ``subprocess.run``: input, env, ...)."""

    def run(*args: str, **options) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "neardup", *args], capture_output=True,
                              text=True, **options)

    return run


@pytest.fixture(scope="module")
def s3_server():
    """A real S3 API on 127.0.0.1 (moto's server mode; skipped without moto and s3fs); the
    environment points s3fs at it with test credentials, as a user's AWS_ENDPOINT_URL and
    keys would. Yields the variables it set (a Spark test gives them to its executors)."""
    import logging

    moto_server = pytest.importorskip("moto.server")
    s3fs = pytest.importorskip("s3fs")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        s3fs.S3FileSystem.clear_instance_cache()
        yield env
    s3fs.S3FileSystem.clear_instance_cache()
    server.stop()


@pytest.fixture()
def hub(tmp_path):
    """hf:// served from a local folder laid out as the Hub lays out a dataset
    (``datasets/org/name/data/<split>-*.parquet`` beside a README and .gitattributes),
    in this process only: fsspec's local file system registered under ``hf://``. Yields
    the data folder."""
    fsspec = pytest.importorskip("fsspec")
    import pyarrow as pa
    import pyarrow.parquet as pq
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    from .stores import records

    root = tmp_path / "hub"
    data = root / "datasets" / "org" / "name" / "data"
    data.mkdir(parents=True)
    (data.parent / "README.md").write_text("---\nlicense: mit\n---\n# a dataset\n")
    (data.parent / ".gitattributes").write_text("*.parquet filter=lfs\n")
    for seed, name in ((5, "train-00000-of-00002"), (6, "train-00001-of-00002"),
                       (7, "test-00000-of-00001")):
        pq.write_table(pa.Table.from_pylist(records(seed)), data / f"{name}.parquet")

    class FakeHub(DirFileSystem):
        protocol = "hf"
        cachable = False

        def __init__(self, *args, **kwargs):
            super().__init__(path=str(root), fs=LocalFileSystem())

    fsspec.register_implementation("hf", FakeHub, clobber=True)
    yield data
    from fsspec.registry import _registry

    _registry.pop("hf", None)


def java_works() -> bool:
    """True when a Java runtime answers ``java -version`` (Spark needs one)."""
    java = shutil.which("java") or (os.environ.get("JAVA_HOME") and
                                    os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    if not java:
        return False
    try:
        return subprocess.run([java, "-version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def spark_missing() -> str | None:
    """Why the Spark tests cannot run here, or None (asked once a session)."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (extra 'spark')"
    if not java_works():
        return "Spark needs Java, and no working java was found"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test marked ``spark`` skips before its fixtures (a Spark session) are set up."""
    if item.get_closest_marker("spark") is not None and (why := spark_missing()):
        pytest.skip(why)


@pytest.fixture(scope="session")
def manifest_is_true():
    """``manifest_is_true(folder)``: every file a results folder's manifest lists has the
    size and SHA-256 it says (recomputed from the bytes), every table file the rows it
    says (counted by reading it alone), and each table's rows are its files' sum; returns
    the manifest."""
    import hashlib
    from pathlib import Path

    from neardup import sinks

    def check(folder) -> dict:
        folder = Path(folder)
        manifest = json.loads((folder / sinks.MANIFEST).read_text(encoding="utf-8"))
        entries = {e["name"]: e for e in manifest["files"]}
        for name, entry in entries.items():
            if "sha256" not in entry:
                continue
            data = (folder / name).read_bytes()
            assert len(data) == entry["bytes"], name
            assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
            if "rows" in entry:
                assert sinks.read_table(folder / name).num_rows == entry["rows"], name
                if name.endswith(".jsonl"):
                    assert data.count(b"\n") == entry["rows"], name
        for name, table in manifest["tables"].items():
            assert table["rows"] == sum(entries[f]["rows"] for f in table["files"]), name
        on_disk = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
        assert on_disk == set(entries) | {sinks.MANIFEST}  # nothing unlisted, nothing left
        return manifest

    return check


@pytest.fixture(scope="session")
def anon_peak():
    """``anon_peak(command, limit=None, stdin=None, timeout=None)``: (exit status, peak
    RssAnon in bytes, stderr) of a process, sampled every 5 ms from /proc (Linux); killed
    once its anonymous memory passes ``limit`` bytes or it runs past ``timeout`` seconds
    (status -9)."""

    def watch(command, *, limit=None, stdin=None, timeout=None):
        process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
        peak, started = 0, time.monotonic()
        while process.poll() is None:
            try:
                with open(f"/proc/{process.pid}/status") as f:
                    for line in f:
                        if line.startswith("RssAnon:"):
                            peak = max(peak, int(line.split()[1]) << 10)
            except OSError:
                pass
            if (limit is not None and peak > limit) or (
                    timeout is not None and time.monotonic() - started > timeout):
                process.kill()
                break
            time.sleep(0.005)
        err = process.stderr.read().decode()
        process.wait()
        return process.returncode, peak, err

    return watch

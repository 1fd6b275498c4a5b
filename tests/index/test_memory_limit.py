"""``index build/add --memory-limit``: chunks sized by the limit, each chunk's band keys a
sorted run merged into the segment, and the index's files byte for byte those of a build
without a limit (full and Bloom); a limit below the floor is refused naming it, before
anything is read or written; a build under a limit stays under it (a fresh process)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from neardup import api, synthetic
from neardup.cli import main
from neardup.index import Index, chunks
from neardup.index.bloom import BloomIndex
from neardup.index.store import merge_sorted_band
from neardup.pipeline.outofcore import COSTS, MemoryCosts, MemoryLimitError, parse_size

WORDS = dict(shingle_kind="word", shingle_size=1, threshold=0.6)


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    """1,200 planted documents, with repeated ids (renamed) and short ones (set aside)."""
    c = synthetic.planted_corpus(1200, doc_words=50, dup_fraction=0.2, similarity=(0.5, 1.0),
                                 vocabulary=3000, exact_copies=20, seed=5)
    ids, texts = list(c.ids), list(c.texts)
    ids[10] = ids[11] = ids[12]  # repeated ids: renamed while reading, across chunks
    texts[20] = texts[500] = ""  # too few shingles: set aside
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    import json

    with open(path, "w", encoding="utf-8") as f:
        for i, t in zip(ids, texts):
            f.write(json.dumps({"id": i, "text": t}) + "\n")
    return str(path)


def index_files(path) -> dict:
    """{relative path: SHA-256} of every file of an index but its lock (a pid) and the
    cache of hashes checked when it was opened (kept only for files old enough)."""
    out = {}
    for folder, _, names in os.walk(path):
        for name in names:
            if name not in ("lock", "verified.json"):
                full = os.path.join(folder, name)
                with open(full, "rb") as f:
                    out[os.path.relpath(full, path)] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.fixture
def small_chunks(monkeypatch):
    """The limit only sizes the chunks (many of a small corpus); counts the chunks."""
    monkeypatch.setattr(chunks, "COSTS", MemoryCosts.chunks_only())
    signed = []
    sign = chunks.sign_documents
    monkeypatch.setattr(chunks, "sign_documents", lambda *a: signed.append(1) or sign(*a))
    return signed


def test_merged_runs_are_one_stable_sort_of_their_keys():
    rng = np.random.default_rng(0)
    for sizes, values in (([5000, 1, 3000, 0, 7000], 50), ([20_000] * 3, 3),
                          ([1500, 2500], 2**63), ([1], 5)):
        runs, columns = [], []
        for size in sizes:
            column = rng.integers(0, values, size, dtype=np.uint64)
            order = np.argsort(column, kind="stable")
            runs.append((column[order], order.astype(np.int32)))
            columns.append(column)
        whole = np.concatenate(columns)
        expected = np.argsort(whole, kind="stable")
        blocks = list(merge_sorted_band(runs, merge_rows=2048))
        keys = np.concatenate([k for k, _ in blocks])
        docs = np.concatenate([d for _, d in blocks])
        assert np.array_equal(keys, whole[expected])
        assert np.array_equal(docs, expected)
        assert max(k.size for k, _ in blocks) <= 1024 * len(sizes)  # blocks, not the band


@pytest.mark.parametrize("bloom", [{}, {"bloom": True}, {"bloom": True, "capacity": 300}])
def test_a_build_under_a_limit_writes_the_same_files(corpus_path, tmp_path, small_chunks,
                                                     bloom):
    whole = api.build_index(corpus_path, tmp_path / "whole", id_field="id", **WORDS, **bloom)
    work = tmp_path / "work"
    limited = api.build_index(corpus_path, tmp_path / "limited", id_field="id",
                              memory_limit="2M", work_dir=work, **WORDS, **bloom)
    assert len(small_chunks) >= 10  # several chunks, several runs merged
    assert index_files(tmp_path / "limited") == index_files(tmp_path / "whole")
    assert limited.n == whole.n == 1198
    assert not work.exists()  # the runs went there, and the folder with them
    if "capacity" in bloom:
        assert len(limited.filters.generations) > 1


@pytest.mark.parametrize("bloom", [False, True])
def test_an_add_under_a_limit_adds_the_same(corpus_path, tmp_path, small_chunks, bloom,
                                            write_jsonl):
    more = synthetic.planted_corpus(700, doc_words=50, dup_fraction=0.2, vocabulary=3000,
                                    seed=6)
    extra = write_jsonl(tmp_path / "more.jsonl", list(more.texts), [f"m{k}" for k in
                                                                   range(700)])
    for name in ("plain", "limited"):
        api.build_index(corpus_path, tmp_path / name, id_field="id", bloom=bloom, **WORDS)
    opened = BloomIndex if bloom else Index
    plain = opened(tmp_path / "plain").add(extra, id_field="id")
    small_chunks.clear()
    limited = opened(tmp_path / "limited").add(extra, id_field="id", memory_limit="2M",
                                               work_dir=tmp_path / "work")
    assert len(small_chunks) >= 5
    assert limited == plain and plain["added"] == 700
    assert index_files(tmp_path / "limited") == index_files(tmp_path / "plain")
    assert not (tmp_path / "work").exists()


def test_below_the_floor_a_build_is_refused_naming_it(corpus_path, tmp_path):
    out, work = tmp_path / "idx", tmp_path / "work"
    with pytest.raises(MemoryLimitError) as refused:
        api.build_index(corpus_path, out, id_field="id", memory_limit="100M", work_dir=work,
                        **WORDS)
    message = str(refused.value)
    floor = COSTS.fixed + chunks.COSTS.document() * 1200 + COSTS.min_chunk
    assert "memory limit of 100 MiB is below the floor of" in message
    assert f"~{-(-floor // (1 << 20))} MiB" in message
    assert "~1,200 documents (lines counted in the input)" in message
    assert not out.exists() and not work.exists()  # refused before anything was written
    suggested = re.search(r"--memory-limit (\d+M)", message)[1]
    index = api.build_index(corpus_path, out, id_field="id", memory_limit=suggested, **WORDS)
    assert index.n == 1198


def test_a_bloom_index_counts_its_filters_in_the_floor(corpus_path, tmp_path):
    with pytest.raises(MemoryLimitError, match=r"the Bloom filters, held whole: ~[\d.]+ [MG]iB"):
        api.build_index(corpus_path, tmp_path / "idx", id_field="id", bloom=True,
                        capacity=20_000_000, memory_limit="300M", **WORDS)
    index = api.build_index(corpus_path, tmp_path / "idx", id_field="id", bloom=True,
                            memory_limit="300M", **WORDS)
    assert index.n == 1198
    with pytest.raises(MemoryLimitError, match="the Bloom filters, held whole"):
        index.add(corpus_path, id_field="id", memory_limit=parse_size("130M"))


def test_what_a_limit_refuses(tmp_path, corpus_path):
    with pytest.raises(ValueError, match="data in memory is not supported with memory_limit"):
        Index.build(["a text", "another"], tmp_path / "a", memory_limit="1G")
    with pytest.raises(ValueError, match="give memory_limit too"):
        Index.build(corpus_path, tmp_path / "b", id_field="id", work_dir=tmp_path / "w")
    index = Index.build(corpus_path, tmp_path / "c", id_field="id", **WORDS)
    with pytest.raises(ValueError, match="data in memory is not supported with memory_limit"):
        index.add(["a text"], memory_limit="1G")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    with pytest.raises(ValueError, match="--work-dir .* lies inside the input directory"):
        Index.build(str(inputs), tmp_path / "d", memory_limit="1G", work_dir=inputs / "w")


def test_the_command_line_takes_the_limit_and_refuses_below_the_floor(corpus_path, tmp_path,
                                                                     capsys):
    idx = str(tmp_path / "idx")
    assert main(["index", "build", corpus_path, "--id-field", "id", "-q", "-o", idx,
                 "--memory-limit", "64M"]) == 2
    assert "below the floor of ~" in capsys.readouterr().err
    assert not os.path.exists(idx)
    assert main(["index", "build", corpus_path, "--id-field", "id", "-q", "-o", idx,
                 "--memory-limit", "1G", "--work-dir", str(tmp_path / "w")]) == 0
    assert main(["index", "add", idx, corpus_path, "--id-field", "id", "-q",
                 "--memory-limit", "1G"]) == 0
    assert "added 1,198 documents" in capsys.readouterr().out


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc (Linux)")
@pytest.mark.slow  # 60,000 documents, full and Bloom, in processes
@pytest.mark.parametrize("bloom", [[], ["--bloom"]])
def test_a_build_stays_under_its_limit(tmp_path, write_jsonl, anon_peak, bloom):
    """The whole build, interpreter included, in a fresh process: without a limit the
    default chunk of this corpus takes more than the limit given."""
    corpus = synthetic.planted_corpus(60_000, doc_words=100, dup_fraction=0.02,
                                      vocabulary=30_000, seed=3)
    path = write_jsonl(tmp_path / "docs.jsonl", corpus.texts, corpus.ids)
    limit = "200M"
    command = [sys.executable, "-m", "neardup.cli", "index", "build", path, "--id-field",
               "id", "-q", *bloom]
    # the first run after an install compiles the kernels (about 210 MB, once): not measured
    warm = subprocess.run([*command, "-o", str(tmp_path / "warm"), "--memory-limit", "1G"],
                          capture_output=True)
    assert warm.returncode == 0, warm.stderr
    code, unlimited, _ = anon_peak([*command, "-o", str(tmp_path / "unlimited")])
    assert code == 0 and unlimited > parse_size(limit)
    code, peak, err = anon_peak([*command, "-o", str(tmp_path / "limited"), "--memory-limit",
                                 limit])
    assert code == 0, err
    assert 0 < peak <= parse_size(limit)
    print(f"peak {peak / 2**20:.0f} MiB under {limit}, {unlimited / 2**20:.0f} without")
    assert index_files(tmp_path / "limited") == index_files(tmp_path / "unlimited")

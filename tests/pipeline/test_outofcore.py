"""Under a memory limit find reads, shingles and signs in chunks: same result, same accounting."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.cli import main
from neardup.pipeline import outofcore
from neardup.sources import read_document_chunks, read_documents
from neardup.synthetic import planted_corpus

LIMIT = "2M"  # chunks of ~21,800 characters: ~60 documents of 60 words


@pytest.fixture(autouse=True)
def limits_size_chunks_only(monkeypatch):
    """Tiny limits here only force many small chunks; the floor a real limit must clear
    (interpreter, per-document costs) is tested in test_memory_limit.py."""
    monkeypatch.setattr(outofcore, "COSTS", outofcore.MemoryCosts.chunks_only())


@pytest.fixture(scope="module")
def corpus():
    corpus = planted_corpus(3000, doc_words=60, dup_fraction=0.05, similarity=(0.5, 1.0),
                            vocabulary=20_000, exact_copies=40, seed=5)
    texts = list(corpus.texts)
    texts[7] = "too short"  # set aside: fewer shingles than min_shingles
    texts[2500] = texts[11]  # an exact copy far from its original: grouped across chunks
    return texts, list(corpus.ids)


def write_input(tmp_path, fmt: str, texts, ids) -> tuple[str, dict]:
    if fmt == "jsonl":
        path = tmp_path / "docs.jsonl"
        with open(path, "w") as f:
            for doc_id, text in zip(ids, texts):
                f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
            f.write("{broken\n")  # a failed record must not shift the documents
        return str(path), {"id_field": "id"}
    if fmt == "parquet":
        path = tmp_path / "docs.parquet"
        pq.write_table(pa.table({"id": ids, "text": texts}), path, row_group_size=700)
        return str(path), {"id_field": "id"}
    path = tmp_path / "docs.txt"
    path.write_text("\n\n".join(texts) + "\n")  # blank lines: skipped records
    return str(path), {}


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "lines"])
def test_memory_limited_find_equals_in_memory(corpus, tmp_path, fmt):
    path, source = write_input(tmp_path, fmt, *corpus)
    options = dict(shingle_kind="word", shingle_size=1, threshold=0.6, method="lsh",
                   representative="longest", **source)
    whole = neardup.find(path, **options)
    chunked = neardup.find(path, memory_limit=LIMIT, work_dir=tmp_path / "work", **options)
    assert chunked.counts["chunks"]["chunks_read"] >= 5
    assert chunked.ids == whole.ids
    for name in ("pair_i", "pair_j", "jaccard", "estimate", "labels", "representative",
                 "shingle_counts", "status"):
        assert np.array_equal(getattr(chunked, name), getattr(whole, name)), name
    for name in ("i", "j", "jaccard", "estimate"):
        assert np.array_equal(chunked.candidates[name], whole.candidates[name]), name
    assert whole.counts["pairs"] > 100 and whole.counts["identical_copies"] >= 40
    assert {k: v for k, v in chunked.counts.items() if k != "chunks"} == whole.counts
    assert chunked.read_report == whole.read_report
    assert chunked.clusters_table().equals(whole.clusters_table())
    assert not (tmp_path / "work").exists()  # spilled files, and the folder made for them


def test_auto_becomes_lsh_and_exact_is_refused(corpus, tmp_path):
    path, source = write_input(tmp_path, "jsonl", *corpus)
    options = dict(shingle_kind="word", shingle_size=1, threshold=0.6, **source)
    result = neardup.find(path, memory_limit=LIMIT, **options)
    assert result.counts["method"] == "lsh"
    assert "memory limit" in result.counts["method_choice"]["reason"]
    with pytest.raises(ValueError, match="exact"):
        neardup.find(path, memory_limit=LIMIT, method="exact", **options)


def test_cli_memory_limit_equals_library(corpus, tmp_path, capsys):
    path, _ = write_input(tmp_path, "jsonl", *corpus)
    library = neardup.find(path, id_field="id", shingle_kind="word", shingle_size=1,
                           threshold=0.6, method="lsh")
    code = main(["find", path, "--id-field", "id", "--shingle", "word", "--ngram", "1",
                 "-t", "0.6", "--method", "lsh", "--memory-limit", LIMIT, "--quiet",
                 "--out", str(tmp_path / "out"), "--output-format", "parquet"])
    assert code == 0
    pairs = pq.read_table(tmp_path / "out" / "pairs.parquet")
    assert pairs.column("doc_a").to_pylist() == library.pair_i.tolist()
    assert pairs.column("doc_b").to_pylist() == library.pair_j.tolist()


@pytest.mark.parametrize("value", ["4X", "0", "-1G", "lots", "1.5.2M", ""])
def test_bad_memory_limit_is_a_usage_error_naming_the_option(tmp_path, capsys, value):
    path = tmp_path / "d.txt"
    path.write_text("some text here\n")
    with pytest.raises(SystemExit) as exit_:
        main(["find", str(path), "--memory-limit", value])
    assert exit_.value.code == 2
    assert "--memory-limit" in capsys.readouterr().err
    with pytest.raises(ValueError, match="memory_limit"):
        neardup.find(str(path), memory_limit=value)


def test_memory_limit_sizes():
    assert outofcore.parse_size("4G") == 4 << 30
    assert outofcore.parse_size("512m") == 512 << 20
    assert outofcore.parse_size("1.5GiB") == 3 << 29
    assert outofcore.parse_size(1000) == 1000
    for bad in (0, -5, True, 1.5, "4 X"):
        with pytest.raises(ValueError, match="memory_limit"):
            outofcore.parse_size(bad)
    plan = outofcore.ChunkPlan.for_limit(4 << 30, 128, 17)
    assert plan.chunk_chars * outofcore.WORK_BYTES_PER_CHAR <= (4 << 30) * outofcore.CHUNK_SHARE


def mixed_inputs(tmp_path) -> list[str]:
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text("".join([
        '{"id": "x", "text": "first"}\n', "\n", "{broken\n", '{"id": "y"}\n',
        '{"id": "x", "text": "renamed"}\n', '{"id": "z", "text": " "}\n',
        *[json.dumps({"id": f"d{k}", "text": f"document {k} " * 3}) + "\n" for k in range(50)],
    ]))
    lines = tmp_path / "b.txt"
    lines.write_bytes(b"\xef\xbb\xbfone\ncaf\xe9\n\n" + b"".join(
        b"line %d\r\n" % k for k in range(40)))
    parquet = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": [f"p{k}" for k in range(30)],
                             "text": [None if k % 7 == 0 else f"row {k}" for k in range(30)]}),
                   parquet, row_group_size=8)
    return [str(jsonl), str(lines), str(parquet)]


@pytest.mark.parametrize("chunk_chars, chunk_docs", [(1, None), (40, None), (10**6, 7)])
def test_chunked_read_equals_whole_read_and_accounts_for_every_record(
        tmp_path, chunk_chars, chunk_docs):
    paths = mixed_inputs(tmp_path)
    whole, whole_report = read_documents(paths, id_field=None)
    chunks, report, inputs = read_document_chunks(paths, chunk_chars=chunk_chars,
                                                  chunk_docs=chunk_docs)
    chunks = list(chunks)
    assert len(chunks) > 5
    assert [c.start for c in chunks] == np.cumsum([0] + [len(c) for c in chunks[:-1]]).tolist()
    assert sum((c.ids for c in chunks), []) == whole.ids
    assert sum((c.texts for c in chunks), []) == whole.texts
    assert np.concatenate([c.record for c in chunks]).tolist() == whole.record.tolist()
    assert np.concatenate([c.source for c in chunks]).tolist() == whole.source.tolist()
    report.check()
    assert report.as_dict() == whole_report.as_dict()
    assert report.records_seen == (report.processed + sum(report.skipped.values())
                                   + sum(report.failed.values()))
    assert report.failed and report.skipped  # the inputs do exercise both
    assert [src.name for src in inputs] == ["a.jsonl", "b.txt", "c.parquet"]


def test_chunked_read_checks_options_before_reading(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_document_chunks([str(tmp_path / "missing.jsonl")], chunk_chars=10)
    with pytest.raises(ValueError, match="chunk_chars"):
        read_document_chunks([str(tmp_path)], chunk_chars=0)


def test_a_run_leaves_no_work_folder_it_created(tmp_path, monkeypatch, capsys):
    """D20 (issue 22): --work-dir /nonexistent/x made both folders and left them; every
    folder a run makes for its spilled files is removed when it ends, also when it fails,
    and a folder that was there before stays."""
    path = tmp_path / "docs.txt"
    path.write_text("".join(f"line {k} of a small corpus with words {k % 7}\n"
                            for k in range(200)))
    work = tmp_path / "nonexistent" / "x"
    find = ["find", str(path), "--memory-limit", "500M", "-q", "--out", str(tmp_path / "o")]
    assert main([*find, "--work-dir", str(work)]) == 0
    assert not (tmp_path / "nonexistent").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    assert main([*find, "--work-dir", str(kept / "a" / "b")]) == 0
    assert kept.is_dir() and not any(kept.iterdir())
    folder = tmp_path / "folder"  # a directory: its documents are not counted in advance
    folder.mkdir()
    for k in range(300):
        (folder / f"{k:03d}.txt").write_text(f"document number {k} with some words in it")
    costs = outofcore.MemoryCosts(fixed=0, per_document=10_000, per_id_char=0, min_chunk=0)
    monkeypatch.setattr(outofcore, "COSTS", costs)  # too many documents: ends while reading
    capsys.readouterr()
    assert main(["find", str(folder), "--memory-limit", "2M", "--work-dir", str(work),
                 "-q"]) == 2
    assert "after reading" in capsys.readouterr().err
    assert not (tmp_path / "nonexistent").exists()


@pytest.mark.parametrize("output_format", ["csv", "jsonl", "parquet"])
def test_memory_limited_output_files_are_the_same_bytes(corpus, tmp_path, monkeypatch,
                                                        output_format):
    """Every table file is the same bytes in memory and under a limit (the summary the
    same but for the chunk plan), with ids repeated across chunks (renamed), the
    spilled ids split into several mapped pieces and the documents table written in
    small batches."""
    from neardup import result as result_module

    texts, ids = corpus
    ids = list(ids)
    ids[2000] = ids[3]  # a repeat in a later chunk: renamed "...#2" in both runs
    ids[2001] = ids[3] + "#2"  # the name a rename takes: renamed again
    ids[2002] = "é\u00a0spaced id"  # non-ASCII bytes in the mapped ids
    path, _ = write_input(tmp_path, "jsonl", texts, ids)
    monkeypatch.setattr(outofcore, "ID_PIECE_BYTES", 4096)  # a new piece every ~300 ids
    monkeypatch.setattr(result_module, "DOCUMENT_ROWS", 700)
    outputs = {}
    for name, limit in (("whole", []), ("chunked", ["--memory-limit", LIMIT])):
        out = tmp_path / name
        assert main(["find", path, "--id-field", "id", "--shingle", "word", "--ngram", "1",
                     "-t", "0.6", "--method", "lsh", "--quiet", "--top", "0",
                     "--output-format", output_format, "--out", str(out), *limit]) == 0
        outputs[name] = out
    aside = ("timings.json", "manifest.json", "summary.json")
    names = sorted(p.name for p in outputs["whole"].iterdir() if p.name not in aside)
    assert names == sorted(p.name for p in outputs["chunked"].iterdir()
                           if p.name not in aside)
    assert len(names) == 5  # pairs, identical, clusters, documents, candidates
    for name in names:
        whole, chunked = (outputs[run] / name for run in ("whole", "chunked"))
        assert whole.read_bytes() == chunked.read_bytes(), name
    files = {name: [f for f in json.loads((outputs[name] / "manifest.json").read_text())
                    ["files"] if f["name"] not in aside] for name in outputs}
    assert files["whole"] == files["chunked"]  # rows, bytes and SHA-256 of every table
    whole, summary = (json.loads((outputs[run] / "summary.json").read_text())
                      for run in ("whole", "chunked"))
    assert summary["counts"].pop("chunks")["chunks_read"] >= 5
    assert summary == whole
    problems = [p["reason"] for p in summary["read"]["problems"]]
    assert f"duplicate id {ids[3]!r} (renamed to {ids[3] + '#2'!r})" in problems
    assert f"duplicate id {ids[3] + '#2'!r} (renamed to {ids[3] + '#2#2'!r})" in problems


def test_spilled_ids_read_back_as_given(tmp_path, monkeypatch):
    """The ids appended a chunk at a time come back from their mapped files, in order,
    across pieces, as the same strings."""
    monkeypatch.setattr(outofcore, "ID_PIECE_BYTES", 50)
    writer = outofcore.SpillWriter(tmp_path, bands=2, rows=2)
    chunks = [["a", "bb", "é"], [], ["x" * 40], ["ccc", "\U0001f600", ""]]
    for chunk in chunks:
        writer.append_ids(chunk)
    ids = writer.mapped_ids()
    assert len(writer.id_pieces) >= 2
    assert ids == [doc_id for chunk in chunks for doc_id in chunk]
    assert ids[4] == "ccc" and list(ids) == ids.to_list()

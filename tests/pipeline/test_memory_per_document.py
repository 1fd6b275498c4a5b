"""What ``find`` no longer holds at once gives the same outputs: files read and shingled a
chunk at a time without keeping their texts, signatures banded a batch at a time, the
sets grown in place."""

import json
import re

import numpy as np
import pytest

import neardup
import neardup.pipeline as pipeline
import neardup.pipeline.run as run
from neardup._core.heap import release_freed_memory
from neardup.pipeline import find_texts
from neardup.shingling import ShingleSets
from neardup.synthetic import planted_corpus
from neardup.text.batches import ShingleSetsBuilder

ONE_CHUNK = 1 << 40


@pytest.fixture(scope="module")
def corpus():
    return planted_corpus(1500, dup_fraction=0.1, similarity=(0.6, 1.0), exact_copies=20,
                          seed=11)


@pytest.fixture()
def jsonl(tmp_path, corpus):
    """The corpus as JSON Lines, with what readers account for: a repeated id (renamed),
    a blank text and a line that is not JSON (skipped, reported)."""
    path = tmp_path / "docs.jsonl"
    lines = [json.dumps({"id": i, "text": t}) for i, t in zip(corpus.ids, corpus.texts)]
    lines[7] = json.dumps({"id": corpus.ids[3], "text": corpus.texts[3]})
    lines[8] = json.dumps({"id": "blank", "text": "  "})
    lines[9] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    return path


def _untimed(report):
    """A report without its table of seconds per stage (the only figures that vary)."""
    html = report.read_text()
    assert 'class="timings"' in html and "pair" in html
    return re.sub(r'<table class="timings">.*?</table>', "", html, flags=re.S)


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if p.name not in ("manifest.json", "timings.json")}  # the out path; seconds


@pytest.mark.parametrize("bits", [None, 8])
def test_banded_signing_gives_what_the_whole_signature_matrix_gives(corpus, monkeypatch,
                                                                    bits):
    whole = find_texts(corpus.texts, corpus.ids, threshold=0.7, method="lsh", bits=bits,
                       keep_arrays=True)  # every signature held: the estimate from them
    monkeypatch.setattr(pipeline, "SIGN_BATCH", 37)  # many batches, a short last one
    banded = find_texts(corpus.texts, corpus.ids, threshold=0.7, method="lsh", bits=bits)
    assert banded.signatures is None and whole.counts["candidates"] > 100
    for name in ("i", "j", "jaccard", "estimate"):
        np.testing.assert_array_equal(banded.candidates[name], whole.candidates[name])
    np.testing.assert_array_equal(banded.labels, whole.labels)
    np.testing.assert_array_equal(banded.representative, whole.representative)
    assert banded.counts == whole.counts


@pytest.mark.parametrize("chunk_chars", [1, 5_000, 60_000])
def test_files_read_a_chunk_at_a_time_give_the_whole_read_outputs(jsonl, tmp_path,
                                                                  monkeypatch, chunk_chars):
    monkeypatch.setattr(run, "READ_CHUNK_CHARS", ONE_CHUNK)
    whole = neardup.find(jsonl, out=tmp_path / "whole", threshold=0.7, method="lsh")
    monkeypatch.setattr(run, "READ_CHUNK_CHARS", chunk_chars)
    chunked = neardup.find(jsonl, out=tmp_path / "chunked", threshold=0.7, method="lsh")
    assert _files(tmp_path / "chunked") == _files(tmp_path / "whole")
    assert chunked.counts == whole.counts and chunked.read_report == whole.read_report
    report = chunked.read_report
    assert report["records_seen"] == 1500 and report["processed"] == 1498  # blank, not JSON
    assert "docs.jsonl" in json.dumps(report)


def test_dedup_without_the_texts_writes_the_same_copy(jsonl, tmp_path, monkeypatch):
    monkeypatch.setattr(run, "READ_CHUNK_CHARS", ONE_CHUNK)
    whole = neardup.dedup(jsonl, tmp_path / "whole.jsonl", threshold=0.7)
    monkeypatch.setattr(run, "READ_CHUNK_CHARS", 5_000)
    chunked = neardup.dedup(jsonl, tmp_path / "chunked.jsonl", threshold=0.7)
    assert (tmp_path / "chunked.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert ({k: chunked.counts["dedup"][k] for k in ("written", "removed")}
            == {k: whole.counts["dedup"][k] for k in ("written", "removed")})
    assert whole.counts["dedup"]["removed"] == whole.counts["removable"] > 10
    # every line read is written or removed: the blank and the broken line are copied
    assert whole.counts["dedup"]["written"] + whole.counts["dedup"]["removed"] == 1500


def test_the_texts_are_let_go_unless_the_report_needs_them(jsonl, tmp_path, monkeypatch):
    groups = neardup.options.split_options({"threshold": 0.7})
    monkeypatch.setattr(run, "READ_CHUNK_CHARS", 5_000)
    _, documents = run.find_documents([jsonl], groups, quiet=True, representative_field=None)
    assert documents.texts is None and len(documents) == 1498
    _, kept = run.find_documents([jsonl], groups, quiet=True, representative_field=None,
                                 keep_texts=True)
    lines = jsonl.read_text().splitlines()
    assert kept.texts == [json.loads(lines[r])["text"] for r in kept.record]
    np.testing.assert_array_equal(documents.record, kept.record)
    assert documents.ids == kept.ids
    # the report (which shows the texts) is the same as from one read of the file
    neardup.find(jsonl, report=tmp_path / "chunked.html", threshold=0.7)
    monkeypatch.setattr(run, "READ_CHUNK_CHARS", ONE_CHUNK)
    neardup.find(jsonl, report=tmp_path / "whole.html", threshold=0.7)
    assert _untimed(tmp_path / "chunked.html") == _untimed(tmp_path / "whole.html")


def test_line_file_previews_need_only_the_heads_of_their_texts(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    lines = []
    for _ in range(40):  # each line past what a preview reads of it, twice; one other
        words = " ".join(f"w{w}" for w in rng.integers(0, 10**6, 100))
        lines += [words, words, " ".join(f"u{w}" for w in rng.integers(0, 10**6, 20))]
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(run, "READ_CHUNK_CHARS", ONE_CHUNK)
    whole = neardup.find(path, threshold=0.8)
    monkeypatch.setattr(run, "READ_CHUNK_CHARS", 3_000)
    chunked = neardup.find(path, threshold=0.8)
    assert chunked.previews == whole.previews
    assert len(whole.previews) == 80  # two of each cluster of two
    assert all(len(p) <= run.PREVIEW_CHARS and p.endswith("…")
               for p in whole.previews.values())


def test_sets_built_in_place_are_the_concatenation_of_the_parts():
    rng = np.random.default_rng(3)
    parts = []
    for size, dtype in [(5, np.uint32), (0, np.uint32), (40, np.uint32), (7, np.uint64)]:
        sets = [np.unique(rng.integers(0, 1 << 31, rng.integers(0, 30))) for _ in range(size)]
        parts.append(ShingleSets.from_sets(sets, dtype=dtype))
    for upto in range(len(parts) + 1):
        builder = ShingleSetsBuilder()
        for part in parts[:upto]:
            builder.append(part)
        built, joined = builder.build(), ShingleSets.concat(parts[:upto])
        np.testing.assert_array_equal(built.offsets, joined.offsets)
        np.testing.assert_array_equal(built.values, joined.values)
        assert built.values.dtype == joined.values.dtype


def test_freed_heap_is_handed_back_where_glibc_runs():
    import platform

    assert release_freed_memory() == (platform.libc_ver()[0] == "glibc")


def test_an_input_without_documents_counts_what_shingling_nothing_counts(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_text(json.dumps({"id": "a", "text": " "}) + "\n")
    groups = neardup.options.split_options({"threshold": 0.7, "shingle_kind": "word"})
    result, documents = run.find_documents([path], groups, quiet=True,
                                           representative_field=None)
    nothing = run.prepare.shingle_documents([], [], groups.config().shingle_options(),
                                            groups.prepare)
    assert len(documents) == 0 and result.counts["documents"] == 0
    assert nothing.counts == {"char_fallback": 0}
    assert {k: result.counts[k] for k in nothing.counts} == nothing.counts
    assert result.read_report["records_seen"] == 1
    assert result.read_report["skipped"] == {"empty text": 1}

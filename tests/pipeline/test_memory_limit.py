"""--memory-limit is kept or refused: below the floor the refusal names it, a document too
large for the limit is named, and results under a limit are those without one."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import neardup
from neardup.cli import main
from neardup.pipeline import outofcore
from neardup.pipeline.outofcore import (
    COSTS,
    TEXT_SHARE,
    ChunkPlan,
    InputSurvey,
    MemoryCosts,
    MemoryLimitError,
    parse_size,
    survey_inputs,
)
from neardup.sources import Documents
from neardup.sources.lines import SCAN_BLOCK_BYTES
from neardup.synthetic import planted_corpus

SHINGLES = dict(shingle_kind="word", shingle_size=1, threshold=0.6, method="lsh")


@pytest.fixture(scope="module")
def corpus():
    corpus = planted_corpus(2000, doc_words=40, dup_fraction=0.05, similarity=(0.5, 1.0),
                            vocabulary=20_000, exact_copies=20, seed=11)
    return list(corpus.texts), list(corpus.ids)


def suggested(message: str) -> int:
    """The --memory-limit a refusal suggests, in bytes."""
    return parse_size(re.search(r"--memory-limit (\d+(?:\.\d+)?[MG])", message)[1])


def test_below_the_floor_the_library_refuses_naming_it(corpus, tmp_path, write_jsonl):
    path = write_jsonl(tmp_path / "docs.jsonl", *corpus)
    work = tmp_path / "work"
    with pytest.raises(MemoryLimitError) as refused:
        neardup.find(path, id_field="id", memory_limit="64M", work_dir=work, **SHINGLES)
    message = str(refused.value)
    assert isinstance(refused.value, ValueError)
    assert "memory limit of 64 MiB is below the floor of ~" in message
    assert f"~{COSTS.fixed >> 20} MiB" in message  # the interpreter and its kernels
    assert "~2,000 documents (lines counted in the input)" in message
    assert f"~{COSTS.document():,} bytes for the whole run" in message
    floor = COSTS.fixed + COSTS.document() * 2000 + COSTS.min_chunk
    assert f"~{-(-floor // (1 << 20))} MiB" in message
    assert not work.exists()  # refused before anything was read or spilled
    result = neardup.find(path, id_field="id", memory_limit=suggested(message), **SHINGLES)
    assert result.counts["chunks"]["floor"] <= suggested(message)  # the suggestion is kept


def test_below_the_floor_the_cli_exits_2_naming_it(corpus, tmp_path, capsys, write_jsonl):
    path = write_jsonl(tmp_path / "docs.jsonl", *corpus)
    code = main(["find", path, "--id-field", "id", "--memory-limit", "64M", "-q",
                 "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "below the floor of ~" in err and "--memory-limit" in err
    assert not (tmp_path / "out").exists()


def test_the_floor_grows_with_the_documents():
    limit = 256 << 20
    ChunkPlan.for_limit(limit, 128, 17, documents=100_000)
    with pytest.raises(MemoryLimitError, match=r"~1,500,000 documents"):
        ChunkPlan.for_limit(limit, 128, 17, documents=1_500_000)
    with pytest.raises(MemoryLimitError, match="interpreter"):
        ChunkPlan.for_limit(COSTS.fixed, 128, 17)  # nothing left for a chunk


@pytest.mark.parametrize("documents", [None, 0, 1, 50_000, 400_000])
@pytest.mark.parametrize("limit", ["150M", "1G", "16G"])
@pytest.mark.parametrize("longest", [0, 1000, 3_000_000, None])  # None: Parquet, not scanned
def test_a_plan_fits_its_limit(limit, documents, longest):
    limit = parse_size(limit)
    survey = InputSurvey(records=documents, counted=documents or 0, longest=longest or 0,
                         bounded=longest is not None and documents is not None)
    try:
        plan = ChunkPlan.for_limit(limit, 128, 17, survey=survey)
    except MemoryLimitError as refused:
        assert suggested(str(refused)) > limit
        return
    held = COSTS.fixed + COSTS.document() * (documents or 0)
    assert held + plan.budget <= limit
    text = plan.budget * TEXT_SHARE
    # a chunk closes after chunk_chars, one block of lines or one document later; that
    # document is at most the longest line, else at most chunk_chars or admit refuses it
    slack = outofcore.READ_BLOCK_CHARS
    fits = (longest or 0) + slack + outofcore.MIN_CHUNK_CHARS <= text / plan.per_char
    closing = longest if survey.bounded and fits else plan.chunk_chars
    assert (plan.chunk_chars + slack + closing) * plan.per_char <= text
    too_long = int(text / plan.per_char) + 1
    with pytest.raises(MemoryLimitError, match=f"has {too_long:,} characters"):
        plan.admit(Documents(["d"], ["x" * too_long], np.zeros(1, np.int32),
                             np.zeros(1, np.int64)))
    per_document = COSTS.per_chunk_document + 128 * 4 + 17 * 8
    assert plan.chunk_docs * per_document <= plan.budget - text
    assert plan.floor <= limit


def test_counting_the_inputs(tmp_path):
    lines = tmp_path / "a.txt"
    lines.write_bytes(b"one\n\ntwo two\r\n" + b"x" * 100 + b"\nlast")
    survey = survey_inputs([str(lines)])
    assert (survey.records, survey.longest) == (4, 100)
    assert survey.where == f"line 4 of {lines}"
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = tmp_path / "b.parquet"
    pq.write_table(pa.table({"text": ["a", "b", None]}), table)
    assert survey_inputs([str(lines), str(table)]).records == 7
    assert survey_inputs([str(tmp_path)]).records is None  # a directory: not counted
    assert survey_inputs(["-"]).records is None
    with pytest.raises(FileNotFoundError):
        survey_inputs([str(tmp_path / "missing.txt")])
    # a line longer than the scan's block, and a file without a final newline
    long = tmp_path / "c.jsonl"
    long.write_bytes(b"a\n" + b"y" * (SCAN_BLOCK_BYTES + 5) + b"\nb")
    assert survey_inputs([str(long)]) == InputSurvey(3, 3, SCAN_BLOCK_BYTES + 5,
                                                     f"line 2 of {long}", "lines counted",
                                                     bounded=True)
    assert not survey_inputs([str(long), str(table)]).bounded


def big_document_input(tmp_path, chars: int):
    words = np.random.default_rng(0).integers(0, 50_000, size=chars // 6)
    text = " ".join(f"w{w}" for w in words)[:chars]
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"id": "small", "text": "a few words of a small document"})
                    + "\n" + json.dumps({"id": "big", "text": text}) + "\n")
    return str(path)


def test_a_document_larger_than_a_chunk_can_take_is_skipped_unread_and_named(tmp_path):
    path = big_document_input(tmp_path, 3_000_000)  # read within 150M, not shingled
    with pytest.warns(UserWarning, match=r"the longest record \(line 2 of") as told:
        result = neardup.find(path, id_field="id", memory_limit="150M",
                              work_dir=tmp_path / "w")
    bound = result.counts["chunks"]["max_record_bytes"]
    assert bound < 3_000_000
    assert result.ids == ["small"]
    read = result.read_report
    assert read["skipped"] == {f"record larger than {bound:,} bytes": 1}
    assert read["problems"][0]["location"] == "line 2"
    # the limit the warning names takes it
    advised = re.search(r"--memory-limit (\S+) or more", str(told[0].message)).group(1)
    result = neardup.find(path, id_field="id", memory_limit=advised)
    assert result.counts["documents"] == 2
    assert result.counts["chunks"]["max_record_bytes"] >= 3_000_000


def test_a_line_too_long_to_read_is_refused_before_reading(tmp_path):
    path = big_document_input(tmp_path, 8_000_000)  # reading it alone: ~32 MB
    with pytest.raises(MemoryLimitError) as refused:
        neardup.find(path, id_field="id", memory_limit="150M", work_dir=tmp_path / "w")
    message = str(refused.value)
    assert "the longest record (line 2 of" in message and "reading it takes" in message
    assert "split it" in message
    assert not (tmp_path / "w").exists()
    plan = ChunkPlan.for_limit(suggested(message), 128, 17,
                               survey=survey_inputs([path]))  # the suggestion holds it
    assert plan.chunk_chars >= 1


def test_too_many_documents_for_the_limit_end_the_run_while_reading(tmp_path, monkeypatch):
    folder = tmp_path / "docs"  # a directory: its documents are not counted in advance
    folder.mkdir()
    for k in range(300):
        (folder / f"{k:03d}.txt").write_text(f"document number {k} with some words in it")
    costs = MemoryCosts(fixed=0, per_document=10_000, per_id_char=0, min_chunk=0)
    monkeypatch.setattr(outofcore, "COSTS", costs)
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(MemoryLimitError, match=r"^after reading [\d,]+ documents: the memory "
                                               r"limit of 2 MiB is below the floor"):
        neardup.find(str(folder), memory_limit="2M", work_dir=work, **SHINGLES)
    assert not any(work.iterdir())  # the spilled files are removed
    neardup.find(str(folder), memory_limit="8M", work_dir=work, **SHINGLES)


def test_an_input_read_from_a_stream_counts_whole(corpus, monkeypatch):
    texts, ids = corpus
    data = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    costs = MemoryCosts(fixed=0, per_document=0, per_id_char=0, min_chunk=0)
    monkeypatch.setattr(outofcore, "COSTS", costs)
    with pytest.raises(MemoryLimitError, match="kept whole"):
        neardup.find("-", fmt="jsonl", id_field="id", memory_limit=len(data), **SHINGLES)


def test_results_under_a_limit_equal_results_without(corpus, tmp_path, monkeypatch, write_jsonl):
    path = write_jsonl(tmp_path / "docs.jsonl", *corpus)
    whole = neardup.find(path, id_field="id", **SHINGLES)
    kept = neardup.find(path, id_field="id", memory_limit="512M", **SHINGLES)
    # many small chunks: the limit only sizes them here
    monkeypatch.setattr(outofcore, "COSTS", MemoryCosts.chunks_only())
    small = neardup.find(path, id_field="id", memory_limit="1M", **SHINGLES)
    assert kept.counts["chunks"]["chunks_read"] == 1
    assert small.counts["chunks"]["chunks_read"] >= 5
    assert whole.counts["pairs"] > 50
    for chunked in (kept, small):
        assert chunked.ids == whole.ids
        for name in ("pair_i", "pair_j", "jaccard", "labels", "representative", "status"):
            assert np.array_equal(getattr(chunked, name), getattr(whole, name)), name
        assert {k: v for k, v in chunked.counts.items() if k != "chunks"} == whole.counts


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc (Linux)")
@pytest.mark.slow  # 20,000 documents, twice, in processes: about 4 s
def test_a_run_stays_under_its_limit(tmp_path, write_jsonl, anon_peak):
    """The whole run, interpreter included, in a fresh process (generous: the model's
    figures are upper bounds; a small run takes about 110 MB of a 200M limit)."""
    corpus = planted_corpus(20_000, doc_words=60, dup_fraction=0.02, vocabulary=30_000,
                            seed=3)
    path = write_jsonl(tmp_path / "docs.jsonl", corpus.texts, corpus.ids)
    limit = "200M"
    # the first run after an install compiles the kernels (about 210 MB, once): not measured
    warm = [sys.executable, "-m", "neardup.cli", "find", path, "--id-field", "id", "-q",
            "--memory-limit", "1G", "--out", str(tmp_path / "warm")]
    assert subprocess.run(warm, capture_output=True).returncode == 0
    code, peak, _ = anon_peak([sys.executable, "-m", "neardup.cli", "find", path, "--id-field",
                               "id", "--memory-limit", limit, "-q", "--out",
                               str(tmp_path / "out")])
    assert code == 0
    assert 0 < peak <= parse_size(limit)


@pytest.mark.parametrize("longest", [10_000_000, 40_000_000, 200_000_000])
def test_a_record_a_chunk_cannot_take_is_named_before_reading_with_the_limit_that_takes_it(
        longest):
    """A counted record longer than a chunk can take is skipped: the plan says so up front
    and names a limit, and at that limit the record is taken (no warning)."""
    survey = InputSurvey(records=10, counted=10, longest=longest, where="line 3 of big.txt",
                         bounded=True)
    fits = ChunkPlan.for_limit(16 << 30, 128, 17, survey=survey)
    assert fits.record_bytes >= longest and fits.skip_warning() is None
    low = max(parse_size("256M"), fits.floor)  # the record can be read, not shingled
    plan = ChunkPlan.for_limit(low, 128, 17, survey=survey)
    assert plan.record_bytes < longest
    message = plan.skip_warning()
    assert message is not None and "line 3 of big.txt" in message
    advised = re.search(r"--memory-limit (\S+) or more", message).group(1)
    taken = ChunkPlan.for_limit(parse_size(advised), 128, 17, survey=survey)
    assert taken.record_bytes >= longest and taken.skip_warning() is None


def test_no_warning_when_every_record_fits_or_the_inputs_are_not_counted():
    unknown = InputSurvey(records=None, counted=0, longest=0, bounded=False)
    assert ChunkPlan.for_limit(parse_size("256M"), 128, 17, survey=unknown).skip_warning() is None
    small = InputSurvey(records=10, counted=10, longest=1_000, where="line 1 of a.txt",
                        bounded=True)
    assert ChunkPlan.for_limit(parse_size("256M"), 128, 17, survey=small).skip_warning() is None


def test_a_csv_cell_over_many_lines_past_the_bound_is_one_skipped_row(corpus, tmp_path):
    """A quoted cell of 100,000 short lines (3 MB) among the rows, under a limit whose
    bound it passes: one record skipped, at its row, and every other row read as a row
    (the cell's lines are not rows); the pairs are those of the input without it."""
    import csv

    texts, ids = corpus
    long_cell = "Nav bar, \"quoted\"\n" + "lorem ipsum, dolor \"sit\" amet\r\n" * 100_000
    at = 500
    rows = [[i, t] for i, t in zip(ids, texts)]
    for path, body in ((tmp_path / "with.csv", rows[:at] + [["big", long_cell]] + rows[at:]),
                       (tmp_path / "without.csv", rows)):
        with open(path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([["id", "text"], *body])
    without = neardup.find(tmp_path / "without.csv", id_field="id", **SHINGLES)
    result = neardup.find(tmp_path / "with.csv", id_field="id", memory_limit="150M",
                          work_dir=tmp_path / "w", **SHINGLES)
    bound = result.counts["chunks"]["max_record_bytes"]
    assert bound < len(long_cell)
    read = result.read_report
    assert (read["records_seen"], read["processed"], read["skipped"], read["failed"]) == \
        (len(rows) + 1, len(rows), {f"record larger than {bound:,} bytes": 1}, {})
    assert [p["location"] for p in read["problems"]] == [f"row {at + 1} (line {at + 2})"]
    assert result.ids == without.ids and without.counts["pairs"] > 50
    for name in ("pair_i", "pair_j", "jaccard", "labels", "representative"):
        assert np.array_equal(getattr(result, name), getattr(without, name)), name


def test_a_json_file_is_read_under_a_limit(corpus, tmp_path):
    """A JSON file is read whole and kept (its elements are not its lines): the plan
    leaves room for it instead of counting it as lines and leaving it none."""
    texts, ids = corpus
    path = tmp_path / "docs.json"
    path.write_text(json.dumps([{"id": i, "text": t} for i, t in zip(ids, texts)]))
    whole = neardup.find(str(path), id_field="id", **SHINGLES)
    limited = neardup.find(str(path), id_field="id", memory_limit="1G", **SHINGLES)
    assert limited.counts["chunks"]["records_counted"] is None
    assert whole.counts["pairs"] > 50
    for name in ("pair_i", "pair_j", "jaccard", "labels", "representative"):
        assert np.array_equal(getattr(limited, name), getattr(whole, name)), name

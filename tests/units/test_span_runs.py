"""The span unit under a memory limit (neardup.units.span_runs): tokens, ids and windows on
disk, a chunk of documents or a hash partition at a time, give the in-memory run's copy
byte for byte, its counts and its repeated spans, whatever the chunk size (down to one
document a chunk, which also splits the windows' sort into many hash partitions) and with
a hash that collides everywhere; the brute force of every window against every other
agrees."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup
from neardup.cli import main
from neardup.options import split_options
from neardup.units import UnitOptions, spans
from neardup.units.run import analysed, dedup_units, repeats_of
from neardup.units.sorted_runs import SPAN_BYTES_PER_CHAR, chunk_chars_for
from neardup.units.span_runs import BYTES_PER_WINDOW, passes_for
from neardup.units.spans import Ragged

from .test_sorted_runs import collide, write
from .test_spans import brute_force

BLOCK = " ".join(f"Word{k}" for k in range(9))
CORPUS = [
    f"intro {BLOCK} outro", "short text", f"{BLOCK} again\n{BLOCK.upper()}", "a a a a a a a",
    "", "   \n\t", f"ÉTÉ été  Été {BLOCK.lower()} — ! ?", "x y z x y z x y z x y z",
    f"tail {BLOCK}", "one two three\nfour five six\r\none two three four five six",
    "— ! ? — ! ?", f"Zürich {BLOCK} 日本語 {BLOCK}"]


def copies(tmp_path, texts, min_tokens, keep="first", clean=None, **bounded):
    """(in-memory copy, its counts, bounded copy, its counts) of the texts as JSON Lines,
    with the span unit."""
    src = tmp_path / "in.jsonl"
    write(src, texts)
    # allow_empty: a drawn corpus may hold no document but the malformed line
    groups = split_options({"id_field": "id", "allow_empty": True,
                            **({"clean": clean} if clean else {})})
    units = UnitOptions("span", min_tokens=min_tokens, keep=keep)
    results = []
    for name, extra in (("memory", {}), ("bounded", bounded)):
        out = tmp_path / f"{name}.jsonl"
        result = dedup_units([str(src)], str(out), groups, units, **extra)
        for output in result.counts["dedup"]["outputs"]:
            output.pop("output")  # the copies' paths differ, by design
        results += [out.read_bytes(), result.counts]
    return results


def reference(texts, min_tokens, keep, normalize):
    """The brute force of tests/units/test_spans.py over the texts' tokens (runs of bytes
    that are not ASCII whitespace, each normalized alone, none where that leaves
    nothing), numbered by their normalized text."""
    vocabulary, docs, starts, ends = {}, [], [], []
    for text in texts:
        found = [(m.start(), m.end(), normalize(m.group().decode("utf-8")))
                 for m in re.finditer(rb"[^ \t\n\r\x0b\x0c]+", text.encode("utf-8"))]
        found = [(s, e, n) for s, e, n in found if n]
        docs.append([vocabulary.setdefault(n, len(vocabulary)) for _, _, n in found])
        starts += [s for s, _, _ in found]
        ends += [e for _, e, _ in found]
    offsets = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    return brute_force(docs, Ragged(offsets, np.array(starts, np.int64)),
                       Ragged(offsets, np.array(ends, np.int64)), min_tokens, keep)


def bounded_analysis(tmp_path, texts, min_tokens, keep, clean=None, **bounded):
    """(counts, removal ranges per document, repeated spans' rows, the texts read (blank
    records are skipped), the normalization) of the bounded run."""
    src = tmp_path / "ref.jsonl"
    write(src, texts)
    # allow_empty: a drawn corpus may hold no document but the malformed line
    groups = split_options({"id_field": "id", "allow_empty": True,
                            **({"clean": clean} if clean else {})})
    units = UnitOptions("span", min_tokens=min_tokens, keep=keep)
    with analysed([str(src)], groups, units, **bounded) as (documents, _, analysis, spilled):
        assert spilled is not None  # it ran bounded
        r, s = analysis.removals, analysis.repeats
        ranges = [list(zip(r.starts[r.offsets[d]:r.offsets[d + 1]].tolist(),
                           r.ends[r.offsets[d]:r.offsets[d + 1]].tolist(), strict=True))
                  for d in range(r.offsets.size - 1)]
        rows = list(zip(s.doc.tolist(), s.start.tolist(), s.end.tolist(), s.count.tolist(),
                        s.documents.tolist(), strict=True))
        texts = [documents.texts[d] for d in range(len(documents.texts))]
        return dict(analysis.counts), ranges, rows, texts, groups.prepare.normalize


@pytest.mark.parametrize("min_tokens", [1, 2, 3, 9])
@pytest.mark.parametrize("keep", ["first", "none"])
@pytest.mark.parametrize("chunk_chars", [1, 40, 300, 10**6])
def test_any_chunks_give_the_in_memory_copy_byte_for_byte(tmp_path, min_tokens, keep,
                                                          chunk_chars):
    memory, counts, bounded, bounded_counts = copies(tmp_path, CORPUS, min_tokens, keep,
                                                     chunk_chars=chunk_chars)
    assert bounded == memory
    assert bounded_counts == counts
    assert list(bounded_counts) == list(counts)  # the same keys in the same order
    assert counts["records_seen"] == len(CORPUS) + 1  # the line that is not JSON


@pytest.mark.parametrize("min_tokens", [1, 3, 9])
@pytest.mark.parametrize("keep", ["first", "none"])
@pytest.mark.parametrize("clean", [None, "text"])
def test_the_bounded_run_is_the_brute_force(tmp_path, min_tokens, keep, clean):
    got, ranges, rows, texts, normalize = bounded_analysis(tmp_path, CORPUS, min_tokens, keep,
                                                           clean, chunk_chars=30)
    assert len(texts) == len(CORPUS) - 2  # the blank records are skipped
    want = reference(texts, min_tokens, keep, normalize)
    assert ranges == want["ranges"]
    assert rows == [(d, s, e, c, n) for d, s, e, _, c, n in want["rows"]]
    assert got["tokens_removed"] == want["tokens_removed"]
    assert got["bytes_removed"] == want["bytes_removed"]
    assert got["units"] == want["windows"]
    assert got["units_removed"] == want["windows_removed"]
    assert got["spans_repeated"] == len(want["rows"])
    if min_tokens == 9 and keep == "first" and clean is None:
        assert got["bytes_removed"] >= 5 * len(BLOCK)  # the block's copies, one kept


@pytest.mark.parametrize("keep", ["first", "none"])
def test_a_hash_that_collides_everywhere_changes_nothing(tmp_path, keep):
    memory, counts, bounded, bounded_counts = copies(tmp_path, CORPUS, 2, keep,
                                                     chunk_chars=50, hash_pieces=collide)
    assert bounded == memory and bounded_counts == counts


@pytest.mark.parametrize("clean", ["text", "none"])
def test_cleaning_matches(tmp_path, clean):
    memory, counts, bounded, bounded_counts = copies(tmp_path, CORPUS, 2, "first", clean,
                                                     chunk_chars=80)
    assert bounded == memory and bounded_counts == counts


def test_repeats_table_is_the_in_memory_one(tmp_path):
    src = tmp_path / "in.jsonl"
    write(src, CORPUS * 3)
    groups, units = split_options({"id_field": "id"}), UnitOptions("span", min_tokens=4)
    tables = []
    for extra in ({}, {"chunk_chars": 70}):
        with analysed([str(src)], groups, units, **extra) as (documents, _, analysis, _):
            tables.append(repeats_of(analysis, documents.ids))
    assert tables[0].num_rows > 0 and tables[1].equals(tables[0])


_text = st.text(alphabet=st.sampled_from(list("aAbé— \n")), max_size=40)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(_text, min_size=1, max_size=12), min_tokens=st.integers(1, 4),
       keep=st.sampled_from(["first", "none"]), chunk_chars=st.integers(1, 80),
       clean=st.sampled_from([None, "text"]))
def test_any_corpus_any_chunks(tmp_path, texts, min_tokens, keep, chunk_chars, clean):
    memory, counts, bounded, bounded_counts = copies(tmp_path, texts, min_tokens, keep, clean,
                                                     chunk_chars=chunk_chars,
                                                     hash_pieces=collide)
    assert bounded == memory
    assert bounded_counts == counts


def test_the_library_and_the_cli_take_the_limit(tmp_path, capsys):
    src, memory = tmp_path / "in.jsonl", tmp_path / "m.jsonl"
    write(src, CORPUS)
    neardup.dedup(src, memory, unit="span", min_tokens=3, id="id")
    out = tmp_path / "a.jsonl"
    neardup.dedup(src, out, unit="span", min_tokens=3, id="id", memory_limit="512M",
                  work_dir=tmp_path / "work")
    assert out.read_bytes() == memory.read_bytes()
    assert not (tmp_path / "work").exists()  # made for the run, removed after it
    cli_out = tmp_path / "b.jsonl"
    assert main(["dedup", str(src), "--unit", "span", "--min-tokens", "3", "--id-field", "id",
                 "-o", str(cli_out), "--memory-limit", "512M", "-q"]) == 0
    assert cli_out.read_bytes() == memory.read_bytes()
    capsys.readouterr()
    assert main(["repeats", str(src), "--unit", "span", "--min-tokens", "3", "--id-field",
                 "id", "--output-format", "jsonl", "--memory-limit", "512M"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    want = neardup.repeats(src, unit="span", min_tokens=3, id="id")
    assert want.num_rows > 0 and rows == want.to_pylist()


def test_the_windows_sort_in_as_many_passes_as_the_budget_needs():
    assert passes_for(0, 1) == 1
    assert passes_for(1000, 1000 * BYTES_PER_WINDOW) == 1
    assert passes_for(1001, 1000 * BYTES_PER_WINDOW) == 2
    assert passes_for(10**8, 1 << 30) * (1 << 30) >= 10**8 * BYTES_PER_WINDOW


def test_a_span_chunk_is_charged_for_its_tokens():
    # a token and its space are two bytes at least, at about 128 bytes a token
    assert chunk_chars_for(4 << 30, "span") * SPAN_BYTES_PER_CHAR * 2 <= 4 << 30
    assert chunk_chars_for(4 << 30, "span") < chunk_chars_for(4 << 30, "line")
    with pytest.raises(ValueError, match="below what --unit needs: at least 384M"):
        chunk_chars_for(300 << 20, "span")


@pytest.mark.parametrize("keep", ["first", "none"])
def test_windows_that_share_a_hash_are_split_by_their_ids(tmp_path, monkeypatch, keep):
    # every window's key keeps one hash bit: only comparing the ids on disk splits classes
    keys, passes = spans._partition_keys, []

    def two_hashes(offsets, ids, length, power, shift, n_passes, part):
        passes.append(int(n_passes))
        found = keys(offsets, ids, length, power, shift, n_passes, part)
        position = (np.uint64(1) << shift) - np.uint64(1)
        return (found & position) | (found >> np.uint64(63) << np.uint64(63))

    monkeypatch.setattr(spans, "_partition_keys", two_hashes)
    got, ranges, rows, texts, normalize = bounded_analysis(tmp_path, CORPUS, 3, keep,
                                                           chunk_chars=5)
    assert len(passes) == passes[0] > 1  # every partition's keys, several partitions
    want = reference(texts, 3, keep, normalize)
    assert ranges == want["ranges"]
    assert rows == [(d, s, e, c, n) for d, s, e, _, c, n in want["rows"]]
    assert got["units_removed"] == want["windows_removed"]

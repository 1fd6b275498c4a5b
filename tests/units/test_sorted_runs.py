"""Units under a memory limit (neardup.units.sorted_runs): chunks written as sorted runs on
disk, merged and verified there, give the in-memory run's copy byte for byte, its counts
and its repeated units, whatever the chunk size (down to one document a run) and even
with a hash that collides everywhere; the brute-force reference agrees."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup
from neardup.cli import main
from neardup.options import split_options
from neardup.shingling import normalize_light
from neardup.units import UnitOptions
from neardup.units.hashing import piece_hashes
from neardup.units.run import analysed, dedup_units, repeats_of
from neardup.units.sorted_runs import chunk_chars_for, merge_runs

from .reference import reference
from .test_units import PLANTED

UNITS = ["line", "paragraph", "sentences:1", "sentences:2", "sentences:3"]
CORPUS = PLANTED[:1] + [t for t in PLANTED[1:] if t] + [
    "Accept cookies\nStory one, é.\nImpressum © 2024",
    "ACCEPT   cookies\r\nStory two. Story two.\r\nImpressum © 2024\r\n",
    "Accept cookies", "Hi. Hi. Hi. Hi. Hi.", "First story. It rains in Zürich. The end!"]


def collide(values, offsets):
    """Four hash values for every text: nearly every unit collides with others."""
    return piece_hashes(values, offsets) & np.uint64(3)


def write(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for k, text in enumerate(texts):
            f.write(json.dumps({"id": f"d{k}", "text": text}, ensure_ascii=False) + "\n")
            if k == 2:
                f.write("not json\n")  # a failed record: accounted for, copied back


def copies(tmp_path, texts, unit, keep="first", min_chars=1, clean=None, minimum=(None, None),
           **bounded):
    """(in-memory copy, its counts, bounded copy, its counts) of the texts as JSON Lines;
    ``minimum``: (min_unit_chars, min_unit_words), None the default."""
    src = tmp_path / "in.jsonl"
    write(src, texts)
    options = {"id_field": "id", **({"clean": clean} if clean else {})}
    units = UnitOptions(unit, keep=keep, min_chars=min_chars, min_unit_chars=minimum[0],
                        min_unit_words=minimum[1])
    results = []
    for name, extra in (("memory", {}), ("bounded", bounded)):
        out = tmp_path / f"{name}.jsonl"
        result = dedup_units([str(src)], str(out), split_options(options), units, **extra)
        for output in result.counts["dedup"]["outputs"]:
            output.pop("output")  # the copies' paths differ, by design
        results += [out.read_bytes(), result.counts]
    return results


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("keep", ["first", "none"])
@pytest.mark.parametrize("chunk_chars", [1, 60, 400, 10**6])
@pytest.mark.parametrize("minimum", [(0, 0), (None, None)])
def test_many_runs_give_the_in_memory_copy_byte_for_byte(tmp_path, unit, keep, chunk_chars,
                                                         minimum):
    memory, counts, bounded, bounded_counts = copies(tmp_path, CORPUS, unit, keep,
                                                     minimum=minimum,
                                                     chunk_chars=chunk_chars)
    assert bounded == memory
    assert bounded_counts == counts
    want = reference(CORPUS, unit, keep, normalize_light, 1,
                     (0, 0) if minimum[0] == 0 else (0, 3))
    for name, value in want["counts"].items():
        assert bounded_counts[name] == value, name
    assert counts["records_seen"] == len(CORPUS) + 1  # the line that is not JSON


@pytest.mark.parametrize("unit", UNITS)
def test_a_hash_that_collides_everywhere_changes_nothing(tmp_path, unit):
    memory, counts, bounded, bounded_counts = copies(tmp_path, CORPUS, unit, "first",
                                                     chunk_chars=50, hash_pieces=collide)
    assert bounded == memory
    collisions = bounded_counts.pop("hash_collisions")
    counts.pop("hash_collisions")
    assert bounded_counts == counts
    distinct = counts.get("units_distinct") if unit in ("line", "paragraph") else None
    if distinct is not None:
        assert collisions == distinct - 4  # four hashes: the rest of the texts collided


@pytest.mark.parametrize("clean", ["text", "none"])
@pytest.mark.parametrize("min_chars", [1, 30])
def test_cleaning_and_min_chars_match(tmp_path, clean, min_chars):
    memory, counts, bounded, bounded_counts = copies(
        tmp_path, CORPUS, "sentences:2", "first", min_chars, clean, chunk_chars=80)
    assert bounded == memory and bounded_counts == counts


@pytest.mark.parametrize("unit", ["line", "sentences:3", "sentences:1"])
def test_repeats_table_is_the_in_memory_one(tmp_path, unit):
    src = tmp_path / "in.jsonl"
    write(src, CORPUS * 3)
    groups, units = split_options({"id_field": "id"}), UnitOptions(unit)
    tables = []
    for extra in ({}, {"chunk_chars": 70}):
        with analysed([str(src)], groups, units, **extra) as (documents, _, analysis, _):
            tables.append((repeats_of(analysis, documents.ids),
                           repeats_of(analysis, documents.ids, short=True)))
    assert tables[0][0].num_rows > 0 and tables[1][0].equals(tables[0][0])
    if unit != "sentences:3":  # "Hi." repeated: under three words, kept and not listed
        assert tables[0][1].num_rows > 0
    assert tables[1][1].equals(tables[0][1])


_text = st.text(alphabet=st.sampled_from(list("ab. \n!é\r")), max_size=40)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(_text.filter(str.strip), min_size=1, max_size=12),
       unit=st.sampled_from(UNITS), keep=st.sampled_from(["first", "none"]),
       chunk_chars=st.integers(1, 80),
       minimum=st.sampled_from([(0, 0), (None, None), (4, 1), (9, 2)]))
def test_any_corpus_any_chunks(tmp_path, texts, unit, keep, chunk_chars, minimum):
    memory, counts, bounded, bounded_counts = copies(tmp_path, texts, unit, keep,
                                                     minimum=minimum,
                                                     chunk_chars=chunk_chars,
                                                     hash_pieces=collide)
    assert bounded == memory
    counts.pop("hash_collisions"), bounded_counts.pop("hash_collisions")
    assert bounded_counts == counts


def test_the_merge_orders_a_hash_by_input_order_across_runs():
    # three runs (input order), each sorted by hash; units 0..5 with texts a b a b a c
    texts = [b"a", b"b", b"a", b"b", b"a", b"c"]
    values = np.frombuffer(b"".join(texts), np.uint8)
    offsets = np.arange(7, dtype=np.int64)
    hashes = np.array([1, 1, 1, 1, 0, 1], np.uint64)  # every text shares a hash but "a"@4
    units = np.array([0, 1, 2, 3, 4, 5], np.int64)
    bounds = np.array([0, 2, 4, 6], np.int64)
    doc = np.array([0, 0, 1, 1, 2, 2], np.int64)
    class_of, size, documents = (np.zeros(6, np.int64) for _ in range(3))
    collisions = merge_runs(hashes, units, bounds, values, offsets, 0, 1, doc, class_of,
                            size, documents)
    assert class_of.tolist() == [0, 1, 0, 1, 4, 5]  # hash 0 holds "a"@4 alone
    assert size.tolist() == [2, 2, 2, 2, 1, 1]
    assert documents.tolist() == [2, 2, 2, 2, 1, 1]  # "a" in docs 0, 1; "b" in 0, 1
    assert collisions == 2  # "b" and "c" shared hash 1 with "a"


def test_the_library_and_the_cli_take_the_limit(tmp_path, capsys):
    src, out, cli_out = tmp_path / "in.jsonl", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write(src, CORPUS)
    memory = tmp_path / "m.jsonl"
    neardup.dedup(src, memory, unit="line", id="id")
    neardup.dedup(src, out, unit="line", id="id", memory_limit="512M",
                  work_dir=tmp_path / "work")
    assert out.read_bytes() == memory.read_bytes()
    assert not (tmp_path / "work").exists()  # made for the run, removed after it
    assert main(["dedup", str(src), "--unit", "line", "--id-field", "id", "-o",
                 str(cli_out), "--memory-limit", "512M", "-q"]) == 0
    assert cli_out.read_bytes() == memory.read_bytes()
    table = neardup.repeats(src, unit="line", id="id", memory_limit="512M")
    assert table.equals(neardup.repeats(src, unit="line", id="id"))


@pytest.mark.parametrize(("options", "message"), [
    ({"unit": "document", "memory_limit": "64M"}, "below the floor"),  # whole documents
    ({"unit": "line", "memory_limit": "1M"}, "below what --unit needs"),
    ({"unit": "line", "memory_limit": None, "work_dir": "w"}, "give memory_limit too"),
])
def test_refusals_name_the_option(tmp_path, options, message):
    src = tmp_path / "in.jsonl"
    write(src, CORPUS)
    options = {"memory_limit": "1G", **options}
    with pytest.raises(ValueError, match=message):
        neardup.dedup(src, tmp_path / "out.jsonl", **options)
    assert not (tmp_path / "out.jsonl").exists()


def test_the_chunk_follows_the_limit():
    assert chunk_chars_for(1 << 30) < chunk_chars_for(4 << 30)
    assert chunk_chars_for(4 << 30) * 32 * 2 <= 4 << 30


def test_csv_and_directory_copies_are_the_in_memory_ones(tmp_path):
    folder = tmp_path / "pages"
    folder.mkdir()
    for k, text in enumerate(CORPUS):
        (folder / f"p{k:02d}.txt").write_text(text, encoding="utf-8")
    table = tmp_path / "in.csv"
    with open(table, "w", encoding="utf-8", newline="") as f:
        import csv

        writer = csv.writer(f)
        writer.writerow(["id", "text"])
        writer.writerows([f"d{k}", text] for k, text in enumerate(CORPUS))
    units = UnitOptions("line")
    for src, names in ((folder, ("m", "b")), (table, ("m.csv", "b.csv"))):
        outs = [tmp_path / f"{src.name}-{name}" for name in names]
        dedup_units([str(src)], str(outs[0]), split_options({}), units)
        dedup_units([str(src)], str(outs[1]), split_options({}), units, chunk_chars=30)
        if src.is_dir():
            files = [sorted(p.name for p in out.iterdir()) for out in outs]
            assert files[0] == files[1]
            for name in files[0]:
                assert (outs[1] / name).read_bytes() == (outs[0] / name).read_bytes()
        else:
            assert outs[1].read_bytes() == outs[0].read_bytes()

"""Arrow IPC inputs (``.arrow``, ``.feather``): the format added as one module and one line
of the registry. Read as Parquet is (rows, ids, nulls), in both IPC layouts; the dedup
copy is the input's table minus the removed rows, in the input's layout and batches (the
input's bytes when nothing is removed); a run finds what it finds on the same corpus as
JSON Lines."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest

import neardup
from neardup.cli import main
from neardup.pipeline.outofcore import survey_inputs
from neardup.sources import read_documents, resolve_format
from neardup.sources.copies import write_deduplicated

CLI = ["-t", "0.8", "--shingle", "word", "--ngram", "1", "--min-shingles", "1", "-q"]
FAMILY = "the quick brown fox jumps over the lazy dog near the river bank today"


def corpus() -> pa.Table:
    """Three near-copies of one text, two of another, unrelated rows; a null text; a
    schema with metadata (as a Hugging Face dataset's files have)."""
    texts = [FAMILY, FAMILY + " again", "alpha beta gamma delta epsilon zeta eta theta",
             FAMILY, None, "alpha beta gamma delta epsilon zeta eta theta iota",
             "one two three four five six seven eight nine ten",
             "alpha beta gamma delta epsilon zeta eta theta"]
    table = pa.table({"id": [f"r{k}" for k in range(len(texts))], "text": texts,
                      "score": pa.array(np.arange(len(texts)) / 4)})
    return table.replace_schema_metadata({"source": "test"})


def write_ipc(table: pa.Table, path, layout: str) -> None:
    opener = pa.ipc.new_file if layout == "file" else pa.ipc.new_stream
    with opener(str(path), table.schema) as writer:
        for batch in table.to_batches(max_chunksize=3):  # several batches
            writer.write_batch(batch)


def test_an_arrow_file_is_guessed_from_its_suffix(tmp_path):
    for name in ("a.arrow", "b.feather", "C.ARROW"):
        (tmp_path / name).write_bytes(b"")
        assert resolve_format(str(tmp_path / name), "auto") == "arrow"


@pytest.mark.parametrize("layout", ["file", "stream"])
def test_rows_are_read_as_parquet_rows_are(tmp_path, layout):
    table = corpus()
    path = tmp_path / "data.arrow"
    write_ipc(table, path, layout)
    as_parquet = tmp_path / "data.parquet"
    import pyarrow.parquet as pq

    pq.write_table(table, as_parquet)
    for id_field in (None, "id"):
        docs, report = read_documents([str(path)], id_field=id_field, extra_fields=["score"])
        expected, expected_report = read_documents([str(as_parquet)], id_field=id_field,
                                                   extra_fields=["score"])
        assert docs.ids == expected.ids
        assert docs.texts == expected.texts
        assert docs.record.tolist() == expected.record.tolist()
        assert docs.fields == expected.fields
        assert report.as_dict()["skipped"] == expected_report.as_dict()["skipped"] == {
            "null text": 1}
        assert report.records_seen == table.num_rows


@pytest.mark.parametrize("layout", ["file", "stream"])
def test_the_copy_is_the_table_minus_the_removed_rows_in_its_layout(tmp_path, layout):
    table = corpus()
    path = tmp_path / "data.arrow"
    write_ipc(table, path, layout)
    docs, _ = read_documents([str(path)])
    keep = np.ones(len(docs), dtype=bool)
    keep[[1, 3]] = False  # documents 1 and 3: rows 1 and 3
    out = tmp_path / "copy.arrow"
    written = write_deduplicated(docs, keep, [str(path)], out)
    mask = np.ones(table.num_rows, dtype=bool)
    mask[[1, 3]] = False
    expected = table.filter(pa.array(mask))
    assert written["written"] == expected.num_rows and written["removed"] == 2
    with pa.memory_map(str(out)) as source:  # the input's layout, batches and schema
        copy = (pa.ipc.open_file if layout == "file" else pa.ipc.open_stream)(source)
        copied = copy.read_all()
    assert copied.equals(expected, check_metadata=True)
    assert [b.num_rows for b in copied.to_batches()] == [2, 2, 2]  # 3, 3, 2 minus 1 and 3
    assert out.read_bytes().startswith(b"ARROW1") == (layout == "file")
    same = tmp_path / "same.arrow"
    write_deduplicated(docs, np.ones(len(docs), dtype=bool), [str(path)], same)
    assert same.read_bytes() == path.read_bytes()  # nothing removed: the input's bytes


def test_a_feather_file_dedups_as_the_same_rows_in_json_lines(tmp_path):
    """The kept records and the pairs of a Feather input are those of the same rows as
    JSON Lines (a null text skipped in both)."""
    table = corpus()
    arrow_in, jsonl_in = tmp_path / "data.feather", tmp_path / "data.jsonl"
    feather.write_feather(table, str(arrow_in))  # Feather v2: the IPC file layout, lz4
    jsonl_in.write_text("".join(json.dumps(row) + "\n" for row in table.to_pylist()))
    arrow_out, jsonl_out = tmp_path / "out.feather", tmp_path / "out.jsonl"
    options = dict(threshold=0.8, shingle_kind="word", shingle_size=1, min_shingles=1,
                   id="id")
    from_arrow = neardup.dedup(str(arrow_in), str(arrow_out), **options)
    from_jsonl = neardup.dedup(str(jsonl_in), str(jsonl_out), **options)
    assert from_arrow.pairs_table().to_pylist() == from_jsonl.pairs_table().to_pylist()
    kept = feather.read_table(str(arrow_out))
    assert kept.column("id").to_pylist() == [
        json.loads(line)["id"] for line in jsonl_out.read_text().splitlines()]
    assert kept.num_rows < table.num_rows
    assert kept.schema == table.schema  # metadata and types kept


def test_units_edit_the_text_column(tmp_path, capsys):
    table = pa.table({"text": ["keep this line\nSHARED FOOTER LINE HERE",
                               "another text\nSHARED FOOTER LINE HERE"], "n": [1, 2]})
    path, out = tmp_path / "data.arrow", tmp_path / "out.arrow"
    write_ipc(table, path, "file")
    assert main(["dedup", str(path), "-o", str(out), "--unit", "line", "-q"]) == 0
    copy = feather.read_table(str(out))
    assert copy.column("text").to_pylist() == ["keep this line\nSHARED FOOTER LINE HERE",
                                               "another text\n"]
    assert copy.column("n").to_pylist() == [1, 2]


def test_annotations_are_columns_and_a_taken_name_is_refused(tmp_path, capsys):
    table = corpus()
    path, out = tmp_path / "data.arrow", tmp_path / "out.arrow"
    write_ipc(table, path, "file")
    assert main(["dedup", str(path), "-o", str(out), "--annotate", "--id-field", "id",
                 *CLI]) == 0
    copy = feather.read_table(str(out))
    assert copy.column_names[:3] == ["id", "text", "score"]
    assert "neardup_cluster" in copy.column_names
    taken = tmp_path / "taken.arrow"
    write_ipc(table.append_column("neardup_kept", pa.array([True] * table.num_rows)), taken,
              "file")
    with pytest.raises(ValueError, match="already has 'neardup_kept'"):
        neardup.dedup(str(taken), str(tmp_path / "o.arrow"), annotate=True)


def test_its_rows_are_counted_for_the_memory_plan(tmp_path):
    table = corpus()
    for layout in ("file", "stream"):
        path = tmp_path / f"{layout}.arrow"
        write_ipc(table, path, layout)
        survey = survey_inputs([str(path)])
        assert (survey.records, survey.how, survey.bounded) == (table.num_rows,
                                                                 "Arrow row counts", False)


def test_a_compressed_copy_of_it_is_refused_by_name(tmp_path):
    path = tmp_path / "data.arrow.gz"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="give the .arrow file itself, not a gzip copy"):
        read_documents([str(path)])
    plain = tmp_path / "data.arrow"
    write_ipc(corpus(), plain, "file")
    with pytest.raises(ValueError, match="name the copy .arrow, without the .gz"):
        neardup.dedup(str(plain), str(tmp_path / "out.arrow.gz"))


def test_a_file_that_is_not_arrow_is_refused_by_name(tmp_path):
    path = tmp_path / "data.arrow"
    path.write_text("not arrow at all\n")
    with pytest.raises(ValueError, match="cannot read as Arrow IPC"):
        read_documents([str(path)])

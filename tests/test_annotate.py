"""``dedup --annotate``, ``--keep`` and ``--explain`` without an index.

Properties checked, on corpora with copies, chains of edits, near variants, failed
records, records without text and documents too short to shingle:
- each document's annotation agrees with brute force over its shingle sets: its
  cluster's members, size and label, the one representative a cluster has, the record
  each other member duplicates and their exact Jaccard (≥ t: star clusters), and no two
  representatives ≥ t;
- every record is written under ``keep="all"``; under each policy the records kept are
  the policy's, and the explain table's rows are exactly the removed documents;
- the copy is the input with fields added: JSON Lines lines, CSV/TSV rows and Parquet
  columns keep their bytes and order, records that are not documents come through
  unchanged (JSON Lines) or with empty cells / nulls;
- the same annotations from every format and from data in memory;
- an input that already has an added name is refused before anything is written.
"""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.cli import main
from neardup.sinks import read_table

# the names the copy adds, named so that they say they are neardup's
ANNOTATION_FIELDS = ("neardup_cluster", "neardup_cluster_size", "neardup_kept",
                     "neardup_duplicate_of", "neardup_jaccard")
KEEP_POLICIES = ("representative", "all", "none")

T = 0.75
OPTIONS = {"shingle_kind": "word", "shingle_size": 1, "threshold": T, "method": "exact",
           "id": "id"}
NOTE = 'a "quoted", note'  # a cell the csv module quotes


def _words(rng, k: int) -> list[str]:
    return [f"w{v}" for v in rng.integers(0, 10**7, size=k)]


def _edit(rng, words: list[str], k: int) -> list[str]:
    out = list(words)
    for position in rng.choice(len(out), size=k, replace=False):
        out[position] = _words(rng, 1)[0]
    return out


def corpus(seed: int, families: int = 16) -> list[dict]:
    """Records: copies, chains (each link 2 of 20 words from the last: J = 18/22 ≥ t, two
    links apart below t), variants of one text, lone texts, two-word texts (set aside),
    and records without text; in a shuffled order."""
    rng = np.random.default_rng(seed)
    texts = []
    for family in range(families):
        base = _words(rng, 20)
        texts.append(base)
        kind = family % 4
        if kind == 0:
            texts += [base] * int(rng.integers(1, 4))
        elif kind == 1:
            link = base
            for _ in range(int(rng.integers(2, 5))):
                link = _edit(rng, link, 2)
                texts.append(link)
        elif kind == 2:
            texts += [_edit(rng, base, int(rng.integers(1, 3))) for _ in range(3)]
    texts += [_words(rng, 2) for _ in range(3)]
    order = rng.permutation(len(texts))
    records = [{"id": f"d{k}", "text": " ".join(texts[i]), "n": k, "note": NOTE}
               for k, i in enumerate(order.tolist())]
    for k in (3, 11):
        records.insert(k, {"id": f"empty{k}", "text": "", "n": -1, "note": NOTE})
    return records


def _set(text: str) -> frozenset:
    return frozenset(re.findall(r"\w+", text.lower()))


def _jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b)


def check_against_brute_force(records: list[dict], annotated: dict[str, dict], keep: str):
    """``annotated``: id -> the record's added fields, for every document written."""
    documents = [r for r in records if r["text"]]
    sets = {r["id"]: _set(r["text"]) for r in documents}
    order = {r["id"]: k for k, r in enumerate(documents)}
    usable = [i for i in sets if len(sets[i]) >= 5]
    if keep == "all":
        assert set(annotated) == set(sets)
    members: dict[str, list[str]] = {}
    for doc_id, fields in annotated.items():
        members.setdefault(fields["neardup_cluster"], []).append(doc_id)
    if keep == "all":
        for label, ids in members.items():
            assert label == min(ids, key=order.get)  # its first document names it
            assert all(annotated[i]["neardup_cluster_size"] == len(ids) for i in ids)
            representatives = [i for i in ids if annotated[i]["neardup_duplicate_of"] is None]
            assert len(representatives) == 1
        # star clusters over the exact join: no two representatives are near-duplicates
        # (so every document with a partner >= t is removed for one, or keeps them out)
        kept = [i for i, f in annotated.items() if f["neardup_duplicate_of"] is None]
        for a in kept:
            for b in kept:
                if a < b and a in usable and b in usable:
                    assert _jaccard(sets[a], sets[b]) < T
        assert max(len(ids) for ids in members.values()) > 2  # copies, chains, variants
    for doc_id, fields in annotated.items():
        matched = fields["neardup_duplicate_of"]
        if matched is None:
            assert fields["neardup_jaccard"] is None
        else:
            exact = _jaccard(sets[doc_id], sets[matched])
            assert fields["neardup_jaccard"] == round(exact, 6) >= T
            assert annotated.get(matched, {"neardup_cluster": fields["neardup_cluster"]})[
                "neardup_cluster"] == fields["neardup_cluster"]
        expected_kept = {"all": matched is None, "representative": matched is None,
                         "none": fields["neardup_cluster_size"] == 1}[keep]
        assert fields["neardup_kept"] is expected_kept
        assert expected_kept or keep == "all"  # what is written is kept, or all is


def _write_jsonl(path, records, bad_lines=True):
    lines = []
    for k, r in enumerate(records):
        compact = k % 2 == 0  # both layouts kept byte for byte
        lines.append(json.dumps(r, separators=(",", ":") if compact else None) + "\n")
    if bad_lines:
        lines.insert(5, "{not json\n")
        lines.insert(9, "\n")
        lines.insert(14, '{"id": "no-text"}\n')
    path.write_text("".join(lines))


def _read_jsonl_fields(path) -> dict[str, dict]:
    out = {}
    for line in path.read_text().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and "neardup_cluster" in obj:
            out[obj["id"]] = {k: obj[k] for k in ANNOTATION_FIELDS}
    return out


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("keep", KEEP_POLICIES)
def test_json_lines_annotations_are_brute_force_and_lines_keep_their_bytes(tmp_path, seed,
                                                                          keep):
    records = corpus(seed)
    src = tmp_path / "in.jsonl"
    _write_jsonl(src, records)
    out, explain = tmp_path / "out.jsonl", tmp_path / "explain.jsonl"
    result = neardup.dedup(src, out, annotate=True, keep=keep, explain=explain, **OPTIONS)
    annotated = _read_jsonl_fields(out)
    check_against_brute_force(records, annotated, keep)
    # every line is the input's, fields added before its closing brace
    original = src.read_bytes().splitlines(keepends=True)
    written = out.read_bytes().splitlines(keepends=True)
    removed = set()
    source_lines = iter(original)
    for line in written:
        while True:
            before = next(source_lines)
            stripped = re.sub(rb', "neardup_cluster": .*}(\r?\n)$', rb"}\1", line)
            if stripped == before:
                break
            removed.add(json.loads(before)["id"])
    removed |= {json.loads(before)["id"] for before in source_lines}  # after the last
    assert sorted(removed | set(annotated)) == sorted(r["id"] for r in records if r["text"])
    assert result.counts["dedup"]["removed"] == len(removed)
    if keep == "all":
        assert len(written) == len(original)
    # the explain rows are the removed documents, in input order, with their match
    table = read_table(explain).to_pylist()
    assert [row["id"] for row in table] == [r["id"] for r in records if r["id"] in removed]
    full = result.outcomes_table(keep).to_pylist()
    by_id = {row["id"]: row for row in full}
    for row in table:
        assert row["matched_source"] == "new"
        assert row["matched_id"] == by_id[row["id"]]["duplicate_of"]
        assert row["jaccard"] == by_id[row["id"]]["jaccard"]
        assert row["cluster"] == by_id[row["id"]]["cluster"]
    if keep == "none":  # a representative goes too: it duplicates nothing kept
        assert any(row["matched_id"] is None for row in table)
    assert result.counts["explain"]["rows"] == len(table)


def _csv_text(records, delimiter=",", bad_row=True) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n")
    writer.writerow(["id", "text", "n", "note"])
    for k, r in enumerate(records):
        writer.writerow([r["id"], r["text"], r["n"], r["note"]])
        if bad_row and k == 6:
            buffer.write(f"only{delimiter}two\r\n")  # a failed row: two fields
    return buffer.getvalue()


@pytest.mark.parametrize("delimiter", [",", "\t"])
def test_csv_rows_keep_their_cells_and_quoting_with_columns_added(tmp_path, delimiter):
    records = corpus(3)
    suffix = ".csv" if delimiter == "," else ".tsv"
    src = tmp_path / f"in{suffix}"
    src.write_text(_csv_text(records, delimiter), newline="")
    plain, annotated = tmp_path / f"plain{suffix}", tmp_path / f"annotated{suffix}"
    neardup.dedup(src, plain, **OPTIONS)
    neardup.dedup(src, annotated, annotate=True, **OPTIONS)
    plain_lines, lines = _crlf_lines(plain), _crlf_lines(annotated)
    assert len(lines) == len(plain_lines)
    for before, after in zip(plain_lines, lines):  # each row as the plain copy wrote it
        assert after.startswith(before.removesuffix("\r\n") + delimiter)
        assert after.endswith("\r\n")
    rows = list(csv.reader(io.StringIO("".join(lines)), delimiter=delimiter))
    assert rows[0] == ["id", "text", "n", "note", *ANNOTATION_FIELDS]
    assert f'"{NOTE[:3]}' in lines[1] or delimiter == "\t"
    failed = [row for row in rows if row[0] == "only"]
    assert failed == [["only", "two", "", "", "", "", ""]]  # not a document: empty cells
    fields = {row[0]: dict(zip(ANNOTATION_FIELDS, row[4:])) for row in rows[1:]
              if row[0] != "only" and row[4]}
    assert fields == {i: _as_cells(f) for i, f in _jsonl_annotations(tmp_path,
                                                                     records).items()}


def _crlf_lines(path) -> list[str]:
    text = path.read_bytes().decode()
    assert text.endswith("\r\n")
    return [line + "\r\n" for line in text.split("\r\n")[:-1]]


def _as_cells(fields: dict) -> dict:
    def cell(value):
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return {k: cell(v) for k, v in fields.items()}


def _jsonl_annotations(tmp_path, records, keep="representative") -> dict:
    src, out = tmp_path / "same.jsonl", tmp_path / "same.out.jsonl"
    _write_jsonl(src, records, bad_lines=False)
    neardup.dedup(src, out, annotate=True, keep=keep, **OPTIONS)
    return _read_jsonl_fields(out)


def test_parquet_columns_are_added_and_every_row_kept(tmp_path):
    records = corpus(4)
    table = pa.Table.from_pylist(records)
    table = table.set_column(0, "id", pa.array([None if k == 7 else r["id"]  # a failed row
                                                for k, r in enumerate(records)]))
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, src)
    neardup.dedup(src, out, annotate=True, keep="all", **OPTIONS)
    written = pq.read_table(out)
    assert written.column_names == [*table.column_names, *ANNOTATION_FIELDS]
    assert written.select(table.column_names).equals(table)
    rows = written.to_pylist()
    assert rows[7]["neardup_cluster"] is None  # the failed row: nulls
    assert rows[3]["neardup_cluster"] is None  # no text
    fields = {r["id"]: {k: r[k] for k in ANNOTATION_FIELDS} for r in rows
              if r["neardup_cluster"] is not None}
    expected = _jsonl_annotations(tmp_path, [r for k, r in enumerate(records) if k != 7],
                                  keep="all")
    assert fields == expected
    check_against_brute_force([r for k, r in enumerate(records) if k != 7], fields, "all")


def _frame_fields(rows: list[dict]) -> dict:
    return {r["id"]: {k: (None if pd.isna(r[k]) else r[k]) if not isinstance(r[k], str)
                      else r[k] for k in ANNOTATION_FIELDS}
            for r in rows if r["text"]}


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow", "dicts", "datasets"])
def test_data_in_memory_gets_the_same_columns(tmp_path, kind):
    records = corpus(5)
    data = {"pandas": lambda: pd.DataFrame(records), "polars": lambda: pl.DataFrame(records),
            "arrow": lambda: pa.Table.from_pylist(records), "dicts": lambda: records,
            "datasets": lambda: pytest.importorskip("datasets").Dataset.from_list(records)
            }[kind]()
    annotated = neardup.dedup(data, annotate=True, keep="all", **OPTIONS)
    if kind == "pandas":
        rows = annotated.to_dict("records")
        assert list(annotated.index) == list(range(len(records)))
    elif kind == "polars":
        rows = annotated.to_dicts()
    elif kind == "arrow":
        rows = annotated.to_pylist()
    elif kind == "datasets":
        rows = annotated.to_list()
    else:
        rows = annotated
    assert len(rows) == len(records)
    assert [r["id"] for r in rows] == [r["id"] for r in records]
    for row, record in zip(rows, records):  # the row's own values as they were
        assert {k: row[k] for k in record} == record
        if not record["text"]:
            assert all(row[k] is None or pd.isna(row[k]) for k in ANNOTATION_FIELDS)
    expected = _jsonl_annotations(tmp_path, records, keep="all")
    assert _frame_fields(rows) == expected
    kept = neardup.dedup(data, annotate=True, **OPTIONS)  # representatives only
    kept_ids = [r["id"] for r in (kept.to_dict("records") if kind == "pandas" else
                                  kept.to_dicts() if kind == "polars" else
                                  kept.to_pylist() if kind == "arrow" else
                                  kept.to_list() if kind == "datasets" else kept)]
    assert kept_ids == [r["id"] for r in records
                        if not r["text"] or expected[r["id"]]["neardup_duplicate_of"] is None]


def test_keep_none_drops_every_member_of_a_duplicated_cluster(tmp_path):
    records = corpus(6)
    expected = _jsonl_annotations(tmp_path, records, keep="all")
    out = neardup.dedup(pd.DataFrame(records), keep="none", **OPTIONS)
    assert list(out["id"]) == [r["id"] for r in records if not r["text"]
                               or expected[r["id"]]["neardup_cluster_size"] == 1]


def test_a_components_chain_has_no_jaccard_to_its_far_representative():
    # v0 - v1 - v2: J(v0, v1) = J(v1, v2) = 18/22, J(v0, v2) = 16/24 < t
    words = [f"w{k}" for k in range(20)]
    v1 = words[:18] + ["x1", "x2"]
    v2 = words[:16] + ["y1", "y2", "x1", "x2"]
    texts = [" ".join(words), " ".join(v1), " ".join(v2)]
    options = {k: v for k, v in OPTIONS.items() if k != "id"}
    star = neardup.find(texts, clusters="center", **options).outcomes_table().to_pydict()
    assert star["duplicate_of"] == ["2", None, "2"]  # v1 the centre, first of the visit
    assert star["jaccard"] == [round(18 / 22, 6), None, round(18 / 22, 6)]
    chain = neardup.find(texts, clusters="components", **options).outcomes_table()
    assert chain.to_pydict()["duplicate_of"] == [None, "1", "1"]
    assert chain.to_pydict()["jaccard"] == [None, round(18 / 22, 6), None]  # no v0-v2 pair


@pytest.mark.parametrize("where", ["jsonl", "csv", "parquet", "pandas"])
def test_an_input_with_an_added_name_is_refused_before_anything_is_written(tmp_path, where):
    records = corpus(7)
    records[9] = {**records[9], "neardup_kept": 1}
    out = tmp_path / f"out.{where}"
    if where == "jsonl":
        src = tmp_path / "in.jsonl"
        _write_jsonl(src, records, bad_lines=False)
    elif where == "csv":
        src = tmp_path / "in.csv"
        src.write_text(_csv_text(records).replace("id,text,n,note", "id,text,n,neardup_kept",
                                                  1))
    elif where == "parquet":
        src = tmp_path / "in.parquet"
        table = pa.Table.from_pylist(records)  # the first row's keys: the column added
        pq.write_table(table.append_column("neardup_kept", pa.array([1] * len(records))), src)
    else:
        src, out = pd.DataFrame(records), None
    with pytest.raises(ValueError, match="already has 'neardup_kept'"):
        neardup.dedup(src, out, annotate=True, **OPTIONS)
    if out is not None:
        assert not out.exists()
        code = main(["dedup", str(src), "--annotate", "--id-field", "id", "-o", str(out)])
        assert code == 2 and not out.exists()


@pytest.mark.parametrize(("call", "message"), [
    (lambda d: neardup.dedup(d / "in.txt", d / "o.txt", annotate=True), "a line file"),
    (lambda d: neardup.dedup(d / "in.jsonl", d / "o.jsonl", keep="all"), "--annotate"),
    (lambda d: neardup.dedup(d / "in.jsonl", d / "o.jsonl", keep="first"),
     "applies to units inside documents"),
    (lambda d: neardup.dedup(["one text here", "another text here"], annotate=True),
     "list of strings"),
    (lambda d: neardup.dedup(d / "in.jsonl", d / "o.jsonl", explain=d / "e.txt"),
     "the file's suffix says its format"),
    (lambda d: neardup.dedup(d / "in.jsonl", d / "o.jsonl", against=d / "idx",
                             annotate=True), "without an index"),
    (lambda d: neardup.dedup(d / "in.jsonl", d / "o.jsonl", engine="spark", against=d / "idx",
                             explain=d / "e.csv"),
     "--explain is not supported by the Spark engine: against an index"),
])
def test_refusals_name_the_option(tmp_path, call, message):
    (tmp_path / "in.txt").write_text("a line of text\n")
    _write_jsonl(tmp_path / "in.jsonl", corpus(8, families=2), bad_lines=False)
    with pytest.raises(ValueError, match=re.escape(message)):
        call(tmp_path)
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "o.txt").exists()


def test_the_command_line_writes_what_the_library_does(tmp_path, capsys):
    records = corpus(9)
    src = tmp_path / "in.jsonl"
    _write_jsonl(src, records)
    assert main(["dedup", str(src), "--id-field", "id", "--shingle", "word",
                 "--ngram", "1", "-t", str(T), "--method", "exact", "--annotate",
                 "--keep", "none", "--explain", str(tmp_path / "e.csv"),
                 "-o", str(tmp_path / "cli.jsonl")]) == 0
    said = capsys.readouterr().out
    assert "every document of a cluster of two or more" in said
    assert "removed records and what each duplicates written to" in said
    neardup.dedup(src, tmp_path / "lib.jsonl", annotate=True, keep="none",
                  explain=tmp_path / "e.parquet", **OPTIONS)
    assert (tmp_path / "cli.jsonl").read_bytes() == (tmp_path / "lib.jsonl").read_bytes()
    assert read_table(tmp_path / "e.csv")["id"].to_pylist() == \
        pq.read_table(tmp_path / "e.parquet")["id"].to_pylist()


def test_several_inputs_compressed_and_mixed_get_one_run_s_annotations(tmp_path):
    """Clusters span the inputs: each copy's fields are those of the run over all of
    them, a gzip JSON Lines input and a CSV input alike; a directory is refused."""
    import gzip

    records = corpus(10)
    half = len(records) // 2
    first, second = tmp_path / "a.jsonl.gz", tmp_path / "b.csv"
    with gzip.open(first, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in records[:half])
    second.write_text(_csv_text(records[half:], bad_row=False), newline="")
    out = tmp_path / "copies"
    neardup.dedup([first, second], out, annotate=True, keep="all", **OPTIONS)
    fields = {}
    with gzip.open(out / "a.jsonl.gz", "rt") as f:
        for line in f:
            obj = json.loads(line)
            if "neardup_cluster" in obj:
                fields[obj["id"]] = {k: obj[k] for k in ANNOTATION_FIELDS}
    rows = list(csv.DictReader(io.StringIO((out / "b.csv").read_text())))
    csv_fields = {r["id"]: {k: r[k] for k in ANNOTATION_FIELDS} for r in rows if r["text"]}
    together = _jsonl_annotations(tmp_path, records, keep="all")
    assert fields == {i: f for i, f in together.items() if i in fields}
    assert csv_fields == {i: _as_cells(f) for i, f in together.items() if i in csv_fields}
    assert len(fields) + len(csv_fields) == len(together)
    assert any(together[i]["neardup_duplicate_of"] in csv_fields for i in fields)  # across
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "x.txt").write_text("some text in a file")
    with pytest.raises(ValueError, match="is a directory"):
        neardup.dedup(tmp_path / "folder", tmp_path / "folder.out", annotate=True)

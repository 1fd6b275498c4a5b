"""dedup --unit: the copy in each input format, byte for byte, with the repeated units
removed in place; counts that add up; refusals that name the option."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup
from neardup.cli import main
from neardup.shingling import normalize_light

from .reference import reference

TEXTS = [
    "Accept all cookies\nStory one, é.\nImpressum © 2024",
    "ACCEPT   all cookies\r\nStory two.\r\nImpressum © 2024\r\n",
    "Accept all cookies",
    "Story three\nwithout newline",
    "Impressum © 2024\nStory one, é.",
]


def expected(unit="line", keep="first", min_chars=1):
    return reference(TEXTS, unit, keep, normalize_light, min_chars)


def write_jsonl(path):
    with open(path, "w", encoding="utf-8") as f:
        for k, text in enumerate(TEXTS):
            f.write(json.dumps({"id": f"d{k}", "text": text, "n": k}) + "\n")
            if k == 1:
                f.write("\n")  # a blank line: no record, copied as it is


def test_jsonl_copy_is_the_input_with_units_removed(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(src)
    result = neardup.dedup(src, out, unit="line", id="id")
    want = expected()
    lines = []
    for k, text in enumerate(TEXTS):
        if want["kept"][k]:
            record = {"id": f"d{k}", "text": text, "n": k}
            if want["left"][k] == text:
                lines.append(json.dumps(record) + "\n")
            else:
                lines.append(json.dumps({**record, "text": want["left"][k]},
                                        ensure_ascii=False) + "\n")
        if k == 1:
            lines.append("\n")
    assert out.read_text(encoding="utf-8") == "".join(lines)
    c = result.counts
    assert c["records_seen"] == c["documents_kept"] + c["documents_dropped"] + c["skipped"] \
        + c["failed"] == len(TEXTS)
    assert c["documents_dropped"] == want["kept"].count(False) == 2
    for name, value in want["counts"].items():
        assert c[name] == value, name


def test_lines_copy(tmp_path):
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = ["Hello there. Cookie note. Bye.", "Other words. Cookie note. Bye.", "", "x"]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    texts = [t for t in lines if t]
    want = reference(texts, "sentences:2", "first", normalize_light)
    neardup.dedup(src, out, unit="sentences:2")
    kept = iter(zip(want["kept"], want["left"], strict=True))
    copy = []
    for line in lines:
        if not line:
            copy.append("\n")
            continue
        keep, left = next(kept)
        if keep:
            copy.append(left + "\n")
    assert out.read_text(encoding="utf-8") == "".join(copy)
    assert want["counts"]["units_removed"] == 1


def test_csv_copy(tmp_path):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    with open(src, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["id", "text", "extra"])
        for k, text in enumerate(TEXTS):
            writer.writerow([k, text, f"x{k}"])
    neardup.dedup(src, out, unit="line")
    want = expected()
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "text", "extra"])
    for k, _ in enumerate(TEXTS):
        if want["kept"][k]:
            row = [str(k), want["left"][k], f"x{k}"]
            (csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
             if "\r" in row[1] else writer).writerow(row)
    assert out.read_bytes() == buffer.getvalue().encode("utf-8")


def test_parquet_copy(tmp_path):
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({"id": [f"d{k}" for k in range(len(TEXTS))], "text": TEXTS,
                             "n": list(range(len(TEXTS)))}), src)
    neardup.dedup(src, out, unit="line")
    want = expected()
    keep = [k for k in range(len(TEXTS)) if want["kept"][k]]
    assert pq.read_table(out).to_pylist() == [
        {"id": f"d{k}", "text": want["left"][k], "n": k} for k in keep]


def test_directory_copy(tmp_path):
    root, out = tmp_path / "docs", tmp_path / "out"
    root.mkdir()
    for k, text in enumerate(TEXTS):
        (root / f"{k}.txt").write_bytes(text.encode("utf-8"))
    neardup.dedup(root, out, unit="line")
    want = expected()
    for k in range(len(TEXTS)):
        path = out / f"{k}.txt"
        assert path.exists() == want["kept"][k]
        if want["kept"][k]:
            assert path.read_bytes() == want["left"][k].encode("utf-8")


def test_the_copy_is_deterministic(tmp_path):
    src = tmp_path / "in.jsonl"
    write_jsonl(src)
    neardup.dedup(src, tmp_path / "a.jsonl", unit="paragraph", keep="none")
    neardup.dedup(src, tmp_path / "b.jsonl", unit="paragraph", keep="none")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_repeats_lists_the_repeated_lines(tmp_path):
    src = tmp_path / "in.jsonl"
    write_jsonl(src)
    table = neardup.repeats(src, unit="line", id="id")
    want = expected()
    rows = sorted(want["repeats"], key=lambda r: -r[0])
    assert table.column("count").to_pylist() == [r[0] for r in rows]
    assert sorted(zip(table.column("text").to_pylist(), table.column("count").to_pylist(),
                      table.column("documents").to_pylist(), strict=True)) == sorted(
        (r[2][1], r[0], r[1]) for r in rows)
    first = table.to_pylist()[0]
    doc = int(first["first_id"][1:])
    assert TEXTS[doc][first["first_offset"]:].startswith(first["text"])
    assert neardup.repeats(src, unit="line", top=1).num_rows == 1


def test_repeats_on_the_command_line(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    write_jsonl(src)
    assert main(["repeats", str(src), "--unit", "line", "--output-format", "jsonl",
                 "--id-field", "id"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == neardup.repeats(src, unit="line", id="id").to_pylist()
    assert main(["repeats", str(src), "-o", str(tmp_path / "r.csv")]) == 0
    assert (tmp_path / "r.csv").read_text().startswith('"text","count"')


def test_dedup_on_the_command_line_matches_the_library(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    write_jsonl(src)
    assert main(["dedup", str(src), "--unit", "line", "-o", str(tmp_path / "cli.jsonl")]) == 0
    assert capsys.readouterr().out.startswith("read 5 records: 5 documents\n")
    neardup.dedup(src, tmp_path / "lib.jsonl", unit="line")
    assert (tmp_path / "cli.jsonl").read_bytes() == (tmp_path / "lib.jsonl").read_bytes()


@pytest.mark.parametrize(("call", "message"), [
    (lambda s, o: neardup.find(s, unit="line"), "neardup repeats --unit line"),
    (lambda s, o: neardup.dedup(s, o, unit="lines"), "unit must be one of"),
    (lambda s, o: neardup.dedup(s, o, unit="sentences:0"), "sentences:N"),
    (lambda s, o: neardup.dedup(s, o, unit="line", keep="last"), "keep must be one of"),
    (lambda s, o: neardup.dedup(s, o, keep="first"), "applies to units inside documents"),
    (lambda s, o: neardup.dedup(s, o, unit="line", keep="all"), "applies to whole-document"),
    (lambda s, o: neardup.dedup(s, o, unit="line", annotate=True), "annotate=True"),
    (lambda s, o: neardup.dedup(s, o, unit="line", engine="spark", explain=o), "explain="),
    (lambda s, o: neardup.dedup(s, o, unit="line", code="python"), "--code"),
    (lambda s, o: neardup.dedup(s, o, unit="line", text_fields=("text", "id")),
     "one --text-field"),
    (lambda s, o: neardup.dedup([{"text": "a"}], unit="line"), "data in memory"),
    (lambda s, o: neardup.repeats(s, unit="document"), "units inside documents"),
    (lambda s, o: neardup.dedup(s, o, unit="line", min_chars=-1), "min_chars"),
])
def test_refusals_name_the_option(tmp_path, call, message):
    src = tmp_path / "in.jsonl"
    write_jsonl(src)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("=", "=")):
        call(src, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_json_file_is_refused_before_anything_is_written(tmp_path):
    src = tmp_path / "in.json"
    src.write_text(json.dumps([{"text": t} for t in TEXTS]), encoding="utf-8")
    with pytest.raises(ValueError, match="JSON file"):
        neardup.dedup(src, tmp_path / "out.json", unit="line")
    assert not (tmp_path / "out.json").exists()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab.\n\r é日!")), min_size=1,
                        max_size=30).filter(str.strip), min_size=1, max_size=6),
       st.sampled_from(["line", "paragraph", "sentences:2"]), st.sampled_from(["first", "none"]))
def test_any_jsonl_copy_is_the_reference_byte_for_byte(tmp_path_factory, texts, unit, keep):
    folder = tmp_path_factory.mktemp("copy")
    src, out = folder / "in.jsonl", folder / "out.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    neardup.dedup(src, out, unit=unit, keep=keep)
    want = reference(texts, unit, keep, normalize_light)
    lines = [json.dumps({"text": t}) + "\n" if left == t else
             json.dumps({"text": left}, ensure_ascii=False) + "\n"
             for t, left, kept in zip(texts, want["left"], want["kept"], strict=True) if kept]
    assert out.read_text(encoding="utf-8") == "".join(lines)

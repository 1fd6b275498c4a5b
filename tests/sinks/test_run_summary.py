"""dedup and repeats --summary FILE: the JSON's records add up and agree with the files
(every record of the inputs counted here by hand, every kept one found in the copy), on
each path: whole documents, units in memory and under a memory limit, against an index,
JSON Lines with bad lines and empty texts, CSV, several inputs; the file is written whole
or not at all and never onto an input; what the commands print is sentences."""

from __future__ import annotations

import csv
import json
import re

import pytest

import neardup
from neardup._core.counts import RECORD_COUNTS, SUMMARY
from neardup.cli import main

AD = "the same advert for a job posted again and again by one agency in town"
NEAR = "the same advert for a job posted again and again by one agency in the town"
OTHER = ["a short note on the weather today and tomorrow in the north of the country",
         "minutes of the meeting held on tuesday about the new library opening hours",
         "a recipe for bread with flour water salt and yeast baked for forty minutes"]
FOOTER = "share this page with your friends"


def jsonl_lines() -> list[str]:
    """Records of every kind: copies, a near copy, distinct texts, repeated footers, an
    empty text, a text that is not there, a line that is not JSON, a text that is a
    number."""
    records = [{"id": "a", "text": f"{AD}\n{FOOTER}\n"},
               {"id": "b", "text": f"{AD}\n{FOOTER}\n"},
               {"id": "c", "text": f"{NEAR}\n{FOOTER}\n"},
               {"id": "d", "text": f"{OTHER[0]}\n{FOOTER}\n"},
               {"id": "e", "text": ""},
               {"id": "f"},
               {"id": "g", "text": f"{OTHER[1]}\n{OTHER[0]}\n"},
               {"id": "h", "text": OTHER[2]},
               {"id": "i", "text": FOOTER}]
    lines = [json.dumps(r) for r in records]
    return lines[:5] + ["{not json"] + lines[5:] + ['{"id": "j", "text": 7}']


def expected_jsonl(lines: list[str], units: bool = False) -> dict:
    """The read accounting of JSON Lines, by hand: a record with a non-empty text is a
    document (``units``: a string only; a dedup of whole documents reads a number as
    its JSON text; a unit run skips it), an empty one is skipped, anything else
    failed."""
    processed = skipped = failed = 0
    for line in lines:
        try:
            text = json.loads(line).get("text")
        except json.JSONDecodeError:
            failed += 1
            continue
        if text == "" or (units and text is not None and not isinstance(text, str)):
            skipped += 1  # a unit run writes the text back: a number is skipped
        elif text is not None:
            processed += 1
        else:
            failed += 1
    return {"read": len(lines), "processed": processed, "skipped": skipped,
            "failed": failed}


def documents_in(path, units: bool = False) -> list[str]:
    """The texts of a JSON Lines copy's records that are documents (``units``: as
    :func:`expected_jsonl`)."""
    texts = []
    for line in path.read_text().splitlines():
        try:
            text = json.loads(line).get("text")
        except json.JSONDecodeError:
            continue
        if isinstance(text, str) and text:
            texts.append(text)
        elif text is not None and text != "" and not units:
            texts.append(json.dumps(text))
    return texts


def check_records(records: dict, expected: dict, kept_in_copy: int | None,
                  written: int | None) -> None:
    assert list(records) == [key for key in RECORD_COUNTS if key in records]
    assert {k: records[k] for k in expected} == expected
    assert records["read"] == records["processed"] + records["skipped"] + records["failed"]
    assert records["skipped"] == sum(records["skipped_by_reason"].values())
    assert records["failed"] == sum(records["failed_by_reason"].values())
    if kept_in_copy is not None:
        assert records["kept"] == kept_in_copy
        assert records["kept"] + records["removed"] == records["processed"]
        assert records["written"] == written


def load(path) -> dict:
    summary = json.loads(path.read_text())
    assert list(summary) == [key for key in SUMMARY if key in summary]
    assert summary["neardup"] == neardup.__version__
    return summary


@pytest.fixture
def corpus(tmp_path):
    lines = jsonl_lines()
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, lines


def test_whole_document_dedup_of_json_lines(corpus, tmp_path):
    path, lines = corpus
    result = neardup.dedup(path, tmp_path / "out.jsonl", id="id",
                           summary=tmp_path / "s.json")
    summary = load(tmp_path / "s.json")
    kept = documents_in(tmp_path / "out.jsonl")
    check_records(summary["records"], expected_jsonl(lines), len(kept),
                  len((tmp_path / "out.jsonl").read_text().splitlines()))
    assert summary["records"]["skipped_by_reason"] == {"empty text": 1}
    assert sorted(kept) == sorted({f"{AD}\n{FOOTER}\n", f"{OTHER[0]}\n{FOOTER}\n",
                                   f"{OTHER[1]}\n{OTHER[0]}\n", OTHER[2], FOOTER, "7"})
    # find's counts, options and plan as its summary.json holds them, with the copy's
    assert summary["command"] == "dedup"
    assert summary["counts"] == json.loads(json.dumps(result.counts))
    assert summary["counts"]["removable"] == summary["records"]["removed"] == 2
    assert summary["counts"]["pairs"] == 3 and summary["counts"]["clusters"] == 1
    assert summary["counts"]["min_member_similarity"] < 1
    assert summary["config"] == json.loads(json.dumps(result.config.as_dict()))
    assert summary["plan"] == result.plan.as_dict()
    assert summary["read"]["problems_total"] == summary["records"]["failed"] == 2
    assert set(summary["seconds"]) == set(result.seconds) and summary["seconds"]


def test_csv_and_several_inputs(tmp_path):
    rows = [["id", "text"], ["1", AD], ["2", AD], ["3", ""], ["4", OTHER[0]],
            ["5", NEAR], ["6", OTHER[1]]]
    with open(tmp_path / "a.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    lines = jsonl_lines()
    (tmp_path / "b.jsonl").write_text("\n".join(lines) + "\n")
    inputs = [tmp_path / "a.csv", tmp_path / "b.jsonl"]
    assert main(["dedup", *map(str, inputs), "-o", str(tmp_path / "copies"), "--summary",
                 str(tmp_path / "s.json"), "-q"]) == 0
    summary = load(tmp_path / "s.json")
    with open(tmp_path / "copies" / "a.csv", newline="") as f:
        copied = list(csv.reader(f))[1:]
    from_jsonl = expected_jsonl(lines)
    expected = {"read": 6 + from_jsonl["read"], "processed": 5 + from_jsonl["processed"],
                "skipped": 1 + from_jsonl["skipped"], "failed": from_jsonl["failed"]}
    kept = (sum(1 for row in copied if row[1])
            + len(documents_in(tmp_path / "copies" / "b.jsonl")))
    written = len(copied) + len((tmp_path / "copies" / "b.jsonl").read_text().splitlines())
    check_records(summary["records"], expected, kept, written)
    assert summary["records"]["removed"] == 4  # 2 and 5 of a.csv, b and c of b.jsonl
    assert summary["counts"]["dedup"]["outputs"][0]["removed"] == 2


@pytest.mark.parametrize("memory_limit", [None, "400M"])
def test_line_units_in_memory_and_under_a_limit(corpus, tmp_path, memory_limit):
    path, lines = corpus
    neardup.dedup(path, tmp_path / "out.jsonl", id="id", unit="line",
                  memory_limit=memory_limit, summary=tmp_path / "s.json")
    summary = load(tmp_path / "s.json")
    kept = documents_in(tmp_path / "out.jsonl", units=True)
    check_records(summary["records"], expected_jsonl(lines, units=True), len(kept),
                  len((tmp_path / "out.jsonl").read_text().splitlines()))
    # the units by hand: the lines of the documents, the first of each text kept
    units = [line for record in lines for line in _text_lines(record)]
    c = summary["counts"]
    assert (c["units"], c["units_removed"], c["units_kept"]) == (
        len(units), len(units) - len(set(units)), len(set(units)))
    assert c["units_removed"] == sum(map(len, (_text_lines(r) for r in lines))) - sum(
        len(text.splitlines()) for text in kept)
    # a document is dropped when all its lines went: b (AD, FOOTER) and i (FOOTER)
    assert summary["records"]["removed"] == c["documents_dropped"] == 2
    assert summary["config"] == {"unit": "line", "keep": "first", "min_chars": 1,
                                 "min_unit_chars": 0, "min_unit_words": 3}
    assert list(summary["seconds"]) == ["read and find", "write"]


def _text_lines(line: str) -> list[str]:
    try:
        text = json.loads(line).get("text")
    except json.JSONDecodeError:
        return []
    return text.splitlines() if isinstance(text, str) else []


def test_against_an_index(corpus, tmp_path):
    path, lines = corpus
    index = tmp_path / "idx"
    neardup.build_index([OTHER[0], OTHER[2]], index, threshold=0.8)
    neardup.dedup(path, tmp_path / "out.jsonl", id="id", against=index,
                  summary=tmp_path / "s.json")
    summary = load(tmp_path / "s.json")
    kept = documents_in(tmp_path / "out.jsonl")
    check_records(summary["records"], expected_jsonl(lines), len(kept),
                  len((tmp_path / "out.jsonl").read_text().splitlines()))
    assert OTHER[2] not in kept and summary["records"]["removed"] == 3
    assert summary["counts"]["index"]["documents"] == 2


def test_repeats(corpus, tmp_path):
    path, lines = corpus
    table = neardup.repeats(path, tmp_path / "r.csv", id="id", summary=tmp_path / "s.json")
    summary = load(tmp_path / "s.json")
    # repeats writes nothing back: a number is read as its JSON text, as find reads it
    check_records(summary["records"], expected_jsonl(lines), None, None)
    assert "kept" not in summary["records"] and "written" not in summary["records"]
    units = [line for record in lines for line in _text_lines(record)] + ["7"]
    c = summary["counts"]
    repeated = {u for u in units if units.count(u) > 1}
    assert (c["units"], c["units_repeated"], c["units_removed"]) == (
        len(units), len(repeated), len(units) - len(set(units)))
    assert table.num_rows == len(repeated)
    assert summary["command"] == "repeats" and list(summary["seconds"]) == [
        "read and find", "list"]


def test_the_summary_is_written_whole_or_not_at_all(tmp_path):
    """A run that fails (every record failed) leaves the previous summary as it was, and
    no half-written file beside it."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"body": "no text"}\n')
    summary = tmp_path / "s.json"
    summary.write_text("previous\n")
    for run in (lambda: neardup.dedup(bad, tmp_path / "o.jsonl", summary=summary),
                lambda: neardup.repeats(bad, tmp_path / "r.csv", summary=summary)):
        with pytest.raises(ValueError, match="no record was read as a document"):
            run()
    assert summary.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "s.json"]


def test_a_summary_path_that_touches_an_input_or_an_output_is_refused(corpus, tmp_path):
    path, _ = corpus
    before = path.read_bytes()
    with pytest.raises(ValueError, match="--summary .* is the input"):
        neardup.dedup(path, tmp_path / "out.jsonl", summary=path)
    with pytest.raises(ValueError, match="--summary .* is the input"):
        neardup.repeats(path, tmp_path / "r.csv", summary=path)
    with pytest.raises(ValueError, match="is --out's path too"):
        neardup.dedup(path, tmp_path / "out.jsonl", summary=tmp_path / "out.jsonl")
    with pytest.raises(ValueError, match="lies inside --out"):
        neardup.dedup([path, path.with_name("b.jsonl")], tmp_path / "copies",
                      summary=tmp_path / "copies" / "s.json")
    with pytest.raises(ValueError, match="summarizes a run on files"):
        neardup.dedup([AD, AD], summary=tmp_path / "s.json")
    assert path.read_bytes() == before and not (tmp_path / "out.jsonl").exists()


DICT_REPR = re.compile(r"\{'|\{\"|': |\[\{")


@pytest.mark.parametrize("args", [
    ["dedup", "-o", "{tmp}/out.jsonl"],
    ["dedup", "-o", "{tmp}/out.jsonl", "--unit", "line"],
    ["dedup", "-o", "{tmp}/out.jsonl", "--unit", "span", "--min-tokens", "3"],
    ["repeats", "-o", "{tmp}/r.csv"],
    ["repeats", "-o", "{tmp}/r.csv", "--unit", "sentences:1"]])
def test_the_printed_summary_is_sentences(corpus, tmp_path, capsys, args):
    path, lines = corpus
    argv = [a.format(tmp=tmp_path) for a in args]
    assert main([argv[0], str(path), "--id-field", "id", "-q", "--summary",
                 str(tmp_path / "s.json"), *argv[1:]]) == 0
    out = capsys.readouterr().out
    assert not DICT_REPR.search(out), out
    records = load(tmp_path / "s.json")["records"]
    if "--unit" in argv or argv[0] == "repeats":  # the JSON's numbers, in sentences
        reasons = [f"{records[what]} {what} (" + ", ".join(
            f"{n} {reason}" for reason, n in records[f"{what}_by_reason"].items()) + ")"
            for what in ("skipped", "failed")]
        assert out.splitlines()[0] == (f"read {records['read']} records: "
                                       f"{records['processed']} documents; "
                                       + "; ".join(reasons))
    else:
        assert out.splitlines()[:2] == [
            f"read {records['read']} records: {records['processed']} documents",
            "  skipped: 1 empty text"]
        assert (f"dedup: {records['written']} records written, {records['removed']} "
                f"documents removed (near-duplicates of a kept one)") in out.splitlines()
    if argv[0] == "repeats":
        assert out.splitlines()[-1] == f"listed {len(_read_csv(tmp_path / 'r.csv'))} " \
            f"repeated texts (most repeated first) in {tmp_path}/r.csv"
        assert out.splitlines()[1].startswith("lines: " if "--unit" not in argv else
                                              "windows of 1 sentence: ")
    if argv[1:] == ["-o", f"{tmp_path}/out.jsonl", "--unit", "line"]:
        units = [line for record in lines for line in _text_lines(record)]
        repeated = {u for u in units if units.count(u) > 1}
        assert (len(units), len(set(units)), len(repeated)) == (12, 6, 3)  # by hand
        assert ("lines: 12 seen (6 distinct texts, 3 of them repeated); 6 removed (keep "
                "first), 6 kept") in out.splitlines()
        assert (f"documents: {records['kept']} kept, {records['removed']} dropped (left with "
                f"fewer than 1 character once their repeated units were "
                f"removed)") in out.splitlines()


def _read_csv(path) -> list:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_repeats_prints_the_records_and_units_it_counted(corpus, tmp_path, capsys):
    """Without --summary too: repeats says what it read and found, every number named
    (it said only how many rows it wrote), each number counted here by hand."""
    path, lines = corpus
    assert main(["repeats", str(path), "--id-field", "id", "-q", "-o",
                 str(tmp_path / "r.csv")]) == 0
    out = capsys.readouterr().out.splitlines()
    e = expected_jsonl(lines)
    units = [line for record in lines for line in _text_lines(record)] + ["7"]
    repeated = {u for u in units if units.count(u) > 1}
    assert out[0] == (f"read {e['read']} records: {e['processed']} documents; 1 skipped (1 "
                      f"empty text); 2 failed (1 malformed JSON, 1 missing field 'text')")
    assert out[1] == (f"lines: {len(units)} seen ({len(set(units))} distinct texts, "
                      f"{len(repeated)} of them repeated); "
                      f"{len(units) - len(set(units))} a dedup would remove (keep first), "
                      f"{len(set(units))} kept")
    assert out[-1] == (f"listed {len(repeated)} repeated texts (most repeated first) in "
                       f"{tmp_path / 'r.csv'}")
    assert not any(DICT_REPR.search(line) for line in out)

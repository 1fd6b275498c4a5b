"""The CLI is the library: same results, clear errors, exit codes 0 / 1 / 2."""

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import neardup
from neardup.cli import main
from neardup.synthetic import planted_corpus

ROOT = Path(__file__).resolve().parents[2]
AD = ("Senior Python developer wanted for a fast growing fintech company in Milan. "
      "You will design data pipelines, review code and mentor two junior engineers. ")


@pytest.fixture(scope="module")
def jsonl_corpus(tmp_path_factory):
    corpus = planted_corpus(400, dup_fraction=0.1, similarity=(0.85, 1.0), exact_copies=5,
                            seed=2)
    path = tmp_path_factory.mktemp("in") / "docs.jsonl"
    with open(path, "w") as f:
        for doc_id, text in zip(corpus.ids, corpus.texts):
            f.write(json.dumps({"id": doc_id, "body": text}) + "\n")
    return path


def test_find_cli_equals_library_call(jsonl_corpus, tmp_path, capsys):
    options = dict(text_fields=("body",), id_field="id", threshold=0.8, shingle_kind="word",
                   shingle_size=1)
    library = neardup.find(jsonl_corpus, **options)
    code = main(["find", str(jsonl_corpus), "--text-field", "body", "--id-field", "id",
                 "-t", "0.8", "--shingle", "word", "--ngram", "1", "--out", str(tmp_path),
                 "--output-format", "parquet", "--quiet"])
    assert code == 0
    pairs = pq.read_table(tmp_path / "pairs.parquet")
    assert pairs.column("id_a").to_pylist() == library.pairs_table().column("id_a").to_pylist()
    assert pairs.column("jaccard").to_pylist() == library.pairs_table().column(
        "jaccard").to_pylist()
    assert library.counts["pairs"] >= 40  # planted pairs at J >= 0.85 and exact copies
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["pairs"] == library.counts["pairs"]
    assert summary["read"]["processed"] == 400
    out = capsys.readouterr().out
    assert "largest clusters" in out and "candidates" in out


def test_dedup_cli_removes_exactly_the_non_representatives(jsonl_corpus, tmp_path):
    out = tmp_path / "dedup.jsonl"
    code = main(["dedup", str(jsonl_corpus), "--text-field", "body", "--id-field", "id",
                 "-t", "0.8", "--shingle", "word", "--ngram", "1", "-o", str(out), "-q"])
    assert code == 0
    result = neardup.find(jsonl_corpus, text_fields=("body",), id_field="id", threshold=0.8,
                          shingle_kind="word", shingle_size=1)
    kept_ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    expected = [doc_id for doc_id, keep in zip(result.ids, result.representative) if keep]
    assert kept_ids == expected
    assert len(kept_ids) == 400 - result.counts["removable"]
    # the deduplicated copy has no near-duplicates left
    again = neardup.find(out, text_fields=("body",), id_field="id", threshold=0.8,
                         shingle_kind="word", shingle_size=1)
    assert again.counts["pairs"] == 0


def test_tune_prints_the_choice(capsys):
    assert main(["tune", "--threshold", "0.8", "--num-perm", "128"]) == 0
    out = capsys.readouterr().out
    assert "18 bands x 6 rows" in out and "steep point" in out  # P(0.8) >= 0.995
    assert main(["tune", "-t", "0.5", "--num-perm", "48", "--bands", "16", "--rows", "3",
                 "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert (plan["bands"], plan["rows"], plan["chosen"]) == (16, 3, "user")


@pytest.mark.parametrize("argv, message", [
    (["find", "/no/such/path"], "/no/such/path"),
    (["find", "{csv}", "--text-field", "nope"], "nope"),
    (["find", "{csv}", "--threshold", "1.5"], "threshold"),
    (["tune", "-t", "0.5", "--num-perm", "8", "--bands", "4", "--rows", "4"], "fit"),
])
def test_usage_errors_exit_2_and_name_the_problem(tmp_path, capsys, argv, message):
    csv_path = tmp_path / "a.csv"
    csv_path.write_text("id,text\n1,hello world\n")
    argv = [a.replace("{csv}", str(csv_path)) for a in argv]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_option_is_a_usage_error_from_argparse():
    with pytest.raises(SystemExit) as exc:
        main(["find", "x", "--shingle", "sentence"])
    assert exc.value.code == 2


@pytest.mark.parametrize("argv, said", [
    (["find", "x", "--thresold", "0.5"],
     "unrecognized arguments: --thresold (did you mean --threshold?) 0.5"),
    (["find", "x", "--output-formt=csv"],
     "unrecognized arguments: --output-formt=csv (did you mean --output-format?)"),
    (["find", "x", "--zzzz"], "unrecognized arguments: --zzzz\n"),
    (["index", "build", "x", "-o", "i", "--num-prem", "64"],
     "unrecognized arguments: --num-prem (did you mean --num-perm?) 64"),
    (["find", "x", "--output-format", "jsnol"],
     "invalid choice: 'jsnol' (choose from 'csv', 'jsonl', 'parquet'); did you mean "
     "'jsonl'?"),
    (["find", "x", "--format", "parqet"], "did you mean 'parquet'?"),
    (["find", "x", "--engine", "sprak"], "did you mean 'spark'?"),
    (["fnd", "x"], "invalid choice: 'fnd' (choose from 'find', 'dedup', 'index', 'repeats', "
     "'contamination', 'report', 'evaluate', 'tune', 'completion'); did you mean 'find'?"),
])
def test_a_misspelt_option_command_or_value_gets_the_closest_suggested(capsys, argv, said):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert said in capsys.readouterr().err


def test_a_misspelt_unit_gets_the_closest_suggested(tmp_path, capsys):
    corpus = tmp_path / "d.jsonl"
    corpus.write_text('{"text": "a b c"}\n')
    assert main(["dedup", str(corpus), "-o", str(tmp_path / "o.jsonl"), "--unit", "lnie"]) == 2
    assert capsys.readouterr().err == (
        "neardup: error: unit must be one of ('document', 'line', 'paragraph', "
        "'sentences:N', 'span'), got 'lnie'; did you mean 'line'?\n")


@pytest.mark.parametrize("argv, named", [
    (["find", "nosuch.jsonl"], "nosuch.jsonl"),
    (["find", "nosuch/"], "nosuch/"),
    (["dedup", "nosuch.jsonl", "-o", "o.jsonl"], "nosuch.jsonl"),
    (["repeats", "nosuch.jsonl"], "nosuch.jsonl"),
    (["evaluate", "nosuch.jsonl"], "nosuch.jsonl"),
    (["index", "build", "nosuch.jsonl", "-o", "idx"], "nosuch.jsonl"),
])
def test_a_missing_input_is_named_plainly(tmp_path, capsys, monkeypatch, argv, named):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err == f"neardup: error: {named}: no such file or directory\n"


def test_an_unreadable_input_is_a_usage_error_an_unwritable_output_a_failure(
        tmp_path, capsys, monkeypatch):
    """PermissionError (root reads every file, so the library's call is replaced): on an
    input, exit 2 naming it; on anything else (an output), exit 1 naming it."""
    import errno

    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"text": "a b c"}\n')
    for denied, code, said in ((corpus, 2, "error"), (tmp_path / "out", 1, "failed")):
        def refuse(*args, denied=denied, **kwargs):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(denied))

        monkeypatch.setattr(neardup.api, "find", refuse)
        assert main(["find", str(corpus), "-o", str(tmp_path / "out")]) == code
        assert capsys.readouterr().err == f"neardup: {said}: {denied}: permission denied\n"


def test_bad_input_is_accounted_for_and_the_summary_adds_up(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.txt").write_text(AD * 3)
    (root / "b.txt").write_text(AD * 3 + "Apply now.")
    (root / "empty.txt").write_text("")
    (root / "binary.bin").write_bytes(b"\x00\x01\x02\xff" * 100)
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"))
    result = neardup.find(root, threshold=0.8)
    read = result.read_report
    assert read["records_seen"] == 5
    assert read["skipped"] == {"binary file": 1, "not UTF-8": 1}
    assert read["processed"] == 3 == result.counts["documents"]
    assert result.counts["too_few_shingles"] == 1  # the empty file: set aside, never paired
    assert result.counts["pairs"] == 1 and result.ids[result.pair_i[0]] == "a.txt"


def test_broken_csv_row_and_duplicate_ids(tmp_path):
    path = tmp_path / "ads.csv"
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "title", "description"])
        writer.writerow(["1", "Python dev", AD + '\nMulti-line, with "quotes".'])
        writer.writerow(["2", "Python dev", AD + '\nMulti-line, with "quotes"!'])
        writer.writerow(["2", "Other", "Something else entirely, nothing alike at all"])
        f.write("3,only two fields\n")
    result = neardup.find(path, text_fields=("title", "description"), id_field="id",
                          threshold=0.8)
    read = result.read_report
    assert read["records_seen"] == 4 and read["processed"] == 3
    assert sum(read["failed"].values()) == 1
    assert any("duplicate id" in p["reason"] for p in read["problems"])
    assert result.ids == ["1", "2", "2#2"]
    assert result.counts["pairs"] == 1


def test_stdin_lines_through_the_real_entry_point(tmp_path):
    lines = "john smith\njohn smyth\nmary jones\n\njon smith\n"
    proc = subprocess.run([sys.executable, "-m", "neardup.cli", "find", "-", "--shingle", "char",
                           "-k", "2", "--min-shingles", "1", "-t", "0.5", "--quiet",
                           "--out", str(tmp_path)], input=lines, text=True,
                          capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    pairs = list(csv.DictReader(open(tmp_path / "pairs.csv")))
    found = {(p["id_a"], p["id_b"]) for p in pairs}
    assert ("1", "2") in found and ("1", "5") in found
    assert all(float(p["jaccard"]) >= 0.5 for p in pairs)


@pytest.mark.parametrize("family", ["oph", "superminhash"])
def test_family_option_reaches_the_library(jsonl_corpus, tmp_path, family):
    library = neardup.find(jsonl_corpus, text_fields=("body",), id_field="id", threshold=0.8,
                           shingle_kind="word", shingle_size=1, method="lsh", family=family)
    code = main(["find", str(jsonl_corpus), "--text-field", "body", "--id-field", "id",
                 "-t", "0.8", "--shingle", "word", "--ngram", "1", "--method", "lsh",
                 "--family", family, "--out", str(tmp_path), "--quiet"])
    assert code == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["config"]["family"] == family
    assert summary["counts"]["pairs"] == library.counts["pairs"] >= 40


def test_the_docs_the_help_names_exist():
    from neardup import cli

    named = re.findall(r"docs/[\w.-]+\.md", cli.build_parser().format_help()
                       + " ".join(a.format_help() for a in _subparsers(cli.build_parser())))
    assert "docs/spark.md" in named
    for path in named:
        assert (ROOT / path).is_file(), path


def _subparsers(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.values()


def test_what_a_run_shares_holds_no_absolute_path(tmp_path, monkeypatch, capsys):
    """D25 (issue 22): summary.json, manifest.json and the report name the inputs as the
    command line gave them, never by this machine's absolute path."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for k in range(3):
        (docs / f"a{k}.txt").write_text(AD + f"variant {k}\n")
    monkeypatch.chdir(tmp_path)
    runs = {"res": ["--report", "r.html"], "chunked": ["--memory-limit", "500M"]}
    for out, extra in runs.items():
        assert main(["find", "docs", "--out", out, "-t", "0.5", "--shingle", "word",
                     "-k", "2", "-q", *extra]) == 0
        summary = json.loads((tmp_path / out / "summary.json").read_text())
        assert [i["path"] for i in summary["read"]["inputs"]] == ["docs"]
    assert main(["report", "res", "-o", "again.html", "--root", "docs"]) == 0
    capsys.readouterr()
    absolute = {str(tmp_path), os.path.realpath(tmp_path)}
    for shared in ("res/summary.json", "res/manifest.json", "r.html", "chunked/summary.json",
                   "chunked/manifest.json", "again.html"):
        text = (tmp_path / shared).read_text(encoding="utf-8")
        assert not [a for a in absolute if a in text], shared
    assert "docs (dir)" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_band_choice_short_of_the_floor_is_warned_on_stderr_and_in_the_summary(tmp_path):
    """D18 (issue 22): `find c.jsonl --shingle word -t 0.001 --method lsh` chose 128 x 1,
    P(t) = 0.12, silently; it now says so on stderr and in summary.json's plan."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": AD + f"line {k}"}) + "\n" for k in range(4)))

    def find(threshold):
        out = tmp_path / f"out-{threshold}"
        run = subprocess.run([sys.executable, "-m", "neardup.cli", "find", str(corpus),
                              "--shingle", "word", "-t", str(threshold), "--method", "lsh",
                              "-q", "--out", str(out)], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stderr, json.loads((out / "summary.json").read_text())["plan"]

    stderr, plan = find(0.001)
    assert (plan["bands"], plan["rows"]) == (128, 1)
    warned = [line for line in stderr.splitlines() if line.startswith("neardup: warning: ")]
    assert len(warned) == 1 and "P(t) = 0.120, below 0.995" in warned[0]
    assert "--method exact" in warned[0] and plan["warning"] in warned[0]
    stderr, plan = find(0.8)  # 18 x 6 reaches the floor: nothing to warn about
    assert "warning" not in stderr and "warning" not in plan

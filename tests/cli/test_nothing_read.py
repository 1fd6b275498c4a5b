"""A run where every record fails is an error (exit 2) and writes nothing.

``dedup corpus.jsonl --text-field body -o corpus.dedup.jsonl`` (no field ``body``) said
"failed: ... missing field 'body'", exited 0 and wrote the input again under the output's
name; ``find`` wrote a results folder. Now every command refuses such a read, before
anything is written, naming the reasons, the fields the records have and the format
the content looks like; ``--allow-empty`` runs on.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from neardup.cli import main

RECORDS = [{"id": f"d{k}", "text": f"shared words of every record and then {k % 3}"}
           for k in range(30)]
FIELDS = "fields are id, text"


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


def digest(folder) -> dict:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
            for name in sorted(os.listdir(folder)) if (folder / name).is_file()}


@pytest.mark.parametrize("args", [
    ["dedup"], ["dedup", "--unit", "line"], ["dedup", "--unit", "span"],
    ["dedup", "--unit", "line", "--memory-limit", "512M"],
    ["dedup", "--unit", "paragraph", "--memory-limit", "512M"],
])
def test_dedup_with_a_wrong_text_field_exits_2_and_writes_no_copy(corpus, tmp_path, capsys,
                                                                  args):
    out = tmp_path / "corpus.dedup.jsonl"
    assert main([*args, str(corpus), "--text-field", "body", "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"30 missing field 'body'; {FIELDS}" in err and "--allow-empty" in err
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["corpus.jsonl"]


def test_allow_empty_runs_on_and_copies_every_record(corpus, tmp_path, capsys):
    out = tmp_path / "corpus.dedup.jsonl"
    assert main(["dedup", str(corpus), "--text-field", "body", "-o", str(out), "-q",
                 "--allow-empty"]) == 0
    assert out.read_bytes() == corpus.read_bytes()
    assert f"failed: 30 missing field 'body'; {FIELDS}" in capsys.readouterr().out


def test_find_with_a_wrong_field_writes_no_results_folder(corpus, tmp_path, capsys):
    for option in ("--text-field", "--id-field"):
        for extra in ([], ["--memory-limit", "512M"]):
            out = tmp_path / "results"
            assert main(["find", str(corpus), option, "body", "-o", str(out), "-q",
                         *extra]) == 2
            assert f"30 missing field 'body'; {FIELDS}" in capsys.readouterr().err
            assert not out.exists()


def test_to_standard_output_nothing_is_written(corpus):
    for args in (["dedup", "-o", "-"], ["dedup", "--unit", "line", "-o", "-"],
                 ["find", "-o", "-"], ["repeats"]):
        run = subprocess.run([sys.executable, "-m", "neardup", args[0], str(corpus),
                              "--text-field", "body", *args[1:], "-q"],
                             capture_output=True, text=True)
        assert run.returncode == 2, args
        assert run.stdout == "" and "missing field 'body'" in run.stderr


def test_an_index_is_not_added_to(corpus, tmp_path, capsys):
    index = tmp_path / "idx"
    assert main(["index", "build", str(corpus), "--id-field", "id", "-o", str(index),
                 "-q"]) == 0
    before = digest(index)
    assert main(["dedup", str(corpus), "--against", str(index), "--add", "--text-field",
                 "body", "-o", str(tmp_path / "kept.jsonl"), "-q"]) == 2
    assert f"missing field 'body'; {FIELDS}" in capsys.readouterr().err
    assert digest(index) == before and not (tmp_path / "kept.jsonl").exists()
    assert main(["index", "build", str(corpus), "--text-field", "body", "-o",
                 str(tmp_path / "idx2"), "-q"]) == 2
    assert not (tmp_path / "idx2").exists()


@pytest.mark.parametrize("name, data, said", [
    ("table.jsonl", "id,text\n" + "".join(f"d{k},words {k}\n" for k in range(5)),
     "6 malformed JSON; did you mean --format csv?"),
    ("lines.json", "".join(json.dumps(r) + "\n" for r in RECORDS),
     "1 malformed JSON file: Extra data; did you mean --format jsonl?"),
])
def test_a_file_in_another_format_than_its_name_is_named(tmp_path, capsys, name, data, said):
    path = tmp_path / name
    path.write_text(data)
    out = tmp_path / ("copy" + path.suffix)
    assert main(["dedup", str(path), "-o", str(out), "-q"]) == 2
    assert said in capsys.readouterr().err
    assert not out.exists()

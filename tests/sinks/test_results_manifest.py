"""read_results and report take only a manifest a run writes (N3).

A manifest that listed a part twice was read with its rows doubled, one that named
``../outside/p.csv`` or an absolute path read that file, one with ``"tables": {}``
read nothing, and a table with no files raised a raw ArrowInvalid. Each is a
ValueError naming the manifest and what is wrong, before any table is read.
"""

from __future__ import annotations

import hashlib
import json

import pytest

import neardup
from neardup import sinks
from neardup.cli import main

TEXTS = [f"the same words in every copy of document {k % 4} here" for k in range(12)]


@pytest.fixture
def results(tmp_path):
    for layout in ("single", "parts"):
        neardup.find(TEXTS, out=tmp_path / layout, layout=layout)
    return tmp_path


def rewrite(folder, edit) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))


def entry_of(path, name: str, rows: int | None = None) -> dict:
    data = path.read_bytes()
    entry = {"name": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return entry if rows is None else {**entry, "rows": rows}


def refused(folder, capsys, said: str) -> None:
    with pytest.raises(ValueError) as raised:
        neardup.read_results(folder)
    message = str(raised.value)
    assert message.startswith(f"{folder / 'manifest.json'} is not a neardup manifest: ")
    assert said in message
    assert main(["report", str(folder), "-o", str(folder.parent / "r.html")]) == 2
    assert said in capsys.readouterr().err
    assert not (folder.parent / "r.html").exists()


def test_the_true_manifests_are_read(results):
    for layout in ("single", "parts"):
        read = neardup.read_results(results / layout)
        assert read["pairs"].num_rows == read.summary["counts"]["pairs"] == 12


def test_a_part_listed_twice_is_refused(results, capsys):
    folder = results / "parts"

    def twice(manifest):
        table = manifest["tables"]["pairs"]
        table["files"] = table["files"] * 2
        table["rows"] *= 2
    rewrite(folder, twice)
    refused(folder, capsys, "table 'pairs': 'pairs/part-00000.csv' is listed twice")


def test_a_file_listed_twice_among_the_files_is_refused(results, capsys):
    folder = results / "single"
    rewrite(folder, lambda m: m["files"].append(dict(m["files"][0])))
    refused(folder, capsys, "file 'pairs.csv' is listed twice")


@pytest.mark.parametrize("where", ["../outside/p.csv", "absolute"])
def test_a_name_outside_the_folder_is_refused(results, capsys, where):
    outside = results / "outside"
    outside.mkdir()
    planted = outside / "p.csv"
    planted.write_bytes((results / "single" / "pairs.csv").read_bytes())
    name = str(planted) if where == "absolute" else where

    def elsewhere(manifest):
        manifest["files"].append(entry_of(planted, name, manifest["tables"]["pairs"]["rows"]))
        manifest["tables"]["pairs"]["files"] = [name]
    folder = results / "single"
    rewrite(folder, elsewhere)
    refused(folder, capsys, f"file {name!r} is not a plain relative name under the folder")


def test_no_table_or_a_table_without_files_is_refused(results, capsys):
    folder = results / "single"
    original = (folder / "manifest.json").read_text()
    rewrite(folder, lambda m: m.update(tables={}))
    refused(folder, capsys, "it lists no table")
    (folder / "manifest.json").write_text(original)
    rewrite(folder, lambda m: m["tables"]["pairs"].update(files=[], rows=0))
    refused(folder, capsys, "table 'pairs' lists no file")


def test_rows_that_do_not_add_up_are_refused(results, capsys):
    folder = results / "single"
    rewrite(folder, lambda m: m["tables"]["pairs"].update(rows=7))
    refused(folder, capsys, "table 'pairs' has 7 rows but its files hold 12")


def test_pairs_that_are_not_the_summarys_count_are_refused(results):
    """Rows doubled consistently in the manifest (the part again under another name)
    still differ from the summary's count of pairs."""
    folder = results / "parts"
    part = folder / "pairs" / "part-00000.csv"
    (folder / "pairs" / "again.csv").write_bytes(part.read_bytes())

    def doubled(manifest):
        assert manifest["tables"]["pairs"] == {"rows": 12, "files": ["pairs/part-00000.csv"]}
        manifest["files"].append(entry_of(part, "pairs/again.csv", 12))
        manifest["tables"]["pairs"] = {"rows": 24, "files": ["pairs/part-00000.csv",
                                                             "pairs/again.csv"]}
    rewrite(folder, doubled)
    with pytest.raises(ValueError, match="pairs files hold 24 rows where summary.json "
                                         "counts 12 pairs"):
        neardup.read_results(folder)
    assert sinks.read_manifest(folder)["tables"]["pairs"]["rows"] == 24  # files intact

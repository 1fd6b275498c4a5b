"""What dedup prints: sentences with the true counts, never a Python dict."""

from __future__ import annotations

import json

from neardup.cli import main

TEXT = "the same advert for a job posted again and again by one agency"


def write(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_the_dedup_summary_is_sentences_with_true_counts(tmp_path, capsys):
    a = write(tmp_path / "a.jsonl", [{"text": TEXT}] * 3 + [{"text": "something else"},
                                                            {"body": "no text field"}])
    b = write(tmp_path / "b.jsonl", [{"text": TEXT}, {"text": "one more thing, different"}])
    assert main(["dedup", a, "-o", str(tmp_path / "a.dd.jsonl"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "{'" not in out and "dedup: {" not in out
    assert ("dedup: 3 records written, 2 documents removed (near-duplicates of a kept one)"
            in out.splitlines())
    assert len((tmp_path / "a.dd.jsonl").read_text().splitlines()) == 3
    copies = tmp_path / "copies"
    assert main(["dedup", a, b, "-o", str(copies), "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("dedup: 4 records written, 3 documents removed (near-duplicates of a "
                     "kept one)")
    assert lines[at + 1:at + 3] == [f"  {a} -> {copies / 'a.jsonl'}: 3 written, 2 removed",
                                    f"  {b} -> {copies / 'b.jsonl'}: 1 written, 1 removed"]


def test_find_to_standard_output_says_so(tmp_path, run_cli):
    path = write(tmp_path / "a.jsonl", [{"text": TEXT}] * 2)
    run = run_cli("find", path, "-o", "-", "-q")
    assert run.returncode == 0 and "written to standard output" in run.stderr.splitlines()

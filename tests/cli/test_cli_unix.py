"""The CLI as a Unix citizen: results to stdout, logs to stderr, pipes, --version, help."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys

import pytest

import neardup
from neardup.cli import build_parser, main

AD = "the same job advert, posted again and again by one agency, apply online today"


@pytest.fixture
def lines(tmp_path):
    path = tmp_path / "ads.txt"
    path.write_text((AD + "\n") * 30 + "".join(f"{AD} {k}\n" for k in range(5))
                    + "something else entirely, about the weather\n")
    return path


def test_pairs_to_stdout_read_by_a_csv_reader_and_by_head(lines, run_cli):
    run = run_cli("find", str(lines), "--out", "-")
    assert run.returncode == 0
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    library = neardup.find(str(lines))
    assert len(rows) == library.counts["pairs"] == 35 * 34 // 2
    assert [(r["doc_a"], r["doc_b"]) for r in rows[:3]] == [("0", "1"), ("0", "2"), ("0", "3")]
    assert "pairs 595 document pairs" in run.stderr  # the summary goes to stderr
    head = subprocess.run(f"{sys.executable} -m neardup find {lines} --out - "
                          f"--output-format jsonl | head -2", shell=True, capture_output=True,
                          text=True)
    assert head.stdout.count("\n") == 2 and head.stdout.startswith('{"id_a": "1"')
    assert "Traceback" not in head.stderr and "Broken" not in head.stderr


def test_version_python_m_and_help_with_examples(capsys, run_cli):
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"neardup {neardup.__version__}"
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, sub in commands.items():
        text = sub.format_help()
        assert "examples:" in text and f"neardup {name}" in text, name
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"{name} {action.option_strings} has no help"


def test_a_path_after_a_bare_code_flag_stays_a_path(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    body = "def f(a, b):\n    return a + b * 2 - a / b\n" * 20
    (repo / "a.py").write_text(body)
    (repo / "b.py").write_text(body + "# a comment only\n")
    assert main(["find", "--code", str(repo), "-q", "-t", "0.9"]) == 0
    assert "pairs 1 document pairs" in capsys.readouterr().out
    assert main(["find", "--code=python", str(repo), "-q", "-t", "0.9"]) == 0
    assert main(["find", str(repo), "--code", "python", "-q", "-t", "0.9"]) == 0


def test_a_short_repr():
    result = neardup.find_texts([AD] * 2000, threshold=0.8)
    text = repr(result)
    assert len(text) < 200 and "1,999,000 pairs" in text


@pytest.mark.parametrize("args", [["find", "-o", "-"], ["repeats"], ["dedup", "-o", "-"]])
def test_a_closed_standard_output_is_said_so_by_every_command(lines, run_cli, tmp_path, args):
    """N1: `find c.jsonl -o - >&-` raised AttributeError ('NoneType' object has no
    attribute 'buffer'); like dedup, it is "standard output is closed", exit 1, before any
    reading."""
    run = run_cli(args[0], str(lines), *args[1:], "-q", preexec_fn=lambda: os.close(1))
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith("neardup: failed: standard output is closed: ")
    assert "AttributeError" not in run.stderr and "Traceback" not in run.stderr

"""Outputs never touch inputs; a results folder is one complete run; the report reads only
what the run read; CSV cells cannot start a formula; pipes, signals and bad options end
cleanly. Each test is a repro from the outside check (issue 12)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import neardup
from neardup import sinks
from neardup.cli import main

AD = "the same job advert, posted again and again by one agency, apply online today"
NEARDUP = [sys.executable, "-m", "neardup.cli"]


@pytest.fixture
def ads(tmp_path):
    path = tmp_path / "ads.jsonl"
    rows = [{"id": f"ad{k}", "text": AD} for k in range(30)]
    rows += [{"id": f"v{k}", "text": AD + f" variant {k}"} for k in range(5)]
    rows += [{"id": "solo", "text": "a different text entirely, about the weather in spring"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_no_output_may_touch_an_input(ads, tmp_path, capsys):
    before = ads.read_bytes()
    assert main(["find", str(ads), "--report", str(ads), "-q"]) == 2  # was: input overwritten
    assert ads.read_bytes() == before
    assert "--report" in capsys.readouterr().err
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text(AD)
    for args in (["--out", str(folder / "out")], ["--out", str(folder)],
                 ["--memory-limit", "64M", "--work-dir", str(folder / "spill")]):
        assert main(["find", str(folder), "-q", *args]) == 2, args
        assert "choose a path outside the inputs" in capsys.readouterr().err
    link = tmp_path / "link.jsonl"
    link.symlink_to(ads)
    assert main(["dedup", str(ads), "-o", str(link), "-q"]) == 2
    assert ads.read_bytes() == before and link.is_symlink()
    assert main(["evaluate", str(ads), "--json", str(ads), "-q"]) == 2
    assert ads.read_bytes() == before


def test_a_second_run_replaces_the_first_whole(ads, tmp_path):
    out = tmp_path / "out"
    assert main(["find", str(ads), "--id-field", "id", "--out", str(out),
                 "--output-format", "parquet", "-q"]) == 0
    other = tmp_path / "other.txt"
    other.write_text("one line of text here\nanother line of text here\n")
    assert main(["find", str(other), "--out", str(out), "-q"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["candidates.csv", "clusters.csv", "documents.csv", "identical.csv",
                            "pairs.csv", "summary.json", "timings.json", "manifest.json"])
    manifest = sinks.read_manifest(out)
    assert manifest["output_format"] == "csv"
    assert {e["name"]: e.get("rows") for e in manifest["files"]}["documents.csv"] == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.neardup-")]
    html = tmp_path / "r.html"
    assert main(["report", str(out), "-o", str(html)]) == 0
    assert "other.txt" in html.read_text() and "ads.jsonl" not in html.read_text()


def test_a_folder_with_foreign_files_is_never_replaced(ads, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    assert main(["find", str(ads), "--out", str(out), "-q"]) == 2
    assert "neardup did not write (notes.txt)" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_report_refuses_an_incomplete_or_altered_folder(ads, tmp_path, capsys):
    out = tmp_path / "out"
    neardup.find(str(ads), id_field="id", out=out)
    (out / "manifest.json").rename(tmp_path / "manifest.json")
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    (tmp_path / "manifest.json").rename(out / "manifest.json")
    with open(out / "pairs.csv", "a") as f:
        f.write('"x","y",1,1,0,1\n')
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 2
    assert "pairs.csv differs" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def corpus_for_kills(tmp_path):
    path = tmp_path / "copies.txt"
    path.write_text((AD + "\n") * 2000 + "".join(f"{AD} {k}\n" for k in range(300)))
    return path


@pytest.mark.slow  # runs killed at random times: about 10 s
def test_killed_runs_leave_the_previous_or_the_new_complete_folder(tmp_path):
    """SIGKILL at random moments while `find --out` rewrites a folder (2.4 M pairs)."""
    corpus = corpus_for_kills(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    runs = {0.9: "parquet", 0.8: "csv"}

    def command(threshold):
        return [*NEARDUP, "find", str(corpus), "--out", str(out), "-t", str(threshold),
                "--output-format", runs[threshold], "--method", "lsh", "-q"]

    started = time.perf_counter()
    assert subprocess.run(command(0.9), env=env, capture_output=True).returncode == 0
    whole = time.perf_counter() - started
    rng = random.Random(7)
    for attempt in range(8):
        threshold = (0.8, 0.9)[attempt % 2]
        process = subprocess.Popen(command(threshold), env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, whole * 1.1))
        process.send_signal(signal.SIGKILL)
        process.wait()
        manifest = sinks.read_manifest(out)  # complete: every file as its run wrote it
        summary = json.loads((out / "summary.json").read_text())
        fmt = runs[summary["config"]["threshold"]]
        assert manifest["output_format"] == fmt
        assert (out / f"pairs.{fmt}").exists() and not (out / "pairs.jsonl").exists()
    assert subprocess.run(command(0.8), env=env, capture_output=True).returncode == 0
    assert not [p for p in tmp_path.iterdir() if ".neardup-" in p.name]  # swept
    with open(out / "pairs.csv", "rb") as f:
        rows = sum(1 for _ in f) - 1
    assert rows == json.loads((out / "summary.json").read_text())["counts"]["pairs"] > 2_000_000


def test_the_report_reads_only_files_under_the_input_root(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-TOKEN " + AD)
    root = tmp_path / "root"
    root.mkdir()
    (root / "inside.txt").write_text(AD + " inside")
    (root / "inside2.txt").write_text(AD + " inside too")
    (root / "out.txt").symlink_to(secret)
    ids = (str(secret), "../secret.txt", "out.txt", "inside.txt", "inside2.txt")
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": doc_id, "text": f"{AD} {k}"}) + "\n"
                            for k, doc_id in enumerate(ids)))
    out = tmp_path / "out"
    neardup.find(str(data), id_field="id", out=out)
    html = tmp_path / "r.html"
    assert main(["report", str(out), "-o", str(html), "--root", str(root)]) == 0
    page = html.read_text()
    assert "SECRET-TOKEN" not in page
    assert "inside too" in page  # the files under the root are read


def test_csv_cells_that_would_start_a_formula_are_escaped(tmp_path):
    ids = ["=HYPERLINK(1)", "+1", "-cmd", "@SUM(A1)", "\tx", "plain"]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": i, "text": AD}) + "\n" for i in ids))
    neardup.find(str(data), id_field="id", out=tmp_path / "csv")
    pairs = (tmp_path / "csv" / "pairs.csv").read_text()
    for doc_id in ids[:4]:
        assert f'"\'{doc_id}"' in pairs and f'"{doc_id}"' not in pairs
    assert '"plain"' in pairs
    neardup.find(str(data), id_field="id", out=tmp_path / "jsonl", output_format="jsonl")
    first = json.loads((tmp_path / "jsonl" / "pairs.jsonl").read_text().split("\n")[0])
    assert first["id_a"] == "=HYPERLINK(1)"  # machines' formats stay raw
    neardup.find(str(data), id_field="id", out=tmp_path / "raw", escape_formulas=False)
    assert '"=HYPERLINK(1)"' in (tmp_path / "raw" / "pairs.csv").read_text()


@pytest.mark.slow  # six CLI processes: about 4 s
def test_pipes_signals_and_bad_options_end_cleanly(ads, tmp_path):
    for args in (["tune", "-t", "0.8"], ["find", str(ads), "--top", "50"]):
        shell = subprocess.run(" ".join([*NEARDUP, *args]) + " | head -1", shell=True,
                               capture_output=True, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert "Traceback" not in shell.stderr and "BrokenPipe" not in shell.stderr
    bad = subprocess.run([*NEARDUP, "find", str(ads), "--rows", "0"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "rows must be a positive integer" in bad.stderr
    warned = subprocess.run([*NEARDUP, "find", str(ads), "-t", "0.7", "--bands", "5",
                             "--rows", "20", "-q"], capture_output=True, text=True)
    assert warned.returncode == 0 and "P(t) = 0.004" in warned.stderr
    into_file = subprocess.run([*NEARDUP, "find", str(ads), "--out", str(ads) + "/x", "-q"],
                               capture_output=True, text=True)
    assert into_file.returncode in (1, 2) and str(ads) in into_file.stderr


def test_sigterm_removes_the_spill_folder(tmp_path):
    corpus = tmp_path / "many.txt"
    corpus.write_text("".join(f"line {k} of a long generated corpus with words {k % 97} "
                              f"and more words {k % 89}\n" for k in range(200_000)))
    work = tmp_path / "work"
    work.mkdir()
    process = subprocess.Popen([*NEARDUP, "find", str(corpus), "--memory-limit", "1G",
                                "--work-dir", str(work), "--out", str(tmp_path / "out")],
                               stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not any(work.iterdir()):
        time.sleep(0.05)
    assert any(work.iterdir()), "the run never spilled"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM
    assert "terminated" in err
    assert not any(work.iterdir()) and not (tmp_path / "out").exists()


def test_dedup_into_an_existing_folder_gives_exactly_this_runs_copy(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for k in range(6):
        (corpus / f"ad{k}.txt").write_text(AD + f" {k}" * (k % 2))
    (corpus / "other.txt").write_text("a different text entirely, about the weather in spring")
    out = tmp_path / "o"
    assert main(["dedup", str(corpus), "-o", str(out), "-t", "0.99", "-q"]) == 0
    first = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert main(["dedup", str(corpus), "-o", str(out), "-t", "0.5", "-q"]) == 0
    second = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert len(second) == 2 < len(first)  # was: the union of both runs
    assert not [p for p in tmp_path.iterdir() if ".neardup-" in p.name]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    assert main(["dedup", str(corpus), "-o", str(mine), "-q"]) == 2
    assert "neardup did not write" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["keep.txt"]


# ---------------------------------------------------------------- the parts layout


@pytest.fixture(scope="module")
def planted():
    """A run with every table non-trivial: planted pairs, identical copies, and ids a
    spreadsheet would run (escaped in CSV alike in both layouts)."""
    from neardup.synthetic import planted_corpus

    c = planted_corpus(400, dup_fraction=0.1, exact_copies=12, seed=4)
    ids = [("=" if k % 7 == 0 else "") + i for k, i in enumerate(c.ids)]
    return neardup.find_texts(list(c.texts), ids, shingle_kind="word", shingle_size=1,
                              threshold=0.6, method="lsh")


@pytest.mark.parametrize("fmt", sinks.OUTPUT_FORMATS)
def test_parts_layout_holds_the_single_layouts_rows_in_order(planted, tmp_path, monkeypatch,
                                                             manifest_is_true, fmt):
    monkeypatch.setattr(sinks, "PART_ROWS", 37)  # several parts a table
    sinks.write_result(planted, tmp_path / "single", fmt)
    sinks.write_result(planted, tmp_path / "parts", fmt, layout="parts")
    single, parts = (neardup.read_results(tmp_path / k) for k in ("single", "parts"))
    assert (single.layout, parts.layout) == ("single", "parts")
    names = ["pairs", "identical", "clusters", "documents", "candidates"]
    assert list(single.tables) == list(parts.tables) == names
    for name in names:
        assert parts[name].to_pylist() == single[name].to_pylist(), name
        files = parts.manifest["tables"][name]["files"]
        assert files == [f"{name}/{sinks.part_name(k, fmt)}" for k in range(len(files))]
        assert len(files) == -(-single[name].num_rows // 37)
        if fmt == "parquet":  # the local tables themselves, types and all
            assert parts[name].equals(getattr(planted, f"{name}_table")()), name
    assert parts["pairs"].num_rows == planted.counts["pairs"] > 37
    if fmt == "csv":
        assert any(i.startswith("'=") for i in parts["documents"].column("id").to_pylist())
    assert parts.summary == single.summary == json.loads(
        (tmp_path / "single" / "summary.json").read_text())
    manifest = manifest_is_true(tmp_path / "parts")
    assert manifest["tables"]["pairs"]["rows"] == planted.counts["pairs"]
    manifest_is_true(tmp_path / "single")
    sinks.read_manifest(tmp_path / "parts")  # the check every file gets


def test_an_empty_table_is_one_part_with_its_columns(tmp_path, manifest_is_true):
    result = neardup.find_texts(["one text about the weather in spring",
                                 "another about the price of bread today"], threshold=0.9)
    for fmt in sinks.OUTPUT_FORMATS:
        sinks.write_result(result, tmp_path / fmt, fmt, layout="parts")
        manifest = manifest_is_true(tmp_path / fmt)
        assert manifest["tables"]["pairs"] == {"rows": 0, "files": [f"pairs/part-00000.{fmt}"]}
        read = neardup.read_results(tmp_path / fmt)
        assert read["pairs"].num_rows == 0
        if fmt != "jsonl":  # an empty JSON Lines file has no columns to name
            assert read["pairs"].column_names == result.pairs_table().column_names


def test_a_changed_or_missing_part_is_refused(planted, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sinks, "PART_ROWS", 100)
    out = tmp_path / "out"
    sinks.write_result(planted, out, "csv", layout="parts")
    part = out / "documents" / "part-00001.csv"
    part.write_bytes(part.read_bytes().replace(b'"ok"', b'"OK"', 1))
    with pytest.raises(ValueError, match="documents/part-00001.csv differs"):
        neardup.read_results(out)
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 2
    assert "documents/part-00001.csv differs" in capsys.readouterr().err
    part.unlink()
    with pytest.raises(ValueError, match="documents/part-00001.csv is listed .* but missing"):
        neardup.read_results(out, tables=["documents"])
    assert neardup.read_results(out, tables=["pairs"])["pairs"].num_rows > 0  # read: checked


def test_layouts_replace_each_other_whole_and_cli_chooses(ads, tmp_path, capsys):
    out = tmp_path / "out"
    single = sorted(["candidates.csv", "clusters.csv", "documents.csv", "identical.csv",
                     "pairs.csv", "summary.json", "timings.json", "manifest.json"])
    assert main(["find", str(ads), "--out", str(out), "--layout", "parts", "-q"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["candidates", "clusters", "documents", "identical", "pairs", "summary.json",
         "timings.json", "manifest.json"])
    assert (out / "pairs" / "part-00000.csv").is_file()
    assert main(["find", str(ads), "--out", str(out), "-q"]) == 0  # auto: single, locally
    assert sorted(p.name for p in out.iterdir()) == single
    assert main(["find", str(ads), "--out", "-", "--layout", "parts", "-q"]) == 2
    assert "--layout parts writes a results folder" in capsys.readouterr().err
    with pytest.raises(ValueError, match="layout must be one of"):
        neardup.find(str(ads), out=out, layout="many")


def test_a_manifest_from_before_layouts_is_read_as_single(ads, tmp_path):
    out = tmp_path / "out"
    neardup.find(str(ads), id_field="id", out=out, output_format="parquet")
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["layout"], manifest["tables"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    read = neardup.read_results(out)
    assert read.layout == "single"
    assert list(read.tables) == ["pairs", "identical", "clusters", "documents", "candidates"]
    assert read["documents"].num_rows == 36


def test_parts_are_what_their_writers_reported(tmp_path, manifest_is_true):
    """A file a writer did not report (a failed task attempt's) is removed; one reported
    but absent or of another size (an executor's own disk) is an error, not a manifest."""
    import pyarrow as pa

    schema = pa.schema([("doc", pa.int64())])

    def writer(extra):
        def write(folder):
            (folder / ".part-00001.csv.task7-0badc0de").write_text("half a part")
            entries = [sinks.write_part([pa.table({"doc": [k, k + 1]}, schema=schema)], folder,
                                        k, "csv", schema=schema) for k in (0, 2)]
            extra(folder)
            return entries
        return write

    tables = {"documents": sinks.PartsTable(writer(lambda folder: None), schema, 4)}
    sinks.write_folder(tmp_path / "ok", "csv", tables, {}, {})
    manifest = manifest_is_true(tmp_path / "ok")  # the stray file is gone
    assert manifest["tables"]["documents"] == {
        "rows": 4, "files": ["documents/part-00000.csv", "documents/part-00002.csv"]}
    assert neardup.read_results(tmp_path / "ok")["documents"].column("doc").to_pylist() == [
        0, 1, 2, 3]
    lost = {"documents": sinks.PartsTable(
        writer(lambda folder: (folder / "part-00002.csv").unlink()), schema, 4)}
    with pytest.raises(RuntimeError, match="file system the driver and every executor share"):
        sinks.write_folder(tmp_path / "lost", "csv", lost, {}, {})
    assert not (tmp_path / "lost").exists()
    with pytest.raises(RuntimeError, match="wrote 4 rows of documents where 5 were counted"):
        sinks.write_folder(tmp_path / "miscounted", "csv", {"documents": sinks.PartsTable(
            writer(lambda folder: None), schema, 5)}, {}, {})


def test_the_exact_join_leaves_estimate_empty_in_every_output(ads, tmp_path):
    """D17 (issue 22): with --method exact, `estimate` of a pair of different sets is
    empty in CSV and null in JSON Lines and Parquet, on a folder and on standard output
    (copies of one set are 1: equal sets, equal signatures); never the text `nan`."""
    import csv
    import io

    import pyarrow.parquet as pq

    find = ["find", str(ads), "--id-field", "id", "-t", "0.7", "-q"]
    rows = {}
    for fmt in ("csv", "jsonl", "parquet"):
        out = tmp_path / fmt
        assert main([*find, "--method", "exact", "--out", str(out),
                     "--output-format", fmt]) == 0
        for name in ("pairs", "candidates"):
            if fmt == "csv":
                text = (out / f"{name}.csv").read_text()
                assert "nan" not in text
                table = list(csv.DictReader(io.StringIO(text)))
                rows[fmt, name] = [(float(r["jaccard"]), r["estimate"] or None) for r in table]
            elif fmt == "jsonl":
                table = [json.loads(line) for line in (out / f"{name}.jsonl").open()]
                rows[fmt, name] = [(r["jaccard"], r["estimate"]) for r in table]
            else:
                table = pq.read_table(out / f"{name}.parquet").to_pylist()
                rows[fmt, name] = [(r["jaccard"], r["estimate"]) for r in table]
    for fmt in ("csv", "jsonl"):
        shown = subprocess.run([*NEARDUP, *find, "--method", "exact", "-o", "-",
                                "--output-format", fmt], capture_output=True, text=True)
        assert shown.returncode == 0, shown.stderr
        assert "nan" not in shown.stdout
        table = (list(csv.DictReader(io.StringIO(shown.stdout))) if fmt == "csv"
                 else [json.loads(line) for line in shown.stdout.splitlines()])
        rows[fmt, "stdout"] = [(float(r["jaccard"]), r["estimate"] or None) for r in table]
    for key, found in rows.items():
        near = [estimate for jaccard, estimate in found if jaccard < 1]
        assert near and all(estimate is None for estimate in near), key
        copies = {estimate for jaccard, estimate in found if jaccard == 1}
        assert copies <= {"1.0", "1", 1.0}, key
    # LSH estimates every pair: nothing is empty there
    assert main([*find, "--method", "lsh", "--out", str(tmp_path / "lsh")]) == 0
    lsh_rows = list(csv.DictReader((tmp_path / "lsh" / "pairs.csv").open()))
    assert lsh_rows and all(r["estimate"] != "" for r in lsh_rows)


def test_a_report_inside_the_results_folder_is_refused_before_any_work(ads, tmp_path, capsys):
    """D19 (issue 22): `find --out o --report o/r.html` would put a file the folder's
    manifest does not list into a folder the next run replaces whole; it is refused up
    front, nothing written, and a report beside the folder survives the next run."""
    out = tmp_path / "o"
    for report in (out / "r.html", out, out / "sub" / "r.html"):
        assert main(["find", str(ads), "--id-field", "id", "--out", str(out),
                     "--report", str(report), "-q"]) == 2
        err = capsys.readouterr().err
        assert f"--report {report} lies inside --out {out}" in err
        assert not out.exists() and not report.exists()
    beside = tmp_path / "r.html"
    assert main(["find", str(ads), "--id-field", "id", "--out", str(out), "--report",
                 str(beside), "-q"]) == 0
    assert main(["find", str(ads), "--id-field", "id", "--out", str(out), "-q"]) == 0
    assert beside.is_file() and sinks.read_manifest(out)
    assert main(["report", str(out), "-o", str(out / "r.html")]) == 2  # nor from the folder
    assert "lies inside the input directory" in capsys.readouterr().err

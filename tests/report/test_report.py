"""The HTML report: escaped, counted, bounded, and rendered by a real headless Chromium."""

import hashlib
import html
import json
import os
import re
import subprocess

import numpy as np
import pytest

from neardup import cli, report, sinks
from neardup.pipeline import find_texts
from neardup.synthetic import planted_corpus

SCRIPT_PAYLOAD = "<script>alert(1)</script>"
IMG_PAYLOAD = '"><img src=x onerror=alert(1)>'
CHROMIUM = "/usr/bin/chromium"


def _family(seed: int, lines: int = 30, variants: int = 3) -> list[str]:
    """A text and variants that change one line each: near-duplicates line by line."""
    rng = np.random.default_rng(seed)
    words = [f"w{k}" for k in range(400)]
    base = [" ".join(rng.choice(words, 8)) for _ in range(lines)]
    out = ["\n".join(base)]
    for v in range(1, variants):
        changed = list(base)
        changed[(7 * v) % lines] = f"changed line {v} " + " ".join(rng.choice(words, 6))
        out.append("\n".join(changed))
    return out


@pytest.fixture(scope="module")
def injected():
    """Near-duplicate documents whose ids and texts carry HTML/JS payloads."""
    texts = [t + f"\n{SCRIPT_PAYLOAD}\n{IMG_PAYLOAD}" for t in _family(1)]
    texts += _family(2) + _family(3)
    ids = [SCRIPT_PAYLOAD, IMG_PAYLOAD, "src/a.py"] + [f"src/f{k}.py" for k in range(6)]
    result = find_texts(texts, ids, shingle_kind="word", shingle_size=3, threshold=0.5)
    assert result.counts["candidates"] >= 6 and result.counts["clusters"] == 3
    return result, texts


def _chords(page: str) -> int:
    return int(re.search(r'data-chords="(\d+)"', page).group(1))


def test_payloads_from_ids_and_texts_appear_only_escaped(injected, tmp_path):
    result, texts = injected
    path = tmp_path / "r.html"
    drawn = report.write_report(result, path, texts=texts)
    page = path.read_text(encoding="utf-8")
    assert drawn["pair_views"] > 0  # the texts (with the payloads) were shown
    for raw in ("<script>alert", "<img src=x", "onerror=alert(1)>"):
        assert raw not in page
    assert html.escape(SCRIPT_PAYLOAD, quote=True) in page
    assert html.escape(IMG_PAYLOAD, quote=True) in page
    # the only scripts are the page's own: the chord data (JSON) and the click handler
    assert page.count("<script") == 2
    assert "Content-Security-Policy" in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")


def test_one_chord_per_candidate_and_a_stated_sample_above_the_limit(injected, tmp_path):
    result, texts = injected
    candidates = result.counts["candidates"]
    page = report.render(report.load(result))[0]
    assert _chords(page) == candidates == len(re.findall(r"<path data-k=", page))
    assert "seeded sample" not in page

    page, drawn = report.render(report.load(result), max_chords=4, seed=7)
    assert _chords(page) == 4 == drawn["chords"] == len(re.findall(r"<path data-k=", page))
    assert f"{candidates:,} candidate pairs: the chord circle and the S-curve show a seeded " \
           f"sample of 4 (seed 7)" in page
    assert report.render(report.load(result), max_chords=4, seed=7)[0] == page  # seeded


def test_page_stays_under_max_bytes_and_says_what_it_cut(tmp_path):
    corpus = planted_corpus(1200, dup_fraction=0.3, similarity=(0.6, 1.0), seed=3)
    result = find_texts(corpus.texts, corpus.ids, shingle_kind="word", shingle_size=1,
                        threshold=0.5)
    full = report.write_report(result, tmp_path / "full.html", texts=corpus.texts)
    assert full["clusters_shown"] == full["clusters"] > 50
    limit = 120_000
    assert full["bytes"] > limit
    cut = report.write_report(result, tmp_path / "cut.html", texts=corpus.texts,
                              max_bytes=limit)
    assert os.path.getsize(tmp_path / "cut.html") == cut["bytes"] <= limit
    assert cut["clusters_shown"] < cut["clusters"]
    assert f"largest of {cut['clusters']:,} clusters (page limit {limit:,} bytes)" in (
        tmp_path / "cut.html").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="max_bytes"):
        report.write_report(result, tmp_path / "x.html", max_bytes=1000)


def test_plots_are_written_as_png_and_svg(injected, tmp_path):
    result, _ = injected
    drawn = report.write_report(result, tmp_path / "r.html", plots=tmp_path / "plots")
    names = sorted(os.path.basename(p) for p in drawn["plots"])
    assert names == ["chords.png", "chords.svg", "histogram.png", "histogram.svg",
                     "s_curve.png", "s_curve.svg"]
    for name in ("chords", "histogram", "s_curve"):
        png = (tmp_path / "plots" / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000


@pytest.mark.parametrize("layout", ["single", "parts"])
@pytest.mark.parametrize("fmt", sinks.OUTPUT_FORMATS)
def test_report_from_a_result_directory_matches_the_in_memory_one(injected, tmp_path, fmt,
                                                                  layout, monkeypatch):
    result, _ = injected
    monkeypatch.setattr(sinks, "PART_ROWS", 5)  # parts: several files a table
    sinks.write_result(result, tmp_path / "out", fmt, layout=layout)
    loaded, memory = report.load(tmp_path / "out"), report.load(result)
    assert loaded.ids == memory.ids
    for name in ("doc_a", "doc_b", "jaccard"):
        assert loaded.pairs[name].tolist() == memory.pairs[name].tolist(), name
        assert loaded.candidates[name].tolist() == memory.candidates[name].tolist(), name
    assert loaded.head.tolist() == memory.head.tolist()
    (tmp_path / "out" / "evaluation.csv").write_text(  # a true pair LSH missed
        "doc_a,doc_b,jaccard,candidate\n0,3,0.42,false\n0,1,0.9,true\n")
    rc = cli.main(["report", str(tmp_path / "out"), "-o", str(tmp_path / "r.html")])
    assert rc == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert _chords(page) == result.counts["candidates"]
    assert "the 1 dots on y = 0 are true pairs LSH missed" in page
    assert html.escape(SCRIPT_PAYLOAD) in page and SCRIPT_PAYLOAD not in page
    assert "texts were not re-read" in page and "--root DIR" in page  # and how to get them


def test_find_report_shows_pairs_side_by_side_with_path_and_line(tmp_path, capsys):
    root = tmp_path / "code"
    for k, text in enumerate(_family(5)):
        (root / f"pkg{k}").mkdir(parents=True)
        (root / f"pkg{k}" / "mod.py").write_text("\n\n" + text + "\n", encoding="utf-8")
    out = tmp_path / "r.html"
    rc = cli.main(["find", str(root), "--shingle", "word", "-k", "3", "-t", "0.5", "-q",
                   "--report", str(out), "--out", str(tmp_path / "res")])
    assert rc == 0 and "report " in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    # the first shared non-blank line is line 3 of each file (two blank lines above it)
    assert "<code>pkg0/mod.py:3</code> ↔ <code>pkg1/mod.py:3</code>" in page
    assert 'class="same"' in page and 'class="only"' in page
    # from the folder, texts are re-read under the root given on the command line only
    rc = cli.main(["report", str(tmp_path / "res"), "-o", str(tmp_path / "again.html"),
                   "--root", str(root)])
    assert rc == 0 and "pkg0/mod.py:3</code>" in (tmp_path / "again.html").read_text()


def _edit_summary(folder, edit) -> None:
    """Change a results folder's summary.json and its manifest entry to match, as
    anyone who can write the folder can (the SHA-256s prove nothing about intent)."""
    summary = json.loads((folder / "summary.json").read_text())
    edit(summary)
    (folder / "summary.json").write_text(json.dumps(summary))
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest["files"]:
        if entry["name"] == "summary.json":
            entry["bytes"] = (folder / "summary.json").stat().st_size
            entry["sha256"] = hashlib.sha256((folder / "summary.json").read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_a_folder_report_reads_texts_only_under_the_root_given(tmp_path, capsys):
    """D6 (issue 22): the root a folder's summary names is not a place to read; texts come
    only from under --root, and no path or link leads out of it."""
    secret = tmp_path / "etc"  # stands for /etc: files the folder must not make us read
    secret.mkdir()
    code = tmp_path / "code"
    code.mkdir()
    for name, text in zip(("passwd", "group"), _family(6, variants=2)):
        (secret / name).write_text(f"SECRET-{name}\n{text}\n")
        (code / name).write_text(text + "\n")
    res = tmp_path / "res"
    assert cli.main(["find", str(code), "--shingle", "word", "-k", "3", "-t", "0.5", "-q",
                     "--out", str(res)]) == 0
    _edit_summary(res, lambda s: s["read"]["inputs"][0].update(path=str(secret)))
    capsys.readouterr()

    def report(name, *args):
        assert cli.main(["report", str(res), "-o", str(tmp_path / name), *args]) == 0
        return (tmp_path / name).read_text(encoding="utf-8"), capsys.readouterr().out

    page, out = report("none.html")
    assert "SECRET-" not in page and "0 pair views" in out
    assert "texts were not re-read" in page and "--root DIR" in page
    page, out = report("root.html", "--root", str(code))
    assert "SECRET-" not in page and "1 pair views" in out
    assert f"texts re-read from {code}" in page
    (code / "passwd").unlink()  # a link inside the root that leads out of it
    (code / "passwd").symlink_to(secret / "passwd")
    page, out = report("link.html", "--root", str(code))
    assert "SECRET-" not in page and "0 pair views" in out
    assert "a text could not be read" in page


# ----------------------------------------------------------------------------- Chromium

needs_chromium = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason=f"{CHROMIUM} not found: install it with scripts/install-chromium.sh")


def _chromium(tmp_path, page, *flags) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
         "--enable-logging=stderr", "--v=0", *flags, page.as_uri()],
        capture_output=True, text=True, timeout=120)


def _console_errors(stderr: str, page) -> list[str]:
    """Console lines about the page that report an error (Chromium logs them as CONSOLE)."""
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line and page.as_uri() in line
            and ("Uncaught" in line or "ERROR:CONSOLE" in line or "Refused" in line)]


@pytest.mark.browser
@needs_chromium
def test_chromium_renders_the_report_without_console_errors(injected, tmp_path):
    result, texts = injected
    # the detector itself: a deliberate error on a page must be seen
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><p>x</p><script>notDefinedAnywhere();</script>")
    seen = _chromium(tmp_path, broken, "--dump-dom")
    assert _console_errors(seen.stderr, broken), seen.stderr[-2000:]

    page = tmp_path / "report.html"
    report.write_report(result, page, texts=texts)
    dom = _chromium(tmp_path, page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console_errors(dom.stderr, page) == []
    assert _chords(dom.stdout) == result.counts["candidates"]
    assert len(re.findall(r"<path data-k=", dom.stdout)) == result.counts["candidates"]
    # after parsing, the payloads are text: no element was made from them
    assert "<script>alert" not in dom.stdout and "<img src=x" not in dom.stdout
    assert html.escape(SCRIPT_PAYLOAD, quote=False) in dom.stdout

    shot = tmp_path / "shot.png"
    run = _chromium(tmp_path, page, f"--screenshot={shot}", "--window-size=1400,2400")
    assert run.returncode == 0, run.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000  # a drawn page, not blank
    assert _console_errors(run.stderr, page) == []



def test_a_run_without_candidates_still_gives_a_page(tmp_path):
    result = find_texts(["alpha beta gamma delta epsilon zeta", "one two three four five six",
                         "x"], shingle_kind="word", shingle_size=1, threshold=0.5)
    drawn = report.write_report(result, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert drawn["chords"] == _chords(page) == 0 and "<p>No clusters.</p>" in page

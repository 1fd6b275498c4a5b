"""What a directory input reads as a file (issue 22): a link that leads outside the input
is skipped unless asked for (D7), and a compressed file is read as the text it holds."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os

import pytest

import neardup
from neardup.cli import main
from neardup.sources import read_documents

CONFIG = ("host = db.internal\nport = 5432\nuser = admin\npool = 16\ntimeout = 30\n"
          "api_key = {}\n")
SECRET = "sk-live-do-not-leak-this-value-0123456789"
TEXTS = {
    "a": "the quick brown fox jumps over the lazy dog near the river bank today",
    "b": "a completely different document about compilers parsers and grammars",
}


@pytest.fixture
def linked_tree(tmp_path):
    """root/ with a.txt, b.txt, example.conf, local.conf -> ../secret.conf (outside: a near
    duplicate of example.conf, which a report would show) and notes/a-again.txt -> ../a.txt
    (inside)."""
    (tmp_path / "secret.conf").write_text(CONFIG.format(SECRET))
    root = tmp_path / "root"
    (root / "notes").mkdir(parents=True)
    (root / "example.conf").write_text(CONFIG.format("CHANGE-ME"))
    (root / "a.txt").write_text(TEXTS["a"])
    (root / "b.txt").write_text(TEXTS["b"])
    os.symlink("../secret.conf", root / "local.conf")
    os.symlink("../a.txt", root / "notes" / "a-again.txt")
    return root


def test_a_link_outside_the_input_is_skipped_and_counted_unread(linked_tree):
    documents, report = read_documents([str(linked_tree)])
    report.check()
    assert not any(SECRET in text for text in documents.texts)
    assert sorted(documents.ids) == ["a.txt", "b.txt", "example.conf",
                                     "notes/a-again.txt"]  # inside: read
    assert report.skipped == {"link outside the input": 1}
    assert report.problems[0].source.endswith("local.conf")
    followed, report = read_documents([str(linked_tree)], follow_links=True)
    assert CONFIG.format(SECRET) in followed.texts and not report.skipped


def test_the_report_of_a_directory_never_holds_a_link_target_outside_it(linked_tree, tmp_path,
                                                                        capsys):
    options = ["--shingle", "word", "--ngram", "1", "-t", "0.5", "-q"]
    report = tmp_path / "report.html"
    assert main(["find", str(linked_tree), *options, "--report", str(report)]) == 0
    assert SECRET not in report.read_text()
    followed = tmp_path / "followed.html"  # asked for: the pair and its texts are shown
    assert main(["find", str(linked_tree), *options, "--follow-links",
                 "--report", str(followed)]) == 0
    assert SECRET in followed.read_text()


def test_dedup_of_a_directory_leaves_out_links_outside_and_copies_links_inside_as_links(
        linked_tree, tmp_path):
    out = tmp_path / "out"
    # documents this short are set aside (kept, never compared): a.txt and its link both stay
    result = neardup.dedup(str(linked_tree), str(out), min_shingles=1000)
    assert result.counts["dedup"]["written"] == 4
    assert not os.path.lexists(out / "local.conf")
    link = out / "notes" / "a-again.txt"
    assert os.path.islink(link)
    assert os.path.realpath(link) == os.path.realpath(out / "a.txt")  # into the copy
    assert not os.path.islink(out / "a.txt") and (out / "a.txt").read_text() == TEXTS["a"]


def test_a_link_inside_whose_target_is_not_copied_is_copied_as_a_file(linked_tree, tmp_path):
    out = tmp_path / "out"
    neardup.dedup(str(linked_tree), str(out), exclude=["a.txt"], min_shingles=1000)
    copy = out / "notes" / "a-again.txt"
    assert not os.path.lexists(out / "a.txt")
    assert not os.path.islink(copy) and copy.read_text() == TEXTS["a"]


def compressed(root, write):
    """root/docs/ holding a text in each compression, a corrupt .gz and a plain file."""
    import zstandard

    docs = root / "docs"
    write(docs / "a.txt.gz", gzip.compress(TEXTS["a"].encode()))
    write(docs / "b.txt.zst", zstandard.ZstdCompressor().compress(TEXTS["b"].encode()))
    write(docs / "c.md.bz2", bz2.compress(b"third text held by bzip2 in the folder"))
    write(docs / "d.txt.xz", lzma.compress(b"fourth text held by xz in the folder"))
    write(docs / "e.txt", "a plain file beside them")
    write(docs / "broken.txt.gz", gzip.compress(TEXTS["a"].encode())[:-12])
    return root


def test_a_directory_of_compressed_files_reads_the_texts_they_hold(tmp_path, write, read):
    root = compressed(tmp_path / "root", write)
    documents, report = read([root])
    assert dict(zip(documents.ids, documents.texts)) == {
        "docs/a.txt.gz": TEXTS["a"], "docs/b.txt.zst": TEXTS["b"],
        "docs/c.md.bz2": "third text held by bzip2 in the folder",
        "docs/d.txt.xz": "fourth text held by xz in the folder",
        "docs/e.txt": "a plain file beside them"}
    assert not report.skipped
    assert list(report.failed) == ["corrupt or truncated gzip data: Compressed file ended "
                                   "before the end-of-stream marker was reached"]
    # the patterns see the name as it is
    only, _ = read([root], include=["*.gz"])
    assert only.ids == ["docs/a.txt.gz"]
    md, _ = read([root], include=["*.md.bz2"])
    assert md.ids == ["docs/c.md.bz2"]


def test_dedup_of_a_directory_copies_its_compressed_files_as_they_are(tmp_path, write):
    root = compressed(tmp_path / "root", write)
    write(root / "docs" / "a-copy.txt", TEXTS["a"])  # a duplicate of what a.txt.gz holds
    out = tmp_path / "out"
    neardup.dedup(str(root), str(out), shingle_kind="word", shingle_size=2, threshold=0.9)
    kept = sorted(os.listdir(out / "docs"))
    assert ("a-copy.txt" in kept) != ("a.txt.gz" in kept)  # one of the pair is left out
    for name in kept:
        assert (out / "docs" / name).read_bytes() == (root / "docs" / name).read_bytes()
